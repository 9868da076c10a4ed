"""The evaluation engine (DESIGN §3): one stage list behind ``evaluate()`` and every pipeline.

    read → validate → derive → per-unit values → partials → merge → summary → across folds

:class:`Plan` says what to compute (metric groups bound to subsets, slices, units, weight,
policies); :func:`compute_partials` runs the stages up to mergeable :class:`Partials` for one set
of tables; :func:`finalize` turns (possibly merged) partials into an
:class:`~evalframe.engine.result.Evaluation`. :func:`run` is the two in a row, and
:func:`evaluate` the Python door: it builds a plan from keyword arguments. A pipeline file is
the other door (:mod:`evalframe.pipeline`): it builds the same plan from YAML.

The stages live in their own modules: :mod:`~evalframe.engine.derive` (validate and derive the
queries table), :mod:`~evalframe.engine.per_unit` (per-unit values), :mod:`~evalframe.engine.partials`
(mergeable partials), :mod:`~evalframe.engine.aggregate` (summary statistics); this module
finalizes partials into the result and holds the Python door.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from evalframe._threads import in_order
from evalframe.data.subsets import Subset
from evalframe.data.tables import Tables
from evalframe.data.units import SYSTEM
from evalframe.engine import aggregate, uncertainty
from evalframe.engine.partials import TRACE_KEYS, Partials, compute_partials, values_in_key_order
from evalframe.engine.per_unit import long_values
from evalframe.engine.plan import (
    EmptyPolicy,
    MissingPolicy,
    Plan,
    ScorePrecision,
    build_groups,
    check_argument_types,
)
from evalframe.engine.result import Evaluation, LongValues
from evalframe.engine.slicing import rows_of_slices, slice_dtype
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, Metric, SetMetric
from evalframe.metrics.keyed_sums import KeyedSumsMetric, finalize_sharing
from evalframe.engine.bootstrap import Bootstrap


def finalize(partials: Partials, *, tables: Tables | None = None, pieces: Mapping | None = None) -> Evaluation:
    """The :class:`~evalframe.engine.result.Evaluation` of (possibly merged) partials; ``pieces``:
    :func:`summary_pieces` of these partials' groups made already (:func:`run`), if any."""
    # The skip counts (the long per-unit values are made only when read) beside the summary's assembly.
    (per_unit_long, skipped), summary = in_order([lambda: _per_unit_values(partials), lambda: _summary(partials, pieces)])
    replicates = None
    if partials.plan.bootstrap is None:
        summary = uncertainty.without_intervals(summary)
    else:
        labels = {(g, m.name): group.subset_text(m) for g, group in enumerate(partials.plan.groups) for m in group.metrics}
        summary, replicates = uncertainty.attach(summary, partials, labels)
    params = metric_params(partials.plan)
    summary = summary.with_columns(params=pl.col("metric").replace_strict(params, default=None, return_dtype=pl.String))
    # Each metric's target category (seed 000 §2.1: retrieval_relevance, …, negative_rejection).
    categories = {metric.name: metric.target.value for metric in partials.plan.metrics}
    summary = summary.with_columns(target=pl.col("metric").replace_strict(categories, default=None, return_dtype=pl.String))
    return Evaluation(
        summary=summary,
        replicates=replicates,
        per_unit_source=per_unit_long,
        skipped=skipped,
        plan=partials.plan,
        units=partials.units,
        queries=partials.queries,
        inputs=tables,
        notes=partials.notes,
    )


@dataclass(frozen=True)
class _SummaryTask:
    """The summary rows of one (metric group ``g``, ``unit``, ``grouping`` set): its per-unit
    metrics' and set metrics' (in the group's order)."""

    g: int
    unit: str
    grouping: str
    per_unit: tuple[Metric, ...]
    set_metrics: tuple[SetMetric, ...]


def _summary_tasks(plan: Plan, applies: Mapping[tuple[str, str], bool], groups: Iterable[int] | None = None) -> list[_SummaryTask]:
    """The summary's tasks, in the summary's order of rows before sorting (group, unit, grouping
    set), of every group or of ``groups``."""
    tasks = []
    for g in range(len(plan.groups)) if groups is None else groups:
        group = plan.groups[g]
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            metrics = [m for m in group.metrics if m.unit == unit]
            per_unit = tuple(m for m in metrics if not isinstance(m, SetMetric))
            set_metrics = tuple(m for m in metrics if isinstance(m, SetMetric))
            tasks += [_SummaryTask(g, unit, grouping, per_unit, set_metrics) for grouping in plan.slices if applies[(unit, grouping)]]
    return tasks


def summary_pieces(plan: Plan, applies: Mapping[tuple[str, str], bool], values: Mapping[tuple[int, str], pl.DataFrame | pl.LazyFrame],
                   states: Mapping[tuple[int, str, object], pl.DataFrame], groups: Iterable[int], *,
                   threads: int = 2) -> dict[tuple[int, str, str], tuple[pl.DataFrame | None, pl.DataFrame | None]]:
    """The summary's work that reads the data, of the metric groups ``groups``: per
    (g, unit, grouping set), the quantile rows of its per-unit metrics (:func:`_quantile_rows`)
    and its set metrics' ``finalize`` of their states, collected; keyed by task.

    It reads only the groups' per-unit ``values`` and set-metric ``states``
    (:class:`~evalframe.engine.partials.Partials`' fields), so a group's pieces can be made as
    soon as its partials are (:func:`run`, beside the next groups' partials); :func:`finalize`
    makes those it is not given, and joins them with the slices' sizes and moments
    (:func:`_summary`). One task per (g, unit, grouping set), two at a time
    (:func:`~evalframe._threads.in_order`; ``threads=1``: one after another): one task's Python
    builds its plans while Polars runs another's; each plan's result is the one it gives alone."""
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    weighted = plan.weight is not None
    tasks = _summary_tasks(plan, applies, groups)
    # Built once for every grouping set of the same values.
    aggregations = {(t.g, t.unit): t.per_unit for t in tasks if t.per_unit}
    aggregations = {key: aggregate.quantile_aggregations(metrics, weighted=weighted) for key, metrics in aggregations.items()}

    def pieces_of(task: _SummaryTask) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        keys = by[task.grouping]
        plans = {}
        if task.per_unit:
            plans["quantiles"] = _quantile_rows(values[(task.g, task.unit)], task.per_unit, keys, weighted=weighted,
                                                aggregations=aggregations[(task.g, task.unit)])
        if task.set_metrics:
            ordered: dict[object, pl.DataFrame] = {}

            def ordered_state(metric: SetMetric) -> pl.DataFrame:
                # Each state sorted once by its state keys (finalize does not depend on the order of
                # the rows; a stable sort keeps the order of rows with equal keys anyway): every
                # slice's rows are then in order too, so the metrics' per-slice sorts over their
                # operating points or bins find them sorted, a fraction of a sort's cost.
                if metric.state_id not in ordered:
                    state = states[(task.g, task.grouping, metric.state_id)]
                    ordered[metric.state_id] = state.sort(metric.state_keys, maintain_order=True) if metric.state_keys else state
                return ordered[metric.state_id]

            plans["set"] = pl.concat([
                table.select(*keys, pl.lit(metric.name).alias("metric"), pl.col("n").cast(pl.Int64),
                             pl.col("value").cast(pl.Float64), pl.col("note").cast(pl.String))
                for metric, table in _finalized(task.set_metrics, ordered_state, keys)
            ])
        found = dict(zip(plans, pl.collect_all(list(plans.values()), engine="in-memory"), strict=True))
        return found.get("quantiles"), found.get("set")

    found = [pieces_of(task) for task in tasks] if threads == 1 else in_order([partial(pieces_of, task) for task in tasks])
    return dict(zip([(t.g, t.unit, t.grouping) for t in tasks], found, strict=True))


def _begin_summary(pieces: dict, plan: Plan, applies: Mapping[tuple[str, str], bool], g: int,
                   values: Mapping[tuple[int, str], pl.DataFrame], states: Mapping[tuple[int, str, object], pl.DataFrame]) -> None:
    """Add group ``g``'s :func:`summary_pieces` to ``pieces`` (:func:`compute_partials`' ``on_group``),
    its tasks one after another (the thread is one of the partials' two). When they fail, the
    group is left to :func:`finalize`, which makes its pieces again and raises the error where
    it always did: after every group's partials."""
    try:
        found = summary_pieces(plan, applies, values, states, [g], threads=1)
    except Exception:  # noqa: BLE001 (raised again by finalize, in its place)
        return
    pieces.update(found)


def _summary(partials: Partials, pieces: Mapping | None = None) -> pl.DataFrame:
    """One row per (grouping set, slice, metric, subset): per-unit metrics from their moments and
    quantiles, set metrics from their states; then the across-folds rows.

    ``pieces``: :func:`summary_pieces` of some groups, made already (the rest are made here).
    Then every task's rows in one plan: the slices' sizes × the task's metrics, joined with the
    moments and quantiles (per-unit metrics) or the finalized values (set metrics)."""
    plan = partials.plan
    slice_keys = plan.slice_keys
    tasks = _summary_tasks(plan, partials.applies)
    pieces = dict(pieces or {})
    missing = sorted({task.g for task in tasks if (task.g, task.unit, task.grouping) not in pieces})
    if missing:
        pieces |= summary_pieces(plan, partials.applies, partials.values, partials.states, missing)
    key_dtypes = {k: slice_dtype(partials.queries.schema[k]) for k in slice_keys}

    def keyed(frame: pl.DataFrame, position: int, grouping: str) -> pl.LazyFrame:
        """``frame`` (a grouping set's rows) with the task's position and every slice key (null
        where the grouping set does not group by it)."""
        return frame.lazy().with_columns(
            pl.lit(position, dtype=pl.Int64).alias(aggregate.TASK),
            *(pl.lit(None, dtype=key_dtypes[k]).alias(k) for k in slice_keys if k not in plan.slices[grouping]),
        )

    unit_parts = {"sizes": [], "metrics": [], "moments": [], "quantiles": []}
    set_parts = {"sizes": [], "metrics": [], "values": []}
    for position, task in enumerate(tasks):
        labels = {m.name: plan.groups[task.g].subset_text(m) for m in (*task.per_unit, *task.set_metrics)}
        quantile_rows, set_values = pieces[(task.g, task.unit, task.grouping)]
        sizes = partials.sizes[(task.unit, task.grouping)].with_columns(grouping=pl.lit(task.grouping), unit=pl.lit(task.unit))
        if task.per_unit:
            unit_parts["sizes"].append(keyed(sizes, position, task.grouping))
            unit_parts["metrics"].append(aggregate.unit_metrics(task.per_unit, labels).with_columns(pl.lit(position, dtype=pl.Int64).alias(aggregate.TASK)))
            unit_parts["moments"].append(keyed(partials.moments[(task.g, task.unit, task.grouping)], position, task.grouping))
            unit_parts["quantiles"].append(keyed(quantile_rows, position, task.grouping))
        if task.set_metrics:
            set_parts["sizes"].append(keyed(sizes, position, task.grouping))
            # The metrics with a finalized row (a state of no slice finalizes to none: no row).
            set_parts["metrics"].append(set_values.lazy().select(pl.col("metric").unique(maintain_order=True)).with_columns(
                pl.lit(position, dtype=pl.Int64).alias(aggregate.TASK),
                subset=pl.col("metric").replace_strict(labels, default=None, return_dtype=pl.String)))
            set_parts["values"].append(keyed(set_values, position, task.grouping))
    by = [aggregate.TASK, SYSTEM, *slice_keys]
    columns = ["grouping", SYSTEM, *slice_keys, "metric", "unit", "subset", *aggregate.SUMMARY_STATS, "note", aggregate.TASK]
    rows = []
    if unit_parts["sizes"]:
        rows.append(aggregate.unit_summary(*(pl.concat(unit_parts[name], how="diagonal") for name in ("sizes", "metrics", "moments", "quantiles")),
                                           by=by).select(columns))
    if set_parts["sizes"]:
        rows.append(aggregate.set_summary(*(pl.concat(set_parts[name], how="diagonal") for name in ("sizes", "metrics", "values")),
                                          by=by).select(columns))
    collected = pl.collect_all(rows, engine="in-memory") if rows else []
    summary = pl.concat(collected, how="vertical_relaxed")
    summary = aggregate.order_summary(summary, [m.name for m in plan.metrics], plan.slices, slice_keys, then=[aggregate.TASK]).drop(aggregate.TASK)
    if plan.across_folds is not None:
        summary = pl.concat([summary, aggregate.across_folds(summary, plan.fold_grouping, slice_keys)])
    return summary


def _finalized(metrics: Sequence[SetMetric], state_of, by: list[str]) -> list[tuple[SetMetric, pl.LazyFrame]]:
    """Each set metric beside its ``finalize`` of its state (``state_of(metric)``), in the metrics'
    order; the :class:`~evalframe.metrics.keyed_sums.KeyedSumsMetric` of one ``state_id`` finalized
    together, their dense view built once (:func:`~evalframe.metrics.keyed_sums.finalize_sharing`)."""
    sharing: dict[object, list[int]] = {}
    for position, metric in enumerate(metrics):
        if isinstance(metric, KeyedSumsMetric):
            sharing.setdefault(metric.state_id, []).append(position)
    tables: dict[int, pl.LazyFrame] = {}
    for positions in sharing.values():
        group = [metrics[p] for p in positions]
        tables.update(zip(positions, finalize_sharing(group, state_of(group[0]).lazy(), by), strict=True))
    return [(m, tables[p] if p in tables else m.finalize(state_of(m).lazy(), by)) for p, m in enumerate(metrics)]


def _quantile_rows(wide: pl.DataFrame | pl.LazyFrame, metrics: Sequence[Metric], by: Sequence[str], *,
                   weighted: bool, aggregations: Sequence[pl.Expr]) -> pl.LazyFrame:
    """The quantile rows of ``metrics`` per slice of ``by`` (:func:`aggregate.quantiles`, whose
    ``aggregations`` of the metrics, in order, are given).

    In memory (``wide`` a DataFrame): one lazy plan for every metric. On the bucket path
    (``wide`` a lazy scan of the spilled per-unit values, :mod:`~evalframe.engine.buckets`): one
    metric at a time, each collected from the files before the next is read, so that memory
    holds one metric's values of the grouping set (and its sort), never every metric's. The
    quantiles do not depend on the rows' order, so the files are read as they lie (no sort)."""
    if isinstance(wide, pl.DataFrame):
        return aggregate.quantiles(rows_of_slices(wide.lazy(), by), metrics, by, weighted=weighted, aggregations=aggregations)
    extra = [WEIGHT] if weighted else []
    found = [
        aggregate.quantiles(rows_of_slices(wide.select(*by, *extra, metric.name), by), [metric], by, weighted=weighted,
                            aggregations=[aggregation])
        .collect(engine="in-memory")
        for metric, aggregation in zip(metrics, aggregations, strict=True)
    ]
    return pl.concat(found, how="vertical_relaxed").lazy()


def metric_params(plan: Plan) -> dict[str, str]:
    """The summary's ``params`` of each metric: the shared parameters its value depends on
    (``threshold=0.5``; ``tau_neg=0.2,tau_pos=0.7`` for the gate metrics when the state is
    derived from ``prob``), so that the metric's name stays plain (``neg_rate``)."""
    from evalframe.metrics.registry import shared_parameters

    given = dict(plan.parameters)
    if plan.state_thresholds is not None:
        given |= dict(zip(("tau_neg", "tau_pos"), plan.state_thresholds, strict=True))
    if not given:  # nothing shared is set: no metric has params (and the registry's every family stays unimported)
        return {}
    found: dict[str, str] = {}
    for parameter, readers in shared_parameters().items():
        if parameter not in given:
            continue
        for metric in plan.metrics:
            if "(" not in metric.name and any(metric.name == r or metric.name.startswith(f"{r}@") for r in readers):
                text = f"{parameter}={given[parameter]}"
                found[metric.name] = f"{found[metric.name]},{text}" if metric.name in found else text
    return found

def _per_unit_values(partials: Partials) -> tuple[LongValues | pl.LazyFrame, pl.DataFrame]:
    """The long per-unit values of every group and unit, and the skipped units per system,
    unit, metric and reason (null values, and units outside the group's subset).

    In memory the long values are made when first read (:class:`~evalframe.engine.result.LongValues`,
    a DataFrame then). On the bucket path (per-unit values kept on
    disk, lazy scans of the spilled files) they stay a lazy plan over the files, in key order
    (:func:`~evalframe.engine.partials.values_in_key_order`), never collected here: the
    outputs stream it to their files; the skip counts are one streaming pass over the files."""
    plan, units = partials.plan, partials.units
    slice_keys = plan.slice_keys
    on_disk = any(isinstance(wide, pl.LazyFrame) for wide in partials.values.values())
    long_parts, skipped = [], []
    for (g, unit), wide in partials.values.items():
        group = plan.groups[g]
        per_unit = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
        keys = [c for c in wide.lazy().collect_schema().names() if c in set(units.key_columns(unit)) | set(slice_keys) | set(TRACE_KEYS)]
        ordered = values_in_key_order(wide.lazy(), units, unit) if on_disk else wide.lazy()
        long = long_values(ordered, per_unit, keys).with_columns(unit=pl.lit(unit), subset=pl.lit(group.subset.name))
        long_parts.append(long)
        # The counts do not depend on the rows' order: on disk, the files as they lie.
        counted = long_values(wide.lazy(), per_unit, keys).with_columns(unit=pl.lit(unit)) if on_disk else long
        skipped.append(counted.filter(pl.col("skip_reason").is_not_null()).group_by(SYSTEM, "unit", "metric", "skip_reason").agg(count=pl.len().cast(pl.Int64)))
        applicable = [grouping for grouping in plan.slices if partials.applies[(unit, grouping)]]
        if not applicable:
            continue
        outside = (
            partials.sizes[(unit, applicable[0])].lazy().group_by(SYSTEM).agg(pl.col("n_units").sum())
            .join(partials.inside[(g, unit)].lazy(), on=SYSTEM, how="left", suffix="_inside")
            .select(SYSTEM, count=pl.col("n_units") - pl.col("n_units_inside").fill_null(0))
            .filter(pl.col("count") > 0)
        )
        names = pl.LazyFrame({"metric": [m.name for m in per_unit]}, schema={"metric": pl.String})
        skipped.append(outside.join(names, how="cross").select(
            SYSTEM, pl.lit(unit).alias("unit"), "metric", pl.lit(group.subset.outside_reason).alias("skip_reason"), "count"
        ))
    if on_disk:
        skipped = [frame.collect(engine="streaming") for frame in skipped]
        per_unit_long = pl.concat(long_parts, how="diagonal_relaxed") if long_parts else _empty_long().lazy()
    else:
        # The skip counts of every group and unit collected at once; the long values made when
        # first read (LongValues), never in a run that reads only the summary.
        skipped = pl.collect_all(skipped, engine="in-memory") if skipped else []
        per_unit_long = LongValues(pl.concat(long_parts, how="diagonal_relaxed") if long_parts else _empty_long().lazy())
    skipped_table = (
        pl.concat(skipped, how="vertical_relaxed").sort(SYSTEM, "unit", "metric", "skip_reason") if skipped else _empty_skipped()
    )
    return per_unit_long, skipped_table


def _empty_long() -> pl.DataFrame:
    return pl.DataFrame(schema={SYSTEM: pl.String, "query_id": pl.String, "metric": pl.String, "value": pl.Float64,
                                "skip_reason": pl.String, "unit": pl.String, "subset": pl.String})


def _empty_skipped() -> pl.DataFrame:
    return pl.DataFrame(schema={SYSTEM: pl.String, "unit": pl.String, "metric": pl.String, "skip_reason": pl.String,
                                "count": pl.Int64})


def run(tables: Tables, plan: Plan, *, buckets: int | str | None = None, memory: int | str | None = None,
        bucket_dir: str | Path | None = None):
    """Evaluate ``tables`` as ``plan`` says: :func:`finalize` of :func:`compute_partials` (or, with
    ``buckets``, of the partials merged bucket by bucket, :mod:`evalframe.engine.buckets`), after
    each metric's :meth:`~evalframe.metrics.base.Metric.prepare` (the judge metrics ask their
    judge then; what they asked is run.json's ``judge`` section)."""
    from dataclasses import replace

    judged = sys.modules.get("evalframe.metrics.judged")
    if judged is None:  # no judge metric exists before its module is imported: nothing to ask (and no import)
        for metric in plan.metrics:
            metric.prepare(tables)
        judge = None
    else:
        judge = judged.prepare_metrics(plan.metrics, tables)
    if buckets is None:
        # Each group's summary pieces are made as soon as its partials are, on the thread that made
        # them, while the next groups' partials are computed (the other core does not idle).
        pieces: dict = {}
        partials = compute_partials(tables, plan, on_group=partial(_begin_summary, pieces))
        evaluation = finalize(partials, tables=tables, pieces=pieces)
    else:
        from evalframe.engine.buckets import partials_in_buckets

        frames = {"queries": tables.queries, "judgments": tables.judgments, "ranking_rows": tables.ranking_rows,
                  "ranked_lists": tables.ranked_lists}
        evaluation = partials_in_buckets(frames, plan, buckets=buckets, memory=memory, bucket_dir=bucket_dir, template=tables,
                                         finish=lambda merged: finalize(merged, tables=tables))
    if judge is None:
        return evaluation
    return replace(evaluation, plan=replace(evaluation.plan, about={**evaluation.plan.about, "judge": judge}))


def evaluate(
    data: Tables | pl.DataFrame | str | Path | Sequence[str | Path],
    qrels: pl.DataFrame | str | Path | None = None,
    metrics: Iterable[str | Metric] | Mapping[str, Iterable[str | Metric]] = (),
    *,
    queries: pl.DataFrame | None = None,
    subsets: Mapping[str, str | Subset] | None = None,
    slices: Mapping[str, Sequence[str]] | None = None,
    units: Mapping[str, Sequence[str]] | None = None,
    weight: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    relevance_threshold: int = 1,
    empty: EmptyPolicy = "skip",
    missing: MissingPolicy = "error",
    max_depth: int | None = None,
    score_precision: ScorePrecision = "float64",
    across_folds: str | None = None,
    grouping_sets: Mapping[str, Sequence[str]] | None = None,
    bootstrap: Bootstrap | None = None,
    buckets: int | str | None = None,
    memory: int | str | None = None,
    bucket_dir: str | Path | None = None,
):
    """Evaluate metrics of any level on ``data``, per unit and summarised per slice.

    Parameters
    ----------
    data
        :class:`~evalframe.data.tables.Tables` (e.g. from :func:`evalframe.read_per_query`), or a
        ``ranking`` table (from :func:`evalframe.read_run`) with its judgments as ``qrels``, or
        the path of a run file (or a list of paths), read by :func:`evalframe.read_run` (messages
        then name the file).
    qrels
        ``judgments`` table (from :func:`evalframe.read_qrels`, or its path) when ``data`` is a run.
    metrics
        Metric names (``"recall@5"``, ``"auroc"``, ``"macro_f1"``) or objects: a list (computed
        on all queries and on each of ``subsets``), or a mapping from subset name
        (``"all_queries"`` or a key of ``subsets``) to metrics.
    queries
        With a run: the ``queries`` table (system, query_id and slice keys), the set of evaluated
        queries (default: every system of the run × every judged query).
    subsets
        Named Polars SQL conditions over the queries table, e.g. ``{"has_evidence": "label = 1"}``.
    slices
        Grouping sets, e.g. ``{"overall": [], "fold": ["fold"]}`` (``grouping_sets`` is the same).
    units
        Coarser units and their key columns, e.g. ``{"post": ["post_id"]}`` (``post`` defaults to
        ``[post_id]`` when the queries table has that column).
    weight
        A queries column holding each unit's non-negative weight (default: every unit weighs 1).
    parameters
        Values for the metric parameters that metrics share (``threshold``), where a metric's
        name does not set them. ``tau_neg`` and ``tau_pos`` derive the gate ``state`` column
        from ``prob`` (contract §5.1), usable in slices and subsets; the gate metrics keep their
        plain names (``neg_rate``).
    relevance_threshold
        Items with relevance >= this grade are relevant (trec_eval ``-l``).
    empty, missing
        ``empty="zero"`` scores undefined per-unit values 0 (trec_eval); ``missing="zero"`` scores
        a judged query absent from a system's run as an empty ranking (trec_eval ``-c``).
    max_depth
        Use only the first ``max_depth`` items of each ranking (trec_eval ``-M``).
    score_precision
        ``"float64"`` (default) ranks by the scores as given; ``"float32"`` compares them as
        trec_eval stores them (32-bit floats: scores equal in single precision tie, and doc_id
        descending decides); a score beyond float32's range is then an error.
    across_folds
        A fold key (a slice must group by it alone): adds mean ± std rows of per-fold values.
    bootstrap
        :class:`~evalframe.Bootstrap` settings: adds ``se``, ``ci_low``, ``ci_high`` to every
        summary row and the replicate values as ``result.replicates`` (default: no intervals,
        those columns null).
    buckets, memory, bucket_dir
        Out of core (:mod:`evalframe.engine.buckets`): ``buckets=N`` or ``"auto"`` splits every
        table by unit into N bucket files, evaluates them one by one and merges the partials
        (the same result as in memory); ``"auto"`` picks N from the input's size and ``memory``
        (bytes or ``"8GB"``; default a third of the machine's memory). Temporary files go to
        ``bucket_dir`` (default: the system's temporary folder) and are removed afterwards.
        Scans (:func:`evalframe.scan_run`, :func:`evalframe.scan_qrels`) are read lazily and
        imply ``buckets="auto"``; with ``buckets``, run and qrels paths are scanned too.

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
    scan = sys.modules.get("evalframe.io.scan")  # no Scan exists before its module is imported (and none is imported here)
    if buckets is None and scan is not None and (isinstance(data, scan.Scan) or isinstance(qrels, scan.Scan)):
        buckets = "auto"
    if buckets is not None or memory is not None or bucket_dir is not None:
        from evalframe.engine.buckets import check_buckets, parse_memory

        buckets = check_buckets("auto" if buckets is None else buckets)
        parse_memory(memory)
    plan_arguments = dict(subsets=subsets, slices=slices, units=units, weight=weight, parameters=parameters,
                          relevance_threshold=relevance_threshold, empty=empty, missing=missing, max_depth=max_depth,
                          score_precision=score_precision, across_folds=across_folds, grouping_sets=grouping_sets,
                          bootstrap=bootstrap)
    if buckets is not None:
        return _evaluate_in_buckets(data, qrels, queries, make_plan(metrics, **plan_arguments),
                                    buckets=buckets, memory=memory, bucket_dir=bucket_dir)
    if isinstance(data, Tables):
        if qrels is not None or queries is not None:
            raise ConfigError("pass either Tables, or a run with its qrels (and queries), not both")
        tables = data
    else:
        if qrels is None:
            raise ConfigError("evaluate() needs the judgments (`qrels`) of a run, or Tables")
        from evalframe.io import read_qrels, read_run

        source = "run"
        if not isinstance(data, pl.DataFrame):  # a path, or a list of them: messages name the files
            source = ", ".join(str(one) for one in data) if isinstance(data, (list, tuple)) else str(data)
        # A frame built by hand meets the same contract as a file (a reader's frame is not checked twice).
        tables = Tables.from_run(read_run(data), read_qrels(qrels), queries, source=source)
    return run(tables, make_plan(metrics, **plan_arguments))


def _evaluate_in_buckets(data, qrels, queries, plan: Plan, *, buckets, memory, bucket_dir):
    """:func:`evaluate`'s out-of-core door: its inputs as scans or frames, then the bucket path."""
    from evalframe.engine.buckets import partials_in_buckets
    from evalframe.io import read_qrels, read_run
    from evalframe.io.scan import Scan, scan_qrels, scan_run

    if isinstance(data, Tables):
        if qrels is not None or queries is not None:
            raise ConfigError("pass either Tables, or a run with its qrels (and queries), not both")
        return run(data, plan, buckets=buckets, memory=memory, bucket_dir=bucket_dir)
    if qrels is None:
        raise ConfigError("evaluate() needs the judgments (`qrels`) of a run, or Tables")

    def opened(source, scan, read):
        if isinstance(source, Scan):
            return source
        if isinstance(source, pl.DataFrame):
            return read(source)
        return scan(source)

    if isinstance(data, (list, tuple)):  # several run files: read (and checked) together
        data = read_run(list(data))
    run_table = opened(data, scan_run, read_run)
    frames = {"ranking_rows": run_table, "judgments": opened(qrels, scan_qrels, read_qrels), "queries": queries}
    source = run_table.source if isinstance(run_table, Scan) else "run"
    template = Tables(queries=None, judgments=pl.DataFrame(), ranking_source=source)
    return partials_in_buckets(frames, plan, buckets=buckets, memory=memory, bucket_dir=bucket_dir, template=template,
                               finish=finalize)


def make_plan(
    metrics: Iterable[str | Metric] | Mapping[str, Iterable[str | Metric]] = (),
    *,
    subsets: Mapping[str, str | Subset] | None = None,
    slices: Mapping[str, Sequence[str]] | None = None,
    units: Mapping[str, Sequence[str]] | None = None,
    weight: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    relevance_threshold: int = 1,
    empty: EmptyPolicy = "skip",
    missing: MissingPolicy = "error",
    max_depth: int | None = None,
    score_precision: ScorePrecision = "float64",
    across_folds: str | None = None,
    grouping_sets: Mapping[str, Sequence[str]] | None = None,
    bootstrap: Bootstrap | None = None,
) -> Plan:
    """The :class:`Plan` of :func:`evaluate`'s keyword arguments (see there), for the doors that
    run the engine on parts of the data (:mod:`evalframe.engine.kernel`)."""
    check_argument_types(metrics, subsets=subsets, slices=slices, units=units, parameters=parameters,
                         grouping_sets=grouping_sets)
    if slices is not None and grouping_sets is not None:
        raise ConfigError("pass `slices` or `grouping_sets` (the same thing), not both")
    chosen = slices if slices is not None else grouping_sets
    from evalframe.engine.derive import split_state_parameters

    state_thresholds, parameters = split_state_parameters(parameters)
    return Plan(
        groups=build_groups(metrics, subsets, parameters=parameters),
        slices={name: tuple(keys) for name, keys in (chosen or {"overall": ()}).items()},
        units={name: tuple(keys) for name, keys in (units or {}).items()},
        weight=weight,
        across_folds=across_folds,
        relevance_threshold=relevance_threshold,
        empty=empty,
        missing=missing,
        max_depth=max_depth,
        score_precision=score_precision,
        bootstrap=bootstrap,
        parameters=dict(parameters or {}),
        state_thresholds=state_thresholds,
    )
