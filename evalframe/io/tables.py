"""Readers for long tables in Parquet or CSV, with a column mapping.

A column mapping says which of the file's columns plays each contract column:
``{"query_id": "qid", "doc_id": "docno", "score": "sim"}``. Columns the mapping does not
name are taken by their own name. CSV files are read as text and converted by the contract,
so identifiers keep their exact spelling (``007`` stays ``007``) and a value that does not
convert is reported with its line number. A CSV file may declare its separator
(``separator=";"``) and decimal commas (``decimal_comma=True``), as Excel exports in many
locales need; a file of the wrong shape gets an error in the user's terms (:func:`read_frame`).
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from evalframe.data.contracts import conform, load_contract, locate_rows
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem

PARQUET_SUFFIXES = {".parquet", ".pq"}
CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}


#: Separators a CSV file may declare (``separator=``), and their names in messages.
SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}


def read_frame(path: str | Path, *, separator: str | None = None) -> tuple[pl.DataFrame, object]:
    """Read a Parquet or CSV file as it is; return the frame and a row locator for messages.

    ``separator`` declares a CSV file's field separator (default: ``,`` for .csv, tab for .tsv).
    A file whose lines do not have the header's number of fields, or whose header splits only
    with another separator (a semicolon-separated Excel export), is an error naming the lines,
    the fields expected and found, and how to declare the separator. An empty file says so.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(str(path), Problem(None, None, NO_VALUE, "file not found"))
    if suffix not in PARQUET_SUFFIXES and suffix not in CSV_SUFFIXES and suffix not in JSONL_SUFFIXES:
        msg = f"unknown table format `{suffix}` (expected .parquet, .pq, .csv, .tsv, .jsonl or .ndjson)"
        raise InputError(str(path), Problem(None, None, NO_VALUE, msg))
    check_not_blank(path)
    if suffix in PARQUET_SUFFIXES:
        try:
            return pl.read_parquet(path), locate_rows
        except (pl.exceptions.PolarsError, OSError) as error:
            raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read as Parquet: {error}")) from None
    if suffix in JSONL_SUFFIXES:
        return _read_jsonl(path)
    declared = separator is not None
    separator = check_separator(separator) if declared else CSV_SUFFIXES[suffix]
    try:
        frame = pl.read_csv(path, separator=separator, infer_schema=False, raise_if_empty=False)
    except (pl.exceptions.PolarsError, OSError) as error:
        raise csv_shape_error(path, separator, declared, error) from None
    if not declared:
        check_csv_header(path, frame.columns, separator)
    # Line 1 is the header, so data row i (0-based) sits on line i + 2.
    return frame, lambda index: f"line {index + 2}"


def check_not_blank(path: Path) -> None:
    """An empty file (or one of whitespace only) is an error saying so."""
    if _is_blank(path):
        raise InputError(str(path), Problem(None, None, NO_VALUE, "the file is empty"))


def check_csv_header(path: Path, columns: list[str], separator: str) -> None:
    """A CSV header read as one column may split with another separator (contracts need several
    columns): an error naming line 1 and how to declare the separator."""
    if len(columns) != 1:
        return
    header = columns[0]
    hint = _separator_hint(path, header, separator)
    if hint:
        likely = _likely_separator(header, separator)
        found = len(next(csv.reader([header], delimiter=likely)))
        problem = Problem("line 1", None, header, f"has 1 field separated by `{_shown(separator)}`, but {found} by `{_shown(likely)}`")
        raise InputError(str(path), problem, hint=hint)


def check_separator(separator: str) -> str:
    """A declared CSV separator: one character."""
    if not isinstance(separator, str) or len(separator) != 1:
        msg = f"a CSV separator is one character, such as `;` or `\\t` (got {separator!r})"
        raise ConfigError(msg)
    return separator


def _is_blank(path: Path) -> bool:
    """Whether the file holds nothing but whitespace (read only when it is small)."""
    size = path.stat().st_size
    return size == 0 or (size < 4096 and not path.read_bytes().strip())


def _shown(separator: str) -> str:
    return "\\t" if separator == "\t" else separator


def _likely_separator(line: str, declared: str) -> str:
    """The candidate separator that splits ``line`` into the most fields (``declared`` on a tie)."""
    counts = {sep: len(next(csv.reader([line], delimiter=sep), [])) for sep in SEPARATOR_NAMES}
    best = max(counts.values())
    return declared if counts.get(declared) == best else max(counts, key=counts.get)


def _separator_hint(path: Path, header: str, declared: str) -> str | None:
    """How to declare the separator, when the header splits better with another one."""
    likely = _likely_separator(header, declared)
    if likely == declared:
        return None
    shown = _shown(likely)
    hint = (
        f"the file looks {SEPARATOR_NAMES[likely]}-separated"
        + (" (as Excel writes CSV where the decimal mark is a comma)" if likely == ";" else "")
        + f"; declare the separator: `separator=\"{shown}\"` in Python (`ef.read_per_query`, `ef.read_run`, `ef.read_qrels`),"
        f" `separator: \"{shown}\"` in a pipeline's `input:` block, or `--separator \"{shown}\"` for `evalframe validate`"
    )
    if likely == ";" and _has_decimal_commas(path, likely):
        hint += "; its numbers have decimal commas, so declare `decimal_comma=True` (`decimal_comma: true`) too"
    return hint


_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d+,\d+\s*$")


def _has_decimal_commas(path: Path, separator: str) -> bool:
    """Whether a field of the first data lines is a number written with a decimal comma."""
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        for row in itertools.islice(csv.reader(handle, delimiter=separator), 1, 20):
            if any(_DECIMAL_COMMA.match(field) for field in row):
                return True
    return False


def csv_shape_error(path: Path, separator: str, declared: bool, error: Exception) -> InputError:
    """Our error for a CSV file Polars cannot read: the lines whose number of fields differs
    from the header's (counted by kind), and a hint when another separator fits the header.

    Runs only when reading failed, so a pass of Python's csv module over the file is fine.
    """
    bad_lines: list[tuple[str, int, str]] = []  # (location, fields found, text) of the first 50
    totals: dict[int, int] = {}  # fields found -> lines
    firsts: dict[int, str] = {}  # fields found -> the first such line
    expected = 0
    header_line = ""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            header_line = handle.readline().rstrip("\r\n")
            handle.seek(0)
            reader = csv.reader(handle, delimiter=separator)
            expected = len(next(reader, []))
            for row in reader:
                if row and len(row) != expected:
                    totals[len(row)] = totals.get(len(row), 0) + 1
                    firsts.setdefault(len(row), f"line {reader.line_num}")
                    if len(bad_lines) < 50:
                        bad_lines.append((f"line {reader.line_num}", len(row), separator.join(row)))
    except (OSError, csv.Error):
        bad_lines = []
    hint = None if declared else _separator_hint(path, header_line, separator)
    if not bad_lines:
        return InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read as CSV: {error}"), hint=hint)

    def message(found: int) -> str:
        return f"has {found} fields, the header (line 1) has {expected}"

    problems = [Problem(location, None, text, message(found)) for location, found, text in bad_lines]
    for found, total in sorted(totals.items()):
        unlisted = total - sum(1 for _, listed, _ in bad_lines if listed == found)
        if unlisted:
            problems.append(Problem.unlisted(None, message(found), unlisted, first=firsts[found]))
    return InputError(str(path), problems, hint=hint)


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
    path: str | Path,
    table: str,
    *,
    columns: Mapping[str, str] | None = None,
    separator: str | None = None,
    decimal_comma: bool = False,
) -> pl.DataFrame:
    """Read a long Parquet/CSV file and conform it to the contract of ``table``.

    ``separator`` declares a CSV file's field separator (:func:`read_frame`); with
    ``decimal_comma=True`` the contract's number columns read ``0,85`` as 0.85.
    """
    frame, locate = read_frame(path, separator=separator)
    frame, labels = apply_mapping(frame, columns, source=str(path))
    return conform(frame, load_contract(table), source=str(path), locate=locate, column_labels=labels,
                   decimal_comma=decimal_comma)
