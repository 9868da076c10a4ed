"""One registry of metric names, read by the YAML pipelines, the CLI help and the tests.

Metric strings follow a small grammar::

    metric   := name [ "@" cutoff ] [ "(" param "=" value { "," param "=" value } ")" ]
    cutoff   := integer | param "=" value

``recall@5``, ``ndcg@10(gain=linear)``, ``map@100``, ``mrr``, ``tpr@fpr=0.01``. Names and
aliases are case-insensitive (``P@5`` is ``precision@5``). Each family module declares its
metrics in a ``SPECS`` list; :func:`resolve` turns a string (or a metric object) into a
metric and an unknown name gets a "did you mean" hint.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from evalframe.errors import ConfigError
from evalframe.metrics.base import Metric

#: Modules that declare metric families (each has a module-level ``SPECS`` list).
FAMILY_MODULES = (
    "evalframe.metrics.retrieval_basic",
    "evalframe.metrics.retrieval_ranking",
    "evalframe.metrics.roc",
    "evalframe.metrics.confusion",
    "evalframe.metrics.calibration",
    "evalframe.metrics.multilabel",
    "evalframe.metrics.legal",
    "evalframe.metrics.gate",
    "evalframe.metrics.dynamic_k",
    "evalframe.metrics.query_counts",
)


@dataclass(frozen=True)
class Param:
    """A metric parameter: its name, type, default and allowed values."""

    name: str
    kind: type
    default: Any = None
    choices: tuple[Any, ...] | None = None
    doc: str = ""

    def parse(self, text: str, metric: str) -> Any:
        try:
            value = self.kind(text)
        except ValueError:
            msg = f"`{metric}`: parameter `{self.name}` must be {self.kind.__name__}, got {text!r}"
            raise ConfigError(msg) from None
        if self.choices is not None and value not in self.choices:
            msg = f"`{metric}`: parameter `{self.name}` must be one of {list(self.choices)}, got {text!r}"
            raise ConfigError(msg)
        return value


@dataclass(frozen=True)
class MetricSpec:
    """Registry entry: how a metric is named, parameterised and built."""

    name: str
    build: Callable[..., Metric]
    doc: str
    params: tuple[Param, ...] = ()
    #: The parameter ``@`` sets (``k`` for ``recall@5``); None when ``@`` is not allowed.
    at: str | None = None
    #: Whether ``@`` must be given (``recall`` needs a k, ``mrr`` does not).
    at_required: bool = False
    aliases: tuple[str, ...] = field(default_factory=tuple)
    #: Registered name of the metric meant when this name comes without ``@``: ``precision@5``
    #: is ranking precision, plain ``precision`` the classification precision (``ppv``).
    without_cutoff: str | None = None
    #: Parameters a pipeline's ``parameters:`` block may set for this metric (``threshold``);
    #: no other shared value ever reaches it (a cutoff comes only from the metric's name).
    shared: tuple[str, ...] = ()

    def param(self, name: str) -> Param:
        for param in self.params:
            if param.name == name:
                return param
        known = ", ".join(p.name for p in self.params) or "none"
        msg = f"`{self.name}` has no parameter `{name}` (parameters: {known})"
        raise ConfigError(msg)


_GRAMMAR = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:@(?P<at>[^()\s]+))?"
    r"(?:\((?P<params>[^()]*)\))?\s*$"
)


@cache
def _specs() -> dict[str, MetricSpec]:
    """Every registered spec by lower-cased name and alias."""
    table: dict[str, MetricSpec] = {}
    for module_name in FAMILY_MODULES:
        for spec in importlib.import_module(module_name).SPECS:
            for key in (spec.name, *spec.aliases):
                if key.lower() in table:
                    msg = f"metric name `{key}` is registered twice"
                    raise RuntimeError(msg)
                table[key.lower()] = spec
    return table


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
    match = _GRAMMAR.match(metric)
    if match is None:
        msg = f"cannot parse metric `{metric}` (expected e.g. `recall@5`, `ndcg@10(gain=linear)`)"
        raise ConfigError(msg)
    spec = _specs().get(match["name"].lower())
    if spec is None:
        raise _unknown(match["name"])
    values: dict[str, Any] = {}
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


def shared_parameters() -> dict[str, list[str]]:
    """Each parameter a pipeline's ``parameters:`` may set, and the metrics that read it."""
    readers: dict[str, list[str]] = {}
    for spec in available():
        for name in spec.shared:
            readers.setdefault(name, []).append(spec.name)
    return readers


def resolve_all(metrics: Iterable[str | Metric], *, defaults: Mapping[str, Any] | None = None) -> list[Metric]:
    """Resolve several metrics, dropping repeats (``P@5`` and ``precision@5`` are one metric)."""
    resolved: dict[str, Metric] = {}
    for metric in metrics:
        found = resolve(metric, defaults=defaults)
        resolved.setdefault(found.name, found)
    return list(resolved.values())
