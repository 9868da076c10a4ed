"""The bundled rag, recommendations and detection pipelines adapt through ``requires:`` (DESIGN §3):
on a file with only the required columns each exits 0, runs what it can and skips every other
part with one note (terminal, run.json, report); on the bundled sample nothing is skipped."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main


def run(tmp_path, capsys, *args) -> tuple[dict, str, pl.DataFrame]:
    out = tmp_path / "out"
    assert main(["run", *args, "--out", str(out), "--no-bootstrap"]) == 0
    err = capsys.readouterr().err
    info = json.loads((out / "run.json").read_text())
    return info, err, pl.read_csv(out / "summary.csv")


def skipped(info: dict) -> list[str]:
    return [part["part"] for part in info["skipped"]]


def test_rag_on_records_with_only_sample_id_and_response(tmp_path, capsys):
    file = tmp_path / "min.jsonl"
    file.write_text('{"sample_id": "a", "response": "Ada wrote it"}\n{"sample_id": "b", "response": "I do not know"}\n')
    info, err, summary = run(tmp_path, capsys, "rag", "--input", str(file))
    assert set(summary.get_column("metric")) == {"distinct_1", "distinct_2"}  # all a bare file can give
    assert skipped(info) == [f"metrics[{i}]" for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 10)] + ["slices.scenario", "slices.topic"]
    assert "§7 latency metrics (mean_latency, p50_latency, … (4 metrics)) skipped: no `latency_end_to_end` column" in " ".join(err.split())
    assert "give `timings: {end_to_end: seconds}` in the records" in " ".join(err.split())
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Skipped: slice `topic`: no `topic` column" in report and "Skipped: §3 retrieval metrics" in report


def test_rag_with_labels_but_no_topic_timings_or_embeddings(tmp_path, capsys):
    records = [
        {"sample_id": "p", "reference_answer": "Ada", "response": "Ada", "labels": {"scenario": "original"}},
        {"sample_id": "v", "reference_answer": "Ada", "response": "Ada Lovelace", "labels": {"scenario": "typo", "variant_of": "p"}},
    ]
    file = tmp_path / "labelled.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records))
    info, _, summary = run(tmp_path, capsys, "rag", "--input", str(file))
    assert set(summary.get_column("grouping")) == {"overall", "scenario"}
    overall = dict(summary.filter(pl.col("grouping") == "overall").select("metric", "value").iter_rows())
    assert overall["token_f1"] == pytest.approx((1 + 2 / 3) / 2)
    assert overall["noise_robustness"] == pytest.approx((2 / 3) / 1)
    assert "slices.topic" in skipped(info) and "slices.scenario" not in skipped(info)


def test_recommendations_on_a_bare_ranking(tmp_path, capsys):
    recs = tmp_path / "recs.csv"
    pl.DataFrame({"query_id": ["u1", "u1", "u2"], "doc_id": ["a", "b", "a"], "rank": [1, 2, 1]}).write_csv(recs)
    info, err, summary = run(tmp_path, capsys, "recommendations", "--input", str(recs))
    assert set(summary.get_column("metric")) == {"unique_items@10", "unique_items@20", "gini@10", "gini@20"}
    assert skipped(info) == ["metrics[0]", "metrics[2]", "metrics[3]", "metrics[4]", "metrics[5]"]
    flat = " ".join(err.split())
    assert "give the item catalog (`--catalog FILE` or `input.tables.items`)" in flat
    # serendipity: the history, and a similarity table or item embeddings
    assert "give the users' history" in flat and "similarity) or give the item catalog with an `embedding` column" in flat


def test_recommendations_with_a_catalog_without_categories(tmp_path, capsys):
    recs = tmp_path / "recs.csv"
    pl.DataFrame({"query_id": ["u1", "u1", "u2"], "doc_id": ["a", "b", "a"], "rank": [1, 2, 1]}).write_csv(recs)
    items = tmp_path / "items.csv"
    pl.DataFrame({"item_id": ["a", "b", "c", "d"], "popularity": [10, 5, 1, 4]}).write_csv(items)
    info, _, summary = run(tmp_path, capsys, "recommendations", "--input", str(recs), "--catalog", str(items))
    got = dict(summary.select("metric", "value").iter_rows())
    assert got["catalog_coverage@10"] == pytest.approx(2 / 4)
    assert got["popularity_bias@10"] == pytest.approx(((10 + 5 + 10) / 3) / (20 / 4))
    assert skipped(info) == ["metrics[0]", "metrics[3]", "metrics[5]"]  # held-out items, category, serendipity


def test_detection_on_labels_and_scores_only(tmp_path, capsys):
    scores = tmp_path / "scores.csv"
    scores.write_text("query_id,label,prob\nq1,1,0.9\nq2,0,0.2\nq3,0,0.6\nq4,1,0.4\n")
    info, err, summary = run(tmp_path, capsys, "detection", "--input", str(scores))
    assert "auroc" in summary.get_column("metric").to_list()
    assert "time_to_detection" not in summary.get_column("metric").to_list()
    assert skipped(info) == ["metrics[2]", "slices.segment"]
    assert "time to detection metrics (time_to_detection, detected) skipped: no `onset` column" in " ".join(err.split())


def test_detection_on_incidents_only_gives_time_to_detection(tmp_path, capsys):
    incidents = tmp_path / "incidents.csv"
    incidents.write_text("query_id,onset,detected_at\ni1,0,30\ni2,100,160\ni3,200,\n")
    info, _, summary = run(tmp_path, capsys, "detection", "--input", str(incidents))
    got = {m: (n, v) for m, n, v in summary.select("metric", "n", "value").iter_rows()}
    assert got == {"time_to_detection": (2, pytest.approx(45.0)), "detected": (3, pytest.approx(2 / 3))}
    assert skipped(info) == ["metrics[0]", "metrics[1]", "slices.segment"]


def test_detection_sample_time_to_detection_matches_the_chapter_summary():
    from dataclasses import replace

    from evalframe.metrics.detection import time_to_detection_summary

    pipeline = ef.load_pipeline("detection")
    evaluation = replace(pipeline, plan=replace(pipeline.plan, bootstrap=None)).run()
    assert evaluation.notes == () or not any("skipped" in note for note in evaluation.notes)
    overall = evaluation.summary.filter(pl.col("grouping") == "overall")
    got = dict(overall.select("metric", "value").iter_rows())
    cases = pl.read_csv("data_samples/detection/scores.csv").filter(pl.col("onset").is_not_null())
    chapter = time_to_detection_summary(cases.get_column("onset").to_numpy(), cases.get_column("detected_at").to_list())
    assert got["time_to_detection"] == pytest.approx(chapter["mean_ttd"], rel=1e-12)
    assert got["detected"] == pytest.approx(chapter["detection_rate"], rel=1e-12)
    assert np.isclose(overall.filter(pl.col("metric") == "time_to_detection").get_column("median").item(), chapter["median_ttd"])
