"""The checks table: one row per check and scope (contract §9, Appendix A).

Columns: ``check`` (its name), the scope ``grouping``, ``system``, ``fold``, ``criterion_id``
(null where the check is about more than one), ``severity`` (``must``: a failure makes
``evalframe run`` exit 1; ``should``: a warning), ``status`` (``pass``, ``fail`` or
``not_applicable``), ``observed`` and ``expected`` (as text, so numbers and lists fit one column)
and ``message`` (what was checked, and where it failed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

COLUMNS = ("check", "grouping", "system", "fold", "criterion_id", "severity", "status", "observed", "expected", "message")
SCHEMA = dict.fromkeys(COLUMNS, pl.String)
MUST, SHOULD = "must", "should"
PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "not_applicable"
#: Relative tolerance of "the same value" (sums added in another order differ in the last bits).
TOLERANCE = 1e-9


def text(value: Any) -> str | None:
    """A cell of ``observed`` / ``expected``: numbers with 10 significant digits."""
    if value is None:
        return None
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


def row(check: str, *, severity: str, status: str, message: str, observed: Any = None, expected: Any = None,
        scope: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """One row of the checks table; ``scope`` gives ``grouping``, ``system``, ``fold``, ``criterion_id``."""
    scope = scope or {}
    return {
        "check": check,
        "grouping": text(scope.get("grouping")),
        "system": text(scope.get("system")),
        "fold": text(scope.get("fold")),
        "criterion_id": text(scope.get("criterion_id")),
        "severity": severity,
        "status": status,
        "observed": text(observed),
        "expected": text(expected),
        "message": message,
    }


def frame(rows: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SCHEMA)


def same(a: float | None, b: float | None) -> bool:
    """Equal values (both null, or equal within :data:`TOLERANCE`)."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def scope_of(summary_row: Mapping[str, Any]) -> dict[str, Any]:
    return {key: summary_row.get(key) for key in ("grouping", "system", "fold", "criterion_id")}
