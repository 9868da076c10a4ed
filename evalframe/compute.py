"""The metric stage of a pipeline: per-query values and slice summaries for every metric level.

Given the three long tables, metric groups (each bound to a subset of queries) and grouping
sets, :func:`compute_metrics` returns

- ``per_query``: long table ``system, query_id, <query keys>, metric, value, skip_reason``
  for item- and query-level metrics (metric group after metric group, each ordered by query);
  a query outside the metric's subset has a null value
  and the reason ``outside subset: <description>``;
- ``summary``: one tidy row per (grouping set, key values, metric) with ``n``, ``n_skipped``,
  ``value``, ``std``, ``median``, ``p25``, ``p75`` and ``note``. Set-level metrics (AUROC, ECE)
  have no per-query values, so their ``std`` and quantiles are null.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evalframe.aggregate import SUMMARY_STATS, summarize
from evalframe.errors import ConfigError
from evalframe.evaluate import per_query_values, to_long
from evalframe.metrics.base import ItemMetric, Metric, QueryMetric, SetMetric
from evalframe.ranking import QUERY_KEYS


@dataclass(frozen=True)
class Subset:
    """A named set of queries: ``where`` is a Polars SQL condition on the queries table."""

    name: str
    description: str
    where: str | None = None

    def condition(self) -> pl.Expr:
        if self.where is None:
            return pl.lit(True)
        try:
            return pl.sql_expr(self.where)
        except Exception as error:
            msg = f"subset `{self.name}`: cannot parse `where: {self.where}` as Polars SQL ({error})"
            raise ConfigError(msg) from None


@dataclass(frozen=True)
class MetricGroup:
    """Metrics computed on one subset of queries."""

    subset: Subset
    metrics: tuple[Metric, ...]


@dataclass(frozen=True)
class Tables:
    """The long tables a pipeline evaluates (DESIGN §2)."""

    queries: pl.DataFrame
    ranking: pl.DataFrame
    judgments: pl.DataFrame


def compute_metrics(
    tables: Tables,
    groups: Sequence[MetricGroup],
    grouping_sets: Mapping[str, Sequence[str]],
    *,
    query_keys: Sequence[str] = (),
    relevance_threshold: int = 1,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query values and the summary of every metric group (see the module docstring)."""
    queries = tables.queries
    _check_columns(queries, groups, grouping_sets)
    slice_keys = list(dict.fromkeys(k for keys in grouping_sets.values() for k in keys))
    keys = list(dict.fromkeys([*QUERY_KEYS, *query_keys, *slice_keys]))

    long_parts, per_query_metrics, set_rows, subset_text = [], [], [], {}
    for group in groups:
        in_subset = group.subset.condition()
        flagged = queries.with_columns(_in_subset=in_subset.fill_null(False))
        outside = f"outside subset: {group.subset.description}"
        for metric in group.metrics:
            subset_text[metric.name] = group.subset.description if group.subset.where else metric.subset
        item = [m for m in group.metrics if isinstance(m, ItemMetric)]
        if item:
            # Rank and score only the subset's queries; the others are masked as outside below.
            inside = flagged.filter(pl.col("_in_subset")).select(QUERY_KEYS)
            values = per_query_values(
                tables.ranking, tables.judgments, inside, item, relevance_threshold=relevance_threshold
            )
            wide = flagged.select(*keys, "_in_subset").join(values, on=QUERY_KEYS, how="left", maintain_order="left")
            long_parts.append(_mask_outside(to_long(wide, item, keys=[*keys, "_in_subset"]), outside))
        for metric in (m for m in group.metrics if isinstance(m, QueryMetric)):
            value = metric.expr().cast(pl.Float64)
            values = flagged.select(
                *keys, "_in_subset", pl.lit(metric.name).alias("metric"), value.alias("value"),
                pl.when(value.is_null()).then(metric.skip_reason()).cast(pl.String).alias("skip_reason"),
            )
            long_parts.append(_mask_outside(values, outside))
        per_query_metrics += [m for m in group.metrics if not isinstance(m, SetMetric)]
        for metric in (m for m in group.metrics if isinstance(m, SetMetric)):
            for grouping, group_keys in grouping_sets.items():
                set_rows.append(_set_metric_rows(metric, flagged, grouping, ["system", *group_keys]))

    per_query = pl.concat(long_parts, how="diagonal_relaxed").select(*keys, "metric", "value", "skip_reason") if long_parts else _empty_long(queries, keys)
    all_metrics = [m for group in groups for m in group.metrics]
    summary = summarize(per_query, per_query_metrics, grouping_sets=grouping_sets, subsets=subset_text)
    summary = summary.with_columns(note=pl.when(pl.col("n") == 0).then(pl.lit("no query in the subset")))
    if set_rows:
        set_summary = pl.concat(set_rows, how="diagonal_relaxed").with_columns(
            subset=pl.col("metric").replace_strict(subset_text, default=None)
        )
        summary = pl.concat([summary, set_summary], how="diagonal_relaxed")
    return per_query, _order_summary(summary, all_metrics, grouping_sets, slice_keys)


def _check_columns(queries: pl.DataFrame, groups: Sequence[MetricGroup], grouping_sets: Mapping[str, Sequence[str]]) -> None:
    missing = sorted({k for keys in grouping_sets.values() for k in keys} - set(queries.columns))
    if missing:
        msg = f"slice keys {missing} are not columns of the queries table (columns: {queries.columns})"
        raise ConfigError(msg)
    names = [m.name for group in groups for m in group.metrics]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"metrics {repeated} are listed in more than one group; each metric needs one subset")
    for group in groups:
        for metric in group.metrics:
            needed = set(metric.required_columns.get("queries", ()))
            if needed - set(queries.columns):
                msg = f"metric `{metric.name}` needs queries columns {sorted(needed - set(queries.columns))}"
                raise ConfigError(msg)


def _mask_outside(values: pl.DataFrame, reason: str) -> pl.DataFrame:
    inside = pl.col("_in_subset")
    return values.with_columns(
        value=pl.when(inside).then(pl.col("value")),
        skip_reason=pl.when(inside).then(pl.col("skip_reason")).otherwise(pl.lit(reason)),
    ).drop("_in_subset")


def _set_metric_rows(metric: SetMetric, flagged: pl.DataFrame, grouping: str, by: list[str]) -> pl.DataFrame:
    """Summary rows of a set-level metric for one grouping set (n_skipped: queries outside the subset)."""
    values = metric.compute(flagged.lazy().filter(pl.col("_in_subset")), by).collect()
    counts = flagged.group_by(by).agg(n_skipped=(~pl.col("_in_subset")).sum().cast(pl.Int64))
    rows = counts.join(values, on=by, how="left", nulls_equal=True)
    return rows.with_columns(
        grouping=pl.lit(grouping),
        metric=pl.lit(metric.name),
        n=pl.col("n").fill_null(0).cast(pl.Int64),
        value=pl.col("value").cast(pl.Float64),
        note=pl.col("note").fill_null(pl.when(pl.col("value").is_null()).then(pl.lit("no query in the subset"))),
    )


def _empty_long(queries: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return queries.select(*keys).clear().with_columns(
        metric=pl.lit(None, dtype=pl.String), value=pl.lit(None, dtype=pl.Float64), skip_reason=pl.lit(None, dtype=pl.String)
    )


def _order_summary(
    summary: pl.DataFrame, metrics: Sequence[Metric], grouping_sets: Mapping[str, Sequence[str]], slice_keys: list[str]
) -> pl.DataFrame:
    metric_order = {m.name: i for i, m in enumerate(metrics)}
    grouping_order = {name: i for i, name in enumerate(grouping_sets)}
    return (
        summary.with_columns(
            _g=pl.col("grouping").replace_strict(grouping_order, default=len(grouping_order)),
            _m=pl.col("metric").replace_strict(metric_order, default=len(metric_order)),
        )
        .sort(["_g", "system", *slice_keys, "_m"], nulls_last=True)
        .select("grouping", "system", *slice_keys, "metric", "subset", *SUMMARY_STATS, "note")
    )


def across_folds(summary: pl.DataFrame, fold_grouping: str, slice_keys: Sequence[str]) -> pl.DataFrame:
    """Rows ``grouping = across_folds``: per system and metric, mean and std (ddof=1) of fold values.

    ``n`` is the number of folds with a value, ``n_skipped`` the folds without one;
    ``median``, ``p25`` and ``p75`` are over the fold values too.
    """
    folds = summary.filter(pl.col("grouping") == fold_grouping)
    value = pl.col("value")
    rows = folds.group_by("system", "metric", "subset", maintain_order=True).agg(
        n=value.is_not_null().sum().cast(pl.Int64),
        n_skipped=value.is_null().sum().cast(pl.Int64),
        std=value.std(ddof=1),
        median=value.median(),
        p25=value.quantile(0.25, interpolation="linear"),
        p75=value.quantile(0.75, interpolation="linear"),
        value=value.mean(),
    )
    rows = rows.with_columns(
        grouping=pl.lit("across_folds"),
        note=pl.format("mean ± std of {} fold values", pl.col("n")),
        *(pl.lit(None, dtype=summary.schema[k]).alias(k) for k in slice_keys),
    )
    return rows.select(summary.columns)
