"""Reader for ``per_query.csv``: one row per query of an evidence-retrieval pipeline.

The file is checked against ``schemas/per_query.yaml`` and split into the three tables of
DESIGN §2:

- ``queries``: ``system`` (from ``config``), ``query_id`` (``post_id|criterion_id``),
  ``post_id``, ``criterion_id``, ``fold``, ``label`` (has_evidence_gold), ``prob``
  (p_has_evidence), ``n_gold``, ``n_ranked`` and, when present, ``selected_k``, ``state``;
- ``ranking``: one row per ranked sentence, ``rank`` = position in ``ranked_sent_uids`` and,
  when the file has ``ranked_scores``, ``score`` = the score at that position (built when first
  used, or only for the queries a metric needs: :meth:`~evalframe.data.tables.Tables.ranking_of`);
- ``judgments``: one row per gold sentence, ``relevance`` = 1.

**Extraction (dynamic K, contract §4).** When the file has ``extracted_sent_uids``, the
extracted set is summarised on the query's row of ``queries``: ``n_extracted`` (its size) and
``n_extracted_relevant`` (how many of its sentences are gold); both are null where the cell is
null. The extracted set must lie within the query's candidates (``ranked_sent_uids``), so it
is also "the ranking rows flagged as extracted"; with ``extracted_outside_candidates="allow"``
sentences outside the ranking count too (in both numbers), which is why the counts live on the
query rather than on ranking rows. Without the column, the engine takes the top ``selected_k``
of the ranking instead (:mod:`evalframe.engine.extraction`), which is also how a long ranking
table with an ``extracted`` boolean column is read.

List columns hold JSON arrays (``["s1", "s2"]``) or ``;``-separated values (``s1;s2``); an
empty cell is an empty list. A cell that starts like a JSON array but is not one is an error.
``ranked_scores`` holds numbers (``[0.9, 0.4]`` or ``0.9;0.4``): one per ranked sentence,
non-increasing, finite. The gold list of a query must be the same in every config (judgments
belong to the query).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import polars as pl

from evalframe._threads import in_order
from evalframe.data.tables import Tables
from evalframe.data.contracts import cast_if_clean, conform_with, load_contract
from evalframe.data.layout import key_hash
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.io.tables import apply_mapping, read_frame

LIST_COLUMNS = ("gold_sent_uids", "ranked_sent_uids", "extracted_sent_uids")
#: List columns of numbers.
NUMBER_LIST_COLUMNS = ("ranked_scores",)
#: Columns of the ``queries`` table this reader makes, always ...
QUERIES_COLUMNS = ("system", "query_id", "post_id", "criterion_id", "fold", "label", "prob", "n_gold", "n_ranked",
                   "n_extracted", "n_extracted_relevant")
#: ... and when the file has them (under their per_query names).
OPTIONAL_QUERIES_COLUMNS = ("selected_k", "state")
#: What to do with an extracted sentence that is not among the query's candidates.
ExtractedOutside = Literal["error", "allow"]
EXTRACTED_OUTSIDE_CHOICES = ("error", "allow")
QUERY_ID_SEPARATOR = "|"

# A JSON array whose items are strings or integers (sentence ids).
_JSON_ITEM = r'\s*(?:"(?:[^"\\]|\\.)*"|-?\d+)\s*'
_JSON_ARRAY = rf"^\s*\[\s*(?:{_JSON_ITEM}(?:,{_JSON_ITEM})*)?\]\s*$"
# The common spelling of a JSON array of strings: no whitespace between items, and no quote,
# backslash, comma or control character inside an item. Such a cell is exactly its items
# joined by `","` between `["` and `"]`, so splitting on `","` decodes it as JSON would.
_PLAIN_ITEM = r'"[^"\\,\x00-\x1f]*"'
_PLAIN_JSON_ARRAY = rf"^\[(?:{_PLAIN_ITEM}(?:,{_PLAIN_ITEM})*)?\]$"
_NOT_A_LIST = "is not a list (expected a JSON array or `a;b;c`)"


def _plain_items(text: pl.Expr) -> pl.Expr:
    """Items of a cell matching ``_PLAIN_JSON_ARRAY`` (``[]`` → empty list).

    Such a cell other than ``[]`` starts with ``["`` and ends with ``"]`` (four characters at
    least): the text between them, split on ``","``. It is cut by ``head(-2)`` and ``tail(-2)``
    (all but the last two characters, then all but the first two), which move each value's bounds
    without a count of its characters: about a third of a ``slice(2, len_chars - 4)``'s cost, and not
    four strip passes that each copy the column."""
    items = text.str.head(-2).str.tail(-2).str.split('","')
    return pl.when(text == "[]").then(pl.lit([], dtype=pl.List(pl.String))).otherwise(items)


def _any_spelling_items(text: pl.Expr) -> pl.Expr:
    """Items of any valid cell: JSON array (decoded), ``a;b;c`` text, or empty (null / ``""``)."""
    # Integers in a JSON array decode to their text, so that ids compare as text.
    as_json = text.str.json_decode(pl.List(pl.String))
    as_split = text.str.split(";").list.eval(pl.element().str.strip_chars()).list.filter(pl.element() != "")
    return (
        pl.when(text.is_null() | (text == "")).then(pl.lit([], dtype=pl.List(pl.String)))
        .when(text.str.starts_with("[")).then(as_json)
        .otherwise(as_split)
    )


def parse_list_columns(
    frame: pl.DataFrame, columns: list[str], *, locate, labels: Mapping[str, str]
) -> tuple[dict[str, pl.Series], list[Problem]]:
    """Parse text columns of JSON arrays or ``;``-separated values into list columns.

    A cell that starts like a JSON array (``[``) but is not one is a problem naming its row,
    column and value. Cells in the plain spelling ``["a","b"]`` are split on ``","``; a column
    with any other spelling (spaces, escapes, integers, ``a;b``) is decoded cell by cell.
    """
    if not columns:
        return {}, []
    # A cell in the plain spelling as it stands has nothing to strip: such columns are split as
    # they are (the usual file), the others once stripped.
    plain = _all_plain(frame, {name: pl.col(name).cast(pl.String) for name in columns})
    texts = {name: pl.col(name).cast(pl.String) if plain[name] else pl.col(name).cast(pl.String).str.strip_chars()
             for name in columns}
    plain |= _all_plain(frame, {name: text for name, text in texts.items() if not plain[name]})
    problems = []
    for name in (name for name in columns if not plain[name]):
        text = texts[name]
        bad = frame.select((text.str.starts_with("[") & ~text.str.contains(_JSON_ARRAY)).fill_null(False)).to_series()
        bad_rows = bad.arg_true()
        problems += [
            Problem(locate(index), labels.get(name, name), frame.get_column(name)[index], _NOT_A_LIST)
            for index in bad_rows.head(50).to_list()
        ]
        if bad_rows.len() > 50:
            problems.append(Problem.unlisted(labels.get(name, name), _NOT_A_LIST, bad_rows.len() - 50))
    if problems:
        return {}, problems
    parsed = frame.select(
        (_plain_items(text) if plain[name] else _any_spelling_items(text)).alias(name) for name, text in texts.items()
    )
    return {name: parsed.get_column(name) for name in columns}, []


def _all_plain(frame: pl.DataFrame, texts: Mapping[str, pl.Expr]) -> dict[str, bool]:
    """Whether every cell of each text is in the plain spelling (``_PLAIN_JSON_ARRAY``; a null is not)."""
    if not texts:
        return {}
    # The streaming engine runs the cell check on both cores, a morsel at a time.
    return frame.lazy().select(
        text.str.contains(_PLAIN_JSON_ARRAY).fill_null(False).all().alias(name) for name, text in texts.items()
    ).collect(engine="streaming").row(0, named=True)


_JSON_NUMBER = r"\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*"
_JSON_NUMBER_ARRAY = rf"^\s*\[(?:{_JSON_NUMBER}(?:,{_JSON_NUMBER})*|\s*)\]\s*$"
# The same without whitespace: `[0.9,0.4]`.
_COMPACT_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_COMPACT_NUMBER_ARRAY = rf"^\[(?:{_COMPACT_NUMBER}(?:,{_COMPACT_NUMBER})*)?\]$"


def parse_number_lists(
    frame: pl.DataFrame, columns: list[str], *, locate, labels: Mapping[str, str]
) -> tuple[dict[str, pl.Series], list[Problem]]:
    """Parse text columns of JSON number arrays (``[0.9, 0.4]``) or ``0.9;0.4`` into lists of
    floats; an empty cell is an empty list. A cell that is not such a list, or holds a number
    that is not finite (``nan``, ``inf``), is a problem naming its row, column and value."""
    quick = _json_number_lists(frame, columns)
    if quick is not None:
        return quick, []
    return _number_lists_cell_by_cell(frame, columns, locate=locate, labels=labels)


def _number_lists_cell_by_cell(
    frame: pl.DataFrame, columns: list[str], *, locate, labels: Mapping[str, str]
) -> tuple[dict[str, pl.Series], list[Problem]]:
    """:func:`parse_number_lists` of any spelling, each list's items stripped and cast one list at
    a time, with the problems of cells that are not lists of finite numbers."""
    problems: list[Problem] = []
    expressions = []
    for name in columns:
        text = pl.col(name).cast(pl.String).str.strip_chars()
        is_json = text.str.starts_with("[")
        items_text = (
            pl.when(text.is_null() | (text == "")).then(pl.lit([], dtype=pl.List(pl.String)))
            .when(is_json).then(text.str.strip_prefix("[").str.strip_suffix("]").str.strip_chars().str.split(","))
            .otherwise(text.str.split(";"))
            .list.eval(pl.element().str.strip_chars())
        )
        # "[]" splits into one empty item: an empty list.
        items_text = pl.when(items_text.list.len() == 1).then(
            items_text.list.filter(pl.element() != "")).otherwise(items_text)
        numbers = items_text.list.eval(pl.element().cast(pl.Float64, strict=False))
        bad_item = numbers.list.eval(pl.element().is_null() | ~pl.element().is_finite()).list.any()
        bad = (is_json & ~text.str.contains(_JSON_NUMBER_ARRAY)).fill_null(False) | bad_item.fill_null(False)
        expressions += [numbers.alias(name), bad.alias(f"\x00bad {name}")]
    # Every column in one select: Polars parses them at once, on every core.
    found = frame.select(expressions)
    for name in columns:
        for index in found.get_column(f"\x00bad {name}").arg_true().head(50).to_list():
            problems.append(Problem(locate(index), labels.get(name, name), frame.get_column(name)[index],
                                    "is not a list of finite numbers (expected a JSON array or `0.9;0.4`)"))
    return {name: found.get_column(name) for name in columns}, problems


def _json_number_lists(frame: pl.DataFrame, columns: list[str]) -> dict[str, pl.Series] | None:
    """:func:`parse_number_lists` of columns whose every cell is a JSON number array (or empty),
    all of whose numbers are finite: the usual file, parsed without a per-list evaluation; None
    when a cell is anything else (then :func:`_number_lists_cell_by_cell` parses, finds and words it).

    First a look at every column in one pass of byte searches (no regex): a column without ``+``
    or whitespace whose every cell is empty or in brackets is split on ``,`` and cast at once
    (:func:`_cast_number_lists`); when every item then casts to a finite number, each cell was a
    compact JSON array (``_COMPACT_NUMBER_ARRAY``). Polars' cast reads a number as
    ``[+-]?(digits[.digits] | .digits)([eE][+-]?digits)`` or ``inf``/``nan``: without a ``+``
    and with every number finite, that is the pattern's number, and the items between single
    commas are the pattern's list — the same split and cast as the checked path below, so the
    same numbers, bit for bit. Any other column (a ``+``, whitespace, or a cell the cast cannot
    read) goes the checked way (:func:`_checked_number_lists`).
    """
    if not columns:
        return {}
    texts = {name: pl.col(name).cast(pl.String) for name in columns}
    # memchr-fast searches (three bytes at most each): a `+` (an exponent's sign, or a number
    # the pattern refuses) and JSON's whitespace; every cell null, empty or bracketed.
    look = frame.select(
        *((text.str.contains_any(["+", " ", "\t"]) | text.str.contains_any(["\n", "\r"])).any().alias(f"odd {name}")
          for name, text in texts.items()),
        *((text.is_null() | (text == "") | (text.str.starts_with("[") & text.str.ends_with("]"))).all()
          .alias(f"bracketed {name}") for name, text in texts.items()),
        *(_empty_cell(text).any().alias(f"empty {name}") for name, text in texts.items()),
    ).row(0, named=True)
    parsed = {}
    for name, text in texts.items():
        if look[f"bracketed {name}"] and not look[f"odd {name}"]:
            numbers = _cast_number_lists(frame, text, name, has_empty=look[f"empty {name}"])
            if numbers is not None:
                parsed[name] = numbers
    rest = [name for name in columns if name not in parsed]
    if rest:
        checked = _checked_number_lists(frame, rest)
        if checked is None:
            return None
        parsed |= checked
    return {name: parsed[name] for name in columns}


def _empty_cell(text: pl.Expr) -> pl.Expr:
    return text.is_null() | (text == "") | (text == "[]")


def _cast_number_lists(frame: pl.DataFrame, text: pl.Expr, name: str, *, has_empty: bool) -> pl.Series | None:
    """The cells of ``text`` (JSON number arrays without whitespace, or empty) split on ``,``
    between their brackets and cast to floats; None when an item is not a finite number.

    Every cell is null, empty or bracketed (``[`` first, ``]`` last, two characters at least): its
    text between the brackets is all but its first and last characters (``head(-1).tail(-1)``,
    which moves each value's bounds: cheaper than two strip passes; an empty cell stays empty)."""
    inner = text.str.head(-1).str.tail(-1)
    items = inner.str.split(",")
    if has_empty:  # the choice per cell copies the whole list column: only where a cell is empty
        items = pl.when(inner.is_null() | (inner == "")).then(pl.lit([], dtype=pl.List(pl.String))).otherwise(items)
    numbers = frame.select(items.cast(pl.List(pl.Float64), strict=False).alias(name)).to_series()
    flat = numbers.list.explode(empty_as_null=False, keep_nulls=False)
    if flat.null_count() or not flat.is_finite().all():
        return None
    return numbers


def _checked_number_lists(frame: pl.DataFrame, columns: list[str]) -> dict[str, pl.Series] | None:
    """:func:`_json_number_lists` of columns each cell of which is checked against a pattern.

    A cell matching ``_JSON_NUMBER_ARRAY`` is its numbers joined by commas, with whitespace only
    between tokens: once the brackets and the whitespace are removed, splitting on ``,`` gives
    the items that the cell-by-cell parse strips, cast to floats by the same cast (the same
    numbers, bit for bit). A column whose cells are all compact (``_COMPACT_NUMBER_ARRAY``, as
    ``json.dumps(separators=(",", ":"))`` and most writers of large files spell them) has no
    whitespace to look for.
    """
    texts = {name: pl.col(name).cast(pl.String) for name in columns}

    def every_cell(text: pl.Expr, pattern: str, name: str) -> pl.Expr:
        return (text.is_null() | (text == "") | text.str.contains(pattern)).all().alias(name)

    compact = frame.select(
        *(every_cell(text, _COMPACT_NUMBER_ARRAY, name) for name, text in texts.items()),
        *(_empty_cell(text).any().alias(f"empty {name}") for name, text in texts.items()),
    ).row(0, named=True)
    spaced = [name for name in columns if not compact[name]]
    # Whether a column may hold an empty cell (a compact one without any is split as it stands).
    has_empty = {name: name in spaced or compact[f"empty {name}"] for name in columns}
    if spaced:
        texts |= {name: texts[name].str.strip_chars() for name in spaced}
        found = frame.select(
            *(every_cell(texts[name], _JSON_NUMBER_ARRAY, f"json {name}") for name in spaced),
            *(texts[name].str.contains(r"\s").any().alias(f"spaced {name}") for name in spaced),
        ).row(0, named=True)
        if not all(found[f"json {name}"] for name in spaced):
            return None
        texts |= {name: texts[name].str.replace_all(r"\s+", "") for name in spaced if found[f"spaced {name}"]}
    parsed = {}
    for name, text in texts.items():
        numbers = _cast_number_lists(frame, text, name, has_empty=has_empty[name])
        if numbers is None:
            return None
        parsed[name] = numbers
    return parsed


def read_per_query(
    source: str | Path | pl.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    separator: str | None = None,
    decimal_comma: bool = False,
    extracted_outside_candidates: ExtractedOutside = "error",
) -> Tables:
    """Read and check a per_query file (CSV or Parquet) and split it into long tables.

    ``columns`` maps contract names to the file's names, e.g. ``{"p_has_evidence": "prob"}``.
    ``separator`` declares a CSV file's field separator (``";"`` for an Excel export in many
    locales) and ``decimal_comma=True`` reads ``0,85`` as 0.85 in the number columns.
    ``extracted_outside_candidates``: an extracted sentence that is not in the query's
    ``ranked_sent_uids`` is an error (``"error"``, the default) or counted as extracted
    (``"allow"``; see the module docstring).
    """
    if extracted_outside_candidates not in EXTRACTED_OUTSIDE_CHOICES:
        msg = f"`extracted_outside_candidates` must be 'error' or 'allow', got {extracted_outside_candidates!r}"
        raise ConfigError(msg)
    if isinstance(source, pl.DataFrame):
        name, frame, locate = "per_query table", source, (lambda index: f"row {index + 1}")
    else:
        name = str(source)
        frame, locate = read_frame(source, separator=separator)
    frame, labels = apply_mapping(frame, columns, source=name)
    given_columns = list(frame.columns)
    to_parse = [c for c in LIST_COLUMNS if c in frame.columns and frame.schema[c] != pl.List(pl.String)]
    numbers_to_parse = [c for c in NUMBER_LIST_COLUMNS if c in frame.columns and frame.schema[c] != pl.List(pl.Float64)]
    contract = load_contract("per_query")
    # The id lists, the number lists (one column, one core) and the contract's other columns' cast:
    # independent Polars passes, side by side; an error is raised as if they ran in turn (the id
    # lists' first, the cast's in conform, which finds the columns cast or casts them again).
    # The cast (many short Polars calls, each of whose returns waits for the GIL while the main
    # thread runs Python: the pipeline's checks and the engine's imports) comes last, when the
    # main thread is usually waiting for this read (run first, it took up to 0.25 s of wall in a
    # trace, against 0.03-0.05 s alone).
    (parsed, problems), (numbers, number_problems), cast = in_order([
        lambda: parse_list_columns(frame, to_parse, locate=locate, labels=labels),
        lambda: _number_lists(frame, numbers_to_parse, locate=locate, labels=labels),
        lambda: _cast_beside(frame, contract, decimal_comma=decimal_comma),
    ])
    problems += number_problems
    if problems:
        raise InputError(name, problems)
    disabled = ("extracted_within_candidates",) if extracted_outside_candidates == "allow" else ()
    # The split and the reader's own checks run beside the contract's checks; errors come in this
    # order, the contract's first (as when each ran in turn). The split (the longest task, which
    # reshapes a conformed frame and finds no problem) is the first of the work, so the two threads
    # end about together.
    _, (tables, _, _) = conform_with(
        frame.with_columns(**parsed, **numbers, **cast), contract,
        [
            lambda conformed: split_per_query(conformed, given_columns),
            lambda conformed: _check_no_repeated_ids(conformed, name, locate, labels),
            lambda conformed: _check_gold_agrees_across_configs(
                conformed, name, locate, query=tuple(c for c in ("post_id", "criterion_id") if c in conformed.columns)),
        ],
        source=name, locate=locate, column_labels=labels, decimal_comma=decimal_comma, disabled_rules=disabled,
    )
    return tables


def _cast_beside(frame: pl.DataFrame, contract, *, decimal_comma: bool) -> dict[str, pl.Series]:
    """The contract's columns other than lists, cast (:func:`~evalframe.data.conform.cast_if_clean`)
    beside the list parsing; nothing when a value does not convert, or anything else goes wrong:
    :func:`~evalframe.data.conform.conform` then casts them and reports the problem in its place."""
    names = [name for name, column in contract.columns.items()
             if name in frame.columns and not column.dtype.startswith("list")]
    try:
        cast = cast_if_clean(frame.select(names), contract, decimal_comma=decimal_comma)
    except Exception:  # noqa: BLE001 (conform meets it again, in its place)
        return {}
    return {} if cast is None else {name: cast.get_column(name) for name in names}


def _number_lists(frame: pl.DataFrame, columns: list[str], *, locate, labels: Mapping[str, str]):
    """:func:`parse_number_lists` of text columns; a list column of other numbers is cast."""
    text = [c for c in columns if not isinstance(frame.schema[c], pl.List)]
    parsed, problems = parse_number_lists(frame, text, locate=locate, labels=labels)
    for name in columns:
        dtype = frame.schema[name]
        if isinstance(dtype, pl.List) and dtype.inner.is_numeric():
            parsed[name] = frame.get_column(name).cast(pl.List(pl.Float64))
    return parsed, problems


def _check_no_repeated_ids(
    frame: pl.DataFrame, source: str, locate, labels: Mapping[str, str],
    columns: tuple[str, ...] = ("gold_sent_uids", "ranked_sent_uids", "extracted_sent_uids"), *, what: str = "sentence id",
) -> None:
    """An id may appear once per list: a ranking cannot hold an item twice (also used by
    :mod:`evalframe.io.retrieval_results` for its id lists)."""
    columns = tuple(c for c in columns if c in frame.columns)
    repeated = frame.select((pl.col(c).list.n_unique() < pl.col(c).list.len()).fill_null(False).alias(c) for c in columns)
    repeated_id = f"lists the same {what} more than once"
    problems = []
    for column in columns:
        rows = repeated.get_column(column).arg_true()
        problems += [
            Problem(locate(index), labels.get(column, column), frame.get_column(column)[index].to_list(), repeated_id)
            for index in rows.head(20).to_list()
        ]
        if rows.len() > 20:
            problems.append(Problem.unlisted(labels.get(column, column), repeated_id, rows.len() - 20))
    if problems:
        raise InputError(source, problems)


def _gold_agrees_everywhere(
    frame: pl.DataFrame, query: tuple[str, ...] = ("post_id", "criterion_id"), gold: str = "gold_sent_uids"
) -> bool:
    """Whether every query's gold list is the same set in all its rows (configs).

    A gold list holds no id twice (checked before), so the lists of a query listed in ``r``
    rows are all equal exactly when each (query, gold id) pair occurs ``r`` times.

    Queries are told apart by one 64-bit hash of their key (one integer group-by instead of
    one over the key's text columns). Two queries sharing a hash can only make this say
    ``False`` (an id occurs in at most every row of the merged queries, and in fewer where a
    query disagrees), never hide a disagreement: the caller then looks again, key by key.
    """
    key = key_hash(query).alias("_query")
    keyed = frame.select(key, _gold=pl.col(gold))
    rows_per_query = keyed.group_by("_query").agg(_rows=pl.len())
    pairs = keyed.explode("_gold").drop_nulls("_gold").group_by("_query", "_gold").agg(_count=pl.len())
    joined = pairs.join(rows_per_query, on="_query", how="left")
    return bool(joined.select((pl.col("_count") == pl.col("_rows")).all()).item())


def _check_gold_agrees_across_configs(
    frame: pl.DataFrame, source: str, locate,
    query: tuple[str, ...] = ("post_id", "criterion_id"), gold: str = "gold_sent_uids", *, config: str = "config",
    label: str | None = None,
) -> None:
    """The gold list of a query must be the same in every config (system) of the file: judgments
    belong to the query (also used by :mod:`evalframe.io.retrieval_results`)."""
    if _gold_agrees_everywhere(frame, query, gold):
        return
    keyed = frame.select(*query, gold=pl.col(gold).list.sort()).with_row_index("_row")
    conflicts = (
        keyed.group_by(*query)
        .agg(pl.col("gold").n_unique().alias("_n"), pl.col("_row").min().alias("_first"), pl.col("_row").max().alias("_last"))
        .filter(pl.col("_n") > 1)
        .sort("_first")
    )
    if conflicts.height:
        problems = [
            Problem(locate(row[-1]), label or gold, NO_VALUE,
                    f"query ({', '.join(repr(key) for key in row[:len(query)])}) has a different gold list than at "
                    f"{locate(row[-2])}; gold judgments must be the same in every {config}")
            for row in conflicts.head(20).iter_rows()
        ]
        raise InputError(source, problems)


def split_per_query(frame: pl.DataFrame, given_columns: list[str] | None = None) -> Tables:
    """Split a conformed per_query frame into the ``queries``, ``ranking`` and ``judgments`` tables.

    The ranking is kept as one list of sentence ids per query (``ranked_lists``); its long rows
    are built when asked for (:class:`~evalframe.data.tables.Tables`). Columns the contract does
    not know (tags such as ``scenario``, a weight column) are carried into ``queries`` as they are.
    ``given_columns``: the input's own columns (contract names), before defaults were added
    (``source_columns``: what a pipeline part may ``require``).
    """
    if "criterion_id" in frame.columns:
        query_id = pl.concat_str("post_id", "criterion_id", separator=QUERY_ID_SEPARATOR).alias("query_id")
    else:  # one query per post
        query_id = pl.col("post_id").alias("query_id")
    optional = [name for name in OPTIONAL_QUERIES_COLUMNS if name in frame.columns]
    if "extracted_sent_uids" in frame.columns:
        extracted = pl.col("extracted_sent_uids")
        optional += [
            extracted.list.len().cast(pl.Int64).alias("n_extracted"),
            extracted.list.set_intersection("gold_sent_uids").list.len().cast(pl.Int64).alias("n_extracted_relevant"),
        ]
    known = set(load_contract("per_query").columns) | set(QUERIES_COLUMNS)
    given = frame.columns if given_columns is None else given_columns
    tags = [name for name in frame.columns if name not in known]
    keyed = frame.select(
        pl.col("config").alias("system"),
        query_id,
        "post_id",
        *(name for name in ("criterion_id", "fold") if name in frame.columns),
        pl.col("has_evidence_gold").alias("label"),
        pl.col("p_has_evidence").alias("prob"),
        pl.col("gold_sent_uids").list.len().cast(pl.Int64).alias("n_gold"),
        pl.col("ranked_sent_uids").list.len().cast(pl.Int64).alias("n_ranked"),
        *optional,
        *tags,
    )
    # Stable: the same order as any sort of these unique keys, and about two thirds of the cost.
    queries = keyed.sort("system", "query_id", maintain_order=True)
    ranked = {"doc_id": frame.get_column("ranked_sent_uids")}
    if "ranked_scores" in frame.columns:
        ranked["score"] = frame.get_column("ranked_scores")
    ranked_lists = keyed.select("system", "query_id", **ranked)
    judgments = (
        pl.DataFrame({"query_id": keyed.get_column("query_id"), "doc_id": frame.get_column("gold_sent_uids")})
        .explode("doc_id")
        .drop_nulls("doc_id")
        .unique(maintain_order=True)
        .with_columns(relevance=pl.lit(1, dtype=pl.Int64))
    )
    return Tables(queries=queries, judgments=judgments, ranked_lists=ranked_lists, n_rows=frame.height,
                  source_columns=tuple(given))
