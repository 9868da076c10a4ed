"""The table of registered metrics: what ``evalframe metrics`` prints and ``ef.list_metrics()`` returns.

One row per registered spec (bundled, entry point or :func:`~evalframe.metrics.registry.register_metric`),
read from the registry and the metric classes, never from a list kept here:

- ``name``, ``aliases``; ``target`` (seed 000 §2.1), ``level`` (item / query / set), ``unit``;
- ``range``: the closed interval every value lies in (the metric's declared ``value_range``,
  which the checks stage verifies), written ``[0, 1]``, ``[0, ∞)``; null where none is declared;
- ``direction``: ``higher is better`` or ``lower is better``; ``kind``: ``rate``, ``score`` or
  ``count`` (how reports print it);
- ``description``: the spec's one-line definition; ``meaning``: what a value means for a reader
  (the spec's ``meaning`` template, its parameters in braces: ``… in the top {k}``);
- ``parameters``: each declared parameter as a metric string sets it (``gain=exponential
  {exponential|linear}``; ``k (required)`` for a cutoff that must be given).

A metric whose ``@`` cutoff is required is built with an example cutoff to read its level, unit
and range (those do not depend on the cutoff's value).
"""

from __future__ import annotations

import math

import polars as pl

from evalframe.metrics.base import Metric, TargetCategory
from evalframe.metrics.interpretation import describe
from evalframe.metrics.params import Param
from evalframe.metrics.registry import MetricSpec, available

#: The columns of :func:`list_metrics`, in order.
COLUMNS = {
    "name": pl.String, "aliases": pl.List(pl.String), "target": pl.String, "level": pl.String, "unit": pl.String,
    "range": pl.String, "direction": pl.String, "kind": pl.String, "description": pl.String, "meaning": pl.String,
    "parameters": pl.String,
}


def _bound(value: float) -> str:
    return ("-∞" if value < 0 else "∞") if math.isinf(value) else f"{value:g}"


def value_range_text(value_range: tuple[float, float] | None) -> str | None:
    """``(0.0, 1.0)`` → ``[0, 1]``, ``(0.0, inf)`` → ``[0, ∞)``; None stays None."""
    if value_range is None:
        return None
    low, high = value_range
    return f"{'(' if math.isinf(low) else '['}{_bound(low)}, {_bound(high)}{')' if math.isinf(high) else ']'}"


def parameter_text(param: Param) -> str:
    """A parameter as a metric string sets it: ``name=default`` and its choices, or ``name (required)``."""
    if param.required:
        return f"{param.name} (required)"
    listed = f" {{{'|'.join(param.shown(choice) for choice in param.choices)}}}" if param.choices else ""
    return f"{param.name}={param.shown(param.default)}{listed}"


def _example(spec: MetricSpec) -> Metric:
    """The spec's metric, with an example cutoff when ``@`` must be given."""
    if not spec.at_required:
        return spec.build()
    cutoff = spec.param(spec.at)
    value = cutoff.choices[0] if cutoff.choices else 10 if cutoff.kind is int else 0.1
    return spec.build(**{spec.at: value})


def list_metrics() -> pl.DataFrame:
    """Every registered metric, one row each, grouped by target category in the taxonomy's order
    (registration order within a category); columns as the module docstring lists them.

    >>> import evalframe as ef
    >>> table = ef.list_metrics()
    >>> table.filter(name="recall").select("range", "direction", "parameters").row(0)
    ('[0, 1]', 'higher is better', 'k (required)')
    """
    order = {category: i for i, category in enumerate(TargetCategory)}
    rows = []
    for spec in available():
        metric = _example(spec)
        rows.append({
            "name": spec.name,
            "aliases": list(spec.aliases),
            "target": metric.target.value,
            "level": metric.level.value,
            "unit": metric.unit,
            "range": value_range_text(metric.value_range),
            "direction": "higher is better" if metric.higher_is_better else "lower is better",
            "kind": describe(metric).kind,
            "description": spec.doc,
            "meaning": spec.meaning,
            "parameters": ", ".join(parameter_text(param) for param in spec.params),
            "_order": order.get(metric.target, len(order)),
        })
    table = pl.DataFrame(rows, schema={**COLUMNS, "_order": pl.Int64})
    return table.with_row_index("_seen").sort("_order", "_seen").drop("_order", "_seen")
