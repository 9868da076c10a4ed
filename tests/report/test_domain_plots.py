"""Plots and report of labels and domain metrics: they draw from the tables and say when data are missing."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evalframe.stats.label_agreement import agreement
from evalframe.metrics.detection import cost_curve as cost_curve_table
from evalframe.report import domain
from evalframe.report.plots import save

pytest.importorskip("matplotlib")


def test_lorenz_points_give_twice_the_gini_area():
    counts = np.array([3, 1, 1, 1, 2, 1])
    items, shares = domain.lorenz_points(counts)
    area = np.trapezoid(items - shares, items) if hasattr(np, "trapezoid") else np.trapz(items - shares, items)
    ordered = np.sort(counts)
    n = ordered.size
    gini = (2 * np.sum(np.arange(1, n + 1) * ordered) - (n + 1) * ordered.sum()) / (n * ordered.sum())
    assert 2 * area == pytest.approx(gini)
    assert save(domain.lorenz(counts, gini), "png")[:4] == b"\x89PNG"


def test_kappa_matrix_and_figures():
    rows = [(f"t{t}", a, (t + (a == "c")) % 5) for t in range(20) for a in ("a", "b", "c")]
    ag = agreement(pl.DataFrame(rows, schema=["task_id", "annotator_id", "rating"], orient="row"), scale="0-4",
                   gold={f"t{t}": t % 5 for t in range(10)}, bootstrap=None)
    names, matrix = domain.kappa_matrix(ag.pairwise, "unweighted")
    assert names == ["a", "b", "c"]
    assert matrix[0, 1] == 1.0 and matrix[1, 0] == 1.0 and matrix[0, 2] < 1.0
    for figure in (domain.kappa_heatmap(ag.pairwise), domain.annotator_accuracy(ag.per_annotator)):
        assert save(figure, "svg").startswith(b"<?xml")
    text = domain.agreement_markdown(ag, filtered=ag.filtered(min_tasks=5), min_tasks=5)
    assert "## Cohen's κ per annotator pair" in text and "Landis & Koch" in text
    no_gold = agreement(pl.DataFrame(rows, schema=["task_id", "annotator_id", "rating"], orient="row"), bootstrap=None)
    assert domain.annotator_accuracy(no_gold.per_annotator).axes[0].texts[0].get_text() == "no gold tasks given (--gold)"


def test_cost_curve_plot_marks_the_minimum():
    curve = cost_curve_table([1, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.2, 0.1], fp_cost=1, fn_cost=5)
    figure = domain.cost_curve(curve)
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert any("minimum 1 at 0.7" in label for label in labels)


def test_result_tables_feed_the_report_figures(tmp_path):
    import evalframe as ef
    from evalframe.analyses.domain_tables import with_cost_curve, with_item_counts
    from evalframe.report.outputs import ReportWriter
    from evalframe.report.tables import ReportData

    def report_figures(data):
        return ReportWriter(data).rendered

    d = "data_samples/recommendations/"
    tables = ef.read_recommendations(d + "recs.csv", items=d + "items.csv")
    ev = with_item_counts(ef.evaluate(tables, metrics=["gini@10"]), 10)
    counts = ev.tables["item_counts"]
    assert counts.get_column("count").sum() == 500 * 10
    figures = report_figures(ReportData.from_evaluation(ev))
    assert "lorenz_default" in figures
    queries = pl.DataFrame({"query_id": ["a", "b", "c"], "label": [1, 0, 0], "prob": [0.9, 0.5, 0.1]})
    scored = ef.evaluate(ef.Tables(queries=queries, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})),
                         metrics=["min_cost(fp_cost=1,fn_cost=5)"])
    scored = with_cost_curve(scored, 1, 5)
    assert scored.tables["cost_curve"].get_column("cost").to_list() == [5.0, 0.0, 1.0, 2.0]
    assert "cost_curve_default" in report_figures(ReportData.from_evaluation(scored))
