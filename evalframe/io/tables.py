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
    except (pl.exceptions.PolarsError, OSError) as error:
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read: {error}")) from None
    msg = f"unknown table format `{suffix}` (expected .parquet, .pq, .csv or .tsv)"
    raise InputError(str(path), Problem(None, None, NO_VALUE, msg))


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
