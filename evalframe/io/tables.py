"""Readers for long tables in Parquet or CSV, with a column mapping.

A column mapping says which of the file's columns plays each contract column:
``{"query_id": "qid", "doc_id": "docno", "score": "sim"}``. Columns the mapping does not
name are taken by their own name. CSV files are read as text and converted by the contract,
so identifiers keep their exact spelling (``007`` stays ``007``) and a value that does not
convert is reported with its line number.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from evalframe.data.contracts import conform, load_contract, locate_rows
from evalframe.errors import NO_VALUE, InputError, Problem

PARQUET_SUFFIXES = {".parquet", ".pq"}
CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}


def read_frame(path: str | Path) -> tuple[pl.DataFrame, object]:
    """Read a Parquet or CSV file as it is; return the frame and a row locator for messages."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(str(path), Problem(None, None, NO_VALUE, "file not found"))
    try:
        if suffix in PARQUET_SUFFIXES:
            return pl.read_parquet(path), locate_rows
        if suffix in CSV_SUFFIXES:
            frame = pl.read_csv(
                path, separator=CSV_SUFFIXES[suffix], infer_schema=False, raise_if_empty=False
            )
            # Line 1 is the header, so data row i (0-based) sits on line i + 2.
            return frame, lambda index: f"line {index + 2}"
        if suffix in JSONL_SUFFIXES:
            return _read_jsonl(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read: {error}")) from None
    msg = f"unknown table format `{suffix}` (expected .parquet, .pq, .csv, .tsv, .jsonl or .ndjson)"
    raise InputError(str(path), Problem(None, None, NO_VALUE, msg))


def _read_jsonl(path: Path) -> tuple[pl.DataFrame, object]:
    """A JSON Lines file with every field as text, as a CSV is read: numbers keep their spelling,
    a list or object becomes its JSON text (list columns are parsed by the reader that needs them).

    Blank lines are skipped, so row ``i`` is the ``i``-th non-blank line (line numbers are worked
    out only when a message needs one). A line that is not a JSON object is reported with its
    number.
    """
    try:
        names = pl.scan_ndjson(path, infer_schema_length=None).collect_schema().names()
        frame = pl.read_ndjson(path, schema={name: pl.String for name in names}) if names else pl.DataFrame()
    except pl.exceptions.PolarsError as error:
        bad = _first_bad_json_line(path)
        if bad is None:
            raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read: {error}")) from None
        number, line, reason = bad
        raise InputError(str(path), Problem(f"line {number}", None, line, f"is not a JSON object ({reason})")) from None
    lines: list[int] = []

    def locate(index: int) -> str:
        if not lines:
            lines.extend(n for n, line in enumerate(path.read_text().splitlines(), start=1) if line.strip())
        return f"line {lines[index]}" if index < len(lines) else f"row {index + 1}"

    return frame, locate


def _first_bad_json_line(path: Path) -> tuple[int, str, str] | None:
    """The first line that is neither blank nor a JSON object: (number, text, reason)."""
    import json

    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as error:
            return number, line.strip(), str(error)
        if not isinstance(value, dict):
            return number, line.strip(), "found " + type(value).__name__
    return None


def apply_mapping(
    frame: pl.DataFrame, columns: Mapping[str, str] | None, *, source: str
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Rename the user's columns to contract names; return the frame and contract→user labels."""
    mapping = dict(columns or {})
    missing = [user for user in mapping.values() if user not in frame.columns]
    if missing:
        found = ", ".join(f"`{c}`" for c in frame.columns)
        problems = [
            Problem(None, user, NO_VALUE, f"column named in the column mapping is missing (found: {found})")
            for user in missing
        ]
        raise InputError(source, problems)
    renames = {user: canonical for canonical, user in mapping.items() if user != canonical}
    renamed = frame.rename(renames) if renames else frame  # the same object: a conformed frame stays known
    return renamed, {canonical: user for canonical, user in mapping.items()}


def read_table(
    path: str | Path, table: str, *, columns: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """Read a long Parquet/CSV file and conform it to the contract of ``table``."""
    frame, locate = read_frame(path)
    frame, labels = apply_mapping(frame, columns, source=str(path))
    return conform(frame, load_contract(table), source=str(path), locate=locate, column_labels=labels)
