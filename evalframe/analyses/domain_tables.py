"""Plot data of the domain metrics as result tables: item counts (Lorenz curve) and cost curves.

Like the ablation table, each function returns the evaluation with a named table added
(``ev.tables[...]``), written as ``<name>.csv`` with the other outputs, so that
``evalframe report`` redraws its plot from the folder (:mod:`evalframe.report.domain`):

- :func:`with_item_counts`: ``item_counts`` — per system, how often each item is in a user's
  top ``k`` (the counts behind ``gini@k``), from the queries' recommended lists;
- :func:`with_cost_curve`: ``cost_curve`` — per system, the total cost of flagging
  ``prob >= threshold`` at every distinct score and of flagging nothing
  (:func:`evalframe.metrics.detection.cost_curve`: one sort, cumulative sums).
"""

from __future__ import annotations

import polars as pl

from evalframe.data.units import SYSTEM
from evalframe.metrics.detection import cost_curve
from evalframe.metrics.recommendation import RECOMMENDED


def with_item_counts(evaluation, k: int):
    """``evaluation`` with ``tables["item_counts"]``: ``system``, ``item_id``, ``count`` (top ``k``)."""
    queries = evaluation.queries
    if RECOMMENDED not in queries.columns:
        return evaluation
    counts = (
        queries.select(SYSTEM, pl.col(RECOMMENDED).list.head(k).alias("item_id"))
        .explode("item_id").drop_nulls("item_id")
        .group_by(SYSTEM, "item_id").agg(count=pl.len().cast(pl.Int64))
        .sort(SYSTEM, "count", "item_id", descending=[False, True, False])
        .with_columns(k=pl.lit(k, dtype=pl.Int64))
    )
    return evaluation.with_tables(item_counts=counts)


def with_cost_curve(evaluation, fp_cost: float, fn_cost: float):
    """``evaluation`` with ``tables["cost_curve"]``: ``system``, ``threshold``, ``tp``, ``fp``, ``cost``."""
    queries = evaluation.queries
    if not {"label", "prob"} <= set(queries.columns):
        return evaluation
    parts = []
    for (system,), rows in queries.filter(pl.col("label").is_not_null() & pl.col("prob").is_not_null()).partition_by(
            SYSTEM, as_dict=True, maintain_order=True).items():
        curve = cost_curve(rows.get_column("label").to_numpy(), rows.get_column("prob").to_numpy(), fp_cost, fn_cost)
        parts.append(curve.with_columns(pl.lit(system).alias(SYSTEM)).select(SYSTEM, *curve.columns))
    if not parts:
        return evaluation
    return evaluation.with_tables(cost_curve=pl.concat(parts))


def with_plot_tables(evaluation):
    """``evaluation`` with the plot tables its metrics call for: ``item_counts`` at the largest
    ``k`` of its ``gini@k`` metrics, ``cost_curve`` at the costs of its first cost metric."""
    from evalframe.metrics.detection import declared_costs
    from evalframe.metrics.recommendation import Gini

    metrics = evaluation.plan.metrics
    cutoffs = [m.k for m in metrics if isinstance(m, Gini)]
    if cutoffs:
        evaluation = with_item_counts(evaluation, max(cutoffs))
    costs = [found for m in metrics if (found := declared_costs(m)) is not None]
    if costs:
        evaluation = with_cost_curve(evaluation, *costs[0])
    return evaluation
