"""Reading user files into evalframe's validated long tables (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.io.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, apply_mapping, read_table
from evalframe.io.trec import read_trec_qrels, read_trec_run

Format = Literal["auto", "trec", "parquet", "csv"]


def _is_trec(path: Path, format: Format) -> bool:
    if format != "auto":
        return format == "trec"
    return path.suffix.lower() not in PARQUET_SUFFIXES | set(CSV_SUFFIXES)


def read_run(
    source: str | Path | pl.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    format: Format = "auto",
) -> pl.DataFrame:
    """Read a run into the ``ranking`` table.

    ``source`` is a TREC run file (any suffix other than .parquet/.pq/.csv/.tsv, or
    ``format="trec"``), a long Parquet/CSV table, or a Polars DataFrame. ``columns`` maps
    contract names to the file's names, e.g. ``{"query_id": "qid", "score": "sim"}``.

    The result has ``system``, ``query_id``, ``doc_id`` and ``rank`` and/or ``score``.
    """
    if isinstance(source, pl.DataFrame):
        frame, labels = apply_mapping(source, columns, source="run table")
        return conform(frame, load_contract("ranking"), source="run table", column_labels=labels)
    path = Path(source)
    if _is_trec(path, format):
        return read_trec_run(path)
    return read_table(path, "ranking", columns=columns)


def read_qrels(
    source: str | Path | pl.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    format: Format = "auto",
) -> pl.DataFrame:
    """Read relevance judgments into the ``judgments`` table (query_id, doc_id, relevance)."""
    if isinstance(source, pl.DataFrame):
        frame, labels = apply_mapping(source, columns, source="qrels table")
        return conform(frame, load_contract("judgments"), source="qrels table", column_labels=labels)
    path = Path(source)
    if _is_trec(path, format):
        return read_trec_qrels(path)
    return read_table(path, "judgments", columns=columns)


__all__ = ["read_qrels", "read_run", "read_table"]
