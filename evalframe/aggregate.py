"""Slice aggregation (DESIGN §3): per-query values → one tidy summary table.

One group-by per grouping set. A grouping set is a name and the slice keys it groups by
(``overall`` → none, ``fold`` → ``[fold]``, ``fold_x_criterion`` → ``[fold, criterion_id]``);
``system`` is always a key, so numbers never mix systems. :func:`summarize` reads a long table
(keys, ``metric``, ``value``); :func:`summarize_wide` reads one column per metric and takes
the slices' query counts from the caller. For every (grouping set, key values, metric) the
summary gives:

- ``n``: queries with a value; ``n_skipped``: queries of the slice outside the metric's subset
  or with an undefined value (null);
- ``value``: the mean of the per-query values (the sum for count metrics such as ``num_ret``);
- ``std`` (sample standard deviation, ddof = 1), ``median``, ``p25``, ``p75`` (linear
  interpolation between order statistics, as numpy's and pandas' default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalframe.metrics.base import Metric

SUMMARY_STATS = ["n", "n_skipped", "value", "std", "median", "p25", "p75"]


def statistics(value: pl.Expr, *, summed: pl.Expr | bool = False) -> dict[str, pl.Expr]:
    """The aggregations of one slice's values: ``n``, ``value`` (mean, or sum where ``summed``),
    ``std`` (ddof = 1), ``median``, ``p25``, ``p75`` (linear interpolation). Nulls are ignored."""
    if isinstance(summed, bool):
        total = value.sum() if summed else value.mean()
    else:  # decided per group, e.g. by the metric's name
        total = pl.when(summed).then(value.sum()).otherwise(value.mean())
    return {
        "n": value.is_not_null().sum().cast(pl.Int64),
        "value": total,
        "std": value.std(ddof=1),
        "median": value.median(),
        "p25": value.quantile(0.25, interpolation="linear"),
        "p75": value.quantile(0.75, interpolation="linear"),
    }


def summarize(
    per_query: pl.DataFrame,
    metrics: Sequence[Metric],
    *,
    grouping_sets: Mapping[str, Sequence[str]] | None = None,
    always_by: Sequence[str] = ("system",),
    subsets: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Summarise a long per-query table (keys, ``metric``, ``value``) per grouping set.

    ``subsets`` describes, per metric name, the queries its values come from (default: the
    metric's own ``subset``).
    """
    grouping_sets = dict(grouping_sets or {"overall": []})
    slice_keys = list(dict.fromkeys(key for keys in grouping_sets.values() for key in keys))
    summed = [metric.name for metric in metrics if metric.summary == "sum"]
    described = {metric.name: metric.subset for metric in metrics} | dict(subsets or {})
    subsets_table = pl.DataFrame(
        {"metric": list(described), "subset": list(described.values())},
        schema={"metric": pl.String, "subset": pl.String},
    )
    value = pl.col("value")
    tables = []
    for grouping, keys in grouping_sets.items():
        by = [*always_by, *keys, "metric"]
        table = per_query.group_by(by).agg(
            n_skipped=value.is_null().sum().cast(pl.Int64),
            **statistics(value, summed=pl.col("metric").first().is_in(summed)),
        )
        table = table.with_columns(
            pl.lit(grouping).alias("grouping"),
            *(pl.lit(None, dtype=per_query.schema[key]).alias(key) for key in slice_keys if key not in keys),
        )
        tables.append(table)
    order = {metric.name: position for position, metric in enumerate(metrics)}
    summary = pl.concat(tables, how="diagonal_relaxed").join(subsets_table, on="metric", how="left")
    summary = summary.with_columns(
        pl.col("metric").replace_strict(order, default=len(order)).alias("_metric_order"),
        pl.col("grouping").replace_strict(
            {name: position for position, name in enumerate(grouping_sets)}, default=None
        ).alias("_grouping_order"),
    )
    summary = summary.sort(["_grouping_order", *always_by, *slice_keys, "_metric_order"], nulls_last=True)
    return summary.select("grouping", *always_by, *slice_keys, "metric", "subset", *SUMMARY_STATS)


def summarize_wide(
    wide: pl.DataFrame,
    metrics: Sequence[Metric],
    *,
    slice_sizes: Mapping[str, pl.DataFrame],
    grouping_sets: Mapping[str, Sequence[str]],
    always_by: Sequence[str] = ("system",),
    subsets: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Summarise per-query values held one column per metric (rows: the queries of a subset).

    ``slice_sizes[grouping]`` lists every slice of the grouping set (its key columns, with
    ``always_by`` first) and ``n_queries``, the queries it holds, inside the subset or not: each
    slice gets a row per metric, and ``n_skipped = n_queries − n``. A slice without any row in
    ``wide`` has ``n = 0`` and no value (a sum of nothing, 0, for count metrics). Rows are not
    ordered.
    """
    names = [metric.name for metric in metrics]
    described = {metric.name: metric.subset for metric in metrics} | dict(subsets or {})
    metric_table = pl.DataFrame(
        {"metric": names, "subset": [described[name] for name in names]},
        schema={"metric": pl.String, "subset": pl.String},
    )
    summed = [metric.name for metric in metrics if metric.summary == "sum"]
    slice_keys = list(dict.fromkeys(key for keys in grouping_sets.values() for key in keys))
    tables = []
    for grouping, keys in grouping_sets.items():
        by = [*always_by, *keys]
        stats = wide.group_by(by).agg(
            pl.struct(**statistics(pl.col(name), summed=name in summed)).alias(name) for name in names
        )
        stats = stats.unpivot(on=names, index=by, variable_name="metric", value_name="_stats").unnest("_stats")
        table = (
            slice_sizes[grouping]
            .join(metric_table, how="cross")
            .join(stats, on=[*by, "metric"], how="left", nulls_equal=True)
            .with_columns(
                n=pl.col("n").fill_null(0),
                value=pl.when(pl.col("metric").is_in(summed)).then(pl.col("value").fill_null(0.0)).otherwise(pl.col("value")),
            )
            .with_columns(n_skipped=pl.col("n_queries") - pl.col("n"), grouping=pl.lit(grouping))
        )
        tables.append(table.with_columns(
            pl.lit(None, dtype=wide.schema[key]).alias(key) for key in slice_keys if key not in keys
        ))
    columns = ["grouping", *always_by, *slice_keys, "metric", "subset", *SUMMARY_STATS]
    return pl.concat([table.select(columns) for table in tables])
