"""Checking ship criteria against saved run outputs: the gate's rules and its report.

The results are the outputs ``evalframe run`` writes (``summary.parquet``, and
``per_query.parquet`` for noise-aware gates; ``run.json`` for the "how to reproduce" line).
For each gate, with ``v`` its value in the candidate's slice, ``b`` the baseline's, and the
metric's direction from the registry (``higher_is_better``):

- **floor**: fails when ``v < threshold`` (higher is better) or ``v > threshold`` (lower is
  better: the threshold is a ceiling, the gate passes with ``v ≤ threshold``);
- **regression**: ``drop = b − v`` (higher is better) or ``v − b`` (lower is better); fails
  when ``drop > regression_max``. With ``noise_aware: true`` it fails only when, in addition,
  the paired bootstrap interval of ``v − b`` excludes 0 (:mod:`evalframe.gates.noise`);
- a gate fails when either rule fails; a failed gate of severity ``error`` blocks (exit 1), one
  of severity ``warning`` is reported only.

**Equality.** Comparisons allow :data:`TOLERANCE` (1e-9, far below any printed digit): a
value equal to its floor passes, and a drop of exactly the limit passes even when the
subtraction of two floats lands a hair above it (0.90 − 0.87 = 0.030000000000000027).

**Missing baseline.** A gate with ``regression_max`` needs the baseline's value of its metric
and slice; without it (no ``--baseline``, a baseline folder that does not exist, or one without
the metric) the check is an error (exit 2) unless ``no_baseline_ok``, which skips the regression
rule and says so in the gate's reason.

**Tag breakdown.** For every gated metric of the overall slice with a baseline, the slices of
the breakdown grouping (default: the one over ``tags``) are compared with the baseline's; the
largest drops are listed, and a slice whose drop exceeds the gate's ``regression_max`` while
the overall gate's regression rule passes is reported as *masked* (the decision record's
warning: a single global threshold can mask per-task regressions). Masking is reported, it
does not change the exit status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.errors import NO_VALUE, ConfigError, ExitCode, InputError, Problem
from evalframe.gates.criteria import DEFAULT_BREAKDOWN_COLUMN, Criteria, Gate
from evalframe.gates.noise import DeltaInterval, paired_delta_ci

#: Differences smaller than this count as equality (module docstring).
TOLERANCE = 1e-9
SUMMARY = "summary.parquet"
PER_QUERY = "per_query.parquet"
RUN_INFO = "run.json"


@dataclass(frozen=True)
class RunOutputs:
    """The saved outputs of one ``evalframe run``."""

    path: Path
    summary: pl.DataFrame
    per_query_path: Path | None
    info: dict[str, Any] | None

    @classmethod
    def load(cls, path: str | Path, role: str = "results") -> RunOutputs:
        path = Path(path)
        if not path.is_dir():
            raise InputError(str(path), Problem(None, None, NO_VALUE, f"{role} folder not found (the --out of `evalframe run`)"))
        summary_path = path / SUMMARY
        if not summary_path.is_file():
            raise InputError(str(path), Problem(None, None, NO_VALUE,
                                                f"has no {SUMMARY}; is it the output folder of `evalframe run`?"))
        try:
            summary = pl.read_parquet(summary_path)
        except (pl.exceptions.PolarsError, OSError) as error:
            raise InputError(str(summary_path), Problem(None, None, NO_VALUE, f"cannot be read: {error}")) from None
        missing = [c for c in ("grouping", "system", "metric", "n", "value") if c not in summary.columns]
        if missing:
            raise InputError(str(summary_path), Problem(None, missing[0], NO_VALUE, "required column is missing"))
        info = None
        if (path / RUN_INFO).is_file():
            try:
                info = json.loads((path / RUN_INFO).read_text())
            except (OSError, ValueError):
                info = None
        per_query = path / PER_QUERY
        return cls(path=path, summary=summary, per_query_path=per_query if per_query.is_file() else None, info=info)


@dataclass(frozen=True)
class GateResult:
    """One gate checked: the numbers, each rule's outcome, the status and the reason in words."""

    gate: Gate
    system: str
    value: float
    n: int
    baseline_system: str | None = None
    baseline: float | None = None
    baseline_n: int | None = None
    interval: DeltaInterval | None = None
    floor_failed: bool = False
    regression_exceeded: bool = False
    regression_failed: bool = False
    baseline_note: str | None = None

    @property
    def delta(self) -> float | None:
        return None if self.baseline is None else self.value - self.baseline

    @property
    def drop(self) -> float | None:
        """How much worse than the baseline (positive = worse), in the metric's units."""
        if self.delta is None:
            return None
        return -self.delta if self.gate.higher_is_better else self.delta

    @property
    def failed(self) -> bool:
        return self.floor_failed or self.regression_failed

    @property
    def status(self) -> str:
        return "fail" if self.failed else "pass"

    @property
    def blocks(self) -> bool:
        return self.failed and self.gate.blocking

    @property
    def reason(self) -> str:
        gate, parts = self.gate, []
        bound = "floor" if gate.higher_is_better else "ceiling"
        if self.floor_failed:
            side = "below" if gate.higher_is_better else "above"
            parts.append(f"value {self.value!r} is {side} the {bound} {gate.threshold!r}")
        if self.regression_failed:
            parts.append(f"worse than the baseline by {self.drop!r}, more than regression_max {gate.regression_max!r}"
                         + (" and the interval excludes 0" if self.interval is not None else ""))
        elif self.regression_exceeded:
            parts.append(f"worse than the baseline by {self.drop!r}, more than regression_max {gate.regression_max!r}, "
                         "but the interval includes 0 (noise)")
        if self.baseline_note:
            parts.append(self.baseline_note)
        if not parts:
            parts.append("within the " + " and the ".join(
                [*([bound] if gate.threshold is not None else []),
                 *(["regression limit"] if gate.regression_max is not None and self.baseline is not None else [])]))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        gate = self.gate
        return {
            "name": gate.name,
            "metric": gate.metric.name,
            "direction": "higher is better" if gate.higher_is_better else "lower is better",
            "slice": {"grouping": gate.slice.grouping, "keys": dict(gate.slice.keys)},
            "system": self.system,
            "value": self.value,
            "n": self.n,
            "baseline_system": self.baseline_system,
            "baseline": self.baseline,
            "baseline_n": self.baseline_n,
            "delta": self.delta,
            "threshold": gate.threshold,
            "regression_max": gate.regression_max,
            "severity": gate.severity,
            "noise_aware": gate.noise_aware,
            "interval": None if self.interval is None else {
                "low": self.interval.low, "high": self.interval.high, "confidence": self.interval.confidence,
                "resamples": self.interval.resamples, "n": self.interval.n,
            },
            "status": self.status,
            "blocks": self.blocks,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SliceChange:
    """One slice of the breakdown: the metric in the candidate and the baseline."""

    metric: str
    label: str
    keys: dict[str, Any]
    value: float
    baseline: float
    n: int
    baseline_n: int
    drop: float
    gate: Gate

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "slice": self.keys, "value": self.value, "baseline": self.baseline,
                "delta": self.value - self.baseline, "n": self.n, "baseline_n": self.baseline_n,
                "masked": self.masked}

    @property
    def masked(self) -> bool:
        limit = self.gate.regression_max
        return limit is not None and self.drop > limit + TOLERANCE


@dataclass(frozen=True)
class GateReport:
    """Every gate's result, the breakdown of the gated metrics and the verdict."""

    results: tuple[GateResult, ...]
    breakdown: dict[str, tuple[SliceChange, ...]] = field(default_factory=dict)
    breakdown_grouping: str | None = None
    masked: tuple[tuple[GateResult, SliceChange], ...] = ()
    criteria: Criteria | None = None
    candidate: RunOutputs | None = None
    baseline: RunOutputs | None = None

    @property
    def blocking_failures(self) -> list[GateResult]:
        return [r for r in self.results if r.blocks]

    @property
    def warnings(self) -> list[GateResult]:
        return [r for r in self.results if r.failed and not r.blocks]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.CHECK_FAILED if self.blocking_failures else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": "fail" if self.blocking_failures else "pass",
            "exit_code": int(self.exit_code),
            "blocking_failures": len(self.blocking_failures),
            "warnings": len(self.warnings),
            "results": str(self.candidate.path) if self.candidate else None,
            "baseline": str(self.baseline.path) if self.baseline else None,
            "criteria": self.criteria.source if self.criteria else None,
            "tolerance": TOLERANCE,
            "gates": [r.to_json() for r in self.results],
            "breakdown": {
                "grouping": self.breakdown_grouping,
                "metrics": {metric: [c.to_json() for c in changes] for metric, changes in self.breakdown.items()},
            },
            "masked": [{"gate": r.gate.name, "metric": c.metric, "slice": c.keys, "delta": c.value - c.baseline,
                        "regression_max": r.gate.regression_max, "n": c.n} for r, c in self.masked],
        }


# --- the rules ---------------------------------------------------------------------------------


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
    grouping = _breakdown_grouping(criteria, candidate)
    breakdown, masked = {}, []
    if grouping is not None and baseline is not None:
        for result in results:
            if result.baseline is None or result.gate.slice.keys or result.gate.slice.grouping != "overall":
                continue
            changes = _slice_changes(result, grouping, candidate, baseline)
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
        interval = paired_delta_ci(
            _per_query(gate, baseline, baseline_system), _per_query(gate, candidate, system),
            **_noise_settings(criteria, candidate),
        )
    failed = exceeded and (interval is None or interval.excludes_zero)
    return _replace(result, regression_exceeded=exceeded, regression_failed=failed, interval=interval)


def _noise_settings(criteria: Criteria, candidate: RunOutputs) -> dict[str, Any]:
    """The noise check's bootstrap: the candidate run's own (resamples, seed, confidence and
    resampled unit, from its run.json) when it ran one, so the interval follows the summary's
    CIs; else the criteria's ``noise:`` over queries."""
    engine = (candidate.info or {}).get("bootstrap") or {}
    if not engine:
        noise = criteria.noise
        return {"resamples": noise.resamples, "seed": noise.seed, "confidence": noise.confidence}
    columns = pl.read_parquet_schema(candidate.per_query_path) if candidate.per_query_path is not None else {}
    unit = tuple(engine.get("unit") or ("query_id",))
    return {"resamples": int(engine["resamples"]), "seed": int(engine["seed"]), "confidence": float(engine["confidence"]),
            "unit": unit if all(c in columns for c in unit) else ("query_id",)}


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
    if outputs.per_query_path is None:
        raise InputError(str(outputs.path), Problem(None, None, NO_VALUE,
                                                    f"has no {PER_QUERY}; the noise-aware gate `{gate.name}` pairs per-query values "
                                                    "(list it under the pipeline's `outputs:`)"))
    rows = pl.read_parquet(outputs.per_query_path).filter(
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


# --- the tag breakdown -------------------------------------------------------------------------


def _breakdown_grouping(criteria: Criteria, candidate: RunOutputs) -> str | None:
    """The grouping the comment breaks down: the criteria's, else the one over ``tags``."""
    summary = candidate.summary
    if criteria.breakdown_grouping is not None:
        if criteria.breakdown_grouping not in summary.get_column("grouping"):
            groupings = summary.get_column("grouping").unique(maintain_order=True).to_list()
            raise ConfigError.of([Problem("breakdown.grouping", None, criteria.breakdown_grouping,
                                          f"the results in {candidate.path} have no such grouping (they have: {groupings})")],
                                 source=criteria.source)
        return criteria.breakdown_grouping
    if DEFAULT_BREAKDOWN_COLUMN not in summary.columns:
        return None
    found = summary.filter(pl.col(DEFAULT_BREAKDOWN_COLUMN).is_not_null()).get_column("grouping").unique(maintain_order=True)
    return found[0] if found.len() else None


def _slice_keys(summary: pl.DataFrame, grouping: str) -> list[str]:
    """The key columns of ``grouping``: the columns between ``system`` and ``metric`` it fills."""
    columns = summary.columns
    candidates = columns[columns.index("system") + 1: columns.index("metric")]
    rows = summary.filter(pl.col("grouping") == grouping)
    return [c for c in candidates if rows.get_column(c).null_count() < rows.height]


def _slice_changes(result: GateResult, grouping: str, candidate: RunOutputs, baseline: RunOutputs) -> list[SliceChange]:
    """Every slice of ``grouping`` with a value on both sides, largest drop first."""
    metric = result.gate.metric.name
    keys = _slice_keys(candidate.summary, grouping)
    if not keys:
        return []

    def side(outputs: RunOutputs, system: str) -> pl.DataFrame:
        rows = outputs.summary.filter((pl.col("grouping") == grouping) & (pl.col("metric") == metric)
                                      & (pl.col("system") == system) & pl.col("value").is_not_null())
        return rows.select(*(pl.col(k).cast(pl.String) for k in keys if k in rows.columns), "value", "n")

    cand, base = side(candidate, result.system), side(baseline, result.baseline_system)
    if any(k not in base.columns for k in keys):
        return []
    joined = cand.join(base, on=keys, how="inner", nulls_equal=True, suffix="_baseline")
    sign = -1.0 if result.gate.higher_is_better else 1.0
    joined = joined.with_columns(drop=sign * (pl.col("value") - pl.col("value_baseline"))).sort(
        ["drop", *keys], descending=[True, *([False] * len(keys))], nulls_last=True)
    return [
        SliceChange(metric=metric, label=", ".join(str(row[k]) if row[k] is not None else "(none)" for k in keys),
                    keys={k: row[k] for k in keys}, value=row["value"], baseline=row["value_baseline"], n=row["n"],
                    baseline_n=row["n_baseline"], drop=row["drop"], gate=result.gate)
        for row in joined.iter_rows(named=True)
    ]
