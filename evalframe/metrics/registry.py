"""One registry of metric names, read by the YAML pipelines, the CLI help and the tests.

Metric strings follow a small grammar::

    metric   := name [ "[" part "]" ] [ "@" cutoff ] [ "(" param "=" value { "," param "=" value } ")" ]
    cutoff   := integer | param "=" value

``recall@5``, ``ndcg@10(gain=linear)``, ``map@100``, ``mrr``, ``tpr@fpr=0.01``,
``llm_answer_quality[clarity]`` (``[part]`` sets the parameter the spec names ``bracket``). Names and
aliases are case-insensitive (``P@5`` is ``precision@5``). :func:`resolve` turns a string (or a
metric object) into a metric and an unknown name gets a "did you mean" hint.

**Where metrics come from** (the registry is open; nothing here lists them):

- every module of the :mod:`evalframe.metrics` package that declares a ``SPECS`` list (a new
  family is one new module, found without editing anything else);
- installed packages, through the entry point group ``evalframe.metrics`` (:data:`ENTRY_POINT_GROUP`):
  each entry point names a module with a ``SPECS`` list;
- :func:`register_metric` at run time (``ef.register_metric(MetricSpec(...))``), e.g. in a notebook
  or a test.

The CLI listing (``evalframe metrics``), the pipelines' name checks and the reports'
interpretations (:attr:`MetricSpec.meaning`, :mod:`evalframe.metrics.interpretation`) all read
this one table. CONTRIBUTING.md walks through adding a metric.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from evalframe.errors import ConfigError
from evalframe.metrics.base import Metric
from evalframe.metrics.params import Param, params_of

__all__ = ["ENTRY_POINT_GROUP", "MetricSpec", "Param", "register_metric", "resolve", "unregister_metric"]

#: The entry point group through which an installed package adds metric families: each entry
#: point names a module with a ``SPECS`` list (``[project.entry-points."evalframe.metrics"]``).
ENTRY_POINT_GROUP = "evalframe.metrics"


@dataclass(frozen=True)
class MetricSpec:
    """Registry entry: how a metric is named, parameterised and built."""

    name: str
    build: Callable[..., Metric]
    #: One line on what the metric is; by default the first line of the build class's docstring.
    doc: str = ""
    #: The parameters a metric string may set. None (the default): those the build class
    #: declares with :func:`evalframe.metrics.params.param` (declared once, on the class); a
    #: spec whose ``build`` is a function lists them here.
    params: tuple[Param, ...] | None = None
    #: The parameter ``@`` sets (``k`` for ``recall@5``); None when ``@`` is not allowed.
    at: str | None = None
    #: Whether ``@`` must be given (``recall`` needs a k, ``mrr`` does not).
    at_required: bool = False
    aliases: tuple[str, ...] = field(default_factory=tuple)
    #: Registered name of the metric meant when this name comes without ``@``: ``precision@5``
    #: is ranking precision, plain ``precision`` the classification precision (``ppv``).
    without_cutoff: str | None = None
    #: Parameters a pipeline's ``parameters:`` block may set for this metric (``threshold``);
    #: no other shared value ever reaches it (a cutoff comes only from the metric's name). Those
    #: declared ``param(..., shared=True)`` are added.
    shared: tuple[str, ...] = ()
    #: What the metric means for a reader, a template over its parameters (``"… in the top {k}"``),
    #: and the kind of number (``rate``, ``score``, ``count``); reports print them
    #: (:func:`evalframe.metrics.interpretation.describe`).
    meaning: str | None = None
    kind: str | None = None
    #: The parameter ``[part]`` after the name sets (``dimension`` for ``llm_answer_quality[clarity]``).
    bracket: str | None = None

    def __post_init__(self) -> None:
        if not self.doc and isinstance(self.build, type) and self.build.__doc__:
            object.__setattr__(self, "doc", self.build.__doc__.strip().splitlines()[0])
        params = self.params if self.params is not None else params_of(self.build) if isinstance(self.build, type) else ()
        object.__setattr__(self, "params", tuple(params))
        shared = (*self.shared, *(p.name for p in params if p.shared and p.name not in self.shared))
        object.__setattr__(self, "shared", shared)

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        known = ", ".join(p.name for p in self.params) or "none"
        msg = f"`{self.name}` has no parameter `{name}` (parameters: {known})"
        raise ConfigError(msg)


_GRAMMAR = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\[(?P<part>[^\[\]()@]+)\])?"
    r"(?:@(?P<at>[^()\s]+))?"
    r"(?:\((?P<params>[^()]*)\))?\s*$"
)


def _family_modules() -> list[str]:
    """The modules that declare metric families: those of this package with a ``SPECS`` list,
    then those installed packages name in :data:`ENTRY_POINT_GROUP`."""
    import evalframe.metrics as package

    bundled = [f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)]
    bundled = [name for name in bundled if hasattr(importlib.import_module(name), "SPECS")]
    return [*bundled, *_plugin_modules()]


@cache
def _plugin_modules() -> tuple[str, ...]:
    """The modules installed packages name in :data:`ENTRY_POINT_GROUP` (read once a process)."""
    from importlib.metadata import entry_points

    return tuple(point.value for point in entry_points(group=ENTRY_POINT_GROUP))


#: Specs added by :func:`register_metric`, in the order they came.
_runtime: list[MetricSpec] = []


def _add(table: dict[str, MetricSpec], spec: MetricSpec, origin: str) -> None:
    for key in (spec.name, *spec.aliases):
        if key.lower() in table:
            msg = f"metric name `{key}` is registered twice (again by {origin})"
            raise ConfigError(msg)
    for key in (spec.name, *spec.aliases):
        table[key.lower()] = spec


@cache
def _specs() -> dict[str, MetricSpec]:
    """Every registered spec by lower-cased name and alias."""
    table: dict[str, MetricSpec] = {}
    for module_name in _family_modules():
        for spec in importlib.import_module(module_name).SPECS:
            _add(table, spec, module_name)
    for spec in _runtime:
        _add(table, spec, "register_metric")
    return table


def _lookup(name: str) -> MetricSpec | None:
    """The spec registered under ``name`` (any case), without importing every family when it can.

    Once the whole table is built (:func:`_specs`), it answers. Before that, a name is looked up
    among the specs added at run time and the families already imported (``import evalframe``
    brings the ranking families, so ``evalframe trec`` and ``ef.evaluate(..., ["ndcg@10"])``
    import no other family, nor NumPy through them); a name found nowhere there builds the
    table. A name is registered once in the whole table, so the spec found is the one the table
    holds: :func:`register_metric` checks a new name against the whole table, and a bundled
    family's clash is a test failure. Installed packages' families (entry points) can clash with
    any name at run time, so with any of them installed the table is always built, which
    reports such a clash ("registered twice") as before."""
    key = name.lower()
    if _specs.cache_info().currsize or _plugin_modules():
        return _specs().get(key)
    for spec in _runtime:
        if key in (spec.name.lower(), *(alias.lower() for alias in spec.aliases)):
            return spec
    import evalframe.metrics as package

    prefix = package.__name__ + "."
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith(prefix) and module is not None:
            for spec in getattr(module, "SPECS", ()):
                if key in (spec.name.lower(), *(alias.lower() for alias in spec.aliases)):
                    return spec
    return _specs().get(key)


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a metric to the registry at run time: ``resolve``, pipelines, ``evalframe metrics`` and
    reports then know it like a bundled one. A name or alias already registered is a
    :class:`~evalframe.errors.ConfigError` (a metric is never silently replaced).

    >>> from evalframe.metrics.registry import MetricSpec, register_metric
    >>> register_metric(MetricSpec("positive_share", PositiveShare, "share of positive labels",
    ...                            meaning="Share of the slice's queries with a positive label.", kind="rate"))  # doctest: +SKIP
    """
    if not isinstance(spec, MetricSpec):
        raise ConfigError(f"register_metric() takes a MetricSpec, got {type(spec).__name__}")
    _add(dict(_specs()), spec, "register_metric")  # refuse a clash before anything changes
    _runtime.append(spec)
    _specs.cache_clear()
    return spec


def unregister_metric(name: str) -> None:
    """Remove a metric added by :func:`register_metric` (tests, notebooks); bundled ones stay."""
    kept = [spec for spec in _runtime if spec.name != name]
    if len(kept) == len(_runtime):
        raise ConfigError(f"`{name}` was not added by register_metric()")
    _runtime[:] = kept
    _specs.cache_clear()


def spec_of(metric: Metric) -> MetricSpec | None:
    """The registry entry ``metric`` was built from (by its class, else its name's stem); None
    for a metric object that was never registered."""
    specs = available()
    for spec in specs:
        if spec.build is type(metric):
            return spec
    stem = re.split(r"[@(]", metric.name, maxsplit=1)[0].lower()
    for spec in specs:
        if stem in (spec.name.lower(), *(alias.lower() for alias in spec.aliases)):
            return spec
    return None


def available() -> list[MetricSpec]:
    """All registered metric specs, each once, in registration order."""
    seen: dict[str, MetricSpec] = {}
    for spec in _specs().values():
        seen.setdefault(spec.name, spec)
    return list(seen.values())


def _unknown(name: str) -> ConfigError:
    names = sorted({spec.name for spec in _specs().values()} | set(_specs()))
    close = difflib.get_close_matches(name.lower(), names, n=3)
    hint = f"; did you mean {', '.join(f'`{c}`' for c in close)}?" if close else ""
    return ConfigError(f"unknown metric `{name}`{hint} (see `evalframe metrics` for the list)")


def resolve(metric: str | Metric, *, defaults: Mapping[str, Any] | None = None) -> Metric:
    """Turn a metric string (``ndcg@10``) or metric object into a metric object.

    ``defaults`` gives shared parameter values (a pipeline's ``{"threshold": 0.3}``); they reach
    only metrics whose spec lists the parameter in ``shared`` and whose string does not set it.
    """
    if isinstance(metric, Metric):
        return metric
    if not isinstance(metric, str):
        raise ConfigError(f"a metric is a name such as `recall@5` or a metric object, got {metric!r}")
    match = _GRAMMAR.match(metric)
    if match is None:
        msg = f"cannot parse metric `{metric}` (expected e.g. `recall@5`, `ndcg@10(gain=linear)`)"
        raise ConfigError(msg)
    spec = _lookup(match["name"])
    if spec is None:
        raise _unknown(match["name"])
    values: dict[str, Any] = {}
    if match["part"] is not None:
        if spec.bracket is None:
            msg = f"`{spec.name}` takes no `[...]` part (got `{metric}`)"
            raise ConfigError(msg)
        values[spec.bracket] = spec.param(spec.bracket).parse(match["part"].strip(), metric)
    if match["at"] is not None:
        if spec.at is None:
            msg = f"`{spec.name}` takes no `@` cutoff (got `{metric}`)"
            raise ConfigError(msg)
        key, _, text = match["at"].rpartition("=")
        values[key or spec.at] = spec.param(key or spec.at).parse(text, metric)
    elif spec.without_cutoff is not None:
        return resolve(spec.without_cutoff + (f"({match['params']})" if match["params"] else ""), defaults=defaults)
    elif spec.at_required:
        msg = f"`{spec.name}` needs a cutoff, e.g. `{spec.name}@10`"
        raise ConfigError(msg)
    for item in filter(None, (part.strip() for part in (match["params"] or "").split(","))):
        key, equals, text = item.partition("=")
        if not equals:
            msg = f"`{metric}`: parameters are written key=value, got {item!r}"
            raise ConfigError(msg)
        values[key.strip()] = spec.param(key.strip()).parse(text.strip(), metric)
    for key, value in (defaults or {}).items():
        if key in spec.shared:
            values.setdefault(key, value)
    return spec.build(**values)


def canonical_name(name: str) -> str:
    """The registered name of a metric spelling (``P@5`` → ``precision@5``, ``NDCG@10`` →
    ``ndcg@10``); text the registry cannot resolve is returned as given, so a caller can look it
    up among names it already has (a result's own metric names) before calling it unknown."""
    try:
        return resolve(name).name
    except ConfigError:
        return name


def shared_parameters() -> dict[str, list[str]]:
    """Each parameter a pipeline's ``parameters:`` may set, and the metrics that read it."""
    readers: dict[str, list[str]] = {}
    for spec in available():
        for name in spec.shared:
            readers.setdefault(name, []).append(spec.name)
    return readers


def expanded(metric: Metric) -> list[Metric]:
    """The metrics one listed metric stands for: itself, or, for a metric with an ``expanded()``
    method (``llm_answer_quality``: a row per dimension, then their mean), what that gives."""
    expand = getattr(metric, "expanded", None)
    return list(expand()) if callable(expand) else [metric]


def resolve_all(metrics: Iterable[str | Metric], *, defaults: Mapping[str, Any] | None = None) -> list[Metric]:
    """Resolve several metrics, dropping repeats (``P@5`` and ``precision@5`` are one metric);
    a metric standing for several (:func:`expanded`) gives each of them."""
    resolved: dict[str, Metric] = {}
    for metric in metrics:
        for found in expanded(resolve(metric, defaults=defaults)):
            resolved.setdefault(found.name, found)
    return list(resolved.values())
