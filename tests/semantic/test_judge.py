"""The LLM judge (issue 26 parts 4, 5, 7) against a scripted chat completions server on 127.0.0.1:
answers parsed or counted as failures, retries with backoff and Retry-After, bounded concurrency,
the cache (a second run makes no call), strict replay, and the API key in no written file."""

from __future__ import annotations

import json
import types
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
import evalframe.semantic.critic as critic_module
from evalframe.cli import main
from evalframe.metrics.judged import LLMAnswerQuality
from evalframe.semantic.critic import OpenAICompatibleCritic, Request, Verdict
from evalframe.semantic.parsing import PARSE_FAILURE, parse_score, parse_scale
from fake_openai import FakeOpenAI
from semantic.rag_files import write_pipeline, write_rag

KEY = "sk-test-9f8e7d6c5b4a-SECRET"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI() as running:
        yield running


def _critic(server, **options) -> OpenAICompatibleCritic:
    return OpenAICompatibleCritic("judge-test", base_url=server.url, api_key=KEY, backoff=0.01, **options)


@pytest.mark.parametrize(("answer", "scale", "expected"), [
    ("0.8", "0-1", 0.8),
    ("  1 ", "0-1", 1.0),
    ('{"score": 0.6, "why": "mostly"}', "0-1", 0.6),
    ('```json\n{"score": 4}\n```', "1-5", 0.75),
    ('Here it is: {"score": 2} as asked', "1-5", 0.25),
    ("4", "1-5", 0.75),
    ("4/5", "1-5", 0.75),
    ("Score: 5", "1-5", 1.0),
    ("1", "1-5", 0.0),
])
def test_answers_with_a_score_are_normalised_to_the_unit_interval(answer, scale, expected):
    assert parse_score(answer, parse_scale(scale)) == (pytest.approx(expected), None)


@pytest.mark.parametrize(("answer", "scale"), [
    ("I would rather not say.", "0-1"),
    ("", "0-1"),
    ("0.8 because the evidence says so", "0-1"),
    ("7", "1-5"),            # outside the scale
    ("0.5", "1-5"),
    ('{"score": "high"}', "0-1"),
    ('{"rating": 3}', "1-5"),
    ("nan", "0-1"),
])
def test_answers_without_a_score_in_the_scale_are_parse_failures(answer, scale):
    assert parse_score(answer, parse_scale(scale)) == (None, PARSE_FAILURE)


def test_a_bad_scale_is_a_config_error():
    with pytest.raises(ef.ConfigError, match="LOW-HIGH"):
        parse_scale("5-1")


def test_scores_retries_and_backoff(server, monkeypatch):
    sleeps: list[float] = []
    monkeypatch.setattr(critic_module, "time", types.SimpleNamespace(sleep=sleeps.append, time=__import__("time").time))
    critic = _critic(server, mode="live")
    prompts = ["plain", "<json>", "<429> once", "<500> twice", "<malformed>"]
    verdicts = critic.judge_all([Request(p, {"sample": p}, "t") for p in prompts])
    assert [v.score for v in verdicts] == [pytest.approx(0.8), pytest.approx(0.6), pytest.approx(0.9), pytest.approx(0.7), None]
    assert verdicts[-1].reason == PARSE_FAILURE and verdicts[-1].answer == "I would rather not say."
    # 429: Retry-After (1 s) wins over the first backoff (0.01 s); 500 twice: 0.01 then 0.02 s.
    assert sorted(sleeps) == [pytest.approx(0.01), pytest.approx(0.02), pytest.approx(1.0)]
    assert critic.stats["retries"] == 3 and critic.stats["calls"] == 5
    assert critic.stats[f"failures.{PARSE_FAILURE}"] == 1
    body = server.bodies[-1]
    assert body["temperature"] == 0 and body["seed"] == 0 and body["model"] == "judge-test"


def test_a_call_that_keeps_failing_is_a_counted_call_failure(server, monkeypatch):
    monkeypatch.setattr(critic_module, "time", types.SimpleNamespace(sleep=lambda s: None, time=__import__("time").time))
    critic = _critic(server, mode="live", max_retries=1)  # two attempts: both get the 500
    [verdict] = critic.judge_all([Request("<500> for good", {"sample": "q"}, "t")])
    assert verdict == Verdict(None, "judge_call_failure", None)
    assert critic.stats["failures.http_500"] == 1


def test_at_most_max_concurrency_requests_in_flight(server):
    server.reset()
    critic = _critic(server, mode="live", max_concurrency=3)
    verdicts = critic.judge_all([Request(f"<slow> {i}", {"sample": i}, "t") for i in range(12)])
    assert [v.score for v in verdicts] == [0.5] * 12
    assert server.calls == 12
    assert 2 <= server.max_in_flight <= 3 and critic.max_in_flight <= 3


def test_parse_failures_are_counted_and_left_out_of_the_mean(server, tmp_path):
    tables = ef.read_rag(write_rag(tmp_path / "out.jsonl", {"q1": "plain answer", "q2": "<json> answer", "q3": "<malformed>"}))
    critic = _critic(server, cache=tmp_path / "cache.parquet")
    ev = ef.evaluate(tables, metrics=[ef.LLMFaithfulnessScore(critic), "token_f1"])
    row = ev.summary.filter(pl.col("metric") == "llm_faithfulness", pl.col("grouping") == "overall").row(0, named=True)
    assert (row["n"], row["n_skipped"]) == (2, 1)
    assert row["value"] == pytest.approx((0.8 + 0.6) / 2)
    assert ev.skipped.filter(pl.col("metric") == "llm_faithfulness")["skip_reason"].to_list() == [PARSE_FAILURE]
    judge = ev.plan.about["judge"]
    assert judge["calls"] == 3 and judge["failures"] == {PARSE_FAILURE: 1}


def test_answer_quality_gives_a_row_per_dimension_and_their_mean(server, tmp_path):
    tables = ef.read_rag(write_rag(tmp_path / "out.jsonl", {"q1": "<scale5> good", "q2": "<scale5> fine"}))
    ev = ef.evaluate(tables, metrics=[LLMAnswerQuality(_critic(server))])
    overall = ev.summary.filter(pl.col("grouping") == "overall")
    assert overall["metric"].to_list() == ["llm_answer_quality[relevance]", "llm_answer_quality[helpfulness]",
                                           "llm_answer_quality[clarity]", "llm_answer_quality"]
    assert overall["value"].to_list() == [pytest.approx(0.75)] * 4
    assert ef.resolve_metric("llm_answer_quality[clarity]") == LLMAnswerQuality(dimension="clarity")


def test_a_declared_weighting_weighs_the_dimensions():
    metric = LLMAnswerQuality(dimensions="relevance|clarity", weights="3|1")
    verdicts = [Verdict(1.0, None, "5"), Verdict(0.0, None, "1")]
    assert metric.combine(verdicts, 0) == (pytest.approx(0.75), None)
    assert metric.combine([verdicts[0], Verdict(None, PARSE_FAILURE, "?")], 0) == (None, PARSE_FAILURE)
    with pytest.raises(ef.ConfigError, match="one non-negative number per dimension"):
        LLMAnswerQuality(dimensions="relevance|clarity", weights="1")


def test_a_judge_metric_without_a_judge_is_a_config_error(tmp_path):
    tables = ef.read_rag(write_rag(tmp_path / "out.jsonl", {"q1": "x"}))
    with pytest.raises(ef.ConfigError, match="needs an LLM judge"):
        ef.evaluate(tables, metrics=["llm_faithfulness"])


def _written_files(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


def test_record_then_cached_rerun_then_strict_replay_and_no_key_anywhere(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("EVALFRAME_JUDGE_MODEL", "judge-test")
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    outputs = write_rag(tmp_path / "outputs.jsonl", {"q1": "plain", "q2": "<json>", "q3": "<malformed>"})
    pipeline = write_pipeline(tmp_path / "judged.yaml", ["llm_faithfulness", "llm_answer_quality(scale=0-1)"])
    server.reset()
    run = ["run", str(pipeline), "--input", str(outputs), "-q"]
    assert main([*run, "--out", "first", "--judge", "record"]) == 0
    asked = server.calls
    assert asked == 3 * 4  # faithfulness and three dimensions per sample
    assert set(server.authorization) == {f"Bearer {KEY}"}
    info = json.loads((tmp_path / "first" / "run.json").read_text())
    assert info["judge"]["calls"] == asked and info["judge"]["failures"] == {PARSE_FAILURE: 4}
    assert (tmp_path / "judge_cache.parquet").exists()

    assert main([*run, "--out", "second", "--judge", "record"]) == 0
    assert server.calls == asked  # every prompt came from the cache
    info = json.loads((tmp_path / "second" / "run.json").read_text())
    assert info["judge"]["calls"] == 0 and info["judge"]["hits"] == asked
    first = pl.read_csv(tmp_path / "first" / "summary.csv")
    assert first.equals(pl.read_csv(tmp_path / "second" / "summary.csv"))

    write_rag(outputs, {"q1": "plain", "q2": "<json>", "q3": "<malformed>", "q4": "a new answer"})
    capsys.readouterr()
    assert main([*run, "--out", "third", "--judge", "replay"]) == 2
    err = capsys.readouterr().err
    assert "not in the judge cache" in err and "sample q4" in err and "sample q1" not in err
    # every judged metric's misses are listed (not only the first metric's), each prompt once
    listed = [line for line in err.splitlines() if line.startswith("  - ")]
    assert len(listed) == 4 == len(set(listed))
    assert {line.rsplit("metric ", 1)[-1] for line in listed} == {
        "llm_faithfulness", *(f"llm_answer_quality[{d}]" for d in ("relevance", "helpfulness", "clarity"))}
    assert not (tmp_path / "third").exists() and server.calls == asked

    for path in _written_files(tmp_path):
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in err and KEY not in repr(_critic(server)) and KEY not in json.dumps(_critic(server).describe())
