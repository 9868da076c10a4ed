"""Denominators (Appendix A.1): ranking metrics are averaged over the queries with evidence only.

For every summary row of a ranking (item-level) metric, ``n`` must equal the slice's number of
queries with ``label = 1`` (recall@K on all queries, or MRR averaged with has_evidence = 0
queries counted as 0, fails). One row per scope; not applicable without a ``label`` column.
"""

from __future__ import annotations

import polars as pl

from evalframe.checks.table import FAIL, MUST, NOT_APPLICABLE, PASS, row
from evalframe.data.units import SYSTEM
from evalframe.metrics.base import ItemMetric

NAME = "ranking_denominator"


def denominator_checks(evaluation) -> list[dict]:
    ranking = [m.name for m in evaluation.plan.metrics if isinstance(m, ItemMetric)]
    queries = evaluation.queries
    if not ranking or "label" not in queries.columns:
        return [row(NAME, severity=MUST, status=NOT_APPLICABLE, message="no ranking metric, or no label column")]
    rows = []
    for grouping, keys in evaluation.plan.slices.items():
        keys = [SYSTEM, *keys]
        with_evidence = queries.group_by(keys).agg((pl.col("label") == 1).sum().cast(pl.Int64).alias("_expected"))
        here = (
            evaluation.summary.filter((pl.col("grouping") == grouping) & pl.col("metric").is_in(ranking))
            .join(with_evidence, on=keys, how="left", nulls_equal=True, maintain_order="left")
            .with_columns(pl.col("_expected").fill_null(0))
        )
        for scope in here.select(keys).unique(maintain_order=True).iter_rows(named=True):
            mine = here.filter(pl.all_horizontal([pl.col(k).eq_missing(v) for k, v in scope.items()]))
            bad = mine.filter(pl.col("n") != pl.col("_expected"))
            expected = mine["_expected"][0]
            observed = "; ".join(f"{r['metric']}: n = {r['n']}" for r in bad.head(5).iter_rows(named=True))
            rows.append(row(NAME, severity=MUST, status=FAIL if bad.height else PASS, scope={"grouping": grouping, **scope},
                            observed=observed or f"n = {expected} for {mine.height} metrics", expected=expected,
                            message=f"{bad.height} of {mine.height} ranking metrics averaged over other than the queries with evidence"))
    return rows
