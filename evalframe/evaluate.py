"""``evaluate``: ranking metrics of one or more systems, per query and summarised.

The computation is a short pipeline of Polars transforms:

1. rank the run's items (given ranks, or score descending with trec_eval's tie rule);
2. attach judgments (``relevance``, ``is_relevant``);
3. one group-by over (system, query) runs every metric's partial aggregations;
4. per-query values combine partials with the query's context (``n_relevant``, ideal grades);
5. the queries evaluated are the judged queries (or the ``queries`` table when given); their
   values go into a long table and are summarised (:mod:`evalframe.aggregate`).

Policies (DESIGN §4):

- ``empty="skip"`` (default): a query with no relevant item is outside the subset of ratio
  metrics: null value, counted in ``n_skipped`` with its reason. ``empty="zero"`` scores every
  undefined value 0 and counts it, as trec_eval does.
- ``missing="error"`` (default): a judged query absent from a system's run is an error naming
  the queries. ``missing="zero"`` scores it as an empty ranking (trec_eval ``-c``).
- Run rows of queries that have no judgments are ignored, and counted in ``Result.notes``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from evalframe.aggregate import summarize
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.metrics.base import ItemMetric, Metric
from evalframe.metrics.registry import resolve_all
from evalframe.ranking import (
    QUERY_KEYS,
    JudgedRanking,
    QueryIndex,
    check_threshold,
    index_queries,
    judge_items,
    judged_ranks,
    query_context,
    rank_items,
    running_sum_in_run,
)

EmptyPolicy = Literal["skip", "zero"]
MissingPolicy = Literal["error", "zero"]

NO_RELEVANT = "no relevant item"


@dataclass(frozen=True)
class Result:
    """What :func:`evaluate` returns.

    - ``per_query``: long table ``system, query_id, metric, value, skip_reason`` (value null
      where the query is outside the metric's subset, with the reason);
    - ``summary``: tidy table ``grouping, system, metric, subset, n, n_skipped, value, std,
      median, p25, p75``;
    - ``notes``: what was left out of the evaluation and why (never silently).
    """

    per_query: pl.DataFrame
    summary: pl.DataFrame
    metrics: tuple[Metric, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def wide(self) -> pl.DataFrame:
        """Per-query values with one column per metric (a notebook-friendly view)."""
        return self.per_query.pivot(on="metric", index=QUERY_KEYS, values="value", maintain_order=True)


def evaluate(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    metrics: Iterable[str | Metric],
    *,
    queries: pl.DataFrame | None = None,
    relevance_threshold: int = 1,
    empty: EmptyPolicy = "skip",
    missing: MissingPolicy = "error",
    max_depth: int | None = None,
    grouping_sets: Mapping[str, Sequence[str]] | None = None,
) -> Result:
    """Evaluate ranking metrics of the run's systems against the judgments.

    Parameters
    ----------
    run
        ``ranking`` table (from :func:`evalframe.read_run`): system, query_id, doc_id and
        rank and/or score.
    qrels
        ``judgments`` table (from :func:`evalframe.read_qrels`): query_id, doc_id, relevance.
    metrics
        Metric names (``"recall@5"``, ``"ndcg@10"``, ``"map@100"``, ``"mrr"``) or objects.
    queries
        Optional ``queries`` table (system, query_id and slice keys). When given it is the
        set of evaluated queries: a query in it with no run rows has an empty ranking.
    relevance_threshold
        Items with relevance >= this grade are relevant (trec_eval ``-l``).
    empty, missing
        Policies for queries without relevant items and judged queries absent from the run.
    max_depth
        Use only the first ``max_depth`` items of each ranking (trec_eval ``-M``).
    grouping_sets
        Slices to summarise by, e.g. ``{"overall": [], "fold": ["fold"]}`` (keys from ``queries``).

    Examples
    --------
    >>> import polars as pl, evalframe as ef
    >>> run = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"],
    ...                     "score": [2.0, 1.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "x"], "relevance": [1, 1]})
    >>> result = ef.evaluate(ef.read_run(run), ef.read_qrels(qrels), ["mrr", "recall@1"])
    >>> result.summary.select("metric", "n", "value")
    shape: (2, 3)
    ┌──────────┬─────┬───────┐
    │ metric   ┆ n   ┆ value │
    │ ---      ┆ --- ┆ ---   │
    │ str      ┆ i64 ┆ f64   │
    ╞══════════╪═════╪═══════╡
    │ mrr      ┆ 2   ┆ 0.25  │
    │ recall@1 ┆ 2   ┆ 0.0   │
    └──────────┴─────┴───────┘
    """
    check_threshold(relevance_threshold)
    if empty not in ("skip", "zero"):
        raise ConfigError(f"`empty` must be 'skip' or 'zero', got {empty!r}")
    if missing not in ("error", "zero"):
        raise ConfigError(f"`missing` must be 'error' or 'zero', got {missing!r}")
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 1):
        raise ConfigError(f"`max_depth` must be a whole number >= 1, got {max_depth!r}")
    resolved = resolve_all(metrics)
    item_metrics = [m for m in resolved if isinstance(m, ItemMetric)]
    if len(item_metrics) != len(resolved):
        other = ", ".join(f"`{m.name}`" for m in resolved if not isinstance(m, ItemMetric))
        raise ConfigError(f"evaluate() takes ranking metrics; {other} need the pipeline (`run_pipeline`)")

    index = index_queries(run)
    universe, notes = _query_universe(run, qrels, queries, missing=missing, index=index)
    wide = per_query_values(
        run, qrels, universe, item_metrics, relevance_threshold=relevance_threshold, empty=empty, max_depth=max_depth,
        index=index,
    )
    slice_keys = [c for c in universe.columns if c not in QUERY_KEYS]
    per_query = to_long(wide, item_metrics, keys=[*QUERY_KEYS, *slice_keys])
    summary = summarize(per_query, item_metrics, grouping_sets=grouping_sets)
    return Result(per_query=per_query, summary=summary, metrics=tuple(item_metrics), notes=tuple(notes))


def _query_universe(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    queries: pl.DataFrame | None,
    *,
    missing: MissingPolicy,
    index: QueryIndex | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """The (system, query_id) pairs to evaluate, plus notes on what is left out.

    The run enters only through its (system, query_id) pairs and their row counts (``index``).
    """
    pairs = (index if index is not None else index_queries(run)).pairs
    notes = []
    if queries is not None:
        universe = queries
        ignored = qrels.join(queries.select("query_id").unique(), on="query_id", how="anti")
        if ignored.height:
            notes.append(f"{ignored.get_column('query_id').n_unique()} judged queries are not in the queries table and were ignored")
    else:
        systems = pairs.select("system").unique()
        universe = systems.join(qrels.select("query_id").unique(), how="cross")
        absent = universe.join(pairs.select(QUERY_KEYS), on=QUERY_KEYS, how="anti").sort(QUERY_KEYS)
        if absent.height and missing == "error":
            problems = [
                Problem(None, None, NO_VALUE, f"query {query_id!r} is judged but system {system!r} retrieved nothing for it")
                for system, query_id in absent.head(20).iter_rows()
            ]
            problems.append(
                Problem(None, None, NO_VALUE, "to score such queries 0 pass missing='zero' (`evalframe trec -c`), or add them to the run")
            )
            raise InputError("run", problems)
        if absent.height:
            notes.append(f"{absent.height} judged (system, query) pairs absent from the run were scored as empty rankings")
    unjudged = pairs.join(universe.select("query_id").unique(), on="query_id", how="anti")
    if unjudged.height:
        n_rows = unjudged.get_column("n_rows").sum()
        n_queries = unjudged.get_column("query_id").n_unique()
        notes.append(f"{n_rows} run rows of {n_queries} queries without judgments were ignored")
    return universe.sort(QUERY_KEYS), notes


def per_query_values(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    universe: pl.DataFrame,
    metrics: Sequence[ItemMetric],
    *,
    relevance_threshold: int = 1,
    empty: EmptyPolicy = "skip",
    max_depth: int | None = None,
    index: QueryIndex | None = None,
) -> pl.DataFrame:
    """One row per (system, query) of ``universe`` and one column per metric.

    Adds ``_skip_reason`` columns (``<metric>__skip``) that say why a value is null.
    ``index`` (from :func:`~evalframe.ranking.index_queries`) saves numbering the run twice.

    When no metric reads unjudged items (``ItemMetric.reads_unjudged_items``), the partials
    see only the judged items the run retrieved (:func:`~evalframe.ranking.judged_ranks`,
    which ranks them without sorting the run); otherwise every ranked item.
    """
    partials: dict[str, pl.Expr] = {}
    ideal_partials: dict[str, pl.Expr] = {}
    for metric in metrics:
        partials.update(metric.partials())
        ideal_partials.update(metric.ideal_partials())
    per_query = None
    if not any(metric.reads_unjudged_items for metric in metrics):
        found = judged_ranks(run, qrels, universe, index=index)
        if found is not None:
            per_query = _aggregate_judged(found, partials, max_depth=max_depth, relevance_threshold=relevance_threshold)
    if per_query is None:
        ranked = rank_items(run.join(universe.select(QUERY_KEYS), on=QUERY_KEYS, how="semi"), max_depth=max_depth)
        judged = judge_items(ranked, qrels, relevance_threshold=relevance_threshold)
        judged = judged.with_columns(relevant_at_rank=pl.col("is_relevant").cum_sum().over(QUERY_KEYS))
        per_query = judged.group_by(QUERY_KEYS).agg(n_retrieved=pl.len().cast(pl.Int64), **partials)

    context = query_context(qrels, ideal_partials, relevance_threshold=relevance_threshold)
    table = universe.join(context, on="query_id", how="left").join(per_query, on=QUERY_KEYS, how="left")
    table = table.with_columns(
        pl.col(name).fill_null(pl.lit([], dtype=dtype) if isinstance(dtype, pl.List) else 0)
        for name, dtype in table.schema.items()
        if name in partials or name in ideal_partials or name in ("n_relevant", "n_retrieved")
    )

    has_relevant = pl.col("n_relevant") > 0
    values = []
    for metric in metrics:
        value = metric.value()
        if metric.subset_where is not None and empty == "skip":
            value = pl.when(has_relevant).then(value)
        reason = pl.when(value.is_null()).then(
            pl.when(has_relevant | ~pl.lit(metric.subset_where is not None)).then(pl.lit("undefined (zero denominator)")).otherwise(pl.lit(NO_RELEVANT))
        )
        if empty == "zero":
            value, reason = value.fill_null(0.0), pl.lit(None, dtype=pl.String)
        values += [value.cast(pl.Float64).alias(metric.name), reason.alias(f"{metric.name}__skip")]
    # Lazy, so that a value used twice (by its skip reason) is computed once; in memory,
    # because the streaming engine adds floats in an order that varies from run to run.
    return table.lazy().select(*universe.columns, *values).collect(engine="in-memory")


def _aggregate_judged(
    found: JudgedRanking,
    partials: Mapping[str, pl.Expr],
    *,
    max_depth: int | None,
    relevance_threshold: int,
) -> pl.DataFrame:
    """The metric group-by of :func:`per_query_values` over the judged items only.

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


def long_by_metric(wide: pl.DataFrame, metrics: Sequence[Metric], keys: Sequence[str]) -> pl.DataFrame:
    """``keys, metric, value, skip_reason`` from the wide table of :func:`per_query_values`:
    metric after metric, each in the wide table's row order."""
    return pl.concat([
        wide.select(
            *keys,
            pl.lit(metric.name).alias("metric"),
            pl.col(metric.name).alias("value"),
            pl.col(f"{metric.name}__skip").cast(pl.String).alias("skip_reason"),
        )
        for metric in metrics
    ])


def to_long(wide: pl.DataFrame, metrics: Sequence[Metric], *, keys: Sequence[str]) -> pl.DataFrame:
    """Per-query values in long form, ordered by ``keys`` then metric (metric order kept)."""
    long = long_by_metric(wide, metrics, keys)
    if wide.height and wide.select(pl.struct(keys).is_unique().all()).item():
        # One row per key: in the sorted long table each wide row's metrics follow one another,
        # so its order is known without sorting seven times as many rows.
        import numpy as np

        order = wide.select(pl.arg_sort_by(list(keys), maintain_order=True)).to_series().to_numpy()
        return long[(order[:, None] + np.arange(len(metrics)) * wide.height).ravel()]
    return long.sort(list(keys), maintain_order=True)
