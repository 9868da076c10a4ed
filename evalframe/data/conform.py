"""Applying a table contract to a frame read from a file: :func:`conform`.

1. required columns must be present (all missing ones are reported together);
2. optional columns that are absent and have a ``default`` are added;
3. every column is cast to its contract dtype; a value that does not convert is a problem;
4. pandera validates nullability, the checks and the key, lazily, so that every failure is
   collected; its ``failure_cases`` become :class:`~evalframe.errors.Problem` rows that name the
   line or row, the column and the value (:mod:`evalframe.data.messages`).

Step 4 is preceded by a screen (:func:`passes_screen`): one Polars pass over the same rules
(the same check expressions, :data:`~evalframe.data.schema.CHECKS`) that can only say "nothing
to find" or "maybe something". A clean table (the usual case) then skips pandera, whose import
and key check cost seconds on millions of rows; any doubt sends the table to pandera, which
finds and words the failures, so messages never depend on the screen.

Any problem raises one :class:`~evalframe.errors.InputError` listing them all.

A reader with more to do on the conformed table (its own checks, its split into tables) hands
that work to :func:`conform_with`, which runs it beside step 4 and the rules and raises as if
each ran in turn; a reader may also cast its columns early, beside other work
(:func:`cast_if_clean`: conform then finds them in their dtypes).

Rule kinds (``rules:``, each with a ``message``; a rule with a ``name`` can be switched off by
the reader, e.g. on the user's request): ``determines`` (``key`` → ``column``),
``non_empty_when`` (a list ``column`` is not empty where ``when`` holds), ``same_length`` (list
``column`` has as many items as list ``as``), ``non_increasing`` (the numbers of list ``column``
never go up) and ``items_within`` (every item of list ``column`` is an item of list ``within``
on the same row). A null list passes the last three.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from evalframe._threads import in_order
from evalframe.data.messages import (
    DTYPE_WORDS,
    Locate,
    decimal_comma_hint,
    locate_rows,
    mapping_hint,
    missing_columns,
    problems_from_failure_cases,
)
from evalframe.data.layout import begin_column_hashes, distinct_in_blocks, forget, key_hash, key_stretch_starts
from evalframe.data.schema import RULE_KINDS, Contract, check_passes, to_pandera
from evalframe.errors import NO_VALUE, InputError, Problem

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

#: Frames :func:`conform` returned, by ``id``: a frame passed again (a reader's table handed to
#: :func:`evalframe.evaluate`) is not checked twice. The weak reference drops the entry when the
#: frame is freed, and the identity test guards against a reused ``id``.
_CONFORMED: dict[int, tuple[weakref.ref, Contract]] = {}


def _remember(frame: pl.DataFrame, contract: Contract) -> pl.DataFrame:
    key = id(frame)
    _CONFORMED[key] = (weakref.ref(frame, lambda _: _CONFORMED.pop(key, None)), contract)
    return frame


def _already_conformed(frame: pl.DataFrame, contract: Contract) -> bool:
    entry = _CONFORMED.get(id(frame))
    return entry is not None and entry[0]() is frame and entry[1] is contract


def conform(
    frame: pl.DataFrame,
    contract: Contract,
    *,
    source: str,
    locate: Locate = locate_rows,
    column_labels: Mapping[str, str] | None = None,
    decimal_comma: bool = False,
    disabled_rules: Collection[str] = (),
) -> pl.DataFrame:
    """Check ``frame`` against ``contract`` and return it with contract dtypes and defaults.

    With ``decimal_comma=True``, text in the contract's number (float) columns is read with a
    comma as the decimal mark (``0,85`` → 0.85). Without it, a number column whose failing
    values have a decimal comma gets a hint saying how to declare it.

    ``source`` names the file (or object) in error messages, ``locate`` turns a row index into
    "line 7" or "row 3", and ``column_labels`` maps contract column names back to the names in
    the user's file (after a column mapping) so that messages use the user's spelling.
    ``disabled_rules`` names contract rules (their ``name``) not to apply.

    Columns the contract does not know are kept unchanged. Raises
    :class:`~evalframe.errors.InputError` listing every problem.
    """
    return conform_with(frame, contract, (), source=source, locate=locate, column_labels=column_labels,
                        decimal_comma=decimal_comma, disabled_rules=disabled_rules)[0]


def conform_with(
    frame: pl.DataFrame,
    contract: Contract,
    work: Sequence[Callable[[pl.DataFrame], T]],
    *,
    source: str,
    locate: Locate = locate_rows,
    column_labels: Mapping[str, str] | None = None,
    decimal_comma: bool = False,
    disabled_rules: Collection[str] = (),
) -> tuple[pl.DataFrame, list[T]]:
    """:func:`conform`, and each of ``work`` called with the conformed frame: the conformed frame
    and their results.

    The work (a reader's own checks and its split into tables) runs on the cast frame while the
    contract's checks (the screen or pandera, and the rules) run, two tasks at a time
    (:func:`~evalframe._threads.in_order`): the checks are Polars passes that leave a core idle.
    Errors come as if everything ran in turn: a problem the contract's checks find is raised
    first (the work's results, or its errors on a table that breaks the contract, are then
    dropped), then the first error of the work, in its order. Without work the checks run here,
    one after the other.
    """
    if _already_conformed(frame, contract):
        return frame, [task(frame) for task in work]
    labels = dict(column_labels or {})

    def label(name: str) -> str:
        return labels.get(name, name)

    problems = missing_columns(frame, contract, label)
    if problems:
        raise InputError(source, problems, hint=mapping_hint(frame, contract, label))
    if frame.height == 0:
        raise InputError(source, Problem(None, None, NO_VALUE, "the table has no rows"))

    frame = frame.with_columns(
        pl.lit(column.default, dtype=column.polars_dtype).alias(name)
        for name, column in contract.columns.items()
        if name not in frame.columns and column.default is not None
    )
    frame, problems = _cast_columns(frame, contract, locate, label, decimal_comma=decimal_comma)
    if problems:
        raise InputError(source, problems, hint=decimal_comma_hint(problems, contract, label))
    if not work:
        problems = _validate_with_pandera(frame, contract, locate, label)
        problems += _check_rules(frame, contract, locate, label, disabled=disabled_rules)
        if problems:
            raise InputError(source, problems)
        return _remember(frame, contract), []
    cast = frame
    results = in_order([
        lambda: _validate_with_pandera(cast, contract, locate, label),
        lambda: _check_rules(cast, contract, locate, label, disabled=disabled_rules),
        *(partial(task, cast) for task in work),
    ])
    problems = next(results) + next(results)
    if problems:
        results.close()  # the work not begun is cancelled; the work running ends first
        raise InputError(source, problems)
    return _remember(frame, contract), list(results)


def cast_if_clean(frame: pl.DataFrame, contract: Contract, *, decimal_comma: bool = False) -> pl.DataFrame | None:
    """``frame``'s contract columns cast to their contract dtypes as :func:`conform` casts them,
    or None when a value does not convert (or a list column is not one): a reader casts its
    columns beside other work, and :func:`conform` then finds them in their dtypes (a problem is
    left for :func:`conform` to find and word, in its place among the others)."""
    cast, problems = _cast_columns(frame, contract, locate_rows, str, decimal_comma=decimal_comma)
    return None if problems else cast


def _cast_columns(
    frame: pl.DataFrame, contract: Contract, locate: Locate, label: Callable[[str], str], *, decimal_comma: bool = False
) -> tuple[pl.DataFrame, list[Problem]]:
    """Cast every contract column; values that do not convert become problems."""
    problems: list[Problem] = []
    casts = {}
    for name, column in contract.columns.items():
        if name not in frame.columns or frame.schema[name] == column.polars_dtype:
            continue
        original = frame.get_column(name)
        if column.dtype.startswith("list"):
            problems.append(
                Problem(None, label(name), NO_VALUE, f"expected a list column, found dtype {original.dtype}")
            )
            continue
        source = original.str.strip_chars() if original.dtype == pl.String else original
        if decimal_comma and column.dtype == "float" and source.dtype == pl.String:
            source = source.str.replace(",", ".", literal=True)
        converted = source.cast(column.polars_dtype, strict=False)
        failed = original.is_not_null() & converted.is_null()
        if column.dtype == "int" and source.dtype.is_float():
            # A float column cast to int truncates silently: 2.5 would become 2.
            failed = failed | (source.is_not_null() & (source != source.floor()).fill_null(True))
        elif column.dtype == "int" and source.dtype == pl.String:
            failed = failed | (source.is_not_null() & ~source.str.contains(r"^[+-]?\d+$"))
        bad_rows = failed.arg_true()
        for index in bad_rows.head(50).to_list():
            problems.append(
                Problem(locate(index), label(name), original[index], f"is not {DTYPE_WORDS[column.dtype]}")
            )
        if bad_rows.len() > 50:
            problems.append(Problem.unlisted(label(name), f"is not {DTYPE_WORDS[column.dtype]}", bad_rows.len() - 50))
        casts[name] = converted
    return frame.with_columns(**casts), problems



_HASHABLE_KEY_DTYPES = (pl.String, pl.Int64, pl.Boolean)


def passes_screen(frame: pl.DataFrame, contract: Contract) -> bool:
    """Whether ``frame`` certainly passes the pandera validation of ``contract``.

    One pass of cheap Polars aggregations over the rules pandera enforces: dtypes, no null (nor
    NaN, which pandera counts as null) in non-nullable columns, every check, and the key. The
    key is screened by hashing each row's key columns into one 64-bit value: if all the hashes
    differ (:func:`_all_distinct`), all the keys differ. ``False`` only means "let pandera
    look" (a hash collision, a NaN in a nullable column, ...), never that the table is wrong,
    so the screen may be strict but must never pass a table pandera would reject.

    >>> from evalframe.data.schema import load_contract
    >>> passes_screen(pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "a"], "relevance": [1, 0]}),
    ...               load_contract("judgments"))
    False
    """
    tests: list[pl.Expr] = []
    for name, column in contract.columns.items():
        if name not in frame.columns:
            continue
        if frame.schema[name] != column.polars_dtype:
            return False
        value = pl.col(name)
        is_float = column.polars_dtype.is_float()
        if not column.nullable:
            tests.append(value.null_count() == 0)
        if is_float and (not column.nullable or column.checks):
            tests.append(~value.is_nan().any())
        for word, argument in column.checks.items():
            passed = check_passes(word, value, argument)
            if passed is not None:
                tests.append(passed.all())
    key_columns = [name for name in contract.unique if name in frame.columns]
    if key_columns and not all(isinstance(frame.schema[name], _HASHABLE_KEY_DTYPES) for name in key_columns):
        return False
    if tests:
        try:
            if not frame.select(pl.all_horizontal(tests)).item():
                return False
        except pl.exceptions.PolarsError:  # e.g. a check pandera would report as a check error
            return False
    if key_columns:
        return _keys_distinct(frame, key_columns)
    return True


def _keys_distinct(frame: pl.DataFrame, key_columns: list[str]) -> bool:
    """Whether no two rows of ``frame`` share their ``key_columns``, screened by one 64-bit hash
    of each row's key: if all the hashes differ, all the keys differ.

    When the rows come in stretches of one length, one stretch per value of the key's leading
    columns (a run or qrels file grouped by query, the usual layout), two equal keys can only
    be in one stretch, where the leading columns are equal: the hashes of the last key column
    alone tell them apart, compared stretch by stretch (:func:`~evalframe.data.layout.distinct_in_blocks`,
    a tenth of a hash count's cost on millions of rows; the ranking stage reads the same hashes
    and verdict again to match the judgments). Otherwise every key's hash is counted
    (:func:`_all_distinct`).
    """
    begun = len(key_columns) > 1 and frame.height >= _HASHES_BEGUN_FROM and _head_in_one_length(frame, key_columns[:-1])
    if begun:
        # The verdict by stretches reads the last key column's hashes: on a long table whose first
        # stretches have one length they are begun beside the search for the stretches, which
        # keeps one core busy (the ranking reads them again, by the same verdict).
        begin_column_hashes(frame, key_columns[-1])
    length = _stretch_length(frame, key_columns[:-1])
    if length is None:
        if begun:  # nothing reads them (the ranking only with stretches of one length): not kept on the frame
            forget(frame, "hashes", key_columns[-1])
        return _all_distinct(frame.select(key_hash(key_columns)).to_series())
    return distinct_in_blocks(frame, key_columns[-1], length)


#: Rows from which :func:`_keys_distinct` begins the last key column's hashes early.
_HASHES_BEGUN_FROM = 1 << 21
#: Rows whose stretches :func:`_head_in_one_length` looks at.
_HEAD_ROWS = 1 << 14


def _head_in_one_length(frame: pl.DataFrame, columns: list[str]) -> bool:
    """Whether the stretches of equal ``columns`` values among the first :data:`_HEAD_ROWS` rows
    have one length (the last, cut by the head's end, may be shorter): a look at a few rows that
    tells a table whose stretches vary in length (the verdict by stretches then does not apply,
    and nothing reads the hashes it would have begun). A head of one stretch says nothing: True."""
    lengths = frame.head(_HEAD_ROWS).select(pl.struct(columns).rle().struct.field("len")).to_series()
    whole = lengths.head(lengths.len() - 1)
    return whole.len() == 0 or (whole.n_unique() == 1 and lengths[-1] <= whole[0])


def _stretch_length(frame: pl.DataFrame, columns: list[str]) -> int | None:
    """The number of rows of every stretch of equal ``columns`` values (nulls equal), when all
    the stretches have one length and no value comes back in a later stretch; else None
    (also when two stretches' values share a hash, or when the stretches average fewer than two
    rows: the caller then counts every hash)."""
    if not columns or frame.height == 0:
        return None
    # Stretches shorter than two rows save nothing over counting every hash (a key whose
    # last-but-one column changes on every row).
    starts = key_stretch_starts(frame, tuple(columns))
    if 2 * len(starts) > frame.height:
        return None
    length = frame.height // len(starts)
    if length * len(starts) != frame.height or not (starts % length == 0).all():
        return None
    heads = frame.select(columns).gather(pl.Series(starts))
    if heads.select(key_hash(columns).n_unique()).item() != len(starts):
        return None
    return length


def _all_distinct(values: np.ndarray | pl.Series) -> bool:
    """Whether no two of ``values`` are equal: Polars' count of distinct values (a hash count
    on every core; on millions of values, a fraction of a sort's cost). ``values`` is not changed."""
    series = values if isinstance(values, pl.Series) else pl.Series(values)
    return series.n_unique() == series.len()


def _validate_with_pandera(
    frame: pl.DataFrame, contract: Contract, locate: Locate, label: Callable[[str], str]
) -> list[Problem]:
    if passes_screen(frame, contract):
        return []
    schema = to_pandera(contract, set(frame.columns))  # imports pandera first (quietly, see there)
    from pandera.errors import SchemaErrors
    try:
        schema.validate(frame, lazy=True)
    except SchemaErrors as errors:
        return problems_from_failure_cases(errors.failure_cases, frame, contract, locate, label)
    return []


# --- cross-column rules ----------------------------------------------------------------------


def _rule_determines(frame: pl.DataFrame, rule: Mapping[str, Any], locate: Locate, label) -> list[Problem]:
    """``key`` determines ``column``: every row of one key value has the same column value."""
    key, column = rule["key"], rule["column"]
    if key not in frame.columns or column not in frame.columns:
        return []
    indexed = frame.select(key, column).with_row_index("_row")
    conflicting = indexed.group_by(key).agg(pl.col(column).n_unique().alias("_n")).filter(pl.col("_n") > 1)
    firsts = (
        indexed.join(conflicting.select(key), on=key, how="semi")
        .group_by(key, column)
        .agg(pl.col("_row").min())
        .sort(key, "_row")
    )
    problems = []
    for (value,), rows in firsts.partition_by(key, as_dict=True, maintain_order=True).items():
        seen = ", ".join(f"{row[column]!r} at {locate(row['_row'])}" for row in rows.iter_rows(named=True))
        last = rows.row(rows.height - 1, named=True)
        message = f"{rule['message']}: {label(key)} {value!r} has {seen}"
        problems.append(Problem(locate(last["_row"]), label(column), last[column], message))
    return problems


def _rule_non_empty_when(frame: pl.DataFrame, rule: Mapping[str, Any], locate: Locate, label) -> list[Problem]:
    """``column`` (a list) must not be empty on rows where every ``when`` column equals its value."""
    column = rule["column"]
    condition = pl.lit(True)
    for name, expected in rule["when"].items():
        if name not in frame.columns:
            return []
        condition = condition & (pl.col(name) == expected)
    empty = pl.col(column).list.len().fill_null(0) == 0
    rows = frame.select((condition & empty).arg_true()).to_series()
    problems = [Problem(locate(index), label(column), frame.get_column(column)[index].to_list(), rule["message"]) for index in rows.head(50).to_list()]
    if rows.len() > 50:
        problems.append(Problem.unlisted(label(column), rule["message"], rows.len() - 50))
    return problems


def _rows_where(frame: pl.DataFrame, failed: pl.Expr, column: str, shown: pl.Expr, message: str,
                locate: Locate, label) -> list[Problem]:
    """A problem for each row (the first 50) where ``failed`` holds, showing ``shown``'s value
    (computed only when a row fails: the usual table pays for ``failed`` alone)."""
    if not frame.select(failed.fill_null(False).any()).item():
        return []
    found = frame.select(failed.fill_null(False).alias("_failed"), shown.alias("_shown")).with_row_index("_row")
    found = found.filter("_failed")
    problems = [
        Problem(locate(index), label(column), value.to_list() if isinstance(value, pl.Series) else value, message)
        for index, value in found.head(50).select("_row", "_shown").iter_rows()
    ]
    if found.height > 50:
        problems.append(Problem(None, label(column), NO_VALUE, f"{found.height - 50} more rows: {message}"))
    return problems


def _rule_same_length(frame: pl.DataFrame, rule: Mapping[str, Any], locate: Locate, label) -> list[Problem]:
    """List ``column`` has as many items as list ``as`` on every row."""
    column, other = rule["column"], rule["as"]
    if column not in frame.columns or other not in frame.columns:
        return []
    lengths = pl.col(column).list.len(), pl.col(other).list.len()
    message = f"{rule['message']} (has {{}} items, `{label(other)}` has {{}})"
    failed = lengths[0] != lengths[1]
    if not frame.select(failed.fill_null(False).any()).item():
        return []
    shown = pl.format(message, *lengths)
    found = frame.select(failed.fill_null(False).alias("_failed"), shown.alias("_message"), pl.col(column).alias("_value"))
    found = found.with_row_index("_row").filter("_failed")
    return [Problem(locate(index), label(column), value, text)
            for index, text, value in found.head(50).select("_row", "_message", "_value").iter_rows()]


def _rule_non_increasing(frame: pl.DataFrame, rule: Mapping[str, Any], locate: Locate, label) -> list[Problem]:
    """The numbers of list ``column`` never increase from one item to the next."""
    column = rule["column"]
    if column not in frame.columns or not _may_increase(frame.get_column(column)):
        return []
    increases = pl.col(column).list.eval(pl.element().diff() > 0).list.any()
    return _rows_where(frame, increases, column, pl.col(column), rule["message"], locate, label)


def _may_increase(lists: pl.Series) -> bool:
    """Whether some list of numbers may have an item greater than the one before it: a screen
    for :func:`_rule_non_increasing`, whose per-list evaluation is its cost. The items of every
    list are laid end to end and each compared with the one before, except at the first item of
    a list: ``x[i] > x[i - 1]`` for an ``i`` that does not start a list is an increase. ``True``
    also when an item is null or not finite (Polars orders NaN above every number, NumPy does
    not), so that the rule's own expression decides and words those rows."""
    import numpy as np

    lengths = lists.list.len().fill_null(0).to_numpy()
    items = lists.list.explode(empty_as_null=False, keep_nulls=False).cast(pl.Float64).to_numpy()
    if items.size < 2:
        return False
    if not np.isfinite(items).all():  # a null item reads as NaN
        return True
    increases = items[1:] > items[:-1]
    starts = (np.cumsum(lengths) - lengths)[lengths > 0]
    increases[starts[starts > 0] - 1] = False  # the step from one list's last item to the next list's first
    return bool(increases.any())


def _rule_items_within(frame: pl.DataFrame, rule: Mapping[str, Any], locate: Locate, label) -> list[Problem]:
    """Every item of list ``column`` is an item of list ``within`` on the same row; the value
    shown is the items that are not."""
    column, within = rule["column"], rule["within"]
    if column not in frame.columns or within not in frame.columns:
        return []
    outside = pl.col(column).list.set_difference(pl.col(within))
    return _rows_where(frame, outside.list.len() > 0, column, outside, rule["message"], locate, label)


#: Rule kinds a contract's ``rules:`` may use.
#: Each rule kind of :data:`~evalframe.data.schema.RULE_KINDS` and the function that applies it.
RULES: dict[str, Callable[..., list[Problem]]] = {kind: globals()[f"_rule_{kind}"] for kind in RULE_KINDS}


def _check_rules(
    frame: pl.DataFrame, contract: Contract, locate: Locate, label, *, disabled: Collection[str] = ()
) -> list[Problem]:
    problems = []
    for rule in contract.rules:
        if rule.get("name") not in disabled:
            problems += RULES[rule["kind"]](frame, rule, locate, label)
    return problems
