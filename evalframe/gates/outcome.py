"""What a gate check reads and finds: the saved outputs of a run (:class:`RunOutputs`), each
gate's result, the breakdown's slice changes and the verdict (exit status and ``gate.json``),
as :mod:`evalframe.gates.check` finds them and :mod:`evalframe.gates.comment` renders them.

**Equality.** Comparisons allow :data:`TOLERANCE` (1e-9, far below any printed digit): a
value equal to its floor passes, and a drop of exactly the limit passes even when the
subtraction of two floats lands a hair above it (0.90 − 0.87 = 0.030000000000000027).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.errors import ExitCode
from evalframe.gates.criteria import Criteria, Gate
from evalframe.gates.noise import DeltaInterval

#: Differences smaller than this count as equality (module docstring).
TOLERANCE = 1e-9


@dataclass(frozen=True)
class RunOutputs:
    """The saved outputs of one ``evalframe run``."""

    path: Path
    summary: pl.DataFrame
    per_query_path: Path | None
    info: dict[str, Any] | None
    #: The folder as the results room reads it (None for outputs built in memory, e.g. in tests).
    folder: Any = None

    @classmethod
    def load(cls, path: str | Path, role: str = "results") -> RunOutputs:
        """The outputs in ``path`` (read by :func:`evalframe.results.reader.read_result`)."""
        from evalframe.results.reader import PER_QUERY, read_result

        folder = read_result(path, role=role, need_info=False)
        return cls(path=folder.path, summary=folder.summary, per_query_path=folder.file(PER_QUERY), info=folder.info,
                   folder=folder)

    @property
    def per_query(self) -> pl.DataFrame | None:
        """The run's per-query values (``per_query.parquet``, read once by the results room's
        reader, whose errors name the file), or None when the folder has none."""
        return self.folder.per_query if self.folder is not None else None


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
