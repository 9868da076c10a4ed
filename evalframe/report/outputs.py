"""A pipeline's output files: which ones, and how each is rendered from a result.

The files are written by the results room's one atomic writer
(:func:`evalframe.results.writer.write_result`): a failed run leaves no partial output, an
earlier result is replaced only once the new one is complete, and only files an earlier
evalframe run wrote there are ever replaced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from evalframe.errors import ConfigError
from evalframe.pipeline.preflight import REPORT_FILES, require_report_extra
from evalframe.report.markdown import render_markdown
from evalframe.results.writer import check_out_dir, write_result


#: Report files (issue 12): rendered from :class:`~evalframe.report.tables.ReportData`; ``plots``
#: is the folder ``plots/`` with a PNG and an SVG of every plot.
#: Every output file, in the order they are written.
OUTPUT_FILES = ("per_query.parquet", "per_unit.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json",
                "replicates.parquet", "curves.parquet", *REPORT_FILES)


#: Outputs that show the report plots (drawn while the other files are written).
PLOTTED = {"plots", "report.html"}


def warm_up(outputs) -> None:
    """Start what drawing the report plots needs (the plot workers' fork server) when ``outputs``
    show plots, so that it starts while the input is read and the metrics computed."""
    if PLOTTED & set(outputs or ()):
        from evalframe.report.plots import warm_plot_workers

        warm_plot_workers()


class EarlyPlots:
    """The report plots being drawn from the engine's result while the stages after the engine
    run (:func:`start_plots`); :func:`write_outputs` takes them when the plots' inputs are
    unchanged, else drops them and draws anew (the bytes are those of plots drawn at writing)."""

    def __init__(self, data, pending) -> None:
        self.data, self.pending = data, pending

    def fits(self, data) -> bool:
        """Whether the plots drawn from :attr:`data` are those of ``data`` (the final result):
        the same summary, curves, systems, slices, fold key, name and metrics (only a table can
        differ: the plots that read one are drawn at writing)."""
        early = self.data
        return (early.curves is data.curves and early.summary.equals(data.summary) and early.name == data.name
                and early.slices == data.slices and early.fold_key == data.fold_key and early.systems == data.systems
                and dict(early.metrics) == dict(data.metrics))

    def close(self) -> None:
        self.pending.close()


def start_plots(evaluation, outputs) -> EarlyPlots | None:
    """Start drawing the report plots of the engine's result ``evaluation`` in the plot workers,
    when ``outputs`` show plots and the plots are drawn by workers: the other core draws while
    the stages after the engine run (they add tables, not plot data). None otherwise."""
    if not PLOTTED & set(outputs or ()):
        return None
    from evalframe.report.plots import FORMATS, HTML_PNG, start_report_plots
    from evalframe.report.tables import ReportData

    require_report_extra()
    data = ReportData.from_evaluation(evaluation)
    pending = start_report_plots(data, (*FORMATS, HTML_PNG))
    if not pending.parallel:
        return None
    return EarlyPlots(data, pending)


def default_outputs(evaluation) -> tuple[str, ...]:
    """The pipeline's outputs, else every file that has content (``per_unit.parquet`` only with
    metrics of a unit other than the query). ``replicates.parquet`` (R values per summary row:
    tens of MB for a bootstrap of a large summary) is written only when named in ``outputs``."""
    declared = evaluation.plan.about.get("outputs")
    if declared:
        return tuple(declared)
    coarse = any(m.unit != "query" for m in evaluation.metrics)
    basic = ("per_query.parquet", "per_unit.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json")
    skipped = {"per_unit.parquet"} if not coarse else set()
    return tuple(name for name in basic if name not in skipped)


def coarse_units_table(evaluation) -> pl.DataFrame:
    """``per_unit.parquet``: the long values of every unit other than the query, each unit's rows
    with its own keys (:meth:`~evalframe.engine.result.Evaluation.per_unit`) and a ``unit`` column."""
    return _coarse_units_lazy(evaluation).collect()


def _coarse_units_lazy(evaluation) -> pl.LazyFrame:
    """:func:`coarse_units_table`, lazy (over the per-unit value files of a bucket run: streamed)."""
    lazy = evaluation.per_unit_lazy()
    names = lazy.select(pl.col("unit").unique(maintain_order=True)).collect(engine="streaming").get_column("unit").to_list()
    parts = [evaluation.per_unit_lazy(name).with_columns(unit=pl.lit(name)) for name in names if name != "query"]
    if not parts:
        return lazy.limit(0)
    return pl.concat(parts, how="diagonal_relaxed").select("system", "unit", pl.exclude("system", "unit"))


def _write_values(evaluation, path: Path, unit: str | None) -> None:
    """``per_query.parquet`` (``unit="query"``) or ``per_unit.parquet`` (None: the coarse units);
    a bucket run's values streamed from its files to ``path`` (never all in memory)."""
    if evaluation.per_unit_on_disk:
        lazy = evaluation.per_unit_lazy(unit) if unit is not None else _coarse_units_lazy(evaluation)
        lazy.sink_parquet(path, statistics=False, engine="streaming")
    elif unit is not None:
        evaluation.per_query.write_parquet(path, statistics=False)
    else:
        coarse_units_table(evaluation).write_parquet(path, statistics=False)


def replicates_table(evaluation) -> pl.DataFrame:
    """``replicates.parquet``: :attr:`Evaluation.replicates` (empty, with the summary's keys, when no bootstrap ran)."""
    if evaluation.replicates is not None:
        return evaluation.replicates
    keys = [c for c in evaluation.summary.columns if c in ("grouping", "system", *evaluation.plan.slice_keys, "metric", "unit", "subset")]
    return evaluation.summary.select(keys).clear().with_columns(pl.lit(None, dtype=pl.List(pl.Float64)).alias("values"))


def table_files(evaluation) -> dict[str, pl.DataFrame]:
    """``<name>.csv`` for each further result table (:attr:`Evaluation.tables`), always written."""
    return {f"{name}.csv": table for name, table in evaluation.tables.items()}


def write_outputs(evaluation, out_dir: Path, outputs: tuple[str, ...] | None = None, *, force: bool = False,
                  early: EarlyPlots | None = None) -> Path:
    """Write ``outputs`` (default :func:`default_outputs`) into ``out_dir``; return ``out_dir``.

    Report files (:data:`REPORT_FILES`, ``curves.parquet``) are rendered from one
    :class:`~evalframe.report.tables.ReportData` of the result, its plot data computed once.

    ``per_unit.parquet`` holds the values of every unit other than the query (a ``unit`` column
    and each unit's keys); ``per_query.parquet`` those of the query unit. Every further result
    table (an ablation table, the checks, …) is written as ``<name>.csv`` as well.

    A folder holding files evalframe did not write is refused unless ``force``
    (:func:`evalframe.results.writer.write_result`); this is checked before anything is rendered.
    ``early``: the plots :func:`start_plots` began drawing (closed here in any case).
    """
    try:
        return _write_outputs(evaluation, out_dir, outputs, force=force, early=early)
    finally:
        if early is not None:
            early.close()


def _write_outputs(evaluation, out_dir: Path, outputs, *, force: bool, early: EarlyPlots | None) -> Path:
    out_dir = Path(out_dir)
    outputs = outputs or default_outputs(evaluation)
    extra = table_files(evaluation)
    unknown = sorted(set(outputs) - set(OUTPUT_FILES))
    if unknown:
        raise ConfigError(f"unknown outputs {unknown} (known: {list(OUTPUT_FILES)})")
    check_out_dir(out_dir, force=force, names=[*outputs, *extra])
    renderers = {
        "per_query.parquet": lambda path: _write_values(evaluation, path, "query"),
        "per_unit.parquet": lambda path: _write_values(evaluation, path, None),
        "summary.parquet": lambda path: evaluation.summary.write_parquet(path, statistics=False),
        "replicates.parquet": lambda path: replicates_table(evaluation).write_parquet(path, statistics=False),
        "summary.csv": lambda path: evaluation.summary.write_csv(path, float_precision=10),
        "summary.md": lambda path: path.write_text(render_markdown(evaluation)),
        "run.json": lambda path: path.write_text(json.dumps(evaluation.info, indent=2, sort_keys=False) + "\n"),
    }
    report = None
    if any(name == "curves.parquet" or name in REPORT_FILES for name in outputs):
        from evalframe.report.tables import ReportData

        if any(name in REPORT_FILES for name in outputs):
            require_report_extra()
        data = ReportData.from_evaluation(evaluation, curves=early.data.curves if early is not None else None)
        report = ReportWriter(data, early if early is not None and early.fits(data) else None)
        renderers |= report.writers()
    writers = {name: renderers[name] for name in outputs}
    for name, table in extra.items():
        writers[name] = lambda path, table=table: table.write_csv(path, float_precision=10)
    if report is None:
        return write_result(out_dir, writers, force=force)
    return written_beside_the_plots(report, writers, lambda ordered: write_result(out_dir, ordered, force=force))


def written_beside_the_plots(report: ReportWriter, writers: dict, write):
    """``write(writers)`` with the report plots drawn meanwhile: the plot workers start first,
    the files that show the plots come last (the order of writing changes no file), and the
    workers stop afterwards, also on an error. Returns what ``write`` returns."""
    if not PLOTTED & set(writers):
        return write(writers)
    report.start()
    try:
        return write({name: writers[name] for name in sorted(writers, key=lambda name: name in PLOTTED)})
    finally:
        report.close()


class ReportWriter:
    """Writers of the report files of one :class:`~evalframe.report.tables.ReportData`; the
    plots are drawn once (in worker processes when there are many:
    :func:`~evalframe.report.plots.start_report_plots`) and shared by ``plots/``, ``report.md``
    and ``report.html``. :meth:`start` sets the workers drawing while other files are written."""

    def __init__(self, data, early: EarlyPlots | None = None) -> None:
        self.data = data
        self._rendered: dict[str, dict[str, bytes]] | None = None
        self._pending = None
        self._missing = None  # the plots that plots begun early lack
        self._early = early
        self._extra: dict[str, dict[str, bytes]] | None = None

    def start(self) -> None:
        """Begin drawing the report plots (in worker processes, when there are many); with plots
        begun early, only those they lack (a plot of a table added after the engine)."""
        if self._pending is None and self._rendered is None:
            from evalframe.report.plots import FORMATS, HTML_PNG, report_plots, start_report_plots

            if self._early is None:
                self._pending = start_report_plots(self.data, (*FORMATS, HTML_PNG))
                return
            begun = report_plots(self._early.data)
            missing = [stem for stem in report_plots(self.data) if stem not in begun]
            self._pending = self._early.pending
            if missing:
                self._missing = start_report_plots(self.data, (*FORMATS, HTML_PNG), workers=0, stems=missing)

    @property
    def rendered(self) -> dict[str, dict[str, bytes]]:
        """Each plot's PNG and SVG bytes, by stem, drawn on first use (embedding results add
        their own plots: issue 24)."""
        if self._rendered is None:
            from evalframe.report.plots import report_plots

            self.start()
            extra = self._drawn_here()
            drawn = self._pending.result() | (self._missing.result() if self._missing is not None else {})
            rendered = {stem: drawn[stem] for stem in report_plots(self.data)} | extra
            self._pending = self._missing = None
            self._rendered = rendered
        return self._rendered

    def _drawn_here(self) -> dict[str, dict[str, bytes]]:
        """The plots of embedding and domain results (few), drawn in this process (once)."""
        if self._extra is None:
            from evalframe.report.domain import domain_figures
            from evalframe.report.embedding_plots import render_embedding_plots
            from evalframe.report.plots import FORMATS, save_formats

            extra = render_embedding_plots(self.data)
            # Lorenz and cost curves come from their result tables (evalframe/analyses/domain_tables.py).
            extra |= {stem: save_formats(figure, FORMATS) for stem, figure in domain_figures(self.data).items()}
            self._extra = extra
        return self._extra

    def _stems(self) -> list[str]:
        """Every plot's stem in :attr:`rendered`'s order, known before the workers finish."""
        from evalframe.report.plots import report_plots

        return list(dict.fromkeys([*(() if self._rendered is not None else report_plots(self.data)),
                                   *(self._rendered or {}), *self._drawn_here()]))

    @property
    def png(self) -> Mapping[str, bytes]:
        """Each figure's PNG bytes, drawn once for ``plots/`` and ``report.html``: the stems known
        at once, the bytes waited for when first read (the page's tables are rendered meanwhile)."""
        return _OneFormat(self, "png", self._stems())

    @property
    def html_png(self) -> Mapping[str, bytes]:
        """The palette-reduced PNG bytes ``report.html`` embeds, of the plots whose workers made them."""
        from evalframe.report.plots import HTML_PNG, report_plots

        return _OneFormat(self, HTML_PNG, list(report_plots(self.data)))

    def plot_paths(self) -> list[str]:
        from evalframe.report.embedding_plots import embedding_plot_stems
        from evalframe.report.plots import report_plots

        return [f"plots/{stem}.png" for stem in [*report_plots(self.data), *embedding_plot_stems(self.data)]]

    def writers(self) -> dict:
        from evalframe.report.html import render_html
        from evalframe.report.latex import render_latex
        from evalframe.report.markdown import render_report_markdown
        from evalframe.report.plots import write_plot_files
        from evalframe.report.tables import report_rows

        curves = self.data.curves if self.data.curves is not None else pl.DataFrame()
        return {
            "curves.parquet": lambda path: curves.write_parquet(path, statistics=False),
            "report.md": lambda path: path.write_text(render_report_markdown(self.data, self.plot_paths())),
            "report.html": lambda path: path.write_text(render_html(self.data, self.png, html_png=self.html_png)),
            "report.tex": lambda path: path.write_text(render_latex(self.data)),
            "report_tables.csv": lambda path: report_rows(self.data).write_csv(path, float_precision=10),
            "plots": lambda path: write_plot_files(self.rendered, path),
        }

    def close(self) -> None:
        """Stop drawing and release the plots' memory."""
        for pending in (self._pending, self._missing):
            if pending is not None:
                pending.close()
        self._pending = self._missing = None
        self._rendered = None
        self._extra = None


class _OneFormat(Mapping):
    """One format's bytes of a report writer's plots, by stem: iterating gives the stems at once;
    reading a value waits for the drawing (:attr:`ReportWriter.rendered`)."""

    def __init__(self, writer: ReportWriter, format: str, stems: list[str]) -> None:
        self._writer, self._format, self._stems = writer, format, stems

    def __getitem__(self, stem: str) -> bytes:
        files = self._writer.rendered.get(stem) if stem in self._stems else None
        if files is None or self._format not in files:
            raise KeyError(stem)
        return files[self._format]

    def __iter__(self):
        return iter(self._stems)

    def __len__(self) -> int:
        return len(self._stems)
