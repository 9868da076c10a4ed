"""The one result type of every evaluation (:func:`evalframe.evaluate`, every pipeline).

- ``summary``: tidy, one row per (grouping set, system, slice key values, metric, subset) with
  ``unit``, ``n``, ``n_skipped``, ``value``, ``std``, ``median``, ``p25``, ``p75``, the bootstrap's
  ``se``, ``ci_low``, ``ci_high`` (null without ``bootstrap``) and ``note``;
- ``replicates``: with a bootstrap, each summary row's replicate values (paired comparisons
  subtract them);
- ``per_query``: long per-query values (``system, query_id``, trace and slice keys, ``metric``,
  ``value``, ``skip_reason``) of the query-unit metrics; :meth:`Evaluation.per_unit` gives any
  unit's (``ev.per_unit("post")``);
- ``skipped``: per system, unit, metric and reason, how many units have no value;
- ``notes``: what was left out and why (never silently);
- ``tables``: further named result tables that later stages add (an ablation table, a tuning
  table, the consistency checks, a comparison), each written as ``<name>.csv`` and rendered as a
  section of ``summary.md``; ``inputs`` holds the input tables the result was computed from.

Renderers and writers live in :mod:`evalframe.report` and take a result; the methods here are
shortcuts to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.data.units import QUERY, Units

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.plan import Plan
    from evalframe.metrics.base import Metric


@dataclass(frozen=True)
class Evaluation:
    """What an evaluation returns (see the module docstring)."""

    summary: pl.DataFrame
    per_unit_values: pl.DataFrame
    skipped: pl.DataFrame
    plan: Plan
    units: Units
    queries: pl.DataFrame
    inputs: Tables | None = None
    notes: tuple[str, ...] = ()
    #: Where the input came from (path, sha256, format, rows), for ``run.json``.
    source: dict[str, Any] = field(default_factory=dict)
    #: The bootstrap's replicate values (when ``plan.bootstrap`` is set): the summary's key
    #: columns and ``values``, ``Array(Float64, R)``, nan where a replicate is undefined
    #: (:func:`evalframe.engine.uncertainty.replicates_table`); None without a bootstrap.
    replicates: pl.DataFrame | None = None
    #: Further named result tables (``"ablation"``, ``"checks"``, …), in the order they were added.
    tables: Mapping[str, pl.DataFrame] = field(default_factory=dict)

    def with_tables(self, **tables: pl.DataFrame) -> Evaluation:
        """A copy with named result tables added (a later stage's output; replaces same names)."""
        return replace(self, tables={**self.tables, **tables})

    @property
    def checks(self) -> pl.DataFrame | None:
        """The consistency checks table, when the evaluation ran them."""
        return self.tables.get("checks")

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return tuple(self.plan.metrics)

    def per_unit(self, unit: str = QUERY) -> pl.DataFrame:
        """Long values of one unit's metrics: its keys, trace and slice keys, ``metric``,
        ``value``, ``skip_reason`` (and ``subset`` when a metric is computed on several)."""
        rows = self.per_unit_values.filter(pl.col("unit") == unit)
        keys = [c for c in self.per_unit_values.columns if c not in ("metric", "value", "skip_reason", "unit", "subset")]
        keys = [c for c in keys if rows.get_column(c).null_count() < rows.height or c in self.units.key_columns(unit)]
        several = rows.group_by("metric").agg(pl.col("subset").n_unique() > 1).get_column("subset").any()
        extra = ["subset"] if several else []
        return rows.select(*keys, "metric", *extra, "value", "skip_reason")

    @cached_property
    def per_query(self) -> pl.DataFrame:
        """Long per-query values (query-unit metrics); see :meth:`per_unit`."""
        return self.per_unit(QUERY)

    def wide(self, unit: str = QUERY) -> pl.DataFrame:
        """Per-unit values with one column per metric (a notebook-friendly view)."""
        long = self.per_unit(unit)
        index = [c for c in long.columns if c not in ("metric", "value", "skip_reason", "subset")]
        return long.pivot(on="metric", index=index, values="value", maintain_order=True)

    @cached_property
    def info(self) -> dict[str, Any]:
        """The run description written to ``run.json``."""
        from evalframe.report.run_info import describe_run

        return describe_run(self)

    def overview(self) -> str:
        """The compact terminal table of overall results."""
        from evalframe.report.terminal import render_overview

        return render_overview(self)

    def write(self, out_dir: str | Path, outputs: tuple[str, ...] | None = None) -> Path:
        """Write the outputs (default: the pipeline's, else all) under ``out_dir`` atomically."""
        from evalframe.report.outputs import write_outputs

        return write_outputs(self, Path(out_dir), outputs)
