"""The metric stage of a pipeline: per-query values and slice summaries for every metric level.

Given the three long tables, metric groups (each bound to a subset of queries) and grouping
sets, :func:`compute_metrics` returns a :class:`MetricTables`:

- ``per_query``: long table ``system, query_id, <query keys>, metric, value, skip_reason``
  for item- and query-level metrics, with rows for the queries inside each metric's subset
  only (metric group after metric group, metric after metric, each in the order of the
  queries table: by system and query_id).
  An in-subset query whose value is undefined keeps its row: null value and the reason;
- ``summary``: one tidy row per (grouping set, key values, metric) with ``n``, ``n_skipped``,
  ``value``, ``std``, ``median``, ``p25``, ``p75`` and ``note``. ``n_skipped`` counts the
  slice's queries outside the metric's subset (from the queries table) and those inside
  with a null value. Set-level metrics (AUROC, ECE) have no per-query values, so their
  ``std`` and quantiles are null;
- ``skipped``: per system and per-query metric, how many queries were skipped and why
  (``outside subset: <description>`` included), for ``run.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

import polars as pl

from evalframe.aggregate import SUMMARY_STATS, summarize_wide
from evalframe.errors import ConfigError
from evalframe.evaluate import long_by_metric, per_query_values
from evalframe.metrics.base import ItemMetric, Metric, QueryMetric, SetMetric
from evalframe.metrics.classification import SliceMetric, compute_slice_metrics
from evalframe.ranking import QUERY_KEYS

NO_QUERY_IN_SUBSET = "no query in the subset"


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

    @property
    def outside_reason(self) -> str:
        """The skip reason of a query outside the subset."""
        return f"outside subset: {self.description}"


@dataclass(frozen=True)
class MetricGroup:
    """Metrics computed on one subset of queries."""

    subset: Subset
    metrics: tuple[Metric, ...]


@dataclass(frozen=True)
class Tables:
    """The long tables a pipeline evaluates (DESIGN §2).

    The ranking is held as one list of item ids per query (``ranked_lists``: ``system,
    query_id, doc_id`` with ``doc_id`` a list, best first); its long rows (``system, query_id,
    doc_id, rank``) are built on first use of :attr:`ranking`, or only for the queries a
    metric needs with :meth:`ranking_of`.
    """

    queries: pl.DataFrame
    judgments: pl.DataFrame
    ranked_lists: pl.DataFrame

    @cached_property
    def ranking(self) -> pl.DataFrame:
        """The long ranking table: one row per ranked item, ``rank`` 1-based."""
        return _explode_ranking(self.ranked_lists)

    def ranking_of(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """Ranking rows of the (system, query_id) ``pairs`` only (same rows as in :attr:`ranking`)."""
        return _explode_ranking(self.ranked_lists.join(pairs.select(QUERY_KEYS), on=QUERY_KEYS, how="semi"))

    @property
    def n_ranking_rows(self) -> int:
        """Number of rows of :attr:`ranking`, without building it."""
        return int(self.ranked_lists.select(pl.col("doc_id").list.len().sum()).item())


def _explode_ranking(ranked_lists: pl.DataFrame) -> pl.DataFrame:
    return (
        ranked_lists.with_columns(rank=pl.int_ranges(1, pl.col("doc_id").list.len() + 1, dtype=pl.Int64))
        .explode("doc_id", "rank")
        .drop_nulls("doc_id")
    )


@dataclass(frozen=True)
class MetricTables:
    """What :func:`compute_metrics` returns (see the module docstring)."""

    per_query: pl.DataFrame
    summary: pl.DataFrame
    skipped: pl.DataFrame


def compute_metrics(
    tables: Tables,
    groups: Sequence[MetricGroup],
    grouping_sets: Mapping[str, Sequence[str]],
    *,
    query_keys: Sequence[str] = (),
    relevance_threshold: int = 1,
) -> MetricTables:
    """Per-query values, the summary and the skip counts of every metric group (module docstring)."""
    queries = tables.queries
    _check_columns(queries, groups, grouping_sets)
    slice_keys = list(dict.fromkeys(k for keys in grouping_sets.values() for k in keys))
    keys = list(dict.fromkeys([*QUERY_KEYS, *query_keys, *slice_keys]))
    by_grouping = {grouping: ["system", *group_keys] for grouping, group_keys in grouping_sets.items()}
    in_subset = queries.select(
        group.subset.condition().fill_null(False).alias(f"_in_{position}") for position, group in enumerate(groups)
    )
    # Per grouping set: each slice's queries, and how many of them are in each group's subset.
    counts = {
        grouping: queries.with_columns(in_subset).group_by(by).agg(
            n_queries=pl.len().cast(pl.Int64),
            **{flag: pl.col(flag).sum().cast(pl.Int64) for flag in in_subset.columns},
        )
        for grouping, by in by_grouping.items()
    }
    sizes = {grouping: table.select(*by_grouping[grouping], "n_queries") for grouping, table in counts.items()}
    subset_text = {
        metric.name: group.subset.description if group.subset.where else metric.subset
        for group in groups
        for metric in group.metrics
    }

    # Set-level metrics first, computed on Polars' threads while the per-query metrics run.
    set_plans = []
    for position, group in enumerate(groups):
        set_metrics = [m for m in group.metrics if isinstance(m, SetMetric)]
        if set_metrics:
            inside = queries.lazy().filter(in_subset.get_column(f"_in_{position}"))
            for grouping, by in by_grouping.items():
                outside = counts[grouping].select(*by, n_skipped=pl.col("n_queries") - pl.col(f"_in_{position}"))
                set_plans.append((grouping, outside, _set_metric_plan(set_metrics, inside, by)))
    with ThreadPoolExecutor(max_workers=1) as background:
        # In memory: the streaming engine adds floats in an order that varies from run to run.
        plans = [plan for _, _, plan in set_plans]
        set_values = background.submit(pl.collect_all, plans, engine="in-memory") if set_plans else None

        long_parts, summaries, skipped = [], [], []
        for position, group in enumerate(groups):
            per_query_metrics = [m for m in group.metrics if not isinstance(m, SetMetric)]
            if not per_query_metrics:
                continue
            flags = in_subset.get_column(f"_in_{position}")
            wide = _per_query_values(tables, queries.filter(flags), group, keys, relevance_threshold)
            long_parts.append(long_by_metric(wide, per_query_metrics, keys))
            summaries.append(summarize_wide(wide, per_query_metrics, slice_sizes=sizes, grouping_sets=grouping_sets, subsets=subset_text))
            skipped.append(_outside_counts(queries, flags, group.subset, per_query_metrics))
        values = set_values.result() if set_values is not None else []

    per_query = pl.concat(long_parts) if long_parts else _empty_long(queries, keys)
    summary = None
    if summaries:
        summary = pl.concat(summaries, how="diagonal_relaxed").with_columns(
            note=pl.when(pl.col("n") == 0).then(pl.lit(NO_QUERY_IN_SUBSET))
        )
    if set_plans:
        set_summary = pl.concat(
            [_set_metric_rows(grouping, outside, found) for (grouping, outside, _), found in zip(set_plans, values, strict=True)],
            how="diagonal_relaxed",
        ).with_columns(subset=pl.col("metric").replace_strict(subset_text, default=None))
        summary = set_summary if summary is None else pl.concat([summary, set_summary], how="diagonal_relaxed")
    all_metrics = [m for group in groups for m in group.metrics]
    summary = _order_summary(summary, all_metrics, grouping_sets, slice_keys)
    return MetricTables(per_query=per_query, summary=summary, skipped=_skip_counts(per_query, skipped))


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


def _per_query_values(
    tables: Tables, inside: pl.DataFrame, group: MetricGroup, keys: list[str], relevance_threshold: int
) -> pl.DataFrame:
    """One row per in-subset query (queries order): ``keys``, each metric and its ``<metric>__skip``."""
    columns = []
    for metric in (m for m in group.metrics if isinstance(m, QueryMetric)):
        value = metric.expr().cast(pl.Float64)
        reason = pl.when(value.is_null()).then(metric.skip_reason()).cast(pl.String)
        columns += [value.alias(metric.name), reason.alias(f"{metric.name}__skip")]
    wide = inside.select(*keys, *columns)
    item = [m for m in group.metrics if isinstance(m, ItemMetric)]
    if item:
        # Rank and score the subset's queries only, from their own ranking rows.
        pairs = inside.select(QUERY_KEYS)
        values = per_query_values(
            tables.ranking_of(pairs), tables.judgments, pairs, item, relevance_threshold=relevance_threshold
        )
        wide = wide.join(values, on=QUERY_KEYS, how="left", maintain_order="left")
    return wide


def _outside_counts(queries: pl.DataFrame, in_subset: pl.Series, subset: Subset, metrics: Sequence[Metric]) -> pl.DataFrame:
    """Per system and metric, the queries outside the subset (``skip_reason`` = outside subset: …)."""
    outside = (
        queries.select("system", _outside=~in_subset)
        .group_by("system")
        .agg(count=pl.col("_outside").sum().cast(pl.UInt32))
        .filter(pl.col("count") > 0)
    )
    names = pl.DataFrame({"metric": [m.name for m in metrics]}, schema={"metric": pl.String})
    return outside.join(names, how="cross").select(
        "system", "metric", pl.lit(subset.outside_reason).alias("skip_reason"), "count"
    )


def _skip_counts(per_query: pl.DataFrame, outside: list[pl.DataFrame]) -> pl.DataFrame:
    """Skipped queries per (system, metric, reason): null values of the long table, and outside subsets."""
    inside = (
        per_query.filter(pl.col("skip_reason").is_not_null())
        .group_by("system", "metric", "skip_reason")
        .agg(count=pl.len())
    )
    return pl.concat([inside, *outside]).sort("system", "metric", "skip_reason")


def _set_metric_plan(metrics: Sequence[SetMetric], inside: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """Rows ``by, metric, n, value, note`` of set-level metrics on the subset's queries."""
    slice_metrics = [m for m in metrics if isinstance(m, SliceMetric)]
    plans = [compute_slice_metrics(slice_metrics, inside, by)] if slice_metrics else []
    plans += [
        m.compute(inside, by).select(*by, pl.lit(m.name).alias("metric"), "n", "value", "note")
        for m in metrics
        if not isinstance(m, SliceMetric)
    ]
    return pl.concat(plans, how="diagonal_relaxed")


def _set_metric_rows(grouping: str, outside: pl.DataFrame, values: pl.DataFrame) -> pl.DataFrame:
    """Summary rows of set-level metrics for one grouping set: every slice of the queries table
    (``n_skipped``: its queries outside the subset), with the metric's value where it has one."""
    by = [c for c in outside.columns if c != "n_skipped"]
    metrics = values.select(pl.col("metric").unique(maintain_order=True))
    rows = outside.join(metrics, how="cross").join(values, on=[*by, "metric"], how="left", nulls_equal=True)
    return rows.with_columns(
        grouping=pl.lit(grouping),
        n=pl.col("n").fill_null(0).cast(pl.Int64),
        value=pl.col("value").cast(pl.Float64),
        note=pl.col("note").fill_null(pl.when(pl.col("value").is_null()).then(pl.lit(NO_QUERY_IN_SUBSET))),
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
