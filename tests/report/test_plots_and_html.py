"""Plots checked through their Figure objects, the replicate ROC against scikit-learn, report.html
parsed, byte-identical reruns, notebook display and `evalframe report` (issue 12, parts 2–7)."""

from __future__ import annotations

import dataclasses
import os
import re
from html.parser import HTMLParser

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from sklearn.metrics import roc_curve

import evalframe as ef
from evalframe.cli import main
from evalframe.report import plots
from evalframe.report.curve_data import tpr_on_grid
from evalframe.report.html import render_html
from evalframe.report.tables import ReportData

# --- replicate ROC curves of the band -----------------------------------------------------------


@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 20)), min_size=2, max_size=60),
    st.integers(0, 2**32 - 1),
)
def test_band_curves_match_scikit_learn_under_every_weight_column(rows, seed):
    labels = np.array([label for label, _ in rows])
    probs = np.array([score / 20 for _, score in rows])  # few distinct values: many ties
    weights = np.random.default_rng(seed).poisson(1.0, size=(len(rows), 7)).astype(float)
    grid = np.linspace(0, 1, 51)
    tpr_grid = tpr_on_grid(probs, labels, weights, grid)
    for r in range(weights.shape[1]):
        w = weights[:, r]
        if w[labels == 1].sum() == 0 or w[labels == 0].sum() == 0:
            assert np.isnan(tpr_grid[r]).all()
            continue
        fpr, tpr, _ = roc_curve(labels, probs, sample_weight=w, drop_intermediate=False)
        assert np.allclose(tpr_grid[r], np.interp(grid, fpr, tpr), atol=1e-12)


# --- plots through their Figure objects --------------------------------------------------------


@pytest.fixture(scope="module")
def data(evaluation) -> ReportData:
    return ReportData.from_evaluation(evaluation)


@pytest.fixture(scope="module")
def data_with_ci(evaluation_with_ci) -> ReportData:
    return ReportData.from_evaluation(evaluation_with_ci)


def by_gid(figure: Figure, prefix: str) -> list:
    return [artist for ax in figure.axes for artist in ax.get_children() if (artist.get_gid() or "").startswith(prefix)]


def bars_of(figure: Figure, gid: str):
    """The bar container whose bars carry ``gid``."""
    from matplotlib.container import BarContainer

    found = [c for ax in figure.axes for c in ax.containers
             if isinstance(c, BarContainer) and c.patches and c.patches[0].get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_without_bootstrap_the_roc_has_no_band_and_says_so(data):
    figure = plots.roc(data)
    assert data.curves.filter(pl.col("curve") == "roc").select(pl.col("lower", "upper").is_null().all()).row(0) == (True, True)
    assert not by_gid(figure, "band-")
    assert by_gid(figure, "no-band")
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert "no band: the run has no bootstrap" in labels


@pytest.fixture(scope="module")
def bootstrapped(small_pipeline, small_input):
    return ef.run_pipeline(str(small_pipeline), input=str(small_input),
                           bootstrap=ef.Bootstrap(resamples=200, seed=5, unit=["post_id"], confidence=0.9))


def test_roc_band_is_the_engines_bootstrap(bootstrapped):
    """The band at each grid FPR is the percentile interval (the run's confidence) of the curves
    under the engine's replicate draw (Poisson counts of posts, seed 5), widened to the curve:
    recomputed here with scikit-learn's roc_curve, one replicate at a time."""
    from evalframe.engine.replicates import poisson_counts

    curves = ReportData.from_evaluation(bootstrapped).curves.filter(pl.col("curve") == "roc")
    system = curves.get_column("system")[0]
    own = curves.filter(pl.col("system") == system)
    queries = bootstrapped.queries.filter(pl.col("system") == system).drop_nulls(["label", "prob"])
    posts = queries.select("post_id").unique()
    counts = poisson_counts(posts, 200, 5)
    index = queries.join(posts.with_row_index("_i"), on="post_id", how="left", maintain_order="left")["_i"].to_numpy()
    labels, probs, grid = queries["label"].to_numpy(), queries["prob"].to_numpy(), own["x"].to_numpy()
    replicate_curves = []
    for r in range(200):
        w = counts[index, r].astype(float)
        fpr, tpr, _ = roc_curve(labels, probs, sample_weight=w, drop_intermediate=False)
        replicate_curves.append(np.interp(grid, fpr, tpr))
    low, high = np.percentile(np.array(replicate_curves), [5, 95], axis=0)
    y = own["y"].to_numpy()
    assert own["lower"].to_numpy() == pytest.approx(np.fmin(low, y), abs=1e-9)
    assert own["upper"].to_numpy() == pytest.approx(np.fmax(high, y), abs=1e-9)
    figure = plots.roc(ReportData.from_evaluation(bootstrapped))
    assert by_gid(figure, f"band-{system}") and not by_gid(figure, "no-band")


def test_roc_band_contains_the_curve_and_legend_has_auroc(bootstrapped, data, data_with_ci):
    bootstrapped_data = ReportData.from_evaluation(bootstrapped)
    figure = plots.roc(bootstrapped_data)
    for system in bootstrapped_data.systems:
        (line,) = by_gid(figure, f"roc-{system}")
        (band,) = by_gid(figure, f"band-{system}")
        assert isinstance(band, PolyCollection)
        x, y = line.get_xdata(), line.get_ydata()
        assert x[0] == 0 and x[-1] == 1 and len(x) == 1001
        vertices = pl.DataFrame(band.get_paths()[0].vertices, schema=["x", "y"], orient="row")
        edges = vertices.group_by("x").agg(low=pl.col("y").min(), high=pl.col("y").max()).sort("x")
        assert edges["x"].to_numpy() == pytest.approx(x)  # the band's polygon spans the grid
        lower, upper = edges["low"].to_numpy(), edges["high"].to_numpy()
        assert (lower <= y + 1e-12).all() and (y <= upper + 1e-12).all()
        assert (upper - lower).max() > 0.01  # a real band, not the curve twice
    labels = [text.get_text() for text in plots.roc(data).axes[0].get_legend().get_texts()]
    auroc = data.summary.filter((pl.col("grouping") == "overall") & (pl.col("metric") == "auroc")
                                & (pl.col("system") == data.systems[0]))["value"][0]
    assert f"{data.systems[0]}: AUROC {auroc:.4f}" in labels
    with_ci = [t.get_text() for t in plots.roc(data_with_ci).axes[0].get_legend().get_texts()]
    assert any(f"AUROC {auroc:.4f} (95% CI [{auroc - 0.01:.4f}, {auroc + 0.01:.4f}])" in t for t in with_ci)


def test_roc_curve_is_the_one_of_the_data(evaluation, data):
    queries = evaluation.queries.filter(pl.col("system") == data.systems[0])
    (line,) = by_gid(plots.roc(data), f"roc-{data.systems[0]}")
    fpr, tpr, _ = roc_curve(queries["label"].to_numpy(), queries["prob"].to_numpy(), drop_intermediate=False)
    assert np.allclose(line.get_ydata(), np.interp(line.get_xdata(), fpr, tpr))


def test_pr_baseline_is_the_positive_rate(evaluation, data):
    figure = plots.pr(data)
    rates = {system: evaluation.queries.filter(pl.col("system") == system)["label"].mean() for system in data.systems}
    shared = by_gid(figure, "baseline")
    if len(set(rates.values())) == 1:  # the same queries: one line for every system (issue 20)
        assert [line.get_gid() for line in shared] == ["baseline"]
    for system, rate in rates.items():
        (baseline,) = by_gid(figure, f"baseline-{system}") or shared
        assert baseline.get_ydata()[0] == pytest.approx(rate, abs=1e-15)
        (curve,) = by_gid(figure, f"pr-{system}")
        assert curve.get_xdata().max() == pytest.approx(1.0)


def test_pr_draws_one_baseline_per_system_when_the_rates_differ(data):
    curves = data.curves.with_columns(
        y=pl.when((pl.col("curve") == "pr_baseline") & (pl.col("system") == data.systems[0]))
        .then(pl.col("y") / 2).otherwise(pl.col("y"))
    )
    figure = plots.pr(dataclasses.replace(data, curves=curves))
    assert sorted(line.get_gid() for line in by_gid(figure, "baseline")) == sorted(f"baseline-{s}" for s in data.systems)


def _legend_box_inches(figure, legend):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    return legend.get_window_extent(renderer), renderer


@pytest.mark.parametrize("draw", ["roc", "pr", "reliability", "criterion_bars", "dynamic_k", "fold_spread"])
def test_titles_and_legends_stay_inside_the_figure(data_with_ci, draw):
    """Issue 20: no title clips (long ones wrap and the figure grows), and every legend lies
    within the figure and covers no data point of its axes (else it sits below them)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = getattr(plots, draw)(data_with_ci)
    renderer = FigureCanvasAgg(figure).get_renderer()
    page = figure.bbox
    for ax in figure.axes:
        title = ax.title.get_window_extent(renderer)
        assert page.x0 - 0.5 <= title.x0 and title.x1 <= page.x1 + 0.5 and title.y1 <= page.y1 + 0.5, ax.get_title()
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        assert page.x0 - 0.5 <= box.x0 and box.x1 <= page.x1 + 0.5 and page.y0 - 0.5 <= box.y0 and box.y1 <= page.y1 + 0.5
        inside_axes = ax.bbox.overlaps(box)
        if inside_axes:  # a legend inside the axes covers none of its lines' points
            for line in ax.get_lines():
                xy = ax.transData.transform(line.get_xydata())
                covered = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
                assert not covered.any(), (draw, line.get_gid())


def test_long_titles_wrap_instead_of_clipping(data_with_ci):
    figure = plots.reliability(data_with_ci, data_with_ci.systems[0])
    title = figure.axes[0].title
    assert title.get_wrap()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure).draw()
    assert title.get_window_extent().x1 <= figure.bbox.x1 + 0.5


def test_reliability_bins_are_the_ece_bins(evaluation, data):
    for system in data.systems:
        figure = plots.reliability(data, system)
        (points,) = by_gid(figure, f"reliability-{system}")
        bars = bars_of(figure, f"bins-{system}")
        heights = np.array([patch.get_height() for patch in bars.patches])
        assert [patch.get_x() for patch in bars.patches] == pytest.approx([b / 10 for b in range(10)])
        assert heights.sum() == evaluation.queries.filter(pl.col("system") == system).height
        nonempty = heights[heights > 0]
        gap = np.abs(points.get_xdata() - points.get_ydata())
        ece_from_plot = (gap * nonempty).sum() / nonempty.sum()
        ece = evaluation.summary.filter((pl.col("grouping") == "overall") & (pl.col("system") == system)
                                        & (pl.col("metric") == "ece"))["value"][0]
        assert ece_from_plot == pytest.approx(ece, abs=1e-12)
        assert f"ECE {ece:.4f}" in figure.axes[0].get_title()


def test_criterion_bars_have_ci_error_bars_when_the_run_has_cis(data, data_with_ci):
    figure = plots.criterion_bars(data_with_ci, "auroc")
    bars = bars_of(figure, f"bars-{data.systems[0]}")
    rows = data_with_ci.summary.filter((pl.col("grouping") == "criterion") & (pl.col("metric") == "auroc")
                                       & (pl.col("system") == data.systems[0]))
    expected = [float("nan") if value is None else value for value in rows["value"].to_list()]  # undefined: no bar
    assert [patch.get_height() for patch in bars.patches] == pytest.approx(expected, nan_ok=True)
    assert bars.errorbar is not None
    assert "95% CI" in figure.axes[0].get_title()
    assert "no CI" in plots.criterion_bars(data, "auroc").axes[0].get_title()


def test_dynamic_k_histograms_count_every_query(evaluation, data):
    figure = plots.dynamic_k(data, data.systems[0])
    overall = bars_of(figure, f"k-all-{data.systems[0]}")
    assert sum(p.get_height() for p in overall.patches) == evaluation.queries.filter(pl.col("system") == data.systems[0]).height
    states = by_gid(figure, "k-state-")
    assert {s.get_gid() for s in states} == {f"k-state-{s}" for s in evaluation.queries["state"].unique().to_list()}


def test_forest_plot_of_a_comparison(data, data_with_ci):
    figure = plots.forest(data_with_ci)
    from matplotlib.container import ErrorbarContainer

    (container,) = [c for c in figure.axes[0].containers if isinstance(c, ErrorbarContainer)]
    points, _, (whiskers,) = container.lines
    assert list(points.get_xdata()) == pytest.approx([0.08, 0.07])
    assert [tuple(segment[:, 0]) for segment in whiskers.get_segments()] == [(0.05, 0.11), (0.03, 0.10)]
    assert "forest" not in plots.report_figures(data)
    assert "forest" in plots.report_figures(data_with_ci)


def test_one_colour_per_system_in_every_plot(data):
    palette = plots.colours(data)
    roc_line = by_gid(plots.roc(data), f"roc-{data.systems[1]}")[0]
    pr_line = by_gid(plots.pr(data), f"pr-{data.systems[1]}")[0]
    assert roc_line.get_color() == pr_line.get_color() == palette[data.systems[1]] == plots.PALETTE[1]


# --- report.html, byte-identical reruns -------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tables, self.urls, self.scripts = [], 0, [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if tag == "table":
            self.tables += 1
        if tag == "script":
            self.scripts += 1
        for key in ("href", "src"):
            value = attrs.get(key) or ""
            if value and not value.startswith(("#", "data:")):
                self.urls.append(value)


def test_report_html_is_self_contained_with_every_plot(two_systems_evaluation_with_ci):
    data_with_ci = ReportData.from_evaluation(two_systems_evaluation_with_ci)
    figures = plots.report_figures(data_with_ci)
    page = render_html(data_with_ci, figures)
    parser = _Collector()
    parser.feed(page)
    assert parser.urls == [] and parser.scripts == 0
    assert not re.search(r"https?://|@import|url\(", page)
    assert {img["alt"] for img in parser.images} == {stem.replace("_", " ") for stem in figures}
    assert all(img["src"].startswith("data:image/png;base64,") for img in parser.images)
    systems = data_with_ci.systems
    # overall and across folds (systems side by side), fold per system, comparison and checks
    assert parser.tables == 2 + len(systems) + 2
    assert "sha256" in page and data_with_ci.info["input"]["sha256"] in page
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", page)  # no date


# --- notebook display ------------------------------------------------------------------------


def test_notebook_display(evaluation):
    import great_tables as gt

    html = evaluation._repr_html_()
    assert "auroc ↑" in html and "interpretation" in html and "http" not in html
    assert all(system in html for system in evaluation.info["tables"]["systems"][0].values() if isinstance(system, str))
    assert "criterion" not in html.split("<tbody")[0]  # the overall table only
    table = evaluation.table(grouping="criterion", metrics=["auroc", "ndcg@10"])
    assert isinstance(table, gt.GT)
    assert set(table._tbl_data["metric"].to_list()) == {"auroc ↑", "ndcg@10 ↑"}
    assert isinstance(evaluation.plot.roc(), Figure)
    assert isinstance(evaluation.plot.reliability(system=evaluation.summary["system"][0]), Figure)
    assert evaluation.to_pandas("report").shape[0] == evaluation.report_table().height
    with pytest.raises(Exception, match="grouping"):
        evaluation.table(grouping="nope")


# --- the terminal ------------------------------------------------------------------------------


def test_terminal_overview_fits_100_columns_with_cis_targets_and_failed_checks(evaluation, evaluation_with_ci):
    plain = evaluation.overview()
    assert max(len(line) for line in plain.splitlines()) <= 100
    assert "95% CI" not in plain and "✓ ≥ 0.5" in plain and "✗ < 0.0001" in plain
    shown = evaluation_with_ci.overview()
    assert max(len(line) for line in shown.splitlines()) <= 100
    auroc = next(line for line in shown.splitlines() if line.startswith("auroc"))
    value = evaluation_with_ci.summary.filter((pl.col("grouping") == "overall") & (pl.col("metric") == "auroc"))["value"][0]
    assert f"[{value - 0.01:.4f}, {value + 0.01:.4f}]" in auroc
    assert "checks: 1 of 2 passed" in shown and "✗ FAILED confusion total" in shown
    assert "¹ no positive prediction" in shown
    # numbers right-aligned: every CI ends in the same column
    ends = {line.index("]") for line in shown.splitlines() if line.endswith(("]", "met")) or "] " in line}
    assert len(ends) == 1


# --- `evalframe report` ---------------------------------------------------------------------------


def test_evalframe_report_rerenders_the_runs_files_without_the_input(two_systems_evaluation_with_ci, tmp_path, capsys):
    """The re-rendered report files and plots are the bytes written with the run: every report
    file is byte-identical on a rerun in one process (tests/cli/test_cli_pipeline.py compares
    every file of two processes), and carries no date or software tag."""
    out = two_systems_evaluation_with_ci.write(tmp_path / "result", (
        "summary.parquet", "run.json", "curves.parquet", "report.md", "report.html", "report.tex",
        "report_tables.csv", "plots"))
    assert main(["report", str(out), "--out", str(tmp_path / "again")]) == 0
    for name in ("report.md", "report.html", "report.tex", "report_tables.csv"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    plot_files = sorted(plot.name for plot in (out / "plots").iterdir())
    assert {"roc.png", "roc.svg", "pr.png", "pr.svg", "forest.png", "forest.svg"} <= set(plot_files)
    assert plot_files == sorted(plot.name for plot in (tmp_path / "again" / "plots").iterdir())
    for name in plot_files:
        assert (out / "plots" / name).read_bytes() == (tmp_path / "again" / "plots" / name).read_bytes(), name
    assert b"<dc:date>" not in (out / "plots" / "roc.svg").read_bytes()
    assert b"Software" not in (out / "plots" / "roc.png").read_bytes()
    assert main(["report", str(out), "--format", "tex", "--out", str(tmp_path / "tex")]) == 0
    assert sorted(p.name for p in (tmp_path / "tex").iterdir()) == [".evalframe-manifest.json", "report.tex"]
    assert main(["report", str(out), "--format", "csv", "--percent", "--out", str(tmp_path / "pct")]) == 0
    percent = pl.read_csv(tmp_path / "pct" / "report_tables.csv").filter(pl.col("metric") == "sensitivity")
    shown = percent.filter(pl.col("value_text") != "—")  # an undefined sensitivity (no positive) has no number
    assert shown.height > 0 and shown["value_text"].str.ends_with("%").all()


def test_evalframe_report_on_a_folder_without_outputs_is_an_input_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "summary.parquet" in capsys.readouterr().err


def test_progress_lines_only_on_a_terminal(capsys, monkeypatch):
    import io
    import sys

    from evalframe._progress import step

    # The quiet switch is process-wide: a CLI test with -q run earlier in this worker must not leak.
    monkeypatch.setattr("evalframe._progress._QUIET", False)
    with step("working"):
        pass
    assert capsys.readouterr().err == ""  # not a terminal: silent

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with step("working"):
        pass
    assert terminal.getvalue().startswith("\r… working")
    terminal.seek(0), terminal.truncate()
    with step("working", quiet=True):
        pass
    assert terminal.getvalue() == ""


def test_report_plots_drawn_in_worker_processes_are_the_same_bytes(two_systems_evaluation):
    """The process pool (issue 22) changes where the plots are drawn, not one byte of them."""
    data = ReportData.from_evaluation(two_systems_evaluation)
    here = plots.render_report_plots(data, ("png",), workers=0)
    pooled = plots.render_report_plots(data, ("png",), workers=2)
    assert list(pooled) == list(here) == list(plots.report_plots(data))
    assert pooled == here
    assert plots.plot_workers(3) == 0  # a few plots: drawn here, no worker to start


def test_save_formats_gives_matplotlibs_own_bytes_for_every_plot_kind(two_systems_evaluation):
    """One draw per renderer, and the page's palette PNG from the Agg pixels: the bytes of
    matplotlib's own ``savefig`` (same dpi and metadata) and of :func:`plots.compact_png` of that
    PNG, for one plot of every kind (and the formats in either order for one)."""
    import io

    data = ReportData.from_evaluation(two_systems_evaluation)
    listed = plots.report_plots(data)
    first = {name: stem for stem, (name, _) in reversed(listed.items())}

    def savefig(figure, format: str) -> bytes:
        buffer = io.BytesIO()
        metadata = {"Software": None} if format == "png" else {"Date": None, "Creator": None}
        with plots._style():
            figure.savefig(buffer, format=format, dpi=110, metadata=metadata)
        return buffer.getvalue()

    assert len(first) >= 6
    for name, stem in first.items():
        _, args = listed[stem]
        figure = plots._DRAW[name](data, *args)
        own = {"png": savefig(figure, "png"), "svg": savefig(figure, "svg")}
        own[plots.HTML_PNG] = plots.compact_png(own["png"])
        assert plots.save_formats(plots._DRAW[name](data, *args), ("png", "svg", plots.HTML_PNG)) == own, name
        if name == "roc":  # the formats' order does not matter
            assert plots.save_formats(plots._DRAW[name](data, *args), ("svg", "png")) == {"svg": own["svg"], "png": own["png"]}


def test_the_plot_workers_yield_the_cpu_and_take_the_costliest_plots_first(two_systems_evaluation):
    """The plot processes run at a lower priority (the main process keeps its core for the stages
    after the engine) and draw the costliest plots first (the pool ends with short ones)."""
    from concurrent.futures import ProcessPoolExecutor

    data = ReportData.from_evaluation(two_systems_evaluation)
    listed = plots.report_plots(data)
    order = plots.costliest_first(listed)
    assert sorted(order) == sorted(listed) and set(plots.COST_ORDER) == set(plots._DRAW)
    kinds = [listed[stem][0] for stem in order]
    assert kinds[0] == "fold_spread" and kinds[-1] == "dynamic_k_states" and kinds == sorted(kinds, key=plots.COST_ORDER.index)
    assert [stem for stem in order if listed[stem][0] == "reliability"] == [s for s in listed if s.startswith("reliability")]
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with ProcessPoolExecutor(1, mp_context=plots._worker_context(), initializer=plots._worker_init, initargs=(data,)) as pool:
        assert pool.submit(os.getpriority, os.PRIO_PROCESS, 0).result() >= plots.PLOT_NICENESS
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


def test_plots_drawn_while_other_files_are_written_give_the_same_files(two_systems_evaluation, tmp_path, monkeypatch):
    """The report writer starts the plot workers before the other files, and report.html renders
    its tables before it reads the plots' bytes: the files are those of plots drawn here."""
    from evalframe.report.outputs import ReportWriter

    full = ReportData.from_evaluation(two_systems_evaluation)
    data = dataclasses.replace(full, summary=full.summary.filter(pl.col("metric") == "auroc"),
                               curves=full.curves.filter(pl.col("curve") == "roc"))
    drawn = plots.render_report_plots(data, (*plots.FORMATS, plots.HTML_PNG), workers=0)
    assert len(drawn) >= 3
    monkeypatch.setenv("EVALFRAME_PLOT_WORKERS", "2")
    monkeypatch.setattr(plots, "POOL_MIN_PLOTS", 1)
    writer = ReportWriter(data)
    writer.start()
    assert writer._pending._pool is not None  # drawing in worker processes from here on
    assert list(writer.png) == list(drawn) and writer._rendered is None  # the stems, nothing waited for
    writers = writer.writers()
    writers["report.html"](tmp_path / "report.html")
    writers["plots"](tmp_path / "plots")
    writer.close()
    page = render_html(data, {stem: files["png"] for stem, files in drawn.items()},
                       html_png={stem: files[plots.HTML_PNG] for stem, files in drawn.items()})
    assert (tmp_path / "report.html").read_text() == page
    for stem, files in drawn.items():
        assert (tmp_path / "plots" / f"{stem}.svg").read_bytes() == files["svg"], stem
        assert (tmp_path / "plots" / f"{stem}.png").read_bytes() == files["png"], stem
