"""`evalframe run` and the stages after the engine: exit 1 on a failed MUST check (outputs written),
exit 2 and nothing written on a bad analyses / gate configuration."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from evalframe.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"


def write_spec(tmp_path: Path, **changes) -> Path:
    spec = yaml.safe_load(PIPELINE.read_text())
    spec["input"]["path"] = str(SAMPLE)
    spec["tuning"]["grid"] = 0.05
    spec.pop("bootstrap")  # the checks read no interval; the bootstrap would triple each run's time
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


#: The bundled pipeline's outputs but the plots and report.html, which draws them: a failed check
#: stops nothing, whatever is written (the plots of a good run are checked in test_cli_pipeline.py).
OUTPUTS_WITHOUT_PLOTS = [name for name in yaml.safe_load(PIPELINE.read_text())["outputs"] if name not in ("plots", "report.html")]


def test_a_failed_must_check_exits_1_after_writing_every_output(tmp_path, capsys):
    path = write_spec(tmp_path, checks={"expect": {"n_queries": 4000, "n_positive": 466}}, outputs=OUTPUTS_WITHOUT_PLOTS)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "check failed: expect_n_queries [system full_pipeline]" in captured.err
    assert "5000 (expected 4000)" in captured.err
    assert "expect_n_positive" not in captured.err
    assert {p.name for p in out.iterdir()} >= {"summary.csv", "summary.md", "run.json", "checks.csv", "tuning.csv", "ablation.csv"}
    assert {p.name for p in out.iterdir()} >= set(OUTPUTS_WITHOUT_PLOTS)  # every output it was asked for
    checks = pl.read_csv(out / "checks.csv")
    assert checks.filter(pl.col("status") == "fail")["check"].to_list() == ["expect_n_queries"] * 6
    assert "6 failed:" in (out / "summary.md").read_text()


def test_passing_checks_exit_0_and_the_terminal_counts_them(tmp_path, capsys):
    """One run for both (they were two tests running the same command); of the declared outputs
    it writes run.json only, beside the result tables (the test above writes every output)."""
    assert main(["run", str(write_spec(tmp_path)), "--out", str(tmp_path / "out"), "--outputs", "run.json"]) == 0
    captured = capsys.readouterr()
    assert "check failed" not in captured.err
    assert "checks: " in captured.out and " passed, 0 failed, " in captured.out
    assert "checks.csv" in {p.name for p in (tmp_path / "out").iterdir()}


@pytest.mark.parametrize(("changes", "message"), [
    ({"parameters": {"threshold": 0.5, "tau_neg": 0.8, "tau_pos": 0.2}}, "tau_neg (0.8) > tau_pos (0.2)"),
    ({"parameters": {"threshold": 0.5, "tau_neg": 0.2}}, "give both `tau_neg` and `tau_pos`"),
    ({"tuning": {"grid": 0.01, "min_alert_precison": 0.9}}, "tuning.min_alert_precison: unknown key; did you mean `min_alert_precision`?"),
    ({"tuning": {"grid": 0.3}}, "tuning.grid: must be a step"),
    ({"tuning": {"threshold": {"objective": "max_auc"}}}, "tuning.threshold.objective: is not one of"),
    ({"ablation": {"metrics": ["ndcg@10", "map@7"]}}, "ablation.metrics[1]: is not listed under `metrics`"),
    ({"ablation": {"order": ["full_pipeline"], "metrix": []}}, "ablation.metrix: unknown key"),
    ({"checks": {"expect": {"n_querys": 3}}}, "checks.expect.n_querys: unknown key"),
])
def test_bad_configuration_exits_2_and_writes_nothing(tmp_path, capsys, changes, message):
    path = write_spec(tmp_path, **changes)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists()


def test_an_ablation_order_naming_an_unknown_config_exits_2(tmp_path, capsys):
    path = write_spec(tmp_path, ablation={"order": ["retriever_only", "no_such_config"], "metrics": ["auroc"]})
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "no_such_config" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
