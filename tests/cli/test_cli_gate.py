"""`evalframe gate` through the command line: exit codes, written files, bad criteria files,
$GITHUB_STEP_SUMMARY, and the end-to-end sample (gold set → run → gate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_outputs import write_criteria, write_run

from evalframe.cli import main

REPO = Path(__file__).resolve().parents[2]
RECORD = (REPO / "data_samples/gold_set/config/ship-criteria.yaml").read_text()


def _gate(tmp_path, cand_values, base_values, criteria=RECORD, *extra):
    cand = write_run(tmp_path / "candidate", cand_values, system="cand")
    args = ["gate", str(cand), "--criteria", str(write_criteria(tmp_path, criteria))]
    if base_values is not None:
        args += ["--baseline", str(write_run(tmp_path / "baseline", base_values, system="base"))]
    return main([*args, *extra]), cand


@pytest.mark.parametrize(("cand", "base", "status", "verdict"), [
    ({"recall@5": 0.91, "mrr": 0.70}, {"recall@5": 0.90, "mrr": 0.70}, 0, "**✅ all checks passed**"),
    ({"recall@5": 0.91, "mrr": 0.60}, {"recall@5": 0.90, "mrr": 0.60}, 0, "**✅ all checks passed, 1 warning**"),
    ({"recall@5": 0.81, "mrr": 0.60}, {"recall@5": 0.87, "mrr": 0.60}, 1, "**❌ 1 blocking check failed, 1 warning**"),
])
def test_exit_codes_and_outputs(tmp_path, capsys, cand, base, status, verdict):
    code, folder = _gate(tmp_path, cand, base)
    assert code == status
    printed = capsys.readouterr().out
    comment = (folder / "gate" / "pr_comment.md").read_text()
    assert printed.strip() == comment.strip()
    assert verdict in comment
    report = json.loads((folder / "gate" / "gate.json").read_text())
    assert report["exit_code"] == status
    assert [g["name"] for g in report["gates"]] == ["retrieval_recall_at_5", "retrieval_mrr"]


def test_same_inputs_same_bytes(tmp_path):
    _gate(tmp_path, {"recall@5": 0.81, "mrr": 0.7}, {"recall@5": 0.87, "mrr": 0.7})
    first = (tmp_path / "candidate/gate/gate.json").read_bytes(), (tmp_path / "candidate/gate/pr_comment.md").read_bytes()
    _gate(tmp_path, {"recall@5": 0.81, "mrr": 0.7}, {"recall@5": 0.87, "mrr": 0.7})
    assert first == ((tmp_path / "candidate/gate/gate.json").read_bytes(), (tmp_path / "candidate/gate/pr_comment.md").read_bytes())


def test_github_step_summary_gets_the_comment(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, folder = _gate(tmp_path, {"recall@5": 0.91, "mrr": 0.7}, {"recall@5": 0.90, "mrr": 0.7})
    assert code == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n") and (folder / "gate/pr_comment.md").read_text() in text


@pytest.mark.parametrize(("criteria", "message"), [
    ("gates:\n  - name: retrieval_recall_at_5\n    treshold: 0.85\n",
     "gates[0].treshold: unknown key; did you mean `threshold`?"),
    ("gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.85\n    severity: blocker\n",
     "gates[0].severity: is not one of `error`, `warning`"),
    ("gates:\n  - name: retrieval_recal_at_5\n    threshold: 0.85\n",
     "gates[0].name: unknown metric `recal`; did you mean `recall`"),
    ("gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.85\nnoise_aware: true\n",
     "noise_aware: unknown key"),
    ("gates:\n  - name: retrieval_recall_at_5\n", "gates[0]: checks nothing: give `threshold` and/or `regression_max`"),
    ("gates:\n  - name: retrieval_ndcg_at_10\n    threshold: 0.5\n", "gates[0].name: the results in"),
    ("gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.8\n    slice: {grouping: tier}\n",
     "gates[0].slice.grouping: the results in"),
    ("gates:\n  - name: latency\n    threshold: 0.8\n", "gates[0].name: does not name a metric"),
    ("gates:\n  - name: retrieval_recall_at_5\n    threshold: '0.85'\n",
     "gates[0].threshold: expected a number or null, found a string; remove the quotes"),
    ("gates: [\n", "is not valid YAML"),
    ("", "a ship_criteria must be a mapping of keys, found null (is the file empty?)"),
])
def test_bad_criteria_exit_2_naming_the_key_and_write_nothing(tmp_path, capsys, criteria, message):
    code, folder = _gate(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, {"recall@5": 0.9, "mrr": 0.7}, criteria)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (folder / "gate").exists()


def test_missing_baseline_exit_2_unless_allowed(tmp_path, capsys):
    code, folder = _gate(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None)
    assert code == 2
    assert "gates[0].regression_max: needs a baseline value: no baseline was given" in capsys.readouterr().err
    assert not (folder / "gate").exists()
    code, _ = _gate(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None, RECORD, "--no-baseline-ok")
    assert code == 0
    code, _ = _gate(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None, RECORD, "--baseline", str(tmp_path / "nope"), "--no-baseline-ok")
    assert code == 0
    code, _ = _gate(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None, RECORD, "--baseline", str(tmp_path / "nope"))
    assert code == 2
    assert "baseline folder not found" in capsys.readouterr().err


def test_results_folder_without_a_summary_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = main(["gate", str(tmp_path / "empty"), "--criteria", str(write_criteria(tmp_path, RECORD)), "--no-baseline-ok"])
    assert code == 2
    assert "has no summary.parquet" in capsys.readouterr().err


def test_sample_gold_set_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    for system in ("baseline", "candidate"):
        assert main(["run", "pipelines/retrieval_gate.yaml", "--input", f"data_samples/gold_set/{system}.jsonl",
                     "--out", str(tmp_path / system)]) == 0
    capsys.readouterr()
    code = main(["gate", str(tmp_path / "candidate"), "--baseline", str(tmp_path / "baseline"),
                 "--criteria", "data_samples/gold_set/config/ship-criteria.yaml"])
    comment = capsys.readouterr().out
    assert code == 0
    assert "**✅ all checks passed**" in comment
    assert "- retrieval recall@5 is 87% (baseline 85%) — passes" in comment
    assert "`multi_hop` (271 cases): dropped from 82% to 72% (−10.1 points)" in comment
    assert "⚠️ retrieval recall@5 passes overall, but on tag `multi_hop` (271 cases) it dropped by 10.1 points" in comment
