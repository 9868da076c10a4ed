"""The ablation table (contract §8.1): one row per configuration, mean ± std across folds.

Each configuration is a ``system`` of the evaluation (the ``config`` column of a per_query.csv).
Rows come in the declared ``order`` (a retriever-only baseline first, the full pipeline last);
each metric gives four columns, all read from the summary's ``across_folds`` rows (so the table
and the summary can never disagree; the checks stage verifies it):

- ``<metric>``: the mean of the per-fold values;
- ``<metric>_std``: their sample std (ddof = 1);
- ``<metric>_vs_previous``: the mean minus the previous row's mean (null on the first row);
- ``<metric>_vs_first``: the mean minus the first row's mean (0 on the first row).

A metric computed on several subsets is read on the first one the pipeline lists.

>>> import polars as pl
>>> summary = pl.DataFrame({"grouping": ["across_folds"] * 4, "system": ["a", "a", "b", "b"],
...     "metric": ["auroc", "mrr", "auroc", "mrr"], "subset": ["all queries"] * 4,
...     "value": [0.80, 0.5, 0.85, 0.6], "std": [0.01, 0.02, 0.01, 0.03]})
>>> ablation_table(summary, order=["a", "b"], metrics=["auroc"]).rows()
[(1, 'a', 0.8, 0.01, None, 0.0), (2, 'b', 0.85, 0.01, 0.04999999999999993, 0.04999999999999993)]
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.registry import resolve

#: The summary's grouping of mean ± std across folds (:func:`evalframe.engine.aggregate.across_folds`).
ACROSS_FOLDS = "across_folds"
DEFAULT_METRICS = ("ndcg@10", "auroc", "recall@10", "alert_precision")


def ablation_table(summary: pl.DataFrame, *, order: Sequence[str] | None, metrics: Sequence[str]) -> pl.DataFrame:
    """The ablation table (module docstring) from a summary with ``across_folds`` rows.

    ``metrics`` are canonical metric names as the summary prints them. A system of ``order``
    that the summary lacks, or a metric without ``across_folds`` rows, is a :class:`ConfigError`.
    """
    rows = summary.filter(pl.col("grouping") == ACROSS_FOLDS)
    if rows.height == 0:
        raise ConfigError("the ablation table needs mean ± std across folds: set `across_folds:` (e.g. `fold`)")
    systems = rows.get_column("system").unique(maintain_order=True).to_list()
    order = list(order) if order else systems
    unknown = [name for name in order if name not in systems]
    if unknown:
        raise ConfigError(f"ablation.order names systems the input does not have: {unknown} (systems: {systems})")
    if len(set(order)) != len(order):
        raise ConfigError(f"ablation.order lists a system twice: {order}")
    table = pl.DataFrame({"position": list(range(1, len(order) + 1)), "system": order},
                         schema={"position": pl.Int64, "system": pl.String})
    for metric in metrics:
        found = rows.filter(pl.col("metric") == metric)
        if found.height == 0:
            known = rows.get_column("metric").unique(maintain_order=True).to_list()
            raise ConfigError(f"ablation.metrics: `{metric}` is not computed by this pipeline (computed: {known})")
        first_subset = found.get_column("subset")[0]
        cells = found.filter(pl.col("subset").eq_missing(first_subset)).select(
            "system", pl.col("value").alias(metric), pl.col("std").alias(f"{metric}_std"))
        table = table.join(cells, on="system", how="left", maintain_order="left")
        mean = pl.col(metric)
        table = table.with_columns(
            (mean - mean.shift(1)).alias(f"{metric}_vs_previous"),
            (mean - mean.first()).alias(f"{metric}_vs_first"),
        )
    return table


def ablation(evaluation, *, order: Sequence[str] | None = None, metrics: Sequence[str] = DEFAULT_METRICS):
    """``evaluation`` with ``tables["ablation"]`` added (:func:`ablation_table`).

    ``metrics`` are names as a pipeline lists them (``alert_precision``); they are read with the
    evaluation's shared parameters, so that they name the summary's metrics exactly.
    """
    names = [resolve(name, defaults=evaluation.plan.parameters).name for name in metrics]
    return evaluation.with_tables(ablation=ablation_table(evaluation.summary, order=order, metrics=names))
