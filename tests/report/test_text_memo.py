"""Text layouts remembered across the report's figures (issue 22): every plot's PNG, SVG and page
PNG are the bytes matplotlib's own path gives (a figure saved straight with ``savefig``)."""

from __future__ import annotations

import io

import pytest
from matplotlib.figure import Figure

from evalframe.report import plots, text_memo
from evalframe.report.tables import ReportData

FORMATS = ("png", "svg", plots.HTML_PNG)


def _matplotlibs_own(figure, formats=FORMATS) -> dict[str, bytes]:
    """The figure saved as before the memo: ``savefig`` per format, the page PNG decoded from the PNG."""
    files = {}
    with plots._style():
        for format, metadata in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            buffer = io.BytesIO()
            figure.savefig(buffer, format=format, dpi=110, metadata=metadata)
            files[format] = buffer.getvalue()
    files[plots.HTML_PNG] = plots.compact_png(files["png"])
    return {format: files[format] for format in formats}


@pytest.fixture
def cold_memo():
    text_memo._memo.clear()
    yield
    text_memo._memo.clear()


def test_every_report_plot_saved_with_remembered_text_is_matplotlibs_own_bytes(two_systems_evaluation_with_ci, cold_memo):
    data = ReportData.from_evaluation(two_systems_evaluation_with_ci)
    listed = plots.report_plots(data)
    first = {name: stem for stem, (name, _) in reversed(listed.items())}
    assert set(first) == set(plots._DRAW)  # the report has every kind of plot
    # Legends in a corner and outside, two panels, rotated and long tick labels, a legend title;
    # a cold memo (each figure reuses the texts of the ones before), then one holding its texts.
    kinds = ["roc", "criterion_bars", "reliability", "forest", "dynamic_k_states", "roc"]
    for stem in (first[kind] for kind in kinds):
        name, args = listed[stem]
        remembered = plots.save_formats(plots._DRAW[name](data, *args), plots.FORMATS)
        assert remembered == _matplotlibs_own(plots._DRAW[name](data, *args), plots.FORMATS), stem
    kinds = {key[0] for key in text_memo._memo}
    assert kinds == {"layout", "agg extent", "path extent"}


def _labelled(size: float) -> Figure:
    """A figure whose texts need a fallback font (CJK), math text, and one text at two sizes."""
    with plots._style():
        figure = Figure(figsize=(4, 3))
        ax = figure.add_subplot()
        ax.plot([0, 1], [0, 1], label="système 日本語")
        ax.set_title("recall@10 — 日本", fontsize=size)
        ax.set_xlabel("$x^2$ and recall@10")
        ax.set_ylabel("recall@10", fontsize=size + 3)
        ax.legend()
    return figure


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
def test_fallback_glyphs_math_text_and_other_sizes_keep_matplotlibs_bytes(cold_memo):
    for size in (9, 11, 9):
        assert plots.save_formats(_labelled(size), FORMATS) == _matplotlibs_own(_labelled(size)), size
    # The CJK texts take glyphs from a fallback font: their layouts are not kept.
    kept = [key for key in text_memo._memo if key[0] == "layout"]
    assert kept and not any("日" in str(key[3]) for key in kept)
    assert not any("$" in str(key[1]) for key in text_memo._memo if key[0] != "layout")


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
def test_the_memo_starts_over_when_full(cold_memo, monkeypatch):
    monkeypatch.setattr(text_memo, "MAX_ENTRIES", 5)
    assert plots.save_formats(_labelled(10), FORMATS) == _matplotlibs_own(_labelled(10))
    assert 0 < len(text_memo._memo) <= 5
