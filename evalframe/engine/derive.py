"""The stages before any metric (DESIGN §3): validate and derive the queries table.

- the evaluated queries: the given queries table, or every system of the ranking × every judged
  query; checked against ``schemas/queries.yaml`` wherever they come from;
- ``n_relevant`` (judged items at or above the relevance threshold) when a metric or subset needs it;
- the extracted set's counts (``n_extracted``, ``n_extracted_relevant``, ``selected_k``) when a
  dynamic-K metric needs them (:mod:`evalframe.engine.extraction`);
- the ``missing`` policy for evaluated queries the ranking does not list, and notes on what is
  left out (run rows of unjudged queries);
- the gate ``state`` derived from ``prob`` when the plan has ``state_thresholds`` (parameters
  ``tau_neg``/``tau_pos``): a column like a given ``state``, usable in slices, subsets and units;
- every column the plan names must exist (one error, every key path);
- the units bound to the plan, and each unit's weight (:data:`~evalframe.metrics.base.WEIGHT`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from evalframe._sorting import natural_sorted, sort_naturally
from evalframe.data import layout
from evalframe.data.contracts import conform, load_contract
from evalframe.data.tables import Tables
from evalframe.data.units import QUERY, QUERY_KEYS, SYSTEM, Units
from evalframe.engine.extraction import EXTRACTION_COLUMNS, with_extraction
from evalframe.engine.plan import MetricGroup, Plan
from evalframe.engine.per_unit import judged_only
from evalframe.engine.ranking import QueryIndex, begin_score_lateness, index_queries
from evalframe.engine.recommended import bind_catalog, with_recommended
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.metrics.base import WEIGHT, ItemMetric, Metric
# Shared parameters that derive the gate ``state`` column rather than parameterise metrics.
from evalframe.metrics.gate import STATE_PARAMETERS  # noqa: F401 (read by the pipeline spec from here)
from evalframe.metrics.recommendation import RECOMMENDED


def split_state_parameters(parameters: Mapping[str, Any] | None) -> tuple[tuple[float, float] | None, dict[str, Any]]:
    """``(tau_neg, tau_pos)`` (None when neither is given) and the other parameters.

    The contract's rule (§5.1) then derives the ``state`` column once, in the derive stage, so
    the gate metrics keep their plain names (``neg_rate``) and the state is data like any column.
    Only one of the two, a value outside [0, 1] or ``tau_neg > tau_pos`` is a ConfigError.
    """
    from evalframe.metrics.gate import check_thresholds

    rest = {k: v for k, v in (parameters or {}).items() if k not in STATE_PARAMETERS}
    tau_neg, tau_pos = (parameters or {}).get("tau_neg"), (parameters or {}).get("tau_pos")
    check_thresholds(tau_neg, tau_pos, where="parameters")
    return (None if tau_neg is None else (float(tau_neg), float(tau_pos))), rest


def with_state(queries: pl.DataFrame, thresholds: tuple[float, float] | None) -> tuple[pl.DataFrame, list[str]]:
    """``queries`` with the ``state`` column derived from ``prob`` at ``thresholds``, and notes
    (a given ``state`` column is replaced, and the note says so)."""
    if thresholds is None:
        return queries, []
    from evalframe.metrics.gate import assign_state

    notes = []
    if "state" in queries.columns:
        notes.append(f"the input's `state` column is replaced by the state derived from prob at tau_neg={thresholds[0]}, "
                     f"tau_pos={thresholds[1]}")
    return queries.with_columns(assign_state(*thresholds).alias("state")), notes


def _universe(tables: Tables, index: QueryIndex | None) -> pl.DataFrame:
    """The evaluated (system, query) pairs when no queries table is given: systems × judged queries."""
    if tables.systems is not None:
        systems = pl.DataFrame({SYSTEM: list(tables.systems)}, schema={SYSTEM: pl.String})
    elif index is not None:
        systems = index.pairs.select(SYSTEM).unique(maintain_order=True)
    else:
        systems = tables.ranked_pairs().select(SYSTEM).unique()
    judged = _judged_queries(tables.judgments)
    return systems.join(judged, how="cross").sort(QUERY_KEYS)


def _judged_queries(judgments: pl.DataFrame) -> pl.DataFrame:
    """``query_id`` of every judged query, once each, in order of first appearance: the first id
    of each stretch of one query (:func:`~evalframe.data.layout.stretch_starts`, read by the key
    check already) when every query is one stretch (a qrels file grouped by query), else a
    hash of every row's id."""
    starts = layout.stretch_starts(judgments, "query_id")
    heads = judgments.get_column("query_id").gather(pl.Series(starts))
    if heads.n_unique() == len(starts):
        return heads.to_frame()
    return judgments.select(pl.col("query_id").unique(maintain_order=True))


def _same_pairs(universe: pl.DataFrame, index: QueryIndex | None) -> bool:
    """Whether the evaluated pairs are the run's own, in its order (trec's judged queries ranked
    by the run): a comparison of two columns, where the checks below would join them."""
    return index is not None and layout.same_keys(universe, index.pairs, QUERY_KEYS)


def _check_missing(plan: Plan, tables: Tables, universe: pl.DataFrame, index: QueryIndex | None) -> list[str]:
    """Apply the ``missing`` policy to evaluated pairs the ranking does not list; notes."""
    if _same_pairs(universe, index):
        return []
    # An anti join (and the error's counts, which take unique ids) reads a repeated pair as one.
    ranked = index.pairs.select(QUERY_KEYS) if index is not None else tables.ranked_pairs(each_once=False)
    absent = universe.select(QUERY_KEYS).join(ranked, on=QUERY_KEYS, how="anti").sort(QUERY_KEYS)
    if absent.height == 0:
        return []
    if plan.missing == "error":
        raise unmatched_queries_error(universe, ranked, absent, source=tables.ranking_source,
                                      evaluated="evaluated" if tables.queries is not None else "judged")
    return [f"{absent.height} judged (system, query) pairs absent from the run were scored as empty rankings"]


#: How many ids of each side an unmatched-queries error shows.
N_EXAMPLE_IDS = 3


def unmatched_queries_error(
    universe: pl.DataFrame, ranked: pl.DataFrame, absent: pl.DataFrame, *, source: str, evaluated: str = "judged"
) -> InputError:
    """The error for evaluated queries a run does not rank, in terms a user can act on.

    It says how many of how many queries each system lacks, how many of the run's own query ids
    are not judged (all of them, typically, when the ids are spelt differently), a few ids of
    each side in natural order, a hint when stripping leading zeros would match the two sides
    (``'0401'`` in the run, ``'401'`` in the qrels) or when no id is shared at all (another id
    column?), and how to score the absent queries 0 instead (``-c``, ``missing="zero"``).
    """
    def examples(ids: pl.Series) -> str:
        shown = natural_sorted(ids.unique().to_list())
        return ", ".join(repr(i) for i in shown[:N_EXAMPLE_IDS]) + (", …" if len(shown) > N_EXAMPLE_IDS else "")

    problems = []
    per_system = (
        universe.group_by(SYSTEM).agg(n=pl.len())
        .join(absent.group_by(SYSTEM).agg(n_absent=pl.len(), ids=pl.col("query_id")), on=SYSTEM, how="inner")
    )
    for system, n, n_absent, ids in sort_naturally(per_system, [SYSTEM]).head(5).iter_rows():
        message = f"{n_absent:,} of {n:,} {evaluated} queries have no ranking from system {system!r}: {examples(pl.Series(ids))}"
        problems.append(Problem(None, None, NO_VALUE, message))
    if per_system.height > 5:
        problems.append(Problem(None, None, NO_VALUE, f"and {per_system.height - 5} more systems lack {evaluated} queries"))
    evaluated_ids = universe.get_column("query_id").unique()
    run_ids = ranked.get_column("query_id").unique()
    unranked_ids = absent.get_column("query_id").unique()
    unjudged_ids = run_ids.filter(~run_ids.is_in(evaluated_ids.implode()))
    if unjudged_ids.len() == run_ids.len() and run_ids.len():
        problems.append(Problem(None, None, NO_VALUE, f"the run's {run_ids.len():,} queries are all un{evaluated}: "
                                                      f"none of its query ids is in the qrels ({examples(unjudged_ids)})"))
    elif unjudged_ids.len():
        problems.append(Problem(None, None, NO_VALUE, f"{unjudged_ids.len():,} of the run's {run_ids.len():,} query ids "
                                                      f"are not in the qrels: {examples(unjudged_ids)}"))
    hint = _id_spelling_hint(unjudged_ids, unranked_ids, shared=run_ids.len() - unjudged_ids.len())
    remedy = 'to score judged queries absent from the run as 0 instead, pass `-c` (evalframe trec) or `missing="zero"` (Python; `policies: {missing: zero}` in a pipeline)'
    return InputError(source, problems, hint=f"{hint}; {remedy}" if hint else remedy)


def _id_spelling_hint(unjudged_ids: pl.Series, unranked_ids: pl.Series, *, shared: int) -> str | None:
    """A hint when the run's unjudged ids and the unranked judged ids differ only in leading
    zeros, or when the two sides share no id at all."""
    def stripped(ids: pl.Series) -> pl.DataFrame:
        return pl.DataFrame({"id": ids}).with_columns(key=pl.col("id").str.strip_chars().str.strip_chars_start("0"))

    pairs = stripped(unjudged_ids).join(stripped(unranked_ids), on="key", how="inner", suffix="_judged")
    if pairs.height:
        run_id, _, judged_id = sort_naturally(pairs, ["id"]).row(0)
        return (f"the ids differ in zero-padding ({run_id!r} in the run, {judged_id!r} in the qrels): stripping leading "
                f"zeros would match {pairs.height:,} of them; write the ids the same way in both files")
    if shared == 0 and unjudged_ids.len():
        return ("the run and the qrels share no query id: are they of the same collection, and is the query id read "
                "from the right column? (a table's columns are named with `columns={\"query_id\": ...}`)")
    return None


def _gain_notes(plan: Plan, tables: Tables) -> list[str]:
    """Say when graded judgments meet an nDCG with exponential gain, which trec_eval does not use."""
    exponential = [m.name for m in plan.metrics if getattr(m, "gain", None) == "exponential"]
    if not exponential or tables.judgments.height == 0 or tables.judgments.get_column("relevance").max() <= 1:
        return []
    verb = "uses" if len(exponential) == 1 else "use"
    return [f"{', '.join(f'`{name}`' for name in exponential)} {verb} exponential gain 2^grade − 1 on graded "
            "judgments; trec_eval, pytrec_eval, ir_measures and ranx's `ndcg` use linear gain: ask for it as "
            "`ndcg@10(gain=linear)`"]


def _ignored_run_rows(universe: pl.DataFrame, index: QueryIndex) -> list[str]:
    if _same_pairs(universe, index):
        return []
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


def column_problems(plan: Plan, columns: Sequence[str], units: Units) -> list[Problem]:
    """Every column the plan names that the queries table lacks (one problem per key path)."""
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
    return problems


def check_columns(plan: Plan, columns: Sequence[str], units: Units) -> None:
    """Every column the plan names must be in the queries table: one error listing them all."""
    problems = column_problems(plan, columns, units)
    if problems:
        problems.append(Problem(None, None, NO_VALUE, f"the queries table has columns {sorted(columns)}"))
        raise ConfigError.of(problems)


def derive_queries(plan: Plan, tables: Tables) -> tuple[pl.DataFrame, QueryIndex | None, list[str]]:
    """The validated queries table with ``n_relevant`` where needed, the ranking's index and notes."""
    item_groups = [group for group in plan.groups if any(isinstance(m, ItemMetric) for m in group.metrics)]
    index = index_queries(tables.ranking_rows) if tables.ranking_rows is not None and item_groups else None
    if index is not None:
        _begin_ranking_facts(plan, tables, item_groups, index)
    notes = list(tables.notes)
    queries = tables.queries if tables.queries is not None else _universe(tables, index)
    queries = conform(queries, load_contract("queries"), source="queries table")
    queries, state_notes = with_state(queries, plan.state_thresholds)
    notes += state_notes
    if tables.queries is not None and item_groups and tables.ranking_rows is not None:
        ignored = tables.judgments.join(queries.select("query_id").unique(), on="query_id", how="anti")
        if ignored.height:
            notes.append(f"{ignored.get_column('query_id').n_unique()} judged queries are not in the queries table and were ignored")
    needed = {name for metric in plan.metrics for name in metric.required_columns.get("queries", ())}
    needs_relevant = (item_groups or "n_relevant" in needed
                      or any("n_relevant" in group.subset.columns() for group in plan.groups))
    if needs_relevant and "n_relevant" not in queries.columns:
        relevant = relevant_counts(tables.judgments, plan.relevance_threshold)
        queries = queries.join(relevant, on="query_id", how="left", maintain_order="left").with_columns(
            pl.col("n_relevant").fill_null(0)
        )
    if needed & {*EXTRACTION_COLUMNS, "selected_k"}:
        queries = with_extraction(tables, queries, relevance_threshold=plan.relevance_threshold)
    if RECOMMENDED in needed and RECOMMENDED not in queries.columns:
        queries = with_recommended(tables, queries)
    if item_groups:
        notes += _gain_notes(plan, tables)
        if not tables.has_ranking:
            raise ConfigError(f"metrics {[m.name for g in item_groups for m in g.metrics if isinstance(m, ItemMetric)]} need a ranking")
        notes += _check_missing(plan, tables, queries, index)
        if index is not None:
            notes += _ignored_run_rows(queries, index)
    return queries, index, notes


def _begin_ranking_facts(plan: Plan, tables: Tables, item_groups: Sequence[MetricGroup], index: QueryIndex) -> None:
    """Begin the run's score lateness (:func:`~evalframe.engine.ranking.begin_score_lateness`),
    which the ranking stage reads when it ranks the judged items by score: this stage's small
    Polars calls leave a core idle, the lateness uses it. It is kept on the run's ``index``, which
    the evaluation holds (not on the caller's run frame)."""
    run = tables.ranking_rows
    item_metrics = [m for group in item_groups for m in group.metrics if isinstance(m, ItemMetric)]
    if "score" in run.columns and "rank" not in run.columns and judged_only(tables, item_metrics):
        begin_score_lateness(index, run, single_precision=plan.score_precision == "float32")


def relevant_counts(judgments: pl.DataFrame, relevance_threshold: int) -> pl.DataFrame:
    """``query_id`` and ``n_relevant``: how many judgments of each query have a grade >=
    ``relevance_threshold`` (queries with none may be absent, or have 0).

    Judgments usually come in stretches of one query (a qrels file is grouped by query): when
    every query is one stretch (:func:`~evalframe.data.layout.stretch_starts`), each stretch's
    relevant rows are summed in place (no hash of every row's query id); else a group-by.

    >>> relevant_counts(pl.DataFrame({"query_id": ["a", "a", "b"], "relevance": [2, 0, 1]}), 1).rows()
    [('a', 1), ('b', 1)]
    """
    import numpy as np

    starts = layout.stretch_starts(judgments, "query_id")
    relevance = judgments.get_column("relevance")
    heads = judgments.get_column("query_id").gather(pl.Series(starts))
    if len(starts) == 0 or relevance.null_count() or heads.n_unique() != len(starts):
        return (judgments.filter(pl.col("relevance") >= relevance_threshold)
                .group_by("query_id").agg(n_relevant=pl.len().cast(pl.Int64)))
    counts = np.add.reduceat((relevance >= relevance_threshold).to_numpy().astype(np.int64), starts)
    return pl.DataFrame({"query_id": heads, "n_relevant": pl.Series(counts, dtype=pl.Int64)})


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
    plan = bind_catalog(bind_units(plan, units), tables.catalog)
    check_columns(plan, queries.columns, units)
    return plan, queries.with_columns(_weights(queries, plan.weight)), units, index, notes
