"""The legal metrics (score.py, seed 003) on hand-built cases and against the plain-Python reference.

Every case goes through the real door: JSON files → :func:`evalframe.io.legal.read_legal` →
``evaluate`` (the engine), and is compared with values worked out by hand and with
``tests/legal_reference.py``.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.io.legal import read_legal
from tests import legal_reference as ref

METRICS = ["legal_exact_match", "legal_span_f1", "legal_recall@1", "legal_recall@3", "legal_recall@10",
           "legal_ndcg@3", "legal_ndcg@10", "legal_ndcg@10(dedupe=true)"]


def write_files(folder, predictions, gold):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "preds.json").write_text(json.dumps(predictions))
    (folder / "gold.json").write_text(json.dumps(gold))
    return folder / "preds.json", folder / "gold.json"


def per_query(folder, tests, metrics=METRICS):
    """``tests``: (query, passages, gold answers); the engine's per-query values by metric."""
    predictions = [{"query": q, "retrieved_passages": passages} for q, passages, _ in tests if passages is not None]
    gold = {"tests": [{"query": q, "snippets": [{"file_path": "cuad/x.txt", "answer": a} for a in answers]}
                      for q, _, answers in tests]}
    tables = read_legal(*write_files(folder, predictions, gold))
    ev = ef.evaluate(tables, metrics=metrics, missing="zero")
    values = {}
    for metric, value in ev.per_query.sort("query_id").select("metric", "value").iter_rows():
        values.setdefault(metric, []).append(value)
    return values


def one(tmp_path, passages, answers, metric):
    return per_query(tmp_path, [("q", passages, answers)], [metric])[metric][0]


@pytest.mark.parametrize(("passage", "gold", "expected"), [
    ("  THE Party shall pay \n", "the party SHALL pay", 1.0),        # case and whitespace
    ("the party shall pay", "the party shall pay.", 0.0),           # punctuation differs
    ("", "", 1.0),                                                   # equal after normalising
    ("\x1cThe Fee\xa0", "the fee", 1.0),                              # Python's whitespace set, not Unicode's
    ("\ua7cb", "\u0264", float("\ua7cb".lower() == "\u0264")),       # Python's lower() (Polars follows a newer Unicode)
])
def test_exact_match(tmp_path, passage, gold, expected):
    assert one(tmp_path, [passage, gold], [gold], "legal_exact_match") == expected  # only the top passage counts


def test_exact_match_is_top_passage_only_and_zero_without_passages(tmp_path):
    assert one(tmp_path, ["other", "The answer"], ["the answer"], "legal_exact_match") == 0.0
    assert one(tmp_path / "b", [], ["the answer"], "legal_exact_match") == 0.0
    assert one(tmp_path / "c", ["x", "y"], ["nope", " X "], "legal_exact_match") == 1.0  # any gold answer


@pytest.mark.parametrize(("passage", "gold", "matched"), [
    ("  The PARTY shall pay  ", "the party shall pay", True),         # case and whitespace variants
    ("Then the party shall pay all fees.", "the party shall pay", True),   # passage is a superset
    ("party shall", "The party shall pay all fees.", True),           # passage is a subset
    ("party pays", "the party shall pay", False),                     # overlap is not containment
    ("", "the party", False),                                          # empty passage matches nothing
    ("   ", "the party", False),                                       # blank is empty after strip
    ("anything", "", True),                                            # an empty gold is in every passage
])
def test_matching_rule_through_recall(tmp_path, passage, gold, matched):
    assert one(tmp_path, [passage], [gold], "legal_recall@10") == float(matched)
    assert ref.matches(passage, gold) is matched


def test_recall_counts_gold_answers_not_passages(tmp_path):
    golds = ["alpha clause", "beta clause", "gamma clause"]
    passages = ["Alpha clause.", "alpha clause", "nothing", "beta clause here", "gamma"]
    values = per_query(tmp_path, [("q", passages, golds)])
    assert values["legal_recall@1"] == [pytest.approx(1 / 3)]
    assert values["legal_recall@3"] == [pytest.approx(1 / 3)]       # two passages, one answer
    assert values["legal_recall@10"] == [pytest.approx(1.0)]         # "gamma" is inside "gamma clause"


def test_nothing_retrieved_and_no_prediction_score_zero(tmp_path):
    values = per_query(tmp_path, [("q1", [], ["a b"]), ("q2", None, ["c d"]), ("q3", ["a b"], ["a b"])])
    for metric in METRICS:
        assert values[metric][:2] == [0.0, 0.0], metric
        assert values[metric][2] == pytest.approx(1.0), metric


def test_ndcg_above_one_when_several_passages_match_one_answer_and_dedupe(tmp_path):
    passages = ["the fee", "The fee is due", "fee", "unrelated"]
    values = per_query(tmp_path, [("q", passages, ["The fee is due monthly"])])
    # All three first passages match the one answer: DCG = 1 + 1/log2 3 + 1/log2 4, IDCG = 1.
    assert values["legal_ndcg@10"] == [pytest.approx(1 + 1 / math.log2(3) + 0.5)]
    assert values["legal_ndcg@3"] == [pytest.approx(1 + 1 / math.log2(3) + 0.5)]
    assert values["legal_ndcg@10(dedupe=true)"] == [1.0]
    assert values["legal_ndcg@10"][0] == pytest.approx(ref.ndcg_at(passages, ["The fee is due monthly"], 10))


def test_ndcg_ideal_uses_min_of_answers_and_k(tmp_path):
    golds = [f"answer {word}" for word in ("one", "two", "three", "four")]
    passages = ["nothing", "answer two", "answer one"]
    values = per_query(tmp_path, [("q", passages, golds)])
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    assert values["legal_ndcg@3"] == [pytest.approx(dcg / (1 + 1 / math.log2(3) + 0.5))]
    assert values["legal_ndcg@10"] == [pytest.approx(dcg / sum(1 / math.log2(i + 1) for i in range(1, 5)))]


def test_dedupe_credits_the_first_passage_of_each_answer(tmp_path):
    # passage 1 matches A and B; passage 2 matches A only (no new answer); passage 3 matches C.
    golds = ["alpha", "alpha beta", "gamma delta"]
    passages = ["alpha beta", "alpha", "gamma delta"]
    values = per_query(tmp_path, [("q", passages, golds)])
    idcg = 1 + 1 / math.log2(3) + 0.5
    assert values["legal_ndcg@10(dedupe=true)"] == [pytest.approx((1 + 0.5) / idcg)]
    assert values["legal_ndcg@10"] == [pytest.approx(1.0)]


@pytest.mark.parametrize(("passage", "gold", "expected"), [
    ("The Party shall pay", "the party shall pay", 1.0),
    # hyphenated and numbered tokens are not alphanumeric: dropped; "30" and "days" stay
    ("non-disclosure within 30 days", "disclosure within 30 days", 2 * (3 / 3) * (3 / 4) / (3 / 3 + 3 / 4)),
    ("Section 2.1 applies", "section applies", 1.0),
    ("$5,000 fee", "fee", 1.0),
    # two sentences: the period of the first is split off, so "pays" is a token
    ("The party pays. The term ends.", "party pays term", 2 * (3 / 5) * 1.0 / (3 / 5 + 1.0)),
    ("pay pay pay", "pay", 1.0),                              # sets: repeats count once
    ("...", "the party", 0.0),                                  # no token at all
    ("apple", "banana", 0.0),                                   # nothing shared
])
def test_span_f1(tmp_path, passage, gold, expected):
    assert one(tmp_path, [passage], [gold], "legal_span_f1") == pytest.approx(expected)
    assert ref.span_f1([passage], [gold]) == pytest.approx(expected)


def test_span_f1_is_the_best_over_gold_answers_and_zero_without_passages(tmp_path):
    assert one(tmp_path, ["fee due monthly"], ["rent", "fee due", "fee"], "legal_span_f1") == pytest.approx(0.8)
    assert one(tmp_path / "b", [], ["fee"], "legal_span_f1") == 0.0


def test_tokens_need_no_nltk_data():
    from evalframe.data.text import word_tokens

    assert word_tokens("The Receiving Party shall not disclose. Non-compete: 2 years.") == [
        "the", "receiving", "party", "shall", "not", "disclose", "2", "years"]


WORDS = st.sampled_from(["the", "Party", "fee", "non-disclosure", "2.1", "30", "Term.", "  ", "shall", "PAY", ""])
TEXTS = st.lists(WORDS, max_size=5).map(" ".join)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tests=st.lists(st.tuples(st.lists(TEXTS, max_size=6), st.lists(TEXTS, min_size=1, max_size=3)), min_size=1, max_size=5),
       k=st.integers(1, 7), dedupe=st.booleans())
def test_engine_agrees_with_the_reference(tmp_path_factory, tests, k, dedupe):
    folder = tmp_path_factory.mktemp("legal")
    rows = [(f"query {i}", passages, golds) for i, (passages, golds) in enumerate(tests)]
    ndcg = f"legal_ndcg@{k}" + ("(dedupe=true)" if dedupe else "")
    values = per_query(folder, rows, ["legal_exact_match", "legal_span_f1", f"legal_recall@{k}", ndcg])
    for i, (_, passages, golds) in enumerate(rows):
        assert values["legal_exact_match"][i] == ref.exact_match(passages, golds)
        assert values["legal_span_f1"][i] == pytest.approx(ref.span_f1(passages, golds), abs=1e-12)
        assert values[f"legal_recall@{k}"][i] == pytest.approx(ref.recall_at(passages, golds, k), abs=1e-12)
        assert values[ndcg][i] == pytest.approx(ref.ndcg_at(passages, golds, k, dedupe=dedupe), abs=1e-12)


def test_names_are_registered_and_distinct_from_the_standard_metrics():
    from evalframe.metrics.registry import resolve

    assert resolve("legal_ndcg@10(dedupe=true)").name == "legal_ndcg@10(dedupe=true)"
    assert resolve("legal_ndcg@10").name == "legal_ndcg@10"
    assert resolve("legal_recall@5").name == "legal_recall@5"
    assert resolve("exact_match").name == "exact_match"  # the per-post multi-label metric stays itself
    with pytest.raises(ef.ConfigError):
        resolve("legal_ndcg@10(dedupe=yes)")
