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
from evalframe.engine.result import Evaluation
from evalframe.engine.slicing import rows_of_slices, slice_dtype
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, Metric, SetMetric
from evalframe.metrics.keyed_sums import KeyedSumsMetric, finalize_sharing
from evalframe.engine.bootstrap import Bootstrap


def finalize(partials: Partials, *, tables: Tables | None = None) -> Evaluation:
    """The :class:`~evalframe.engine.result.Evaluation` of (possibly merged) partials."""
    # The long per-unit values beside the summary's tasks (their Python and Polars work overlap).
    (per_unit_long, skipped), summary = in_order([lambda: _per_unit_values(partials), lambda: _summary(partials)])
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
        per_unit_frame=per_unit_long,
        skipped=skipped,
        plan=partials.plan,
        units=partials.units,
        queries=partials.queries,
        inputs=tables,
        notes=partials.notes,
    )


def _summary(partials: Partials) -> pl.DataFrame:
    """One row per (grouping set, slice, metric, subset): per-unit metrics from their moments and
    quantiles, set metrics from their states; then the across-folds rows."""
    plan = partials.plan
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    slice_keys = plan.slice_keys
    weighted = plan.weight is not None
    ordered_states: dict[tuple[int, str, object], pl.DataFrame] = {}

    def ordered_state(g: int, grouping: str, metric: SetMetric) -> pl.DataFrame:
        # Each state sorted once by its state keys (finalize does not depend on the order of the
        # rows; a stable sort keeps the order of rows with equal keys anyway): every slice's rows
        # are then in order too, so the metrics' per-slice sorts over their operating points or
        # bins find them sorted, a fraction of a sort's cost.
        key = (g, grouping, metric.state_id)
        if key not in ordered_states:
            state = partials.states[key]
            ordered_states[key] = state.sort(metric.state_keys, maintain_order=True) if metric.state_keys else state
        return ordered_states[key]

    def rows_of(g: int, unit: str, grouping: str, metrics: Sequence[Metric], labels: Mapping[str, str],
                notes: Mapping[str, str], quantile_aggregations: Sequence[pl.Expr]) -> list[pl.DataFrame]:
        """The summary rows of group ``g``'s ``metrics`` of ``unit`` in one grouping set (lazy
        plans collected at once)."""
        per_unit = [m for m in metrics if not isinstance(m, SetMetric)]
        set_metrics = [m for m in metrics if isinstance(m, SetMetric)]
        sizes = partials.sizes[(unit, grouping)].lazy()
        tables = []
        if per_unit:
            quantile_rows = _quantile_rows(partials.values[(g, unit)], per_unit, by[grouping], weighted=weighted,
                                           aggregations=quantile_aggregations)
            tables.append(aggregate.unit_summary(
                sizes, partials.moments[(g, unit, grouping)].lazy(), quantile_rows, per_unit, by=by[grouping], notes=notes
            ))
        if set_metrics:
            found = pl.concat([
                table.select(*by[grouping], pl.lit(metric.name).alias("metric"), pl.col("n").cast(pl.Int64),
                             pl.col("value").cast(pl.Float64), pl.col("note").cast(pl.String))
                for metric, table in _finalized(set_metrics, lambda m: ordered_state(g, grouping, m), by[grouping])
            ])
            tables.append(aggregate.set_summary(sizes, found, by=by[grouping]))
        rows = [
            table.with_columns(
                grouping=pl.lit(grouping),
                unit=pl.lit(unit),
                subset=pl.col("metric").replace_strict(labels, default=None, return_dtype=pl.String),
                *(pl.lit(None, dtype=slice_dtype(partials.queries.schema[k])).alias(k) for k in slice_keys if k not in by[grouping]),
            ).select("grouping", SYSTEM, *slice_keys, "metric", "unit", "subset", *aggregate.SUMMARY_STATS, "note")
            for table in tables
        ]
        return pl.collect_all(rows, engine="in-memory") if rows else []

    # One task per (metric group, unit, grouping set), two at a time (:func:`~evalframe._threads.in_order`):
    # one task's Python builds its plans while Polars runs another's, so neither core idles; each
    # plan's result is the one it gives alone, and the rows keep the tasks' order.
    tasks = []
    for g, group in enumerate(plan.groups):
        labels = {m.name: group.subset_text(m) for m in group.metrics}
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            metrics = [m for m in group.metrics if m.unit == unit]
            per_unit = [m for m in metrics if not isinstance(m, SetMetric)]
            notes = {m.name: note[1] for m in per_unit if (note := m.note()) is not None}
            quantile_aggregations = aggregate.quantile_aggregations(per_unit, weighted=weighted)
            tasks += [partial(rows_of, g, unit, grouping, metrics, labels, notes, quantile_aggregations)
                      for grouping in plan.slices if partials.applies[(unit, grouping)]]
    rows = [frame for frames in in_order(tasks) for frame in frames]
    summary = aggregate.order_summary(pl.concat(rows, how="vertical_relaxed"), [m.name for m in plan.metrics], plan.slices, slice_keys)
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

def _per_unit_values(partials: Partials) -> tuple[pl.DataFrame | pl.LazyFrame, pl.DataFrame]:
    """The long per-unit values of every group and unit, and the skipped units per system,
    unit, metric and reason (null values, and units outside the group's subset).

    In memory the long values are a DataFrame. On the bucket path (per-unit values kept on
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
        # The long values and the skip counts of every group and unit: lazy plans, collected at once.
        collected = pl.collect_all([*long_parts, *skipped], engine="in-memory") if long_parts or skipped else []
        long_parts, skipped = collected[:len(long_parts)], collected[len(long_parts):]
        per_unit_long = pl.concat(long_parts, how="diagonal_relaxed") if long_parts else _empty_long()
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
        evaluation = finalize(compute_partials(tables, plan), tables=tables)
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
