"""The bundled recommendations and detection pipelines on their samples and on files made here."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main


def without_bootstrap(name: str):
    pipeline = ef.load_pipeline(f"pipelines/{name}.yaml")
    return replace(pipeline, plan=replace(pipeline.plan, bootstrap=None))


def values(evaluation) -> dict:
    overall = evaluation.summary.filter(pl.col("grouping") == "overall")
    return {m: (v, note) for m, v, note in overall.select("metric", "value", "note").iter_rows()}


def test_recommendations_pipeline_on_its_sample():
    evaluation = without_bootstrap("recommendations").run()
    got = values(evaluation)
    assert got["hit_rate@10"][0] == pytest.approx(0.4)
    assert got["catalog_coverage@10"][0] == pytest.approx(0.722)
    assert 0 < got["gini@10"][0] < 1 and got["popularity_bias@10"][0] > 1
    assert evaluation.tables["item_counts"].get_column("count").sum() == 500 * 20


def test_recommendations_without_catalog_or_ground_truth(tmp_path):
    recs = tmp_path / "recs.csv"
    pl.DataFrame({"query_id": ["u1", "u1", "u2"], "doc_id": ["a", "b", "a"], "rank": [1, 2, 1]}).write_csv(recs)
    pipeline = without_bootstrap("recommendations")
    pipeline = replace(pipeline, input=replace(pipeline.input, tables={}))
    evaluation = pipeline.run(recs)
    got = values(evaluation)
    assert got["unique_items@10"][0] == 2
    assert got["gini@10"][0] == pytest.approx((2 * (1 * 1 + 2 * 2) - 3 * 3) / (2 * 3))
    # What needs the held-out items, the catalog or the history is skipped, each part with a note.
    assert set(got) == {"unique_items@10", "unique_items@20", "gini@10", "gini@20"}
    assert any("catalog coverage metrics" in note and "--catalog FILE" in note for note in evaluation.notes)
    assert any("serendipity metrics" in note and "history" in note for note in evaluation.notes)


def test_detection_pipeline_on_its_sample_and_a_bad_label(tmp_path, capsys):
    evaluation = without_bootstrap("detection").run()
    got = values(evaluation)
    assert got["detection_rate@fpr=0.01"][0] <= got["tpr@fpr=0.01"][0]
    assert got["actual_fpr@fpr=0.01"][0] <= 0.01
    assert got["min_cost(fp_cost=100,fn_cost=10000)"][0] <= got["total_cost(fp_cost=100,fn_cost=10000)"][0]
    segments = evaluation.summary.filter(pl.col("grouping") == "segment").get_column("segment").unique().to_list()
    assert sorted(segments) == ["card_present", "online", "transfer"]
    assert evaluation.tables["cost_curve"].height > 1
    bad = tmp_path / "scores.csv"
    bad.write_text("query_id,label,prob\nq1,1,0.9\nq2,yes,0.2\n")
    out = tmp_path / "never"
    assert main(["run", "pipelines/detection.yaml", "--input", str(bad), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert str(bad) in error and "line 3" in error and "'yes'" in error
    assert not out.exists()


def test_cli_catalog_gold_and_costs(tmp_path, capsys):
    recs = tmp_path / "recs.csv"
    pl.DataFrame({"query_id": ["u1", "u1", "u2"], "doc_id": ["item_0001", "item_0002", "item_0001"], "rank": [1, 2, 1]}).write_csv(recs)
    truth = tmp_path / "truth.csv"
    pl.DataFrame({"query_id": ["u1"], "doc_id": ["item_0002"]}).write_csv(truth)
    out = tmp_path / "recs_out"
    args = ["run", "recommendations", "--input", str(recs), "--gold", str(truth), "--out", str(out)]
    assert main([*args, "--catalog", "data_samples/recommendations/items.csv"]) == 0
    summary = pl.read_csv(out / "summary.csv").filter(pl.col("grouping") == "overall")
    got = dict(summary.select("metric", "value").iter_rows())
    assert got["catalog_coverage@10"] == pytest.approx(2 / 1000)
    assert got["hit_rate@10"] == 1.0
    assert "serendipity@10" not in got  # the sample's history is not used with another input: skipped
    capsys.readouterr()
    assert main(["run", "detection", "--costs", "fp=1,fn=2", "--out", str(tmp_path / "det")]) == 0
    assert "total_cost(fp_cost=1,fn_cost=2)" in pl.read_csv(tmp_path / "det" / "summary.csv").get_column("metric").to_list()
    assert main(["run", "detection", "--costs", "fp=1", "--out", str(tmp_path / "no")]) == 2
    assert "needs both" in capsys.readouterr().err
    assert main(["run", "detection", "--catalog", "x.csv", "--out", str(tmp_path / "no")]) == 2
