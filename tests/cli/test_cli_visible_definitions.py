"""Visible definitions: parameters in every rendered summary, a note when graded judgments meet
nDCG's exponential gain (which trec_eval does not use), notes on stderr."""

from __future__ import annotations

from pathlib import Path

import evalframe as ef
from evalframe.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
TREC = REPO_ROOT / "data_samples" / "trec"


def test_graded_judgments_and_exponential_gain_are_noted_once():
    run, qrels = ef.read_run(TREC / "run_bm25.txt"), ef.read_qrels(TREC / "qrels.txt")
    notes = ef.evaluate(run, qrels, ["ndcg@10", "ndcg@5", "ndcg@10(gain=linear)"]).notes
    gain_notes = [note for note in notes if "exponential gain" in note]
    assert gain_notes == ["`ndcg@10`, `ndcg@5` use exponential gain 2^grade − 1 on graded judgments; trec_eval, "
                          "pytrec_eval, ir_measures and ranx's `ndcg` use linear gain: ask for it as `ndcg@10(gain=linear)`"]
    assert not any("exponential" in note for note in ef.evaluate(run, qrels, ["ndcg@10(gain=linear)"]).notes)


def test_parameters_are_in_the_rendered_summary_and_notes_on_stderr(tmp_path, capsys):
    # no intervals asserted here: skip the bootstrap, write only the summary it reads
    assert main(["run", "evidence_contract", "--out", str(tmp_path / "out"), "--no-bootstrap", "--outputs", "summary.md"]) == 0
    captured = capsys.readouterr()
    parameters = "threshold = 0.5, relevance_threshold = 1, empty = skip, missing = error, weight = none"
    assert f"parameters: {parameters}" in captured.out
    assert f"Parameters: {parameters}." in (tmp_path / "out" / "summary.md").read_text()
    assert "evalframe: note: slices `criterion`, `state`, `has_evidence` do not apply to unit `post`" in captured.err
    assert "note:" not in captured.out
