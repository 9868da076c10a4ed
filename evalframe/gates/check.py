"""Checking ship criteria against saved run outputs: the gate's rules.

The results are the outputs ``evalframe run`` writes (``summary.parquet``, and
``per_query.parquet`` for noise-aware gates; ``run.json`` for the "how to reproduce" line).
For each gate, with ``v`` its value in the candidate's slice, ``b`` the baseline's, and the
metric's direction from the registry (``higher_is_better``):

- **floor**: fails when ``v < threshold`` (higher is better) or ``v > threshold`` (lower is
  better: the threshold is a ceiling, the gate passes with ``v ≤ threshold``);
- **regression**: ``drop = b − v`` (higher is better) or ``v − b`` (lower is better); fails
  when ``drop > regression_max``. With ``noise_aware: true`` it fails only when, in addition,
  the bootstrap interval of ``v − b`` excludes 0 (:mod:`evalframe.gates.noise`: from the two
  runs' own replicates, the engine's unit, weights, seed and percentile rule);
- a gate fails when either rule fails; a failed gate of severity ``error`` blocks (exit 1), one
  of severity ``warning`` is reported only.

**Missing baseline.** A gate with ``regression_max`` needs the baseline's value of its metric
and slice; without it (no ``--baseline``, a baseline folder that does not exist, or one without
the metric) the check is an error (exit 2) unless ``no_baseline_ok``, which skips the regression
rule and says so in the gate's reason.

The results and the verdict are :mod:`evalframe.gates.outcome`'s; the tag breakdown is
:mod:`evalframe.gates.breakdown`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.gates.breakdown import breakdown_grouping, slice_changes
from evalframe.gates.criteria import Criteria, Gate
from evalframe.gates.noise import DeltaInterval, paired_cases, paired_delta_ci, replicate_delta_ci
from evalframe.gates.outcome import TOLERANCE, GateReport, GateResult, RunOutputs
from evalframe.results.reader import PER_QUERY


def check_gates(
    criteria: Criteria, candidate: RunOutputs, baseline: RunOutputs | None = None, *, no_baseline_ok: bool = False
) -> GateReport:
    """Check every gate of ``criteria`` (module docstring); raise on bad input, never half-check."""
    results, problems = [], []
    for gate in criteria.gates:
        try:
            results.append(_check_gate(gate, criteria, candidate, baseline, no_baseline_ok=no_baseline_ok))
        except ConfigError as error:
            problems += error.problems or [Problem(gate.path, None, NO_VALUE, str(error))]
    if problems:
        raise ConfigError.of(problems, source=criteria.source)
    grouping = breakdown_grouping(criteria, candidate)
    breakdown, masked = {}, []
    if grouping is not None and baseline is not None:
        for result in results:
            if result.baseline is None or result.gate.slice.keys or result.gate.slice.grouping != "overall":
                continue
            changes = slice_changes(result, grouping, candidate, baseline)
            key = result.gate.metric.name
            if key not in breakdown:
                breakdown[key] = tuple(c for c in changes if c.drop > TOLERANCE)[: criteria.breakdown_top]
            if not result.regression_failed:
                masked += [(result, c) for c in changes if c.masked]
    return GateReport(tuple(results), breakdown, grouping, tuple(masked), criteria, candidate, baseline)


def _check_gate(gate: Gate, criteria: Criteria, candidate: RunOutputs, baseline: RunOutputs | None, *,
                no_baseline_ok: bool) -> GateResult:
    system, value, n = _value(gate, candidate, gate.system, role="results")
    result = GateResult(gate=gate, system=system, value=value, n=n)
    if gate.threshold is not None:
        below = value < gate.threshold - TOLERANCE if gate.higher_is_better else value > gate.threshold + TOLERANCE
        result = _replace(result, floor_failed=below)
    if gate.regression_max is None and baseline is None:
        return result
    found = _baseline_value(gate, baseline, system)
    if isinstance(found, str):  # why there is no baseline value
        if gate.regression_max is not None and not no_baseline_ok:
            raise ConfigError(found, [Problem(f"{gate.path}.regression_max", None, NO_VALUE,
                                              f"needs a baseline value: {found} (pass `--baseline DIR`, or `--no-baseline-ok` "
                                              "to skip the regression rule)")])
        note = f"regression not checked: {found}" if gate.regression_max is not None else None
        return _replace(result, baseline_note=note)
    baseline_system, base_value, base_n = found
    result = _replace(result, baseline_system=baseline_system, baseline=base_value, baseline_n=base_n)
    if gate.regression_max is None:
        return result
    exceeded = result.drop > gate.regression_max + TOLERANCE
    interval = None
    if gate.noise_aware:
        interval = _noise_interval(gate, criteria, candidate, system, value, n, baseline, baseline_system, base_value)
    failed = exceeded and (interval is None or interval.excludes_zero)
    return _replace(result, regression_exceeded=exceeded, regression_failed=failed, interval=interval)


def _noise_interval(gate: Gate, criteria: Criteria, candidate: RunOutputs, system: str, value: float, n: int,
                    baseline: RunOutputs, baseline_system: str, base_value: float) -> DeltaInterval:
    """The interval of ``value − base_value``: from the two runs' own bootstrap replicates when
    both have them with one draw, else the paired bootstrap of the per-query values under the
    engine's draw (:mod:`evalframe.gates.noise`). Either way the cases must be the same."""
    found = _run_replicates(gate, candidate, system, baseline, baseline_system)
    if found is None:
        cases, weight = _weighted(gate, _per_query(gate, candidate, system), candidate, system)
        return paired_delta_ci(_per_query(gate, baseline, baseline_system), cases, weight=weight,
                               **_noise_settings(criteria, candidate))
    sides = ((baseline, baseline_system), (candidate, system))
    if all(_has_per_query_values(gate, outputs) for outputs, _ in sides):  # a per-query metric: the same cases
        paired_cases(*(_per_query(gate, outputs, name) for outputs, name in sides))
    base_replicates, cand_replicates = found
    confidence = float(candidate.info["bootstrap"]["confidence"])
    return replicate_delta_ci(base_replicates, cand_replicates, delta=value - base_value, n=n, confidence=confidence)


#: The column of each case's unit weight in the noise check's fallback (a weighted run).
_CASE_WEIGHT = "_case_weight"


def _weighted(gate: Gate, cases: pl.DataFrame, outputs: RunOutputs, system: str) -> tuple[pl.DataFrame, str | None]:
    """The candidate's per-query values with each case's unit weight, as the engine weighed it
    (``_case_weight``), and that column's name; unchanged (and None) for a run without a weight
    column, where every unit weighs 1. The weights come from the run's input, re-read by the
    engine; a weighted run whose input cannot be re-read is an :class:`InputError`."""
    from evalframe.metrics.base import WEIGHT
    from evalframe.results.reader import read_result

    if ((outputs.info or {}).get("parameters") or {}).get("weight") is None:
        return cases, None
    try:
        queries, _plan = (outputs.folder or read_result(outputs.path)).data().rows()
    except InputError as error:
        raise InputError(str(outputs.path), Problem(None, None, NO_VALUE,
                                                    f"the noise-aware gate `{gate.name}` weighs cases as the run did "
                                                    f"(weight column `{outputs.info['parameters']['weight']}`) and needs "
                                                    f"the run's input to read the weights: {error}")) from None
    rows = queries.filter(pl.col("system") == system) if "system" in queries.columns else queries
    weights = rows.select(pl.col("query_id").cast(cases.schema["query_id"]), pl.col(WEIGHT).alias(_CASE_WEIGHT))
    weighted = cases.join(weights.unique("query_id", keep="first"), on="query_id", how="left")
    unweighed = weighted.filter(pl.col(_CASE_WEIGHT).is_null() & pl.col("value").is_not_null()).height
    if unweighed:
        raise InputError(str(outputs.path), Problem(None, "query_id", NO_VALUE,
                                                    f"{unweighed} cases of per_query.parquet are not in the run's input: "
                                                    "the noise check cannot weigh them as the run did"))
    return weighted, _CASE_WEIGHT


def _has_per_query_values(gate: Gate, outputs: RunOutputs) -> bool:
    """Whether the run's ``per_query.parquet`` holds values of the gate's metric (a set metric has none)."""
    values = outputs.per_query
    return values is not None and values.filter(pl.col("metric") == gate.metric.name).height > 0


#: The settings that make two runs' bootstrap draws the same (replicate r weighs a unit alike).
_DRAW = ("resamples", "seed", "unit", "strata")


def _run_replicates(gate: Gate, candidate: RunOutputs, system: str, baseline: RunOutputs,
                    baseline_system: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The baseline's and the candidate's replicate values of the gate's summary row (kept in
    ``replicates.parquet`` or recomputed from the run's input by the engine), or None when a run
    has no bootstrap, the two draws differ, or the replicates cannot be had."""
    engines = [(outputs.info or {}).get("bootstrap") or {} for outputs in (baseline, candidate)]
    if not all(engines) or any(engines[0].get(key) != engines[1].get(key) for key in _DRAW):
        return None
    found = []
    for outputs, name in ((baseline, baseline_system), (candidate, system)):
        values = _replicate_row(gate, outputs, name)
        if values is None:
            return None
        found.append(values)
    return found[0], found[1]


def _replicate_row(gate: Gate, outputs: RunOutputs, system: str) -> np.ndarray | None:
    """The R replicate values of the gate's metric, system and slice in one run, or None."""
    from evalframe.results.reader import read_result

    try:
        data = (outputs.folder or read_result(outputs.path)).data()
        replicates = data.replicates
        if replicates is None and data.recompute_replicates is not None:
            replicates = data.recompute_replicates([gate.slice.grouping])
    except InputError:
        return None
    if replicates is None or "values" not in replicates.columns:
        return None
    rows = replicates.filter((pl.col("grouping") == gate.slice.grouping) & (pl.col("system") == system)
                             & (pl.col("metric") == gate.metric.name))
    if gate.subset is not None and "subset" in rows.columns:
        rows = rows.filter(pl.col("subset") == gate.subset)
    for column, wanted in gate.slice.keys.items():
        if column not in rows.columns:
            return None
        rows = rows.filter(pl.col(column).cast(pl.String) == str(wanted))
    if rows.height != 1:
        return None
    values = rows.get_column("values")
    values = values.arr.to_list() if values.dtype.base_type() is pl.Array else values
    return np.asarray(values.explode().cast(pl.Float64).fill_null(np.nan).to_numpy(), dtype=np.float64)


def _noise_settings(criteria: Criteria, candidate: RunOutputs) -> dict[str, Any]:
    """The noise check's bootstrap: the candidate run's own (resamples, seed, confidence and
    resampled unit, from its run.json) when it ran one, so the interval follows the summary's
    CIs; else the criteria's ``noise:`` over queries."""
    engine = (candidate.info or {}).get("bootstrap") or {}
    if not engine:
        noise = criteria.noise
        return {"resamples": noise.resamples, "seed": noise.seed, "confidence": noise.confidence}
    columns = candidate.per_query.columns if candidate.per_query is not None else []
    unit = tuple(engine.get("unit") or ("query_id",))
    strata = engine.get("strata")
    return {"resamples": int(engine["resamples"]), "seed": int(engine["seed"]), "confidence": float(engine["confidence"]),
            "unit": unit if all(c in columns for c in unit) else ("query_id",),
            "strata": strata if strata in columns else None}


def _replace(result: GateResult, **changes) -> GateResult:
    return replace(result, **changes)


def _slice_rows(gate: Gate, outputs: RunOutputs, role: str) -> pl.DataFrame:
    """The summary rows of the gate's metric and slice (every system); errors name the key."""
    summary = outputs.summary
    groupings = summary.get_column("grouping").unique(maintain_order=True).to_list()
    if gate.slice.grouping not in groupings:
        raise ConfigError("", [Problem(f"{gate.path}.slice.grouping", None, gate.slice.grouping,
                                       f"the {role} in {outputs.path} have no grouping of this name (they have: "
                                       f"{', '.join(f'`{g}`' for g in groupings)})")])
    metrics = summary.get_column("metric").unique(maintain_order=True).to_list()
    if gate.metric.name not in metrics:
        raise ConfigError("", [Problem(f"{gate.path}.{gate.metric_key}", None, NO_VALUE,
                                       f"the {role} in {outputs.path} have no metric `{gate.metric.name}` (they have: "
                                       f"{', '.join(f'`{m}`' for m in metrics)})")])
    rows = summary.filter((pl.col("grouping") == gate.slice.grouping) & (pl.col("metric") == gate.metric.name))
    if gate.subset is not None:
        subsets = rows.get_column("subset").unique(maintain_order=True).to_list()
        if gate.subset not in subsets:
            raise ConfigError("", [Problem(f"{gate.path}.subset", None, gate.subset,
                                           f"the {role} in {outputs.path} have no such subset of `{gate.metric.name}` "
                                           f"(they have: {', '.join(f'`{s}`' for s in subsets)})")])
        rows = rows.filter(pl.col("subset") == gate.subset)
    for column, wanted in gate.slice.keys.items():
        if column not in rows.columns:
            raise ConfigError("", [Problem(f"{gate.path}.slice.keys.{column}", None, NO_VALUE,
                                           f"the {role} in {outputs.path} have no slice column `{column}`")])
        rows = rows.filter(pl.col(column).cast(pl.String) == str(wanted))
    return rows


def _value(gate: Gate, outputs: RunOutputs, system: str | None, *, role: str) -> tuple[str, float, int]:
    rows = _slice_rows(gate, outputs, role)
    systems = rows.get_column("system").unique(maintain_order=True).to_list()
    if system is not None and system not in systems:
        raise ConfigError("", [Problem(f"{gate.path}.system", None, system,
                                       f"the {role} in {outputs.path} have no such system in this slice (systems: {systems})")])
    if system is None:
        if not systems:
            raise ConfigError("", [Problem(f"{gate.path}.slice", None, NO_VALUE,
                                           f"the {role} in {outputs.path} have no slice `{gate.slice.label}`")])
        if len(systems) > 1:
            raise ConfigError("", [Problem(gate.path, None, NO_VALUE,
                                           f"the {role} in {outputs.path} hold systems {systems}; say which with `system:`")])
        system = systems[0]
    rows = rows.filter(pl.col("system") == system)
    if rows.height != 1:
        raise ConfigError("", [Problem(f"{gate.path}.slice", None, NO_VALUE,
                                       f"`{gate.slice.grouping}` has {rows.height} slices in the {role}; name one with "
                                       "`slice.keys` (e.g. `{tier: A}`)")])
    row = rows.row(0, named=True)
    if row["value"] is None:
        raise ConfigError("", [Problem(gate.path, None, NO_VALUE,
                                       f"`{gate.metric.name}` has no value in the slice `{gate.slice.label}` of the {role} "
                                       f"in {outputs.path} ({row.get('note') or 'no unit with a value'})")])
    return system, float(row["value"]), int(row["n"])


def _baseline_value(gate: Gate, baseline: RunOutputs | None, system: str) -> tuple[str, float, int] | str:
    """The baseline's (system, value, n), or why there is none (a sentence)."""
    if baseline is None:
        return "no baseline was given"
    rows = _slice_rows(gate, baseline, "baseline") if gate.metric.name in baseline.summary.get_column("metric") else None
    if rows is None or rows.height == 0:
        return f"the baseline in {baseline.path} has no `{gate.metric.name}` for the slice `{gate.slice.label}`"
    systems = rows.get_column("system").unique(maintain_order=True).to_list()
    chosen = gate.system if gate.system in systems else system if system in systems else systems[0] if len(systems) == 1 else None
    if chosen is None:
        raise ConfigError("", [Problem(f"{gate.path}.system", None, gate.system or NO_VALUE,
                                       f"the baseline in {baseline.path} has systems {systems}; none is `{gate.system or system}`")])
    _, value, n = _value(gate, baseline, chosen, role="baseline")
    return chosen, value, n


def _per_query(gate: Gate, outputs: RunOutputs, system: str) -> pl.DataFrame:
    """Per-query values (``query_id``, ``value``) of the gate's metric, system and slice."""
    if outputs.per_query is None:
        raise InputError(str(outputs.path), Problem(None, None, NO_VALUE,
                                                    f"has no {PER_QUERY}; the noise-aware gate `{gate.name}` pairs per-query values "
                                                    "(list it under the pipeline's `outputs:`)"))
    rows = outputs.per_query.filter(
        (pl.col("metric") == gate.metric.name) & (pl.col("system") == system))
    for column, wanted in gate.slice.keys.items():
        values = rows.get_column(column) if column in rows.columns else None
        if values is None:
            raise InputError(str(outputs.per_query_path), Problem(None, column, NO_VALUE, "slice column is missing"))
        if isinstance(values.dtype, pl.List):
            rows = rows.filter(pl.col(column).list.contains(pl.lit(str(wanted)).cast(values.dtype.inner)))
        else:
            rows = rows.filter(pl.col(column).cast(pl.String) == str(wanted))
    carried = [c for c in rows.columns if c not in ("query_id", "value", "metric", "system", "skip_reason")
               and not isinstance(rows.schema[c], pl.List)]
    return rows.select("query_id", "value", *carried)
