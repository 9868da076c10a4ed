"""Ship criteria: the file of gates ``evalframe gate`` checks (format: ``schemas/ship_criteria.yaml``).

The decision record's file is accepted as it is written::

    gates:
      - name: retrieval_recall_at_5
        threshold: 0.85        # absolute floor
        regression_max: 0.03   # may not drop more than 3 pp from baseline
        severity: error        # blocks merge

with the optional keys ``metric:``, ``slice:``, ``subset:``, ``system:``, ``noise_aware:`` per gate and the
top-level ``noise:`` (bootstrap settings) and ``breakdown:`` (the PR comment's tag table).

**Name → metric.** Without ``metric:``, a gate's name says its metric: the name without its
``retrieval_`` prefix, with ``_at_`` read as ``@`` (``retrieval_recall_at_5`` → ``recall@5``,
``retrieval_ndcg_at_10`` → ``ndcg@10``, ``retrieval_mrr`` → ``mrr``). The metric is resolved by
the registry, which also gives its direction (``higher_is_better``).

The file is checked as a whole before anything is read: structure against the format (unknown
keys with "did you mean", wrong types), then meaning (a metric the registry does not know, a
gate with neither ``threshold`` nor ``regression_max``, a negative limit, ``noise_aware``
without ``regression_max``, two gates with one name). Every problem is reported at once with
its key path (``gates[1].regression_max``); exit status 2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from evalframe.data.contracts import load_yaml
from evalframe.errors import NO_VALUE, ConfigError, Problem
from evalframe.metrics.base import Metric
from evalframe.metrics.registry import resolve
from evalframe.pipeline.format import check as check_format
from evalframe.pipeline.format import load_format

NAME_PREFIX = "retrieval_"
DEFAULT_GROUPING = "overall"
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOP = 5
#: The column whose grouping the PR comment breaks down by default.
DEFAULT_BREAKDOWN_COLUMN = "tags"

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class SliceSpec:
    """A slice of the results: a grouping set and its key values (none for ``overall``)."""

    grouping: str = DEFAULT_GROUPING
    keys: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``overall``, or ``tier = A``, ``tags = multi_hop``."""
        if not self.keys:
            return self.grouping
        return ", ".join(f"{column} = {value}" for column, value in self.keys.items())


@dataclass(frozen=True)
class Gate:
    """One gate: a floor and/or a regression limit on one metric of one slice (module docstring)."""

    name: str
    metric: Metric
    threshold: float | None = None
    regression_max: float | None = None
    severity: Severity = "error"
    slice: SliceSpec = SliceSpec()
    #: The subset whose value the gate reads (the summary's ``subset`` text); None: the only one.
    subset: str | None = None
    system: str | None = None
    noise_aware: bool = False
    #: The key path of the gate in the file (``gates[0]``), for messages.
    path: str = "gates[0]"
    #: Where its metric came from: ``metric`` or ``name`` (for messages naming the key).
    metric_key: str = "name"

    @property
    def higher_is_better(self) -> bool:
        return bool(self.metric.higher_is_better)

    @property
    def blocking(self) -> bool:
        return self.severity == "error"


@dataclass(frozen=True)
class NoiseSettings:
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE


@dataclass(frozen=True)
class Criteria:
    """A checked ship-criteria file."""

    gates: tuple[Gate, ...]
    noise: NoiseSettings = NoiseSettings()
    breakdown_grouping: str | None = None
    breakdown_top: int = DEFAULT_TOP
    source: str = "criteria"


def metric_from_name(name: str) -> str | None:
    """The metric a gate's name says (module docstring), or None when the name says none.

    >>> metric_from_name("retrieval_recall_at_5"), metric_from_name("retrieval_mrr"), metric_from_name("latency")
    ('recall@5', 'mrr', None)
    """
    if not name.startswith(NAME_PREFIX) or len(name) == len(NAME_PREFIX):
        return None
    return re.sub(r"_at_(?=[^_]+$)", "@", name[len(NAME_PREFIX):])


def load_criteria(path: str | Path) -> Criteria:
    """Read and check a ship-criteria file (every problem at once, :class:`ConfigError`)."""
    path = Path(path)
    try:
        document = load_yaml(path.read_text())
    except (OSError, UnicodeError) as error:
        raise ConfigError(f"{path}: cannot read the ship criteria: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: is not valid YAML: {error}") from None
    return criteria_from_mapping(document, source=str(path))


def criteria_from_mapping(document: Any, *, source: str = "criteria") -> Criteria:
    """Check a loaded ship-criteria document and build its :class:`Criteria`."""
    problems = check_format(document, load_format("ship_criteria"))
    if problems:
        raise ConfigError.of(problems, source=source)
    gates, problems = [], []
    seen: dict[str, str] = {}
    for index, body in enumerate(document["gates"]):
        where = f"gates[{index}]"
        gate, gate_problems = _gate(body, where)
        problems += gate_problems
        if body["name"] in seen:
            problems.append(Problem(f"{where}.name", None, body["name"], f"the same name as {seen[body['name']]}"))
        seen.setdefault(body["name"], where)
        if gate is not None:
            gates.append(gate)
    noise = NoiseSettings(**(document.get("noise") or {}))
    if noise.resamples < 100:
        problems.append(Problem("noise.resamples", None, noise.resamples, "must be at least 100"))
    if not 0.5 <= noise.confidence < 1:
        problems.append(Problem("noise.confidence", None, noise.confidence, "must be in [0.5, 1), e.g. 0.95"))
    breakdown = document.get("breakdown") or {}
    top = breakdown.get("top", DEFAULT_TOP)
    if top < 1:
        problems.append(Problem("breakdown.top", None, top, "must be at least 1"))
    if problems:
        raise ConfigError.of(problems, source=source)
    return Criteria(gates=tuple(gates), noise=noise, breakdown_grouping=breakdown.get("grouping"),
                    breakdown_top=top, source=source)


def _gate(body: Mapping[str, Any], where: str) -> tuple[Gate | None, list[Problem]]:
    problems = []
    metric_key = "metric" if "metric" in body else "name"
    metric_name = body["metric"] if "metric" in body else metric_from_name(body["name"])
    metric = None
    if metric_name is None:
        problems.append(Problem(f"{where}.name", None, body["name"],
                                f"does not name a metric (`{NAME_PREFIX}<metric>`, `_at_` for `@`, e.g. "
                                "`retrieval_recall_at_5`); add `metric:`"))
    else:
        try:
            metric = resolve(metric_name)
        except ConfigError as error:
            read = "" if metric_key == "metric" else f" (read from the name as `{metric_name}`)"
            problems.append(Problem(f"{where}.{metric_key}", None, NO_VALUE, f"{error}{read}"))
    threshold, limit = body.get("threshold"), body.get("regression_max")
    if threshold is None and limit is None:
        problems.append(Problem(where, None, NO_VALUE, "checks nothing: give `threshold` and/or `regression_max`"))
    if limit is not None and limit < 0:
        problems.append(Problem(f"{where}.regression_max", None, limit,
                                "must be >= 0 (a drop is a positive number: 0.03 allows a 3-point drop)"))
    if body.get("noise_aware") and limit is None:
        problems.append(Problem(f"{where}.noise_aware", None, True, "needs `regression_max` (it qualifies the regression rule)"))
    if body.get("noise_aware") and metric is not None and getattr(metric, "level", None) == "set":
        problems.append(Problem(f"{where}.noise_aware", None, True,
                                f"`{metric.name}` has no per-query values to pair; noise-aware gates need a per-query metric"))
    if problems or metric is None:
        return None, problems
    slice_body = body.get("slice") or {}
    return Gate(
        name=body["name"],
        metric=metric,
        threshold=None if threshold is None else float(threshold),
        regression_max=None if limit is None else float(limit),
        severity=body.get("severity", "error"),
        slice=SliceSpec(slice_body.get("grouping", DEFAULT_GROUPING), dict(slice_body.get("keys") or {})),
        subset=body.get("subset"),
        system=body.get("system"),
        noise_aware=bool(body.get("noise_aware", False)),
        path=where,
        metric_key=metric_key,
    ), []
