"""The bundled rag pipeline (issue 23): runs from any folder on the bundled sample, the two-file
form gives the same numbers, it adapts to a file without labels, timings or embeddings, and its
run.json states seed 000's definitions."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "rag"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("elsewhere")
    import os

    here = os.getcwd()
    os.chdir(folder)  # the bundled pipeline finds its sample from any folder
    try:
        return ef.run_pipeline("rag", bootstrap=False, out=folder / "out"), folder / "out"
    finally:
        os.chdir(here)


def test_the_bundled_pipeline_runs_from_any_folder(sample_run):
    ev, out = sample_run
    summary = ev.summary
    assert set(summary.get_column("grouping")) == {"overall", "scenario", "topic"}
    assert set(summary.get_column("system")) == {"bm25", "hybrid"}
    scenarios = set(summary.filter(pl.col("grouping") == "scenario").get_column("scenario"))
    assert scenarios == {"original", "paraphrase", "typo", "unanswerable", "counterfactual"}
    token_f1 = summary.filter((pl.col("grouping") == "overall") & (pl.col("metric") == "token_f1"))
    assert dict(token_f1.select("system", "n").iter_rows()) == {"bm25": 285, "hybrid": 285}  # 15 unanswerable skipped
    targets = dict(summary.select("metric", "target").unique().iter_rows())
    assert targets["bleu"] == "generation_correctness" and targets["p95_latency"] == "latency"
    assert targets["noise_robustness"] == "noise_robustness" and targets["ndcg@10"] == "retrieval_accuracy"
    run_info = json.loads((out / "run.json").read_text())
    assert "seed 000" in json.dumps(run_info) and "min(k, retrieved)" in json.dumps(run_info)


def test_the_two_file_form_gives_the_same_summary(sample_run):
    ev, _ = sample_run
    two = ef.run_pipeline("rag", input=SAMPLE / "outputs.jsonl", samples=SAMPLE / "samples.jsonl", bootstrap=False)
    columns = ["grouping", "system", "scenario", "metric", "n", "value"]
    assert two.summary.select(columns).equals(ev.summary.select(columns))


def test_a_file_without_labels_timings_or_embeddings_runs(tmp_path):
    file = tmp_path / "plain.jsonl"
    file.write_text(
        '{"query_id": "a", "reference_answer": "Ada", "response": "Ada wrote it", '
        '"retrieved": [{"doc_id": "d1", "text": "Ada wrote it"}], "relevant_docs": [{"doc_id": "d1"}]}\n'
    )
    assert main(["run", "rag", "--input", str(file), "--out", str(tmp_path / "out"), "-q"]) == 0
    summary = pl.read_csv(tmp_path / "out" / "summary.csv")
    metrics = set(summary.filter(pl.col("grouping") == "overall").get_column("metric"))
    assert {"token_f1", "recall@5", "evidence_overlap_faithfulness", "distinct_1"} <= metrics
    assert not metrics & {"p95_latency", "noise_robustness", "intra_list_diversity@5", "rougeL_query"}  # skipped, with notes
    skipped = {part["what"].split(" metrics")[0] for part in json.loads((tmp_path / "out" / "run.json").read_text())["skipped"]}
    assert skipped == {"§4.2 answer vs query", "§6 noise robustness", "§6 rejection", "§6 counterfactual", "§7 latency",
                       "§7 retrieved-list diversity", "slice `scenario`", "slice `topic`"}
