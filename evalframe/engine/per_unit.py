"""Per-unit values (DESIGN §3): one row per unit of a metric group, one column per metric.

A wide table per (metric group, unit) holds the unit's keys, the carried slice and trace keys,
its weight (:data:`~evalframe.metrics.base.WEIGHT`) and for every metric ``<name>`` two
companions: ``<name>__skip`` (why the value is null) and, for a metric with a note,
``<name>__flag`` (whether the unit is one the note counts). Three sources feed it:

- item metrics (query unit): the ranking stage's partials per query (:func:`item_partials`),
  combined by each metric's ``value()``;
- query metrics on the query unit: ``expr()`` row-wise over the queries table;
- query metrics on a coarser unit: ``expr()`` as an aggregation over the unit's query rows, in
  one group-by over the unit's keys.

Policies (DESIGN §4), the same for every metric:

- a unit outside the metric's own subset (``Metric.subset_where``, e.g. ``n_relevant > 0``)
  keeps its row with a null value and the metric's ``outside_reason`` ("no relevant item");
- a null value inside it keeps its row with the reason (``undefined (zero denominator)`` for
  ranking ratios, the metric's ``skip_reason()`` otherwise);
- ``empty="zero"`` computes every metric on every unit, its own subset or not, and scores a null
  value 0, recording no reason (trec_eval's convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from evalframe.data import layout
from evalframe.data.tables import Tables
from evalframe.data.units import QUERY_KEYS
from evalframe.engine.matching import SPANS_GIVEN, gold_span_chars, has_spans, judge_by_text, span_coverage, span_cutoffs
from evalframe.engine.plan import EmptyPolicy, ScorePrecision
from evalframe.engine.ranking import (
    JudgedRanking,
    QueryIndex,
    forget_score_lateness,
    judge_items,
    judged_ranks,
    query_context,
    rank_items,
    running_sum_in_run,
    single_precision_scores,
)
from evalframe.metrics.base import WEIGHT, ItemMetric, Metric, QueryMetric

SKIP = "__skip"
#: The item column that asks for the character-span stage (with the cutoffs' span columns).
SPAN_ITEM_COLUMNS = {"has_span"}
FLAG = "__flag"


def dense(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every column stored value by value (zero-copy for columns that already are).

    An eager join whose right side has one row gives a *broadcast* column (one value, repeated),
    and Polars divides by a broadcast column as ``x * (1 / y)``, which can differ from ``x / y``
    in the last bit. Which columns come out broadcast depends on the data's size (a bucket or a
    Spark partition with one query, say), so per-unit values would depend on how the units were
    split. Values computed from dense columns are the same for any split (issue 27: bit-identical
    per-unit values).
    """
    return pl.DataFrame(frame.get_columns())


def item_partials(
    tables: Tables,
    universe: pl.DataFrame,
    metrics: Sequence[ItemMetric],
    *,
    relevance_threshold: int = 1,
    max_depth: int | None = None,
    score_precision: ScorePrecision = "float64",
    index: QueryIndex | None = None,
) -> pl.DataFrame:
    """One row per (system, query) of ``universe``: ``n_retrieved``, ``n_relevant``, every partial
    and ideal partial of ``metrics`` (0 for a query without ranked or judged items).

    When no metric reads unjudged items (``ItemMetric.reads_unjudged_items``), the partials see
    only the judged items the ranking retrieved (:func:`~evalframe.engine.ranking.judged_ranks`,
    which ranks them without sorting the run); otherwise every ranked item. With
    ``score_precision="float32"`` scores are compared as trec_eval stores them
    (:func:`~evalframe.engine.ranking.single_precision_scores`).
    """
    partials: dict[str, pl.Expr] = {}
    ideal_partials: dict[str, pl.Expr] = {}
    for metric in metrics:
        partials.update(metric.partials())
        ideal_partials.update(metric.ideal_partials())
    pairs = universe.select(QUERY_KEYS)
    run = tables.ranking_of(pairs)
    single_precision = score_precision == "float32" and "score" in run.columns
    judgments = tables.judgments
    item_columns = {column for metric in metrics for column in metric.item_columns}
    if item_columns & SPAN_ITEM_COLUMNS:
        judgments = gold_span_chars(judgments, relevance_threshold=relevance_threshold)
    # The ideal rankings (from the judgments alone) are built on a thread of their own while the
    # run is ranked: Polars works without the GIL, so the second core fills the ranking's pauses.
    context_pool = ThreadPoolExecutor(max_workers=1)
    ideal = context_pool.submit(query_context, judgments, ideal_partials, relevance_threshold=relevance_threshold)
    context_pool.shutdown(wait=False)  # the worker ends after its one task
    per_query = None
    if judged_only(tables, metrics):
        # ``index`` numbers the rows of a long ranking; exploded ranked lists get their own.
        found = judged_ranks(run, judgments, pairs, index=index if tables.ranking_rows is not None else None,
                             source=tables.ranking_source, single_precision=single_precision)
        forget_score_lateness(run, single_precision=single_precision)  # begun by the derive stage, now read
        if found is not None:
            per_query = _aggregate_judged(found, partials, max_depth=max_depth, relevance_threshold=relevance_threshold)
    if per_query is None:
        if single_precision:
            run = single_precision_scores(run, source=tables.ranking_source)
        ranked = rank_items(run.join(pairs, on=QUERY_KEYS, how="semi"), max_depth=max_depth)
        if tables.relevance_rule == "text":
            judged = judge_by_text(ranked, judgments, relevance_threshold=relevance_threshold)
        else:
            judged = judge_items(ranked, judgments, relevance_threshold=relevance_threshold)
            if "first_matches" in item_columns:  # an item matches only its own judgment
                judged = judged.with_columns(first_matches=pl.col("is_relevant").cast(pl.Int64))
        if item_columns & SPAN_ITEM_COLUMNS:
            judged = span_coverage(judged, judgments, span_cutoffs(item_columns), relevance_threshold=relevance_threshold)
        judged = judged.with_columns(relevant_at_rank=pl.col("is_relevant").cum_sum().over(QUERY_KEYS))
        per_query = judged.group_by(QUERY_KEYS).agg(n_retrieved=pl.len().cast(pl.Int64), **partials)

    context = ideal.result()
    table = layout.joined_beside(pairs.join(context, on="query_id", how="left"), per_query, QUERY_KEYS)
    if item_columns & SPAN_ITEM_COLUMNS:  # context: whether the ranking gives spans at all
        table = table.with_columns(pl.lit(has_spans(run)).alias(SPANS_GIVEN))
    return dense(table.with_columns(
        pl.col(name).fill_null(pl.lit([], dtype=dtype) if isinstance(dtype, pl.List) else 0)
        for name, dtype in table.schema.items()
        if name in partials or name in ideal_partials or name in ("n_relevant", "n_retrieved")
    ))


def judged_only(tables: Tables, metrics: Sequence[ItemMetric]) -> bool:
    """Whether :func:`item_partials` ranks only the judged items the run retrieved
    (:func:`~evalframe.engine.ranking.judged_ranks`): no metric reads an item column of its own
    or an unjudged item, and items meet their judgments by ``doc_id``."""
    return not (any(metric.item_columns or metric.reads_unjudged_items for metric in metrics)
                or tables.relevance_rule == "text")


def _aggregate_judged(
    found: JudgedRanking,
    partials: dict[str, pl.Expr],
    *,
    max_depth: int | None,
    relevance_threshold: int,
) -> pl.DataFrame:
    """The metric group-by of :func:`item_partials` over the judged items only.

    The rows are each query's retrieved judged items in rank order, with their true ranks:
    every partial sees what it would see on all the items, less the unjudged ones it ignores.
    ``n_retrieved`` is counted from the run, not aggregated.
    """
    retrieved = pl.col("n_rows") if max_depth is None else pl.min_horizontal("n_rows", pl.lit(max_depth, dtype=pl.Int64))
    pairs = found.pairs.with_columns(n_retrieved=retrieved)
    judged = found.judged
    if max_depth is not None:
        judged = judged.filter(pl.col("rank") <= max_depth)
    is_relevant = (pl.col("relevance") >= relevance_threshold).fill_null(False)
    rows = judged.lazy().with_columns(is_relevant=is_relevant).with_columns(
        relevant_at_rank=running_sum_in_run("is_relevant", "code")  # rows come by code, then rank
    )
    aggregated = rows.group_by("code").agg(**partials) if partials else rows.select("code").unique()
    return (
        pairs.lazy()
        .join(aggregated, on="code", how="left")
        .select(*QUERY_KEYS, pl.col("n_retrieved").cast(pl.Int64), *partials)
        .collect(engine="in-memory")
    )


def _with_policies(metric: Metric, value: pl.Expr, undefined: pl.Expr, empty: EmptyPolicy) -> list[pl.Expr]:
    """``<name>`` and ``<name>__skip`` of one metric after the subset and empty policies."""
    value = value.cast(pl.Float64)
    if empty == "zero":  # every unit is scored, its own subset or not (trec_eval)
        return [value.fill_null(0.0).alias(metric.name), pl.lit(None, dtype=pl.String).alias(metric.name + SKIP)]
    inside = pl.sql_expr(metric.subset_where).fill_null(False) if metric.subset_where else None
    if inside is not None:
        value = pl.when(inside).then(value)
        reason = pl.when(value.is_null()).then(pl.when(inside).then(undefined).otherwise(pl.lit(metric.outside_reason)))
    else:
        reason = pl.when(value.is_null()).then(undefined)
    return [value.alias(metric.name), reason.cast(pl.String).alias(metric.name + SKIP)]


def _flag(metric: Metric) -> list[pl.Expr]:
    note = metric.note()
    return [] if note is None else [note[0].fill_null(False).alias(metric.name + FLAG)]


def query_unit_values(
    rows: pl.DataFrame,
    metrics: Sequence[Metric],
    *,
    carry: Sequence[str],
    items: pl.DataFrame | None,
    empty: EmptyPolicy,
) -> pl.DataFrame:
    """Wide values of the query unit: one row per row of ``rows`` (in its order).

    ``rows`` are the group's queries with :data:`WEIGHT`; ``items`` the item partials of its
    item metrics (:func:`item_partials`), joined on the query keys.
    """
    frame = rows.lazy()
    if items is not None:
        frame = layout.joined_beside(rows, items.drop("n_relevant", strict=False), QUERY_KEYS).lazy()
    columns: list[pl.Expr] = []
    for metric in metrics:
        if isinstance(metric, ItemMetric):
            columns += _with_policies(metric, metric.value(), metric.skip_reason(), empty)
        else:
            columns += _with_policies(metric, metric.expr(), metric.skip_reason(), empty)
        columns += _flag(metric)
    # In memory: the streaming engine adds floats in an order that varies from run to run.
    return frame.select(*carry, WEIGHT, *columns).collect(engine="in-memory")


def coarse_unit_values(
    rows: pl.DataFrame,
    metrics: Sequence[QueryMetric],
    *,
    unit_keys: Sequence[str],
    carry: Sequence[str],
    empty: EmptyPolicy,
) -> pl.DataFrame:
    """Wide values of a coarser unit: ``expr()`` of each metric aggregated over the unit's rows.

    ``carry`` holds the unit keys and the slice keys that apply to the unit (one value per unit).
    Units come in order of first appearance in ``rows``. The metrics declare no subset of their own
    (checked before any group's data work, :func:`evalframe.engine.partials.check_builds`).
    """
    keys = list(unit_keys)
    aggregations: list[pl.Expr] = [pl.col(name).first() for name in carry if name not in keys]
    aggregations.append(pl.col(WEIGHT).first())
    names: list[str] = []
    for metric in metrics:
        aggregations += [metric.expr().cast(pl.Float64).alias(metric.name), metric.skip_reason().alias(metric.name + SKIP)]
        aggregations += _flag(metric)
        names.append(metric.name)
    grouped = rows.lazy().group_by(keys, maintain_order=True).agg(aggregations)
    policies = []
    for metric in metrics:
        policies += _with_policies(metric, pl.col(metric.name), pl.col(metric.name + SKIP), empty)
    return grouped.with_columns(policies).collect(engine="in-memory")


def long_values(wide: pl.DataFrame | pl.LazyFrame, metrics: Sequence[Metric], keys: Sequence[str]):
    """``keys, metric, value, skip_reason`` from a wide table: metric after metric, each in the
    wide table's row order (lazy in, lazy out)."""
    return pl.concat([
        wide.select(
            *keys,
            pl.lit(metric.name).alias("metric"),
            pl.col(metric.name).alias("value"),
            pl.col(metric.name + SKIP).cast(pl.String).alias("skip_reason"),
        )
        for metric in metrics
    ])
