"""The evaluation engine (DESIGN §3): one stage list behind ``evaluate()`` and every pipeline.

    read → validate → derive → per-unit values → partials → merge → summary → across folds

:class:`Plan` says what to compute (metric groups bound to subsets, slices, units, weight,
policies); :func:`compute_partials` runs the stages up to mergeable :class:`Partials` for one set
of tables; :func:`finalize` turns (possibly merged) partials into an
:class:`~evalframe.engine.result.Evaluation`. :func:`run` is the two in a row, and
:func:`evaluate` the Python door: it builds a plan from keyword arguments. A pipeline file is
the other door (:mod:`evalframe.pipeline`): it builds the same plan from YAML.

Derived columns of the queries table: ``n_relevant`` (judged items with a grade at or above the
relevance threshold) when a metric or subset needs it, and the unit weight
(:data:`~evalframe.metrics.base.WEIGHT`, from the plan's ``weight`` column, else 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.data.subsets import Subset
from evalframe.data.tables import Tables
from evalframe.data.units import (
    QUERY,
    QUERY_KEYS,
    SYSTEM,
    Units,
    slice_applies,
    unit_weights,
)
from evalframe.engine import aggregate
from evalframe.engine.per_unit import (
    coarse_unit_values,
    item_partials,
    long_values,
    query_unit_values,
)
from evalframe.engine.plan import (
    EmptyPolicy,
    MetricGroup,
    MissingPolicy,
    Plan,
    build_groups,
)
from evalframe.engine.ranking import QueryIndex, index_queries
from evalframe.engine.result import Evaluation
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.metrics.base import (
    WEIGHT,
    ItemMetric,
    Metric,
    QueryMetric,
    SetMetric,
    merge_states,
)

#: Query columns carried into the per-unit output for traceability when present.
TRACE_KEYS = ("post_id", "criterion_id", "fold")


@dataclass(frozen=True)
class Partials:
    """Mergeable partial results of one evaluation (DESIGN §3).

    Keys: ``g`` a metric group's position, ``unit`` a unit name, ``grouping`` a grouping set.

    - ``sizes[(unit, grouping)]``: every slice's keys and ``n_units`` (units of the slice, inside
      a subset or not);
    - ``values[(g, unit)]``: the per-unit values of the group's per-unit metrics (wide);
    - ``moments[(g, unit, grouping)]``: their moments per slice (:mod:`~evalframe.engine.aggregate`);
    - ``states[(g, grouping, state_id)]``: set-metric states per slice;
    - ``inside[(g, unit)]``: per system, the units inside the group's subset (for skip counts).

    Parts of the data split by unit evaluate to partials that :meth:`merge` into those of the
    whole: sizes, sums and states add, ``m2`` by the parallel-axis rule, values concatenate.
    """

    plan: Plan
    units: Units
    queries: pl.DataFrame
    applies: Mapping[tuple[str, str], bool]
    sizes: Mapping[tuple[str, str], pl.DataFrame]
    values: Mapping[tuple[int, str], pl.DataFrame]
    moments: Mapping[tuple[int, str, str], pl.DataFrame]
    states: Mapping[tuple[int, str, object], pl.DataFrame]
    inside: Mapping[tuple[int, str], pl.DataFrame]
    notes: tuple[str, ...] = ()

    def merge(self, *others: Partials) -> Partials:
        """The partials of the union of disjoint parts (same plan, units split between parts)."""
        parts = (self, *others)

        def added(frames: list[pl.DataFrame], keys: list[str]) -> pl.DataFrame:
            return pl.concat(frames, how="vertical_relaxed").group_by(keys, maintain_order=True).agg(pl.exclude(keys).sum())

        by = {grouping: [SYSTEM, *keys] for grouping, keys in self.plan.slices.items()}
        set_metrics = {(g, m.state_id): m for g, group in enumerate(self.plan.groups) for m in group.metrics if isinstance(m, SetMetric)}
        # A slice groups the units of the whole only if it groups those of every part.
        applies = {key: all(p.applies[key] for p in parts) for key in self.applies}
        return replace(
            self,
            queries=pl.concat([p.queries for p in parts], how="vertical_relaxed"),
            applies=applies,
            sizes={
                key: added([p.sizes[key] for p in parts], by[key[1]]) for key in self.sizes if applies[key]
            },
            values={key: pl.concat([p.values[key] for p in parts], how="vertical_relaxed") for key in self.values},
            moments={
                key: aggregate.merge_moments([p.moments[key] for p in parts], [*by[key[2]], "metric"])
                for key in self.moments
                if applies[key[1:]]
            },
            states={
                key: merge_states([p.states[key].lazy() for p in parts], by[key[1]], set_metrics[(key[0], key[2])].state_keys)
                .collect(engine="in-memory")
                for key in self.states
                if applies[(set_metrics[(key[0], key[2])].unit, key[1])]
            },
            inside={key: added([p.inside[key] for p in parts], [SYSTEM]) for key in self.inside},
            notes=tuple(dict.fromkeys(note for p in parts for note in p.notes)),
        )


# --- read / validate / derive ----------------------------------------------------------------


def _universe(tables: Tables, index: QueryIndex | None) -> pl.DataFrame:
    """The evaluated (system, query) pairs when no queries table is given: systems × judged queries."""
    systems = index.pairs.select(SYSTEM).unique(maintain_order=True) if index is not None else tables.ranked_pairs().select(SYSTEM).unique()
    judged = tables.judgments.select(pl.col("query_id").unique(maintain_order=True))
    return systems.join(judged, how="cross").sort(QUERY_KEYS)


def _check_missing(plan: Plan, tables: Tables, universe: pl.DataFrame, index: QueryIndex | None) -> list[str]:
    """Apply the ``missing`` policy to evaluated pairs the ranking does not list; notes."""
    ranked = index.pairs.select(QUERY_KEYS) if index is not None else tables.ranked_pairs()
    absent = universe.select(QUERY_KEYS).join(ranked, on=QUERY_KEYS, how="anti").sort(QUERY_KEYS)
    if absent.height == 0:
        return []
    if plan.missing == "error":
        problems = [
            Problem(None, None, NO_VALUE, f"query {query_id!r} is judged but system {system!r} retrieved nothing for it")
            for system, query_id in absent.head(20).iter_rows()
        ]
        if absent.height > 20:
            problems.append(Problem(None, None, NO_VALUE, f"{absent.height} (system, query) pairs in all are absent from the run"))
        problems.append(
            Problem(None, None, NO_VALUE, "to score such queries 0 pass missing='zero' (`evalframe trec -c`), or add them to the run")
        )
        raise InputError("run", problems)
    return [f"{absent.height} judged (system, query) pairs absent from the run were scored as empty rankings"]


def _ignored_run_rows(universe: pl.DataFrame, index: QueryIndex) -> list[str]:
    unjudged = index.pairs.join(universe.select("query_id").unique(), on="query_id", how="anti")
    if unjudged.height == 0:
        return []
    n_rows = unjudged.get_column("n_rows").sum()
    return [f"{n_rows} run rows of {unjudged.get_column('query_id').n_unique()} queries without judgments were ignored"]


def _weights(queries: pl.DataFrame, weight: str | None) -> pl.Series:
    """The :data:`WEIGHT` column; bad weights are an :class:`InputError` naming the queries.

    A text column (a CSV's extra column) is read as numbers; every weight must be a finite
    number >= 0.
    """
    if weight is None:
        return pl.repeat(1.0, queries.height, dtype=pl.Float64, eager=True).alias(WEIGHT)
    column = queries.get_column(weight)
    if column.dtype == pl.String:
        values = column.str.strip_chars().cast(pl.Float64, strict=False)
    elif column.dtype.is_numeric():
        values = column.cast(pl.Float64)
    else:
        raise InputError("queries table", Problem(None, weight, NO_VALUE, f"weights must be numbers, found dtype {column.dtype}"))
    bad = (values.is_null() | values.is_nan() | values.is_infinite() | (values < 0)).fill_null(True)
    if bad.any():
        keys = queries.select(QUERY_KEYS)
        problems = [
            Problem(f"query {keys.row(i)[1]!r} of system {keys.row(i)[0]!r}", weight, column[i], "is not a finite number >= 0")
            for i in bad.arg_true().head(20).to_list()
        ]
        if bad.sum() > 20:
            problems.append(Problem(None, weight, NO_VALUE, f"{bad.sum()} weights in all are not finite numbers >= 0"))
        raise InputError("queries table", problems)
    return values.alias(WEIGHT)


def check_columns(plan: Plan, columns: Sequence[str], units: Units) -> None:
    """Every column the plan names must be in the queries table: one error listing them all."""
    have = set(columns)
    problems = []

    def need(names: Iterable[str], what: str) -> None:
        for name in names:
            if name not in have:
                problems.append(Problem(what, None, NO_VALUE, f"names column `{name}`, which the queries table does not have"))

    for grouping, keys in plan.slices.items():
        need(keys, f"slices.{grouping}")
    if plan.weight is not None:
        need([plan.weight], "weight")
    for unit, keys in units.keys.items():
        need(keys, f"units.{unit}")
    for group in plan.groups:
        need(group.subset.columns(), f"subsets.{group.subset.name}")
        for metric in group.metrics:
            need(metric.required_columns.get("queries", ()), f"metric `{metric.name}`")
            if metric.unit not in units.keys:
                problems.append(Problem(f"metric `{metric.name}`", None, NO_VALUE,
                                        f"is computed per `{metric.unit}`, a unit not declared (units: {sorted(units.keys)})"))
    if problems:
        problems.append(Problem(None, None, NO_VALUE, f"the queries table has columns {sorted(have)}"))
        raise ConfigError.of(problems)


def derive_queries(plan: Plan, tables: Tables) -> tuple[pl.DataFrame, QueryIndex | None, list[str]]:
    """The validated queries table with ``n_relevant`` where needed, the ranking's index and notes."""
    item_groups = [group for group in plan.groups if any(isinstance(m, ItemMetric) for m in group.metrics)]
    index = index_queries(tables.ranking_rows) if tables.ranking_rows is not None and item_groups else None
    notes = list(tables.notes)
    queries = tables.queries if tables.queries is not None else _universe(tables, index)
    queries = conform(queries, load_contract("queries"), source="queries table")
    if tables.queries is not None and item_groups:
        ignored = tables.judgments.join(queries.select("query_id").unique(), on="query_id", how="anti")
        if ignored.height and tables.ranking_rows is not None:
            notes.append(f"{ignored.get_column('query_id').n_unique()} judged queries are not in the queries table and were ignored")
    needs_relevant = item_groups or any("n_relevant" in group.subset.columns() for group in plan.groups)
    if needs_relevant and "n_relevant" not in queries.columns:
        relevant = (
            tables.judgments.filter(pl.col("relevance") >= plan.relevance_threshold)
            .group_by("query_id")
            .agg(n_relevant=pl.len().cast(pl.Int64))
        )
        queries = queries.join(relevant, on="query_id", how="left", maintain_order="left").with_columns(
            pl.col("n_relevant").fill_null(0)
        )
    if item_groups:
        if not tables.has_ranking:
            raise ConfigError(f"metrics {[m.name for g in item_groups for m in g.metrics if isinstance(m, ItemMetric)]} need a ranking")
        notes += _check_missing(plan, tables, queries, index)
        if index is not None:
            notes += _ignored_run_rows(queries, index)
    return queries, index, notes


# --- per-unit values and partials --------------------------------------------------------------


def bind_units(plan: Plan, units: Units) -> Plan:
    """The plan with each set metric of a coarser unit told its unit's key columns.

    A set metric that counts units (a post's criteria are several rows) declares a dataclass
    field ``unit_keys``; the engine sets it from the unit's declaration (``units: {post: [id]}``).
    """
    def bound(metric: Metric) -> Metric:
        keys = units.keys.get(metric.unit)
        if metric.unit == QUERY or keys is None or "unit_keys" not in getattr(metric, "__dataclass_fields__", {}):
            return metric
        return replace(metric, unit_keys=tuple(keys))

    groups = tuple(MetricGroup(group.subset, tuple(bound(m) for m in group.metrics)) for group in plan.groups)
    return replace(plan, groups=groups)


def prepare(tables: Tables, plan: Plan) -> tuple[Plan, pl.DataFrame, Units, QueryIndex | None, list[str]]:
    """Validate and derive (the stages before any metric): the plan bound to the data's units,
    the queries table, the units, the ranking's index and notes. Raises on bad input or a plan
    that names missing columns."""
    queries, index, notes = derive_queries(plan, tables)
    units = Units.resolve(plan.units, queries.columns)
    plan = bind_units(plan, units)
    check_columns(plan, queries.columns, units)
    return plan, queries.with_columns(_weights(queries, plan.weight)), units, index, notes


def compute_partials(tables: Tables, plan: Plan) -> Partials:
    """Run the stages up to mergeable partials (module docstring)."""
    plan, queries, units, index, notes = prepare(tables, plan)
    used_units = list(dict.fromkeys([QUERY, *(m.unit for m in plan.metrics)]))

    # Which slices group which units; the unit-level columns each unit carries.
    applies: dict[tuple[str, str], bool] = {}
    carried: dict[str, list[str]] = {}
    for unit in used_units:
        keys = units.key_columns(unit)
        constant = [key for key in dict.fromkeys([*TRACE_KEYS, *plan.slice_keys]) if key in queries.columns and key not in keys
                    and slice_applies(queries, keys, [key])]
        carried[unit] = [*keys, *constant]
        for grouping, slice_keys in plan.slices.items():
            applies[(unit, grouping)] = all(key in carried[unit] for key in slice_keys)
            if not applies[(unit, grouping)]:
                varying = ", ".join(f"`{key}`" for key in slice_keys if key not in carried[unit])
                notes.append(f"slice `{grouping}` does not apply to unit `{unit}` ({varying} varies within a {unit}): no rows")
        if unit != QUERY and plan.weight is not None:
            unit_weights(queries, unit, keys, WEIGHT, label=plan.weight)  # raises when a unit's queries disagree

    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    sizes = {}
    for unit in used_units:
        unit_rows = queries.select(carried[unit]).unique(subset=units.key_columns(unit), maintain_order=True) if unit != QUERY else queries
        for grouping in plan.slices:
            if applies[(unit, grouping)]:
                sizes[(unit, grouping)] = unit_rows.group_by(by[grouping], maintain_order=True).agg(n_units=pl.len().cast(pl.Int64))

    values, moments, inside_counts, state_plans = {}, {}, {}, {}
    weighted = plan.weight is not None
    for g, group in enumerate(plan.groups):
        inside = queries.filter(group.subset.condition())
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            metrics = [m for m in group.metrics if m.unit == unit]
            per_unit = [m for m in metrics if not isinstance(m, SetMetric)]
            if per_unit:
                if unit == QUERY:
                    item = [m for m in per_unit if isinstance(m, ItemMetric)]
                    items = item_partials(tables, inside, item, relevance_threshold=plan.relevance_threshold,
                                          max_depth=plan.max_depth, index=index) if item else None
                    wide = query_unit_values(inside, per_unit, carry=carried[unit], items=items, empty=plan.empty)
                else:
                    wide = coarse_unit_values(inside, [m for m in per_unit if isinstance(m, QueryMetric)],
                                              unit_keys=units.key_columns(unit), carry=carried[unit], empty=plan.empty)
                values[(g, unit)] = wide
                inside_counts[(g, unit)] = wide.group_by(SYSTEM, maintain_order=True).agg(n_units=pl.len().cast(pl.Int64))
                for grouping in plan.slices:
                    if applies[(unit, grouping)]:
                        moments[(g, unit, grouping)] = aggregate.moments(wide, per_unit, by[grouping], weighted=weighted)
            set_metrics = [m for m in metrics if isinstance(m, SetMetric)]
            for grouping in plan.slices:
                if not applies[(unit, grouping)]:
                    continue
                for metric in set_metrics:
                    key = (g, grouping, metric.state_id)
                    if key not in state_plans:
                        state_plans[key] = metric.state(inside.lazy(), by[grouping])
    states = {}
    if state_plans:
        # In memory: the streaming engine adds floats in an order that varies from run to run.
        collected = pl.collect_all(list(state_plans.values()), engine="in-memory")
        states = dict(zip(state_plans, collected, strict=True))
    return Partials(
        plan=plan, units=units, queries=queries, applies=applies, sizes=sizes, values=values, moments=moments,
        states=states, inside=inside_counts, notes=tuple(dict.fromkeys(notes)),
    )


# --- finalize -------------------------------------------------------------------------------


def _subset_text(group: MetricGroup, metric: Metric) -> str:
    return group.subset.description if group.subset.where else metric.subset


def finalize(partials: Partials, *, tables: Tables | None = None):
    """The :class:`~evalframe.engine.result.Evaluation` of (possibly merged) partials."""
    plan, units = partials.plan, partials.units
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    slice_keys = plan.slice_keys
    weighted = plan.weight is not None
    rows = []
    for g, group in enumerate(plan.groups):
        labels = {m.name: _subset_text(group, m) for m in group.metrics}
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            metrics = [m for m in group.metrics if m.unit == unit]
            per_unit = [m for m in metrics if not isinstance(m, SetMetric)]
            set_metrics = [m for m in metrics if isinstance(m, SetMetric)]
            notes = {m.name: note[1] for m in per_unit if isinstance(m, QueryMetric) and (note := m.note()) is not None}
            for grouping in plan.slices:
                if not partials.applies[(unit, grouping)]:
                    continue
                sizes = partials.sizes[(unit, grouping)]
                tables_of_grouping = []
                if per_unit:
                    wide = partials.values[(g, unit)]
                    quantile_rows = aggregate.quantiles(wide, per_unit, by[grouping], weighted=weighted)
                    tables_of_grouping.append(aggregate.unit_summary(
                        sizes, partials.moments[(g, unit, grouping)], quantile_rows, per_unit, by=by[grouping], notes=notes
                    ))
                if set_metrics:
                    found = pl.concat([
                        metric.finalize(partials.states[(g, grouping, metric.state_id)].lazy(), by[grouping])
                        .select(*by[grouping], pl.lit(metric.name).alias("metric"), pl.col("n").cast(pl.Int64),
                                pl.col("value").cast(pl.Float64), pl.col("note").cast(pl.String))
                        for metric in set_metrics
                    ]).collect(engine="in-memory")
                    tables_of_grouping.append(aggregate.set_summary(sizes, found, by=by[grouping]))
                for table in tables_of_grouping:
                    rows.append(table.with_columns(
                        grouping=pl.lit(grouping),
                        unit=pl.lit(unit),
                        subset=pl.col("metric").replace_strict(labels, default=None, return_dtype=pl.String),
                        *(pl.lit(None, dtype=partials.queries.schema[k]).alias(k) for k in slice_keys if k not in by[grouping]),
                    ).select("grouping", SYSTEM, *slice_keys, "metric", "unit", "subset", *aggregate.SUMMARY_STATS, "note"))
    summary = aggregate.order_summary(pl.concat(rows, how="vertical_relaxed"), [m.name for m in plan.metrics], plan.slices, slice_keys)
    if plan.across_folds is not None:
        summary = pl.concat([summary, aggregate.across_folds(summary, plan.fold_grouping, slice_keys)])

    long_parts, skipped = [], []
    for (g, unit), wide in partials.values.items():
        group = plan.groups[g]
        per_unit = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
        keys = [c for c in wide.columns if c in set(units.key_columns(unit)) | set(slice_keys) | set(TRACE_KEYS)]
        long = long_values(wide, per_unit, keys).with_columns(unit=pl.lit(unit), subset=pl.lit(group.subset.name))
        long_parts.append(long)
        skipped.append(long.filter(pl.col("skip_reason").is_not_null()).group_by(SYSTEM, "unit", "metric", "skip_reason").agg(count=pl.len().cast(pl.Int64)))
        applicable = [grouping for grouping in plan.slices if partials.applies[(unit, grouping)]]
        if not applicable:
            continue
        outside = (
            partials.sizes[(unit, applicable[0])].group_by(SYSTEM).agg(pl.col("n_units").sum())
            .join(partials.inside[(g, unit)], on=SYSTEM, how="left", suffix="_inside")
            .select(SYSTEM, count=pl.col("n_units") - pl.col("n_units_inside").fill_null(0))
            .filter(pl.col("count") > 0)
        )
        names = pl.DataFrame({"metric": [m.name for m in per_unit]}, schema={"metric": pl.String})
        skipped.append(outside.join(names, how="cross").select(
            SYSTEM, pl.lit(unit).alias("unit"), "metric", pl.lit(group.subset.outside_reason).alias("skip_reason"), "count"
        ))
    per_unit_long = pl.concat(long_parts, how="diagonal_relaxed") if long_parts else _empty_long()
    skipped_table = (
        pl.concat(skipped, how="vertical_relaxed").sort(SYSTEM, "unit", "metric", "skip_reason") if skipped else _empty_skipped()
    )
    return Evaluation(
        summary=summary,
        per_unit_values=per_unit_long,
        skipped=skipped_table,
        plan=plan,
        units=units,
        queries=partials.queries,
        tables=tables,
        notes=partials.notes,
    )


def _empty_long() -> pl.DataFrame:
    return pl.DataFrame(schema={SYSTEM: pl.String, "query_id": pl.String, "metric": pl.String, "value": pl.Float64,
                                "skip_reason": pl.String, "unit": pl.String, "subset": pl.String})


def _empty_skipped() -> pl.DataFrame:
    return pl.DataFrame(schema={SYSTEM: pl.String, "unit": pl.String, "metric": pl.String, "skip_reason": pl.String,
                                "count": pl.Int64})


def run(tables: Tables, plan: Plan):
    """Evaluate ``tables`` as ``plan`` says: :func:`finalize` of :func:`compute_partials`."""
    return finalize(compute_partials(tables, plan), tables=tables)


def evaluate(
    data: Tables | pl.DataFrame,
    qrels: pl.DataFrame | None = None,
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
    across_folds: str | None = None,
    grouping_sets: Mapping[str, Sequence[str]] | None = None,
):
    """Evaluate metrics of any level on ``data``, per unit and summarised per slice.

    Parameters
    ----------
    data
        :class:`~evalframe.data.tables.Tables` (e.g. from :func:`evalframe.read_per_query`), or a
        ``ranking`` table (from :func:`evalframe.read_run`) with its judgments as ``qrels``.
    qrels
        ``judgments`` table (from :func:`evalframe.read_qrels`) when ``data`` is a run.
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
        name does not set them.
    relevance_threshold
        Items with relevance >= this grade are relevant (trec_eval ``-l``).
    empty, missing
        ``empty="zero"`` scores undefined per-unit values 0 (trec_eval); ``missing="zero"`` scores
        a judged query absent from a system's run as an empty ranking (trec_eval ``-c``).
    max_depth
        Use only the first ``max_depth`` items of each ranking (trec_eval ``-M``).
    across_folds
        A fold key (a slice must group by it alone): adds mean ± std rows of per-fold values.

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
    if isinstance(data, Tables):
        if qrels is not None or queries is not None:
            raise ConfigError("pass either Tables, or a run with its qrels (and queries), not both")
        tables = data
    else:
        if qrels is None:
            raise ConfigError("evaluate() needs the judgments (`qrels`) of a run, or Tables")
        tables = Tables.from_run(data, qrels, queries)
    if slices is not None and grouping_sets is not None:
        raise ConfigError("pass `slices` or `grouping_sets` (the same thing), not both")
    chosen = slices if slices is not None else grouping_sets
    plan = Plan(
        groups=build_groups(metrics, subsets, parameters=parameters),
        slices={name: tuple(keys) for name, keys in (chosen or {"overall": ()}).items()},
        units={name: tuple(keys) for name, keys in (units or {}).items()},
        weight=weight,
        across_folds=across_folds,
        relevance_threshold=relevance_threshold,
        empty=empty,
        missing=missing,
        max_depth=max_depth,
        parameters=dict(parameters or {}),
    )
    return run(tables, plan)
