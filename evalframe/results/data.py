"""What the statistics read: an evaluation's results, from memory or from a result folder.

:class:`ResultData` holds the parts of a result that paired comparisons and power analysis
need, whichever door they come through:

- ``summary``: the tidy summary (``grouping, system, <slice keys>, metric, unit, subset, n, value, …``);
- ``values``: long per-unit values of every per-unit metric: ``system``, ``unit`` (its name),
  the unit's key columns, the slice keys the unit carries, ``metric``, ``subset`` (the
  summary's subset text, so rows join the summary) and ``value`` (null where undefined);
- ``unit_keys`` (unit name → key columns, without ``system``), ``slices`` (grouping → keys),
  ``levels`` (metric → ``item``/``query``/``set``), ``weight`` (the weight column or None);
- ``replicates``: the bootstrap replicates (``replicates.parquet``, or
  ``Evaluation.replicates``) when the result has them, else None;
- ``rows``: for set metrics, a callable giving ``(queries, plan)`` (the derived queries table
  with ``_weight``, and the plan) or raising :class:`~evalframe.errors.InputError` saying why
  they are unavailable; from a folder the input is re-read (its sha256 must still match
  ``run.json``; :func:`evalframe.results.reader.use_input_loader`).

:func:`from_evaluation` wraps an :class:`~evalframe.engine.result.Evaluation`;
:meth:`evalframe.results.reader.ResultFolder.data` reads a folder written by ``evalframe run``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from evalframe.errors import InputError, Problem


@dataclass(frozen=True)
class ResultData:
    """An evaluation's results as the statistics read them (module docstring)."""

    summary: pl.DataFrame
    values: pl.DataFrame
    unit_keys: Mapping[str, tuple[str, ...]]
    slices: Mapping[str, tuple[str, ...]]
    levels: Mapping[str, str]
    weight: str | None = None
    replicates: pl.DataFrame | None = None
    rows: Callable[[], tuple[pl.DataFrame, Any]] | None = None
    source: str = "evaluation"

    @property
    def systems(self) -> list[str]:
        return sorted(self.summary.get_column("system").unique().to_list())

    @property
    def slice_keys(self) -> list[str]:
        return list(dict.fromkeys(key for keys in self.slices.values() for key in keys))

    def check_system(self, system: str, role: str = "system") -> None:
        if system not in self.systems:
            known = ", ".join(f"`{s}`" for s in self.systems)
            raise InputError(self.source, Problem(None, "system", system, f"unknown {role} `{system}` (systems: {known})"))

    def check_metric(self, metric: str) -> None:
        known = self.summary.get_column("metric").unique(maintain_order=True).to_list()
        if metric not in known:
            import difflib

            close = difflib.get_close_matches(metric, known, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else f" (metrics: {', '.join(known)})"
            raise InputError(self.source, Problem(None, "metric", metric, f"unknown metric `{metric}`{hint}"))


def _subset_texts(plan) -> dict[tuple[str, str], str]:
    """(group subset name, metric) → the subset text the summary shows (engine's rule)."""
    return {
        (group.subset.name, metric.name): group.subset.description if group.subset.where else metric.subset
        for group in plan.groups
        for metric in group.metrics
    }


def from_evaluation(evaluation) -> ResultData:
    """The :class:`ResultData` of an in-memory :class:`~evalframe.engine.result.Evaluation`."""
    plan = evaluation.plan
    texts = _subset_texts(plan)
    mapping = pl.DataFrame(
        [{"subset": name, "metric": metric, "_text": text} for (name, metric), text in texts.items()],
        schema={"subset": pl.String, "metric": pl.String, "_text": pl.String},
    )
    values = (
        evaluation.per_unit_values.join(mapping, on=["subset", "metric"], how="left")
        .with_columns(subset=pl.col("_text")).drop("_text", "skip_reason")
    )
    queries, the_plan = evaluation.queries, plan
    return ResultData(
        summary=evaluation.summary,
        values=values,
        unit_keys={name: tuple(keys) for name, keys in evaluation.units.keys.items()},
        slices={name: tuple(keys) for name, keys in plan.slices.items()},
        levels={m.name: m.level.value for m in plan.metrics},
        weight=plan.weight,
        replicates=getattr(evaluation, "replicates", None),
        rows=lambda: (queries, the_plan),
        source="evaluation",
    )
