"""Reading user files into evalframe's validated long tables (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.io.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, apply_mapping, read_table
from evalframe.io.trec import read_trec_qrels, read_trec_run

Format = Literal["auto", "trec", "parquet", "csv"]


def _is_trec(path: Path, format: Format) -> bool:
    if format != "auto":
        return format == "trec"
    return path.suffix.lower() not in PARQUET_SUFFIXES | set(CSV_SUFFIXES)


def read_run(
    source: str | Path | pl.DataFrame | Sequence[str | Path | pl.DataFrame],
    *,
    columns: Mapping[str, str] | None = None,
    format: Format = "auto",
    separator: str | None = None,
    decimal_comma: bool = False,
) -> pl.DataFrame:
    """Read a run (or several) into the ``ranking`` table.

    ``source`` is a TREC run file (any suffix other than .parquet/.pq/.csv/.tsv, or
    ``format="trec"``), a long Parquet/CSV table, a Polars DataFrame, or a list of them: the
    runs of several systems (each TREC file's run tag, or a table's ``system`` column, tells
    them apart). The same (system, query_id, doc_id) in two files is an error naming both
    files, never a silent choice; parts of one system's run with different queries are joined.
    ``columns`` maps contract names to the file's names, e.g. ``{"query_id": "qid", "score": "sim"}``;
    ``separator`` and ``decimal_comma`` declare a CSV table's separator and decimal mark.

    The result has ``system``, ``query_id``, ``doc_id`` and ``rank`` and/or ``score``.
    """
    if isinstance(source, (list, tuple)):
        if not source:
            raise InputError("read_run", Problem(None, None, NO_VALUE, "no run given (an empty list)"))
        options = {"columns": columns, "format": format, "separator": separator, "decimal_comma": decimal_comma}
        return _join_runs([read_run(one, **options) for one in source], [_name_of(one, i) for i, one in enumerate(source)])
    if isinstance(source, pl.DataFrame):
        frame, labels = apply_mapping(source, columns, source="run table")
        return conform(frame, load_contract("ranking"), source="run table", column_labels=labels)
    path = Path(source)
    if _is_trec(path, format):
        return read_trec_run(path)
    return read_table(path, "ranking", columns=columns, separator=separator, decimal_comma=decimal_comma)


def _name_of(source: str | Path | pl.DataFrame, index: int) -> str:
    return f"run table {index + 1}" if isinstance(source, pl.DataFrame) else str(source)


def _join_runs(runs: list[pl.DataFrame], names: list[str]) -> pl.DataFrame:
    """One ranking table from several; a (system, query_id, doc_id) in two of them is an error."""
    key = ["system", "query_id", "doc_id"]
    joined = pl.concat(
        [run.with_columns(_file=pl.lit(index, dtype=pl.Int32)) for index, run in enumerate(runs)], how="diagonal_relaxed"
    )
    in_several = (
        joined.group_by(key).agg(pl.col("_file").unique().sort())
        .filter(pl.col("_file").list.len() > 1)
        .sort(key)
    )
    if in_several.height:
        problems = [
            Problem(None, None, NO_VALUE,
                    f"system {system!r}, query {query!r}, doc {doc!r} is in {' and '.join(names[i] for i in files)}")
            for system, query, doc, files in in_several.head(20).iter_rows()
        ]
        if in_several.height > 20:
            problems.append(Problem.unlisted(None, "more (system, query, doc) are in several files", in_several.height - 20))
        hint = ("files of different systems need different run tags (the 6th TREC field) or `system` values; "
                "parts of one system's run must not repeat a query's document")
        raise InputError(", ".join(names), problems, hint=hint)
    return joined.drop("_file")


def read_qrels(
    source: str | Path | pl.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    format: Format = "auto",
    separator: str | None = None,
    decimal_comma: bool = False,
) -> pl.DataFrame:
    """Read relevance judgments into the ``judgments`` table (query_id, doc_id, relevance).

    Sources and options as :func:`read_run` (one source).
    """
    if isinstance(source, pl.DataFrame):
        frame, labels = apply_mapping(source, columns, source="qrels table")
        return conform(frame, load_contract("judgments"), source="qrels table", column_labels=labels)
    path = Path(source)
    if _is_trec(path, format):
        return read_trec_qrels(path)
    return read_table(path, "judgments", columns=columns, separator=separator, decimal_comma=decimal_comma)


__all__ = ["read_qrels", "read_run", "read_table"]
