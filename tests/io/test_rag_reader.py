"""The RAG reader (issue 23): forms, seed 000's nesting, the two-file form, and every bad input
at once with file, line, key path and value (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main
from evalframe.errors import InputError

RECORDS = [
    {"sample_id": "q1", "system": "a", "query": "Who?", "reference_answer": "Ada", "response": "Ada",
     "relevant_docs": [{"doc_id": "d1", "text": "Ada wrote", "relevance": 2}],
     "retrieved": [{"doc_id": "d2", "text": "x", "score": 0.9, "rank": 1, "embedding": [1.0, 0.0]},
                   {"doc_id": "d1", "text": "Ada wrote", "score": 0.5, "rank": 2, "embedding": [0.0, 1.0]}],
     "timings": {"end_to_end": 1.5, "retrieval": 0.2}, "labels": {"scenario": "original", "topic": "t"}},
    {"sample_id": "q2", "system": "a", "query": "Who? (typo)", "reference_answer": "Ada", "response": "Bob",
     "relevant_docs": [{"doc_id": "d1", "text": "Ada wrote", "relevance": 2}],
     "retrieved": [{"doc_id": "d1", "text": "Ada wrote", "score": 0.7, "embedding": [0.0, 1.0]}],
     "timings": {"end_to_end": 2.0, "retrieval": 0.3}, "labels": {"scenario": "typo", "variant_of": "q1", "topic": "t"}},
]


def seed_nesting(record: dict) -> dict:
    """The same record in seed 000's own nesting."""
    return {
        "query_id": record["sample_id"], "system": record["system"], "query": record["query"],
        "reference_answer": {"text": record["reference_answer"]}, "response": {"text": record["response"]},
        "relevant_docs": [{"doc_id": d["doc_id"], "text": d["text"], "metadata": {"relevance": d["relevance"]}}
                          for d in record["relevant_docs"]],
        "retrieved": [{"doc": {"doc_id": d["doc_id"], "text": d["text"], "metadata": {"embedding": d["embedding"]}},
                       "score": d["score"], **({"rank": d["rank"]} if "rank" in d else {})} for d in record["retrieved"]],
        "timings": record["timings"], "labels": record["labels"],
    }


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def comparable(tables: ef.Tables) -> tuple:
    return (tables.queries.sort("system", "query_id"), tables.ranking.sort("system", "query_id", "rank"),
            tables.judgments.sort("query_id", "doc_id"))


def test_every_form_gives_the_same_tables(tmp_path):
    flat = ef.read_rag(write_jsonl(tmp_path / "flat.jsonl", RECORDS))
    nested = ef.read_rag(write_jsonl(tmp_path / "seed.jsonl", [seed_nesting(r) for r in RECORDS]))
    (tmp_path / "array.json").write_text(json.dumps(RECORDS))
    array = ef.read_rag(tmp_path / "array.json")
    pl.DataFrame(RECORDS).write_parquet(tmp_path / "table.parquet")
    parquet = ef.read_rag(tmp_path / "table.parquet")
    samples = write_jsonl(tmp_path / "samples.jsonl", [
        {k: r[k] for k in ("sample_id", "query", "reference_answer", "relevant_docs", "labels")} for r in RECORDS])
    outputs = write_jsonl(tmp_path / "outputs.jsonl", [
        {k: r[k] for k in ("sample_id", "system", "response", "retrieved", "timings")} for r in RECORDS])
    two = ef.read_rag(samples, outputs)
    expected = comparable(flat)
    for other in (nested, array, parquet, two):
        for left, right in zip(expected, comparable(other), strict=True):
            assert left.equals(right.select(left.columns))


def test_the_tables_hold_what_the_metrics_read(tmp_path):
    tables = ef.read_rag(write_jsonl(tmp_path / "f.jsonl", RECORDS))
    q = tables.queries.sort("query_id")
    assert q.get_column("latency_end_to_end").to_list() == [1.5, 2.0]
    assert q.get_column("latency_retrieval").to_list() == [0.2, 0.3]
    assert q.get_column("cluster_id").to_list() == ["q1", "q1"]
    assert q.get_column("parent_response").to_list() == [None, "Ada"]
    assert q.get_column("retrieved_texts").to_list() == [["x", "Ada wrote"], ["Ada wrote"]]
    assert tables.ranking.filter(pl.col("query_id") == "q2").get_column("rank").to_list() == [1]  # list order
    assert tables.judgments.sort("query_id").rows() == [("q1", "d1", 2, "Ada wrote"), ("q2", "d1", 2, "Ada wrote")]


BAD = [
    ("not json", "line 2", None, "is not JSON"),
    ('{"system": "a", "response": "x"}', "line 2", "sample_id", "is missing or null"),
    ('{"sample_id": "q3"}', "line 2", "response", "is missing or null"),
    ('{"sample_id": "q1", "system": "a", "response": "x"}', "line 2", "sample_id", "repeats a (sample_id, system) pair"),
    ('{"sample_id": "q3", "response": "x", "retrieved": [{"doc_id": "d", "rank": 1}, {"doc_id": "e", "rank": 3}]}',
     "line 2", "retrieved[*].rank", "ranks must be 1..n without gaps or repeats"),
    ('{"sample_id": "q3", "response": "x", "retrieved": [{"doc_id": "d"}, {"doc_id": "d"}]}',
     "line 2", "retrieved[1].doc_id", "a document retrieved twice"),
    ('{"sample_id": "q3", "response": "x", "timings": {"end_to_end": -1}}', "line 2", "timings.end_to_end", "non-negative number"),
    ('{"sample_id": "q3", "response": "x", "timings": {"end_to_end": "slow"}}', "line 2", "timings.end_to_end", "non-negative number"),
    ('{"sample_id": "q3", "response": "x", "labels": {"topic": ["a"]}}', "line 2", "labels.topic", "is not a scalar"),
    ('{"sample_id": "q3", "response": "x", "retrieved": [{"doc_id": "d", "embedding": [1, 2, 3]}]}',
     "line 2", "retrieved[0].embedding", "has a length different"),
    ('{"sample_id": "q3", "response": "x", "labels": {"variant_of": "nope"}}', "line 2", "labels.variant_of", "names no sample"),
    ('{"sample_id": "q3", "system": "b", "response": "x", "labels": {"variant_of": "q1"}}', "line 2", "labels.variant_of",
     "parent has no output from its system"),
]

GOOD_LINE = ('{"sample_id": "q1", "system": "a", "response": "x", '
             '"retrieved": [{"doc_id": "d", "embedding": [1, 2]}, {"doc_id": "e", "embedding": [1, 2]}]}')


@pytest.mark.parametrize(("line", "where", "path", "message"), BAD)
def test_each_bad_input_is_named(tmp_path, line, where, path, message):
    file = tmp_path / "bad.jsonl"
    file.write_text(GOOD_LINE + "\n" + line + "\n")
    with pytest.raises(InputError) as caught:
        ef.read_rag(file)
    rendered = str(caught.value)
    assert str(file) in rendered and message in rendered and where in rendered
    if path:
        assert f"`{path}`" in rendered


def test_every_problem_is_reported_at_once(tmp_path):
    file = tmp_path / "bad.jsonl"
    # (A label that is not a scalar stops the label checks, so that line is left out here.)
    file.write_text("\n".join([GOOD_LINE, *(line for line, _, path, _ in BAD[1:] if path != "labels.topic")]) + "\n")
    with pytest.raises(InputError) as caught:
        ef.read_rag(file)
    messages = {problem.message for problem in caught.value.problems}
    assert len(caught.value.problems) >= 9
    assert any("non-negative" in m for m in messages) and any("names no sample" in m for m in messages)


def test_unknown_outputs_are_an_error_or_dropped_and_counted(tmp_path):
    samples = write_jsonl(tmp_path / "s.jsonl", [{"sample_id": "q1", "reference_answer": "a"}])
    outputs = write_jsonl(tmp_path / "o.jsonl", [{"sample_id": "q1", "response": "a"}, {"sample_id": "q9", "response": "b"}])
    with pytest.raises(InputError, match="names a sample the samples file does not list"):
        ef.read_rag(samples, outputs)
    tables = ef.read_rag(samples, outputs, unknown_outputs="drop")
    assert tables.queries.height == 1 and tables.notes == ("1 outputs of samples the samples file does not list were dropped",)


@pytest.mark.parametrize("line", [line for line, *_ in BAD])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, line):
    file = tmp_path / "bad.jsonl"
    file.write_text(GOOD_LINE + "\n" + line + "\n")
    out = tmp_path / "out"
    for command in (["validate", "--schema", "rag", str(file)], ["run", "rag", "--input", str(file), "--out", str(out)]):
        assert main(command) == 2
    assert not out.exists()
