"""``evalframe pipelines list|show|path`` (from a checkout and from a wheel's layout) and the
short ``repr`` of a result."""

from __future__ import annotations

import sys

import pytest

import evalframe as ef
from evalframe import _resources
from evalframe.cli import main

REPO_PIPELINES = _resources.bundled_dir("pipelines")


def test_pipelines_list_names_every_bundled_pipeline(capsys):
    assert main(["pipelines", "list"]) == 0
    out = capsys.readouterr().out
    names = sorted(p.stem for p in REPO_PIPELINES.glob("*.yaml"))
    listed = [line.split()[0] for line in out.splitlines()[: len(names)]]
    assert listed == names and "evidence_contract" in names
    assert "evalframe pipelines show NAME > my.yaml" in out


def test_pipelines_show_prints_the_yaml_and_path_prints_where_it_is(capsys):
    assert main(["pipelines", "show", "evidence_contract"]) == 0
    assert capsys.readouterr().out == (REPO_PIPELINES / "evidence_contract.yaml").read_text()
    assert main(["pipelines", "path", "evidence_contract.yaml"]) == 0
    assert capsys.readouterr().out.strip() == str(REPO_PIPELINES / "evidence_contract.yaml")


def test_an_unknown_pipeline_is_a_config_error_with_a_suggestion(capsys):
    assert main(["pipelines", "show", "evidence_contrat"]) == 2
    err = capsys.readouterr().err
    assert "no bundled pipeline `evidence_contrat`; did you mean `evidence_contract`?" in err


def test_a_wheel_layout_is_found_first(tmp_path, monkeypatch):
    """An installed wheel carries the pipelines in evalframe/_bundled/pipelines (pyproject's force-include)."""
    package = tmp_path / "site-packages" / "evalframe"
    bundled = package / "_bundled" / "pipelines"
    bundled.mkdir(parents=True)
    (bundled / "only_in_wheel.yaml").write_text("version: 1\nname: only_in_wheel\n")
    monkeypatch.setattr(_resources, "_PACKAGE_DIR", package)
    assert _resources.bundled_pipelines() == {"only_in_wheel": bundled / "only_in_wheel.yaml"}


def test_pyproject_puts_the_pipelines_in_the_wheel():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    included = project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert included["pipelines"] == "evalframe/_bundled/pipelines"


@pytest.fixture(scope="module")
def small_ev():
    tables = ef.read_per_query(_resources.bundled_dir("data_samples") / "per_query.csv")
    return ef.evaluate(tables, metrics={"all_queries": ["auroc", "tp", "n_queries"], "has_evidence": ["ndcg@10"]},
                       subsets={"has_evidence": "label = 1"}, slices={"overall": [], "fold": ["fold"]},
                       across_folds="fold", bootstrap=ef.Bootstrap(resamples=50, unit="post_id"))


def test_repr_is_short_and_says_what_the_result_holds(small_ev):
    text = repr(small_ev)
    lines = text.splitlines()
    assert len(lines) < 20 and str(small_ev) == text
    assert lines[0] == "<Evaluation 'evaluation': 6 systems, 5,000 queries, 4 metrics, " f"{small_ev.summary.height:,} summary rows>"
    assert "  metrics:   auroc, tp, n_queries, ndcg@10" in lines
    assert "  slices:    overall, fold [fold] + across_folds (fold)" in lines
    assert "  intervals: 95% bootstrap CI, 50 resamples" in lines


def test_design_counts_have_no_interval_and_confusion_counts_integer_ones(small_ev):
    overall = small_ev.select(grouping="overall", system="full_pipeline")
    n_queries = overall.filter(metric="n_queries").row(0, named=True)
    assert n_queries["value"] == 500 * 10 and n_queries["ci_low"] is None and n_queries["ci_high"] is None
    tp = overall.filter(metric="tp").row(0, named=True)
    assert tp["ci_low"] is not None
    shown = next(line for line in small_ev.overview().splitlines() if line.startswith("tp "))
    low, high = shown.split("[")[1].split("]")[0].split(", ")
    assert low.replace(",", "").isdigit() and high.replace(",", "").isdigit()
    assert int(low.replace(",", "")) <= tp["ci_low"] and int(high.replace(",", "")) >= tp["ci_high"]


def test_plots_choose_no_backend_and_show_inline_only_in_ipython(small_ev):
    import matplotlib

    backend = matplotlib.get_backend()
    figure = small_ev.plot.roc()
    assert type(figure).__name__ == "Figure"
    assert "matplotlib.pyplot" not in sys.modules or matplotlib.get_backend() == backend
    from evalframe.report.notebook import show_figures_inline

    assert show_figures_inline() is False  # no IPython shell here: nothing registered
