"""What an evaluation computes: metric groups bound to subsets, slices, units, weight, policies.

A :class:`Plan` is built by :func:`evalframe.evaluate` (through :func:`build_groups`) or from a
pipeline file (:mod:`evalframe.pipeline.spec`); the engine (:mod:`evalframe.engine.evaluation`)
runs it, and the result (:class:`~evalframe.engine.result.Evaluation`) carries it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalframe.data.subsets import ALL_QUERIES, EVERY_QUERY, Subset
from evalframe.data.units import SYSTEM
from evalframe.engine.aggregate import ENGINE_COLUMNS
from evalframe.engine.ranking import check_threshold
from evalframe.errors import ConfigError
from evalframe.metrics.base import Metric
from evalframe.metrics.registry import resolve_all
from evalframe.engine.bootstrap import Bootstrap

EmptyPolicy = Literal["skip", "zero"]
MissingPolicy = Literal["error", "zero"]
ScorePrecision = Literal["float64", "float32"]


@dataclass(frozen=True)
class MetricGroup:
    """Metrics computed on one subset of queries."""

    subset: Subset
    metrics: tuple[Metric, ...]

    def subset_text(self, metric: Metric) -> str:
        """The summary's ``subset`` of ``metric`` in this group: the group's subset, else the metric's own."""
        return self.subset.description if self.subset.where else metric.subset


@dataclass(frozen=True)
class Plan:
    """What an evaluation computes; built by :func:`evaluate` or from a pipeline file.

    ``slices`` maps grouping-set names to slice keys (``{"overall": (), "fold": ("fold",)}``);
    ``units`` names coarser units and their key columns (``{"post": ("post_id",)}``);
    ``weight`` names a queries column holding each unit's non-negative weight;
    ``across_folds`` names the fold key whose per-fold values get mean ± std rows.
    ``bootstrap`` (:class:`~evalframe.engine.bootstrap.Bootstrap`) adds confidence intervals to
    every summary row (the uncertainty stage, :mod:`evalframe.engine.uncertainty`); None: none.
    ``about`` carries descriptive facts for reports (pipeline name, source, outputs, …).
    """

    groups: tuple[MetricGroup, ...]
    slices: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {"overall": ()})
    units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    weight: str | None = None
    across_folds: str | None = None
    relevance_threshold: int = 1
    empty: EmptyPolicy = "skip"
    missing: MissingPolicy = "error"
    max_depth: int | None = None
    score_precision: ScorePrecision = "float64"
    bootstrap: Bootstrap | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    #: ``(tau_neg, tau_pos)``: the derive stage adds the gate ``state`` column from ``prob``
    #: (:func:`evalframe.engine.derive.with_state`); None: the input's own ``state``, if any.
    state_thresholds: tuple[float, float] | None = None
    about: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_threshold(self.relevance_threshold)
        if self.empty not in ("skip", "zero"):
            raise ConfigError(f"`empty` must be 'skip' or 'zero', got {self.empty!r}")
        if self.missing not in ("error", "zero"):
            raise ConfigError(f"`missing` must be 'error' or 'zero', got {self.missing!r}")
        if self.max_depth is not None and (isinstance(self.max_depth, bool) or not isinstance(self.max_depth, int) or self.max_depth < 1):
            raise ConfigError(f"`max_depth` must be a whole number >= 1, got {self.max_depth!r}")
        if self.score_precision not in ("float64", "float32"):
            raise ConfigError(f"`score_precision` must be 'float64' or 'float32', got {self.score_precision!r}")
        if self.bootstrap is not None and not isinstance(self.bootstrap, Bootstrap):
            raise ConfigError(f"`bootstrap` must be an evalframe.Bootstrap, got {self.bootstrap!r}")
        if not any(group.metrics for group in self.groups):
            raise ConfigError("no metric to compute")
        if self.across_folds is not None and self.fold_grouping is None:
            msg = f"across_folds `{self.across_folds}` needs a slice that groups by [{self.across_folds}] alone"
            raise ConfigError(msg)
        check_slice_keys(self.slices)
        for group in self.groups:
            names = [metric.name for metric in group.metrics]
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise ConfigError(f"subset `{group.subset.name}` lists {repeated} twice")

    @property
    def metrics(self) -> list[Metric]:
        """Every metric once, in the order first listed."""
        return list({metric.name: metric for group in self.groups for metric in group.metrics}.values())

    @property
    def slice_keys(self) -> list[str]:
        return list(dict.fromkeys(key for keys in self.slices.values() for key in keys))

    @property
    def fold_grouping(self) -> str | None:
        """The grouping set that groups by the fold key alone."""
        return next((name for name, keys in self.slices.items() if list(keys) == [self.across_folds]), None)


def slice_keys_problem(keys: Sequence[str]) -> str | None:
    """What is wrong with a grouping set's ``keys``, or None: they must name each column once,
    never ``system`` (every slice is per system already) nor a column the summary or its partials
    make (:data:`~evalframe.engine.aggregate.ENGINE_COLUMNS`: it would meet that column in a join).
    Told by :func:`check_slice_keys` and by a pipeline file's check (naming the file and key)."""
    keys = list(keys)
    if len(set(keys)) < len(keys) or SYSTEM in keys:
        return f"must name each column once and not `system` (every slice is per system already), got {keys!r}"
    taken = [key for key in keys if key in ENGINE_COLUMNS]
    if taken:
        return (f"names {taken[0]!r}, a column the summary or its partials make ({', '.join(ENGINE_COLUMNS)}): "
                "rename that column of the input")
    return None


def check_slice_keys(slices: Mapping[str, Sequence[str]]) -> None:
    """Each grouping set's keys as :func:`slice_keys_problem` asks; checked by every
    :class:`Plan`, however it is built (``evaluate``, a pipeline file)."""
    for name, keys in slices.items():
        problem = slice_keys_problem(keys)
        if problem is not None:
            raise ConfigError(f"`slices[{name!r}]` {problem}")


def check_argument_types(metrics: Any, **mappings: Any) -> None:
    """The engine's door for the shapes of ``evaluate``'s arguments (issue 21 part 5: a wrong
    type is a :class:`ConfigError` naming the argument, never a TypeError from deep inside):
    ``metrics`` a list of metric names or objects, or a mapping from subset name to such a list;
    each of ``mappings`` (``subsets``, ``slices``, ``units``, ``parameters``, ``grouping_sets``)
    None or a mapping, and the key lists of ``slices``, ``units`` and ``grouping_sets`` lists of
    column names (what the keys may be: :func:`check_slice_keys`, from :class:`Plan`)."""
    def names(value: Any, where: str) -> None:
        listed = value if isinstance(value, Mapping) else {"metrics": value}
        for key, items in listed.items():
            at = where if not isinstance(value, Mapping) else f"{where}[{key!r}]"
            if isinstance(items, str | Metric) or not isinstance(items, Iterable):
                raise ConfigError(f"`{at}` must be a list of metric names or metric objects, got {items!r}")
            for item in items:
                if not isinstance(item, str | Metric):
                    raise ConfigError(f"`{at}` lists {item!r}, which is neither a metric name nor a metric object")

    names(metrics, "metrics")
    for argument, value in mappings.items():
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(f"`{argument}` must be a mapping (a dict), got {value!r}")
        if argument in ("slices", "units", "grouping_sets"):
            for name, keys in value.items():
                if isinstance(keys, str) or not isinstance(keys, Iterable) or not all(isinstance(k, str) for k in keys):
                    raise ConfigError(f"`{argument}[{name!r}]` must be a list of column names, got {keys!r}")


def build_groups(
    metrics: Iterable[str | Metric] | Mapping[str, Iterable[str | Metric]],
    subsets: Mapping[str, str | Subset] | None,
    *,
    parameters: Mapping[str, Any] | None = None,
) -> tuple[MetricGroup, ...]:
    """Metric groups from ``evaluate``'s arguments.

    ``metrics`` is a list (computed on all queries and on every subset of ``subsets``) or a
    mapping from subset name (``all_queries`` or a key of ``subsets``) to metrics.
    """
    named = {ALL_QUERIES: EVERY_QUERY}
    for name, body in (subsets or {}).items():
        named[name] = body if isinstance(body, Subset) else Subset(name, name, body)
    if isinstance(metrics, Mapping):
        unknown = sorted(set(metrics) - set(named))
        if unknown:
            raise ConfigError(f"metrics name unknown subsets {unknown} (subsets: {sorted(named)})")
        bound = {name: list(names) for name, names in metrics.items()}
    else:
        listed = list(metrics)
        bound = {name: listed for name in named}
    return tuple(
        MetricGroup(named[name], tuple(resolve_all(names, defaults=parameters))) for name, names in bound.items()
    )
