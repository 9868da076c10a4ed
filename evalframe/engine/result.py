"""The one result type of every evaluation (:func:`evalframe.evaluate`, every pipeline).

- ``summary``: tidy, one row per (grouping set, system, slice key values, metric, subset) with
  ``unit``, ``n``, ``n_skipped``, ``value``, ``std``, ``median``, ``p25``, ``p75`` and ``note``;
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

    # --- notebook display (issue 12): report tables and plots ------------------------------

    @cached_property
    def _report_tables(self):
        """Report data without plot points (tables only; cheap)."""
        import polars as pl

        from evalframe.report.tables import ReportData

        return ReportData.from_evaluation(self, curves=pl.DataFrame())

    def report_table(self) -> pl.DataFrame:
        """The report table of every grouping (``report_tables.csv``): metric, value (mean ± std),
        95% CI, subset, n, interpretation, target; ``.to_pandas()`` for pandas."""
        from evalframe.report.tables import report_rows

        return report_rows(self._report_tables)

    def table(self, grouping: str | None = None, metrics: list[str] | None = None, systems: list[str] | None = None):
        """One grouping's report table (default overall) as a ``great_tables.GT``, optionally
        restricted to ``metrics`` and ``systems``: ``ev.table(grouping="criterion", metrics=["auroc"])``."""
        from evalframe.report.html import overall_gt

        return overall_gt(self._report_tables, grouping=grouping, metrics=metrics, systems=systems)

    def to_pandas(self, table: str = "summary"):
        """``summary`` (default), ``per_query``, ``report`` or a further result table as pandas."""
        if table == "summary":
            return self.summary.to_pandas()
        if table == "per_query":
            return self.per_query.to_pandas()
        if table == "report":
            return self.report_table().to_pandas()
        if table in self.tables:
            return self.tables[table].to_pandas()
        from evalframe.errors import ConfigError

        known = ", ".join(["summary", "per_query", "report", *self.tables])
        raise ConfigError(f"no table `{table}` in this result (tables: {known})")

    def _repr_html_(self) -> str:
        """A notebook shows the overall report table."""
        from evalframe.report.html import strip_external

        return strip_external(self.table().as_raw_html())

    @cached_property
    def plot(self):
        """``ev.plot.roc()``, ``.pr()``, ``.reliability(system=...)``, ``.criterion_bars(metric)``,
        ``.dynamic_k()``, ``.fold_spread()``, ``.forest()``: matplotlib Figures (never shown)."""
        from evalframe.report.plots import PlotAccessor
        from evalframe.report.tables import ReportData

        return PlotAccessor(ReportData.from_evaluation(self))

    def write(self, out_dir: str | Path, outputs: tuple[str, ...] | None = None) -> Path:
        """Write the outputs (default: the pipeline's, else all) under ``out_dir`` atomically."""
        from evalframe.report.outputs import write_outputs

        return write_outputs(self, Path(out_dir), outputs)
