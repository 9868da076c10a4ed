"""The report's selected-K figures (the every-system histogram once, each system's by state) and
the plots begun from the engine's result while the stages after it run (issue 22, part 3)."""

from __future__ import annotations

import dataclasses

import polars as pl

from evalframe.report import plots
from evalframe.report.outputs import EarlyPlots, start_plots, write_outputs
from evalframe.report.tables import ReportData


def _heights(figure, gid_prefix):
    return {c.patches[0].get_gid(): [p.get_height() for p in c.patches] for ax in figure.axes for c in ax.containers
            if c.patches and (c.patches[0].get_gid() or "").startswith(gid_prefix)}


def test_the_report_draws_the_every_system_histogram_once_and_each_systems_states(two_systems_evaluation):
    data = ReportData.from_evaluation(two_systems_evaluation)
    listed = plots.report_plots(data)
    assert listed["dynamic_k"] == ("dynamic_k_overall", ())
    assert [stem for stem in listed if stem.startswith("dynamic_k")] == ["dynamic_k", *(f"dynamic_k_{s}" for s in data.systems)]
    both = plots.dynamic_k(data, data.systems[1])            # the notebook's figure: both panels
    overall = plots.dynamic_k_overall(data)
    states = plots.dynamic_k_states(data, data.systems[1])
    assert len(overall.axes) == len(states.axes) == 1
    assert _heights(overall, "k-all-") == _heights(both, "k-all-") and len(_heights(overall, "k-all-")) == len(data.systems)
    assert _heights(states, "k-state-") == _heights(both, "k-state-") and _heights(states, "k-state-")
    n = two_systems_evaluation.queries.filter(pl.col("system") == data.systems[0]).height
    assert sum(_heights(overall, "k-all-")[f"k-all-{data.systems[0]}"]) == n
    assert states.axes[0].get_title() == f"Selected K by state — {data.systems[1]}"


def test_plots_begun_from_the_engines_result_give_the_files_of_plots_drawn_at_writing(two_systems_evaluation, tmp_path,
                                                                                       monkeypatch):
    """The engine's result has no comparison table yet: the forest plot is drawn at writing, the
    others come from the plots begun early; every file equals the one written without them."""
    monkeypatch.setenv("EVALFRAME_PLOT_WORKERS", "2")
    monkeypatch.setattr(plots, "HEADLINE_METRICS", ("auroc",))  # fewer plots listed here (the workers' fold spread keeps its own)
    comparison = pl.DataFrame({"metric": ["auroc"], "baseline": ["retriever_only"], "candidate": ["full_pipeline"],
                               "delta": [0.08], "ci_low": [0.05], "ci_high": [0.11]})
    final = two_systems_evaluation.with_tables(comparison=comparison)
    outputs = ("report.md", "plots")
    early = start_plots(two_systems_evaluation, outputs)
    assert early is not None and "forest" not in plots.report_plots(early.data)
    drawn_at_writing = []
    start = plots.start_report_plots

    def recorded(data, formats, *args, stems=None, **kwargs):
        drawn_at_writing.append(stems)
        return start(data, formats, *args, stems=stems, **kwargs)

    monkeypatch.setattr(plots, "start_report_plots", recorded)
    write_outputs(final, tmp_path / "early", outputs, early=early)
    assert drawn_at_writing == [["forest"]]  # the early plots were used: only the forest plot drawn here
    write_outputs(final, tmp_path / "plain", outputs)
    written = sorted(p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain").rglob("*") if p.is_file())
    assert (tmp_path / "plain" / "plots" / "forest.png").is_file() and (tmp_path / "plain" / "plots" / "dynamic_k.svg").is_file()
    assert sorted(p.relative_to(tmp_path / "early") for p in (tmp_path / "early").rglob("*") if p.is_file()) == written
    for path in written:
        assert (tmp_path / "early" / path).read_bytes() == (tmp_path / "plain" / path).read_bytes(), path


def test_plots_begun_early_are_used_only_when_their_inputs_are_the_final_ones(two_systems_evaluation):
    data = ReportData.from_evaluation(two_systems_evaluation)
    early = EarlyPlots(data, pending=None)
    final = ReportData.from_evaluation(two_systems_evaluation.with_tables(extra=pl.DataFrame({"a": [1]})), curves=data.curves)
    assert early.fits(final)  # a table added: its plots (if any) are drawn at writing
    changed = dataclasses.replace(final, summary=final.summary.with_columns(value=pl.col("value") * 0.5))
    assert not early.fits(changed)
    assert not early.fits(dataclasses.replace(final, curves=data.curves.clone()))  # other curves: drawn anew


def test_the_single_panel_selected_k_figures_keep_titles_and_legends_inside(two_systems_evaluation):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    data = ReportData.from_evaluation(two_systems_evaluation)
    for figure in (plots.dynamic_k_overall(data), plots.dynamic_k_states(data, data.systems[0])):
        renderer = FigureCanvasAgg(figure).get_renderer()
        page = figure.bbox
        (ax,) = figure.axes
        title, legend = ax.title.get_window_extent(renderer), ax.get_legend().get_window_extent(renderer)
        assert page.x0 - 0.5 <= title.x0 and title.x1 <= page.x1 + 0.5 and title.y1 <= page.y1 + 0.5
        assert page.x0 - 0.5 <= legend.x0 and legend.x1 <= page.x1 + 0.5 and page.y0 - 0.5 <= legend.y0 and legend.y1 <= page.y1 + 0.5


def test_a_system_without_gate_states_gets_no_empty_by_state_figure(two_systems_evaluation):
    """A run without a ``state`` column (or a system without states) has every system's histogram
    but no per-system figure of states, which would be empty."""
    data = ReportData.from_evaluation(two_systems_evaluation)
    stateless, with_states = data.systems
    curves = data.curves.filter(~((pl.col("curve") == "selected_k") & (pl.col("group") != "all")
                                  & (pl.col("system") == stateless)))
    listed = plots.report_plots(ReportData.from_evaluation(two_systems_evaluation, curves=curves))
    assert "dynamic_k" in listed
    assert f"dynamic_k_{with_states}" in listed and f"dynamic_k_{stateless}" not in listed
