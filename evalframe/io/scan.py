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
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
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


#: A reader's location of a row of a frame it was given ("row 12").
_TABLE_ROW = re.compile(r"\brow (\d[\d,]*)")
#: Columns :func:`scan_rows` adds: the index of a row's file (in ``RowScan.files``) and its
#: 0-based row in that file, so that a message about the row names its file and line.
FILE_COLUMN = "_evalframe_file"
ROW_COLUMN = "_evalframe_row"


@dataclass(frozen=True)
class RowScan:
    """An input file, folder or glob read lazily row by row as :func:`evalframe.io.tables.read_frame`
    reads one file (CSV and NDJSON as text, Parquet as stored), each row tagged with
    :data:`FILE_COLUMN` and :data:`ROW_COLUMN` (:meth:`locate` turns them into "line 7")."""

    frame: pl.LazyFrame
    source: str
    files: tuple[Path, ...]
    size: int
    separator: str = ","
    declared_separator: bool = False

    def located(self, error: InputError, rows: pl.DataFrame) -> InputError:
        """``error`` of a reader given ``rows`` (a part of this scan, with its :data:`FILE_COLUMN`
        and :data:`ROW_COLUMN`) as a frame, whose "row N" means the N-th of ``rows``: the same
        error naming this scan and the file's own lines."""
        files = rows.get_column(FILE_COLUMN).to_list()
        numbers = rows.get_column(ROW_COLUMN).to_list()

        def where(found: re.Match) -> str:
            index = int(found.group(1).replace(",", "")) - 1
            return self.locate(files[index], numbers[index]) if 0 <= index < len(files) else found.group(0)

        def moved(text):
            return _TABLE_ROW.sub(where, text) if isinstance(text, str) else text

        problems = [replace(p, location=moved(p.location), message=moved(p.message)) for p in error.problems]
        return InputError(self.source, problems, hint=error.hint)

    def read_error(self, error: Exception) -> InputError:
        """Our error for a file Polars could not stream: for CSV the lines whose number of fields
        differs from the header's (as the eager reader says), else the reason."""
        from evalframe.io.tables import csv_shape_error

        for path in self.files:
            if path.suffix.lower() in CSV_SUFFIXES:
                found = csv_shape_error(path, self.separator, self.declared_separator, error)
                if any(p.location for p in found.problems):
                    return found
        return InputError(self.source, Problem(None, None, NO_VALUE, f"cannot be read: {error}"))

    def locate(self, file: int, row: int) -> str:
        """Where row ``row`` (0-based) of file ``file`` is, as the eager readers say it: "line N"
        for CSV (line 1 is the header) and NDJSON (blank lines counted), "row N" for Parquet; with
        several files, the file's path first."""
        path = self.files[file]
        suffix = path.suffix.lower()
        if suffix in CSV_SUFFIXES:
            where = f"line {row + 2}"
        elif suffix in NDJSON_SUFFIXES:
            where = f"line {_json_line(path, row)}"
        else:
            where = f"row {row + 1}"
        return where if len(self.files) == 1 else f"{path} {where}"


def _json_line(path: Path, row: int) -> int:
    """Line number of the ``row``-th non-blank line of a JSON Lines file (read only for a message)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        seen = -1
        for number, line in enumerate(handle, start=1):
            seen += bool(line.strip())
            if seen == row:
                return number
    return row + 1


def scan_rows(source: str | Path, *, separator: str | None = None) -> RowScan:
    """The rows of a per-row input (a file, a folder of files or a glob; one format) scanned
    lazily, as :class:`RowScan`. CSV/TSV and NDJSON cells are read as text, so the readers'
    contracts convert them exactly as when they read the file whole; ``separator`` declares a
    CSV file's field separator. An empty file, or a CSV header that splits only with another
    separator, is an :class:`~evalframe.errors.InputError` naming the file, as the eager reader says."""
    from evalframe.io.tables import check_csv_header, check_not_blank, check_separator

    files = _files(source)
    suffix = files[0].suffix.lower()
    if suffix not in _SCANNED:
        raise InputError(str(files[0]), Problem(None, None, NO_VALUE, f"unknown table format `{suffix}` "
                                                "(expected .parquet, .pq, .csv, .tsv, .jsonl or .ndjson)"))
    declared = separator is not None
    separator = check_separator(separator) if declared else CSV_SUFFIXES.get(suffix, ",")
    frames = []
    for index, path in enumerate(files):
        check_not_blank(path)
        if suffix in PARQUET_SUFFIXES:
            frame = pl.scan_parquet(path, row_index_name=ROW_COLUMN)
        elif suffix in CSV_SUFFIXES:
            frame = pl.scan_csv(path, separator=separator, infer_schema=False, row_index_name=ROW_COLUMN)
            if not declared:
                check_csv_header(path, [n for n in frame.collect_schema().names() if n != ROW_COLUMN], separator)
        else:
            names = pl.scan_ndjson(path, infer_schema_length=None).collect_schema().names()
            frame = pl.scan_ndjson(path, schema={name: pl.String for name in names}, row_index_name=ROW_COLUMN)
        frames.append(frame.with_columns(pl.lit(index, dtype=pl.Int32).alias(FILE_COLUMN)))
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return RowScan(frame, str(source), tuple(files), _size(files), separator, declared)
