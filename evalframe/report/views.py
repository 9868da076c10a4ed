"""What a user reaches from a result: ``ev.info``, ``ev.overview()``, ``ev.report_table()``,
``ev.table()``, notebook display, ``ev.plot`` and ``ev.write()``.

The engine defines :class:`~evalframe.engine.result.Evaluation` and knows nothing of reports;
this module attaches the report side's views to it through
:func:`~evalframe.engine.result.evaluation_view` (``import evalframe`` imports it). Each view
imports its renderer on first use, so attaching them costs nothing at import time.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalframe.engine.result import Evaluation, evaluation_view


@evaluation_view(cached=True)
def info(self: Evaluation) -> dict:
    """The run description written to ``run.json``."""
    from evalframe.results.run_info import describe_run

    return describe_run(self)


@evaluation_view()
def overview(self: Evaluation) -> str:
    """The compact terminal table of overall results."""
    from evalframe.report.terminal import render_overview

    return render_overview(self)


@evaluation_view(cached=True)
def _report_tables(self: Evaluation):
    """Report data without plot points (tables only; cheap)."""
    from evalframe.report.tables import ReportData

    return ReportData.from_evaluation(self, curves=pl.DataFrame())


@evaluation_view()
def report_table(self: Evaluation) -> pl.DataFrame:
    """The report table of every grouping (``report_tables.csv``): metric, value (mean ± std),
    95% CI, subset, n, interpretation, target; ``.to_pandas()`` for pandas."""
    from evalframe.report.tables import report_rows

    return report_rows(self._report_tables)


@evaluation_view()
def table(self: Evaluation, grouping: str | None = None, metrics: list[str] | None = None, systems: list[str] | None = None):
    """One grouping's report table (default overall) as a ``great_tables.GT``, optionally
    restricted to ``metrics`` and ``systems``: ``ev.table(grouping="criterion", metrics=["auroc"])``."""
    from evalframe.report.html import overall_gt

    return overall_gt(self._report_tables, grouping=grouping, metrics=metrics, systems=systems)


@evaluation_view()
def _repr_html_(self: Evaluation) -> str:
    """A notebook shows the overall values, the systems side by side."""
    from evalframe.report.html import overview_html

    return overview_html(self._report_tables)


@evaluation_view(cached=True)
def plot(self: Evaluation):
    """``ev.plot.roc()``, ``.pr()``, ``.reliability(system=...)``, ``.criterion_bars(metric)``,
    ``.dynamic_k()``, ``.fold_spread()``, ``.forest()``: matplotlib Figures, shown inline in
    Jupyter (no magic, no backend chosen) and never opened in a window."""
    from evalframe.report.notebook import show_figures_inline
    from evalframe.report.plots import PlotAccessor
    from evalframe.report.tables import ReportData

    show_figures_inline()
    return PlotAccessor(ReportData.from_evaluation(self))


@evaluation_view()
def write(self: Evaluation, out_dir: str | Path, outputs: tuple[str, ...] | None = None, *, force: bool = False,
          early=None) -> Path:
    """Write the outputs (default: the pipeline's, else all) under ``out_dir`` atomically
    (:func:`evalframe.report.outputs.write_outputs`; ``force`` and ``early``: see there)."""
    from evalframe.report.outputs import write_outputs

    return write_outputs(self, Path(out_dir), outputs, force=force, early=early)
