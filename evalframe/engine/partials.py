"""Mergeable partial results (DESIGN §3): everything an evaluation needs, in sums that add up.

:func:`compute_partials` runs the stages of one set of tables up to :class:`Partials`; parts of
the data split by unit give partials that :meth:`Partials.merge` combines into those of the
whole, which :func:`evalframe.engine.evaluation.finalize` turns into the result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from evalframe._threads import in_order
from evalframe.data.tables import Tables
from evalframe.data.units import QUERY, SYSTEM, Units, constant_within, unit_weights
from evalframe.engine import aggregate
from evalframe.engine.derive import prepare
from evalframe.engine.per_unit import (
    coarse_unit_values,
    dense,
    item_partials,
    query_unit_values,
)
from evalframe.engine.plan import Plan
from evalframe.engine.replicate_sums import ReplicateSums
from evalframe.engine.slicing import rows_of_slices, slice_codes
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.metrics.base import (
    WEIGHT,
    ItemMetric,
    QueryMetric,
    SetMetric,
    all_weights_one,
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
    - ``values[(g, unit)]``: the per-unit values of the group's per-unit metrics (wide; a
      LazyFrame over files when the bucket path keeps them on disk, :mod:`~evalframe.engine.buckets`);
    - ``moments[(g, unit, grouping)]``: their moments per slice (:mod:`~evalframe.engine.aggregate`);
    - ``states[(g, grouping, state_id)]``: set-metric states per slice;
    - ``inside[(g, unit)]``: per system, the units inside the group's subset (for skip counts);
    - ``replicate_sums[(g, unit, grouping)]``: with a bootstrap, the per-unit metrics' exact
      replicate sums per slice (:mod:`~evalframe.engine.replicate_sums`), which add.

    Parts of the data split by unit evaluate to partials that :meth:`merge` into those of the
    whole: sizes, sums and states add, ``m2`` by the parallel-axis rule, values concatenate.
    """

    plan: Plan
    units: Units
    queries: pl.DataFrame
    applies: Mapping[tuple[str, str], bool]
    sizes: Mapping[tuple[str, str], pl.DataFrame]
    values: Mapping[tuple[int, str], pl.DataFrame | pl.LazyFrame]
    moments: Mapping[tuple[int, str, str], pl.DataFrame]
    states: Mapping[tuple[int, str, object], pl.DataFrame]
    inside: Mapping[tuple[int, str], pl.DataFrame]
    notes: tuple[str, ...] = ()
    replicate_sums: Mapping[tuple[int, str, str], ReplicateSums] = field(default_factory=dict)

    def merge(self, *others: Partials) -> Partials:
        """The partials of the union of disjoint parts (same plan, units split between parts).

        Raises :class:`~evalframe.errors.InputError` when a unit has queries in two parts
        (:func:`check_disjoint_units`): it would be counted twice, never silently.
        """
        parts = (self, *others)
        check_disjoint_units(parts)

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
            values={key: _concat_common([p.values[key] for p in parts]) for key in self.values},
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
            replicate_sums={
                key: sums.merge(*(p.replicate_sums[key] for p in parts[1:]))
                for key, sums in self.replicate_sums.items() if applies[key[1:]]
            },
            notes=tuple(dict.fromkeys(note for p in parts for note in p.notes)),
        )


def _concat_common(frames: list[pl.DataFrame | pl.LazyFrame]) -> pl.DataFrame | pl.LazyFrame:
    """The rows of ``frames`` in the columns they all have (in the first's order): a slice key
    that is constant within the units of one part but not of another is carried by the first
    only, and does not apply to the whole (``applies`` above), which does not carry it."""
    names = [frame.collect_schema().names() for frame in frames]  # frames or lazy scans of values kept on disk
    common = [name for name in names[0] if all(name in other for other in names[1:])]
    return pl.concat([frame.select(common) for frame in frames], how="vertical_relaxed")


def _units_to_check(plan: Plan) -> list[str]:
    """Units whose queries must all be in one part: the query, and every coarser unit of a
    metric, except a unit all of whose metrics are set metrics whose state merges exactly at
    the query level (:attr:`~evalframe.metrics.base.SetMetric.state_merges_by_query`)."""
    found = [QUERY]
    for unit in dict.fromkeys(m.unit for m in plan.metrics):
        of_unit = [m for m in plan.metrics if m.unit == unit]
        if unit != QUERY and not all(isinstance(m, SetMetric) and m.state_merges_by_query for m in of_unit):
            found.append(unit)
    return found


#: Units with queries in several parts listed one by one in the merge error (the rest are counted).
_LISTED_SPLIT_UNITS = 5


def check_disjoint_units(parts: tuple[Partials, ...]) -> None:
    """Refuse to merge parts that share a unit (DESIGN §3, "Mergeable partials").

    A unit (per system) whose queries lie in two or more parts would have its per-unit value
    computed from a piece of it in each part, and be counted once per part: the merged summary
    would silently differ from the whole's. The error names each such unit (its key values) and
    the parts (1-based, in merge order) that hold its queries.
    """
    if len(parts) < 2:
        return
    first = parts[0]
    problems: list[Problem] = []
    for unit in _units_to_check(first.plan):
        keys = list(dict.fromkeys([SYSTEM, *first.units.key_columns(unit)]))
        if not all(all(k in p.queries.columns for k in keys) for p in parts):
            continue
        located = pl.concat([
            p.queries.select(keys).unique().with_columns(pl.lit(position, dtype=pl.Int64).alias("_part"))
            for position, p in enumerate(parts, 1)
        ], how="vertical_relaxed")
        shared = (
            located.group_by(keys).agg(pl.col("_part").unique().sort())
            .filter(pl.col("_part").list.len() > 1)
            .sort(keys, nulls_last=True)
        )
        for row in shared.head(_LISTED_SPLIT_UNITS).iter_rows(named=True):
            in_parts = row.pop("_part")
            named = ", ".join(f"{k}={v!r}" for k, v in row.items())
            problems.append(Problem(None, None, NO_VALUE,
                                    f"{unit} ({named}) has queries in parts {', '.join(map(str, in_parts))}"))
        if shared.height > _LISTED_SPLIT_UNITS:
            problems.append(Problem(None, None, NO_VALUE,
                                    f"{shared.height - _LISTED_SPLIT_UNITS:,} more {unit} units have queries in several parts"))
    if problems:
        raise InputError("merged partials", problems,
                         hint="split the data by whole units (every query of a unit in one part), e.g. by the unit's key "
                              "columns, so that no unit is counted twice")


def _bootstrap_columns(plan: Plan) -> list[str]:
    """Columns the bootstrap resamples by (or stratifies on), carried with each unit's values."""
    settings = plan.bootstrap
    if settings is None:
        return []
    return [*(settings.unit_columns or ()), *([settings.strata] if settings.strata else [])]


def _unit_facts(plan: Plan, queries: pl.DataFrame, units: Units) -> tuple[dict, dict, list[str]]:
    """Which slices group which units, the columns each unit carries, and notes.

    A slice groups a unit when each of its keys has one value per unit (read off the data); a
    coarser unit's queries must share their weight.
    """
    applies: dict[tuple[str, str], bool] = {}
    carried: dict[str, list[str]] = {}
    notes: list[str] = []
    for unit in dict.fromkeys([QUERY, *(m.unit for m in plan.metrics)]):
        keys = units.key_columns(unit)
        constant = constant_within(queries, keys, [key for key in dict.fromkeys([*TRACE_KEYS, *plan.slice_keys, *_bootstrap_columns(plan)])
                                                   if key in queries.columns and key not in keys])
        carried[unit] = [*keys, *constant]
        for grouping, slice_keys in plan.slices.items():
            applies[(unit, grouping)] = all(key in carried[unit] for key in slice_keys)
        # one note per unit (said once per run), naming every slice that does not group it
        left_out = [grouping for grouping in plan.slices if not applies[(unit, grouping)]]
        if left_out:
            varying = ", ".join(dict.fromkeys(f"`{key}`" for grouping in left_out for key in plan.slices[grouping]
                                              if key not in carried[unit]))
            slices = ", ".join(f"`{grouping}`" for grouping in left_out)
            notes.append(f"slice{'s' if len(left_out) > 1 else ''} {slices} do{'es' if len(left_out) == 1 else ''} not apply "
                         f"to unit `{unit}` ({varying} var{'y' if ',' in varying else 'ies'} within a {unit}): no rows")
        if unit != QUERY and plan.weight is not None:
            unit_weights(queries, unit, keys, WEIGHT, label=plan.weight)  # raises when a unit's queries disagree
    return applies, carried, notes


def check_builds(plan: Plan) -> None:
    """Build each per-unit metric's expressions once (nothing is computed), so a metric that cannot
    be built stops the run with its :class:`~evalframe.errors.ConfigError` before any metric
    group's data work: the groups run two at a time (:func:`~evalframe._threads.in_order`), and a
    collect error of one group must not come before a configuration error of another. Built here:
    ``expr()`` (an item metric's ``partials()``, ``ideal_partials()`` and ``value()``),
    ``skip_reason()`` and ``note()``, about 40 µs a metric; and the rule of units: a metric of a
    coarser unit may not declare its own subset. A set metric's state is not built twice: it is
    shared by the metrics of one ``state_id`` and built once per grouping set, first thing in its
    group's task (an ROC state's plan costs ~14 ms). So with two misconfigured metrics, a per-unit
    metric's error is the one reported even when a set metric whose state fails comes before it;
    either is reported before any data work."""
    for metric in plan.metrics:
        if isinstance(metric, SetMetric):
            continue
        if metric.unit != QUERY and metric.subset_where is not None:
            msg = f"metric `{metric.name}` of unit `{metric.unit}` declares its own subset; only query-unit metrics may"
            raise ConfigError(msg)
        if isinstance(metric, ItemMetric):
            metric.partials(), metric.ideal_partials(), metric.value()
        else:
            metric.expr()
        metric.skip_reason(), metric.note()


def compute_partials(tables: Tables, plan: Plan, *, on_group: Callable[..., None] | None = None) -> Partials:
    """Run the stages up to mergeable partials (module docstring).

    ``on_group(plan, applies, g, values, states)`` is called with each metric group's per-unit
    values and set-metric states (keyed as in :class:`Partials`)
    as soon as they are collected, on the thread that collected them: the engine begins the
    group's summary there, beside the next groups' partials (:func:`evalframe.engine.evaluation.run`)."""
    plan, queries, units, index, notes = prepare(tables, plan)
    check_builds(plan)  # before the groups' tasks (of which one may fail collecting first)
    queries = dense(queries)  # no broadcast column: values independent of the part's size (per_unit.dense)
    applies, carried, unit_notes = _unit_facts(plan, queries, units)
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    # The rows grouped by an integer code per grouping set of several keys (slicing.slice_codes):
    # the same groups, rows and values, without hashing the keys' strings at every group-by.
    coded, codes = slice_codes(queries, by)
    # Each unit carries the codes of the grouping sets that group it (constant within it, as their keys are).
    coded_carry = {unit: [*columns, *codes.of([g for g in plan.slices if applies[(unit, g)]])]
                   for unit, columns in carried.items()}
    group_keys = {grouping: codes.group_keys(grouping, keys) for grouping, keys in by.items()}
    code_columns = codes.of(list(plan.slices))

    def slice_sizes() -> dict:
        """Every slice's keys and ``n_units``, per (unit, grouping set): lazy plans collected at once."""
        plans = {}
        for unit, columns in coded_carry.items():
            unit_rows = coded.lazy() if unit == QUERY else (
                coded.lazy().select(columns).unique(subset=units.key_columns(unit), maintain_order=True))
            for grouping in plan.slices:
                if applies[(unit, grouping)]:
                    sliced = rows_of_slices(unit_rows, group_keys[grouping])
                    sizes = sliced.group_by(group_keys[grouping], maintain_order=True).agg(n_units=pl.len().cast(pl.Int64))
                    plans[(unit, grouping)] = codes.with_keys(sizes, grouping)
        return dict(zip(plans, pl.collect_all(list(plans.values()), engine="in-memory"), strict=True)) if plans else {}

    weighted = plan.weight is not None

    def partials_of_group(g: int, group) -> tuple[dict, dict]:
        """The group's per-unit values, and its collected plans keyed ``(kind, g, ...)``."""
        inside = coded.filter(group.subset.condition())  # the queries of the group's subset, with their codes
        # Set-metric states: one per (grouping set, state_id), shared by the metrics that read
        # it (in memory: streaming sums floats in a varying order), of the queries as they are.
        plans = {}
        rows = inside.drop(code_columns)
        with all_weights_one(not weighted):  # no weight column: every weight is 1, counts are plain counts
            for metric in (m for m in group.metrics if isinstance(m, SetMetric)):
                for grouping in plan.slices:
                    key = ("state", g, grouping, metric.state_id)
                    if applies[(metric.unit, grouping)] and key not in plans:  # built once per shared state
                        plans[key] = metric.state(rows_of_slices(rows.lazy(), by[grouping]), by[grouping])
        values = {}
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            per_unit = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
            if not per_unit:
                continue
            if unit == QUERY:
                item = [m for m in per_unit if isinstance(m, ItemMetric)]
                items = item_partials(tables, inside, item, relevance_threshold=plan.relevance_threshold,
                                      max_depth=plan.max_depth, score_precision=plan.score_precision,
                                      index=index) if item else None
                wide = query_unit_values(inside, per_unit, carry=coded_carry[unit], items=items, empty=plan.empty)
            else:
                wide = coarse_unit_values(inside, [m for m in per_unit if isinstance(m, QueryMetric)],
                                          unit_keys=units.key_columns(unit), carry=coded_carry[unit], empty=plan.empty)
            values[(g, unit)] = wide.drop(code_columns, strict=False)  # the values as carried
            plans[("inside", g, unit)] = wide.lazy().group_by(SYSTEM, maintain_order=True).agg(n_units=pl.len().cast(pl.Int64))
            aggregations = aggregate.moment_aggregations(wide.lazy().collect_schema().names(), per_unit, weighted=weighted)
            for grouping in plan.slices:
                if applies[(unit, grouping)]:
                    keys = group_keys[grouping]
                    plans[("moments", g, unit, grouping)] = codes.with_keys(aggregate.moments(
                        rows_of_slices(wide.lazy(), keys), per_unit, keys, weighted=weighted, aggregations=aggregations,
                    ), grouping)
        # One query plan per result: the group's states, moments and counts of every grouping set
        # collected at once (Polars runs them side by side), not one small collect each.
        collected = dict(zip(plans, pl.collect_all(list(plans.values()), engine="in-memory"), strict=True)) if plans else {}
        if on_group is not None:
            on_group(plan, applies, g, values, {key[1:]: frame for key, frame in collected.items() if key[0] == "state"})
        return values, collected

    # The slices' sizes, then one task per metric group, two at a time (:func:`~evalframe._threads.in_order`):
    # one task's Python builds its plans while Polars runs another's; each plan's result is the
    # one it gives alone, and the results keep the groups' order.
    values, states, moments, inside_counts = {}, {}, {}, {}
    found = {"state": states, "moments": moments, "inside": inside_counts}
    tasks = [slice_sizes, *(lambda g=g, group=group: partials_of_group(g, group) for g, group in enumerate(plan.groups))]
    results = in_order(tasks)
    sizes = next(results)
    for group_values, collected in results:
        values |= group_values
        for key, frame in collected.items():
            found[key[0]][key[1:]] = frame
    if index is not None:
        index.begun.clear()  # the score lateness (8 bytes a run row): every group has ranked
    sums = {}
    if plan.bootstrap is not None:  # the bootstrap's sums, where the values are (merged by adding)
        from evalframe.engine.resampled import part_replicate_sums

        sums = part_replicate_sums(plan, units, queries, values, applies)
    return Partials(
        plan=plan, units=units, queries=queries, applies=applies, sizes=sizes, values=values, moments=moments,
        states=states, inside=inside_counts, notes=tuple(dict.fromkeys([*notes, *unit_notes])), replicate_sums=sums,
    )


def evaluate_part(tables: Tables, plan: Plan, *, systems: Sequence[str] | None = None) -> Partials:
    """The kernel (:mod:`evalframe.engine.kernel`): per-unit values and mergeable partials of
    one part holding complete units.

    ``systems`` (the whole run's systems) matters only when ``tables.queries`` is None: the
    evaluated pairs are then every system × every judged query of the part, as for the whole.
    """
    if systems is not None and tables.queries is None:
        tables = replace(tables, systems=tuple(systems))
    return compute_partials(tables, plan)


def merge(parts: Iterable[Partials]) -> Partials:
    """The partials of the union of disjoint parts (at least one): queries and per-unit values in
    key order (system, unit keys); counted notes add up (:func:`merged_notes`)."""
    parts = list(parts)
    if not parts:
        raise ConfigError("merge needs at least one part")
    if len(parts) == 1:
        return parts[0]
    merged = parts[0].merge(*parts[1:])
    # Key order, whatever the parts' order (as the in-memory run orders a run's judged queries).
    # Values kept on disk (lazy scans) stay in the parts' order: what reads them in order sorts
    # them then (:func:`values_in_key_order`), what does not (quantiles, counts) reads the files as they lie.
    units = merged.units
    return replace(
        merged,
        queries=merged.queries.sort(SYSTEM, "query_id", nulls_last=True, maintain_order=True),
        values={(g, unit): frame if isinstance(frame, pl.LazyFrame) else values_in_key_order(frame, units, unit)
                for (g, unit), frame in merged.values.items()},
        notes=merged_notes([p.notes for p in parts]),
    )


def values_in_key_order(frame: pl.DataFrame | pl.LazyFrame, units: Units, unit: str) -> pl.DataFrame | pl.LazyFrame:
    """Per-unit values sorted by the unit's key columns (nulls last, ties in their order): the
    in-memory run's order, whatever the order of the parts they were merged from."""
    return frame.sort(units.key_columns(unit), nulls_last=True, maintain_order=True)


_NUMBER = re.compile(r"\d+")


def merged_notes(notes_of_parts: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """The notes of the parts, once each; a note that starts with a count ("3 run rows …") is a
    count of what its part left out, and the parts' notes that read alike but for their numbers
    become one note with the numbers summed (position by position).

    Order: the stages' order, which every part's notes follow — each part's order is kept (a
    topological merge of the parts' lists), ties in first-seen order."""
    summed: dict[str, list[int] | None] = {}
    after: dict[str, set[str]] = {}
    for notes in notes_of_parts:
        previous = None
        for note in notes:
            if _NUMBER.match(note):
                key = _NUMBER.sub("{}", note.replace("{", "{{").replace("}", "}}"))
                numbers = [int(n) for n in _NUMBER.findall(note)]
                known = summed.get(key)
                summed[key] = numbers if known is None else [a + b for a, b in zip(known, numbers, strict=True)]
            else:
                key = note
                summed.setdefault(key, None)
            after.setdefault(key, set())
            if previous is not None and previous != key:
                after[key].add(previous)
            previous = key
    ordered: list[str] = []
    pending = list(summed)
    while pending:
        ready = next((key for key in pending if after[key] <= set(ordered)), pending[0])  # a cycle: first seen
        ordered.append(ready)
        pending.remove(ready)
    return tuple(key if summed[key] is None else key.format(*summed[key]) for key in ordered)


