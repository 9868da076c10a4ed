"""How contract problems are worded: locations, missing columns, failed casts, pandera's failure cases.

Every message names the place ("line 7", "row 3"), the column as the user spelled it (after a
column mapping) and the value, as :class:`~evalframe.errors.Problem` rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from evalframe.data.schema import Contract
from evalframe.errors import NO_VALUE, Problem

Locate = Callable[[int], str]


def locate_rows(index: int) -> str:
    """Default location: 1-based row number of an in-memory or Parquet table."""
    return f"row {index + 1}"



def mapping_hint(frame: pl.DataFrame, contract: Contract, label: Callable[[str], str]) -> str | None:
    """How to map a column of another name onto a missing required one, in every door's words."""
    missing = [name for name, column in contract.columns.items() if column.required and name not in frame.columns]
    if not missing:
        return None
    spare = [c for c in frame.columns if c not in contract.columns]
    from difflib import get_close_matches

    name = label(missing[0])
    guess = (get_close_matches(name, spare, n=1, cutoff=0.3) or spare or ["your_column"])[0]
    return (f"if your file names it differently, map it: `input: {{columns: {{{name}: {guess}}}}}` in a pipeline, "
            f"`--set input.columns.{name}={guess}` for `evalframe run`, `--map {name}={guess}` for `evalframe validate`, "
            f"`columns={{\"{name}\": \"{guess}\"}}` in Python")


def missing_columns(frame: pl.DataFrame, contract: Contract, label: Callable[[str], str]) -> list[Problem]:
    found = ", ".join(f"`{c}`" for c in frame.columns) or "none"
    problems = [
        Problem(None, label(name), NO_VALUE, f"required column is missing (found: {found})")
        for name, column in contract.columns.items()
        if column.required and name not in frame.columns
    ]
    for group, message in contract.require_any_of:
        if not any(name in frame.columns for name in group):
            names = " or ".join(f"`{label(name)}`" for name in group)
            problems.append(Problem(None, None, NO_VALUE, message or f"needs a column {names}"))
    return problems


DTYPE_WORDS = {"int": "an integer", "float": "a number", "bool": "true/false", "string": "text"}


_DECIMAL_COMMA = r"^[+-]?\d+,\d+$"


def decimal_comma_hint(problems: list[Problem], contract: Contract, label: Callable[[str], str]) -> str | None:
    """How to declare decimal commas, when a number column's failing values are written with one."""
    float_columns = {label(name) for name, column in contract.columns.items() if column.dtype == "float"}
    for problem in problems:
        if problem.column in float_columns and isinstance(problem.value, str) and re.match(_DECIMAL_COMMA, problem.value.strip()):
            return (
                f"values such as {problem.value!r} have a decimal comma; declare it: `decimal_comma=True` in Python,"
                " or `decimal_comma: true` in the pipeline's `input:` block"
            )
    return None



def problems_from_failure_cases(
    failures: pl.DataFrame, frame: pl.DataFrame, contract: Contract, locate: Locate, label: Callable[[str], str]
) -> list[Problem]:
    """Turn pandera's ``failure_cases`` table into problems naming row, column and value."""
    problems = []
    failures = failures.sort("index", "column", nulls_last=True)
    reported_nan: set[tuple[int, str]] = set()
    key_columns = [name for name in contract.unique if name in frame.columns]
    first_seen: dict[tuple, int] = {}
    for row in failures.iter_rows(named=True):  # one row per failure: small
        index = row["index"]
        location = locate(index) if index is not None else None
        check = row["check"] or ""
        if check == "multiple_fields_uniqueness":
            key = tuple(frame.row(index, named=True)[name] for name in key_columns)
            shown = ", ".join(f"{label(name)}={value!r}" for name, value in zip(key_columns, key, strict=True))
            if key in first_seen:
                message = f"{contract.unique_message}: {shown} (first at {locate(first_seen[key])})"
                problems.append(Problem(location, None, NO_VALUE, message))
            else:
                first_seen[key] = index
            continue
        column = row["column"]
        value = frame.get_column(column)[index] if index is not None and column in frame.columns else row["failure_case"]
        if isinstance(value, float) and value != value:
            # NaN fails not-null, range and finiteness checks alike: say it once.
            if (index, column) not in reported_nan:
                reported_nan.add((index, column))
                problems.append(Problem(location, label(column), value, "is NaN (not a number)"))
            continue
        if check == "not_nullable":
            message = "is empty (a value is required)"
        elif check.startswith("dtype("):
            message = f"has the wrong dtype ({row['failure_case']})"
            value = NO_VALUE
        else:
            message = check
        problems.append(Problem(location, label(column) if column else None, value, message))
    return problems

