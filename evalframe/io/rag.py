"""Reader for RAG output files (issue 23, seed 000): one record per (sample, system).

Forms (JSON Lines, a JSON array of records, or Parquet with the same columns)::

    {"sample_id": "q17", "system": "hybrid", "query": "...", "reference_answer": "...",
     "relevant_docs": [{"doc_id": "d1", "text": "...", "relevance": 2}],
     "retrieved": [{"doc_id": "d9", "text": "...", "score": 0.83, "rank": 1, "embedding": [0.1]}],
     "response": "...", "timings": {"end_to_end": 1.42}, "labels": {"scenario": "typo", "variant_of": "q3"}}

Seed 000's own nesting is read too: ``reference_answer: {"text"}``, ``response: {"text"}``,
``retrieved: [{"doc": {"doc_id", "text", "metadata": {"embedding"}}, "score", "rank"}]``,
``relevant_docs: [{"doc_id", "text", "metadata": {"relevance"}}]``. ``query_id`` is accepted for
``sample_id``; ``system`` defaults to ``default``; ``relevance`` to 1; ``rank`` to list order
(when given it must be 1..n without gaps or repeats).

Two-file form (:func:`read_rag` with ``outputs=``): the samples file holds the EvaluationSample
fields (sample_id, query, reference_answer, relevant_docs, labels), the outputs file sample_id,
system and the SystemOutputs fields (response, retrieved, timings); joined on sample_id. An output
for an unknown sample is an error, or, with ``unknown_outputs="drop"``, dropped and counted.

The file is read by Polars' JSON reader with every top-level field as text; nested fields are
decoded by ``str.json_decode`` with their leaves as text, then cast and checked column-wise, so
no Python loop runs over the lines. Only when a nested value has the wrong shape (an object where
a number belongs) does a Python pass over that one column name the lines and key paths.

Result: the engine's three tables (:class:`~evalframe.data.tables.Tables`):

- ``queries``: ``system, query_id, query_text, reference, response``, one ``latency_<key>`` per
  timing key (always ``latency_end_to_end``, null when not timed), one column per label (always
  ``scenario``, ``variant_of``, null when absent), ``cluster_id`` (the parent's id for a variant,
  else its own: the bootstrap resamples a parent with its variants), ``parent_response`` (the
  parent's response from the same system), and the list columns the text metrics read:
  ``retrieved_texts`` and ``retrieved_embeddings`` (in rank order), ``relevant_texts``;
- ``ranking``: ``system, query_id, doc_id, rank, score, text``;
- ``judgments``: ``query_id, doc_id, relevance, text``.

Every problem stops the read at once (exit 2, nothing written), each naming file, line, key path
and value: a line that is not JSON, a missing sample_id or response, a duplicate (sample_id,
system), ranks with gaps or repeats, a document retrieved twice, a timing that is not a
non-negative number, a label that is not a scalar, embeddings of different lengths, a
``variant_of`` that names no sample, a variant whose parent has no output from its system.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.data.tables import Tables
from evalframe.errors import MAX_LISTED_PROBLEMS, NO_VALUE, InputError, Problem
from evalframe.io.tables import JSONL_SUFFIXES, PARQUET_SUFFIXES, _read_jsonl

#: Key columns and columns a label may not be called (they are the reader's own).
RESERVED = ("sample_id", "query_id", "system", "query_text", "reference", "response", "cluster_id", "parent_response",
            "retrieved_texts", "retrieved_embeddings", "relevant_texts", "n_relevant")
#: Labels every queries table has (null when the file has none): the robustness metrics read them.
STANDARD_LABELS = ("scenario", "variant_of")
#: The timing key every queries table has a column for (null when the file has none).
STANDARD_TIMING = "end_to_end"
SAMPLE_FIELDS = ("sample_id", "query_id", "query", "reference_answer", "relevant_docs", "labels")
OUTPUT_FIELDS = ("sample_id", "query_id", "system", "response", "retrieved", "timings")

UnknownOutputs = Literal["error", "drop"]
Locate = Callable[[int], str]


def _document_struct(number: pl.DataType) -> pl.Struct:
    """A retrieved or relevant document as the reader parses it, its numbers (score, rank,
    relevance, embedding values) of type ``number``; also the seed's nesting (``doc``, ``metadata``)."""
    metadata = pl.Struct({"embedding": pl.List(number), "relevance": number})
    return pl.Struct({
        "doc_id": pl.String, "text": pl.String, "score": number, "rank": number, "relevance": number,
        "embedding": pl.List(number),
        "doc": pl.Struct({"doc_id": pl.String, "text": pl.String, "metadata": metadata}),
        "metadata": metadata,
    })


#: Documents with every number read as text (checked and cast afterwards, so a bad value is named).
_DOC = _document_struct(pl.String)
#: The same documents with typed leaves: the fast path when every value has its type (the usual case).
_DOC_TYPED = _document_struct(pl.Float64)


class _Problems:
    """Problems of one file, each located by row (line) and key path; listed up to a cap per kind."""

    def __init__(self, source: str, locate: Locate):
        self.source, self.locate, self.items = source, locate, []
        self._kinds: dict[str, int] = {}

    def add(self, row: int | None, path: str, value: object, message: str) -> None:
        count = self._kinds.get(message, 0)
        self._kinds[message] = count + 1
        if count < MAX_LISTED_PROBLEMS:
            self.items.append(Problem(None if row is None else self.locate(row), path, value, message))

    def add_rows(self, rows: pl.DataFrame, path: Callable[[dict], str], value: str | None, message: str) -> None:
        """One problem per row of ``rows`` (a frame with ``_row`` and the columns ``path`` reads)."""
        for record in rows.head(MAX_LISTED_PROBLEMS).iter_rows(named=True):
            self.add(record["_row"], path(record), record[value] if value else NO_VALUE, message)
        if rows.height > MAX_LISTED_PROBLEMS:
            self._kinds[message] = self._kinds.get(message, 0) + rows.height - MAX_LISTED_PROBLEMS
            first = self.locate(rows.get_column("_row")[0])
            self.items.append(Problem.unlisted(None, message, rows.height - MAX_LISTED_PROBLEMS, first=first))

    def raise_if_any(self, hint: str | None = None) -> None:
        if self.items:
            raise InputError(self.source, self.items, hint=hint)


# --- reading a file as text columns -------------------------------------------------------------


def _read_text_columns(source: str | Path | pl.DataFrame) -> tuple[pl.DataFrame, Locate, str]:
    """Every top-level field as text (objects and lists as their JSON), a locator and a name."""
    if isinstance(source, pl.DataFrame):
        return _as_text(source), (lambda i: f"row {i + 1}"), "RAG table"
    path = Path(source)
    name = str(path)
    if not path.is_file():
        raise InputError(name, Problem(None, None, NO_VALUE, "file not found"))
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        try:
            frame, locate = _read_jsonl(path)
        except InputError:
            _raise_bad_lines(path)
            raise
        return frame, locate, name
    if suffix == ".json":
        try:
            frame = pl.read_json(path, infer_schema_length=None)
        except (pl.exceptions.PolarsError, OSError, ValueError) as error:
            raise InputError(name, Problem(None, None, NO_VALUE, f"is not a JSON array of records: {error}")) from None
        return _as_text(frame), (lambda i: f"record {i + 1}"), name
    if suffix in PARQUET_SUFFIXES:
        try:
            frame = pl.read_parquet(path)
        except (pl.exceptions.PolarsError, OSError) as error:
            raise InputError(name, Problem(None, None, NO_VALUE, f"cannot be read as Parquet: {error}")) from None
        return _as_text(frame), (lambda i: f"row {i + 1}"), name
    msg = f"unknown RAG file format `{suffix}` (expected .jsonl, .ndjson, .json or .parquet)"
    raise InputError(name, Problem(None, None, NO_VALUE, msg))


def _raise_bad_lines(path: Path) -> None:
    """Every line of a JSON Lines file that is not a JSON object, at once (run only when Polars
    could not read the file)."""
    problems = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as error:
                problems.append(Problem(f"line {number}", None, line.strip(), f"is not JSON ({error})"))
                continue
            if not isinstance(value, dict):
                problems.append(Problem(f"line {number}", None, line.strip(), f"is not a JSON object (found {type(value).__name__})"))
    if problems:
        raise InputError(str(path), problems)


def _as_text(frame: pl.DataFrame) -> pl.DataFrame:
    """A typed frame (JSON array, Parquet, in memory) as the JSON Lines reader gives it: through
    Polars' own NDJSON writer and reader, every top-level field as text."""
    if frame.width == 0:
        return frame
    buffer = io.BytesIO()
    frame.write_ndjson(buffer)
    buffer.seek(0)
    return pl.read_ndjson(buffer, schema={name: pl.String for name in frame.columns})


def _text_field(column: str) -> pl.Expr:
    """A text field that may also be seed 000's ``{"text": ...}``."""
    raw = pl.col(column)
    wrapped = raw.str.starts_with("{") & raw.str.json_path_match("$.text").is_not_null()
    return pl.when(wrapped).then(raw.str.json_path_match("$.text")).otherwise(raw)


# --- decoding nested columns ----------------------------------------------------------------------


def _decode(frame: pl.DataFrame, column: str, dtype: pl.DataType | None, problems: _Problems,
            scan: Callable[[Any], list[tuple[str, object, str]]]) -> pl.Series | None:
    """``column`` decoded to ``dtype`` (None: inferred), or None after adding the Python scan's
    problems (run only when the vectorised decode fails)."""
    try:
        if dtype is None:
            return frame.get_column(column).str.json_decode(infer_schema_length=None)
        return frame.get_column(column).str.json_decode(dtype)
    except pl.exceptions.PolarsError:
        found = False
        for row, text in enumerate(frame.get_column(column).to_list()):
            if text is None:
                continue
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            for path, bad, message in scan(value):
                problems.add(row, f"{column}{path}", bad, message)
                found = True
        if not found:
            problems.add(None, column, NO_VALUE, "cannot be decoded (mixed shapes across lines)")
        return None


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _scan_documents(value: Any) -> list[tuple[str, object, str]]:
    if not isinstance(value, list):
        return [("", value, "must be a list of documents")]
    found = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            found.append((f"[{i}]", item, "must be a document object"))
            continue
        for key, node in [*item.items(), *((f"doc.{k}", v) for k, v in (item.get("doc") or {}).items())]:
            if key in ("doc", "metadata", "doc.metadata"):
                continue
            if key.endswith("embedding"):
                if not (isinstance(node, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in node)):
                    found.append((f"[{i}].{key}", node, "must be a list of numbers"))
            elif not _scalar(node):
                found.append((f"[{i}].{key}", node, "must be a scalar"))
    return found


def _scan_mapping(kind: str) -> Callable[[Any], list[tuple[str, object, str]]]:
    def scan(value: Any) -> list[tuple[str, object, str]]:
        if not isinstance(value, dict):
            return [("", value, f"must be an object of {kind}")]
        message = "must be a non-negative number" if kind == "timings" else "is not a scalar"
        return [(f".{key}", node, message) for key, node in value.items() if not _scalar(node)]
    return scan


def _documents(frame: pl.DataFrame, column: str, problems: _Problems) -> pl.DataFrame | None:
    """Long rows of a list-of-documents column: ``_row, _item, doc_id, text, score, rank,
    relevance, embedding`` (text leaves cast and checked; bad casts are problems)."""
    if column not in frame.columns:
        return None
    try:  # numbers as numbers; any value of another type sends the column to the checked path
        decoded = frame.get_column(column).str.json_decode(pl.List(_DOC_TYPED))
        typed = True
    except pl.exceptions.PolarsError:
        decoded = _decode(frame, column, pl.List(_DOC), problems, _scan_documents)
        typed = False
    if decoded is None:
        return None
    dtype = pl.List(_DOC_TYPED if typed else _DOC)
    meta = pl.col(column).struct.field("metadata")
    doc = pl.col(column).struct.field("doc")
    long = (
        pl.DataFrame({"_row": pl.int_range(frame.height, eager=True, dtype=pl.UInt32), column: decoded})
        .with_columns(pl.col(column).fill_null(pl.lit([], dtype=dtype)))
        .with_columns(_item=pl.int_ranges(0, pl.col(column).list.len().fill_null(0), dtype=pl.UInt32))
        .explode(column, "_item")
        .drop_nulls("_item")
        .select(
            "_row", "_item",
            doc_id=pl.coalesce(pl.col(column).struct.field("doc_id"), doc.struct.field("doc_id")),
            text=pl.coalesce(pl.col(column).struct.field("text"), doc.struct.field("text")),
            score_text=pl.col(column).struct.field("score").cast(pl.String),
            rank_text=pl.col(column).struct.field("rank").cast(pl.String),
            relevance_text=pl.coalesce(pl.col(column).struct.field("relevance"), meta.struct.field("relevance"),
                                       doc.struct.field("metadata").struct.field("relevance")).cast(pl.String),
            embedding=pl.coalesce(pl.col(column).struct.field("embedding"), meta.struct.field("embedding"),
                                  doc.struct.field("metadata").struct.field("embedding")),
        )
        .with_columns(
            score=pl.col("score_text").cast(pl.Float64, strict=False),
            rank=_whole("rank_text"),
            relevance=_whole("relevance_text"),
            embedding=pl.col("embedding") if typed else pl.col("embedding").list.eval(pl.element().cast(pl.Float64, strict=False)),
        )
    )

    def at(field: str) -> Callable[[dict], str]:
        return lambda record: f"{column}[{record['_item']}].{field}"

    problems.add_rows(long.filter(pl.col("doc_id").is_null()), at("doc_id"), None, "is missing (every document needs a doc_id)")
    for field, kind in (("score", "a number"), ("rank", "a whole number"), ("relevance", "a whole number")):
        bad = long.filter(pl.col(f"{field}_text").is_not_null() & pl.col(field).is_null())
        problems.add_rows(bad, at(field), f"{field}_text", f"is not {kind}")
    bad = long.filter(pl.col("rank") < 1)
    problems.add_rows(bad, at("rank"), "rank", "must be >= 1")
    bad = long.filter(pl.col("relevance") < -1)
    problems.add_rows(bad, at("relevance"), "relevance", "must be >= -1")
    bad = long.filter(pl.col("embedding").list.eval(pl.element().is_null() | pl.element().is_nan() | pl.element().is_infinite()).list.any().fill_null(False))
    problems.add_rows(bad, at("embedding"), None, "must be a list of finite numbers")
    repeated = long.filter(pl.col("doc_id").is_not_null() & pl.col("doc_id").is_duplicated().over("_row"))
    repeated = repeated.filter(pl.int_range(pl.len()).over("_row", "doc_id") > 0)
    problems.add_rows(repeated, at("doc_id"), "doc_id",
                      "repeats a document of the same list (a document retrieved twice)" if column == "retrieved"
                      else "repeats a document of the same list")
    return long.drop("score_text", "rank_text", "relevance_text")


def _whole(column: str) -> pl.Expr:
    """A text column as whole numbers (``2`` and ``2.0`` are 2; ``2.5`` or ``x`` are null)."""
    number = pl.col(column).cast(pl.Float64, strict=False)
    return pl.when(number == number.floor()).then(number).cast(pl.Int64, strict=False)


def _check_ranks(long: pl.DataFrame, problems: _Problems) -> pl.DataFrame:
    """Ranks, when given, are 1..n per list; missing ranks are the list order."""
    per_list = long.group_by("_row").agg(
        n=pl.len(), given=pl.col("rank").is_not_null().sum(), n_unique=pl.col("rank").n_unique(),
        low=pl.col("rank").min(), high=pl.col("rank").max(), ranks=pl.col("rank").sort(),
    )
    partial = per_list.filter((pl.col("given") > 0) & (pl.col("given") < pl.col("n")))
    problems.add_rows(partial.with_columns(_item=pl.lit(0)), lambda r: "retrieved[*].rank", None,
                      "gives ranks to some documents only (give every document a rank, or none)")
    bad = per_list.filter((pl.col("given") == pl.col("n")) & (
        (pl.col("n_unique") != pl.col("n")) | (pl.col("low") != 1) | (pl.col("high") != pl.col("n"))))
    problems.add_rows(bad.with_columns(shown=pl.col("ranks").cast(pl.List(pl.String)).list.join(", ")),
                      lambda r: "retrieved[*].rank", "shown", "ranks must be 1..n without gaps or repeats")
    return long.with_columns(rank=pl.coalesce("rank", (pl.col("_item") + 1).cast(pl.Int64)))


def _free_mapping(frame: pl.DataFrame, column: str, problems: _Problems, kind: str) -> pl.DataFrame | None:
    """A free-key object column (timings, labels) as a frame of text columns, one per key."""
    if column not in frame.columns or frame.get_column(column).null_count() == frame.height:
        return None
    inferred = _decode(frame, column, None, problems, _scan_mapping(kind))
    if inferred is None:
        return None
    if not isinstance(inferred.dtype, pl.Struct):
        problems.add(None, column, NO_VALUE, f"must be an object of {kind}")
        return None
    keys = [field.name for field in inferred.dtype.fields]
    decoded = _decode(frame, column, pl.Struct({key: pl.String for key in keys}), problems, _scan_mapping(kind))
    return None if decoded is None else decoded.struct.unnest()


# --- the reader ---------------------------------------------------------------------------------


def _parse(source: str | Path | pl.DataFrame, fields: tuple[str, ...] | None, problems_hint: str) -> tuple[pl.DataFrame, _Problems, dict[str, pl.DataFrame | None]]:
    """Decode one file: its text columns and its nested parts (documents, timings, labels)."""
    frame, locate, name = _read_text_columns(source)
    problems = _Problems(name, locate)
    if "sample_id" not in frame.columns and "query_id" in frame.columns:
        frame = frame.rename({"query_id": "sample_id"})
    if "sample_id" not in frame.columns:
        problems.add(None, "sample_id", NO_VALUE, f"is missing: every record needs a `sample_id` (or `query_id`) {problems_hint}")
        problems.raise_if_any()
    frame = frame.with_row_index("_row")
    problems.add_rows(frame.filter(pl.col("sample_id").is_null()), lambda r: "sample_id", None, "is missing or null")
    if fields is not None:
        unknown = [c for c in frame.columns if c not in (*fields, "_row")]
        for column in unknown:
            problems.add(None, column, NO_VALUE, f"is not a field of this file (fields: {', '.join(fields)})")
    parts = {
        "retrieved": _documents(frame, "retrieved", problems),
        "relevant_docs": _documents(frame, "relevant_docs", problems),
        "timings": _free_mapping(frame, "timings", problems, "timings"),
        "labels": _free_mapping(frame, "labels", problems, "labels"),
    }
    if parts["retrieved"] is not None:
        parts["retrieved"] = _check_ranks(parts["retrieved"], problems)
    return frame, problems, parts


def read_rag(
    source: str | Path | pl.DataFrame,
    outputs: str | Path | pl.DataFrame | None = None,
    *,
    unknown_outputs: UnknownOutputs = "error",
) -> Tables:
    """Read a RAG output file (or a samples file and an outputs file) into the engine's tables.

    See the module docstring for the forms and checks. ``unknown_outputs="drop"`` drops (and
    counts, in the tables' notes) outputs of samples the samples file does not list.

    >>> frame = pl.DataFrame({"sample_id": ["q1"], "query": ["Who?"], "reference_answer": ["Ada"],
    ...     "response": ["Ada Lovelace"], "retrieved": [[{"doc_id": "d1", "text": "Ada wrote it."}]],
    ...     "relevant_docs": [[{"doc_id": "d1", "relevance": 2}]]})
    >>> tables = read_rag(frame)
    >>> tables.queries.select("system", "query_id", "reference", "response").rows()
    [('default', 'q1', 'Ada', 'Ada Lovelace')]
    >>> tables.judgments.select("query_id", "doc_id", "relevance").rows()
    [('q1', 'd1', 2)]
    """
    if unknown_outputs not in ("error", "drop"):
        raise InputError("read_rag", Problem(None, "unknown_outputs", unknown_outputs, "must be 'error' or 'drop'"))
    notes: list[str] = []
    if outputs is None:
        frame, problems, parts = _parse(source, None, "")
        problems_list = [problems]
    else:
        frame, problems, parts = _parse(source, SAMPLE_FIELDS, "(samples file)")
        out_frame, out_problems, out_parts = _parse(outputs, OUTPUT_FIELDS, "(outputs file)")
        problems_list = [problems, out_problems]
        known = frame.select("sample_id").unique()
        unknown = out_frame.join(known, on="sample_id", how="anti").filter(pl.col("sample_id").is_not_null())
        if unknown.height and unknown_outputs == "error":
            out_problems.add_rows(unknown, lambda r: "sample_id", "sample_id",
                                  "names a sample the samples file does not list")
        elif unknown.height:
            notes.append(f"{unknown.height} outputs of samples the samples file does not list were dropped")
        dup = frame.filter(pl.col("sample_id").is_duplicated() & pl.col("sample_id").is_not_null())
        problems.add_rows(dup, lambda r: "sample_id", "sample_id", "is listed twice in the samples file")
        for p in problems_list:
            p.raise_if_any()
        frame, parts = _join_two_files(frame, parts, out_frame, out_parts)
    # One file: the cross-record checks run too, so that every problem is reported at once.
    queries, ranking, judgments = _tables(frame, parts, problems)
    problems.raise_if_any()
    absent = _absent_columns(queries)
    return Tables(queries=queries, judgments=judgments, ranking_rows=ranking, n_rows=frame.height,
                  notes=tuple(notes), ranking_source=problems.source, absent_columns=absent,
                  source_columns=_given_fields(absent, ranking, judgments))


#: The record field behind each optional text column of the queries table.
_FIELD_OF = {"query_text": "query", "reference": "reference_answer", "response": "response"}


def _absent_columns(queries: pl.DataFrame) -> tuple[str, ...]:
    """Columns of ``queries`` that no record gives (all null: a label, timing or reference the
    file lacks, which the reader adds for the metrics' sake; ``retrieved_embeddings`` when no
    retrieved document has an embedding); a bundled pipeline skips what needs them."""
    if queries.height == 0:
        return ()
    given = queries.select(
        (pl.col(c).list.drop_nulls().list.len().sum() > 0) if c == "retrieved_embeddings" else pl.col(c).is_not_null().any()
        for c in queries.columns
    ).row(0)
    return tuple(c for c, present in zip(queries.columns, given, strict=True) if not present)


def _given_fields(absent: tuple[str, ...], ranking: pl.DataFrame, judgments: pl.DataFrame) -> tuple[str, ...]:
    """The record fields the file gives, by their own names (what a pipeline part may ``require``)."""
    fields = [field for column, field in _FIELD_OF.items() if column not in absent]
    return (*fields, *(["retrieved"] if ranking.height else []), *(["relevant_docs"] if judgments.height else []))


def _join_two_files(samples: pl.DataFrame, parts: dict, outputs: pl.DataFrame, out_parts: dict) -> tuple[pl.DataFrame, dict]:
    """One record per output with its sample's fields; nested parts re-keyed to the output rows."""
    outputs = outputs.join(samples.select("sample_id").unique(), on="sample_id", how="semi")
    joined = outputs.rename({"_row": "_out_row"}).join(
        samples.rename({"_row": "_sample_row"}), on="sample_id", how="left", suffix="_sample"
    ).with_row_index("_row")
    mapping_out = joined.select("_row", pl.col("_out_row").alias("_from"))
    mapping_sample = joined.select("_row", pl.col("_sample_row").alias("_from"))

    def rekey(part: pl.DataFrame | None, mapping: pl.DataFrame) -> pl.DataFrame | None:
        if part is None:
            return None
        if "_row" in part.columns:
            return mapping.join(part.rename({"_row": "_from"}), on="_from", how="inner").drop("_from").sort("_row", maintain_order=True)
        return mapping.join(part.with_row_index("_from"), on="_from", how="left").sort("_row").drop("_row", "_from")

    combined = {
        "retrieved": rekey(out_parts["retrieved"], mapping_out),
        "relevant_docs": rekey(parts["relevant_docs"], mapping_sample),
        "timings": rekey(out_parts["timings"], mapping_out),
        "labels": rekey(parts["labels"], mapping_sample),
    }
    return joined.drop("_out_row", "_sample_row"), combined


def _tables(frame: pl.DataFrame, parts: dict, problems: _Problems) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """queries, ranking and judgments of a decoded frame (adding the cross-row problems)."""
    height = frame.height
    system = pl.col("system") if "system" in frame.columns else pl.lit("default")
    if "response" not in frame.columns:
        problems.add(None, "response", NO_VALUE, "is missing: every record needs the system's `response`")
        problems.raise_if_any()
    columns = frame.select(
        "_row",
        system.fill_null("default").alias("system"),
        pl.col("sample_id").alias("query_id"),
        (_text_field("query") if "query" in frame.columns else pl.lit(None, dtype=pl.String)).alias("query_text"),
        (_text_field("reference_answer") if "reference_answer" in frame.columns else pl.lit(None, dtype=pl.String)).alias("reference"),
        _text_field("response").alias("response"),
    )
    problems.add_rows(columns.filter(pl.col("response").is_null()), lambda r: "response", None, "is missing or null")
    dup = columns.filter(pl.struct("system", "query_id").is_duplicated()).filter(
        pl.int_range(pl.len()).over("system", "query_id") > 0)
    problems.add_rows(dup, lambda r: "sample_id", "query_id", "repeats a (sample_id, system) pair of an earlier record")

    # timings → latency_<key>
    timings = parts["timings"]
    latency = {}
    if timings is not None:
        for key in timings.columns:
            values = timings.get_column(key)
            numbers = values.cast(pl.Float64, strict=False)
            bad = pl.DataFrame({"_row": pl.int_range(height, eager=True), "v": values, "x": numbers}).filter(
                pl.col("v").is_not_null() & (pl.col("x").is_null() | pl.col("x").is_nan() | pl.col("x").is_infinite() | (pl.col("x") < 0))
            )
            problems.add_rows(bad, lambda r, key=key: f"timings.{key}", "v", "must be a non-negative number")
            latency[f"latency_{key}"] = numbers
    latency.setdefault(f"latency_{STANDARD_TIMING}", pl.repeat(None, height, dtype=pl.Float64, eager=True))

    # labels → one column each
    labels = parts["labels"]
    label_columns: dict[str, pl.Series] = {}
    if labels is not None:
        for key in labels.columns:
            if key in RESERVED:
                problems.add(None, f"labels.{key}", NO_VALUE, f"`{key}` is a column of the reader; rename the label")
                continue
            label_columns[key] = labels.get_column(key)
    for key in STANDARD_LABELS:
        label_columns.setdefault(key, pl.repeat(None, height, dtype=pl.String, eager=True))
    queries = columns.with_columns(**{k: v for k, v in latency.items()}, **label_columns)

    # retrieved → ranking and the list columns of the text metrics
    retrieved = parts["retrieved"]
    keys = queries.select("_row", "system", "query_id")
    if retrieved is None:
        retrieved = pl.DataFrame(schema={"_row": pl.UInt32, "_item": pl.UInt32, "doc_id": pl.String, "text": pl.String,
                                         "score": pl.Float64, "rank": pl.Int64, "relevance": pl.Int64,
                                         "embedding": pl.List(pl.Float64)})
    lengths = retrieved.filter(pl.col("embedding").is_not_null()).with_columns(dim=pl.col("embedding").list.len())
    if lengths.get_column("dim").n_unique() > 1:
        common = lengths.get_column("dim").mode().sort()[0]
        bad = lengths.filter(pl.col("dim") != common)
        problems.add_rows(bad, lambda r: f"retrieved[{r['_item']}].embedding", "dim",
                          f"has a length different from the other embeddings ({common})")
    ordered = retrieved.sort("_row", "rank")
    per_row = ordered.group_by("_row", maintain_order=True).agg(
        retrieved_texts=pl.col("text"),
        retrieved_embeddings=pl.when(pl.col("embedding").is_not_null().all()).then(pl.col("embedding")),
    )
    queries = queries.join(per_row, on="_row", how="left", maintain_order="left")
    ranking = ordered.join(keys, on="_row", how="inner").select(
        "system", "query_id", "doc_id", "rank", "score", "text")

    # relevant_docs → judgments (one set per sample, the same from every system)
    relevant = parts["relevant_docs"]
    if relevant is None:
        judged = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64, "text": pl.String})
        queries = queries.with_columns(relevant_texts=pl.lit(None, dtype=pl.List(pl.String)))
    else:
        relevant = relevant.join(keys, on="_row", how="inner").with_columns(pl.col("relevance").fill_null(1))
        judged_all = relevant.select("_row", "system", "query_id", "doc_id", "relevance", "text")
        judged = judged_all.unique(["query_id", "doc_id", "relevance", "text"], maintain_order=True)
        conflicting = judged.filter(pl.struct("query_id", "doc_id").is_duplicated()).filter(
            pl.int_range(pl.len()).over("query_id", "doc_id") > 0)
        problems.add_rows(conflicting, lambda r: "relevant_docs", "doc_id",
                          "gives this document another grade or text than another record of the same sample")
        judged = judged.unique(["query_id", "doc_id"], keep="first", maintain_order=True).select(
            "query_id", "doc_id", "relevance", "text")
        texts = relevant.group_by("_row", maintain_order=True).agg(relevant_texts=pl.col("text"))
        queries = queries.join(texts, on="_row", how="left", maintain_order="left")

    # pairs: variant_of must name a sample, and its parent must have an output from the same system
    variant = queries.filter(pl.col("variant_of").is_not_null())
    if variant.height:
        samples = queries.select(pl.col("query_id").unique())
        unknown = variant.join(samples, left_on="variant_of", right_on="query_id", how="anti")
        problems.add_rows(unknown, lambda r: "labels.variant_of", "variant_of", "names no sample of the file")
        parents = queries.select("system", pl.col("query_id").alias("variant_of"), parent_response=pl.col("response"))
        orphan = variant.join(unknown.select("_row"), on="_row", how="anti").join(
            parents, on=["system", "variant_of"], how="anti")
        problems.add_rows(orphan.with_columns(shown=pl.format("parent {} has no output from system {}", "variant_of", "system")),
                          lambda r: "labels.variant_of", "shown", "is a variant whose parent has no output from its system")
        queries = queries.join(parents, on=["system", "variant_of"], how="left", maintain_order="left")
    else:
        queries = queries.with_columns(parent_response=pl.lit(None, dtype=pl.String))
    queries = queries.with_columns(cluster_id=pl.coalesce("variant_of", "query_id"))
    problems.raise_if_any()
    queries = conform(queries.drop("_row").sort("system", "query_id"), load_contract("rag"), source=problems.source)
    return queries, ranking, judged
