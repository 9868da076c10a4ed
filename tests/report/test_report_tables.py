"""The report-table model and its Markdown, LaTeX and CSV renderings (issue 12, part 1)."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from evalframe.errors import ConfigError
from evalframe.metrics.interpretation import INTERPRETATIONS, describe
from evalframe.metrics.registry import available, resolve
from evalframe.report.formatting import Footnotes, ci_text, format_number, mean_std_text
from evalframe.report.latex import escape, render_latex
from evalframe.report.markdown import render_report_markdown
from evalframe.report.tables import REPORT_COLUMNS, ReportData, report_rows, result_table_view
from evalframe.metrics.targets import Target


def data_of(evaluation) -> ReportData:
    return ReportData.from_evaluation(evaluation, curves=pl.DataFrame())


# --- interpretations, targets, the formatter -----------------------------------------------


def example_cutoff(spec) -> str:
    """A valid ``@`` value of a spec: its first choice, a rate for an ``@fpr`` metric, else 10."""
    choices = spec.param(spec.at).choices
    return str(choices[0]) if choices else ("0.1" if spec.at == "fpr" else "10")


def test_every_registered_metric_has_an_interpretation():
    assert {spec.name for spec in available()} <= set(INTERPRETATIONS)
    for spec in available():
        metric = resolve(spec.name + (f"@{example_cutoff(spec)}" if spec.at_required else ""))
        meaning = describe(metric)
        assert meaning.text and "{" not in meaning.text, spec.name
        assert meaning.kind in ("rate", "score", "count")
        assert meaning.higher_is_better == metric.higher_is_better


def test_interpretations_carry_the_metrics_parameters():
    assert "top 5" in describe(resolve("hit_rate@5")).text
    assert "1%" in describe(resolve("tpr@fpr=0.01")).text
    assert "p ≥ 0.3" in describe(resolve("sensitivity(threshold=0.3)")).text
    assert describe(resolve("ece")).direction == "lower is better"
    assert describe(resolve("tp")).kind == "count"


@pytest.mark.parametrize(("text", "value", "met"), [
    (">= 0.85", 0.85, True), (">= 0.85", 0.8499, False), ("< 0.05", 0.05, False), ("< 0.05", 0.0316, True),
    ("<= 1e-1", 0.1, True), ("> 0", None, None),
])
def test_targets_parse_and_mark(text, value, met):
    assert Target.parse(text).met(value) is met


@pytest.mark.parametrize("text", ["=> 0.8", "0.85", ">= high", ">=", 0.85])
def test_malformed_targets_are_config_errors(text):
    with pytest.raises(ConfigError, match="operator"):
        Target.parse(text, where="targets.auroc")


def test_one_formatter():
    assert format_number(0.914481) == "0.9145"
    assert format_number(708.0, "count") == "708" and format_number(13072.0, "count") == "13,072"
    assert format_number(141.6, "count") == "141.60"
    assert format_number(0.51341, "rate", percent=True) == "51.34%"
    assert format_number(0.51341, "score", percent=True) == "0.5134"  # only rates become percentages
    assert format_number(None) == "—" and format_number(float("nan")) == "—"
    assert mean_std_text(0.8972, 0.0015) == "0.8972 ± 0.0015"
    assert mean_std_text(0.8972, None) == "0.8972"
    assert ci_text(0.8941, 0.9003) == "[0.8941, 0.9003]" and ci_text(None, 0.9) == "—"
    notes = Footnotes()
    assert [notes.number("a"), notes.number("b"), notes.number("a")] == [1, 2, 1]


# --- the report table ------------------------------------------------------------------------


def test_rows_have_every_required_column_for_every_grouping(evaluation):
    rows = report_rows(data_of(evaluation))
    assert tuple(rows.columns) == REPORT_COLUMNS
    assert rows.get_column("table").unique(maintain_order=True).to_list() == [
        "Overall", "By fold", "Across folds (mean ± std of the per-fold values)", "By criterion_id"]
    assert rows.get_column("interpretation").str.len_chars().min() > 10
    systems = evaluation.queries.get_column("system").unique().to_list()
    assert len(systems) >= 2 and set(rows.get_column("system").to_list()) == set(systems)
    first = rows.get_column("system")[0]
    overall = rows.filter((pl.col("table") == "Overall") & (pl.col("system") == first))
    summary = evaluation.summary.filter((pl.col("grouping") == "overall") & (pl.col("system") == first))
    assert overall.get_column("metric").to_list() == summary.get_column("metric").to_list()
    assert overall.get_column("n").to_list() == summary.get_column("n").to_list()
    assert overall.get_column("subset").to_list() == summary.get_column("subset").to_list()


def test_value_is_mean_plus_minus_std_and_ci_is_dash_without_bootstrap(evaluation):
    rows = report_rows(data_of(evaluation))
    row = rows.filter((pl.col("table") == "Overall") & (pl.col("metric") == "recall@10")).row(0, named=True)
    assert row["value_text"] == f"{row['value']:.4f} ± {row['std']:.4f}"
    assert row["ci_text"] == "—"
    across = rows.filter(pl.col("table").str.starts_with("Across") & (pl.col("metric") == "auroc")).row(0, named=True)
    assert " ± " in across["value_text"]
    assert any("not computed" in note for note in data_of(evaluation).notes())


def test_ci_text_and_null_footnote_when_the_summary_has_them(evaluation_with_ci):
    data = data_of(evaluation_with_ci)
    notes = Footnotes()
    rows = report_rows(data, footnotes=notes)
    row = rows.filter((pl.col("table") == "Overall") & (pl.col("metric") == "auroc")).row(0, named=True)
    assert row["ci_text"] == f"[{row['value'] - 0.01:.4f}, {row['value'] + 0.01:.4f}]"
    mcc = rows.filter((pl.col("table") == "Overall") & (pl.col("metric") == "mcc")).row(0, named=True)
    assert mcc["value_text"] == "—" and mcc["footnote"] == 1
    assert notes.reasons[0] == "no positive prediction"
    markdown = render_report_markdown(data)
    assert "| — ¹ |" not in markdown and "—¹" in markdown and "¹ no positive prediction" in markdown
    latex = render_latex(data)
    assert r"---\textsuperscript{1}" in latex and r"\textsuperscript{1} no positive prediction" in latex


def test_rows_built_once_number_footnotes_into_any_footnotes(evaluation_with_ci):
    """report_rows is built once per report data; a caller's footnotes (already holding reasons)
    number the null rows as if counted row by row: each row's number is its note's."""
    data = data_of(evaluation_with_ci)
    first = report_rows(data)
    notes = Footnotes()
    notes.number("a reason met before the table")
    rows = report_rows(data, footnotes=notes)
    nulls = rows.filter(pl.col("value").is_null() | pl.col("value").is_nan())
    assert nulls.height and notes.reasons[0] == "a reason met before the table"
    for note, number in nulls.select(pl.col("note").fill_null("undefined"), "footnote").iter_rows():
        assert number == notes.reasons.index(note) + 1 > 1
    assert rows.drop("footnote").equals(first.drop("footnote"))
    assert report_rows(data).equals(first)  # a fresh numbering again, from 1


def test_targets_are_marked_met_or_not(evaluation):
    rows = report_rows(data_of(evaluation))
    marked = rows.filter((pl.col("table") == "Overall") & (pl.col("target") != ""))
    assert set(marked.get_column("metric").to_list()) == {"auroc", "ece", "brier"}
    for row in marked.iter_rows(named=True):
        assert row["target_met"] == Target.parse(row["target"]).met(row["value"])
    assert marked.filter(pl.col("metric") == "auroc")["target_met"].all()       # >= 0.5 holds
    assert not marked.filter(pl.col("metric") == "brier")["target_met"].any()   # < 0.0001 never does
    markdown = render_report_markdown(data_of(evaluation))
    auroc = next(line for line in markdown.splitlines() if line.startswith("| auroc ↑ |"))
    brier = next(line for line in markdown.splitlines() if line.startswith("| brier ↓ |"))
    # systems side by side: every system's value carries the mark, the target is said once
    assert auroc.count(" ✓ |") == len(evaluation.info["tables"]["systems"]) and auroc.endswith("| ≥ 0.5 | " + auroc.split("| ≥ 0.5 | ")[1])
    assert brier.count(" ✗ |") == len(evaluation.info["tables"]["systems"]) and "| < 0.0001 |" in brier


def test_markdown_shows_systems_side_by_side_and_the_first_two_slices(evaluation):
    markdown = render_report_markdown(data_of(evaluation), ["plots/roc.png"])
    systems = [s["system"] for s in evaluation.info["tables"]["systems"]]
    side_by_side = f"| metric | subset | n | {' | '.join(systems)} | target | interpretation |"
    assert markdown.count(side_by_side) == 2  # overall, across folds
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert [h for h in headings if h.startswith("### By fold")] == [f"### By fold — system `{s}`" for s in systems]
    # the default report shows the first two slices (overall, fold); criterion stays in the CSV
    assert not any("criterion" in h for h in headings)
    assert "not shown here" in markdown.lower() and "criterion" in markdown.split("## Overall")[0]
    folds = sorted(evaluation.summary.get_column("fold").drop_nulls().unique().to_list())
    assert f"| metric | subset | {' | '.join(f'fold {f}' for f in folds)} |" in markdown
    assert "![roc](plots/roc.png)" in markdown
    assert "sha256 `" in markdown


def test_report_slices_are_the_pipelines_choice(evaluation):
    data = data_of(evaluation)
    chosen = replace(data, info={**data.info, "pipeline": {**data.info["pipeline"], "report": {"slices": ["overall", "criterion"]}}})
    markdown = render_report_markdown(chosen)
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert any(h.startswith("### By criterion_id") for h in headings) and not any(h.startswith("### By fold") for h in headings)
    assert report_rows(chosen).height == report_rows(data).height  # every slice stays in report_tables.csv


def test_latex_escapes_and_uses_booktabs(evaluation):
    assert escape("recall@5 a_b 50% & {x} #1 $ ~ ^ \\") == (
        r"recall@5 a\_b 50\% \& \{x\} \#1 \$ \textasciitilde{} \textasciicircum{} \textbackslash{}")
    assert escape(">= 0.85 ± 0.01") == r"$\geq$ 0.85 $\pm$ 0.01"
    latex = render_latex(data_of(evaluation))
    assert latex.count(r"\begin{table}") == latex.count(r"\end{table}") == 4
    assert latex.count(r"\toprule") == latex.count(r"\midrule") == latex.count(r"\bottomrule") == 4
    for system in evaluation.summary.get_column("system").unique().to_list():
        assert escape(system) in latex
    assert "full_pipeline" not in latex and r"full\_pipeline" in latex  # the sample's systems have underscores
    assert r"\texttt{tpr@fpr=0.01}" in latex
    body = latex.split("\n", 2)[2]  # past the comment header
    for line in body.splitlines():
        stripped = line.replace(r"\%", "").replace(r"\_", "").replace(r"\&", "").replace(r"\#", "")
        if not line.startswith(r"\begin{tabular}"):
            assert "%" not in stripped and "_" not in stripped.replace(r"\_", ""), line
        assert " & " in line or "&" not in stripped, line


def test_further_tables_render_with_ci_and_check_marks(evaluation_with_ci):
    data = data_of(evaluation_with_ci)
    comparison = result_table_view(data.tables["comparison"], data)
    assert comparison.columns == ["metric", "baseline", "candidate", "delta", "95% CI", "p_value", "interpretation"]
    assert comparison.row(0) == ("auroc", "retriever_only", "full_pipeline", "0.0800", "[0.0500, 0.1100]", "0.0010",
                                 describe(resolve("auroc")).text)
    assert comparison.get_column("p_value").to_list()[1] == "—"
    checks = result_table_view(data.tables["checks"], data)
    assert checks.get_column("passed").to_list() == ["✓", "✗ failed"]
    statuses = result_table_view(pl.DataFrame({"check": ["a", "b", "c"], "status": ["pass", "fail", "not_applicable"]}))
    assert statuses.get_column("status").to_list() == ["✓ pass", "✗ fail", "— not applicable"]
    markdown = render_report_markdown(data)
    assert "## Comparison" in markdown and "## Checks" in markdown and "✗ failed" in markdown
    latex = render_latex(data)
    assert latex.count(r"\begin{table}") == 6


def test_report_tables_csv_is_the_model(evaluation, tmp_path):
    rows = report_rows(data_of(evaluation))
    path = tmp_path / "report_tables.csv"
    rows.write_csv(path)
    assert pl.read_csv(path).columns == list(REPORT_COLUMNS)


def test_pipeline_targets_are_checked_strictly(small_pipeline):
    import yaml

    from evalframe.pipeline.spec import PipelineSpec, check_spec

    spec = yaml.safe_load(small_pipeline.read_text())
    assert PipelineSpec.from_mapping(spec).plan.about["targets"] == {"auroc": ">= 0.5", "brier": "< 0.0001", "ece": "< 0.05"}
    spec["targets"] = {"aurco": ">= 0.8", "ndcg@7": ">= 0.5", "ece": "=< 0.05", "auroc": 0.85}
    problems = {p.location: p.message for p in check_spec(spec)}
    assert "did you mean `auroc`" in problems["targets.aurco"]
    assert "does not compute" in problems["targets.ndcg@7"]
    assert "operator" in problems["targets.ece"]
    assert "targets.auroc" in problems  # a number, not "op number"
