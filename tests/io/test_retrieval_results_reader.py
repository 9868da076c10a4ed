"""``read_retrieval_results``: gold-set results (JSONL, CSV, Parquet) → queries / ranking / judgments,
its errors (file, line, column, value), and the retrieval_gate pipeline over a tag list column."""

from __future__ import annotations

import json

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main as cli_main
from evalframe.io.retrieval_results import read_retrieval_results

ROWS = [
    {"query_id": "c1", "retrieved_ids": ["d1", "d2", "d3"], "gold_ids": ["d2"], "tags": ["lookup", "numeric"], "tier": "A"},
    {"query_id": "c2", "retrieved_ids": ["d4", "d5"], "gold_ids": ["d4", "d9"], "tags": "lookup", "tier": "A"},
    {"query_id": "c3", "retrieved_ids": ["d7"], "gold_ids": ["d8"], "tags": [], "tier": "B"},
]


def _jsonl(tmp_path, rows, name="results.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return path


def test_jsonl_becomes_the_three_tables(tmp_path):
    tables = read_retrieval_results(_jsonl(tmp_path, ROWS))
    assert tables.queries.select("system", "query_id", "tier", "tags", "n_gold", "n_ranked").rows() == [
        ("default", "c1", "A", ["lookup", "numeric"], 1, 3),
        ("default", "c2", "A", ["lookup"], 2, 2),   # one string is a list of one tag
        ("default", "c3", "B", [], 1, 1),
    ]
    assert tables.ranking.filter(pl.col("query_id") == "c1").select("doc_id", "rank").rows() == [("d1", 1), ("d2", 2), ("d3", 3)]
    assert sorted(tables.judgments.select("query_id", "doc_id", "relevance").rows()) == [
        ("c1", "d2", 1), ("c2", "d4", 1), ("c2", "d9", 1), ("c3", "d8", 1)]


def test_csv_parquet_and_jsonl_agree(tmp_path):
    jsonl = read_retrieval_results(_jsonl(tmp_path, ROWS))
    csv = tmp_path / "results.csv"
    csv.write_text("query_id,retrieved_ids,gold_ids,tags,tier\n"
                   'c1,d1;d2;d3,d2,"[""lookup"",""numeric""]",A\n'
                   'c2,"[""d4"",""d5""]",d4;d9,lookup,A\n'
                   "c3,d7,d8,,B\n")
    parquet = tmp_path / "results.parquet"
    pl.DataFrame(ROWS[:1] + [{**ROWS[1], "tags": ["lookup"]}] + ROWS[2:]).write_parquet(parquet)
    for other in (read_retrieval_results(csv), read_retrieval_results(parquet)):
        assert other.queries.equals(jsonl.queries)
        assert other.judgments.sort("query_id", "doc_id").equals(jsonl.judgments.sort("query_id", "doc_id"))
        assert other.ranking.equals(jsonl.ranking)


def test_integer_ids_and_a_column_mapping(tmp_path):
    rows = [{"case": 7, "chunks": [3, 1], "gold": [1], "system": "bm25"}]
    tables = read_retrieval_results(_jsonl(tmp_path, rows),
                                    columns={"query_id": "case", "retrieved_ids": "chunks", "gold_ids": "gold"})
    assert tables.queries.select("system", "query_id", "tags", "tier").rows() == [("bm25", "7", [], None)]
    assert tables.ranking.select("doc_id", "rank").rows() == [("3", 1), ("1", 2)]


@pytest.mark.parametrize(("lines", "expected"), [
    (['{"query_id": "c1", "retrieved_ids": ["a"], "gold_ids": ["a"]}', "", '{"query_id": "c2", "retrieved_ids": "[a", "gold_ids": ["a"]}'],
     "line 3, column `retrieved_ids`: is not a list"),
    (['{"query_id": "c1", "retrieved_ids": ["a"], "gold_ids": ["a"]}', '{"query_id": "c1", "retrieved_ids": ["b"], "gold_ids": ["a"]}'],
     "the same query_id is listed twice for one system"),
    (['{"query_id": "c1", "retrieved_ids": ["a", "b", "a"], "gold_ids": ["a"]}'],
     "line 1, column `retrieved_ids`: lists the same id more than once"),
    (['{"query_id": "c1", "gold_ids": ["a"]}'], "column `retrieved_ids`: required column is missing"),
    (['{"query_id": "c1", "retrieved_ids": ["a"], "gold_ids": ["a"]}', "[1, 2]"], "line 2: is not a JSON object"),
    (['{"query_id": "c1", "retrieved_ids": ["a"], "gold_ids": ["a"], "system": "x"}',
      '{"query_id": "c1", "retrieved_ids": ["a"], "gold_ids": ["b"], "system": "y"}'],
     "line 2, column `gold_ids`: query ('c1') has a different gold list than at line 1"),
])
def test_bad_files_name_file_line_column_and_value(tmp_path, lines, expected):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ef.InputError) as caught:
        read_retrieval_results(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_bad_file_through_the_cli_exits_2_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"query_id": "c1", "retrieved_ids": "[oops", "gold_ids": ["a"]}\n')
    out = tmp_path / "out"
    status = cli_main(["run", "pipelines/retrieval_gate.yaml", "--input", str(path), "--out", str(out)])
    assert status == 2
    assert "line 1, column `retrieved_ids`" in capsys.readouterr().err
    assert not out.exists()


def test_retrieval_gate_pipeline_counts_a_case_in_each_of_its_tags(tmp_path):
    ev = ef.run_pipeline("pipelines/retrieval_gate.yaml", input=_jsonl(tmp_path, ROWS))
    recall = ev.summary.filter(pl.col("metric") == "recall@5")
    overall = recall.filter(pl.col("grouping") == "overall")
    assert overall.select("n", "value").rows() == [(3, pytest.approx((1 + 0.5 + 0) / 3))]
    by_tag = {row["tags"]: (row["n"], row["value"]) for row in recall.filter(pl.col("grouping") == "tag").to_dicts()}
    # c1 counts in lookup and numeric; c2 in lookup; c3 (no tags) in the null-tag slice; n sums to 4 > 3 cases.
    assert by_tag == {"lookup": (2, pytest.approx(0.75)), "numeric": (1, 1.0), None: (1, 0.0)}
    by_tier = {row["tier"]: row["n"] for row in recall.filter(pl.col("grouping") == "tier").to_dicts()}
    assert by_tier == {"A": 2, "B": 1}
    assert set(ev.summary.get_column("metric")) == {"recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"}
