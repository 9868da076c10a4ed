"""Strict pipeline specs: the whole spec is validated before anything runs, every problem at
once with its key path; ``parameters:`` reaches only the metrics that read a parameter."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

import evalframe as ef
from evalframe.cli import main
from evalframe.pipeline import Pipeline, check_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACT = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"


def contract() -> dict:
    return yaml.safe_load(CONTRACT.read_text())


def problems_of(spec) -> dict[str, str]:
    return {problem.location: problem.render() for problem in check_spec(spec)}


def test_the_bundled_pipeline_is_valid():
    assert check_spec(contract()) == []


def test_structure_and_meaning_are_reported_together():
    spec = contract()
    spec["metrics"][1]["subest"] = spec["metrics"][1].pop("subset")
    spec["metrics"][0]["names"][0] = "aurok"
    spec["parameters"]["k"] = 10
    spec["subsets"]["has_evidence"]["where"] = "label = = 1"
    spec["outputs"] = ["summary.xlsx"]
    found = problems_of(spec)
    assert set(found) == {"metrics[1].subest", "metrics[0].names[0]", "parameters.k", "subsets.has_evidence.where", "outputs[0]"}
    assert "did you mean `subset`?" in found["metrics[1].subest"]
    assert "unknown metric `aurok`; did you mean `auroc`" in found["metrics[0].names[0]"]
    assert "no metric reads parameter `k`" in found["parameters.k"]
    assert "cannot parse" in found["subsets.has_evidence.where"]
    with pytest.raises(ef.ConfigError) as caught:
        Pipeline.from_mapping(spec, origin="my.yaml")
    assert str(caught.value).startswith("my.yaml: 5 problems")


def test_a_parameter_reaches_only_the_metrics_that_read_it():
    spec = {"version": 1, "parameters": {"threshold": 0.3},
            "metrics": [{"names": ["mrr", "map", "f1", "ece", "recall@5", "sensitivity(threshold=0.7)"]}]}
    names = [metric.name for metric in Pipeline.from_mapping(spec).metrics]
    assert names == ["mrr", "map", "f1(threshold=0.3)", "ece", "recall@5", "sensitivity(threshold=0.7)"]


def test_a_cutoff_parameter_is_an_error_not_a_silent_cutoff():
    spec = {"version": 1, "parameters": {"k": 10}, "metrics": [{"names": ["mrr", "map"]}]}
    assert "parameters.k" in problems_of(spec)


def test_unknown_subset_and_across_folds_without_its_slice():
    spec = {"version": 1, "metrics": [{"subset": "pos", "names": ["mrr"]}], "slices": {"overall": []},
            "across_folds": "fold"}
    found = problems_of(spec)
    assert "metrics[0].subset" in found and "names an unknown subset" in found["metrics[0].subset"]
    assert "needs a slice that groups by [fold] alone" in found["across_folds"]


def test_slice_keys_the_engine_cannot_take_are_problems_with_key_paths():
    """A slice key repeated, ``system``, or a column the summary makes (``n_units``): a problem of
    the file at ``slices.<name>``, reported with the others (before: a bare ConfigError from the
    engine's plan, naming no file)."""
    spec = {"version": 1, "metrics": [{"names": ["brier", "aurok"]}],
            "slices": {"overall": [], "twice": ["fold", "fold"], "made": {"by": ["n_units"]}, "per": ["system"]}}
    found = problems_of(spec)
    assert set(found) == {"metrics[0].names[1]", "slices.twice", "slices.made", "slices.per"}
    assert "must name each column once and not `system`" in found["slices.twice"]
    assert "must name each column once and not `system`" in found["slices.per"]
    assert "names 'n_units', a column the summary or its partials make" in found["slices.made"]
    with pytest.raises(ef.ConfigError) as caught:
        Pipeline.from_mapping(spec, origin="my.yaml")
    assert str(caught.value).startswith("my.yaml: 4 problems")
    # A slice named by a number is the structure check's problem, reported once.
    assert [p.location for p in check_spec({"version": 1, "metrics": [{"names": ["brier"]}], "slices": {3: ["system"]}})] == ["slices.3"]


@pytest.mark.parametrize("key", ["se", "ci_low", "ci_high", "params", "target"])
def test_a_slice_key_named_like_a_summary_column_is_refused_before_anything_runs(key, tmp_path, capsys):
    """The summary's interval and label columns too: with a tag column ``se`` as a slice key, a run
    with a bootstrap ended in an internal DuplicateError (exit 3); with ``target`` or ``params``,
    exit 0 with the slice's values overwritten by the metrics' categories or nulls."""
    sample = REPO_ROOT / "data_samples" / "per_query.csv"
    frame = pl.read_csv(sample, n_rows=60, infer_schema=False).with_columns(pl.lit("a").alias(key))
    frame.write_csv(tmp_path / "mine.csv")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump({
        "version": 1, "name": "mine", "input": {"path": str(tmp_path / "mine.csv")}, "metrics": [{"names": ["brier"]}],
        "slices": {"overall": [], "tagged": [key]}, "bootstrap": {"resamples": 20}, "outputs": ["summary.csv"]}))
    assert main(["run", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "out"), "-q"]) == 2
    assert not (tmp_path / "out").exists()
    assert capsys.readouterr().err.startswith(f"evalframe: error: {tmp_path / 'p.yaml'}: 1 problem\n  slices.tagged: names {key!r}")


def test_columns_the_input_lacks_are_errors_with_key_paths():
    spec = contract()
    spec["slices"]["scenario"] = ["scenario"]
    spec["weight"] = "w"
    spec["subsets"]["has_evidence"]["where"] = "labl = 1"
    with pytest.raises(ef.ConfigError) as caught:
        Pipeline.from_mapping(spec).run(SAMPLE)
    message = str(caught.value)
    for expected in ("slices.scenario: names column `scenario`", "weight: names column `w`",
                     "subsets.has_evidence: names column `labl`"):
        assert expected in message


def test_check_pipeline_command(tmp_path, capsys):
    assert main(["check-pipeline", str(CONTRACT), "--input", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "ok: pipeline `evidence_contract`" in out and "the pipeline runs on it" in out
    spec = contract()
    spec["metrics"][0]["subest"] = "all_queries"
    spec["slices"]["fold"] = "fold"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(spec))
    assert main(["check-pipeline", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "metrics[0].subest: unknown key; did you mean `subset`?" in err
    assert "slices.fold: expected a list of strings or a mapping, found a string" in err


def test_policies_reach_the_engine(tmp_path):
    frame = pl.read_csv(SAMPLE, infer_schema=False).head(40)
    spec = {"version": 1, "metrics": [{"names": ["recall@5", "mrr"]}], "policies": {"empty": "zero"}}
    zero = Pipeline.from_mapping(spec).run(frame)
    skip = Pipeline.from_mapping({**spec, "policies": {"empty": "skip"}}).run(frame)
    zero_row = zero.summary.filter(metric="mrr").row(0, named=True)
    skip_row = skip.summary.filter(metric="mrr").row(0, named=True)
    assert zero_row["n_skipped"] == 0 and skip_row["n_skipped"] > 0
    assert zero_row["n"] == skip_row["n"] + skip_row["n_skipped"]


def test_overrides_leave_the_callers_values_unchanged():
    """``set={"slices": {...}, "slices.x": [...]}``: the second key changes the pipeline's copy,
    never the mapping the caller passed (a module-level constant reused in the next call)."""
    slices = {"overall": []}
    pipeline = ef.load_pipeline("evidence_contract", set={"slices": slices, "slices.fold": ["fold"]})
    assert slices == {"overall": []}
    assert set(pipeline.plan.slices) == {"overall", "fold"}
