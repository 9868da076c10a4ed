"""`evalframe score` (the legal score.py) and the legal pipeline: the printed block, --output,
--dedupe, notes on stderr, bad input (exit 2, file and JSON path, nothing written), and
agreement to the last bit between the command and `evalframe run pipelines/legal.yaml`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main
from tests import legal_reference as ref

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data_samples" / "legal"
GOLD = SAMPLES / "gold.json"
WEAK = SAMPLES / "predictions_weak.json"
BETTER = SAMPLES / "predictions_better.json"


def block(results: dict[str, float]) -> str:
    lines = ["Evaluation Results:", "=" * 26, *(f"{key}: {value:.4f}" for key, value in results.items()), "=" * 26]
    return "\n".join(lines) + "\n"


def run_ok(capsys, args):
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured


def test_prints_exactly_score_py_block(capsys):
    captured = run_ok(capsys, ["score", str(WEAK), str(GOLD), "--k", "10"])
    expected = ref.score(json.loads(WEAK.read_text()), json.loads(GOLD.read_text()), 10)
    assert captured.out == block(expected)
    assert list(expected) == ["exact_match", "span_f1", "recall@10", "ndcg@10", "num_examples"]
    assert "1 of 48 gold tests have no prediction" in captured.err
    assert "span_precision" not in captured.out


def test_the_seed_example_layout(capsys, tmp_path):
    # The seed's block: 4 decimals, num_examples as a float, 26 '=' above and below.
    (tmp_path / "p.json").write_text(json.dumps([{"query": "q", "retrieved_passages": ["x"]}]))
    (tmp_path / "g.json").write_text(json.dumps({"tests": [{"query": "q", "snippets": [{"answer": "y"}]}]}))
    captured = run_ok(capsys, ["score", str(tmp_path / "p.json"), str(tmp_path / "g.json")])
    assert captured.out == ("Evaluation Results:\n==========================\nexact_match: 0.0000\nspan_f1: 0.0000\n"
                            "recall@10: 0.0000\nndcg@10: 0.0000\nnum_examples: 1.0000\n==========================\n")


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("dedupe", [False, True])
def test_output_json_full_precision(capsys, tmp_path, k, dedupe):
    out = tmp_path / "results" / "out.json"
    args = ["score", str(WEAK), str(GOLD), "--k", str(k), "--output", str(out)] + (["--dedupe"] if dedupe else [])
    captured = run_ok(capsys, args)
    saved = json.loads(out.read_text())
    expected = ref.score(json.loads(WEAK.read_text()), json.loads(GOLD.read_text()), k, dedupe=dedupe)
    assert list(saved) == ["exact_match", "span_f1", f"recall@{k}", f"ndcg@{k}", "num_examples"]
    for key, value in expected.items():
        assert saved[key] == pytest.approx(value, abs=1e-12), key
    assert captured.out == block(saved)
    if dedupe:
        assert saved[f"ndcg@{k}"] <= 1.0
        assert "above 1" not in captured.err


def test_ndcg_above_one_warns_with_the_count(capsys):
    captured = run_ok(capsys, ["score", str(BETTER), str(GOLD)])
    per_test = [ref.ndcg_at([p["text"] for p in record["retrieved_passages"]], [s["answer"] for s in test["snippets"]], 10)
                for record, test in zip(json.loads(BETTER.read_text()), json.loads(GOLD.read_text())["tests"], strict=True)]
    above = sum(value > 1 for value in per_test)
    assert above > 0
    assert f"warning: {above} of 48 queries have ndcg@10 above 1" in captured.err


def test_span_predictions_add_span_lines(capsys, tmp_path):
    out = tmp_path / "o.json"
    captured = run_ok(capsys, ["score", str(BETTER), str(GOLD), "--k", "5", "--output", str(out)])
    saved = json.loads(out.read_text())
    assert list(saved) == ["exact_match", "span_f1", "recall@5", "ndcg@5", "span_precision@5", "span_recall@5", "num_examples"]
    assert captured.out == block(saved)


def test_command_and_pipeline_agree_to_the_last_bit(capsys, tmp_path):
    for predictions in (WEAK, BETTER):
        out = tmp_path / f"{predictions.stem}.json"
        run_ok(capsys, ["score", str(predictions), str(GOLD), "--output", str(out)])
        saved = json.loads(out.read_text())
        ev = ef.run_pipeline(ROOT / "pipelines" / "legal.yaml", input=predictions, gold=GOLD)
        overall = dict(ev.summary.filter(grouping="overall").select("metric", "value").iter_rows())
        names = {"exact_match": "legal_exact_match", "span_f1": "legal_span_f1", "recall@10": "legal_recall@10",
                 "ndcg@10": "legal_ndcg@10", "span_precision@10": "span_precision@10", "span_recall@10": "span_recall@10"}
        for key, value in saved.items():
            if key != "num_examples":
                assert overall[names[key]] == value, key   # the same float, bit for bit


def test_pipeline_slices_per_benchmark(tmp_path):
    ev = ef.run_pipeline(ROOT / "pipelines" / "legal.yaml", input=WEAK, gold=GOLD, out=tmp_path / "out")
    per_benchmark = ev.summary.filter(grouping="benchmark", metric="legal_recall@10")
    assert sorted(per_benchmark["benchmark"].to_list()) == ["contractnli", "cuad", "maud", "privacy_qa"]
    assert per_benchmark["n"].to_list() == [12, 12, 12, 12]
    gold = json.loads(GOLD.read_text())["tests"]
    predictions = {r["query"]: r["retrieved_passages"] for r in json.loads(WEAK.read_text())}
    for benchmark, value in per_benchmark.select("benchmark", "value").iter_rows():
        tests = [t for t in gold if t["snippets"][0]["file_path"].startswith(benchmark + "/")]
        want = sum(ref.recall_at(predictions.get(t["query"], []), [s["answer"] for s in t["snippets"]], 10) for t in tests) / len(tests)
        assert value == pytest.approx(want, abs=1e-12)
    run_info = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run_info["input"]["gold"]["path"] == str(GOLD)


def test_run_command_with_gold(capsys, tmp_path):
    captured = run_ok(capsys, ["run", str(ROOT / "pipelines" / "legal.yaml"), "--input", str(WEAK), "--gold", str(GOLD),
                               "--out", str(tmp_path / "r")])
    assert "legal_ndcg@10" in captured.out
    assert (tmp_path / "r" / "summary.csv").is_file()


def test_bundled_legal_pipeline_runs_from_any_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    captured = run_ok(capsys, ["run", "legal", "--out", str(tmp_path / "r")])
    assert "predictions_better: 48 queries" in captured.out


def test_gold_on_a_one_file_format_is_an_error(capsys, tmp_path):
    code = main(["run", "evidence_contract", "--gold", str(GOLD), "--out", str(tmp_path / "r")])
    captured = capsys.readouterr()
    assert code == 2 and "has no gold file" in captured.err
    assert not (tmp_path / "r").exists()


def test_spec_gold_key_needs_the_legal_format():
    with pytest.raises(ef.ConfigError, match="input.gold"):
        ef.Pipeline.from_mapping({"version": 1, "input": {"format": "per_query", "gold": "g.json"},
                                  "metrics": [{"names": ["mrr"]}]})


GOOD_GOLD = {"tests": [{"query": "a", "snippets": [{"file_path": "cuad/x.txt", "span": [0, 3], "answer": "abc"}]}] * 4}
GOOD_PREDS = [{"query": "a", "retrieved_passages": ["abc"]}]


def bad_case(tmp_path, predictions, gold, raw_predictions=None, raw_gold=None):
    p, g = tmp_path / "preds.json", tmp_path / "gold.json"
    p.write_text(raw_predictions if raw_predictions is not None else json.dumps(predictions))
    g.write_text(raw_gold if raw_gold is not None else json.dumps(gold))
    return p, g


def with_answerless_snippet():
    gold = json.loads(json.dumps(GOOD_GOLD))
    del gold["tests"][3]["snippets"][0]["answer"]
    return gold


BAD = {
    "predictions not JSON": (None, GOOD_GOLD, "[{", None, ["preds.json", "line 1", "not valid JSON"]),
    "gold not JSON": (GOOD_PREDS, None, None, "{'tests': []}", ["gold.json", "not valid JSON"]),
    "predictions not a list": ({"query": "a"}, GOOD_GOLD, None, None, ["preds.json", "expected a JSON list"]),
    "gold without tests": (GOOD_PREDS, {"test": []}, None, None, ["gold.json", "tests", "no `tests` key"]),
    "gold with no test": (GOOD_PREDS, {"tests": []}, None, None, ["gold.json", "tests: no gold test"]),
    "passage not a string": ([{"query": "a", "retrieved_passages": ["x", 7]}], GOOD_GOLD, None, None,
                             ["preds.json", "[0].retrieved_passages[1]", "found a number"]),
    "passages not a list": ([{"query": "a", "retrieved_passages": "abc"}], GOOD_GOLD, None, None,
                            ["[0].retrieved_passages", "expected a list of passages"]),
    "query missing": ([{"retrieved_passages": []}], GOOD_GOLD, None, None, ["[0].query", "required key is missing"]),
    "snippet without answer": (GOOD_PREDS, with_answerless_snippet(), None, None,
                               ["gold.json", "tests[3].snippets[0].answer", "required key is missing"]),
    "test without snippets": (GOOD_PREDS, {"tests": [{"query": "a", "snippets": []}]}, None, None,
                              ["tests[0].snippets", "at least one snippet"]),
    "bad span": ([{"query": "a", "retrieved_passages": [{"text": "x", "file_path": "cuad/x.txt", "span": [5, 2]}]}],
                 GOOD_GOLD, None, None, ["[0].retrieved_passages[0].span", "0 <= start <= end"]),
    "span object without text": ([{"query": "a", "retrieved_passages": [{"file_path": "f", "span": [0, 1]}]}],
                                 GOOD_GOLD, None, None, ["[0].retrieved_passages[0].text"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_naming_file_and_path(capsys, tmp_path, case):
    predictions, gold, raw_p, raw_g, fragments = BAD[case]
    p, g = bad_case(tmp_path, predictions, gold, raw_p, raw_g)
    out = tmp_path / "out.json"
    code = main(["score", str(p), str(g), "--output", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    assert captured.err.startswith("evalframe: error:") and "Traceback" not in captured.err
    for fragment in fragments:
        assert fragment in captured.err, f"{fragment!r} not in {captured.err}"
    assert not out.exists()


@pytest.mark.parametrize("k", ["0", "-3"])
def test_k_below_one(capsys, tmp_path, k):
    out = tmp_path / "out.json"
    code = main(["score", str(WEAK), str(GOLD), "--k", k, "--output", str(out)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "--k must be a whole number >= 1" in captured.err
    assert not out.exists()


def test_missing_file(capsys, tmp_path):
    code = main(["score", str(tmp_path / "nope.json"), str(GOLD)])
    assert code == 2 and "nope.json" in capsys.readouterr().err


def test_unknown_and_repeated_queries_are_counted(capsys, tmp_path):
    predictions = [{"query": "a", "retrieved_passages": ["zzz"]}, {"query": "a", "retrieved_passages": ["abc"]},
                   {"query": "other", "retrieved_passages": ["abc"]}]
    p, g = bad_case(tmp_path, predictions, {"tests": GOOD_GOLD["tests"][:1]})
    captured = run_ok(capsys, ["score", str(p), str(g)])
    assert "exact_match: 1.0000" in captured.out          # the last prediction of `a` is used
    assert "1 predictions repeat an earlier query" in captured.err
    assert "1 predicted queries are not in the gold file" in captured.err


def test_deterministic_outputs(tmp_path):
    for name in ("a", "b"):
        ef.run_pipeline(ROOT / "pipelines" / "legal.yaml", input=BETTER, gold=GOLD, out=tmp_path / name)
    for file in ("summary.csv", "summary.parquet", "per_query.parquet"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes(), file


def test_sample_generator_is_seeded(tmp_path):
    script = tmp_path / "make_legal_samples.py"
    shutil.copy(SAMPLES / "make_legal_samples.py", script)
    import runpy

    runpy.run_path(str(script), run_name="__main__")
    for name in ("gold.json", "predictions_weak.json", "predictions_better.json"):
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name
    frame = pl.DataFrame({"benchmark": [t["snippets"][0]["file_path"].split("/")[0] for t in json.loads(GOLD.read_text())["tests"]]})
    assert frame["benchmark"].unique().sort().to_list() == ["contractnli", "cuad", "maud", "privacy_qa"]
