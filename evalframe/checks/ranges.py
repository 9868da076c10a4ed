"""Range checks (contract §9.1): every probability and rate in [0, 1], MCC in [−1, 1], counts >= 0.

Each metric declares its range (:attr:`~evalframe.metrics.base.Metric.value_range`); every
summary row's ``value``, ``median``, ``p25`` and ``p75`` must lie in it. One row per scope
(grouping set, system, slice); metrics without a declared range are not checked.
"""

from __future__ import annotations

import polars as pl

from evalframe.checks.table import FAIL, MUST, NOT_APPLICABLE, PASS, row, scope_of, text

NAME = "value_in_range"
STATS = ("value", "median", "p25", "p75")


def range_checks(evaluation) -> list[dict]:
    ranges = {m.name: m.value_range for m in evaluation.plan.metrics if m.value_range is not None}
    if not ranges:
        return [row(NAME, severity=MUST, status=NOT_APPLICABLE, message="no metric declares a range")]
    summary = evaluation.summary.filter(pl.col("metric").is_in(list(ranges)))
    low = pl.col("metric").replace_strict({k: v[0] for k, v in ranges.items()}, return_dtype=pl.Float64)
    high = pl.col("metric").replace_strict({k: v[1] for k, v in ranges.items()}, return_dtype=pl.Float64)
    outside = pl.any_horizontal([(pl.col(s) < low) | (pl.col(s) > high) for s in STATS]).fill_null(False)
    scope_keys = ["grouping", "system", *evaluation.plan.slice_keys]
    flagged = summary.with_columns(outside.alias("_outside"), low.alias("_low"), high.alias("_high"))
    rows = []
    for scope in flagged.select(scope_keys).unique(maintain_order=True).iter_rows(named=True):
        here = flagged.filter(pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in scope.items()]))
        bad = here.filter(pl.col("_outside"))
        others = {k: v for k, v in scope.items() if k not in ("grouping", "system", "fold", "criterion_id") and v is not None}
        where = "".join(f", {k} = {v}" for k, v in others.items())
        if bad.height == 0:
            rows.append(row(NAME, severity=MUST, status=PASS, scope=scope_of(scope), observed=f"{here.height} metrics",
                            expected="each within its declared range", message=f"{here.height} metric values checked{where}"))
            continue
        listing = "; ".join(f"{r['metric']} = {text(r['value'])} not in [{text(r['_low'])}, {text(r['_high'])}]"
                            for r in bad.iter_rows(named=True))
        rows.append(row(NAME, severity=MUST, status=FAIL, scope=scope_of(scope), observed=listing,
                        expected="each within its declared range", message=f"{bad.height} metrics out of range{where}"))
    return rows
