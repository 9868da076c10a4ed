"""The legal JSON reader (evalframe/io/legal.py): the tables it builds and what it counts."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evalframe.errors import ConfigError, InputError
from evalframe.io.legal import benchmark_of, read_legal


def files(tmp_path, predictions, gold):
    (tmp_path / "bm25_predictions.json").write_text(json.dumps(predictions))
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    return tmp_path / "bm25_predictions.json", tmp_path / "gold.json"


GOLD = {"tests": [
    {"query": "q a", "snippets": [{"file_path": "cuad/x.txt", "span": [0, 5], "answer": "alpha"},
                                  {"file_path": "cuad/x.txt", "span": [9, 12], "answer": "beta"}]},
    {"query": "q b", "snippets": [{"file_path": "privacy_qa/y.txt", "span": [3, 4], "answer": "c"}]},
    {"query": "q a", "snippets": [{"file_path": "maud/z.txt", "answer": "gamma"}]},   # the same query text again
] + [{"query": f"q{i}", "snippets": [{"file_path": "contractnli/n.txt", "answer": "d"}]} for i in range(8)]}


def test_tables(tmp_path):
    predictions = [{"query": "q a", "retrieved_passages": ["alpha", {"text": "beta", "file_path": "cuad/x.txt", "span": [9, 12]}]},
                   {"query": "q b", "retrieved_passages": []}]
    tables = read_legal(*files(tmp_path, predictions, GOLD))
    assert tables.relevance_rule == "text"
    queries = tables.queries
    assert queries["query_id"].to_list()[:3] == ["00", "01", "02"]               # zero-padded positions in `tests`
    assert queries["system"].unique().to_list() == ["bm25_predictions"]
    assert queries["benchmark"].to_list()[:3] == ["cuad", "privacy_qa", "maud"]
    assert queries["top_passage"].to_list()[:3] == ["alpha", None, "alpha"]      # both `q a` tests get the prediction
    assert queries["gold_answers"].to_list()[0] == ["alpha", "beta"]
    ranking = tables.ranking.filter(pl.col("query_id") == "00")
    assert ranking.select("doc_id", "rank", "text", "file_path", "span_start", "span_end").rows() == [
        ("p1", 1, "alpha", None, None, None), ("p2", 2, "beta", "cuad/x.txt", 9, 12)]
    assert tables.ranking["query_id"].unique().sort().to_list() == ["00", "02"]
    judgments = tables.judgments.filter(pl.col("query_id") == "00")
    assert judgments.select("doc_id", "relevance", "text", "span_start").rows() == [("a0", 1, "alpha", 0), ("a1", 1, "beta", 9)]
    assert any("8 of 11 gold tests have no prediction" in note for note in tables.notes)
    assert any("1 predictions retrieve no passage" in note for note in tables.notes)


def test_string_predictions_have_no_span_columns(tmp_path):
    tables = read_legal(*files(tmp_path, [{"query": "q b", "retrieved_passages": ["c"]}], GOLD))
    assert "span_start" not in tables.ranking.columns
    assert any("carry no character spans" in note for note in tables.notes)


@pytest.mark.parametrize(("path", "benchmark"), [("cuad/a/b.txt", "cuad"), ("maud\\x.txt", "maud"), ("x.txt", None), (None, None)])
def test_benchmark_of(path, benchmark):
    assert benchmark_of(path) == benchmark


def test_every_problem_is_reported_at_once(tmp_path):
    predictions = [{"query": 1, "retrieved_passages": [None]}, "text", {"query": "q", "retrieved_passages": [{"text": "t", "span": [1, 2]}]}]
    p, g = files(tmp_path, predictions, GOLD)
    with pytest.raises(InputError) as caught:
        read_legal(p, g)
    message = str(caught.value)
    for fragment in ("4 problems", "[0].query", "[0].retrieved_passages[0]", "[1]: expected an object",
                     "[2].retrieved_passages[0]: a passage's `span` needs its `file_path`"):
        assert fragment in message, message


def test_relevance_rule_is_checked():
    with pytest.raises(ConfigError):
        from evalframe.data.tables import Tables

        Tables(queries=None, judgments=pl.DataFrame(), relevance_rule="fuzzy")
