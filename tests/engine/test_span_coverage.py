"""Character-span precision and recall (LegalBench-RAG): interval arithmetic of the span stage.

Hand cases (adjacent, nested, overlapping, other file, repeated, nothing retrieved, string
predictions) and random spans against a reference made of sets of character positions.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.engine.matching import gold_span_chars
from evalframe.io.legal import read_legal
from tests import legal_reference as ref


def spans_of(folder, cases, k):
    """``cases``: (retrieved [(file, start, end)] or None, gold [(file, start, end)]); per-query
    (precision@k, recall@k) from the engine."""
    folder.mkdir(parents=True, exist_ok=True)
    predictions = [{"query": f"q{i}", "retrieved_passages": [{"text": f"passage {j}", "file_path": f, "span": [s, e]}
                                                             for j, (f, s, e) in enumerate(retrieved)]}
                   for i, (retrieved, _) in enumerate(cases) if retrieved is not None]
    gold = {"tests": [{"query": f"q{i}", "snippets": [{"file_path": f, "span": [s, e], "answer": "gold"} for f, s, e in golds]}
                      for i, (_, golds) in enumerate(cases)]}
    (folder / "p.json").write_text(json.dumps(predictions))
    (folder / "g.json").write_text(json.dumps(gold))
    ev = ef.evaluate(read_legal(folder / "p.json", folder / "g.json"), metrics=[f"span_precision@{k}", f"span_recall@{k}"],
                     missing="zero")
    wide = ev.per_query.pivot(on="metric", index="query_id", values="value").sort("query_id")
    return list(zip(wide[f"span_precision@{k}"].to_list(), wide[f"span_recall@{k}"].to_list(), strict=True))


GOLD = [("cuad/a.txt", 10, 20)]


@pytest.mark.parametrize(("retrieved", "precision", "recall"), [
    ([("cuad/a.txt", 10, 20)], 1.0, 1.0),                                     # exact
    ([("cuad/a.txt", 0, 10), ("cuad/a.txt", 20, 30)], 0.0, 0.0),             # adjacent outside, no overlap
    ([("cuad/a.txt", 10, 15), ("cuad/a.txt", 15, 20)], 1.0, 1.0),            # adjacent inside: 5 + 5
    ([("cuad/a.txt", 0, 30), ("cuad/a.txt", 12, 18)], 10 / 30, 1.0),         # nested: the inner adds nothing
    ([("cuad/a.txt", 5, 15), ("cuad/a.txt", 12, 25)], 10 / 20, 1.0),         # overlapping: union [5, 25)
    ([("cuad/a.txt", 10, 20), ("cuad/a.txt", 10, 20)], 1.0, 1.0),            # the same span twice
    ([("maud/b.txt", 10, 20)], 0.0, 0.0),                                     # other file
    ([("cuad/a.txt", 15, 15)], None, 0.0),                                    # an empty span covers nothing
])
def test_span_arithmetic(tmp_path, retrieved, precision, recall):
    assert spans_of(tmp_path, [(retrieved, GOLD)], 10) == [(pytest.approx(precision) if precision is not None else None,
                                                             pytest.approx(recall))]


def test_cutoff_and_overlapping_gold_spans(tmp_path):
    gold = [("cuad/a.txt", 0, 10), ("cuad/a.txt", 5, 15), ("cuad/b.txt", 0, 5)]   # union: 15 + 5 = 20 characters
    retrieved = [("cuad/a.txt", 0, 4), ("cuad/b.txt", 0, 10), ("cuad/a.txt", 0, 15)]
    assert spans_of(tmp_path / "k1", [(retrieved, gold)], 1) == [(1.0, pytest.approx(4 / 20))]
    assert spans_of(tmp_path / "k2", [(retrieved, gold)], 2) == [(pytest.approx(9 / 14), pytest.approx(9 / 20))]
    assert spans_of(tmp_path / "k3", [(retrieved, gold)], 3) == [(pytest.approx(20 / 25), 1.0)]


def test_nothing_retrieved_and_no_prediction(tmp_path):
    # no passage: precision undefined (skipped), recall 0
    assert spans_of(tmp_path, [([], GOLD), (None, GOLD), ([("cuad/a.txt", 10, 20)], GOLD)], 5) == [
        (None, 0.0), (None, 0.0), (1.0, 1.0)]


def test_string_predictions_skip_span_metrics_with_a_note(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps([{"query": "q", "retrieved_passages": ["text"]}]))
    (tmp_path / "g.json").write_text(json.dumps({"tests": [{"query": "q", "snippets": [
        {"file_path": "cuad/a.txt", "span": [0, 4], "answer": "text"}]}]}))
    tables = read_legal(tmp_path / "p.json", tmp_path / "g.json")
    ev = ef.evaluate(tables, metrics=["span_precision@5", "span_recall@5", "legal_recall@5"])
    rows = ev.per_query.filter(pl.col("metric").str.starts_with("span"))
    assert rows["value"].to_list() == [None, None]
    assert set(rows["skip_reason"]) == {"retrieved items carry no span"}
    assert any("carry no character spans" in note for note in ev.notes)


def test_gold_span_chars_is_a_sort_and_running_maximum():
    judgments = pl.DataFrame({
        "query_id": ["q", "q", "q", "q", "r"], "doc_id": list("abcde"), "relevance": [1, 1, 1, 0, 1],
        "file_path": ["f", "f", "g", "f", "f"], "span_start": [5, 0, 0, 0, 3], "span_end": [15, 10, 4, 100, 3],
    })
    added = gold_span_chars(judgments)["gold_new_chars"].to_list()
    assert added == [5, 10, 4, 0, 0]      # [0, 10) then [5, 15) adds 5; file g apart; not relevant; empty span


SPAN = st.tuples(st.sampled_from(["cuad/a.txt", "cuad/b.txt"]), st.integers(0, 30), st.integers(0, 12)).map(
    lambda t: (t[0], t[1], t[1] + t[2]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(st.tuples(st.lists(SPAN, max_size=6), st.lists(SPAN, min_size=1, max_size=3)), min_size=1, max_size=4),
       k=st.integers(1, 6))
def test_random_spans_agree_with_character_sets(tmp_path_factory, cases, k):
    got = spans_of(tmp_path_factory.mktemp("spans"), cases, k)
    if not any(retrieved for retrieved, _ in cases):  # a file without any span: the metrics do not apply
        assert got == [(None, None)] * len(cases)
        return
    for (retrieved, golds), (precision, recall) in zip(cases, got, strict=True):
        want_precision, want_recall = ref.span_scores(retrieved, golds, k)
        assert precision == (pytest.approx(want_precision, abs=1e-12) if want_precision is not None else None)
        if want_recall is None:
            assert recall is None
        else:
            assert recall == pytest.approx(want_recall, abs=1e-12)


def test_several_cutoffs_in_one_evaluation(tmp_path):
    gold = [("cuad/a.txt", 0, 10), ("cuad/a.txt", 5, 15), ("cuad/b.txt", 0, 5)]
    retrieved = [("cuad/a.txt", 0, 4), ("cuad/b.txt", 0, 10), ("cuad/a.txt", 0, 15)]
    spans_of(tmp_path, [(retrieved, gold)], 1)  # writes the files
    ev = ef.evaluate(read_legal(tmp_path / "p.json", tmp_path / "g.json"),
                     metrics=[f"span_{kind}@{k}" for k in (1, 2, 3) for kind in ("precision", "recall")])
    values = dict(ev.per_query.select("metric", "value").iter_rows())
    assert values == {"span_precision@1": 1.0, "span_recall@1": pytest.approx(4 / 20),
                      "span_precision@2": pytest.approx(9 / 14), "span_recall@2": pytest.approx(9 / 20),
                      "span_precision@3": pytest.approx(20 / 25), "span_recall@3": 1.0}
