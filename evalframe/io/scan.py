"""Lazy scans of inputs too large to read at once (:func:`scan_run`, :func:`scan_qrels`).

A :class:`Scan` is a Polars ``LazyFrame`` over one or more files plus what the engine needs to
bucket it (:mod:`evalframe.engine.buckets`): which table it is, where it came from, and an
estimate of its size in memory. Nothing is read until the engine streams it into buckets.

Sources: a file, a folder (every Parquet, CSV/TSV and NDJSON file in it, sorted) or a glob
(``"run/*.parquet"``); all files of one scan have one format, told by the suffix:
Parquet (``.parquet``, ``.pq``), CSV (``.csv``; ``.tsv`` tab-separated), NDJSON (``.ndjson``,
``.jsonl``). A TREC text file (any other suffix) cannot be scanned column-wise: it is read
whole by :func:`evalframe.read_run` / :func:`evalframe.read_qrels` (validated and in memory)
and then bucketed like a scan — convert it to Parquet to keep the input out of memory.

``columns`` maps contract names to the file's (``{"query_id": "qid"}``), as the readers do.
The rows are validated bucket by bucket through the same contracts as the readers (messages
then name the scan's source, not a line).
"""

from __future__ import annotations

import glob
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.io.tables import CSV_SUFFIXES, PARQUET_SUFFIXES
from evalframe.io.trec import read_trec_qrels, read_trec_run

NDJSON_SUFFIXES = {".ndjson", ".jsonl"}
_SCANNED = PARQUET_SUFFIXES | set(CSV_SUFFIXES) | NDJSON_SUFFIXES


@dataclass(frozen=True)
class Scan:
    """A table read lazily: ``frame`` (contract column names), ``table`` (``ranking`` or
    ``judgments``), ``source`` (how messages name it), ``files`` and ``size`` (estimated bytes
    in memory: Parquet's uncompressed size, a text file's size, an in-memory frame's size)."""

    frame: pl.LazyFrame
    table: str
    source: str
    files: tuple[Path, ...] = ()
    size: int = 0

    @classmethod
    def of_frame(cls, frame: pl.DataFrame | pl.LazyFrame, table: str, source: str) -> Scan:
        """A scan of a frame already in memory (its size estimated by Polars)."""
        size = frame.estimated_size() if isinstance(frame, pl.DataFrame) else 0
        return cls(frame.lazy(), table, source, (), size)


def _files(source: str | Path) -> list[Path]:
    text = str(source)
    if any(char in text for char in "*?["):
        found = [Path(p) for p in sorted(glob.glob(text, recursive=True)) if Path(p).is_file()]
    elif Path(text).is_dir():
        found = sorted(p for p in Path(text).rglob("*") if p.is_file() and p.suffix.lower() in _SCANNED)
    else:
        found = [Path(text)] if Path(text).exists() else []
    if not found:
        raise InputError(text, Problem(None, None, NO_VALUE, "no file found (a file, a folder of Parquet/CSV/NDJSON files or a glob)"))
    suffixes = sorted({p.suffix.lower() for p in found})
    if len(suffixes) > 1 and not set(suffixes) <= PARQUET_SUFFIXES:
        raise InputError(text, Problem(None, None, NO_VALUE, f"files of several formats ({', '.join(suffixes)}): one format per scan"))
    return found


def _size(files: list[Path]) -> int:
    """Estimated bytes in memory: Parquet's uncompressed row-group sizes, else the files' sizes."""
    total = 0
    for path in files:
        if path.suffix.lower() in PARQUET_SUFFIXES:
            import pyarrow.parquet as pq  # imported where used

            metadata = pq.read_metadata(path)
            total += sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
        else:
            total += path.stat().st_size
    return total


def _scan(source: str | Path, table: str, columns: Mapping[str, str] | None, read_text) -> Scan:
    files = _files(source)
    suffix = files[0].suffix.lower()
    paths = [str(p) for p in files]
    if suffix in PARQUET_SUFFIXES:
        frame = pl.scan_parquet(paths)
    elif suffix in CSV_SUFFIXES:
        frame = pl.scan_csv(paths, separator=CSV_SUFFIXES[suffix], infer_schema_length=10_000)
    elif suffix in NDJSON_SUFFIXES:
        frame = pl.scan_ndjson(paths, infer_schema_length=10_000)
    else:  # TREC text: read whole (module docstring)
        frames = [read_text(path) for path in files]
        eager = pl.concat(frames, how="vertical_relaxed") if len(frames) > 1 else frames[0]
        return Scan(eager.lazy(), table, str(source), tuple(files), eager.estimated_size())
    if columns:
        names = frame.collect_schema().names()
        missing = [name for name in columns.values() if name not in names]
        if missing:
            raise InputError(str(source), Problem(None, ", ".join(missing), NO_VALUE,
                                                  f"`columns` names {missing}, which the file does not have (columns: {names})"))
        frame = frame.rename({theirs: ours for ours, theirs in columns.items() if theirs != ours})
    return Scan(frame, table, str(source), tuple(files), _size(files))


def scan_run(source: str | Path, *, columns: Mapping[str, str] | None = None) -> Scan:
    """A run (the ``ranking`` table) scanned lazily: a file, folder or glob (module docstring).

    >>> import evalframe as ef
    >>> ef.scan_run("runs/*.parquet")   # doctest: +SKIP
    """
    return _scan(source, "ranking", columns, read_trec_run)


def scan_qrels(source: str | Path, *, columns: Mapping[str, str] | None = None) -> Scan:
    """Relevance judgments (the ``judgments`` table) scanned lazily: a file, folder or glob."""
    return _scan(source, "judgments", columns, read_trec_qrels)
