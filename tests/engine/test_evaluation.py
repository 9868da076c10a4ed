"""One engine: ``evaluate()`` and pipelines run the same stages and return one result type, for
metrics of every level, with the same subsets, units, weights and policies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalframe as ef

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"
METRICS = ["auroc", "ece", "ndcg@10", "mrr", "macro_f1", "micro_f1"]


@pytest.fixture(scope="module")
def tables():
    """The bundled sample, with an integer weight per post (1, 2 or 3)."""
    tables = ef.read_per_query(SAMPLE)
    weight = (pl.col("post_id").str.slice(1).cast(pl.Int64) % 3 + 1).cast(pl.Float64)
    return replace(tables, queries=tables.queries.with_columns(w=weight))


def test_the_issues_example(tables, tmp_path):
    ev = ef.evaluate(tables, metrics=METRICS, subsets={"has_evidence": "label = 1"},
                     slices={"overall": [], "fold": ["fold"]}, weight="w")
    assert isinstance(ev, ef.Evaluation)
    overall = ev.summary.filter(grouping="overall", system="full_pipeline")
    # every metric on all queries and on the subset, told apart by `subset`
    assert overall.group_by("metric").len().sort("metric").get_column("len").to_list() == [2] * len(METRICS)
    assert set(overall.get_column("subset")) == {"all queries", "all posts", "has_evidence", "queries with at least one relevant item"}
    posts = ev.per_unit("post")
    assert {"system", "post_id", "fold", "metric", "subset", "value"} <= set(posts.columns)
    assert "criterion_id" not in posts.columns and "query_id" not in posts.columns
    assert ev.per_query.filter(metric="mrr", subset="all_queries").height == 6 * 5000  # 6 configs × 5,000 queries
    written = ev.write(tmp_path / "out")
    assert sorted(p.name for p in written.iterdir()) == sorted(
        [".evalframe-manifest.json", "per_query.parquet", "per_unit.parquet", "summary.parquet", "summary.csv", "summary.md",
         "run.json"])
    assert pl.read_parquet(written / "per_unit.parquet").get_column("unit").unique().to_list() == ["post"]


def test_evaluate_and_a_pipeline_give_the_same_result(tables):
    spec = {
        "version": 1, "name": "same",
        "subsets": {"has_evidence": {"description": "has_evidence", "where": "label = 1"}},
        "metrics": [{"names": METRICS}, {"subset": "has_evidence", "names": METRICS}],
        "slices": {"overall": [], "fold": ["fold"]}, "weight": "w", "across_folds": "fold",
    }
    from_pipeline = ef.Pipeline.from_mapping(spec).plan
    from_python = ef.evaluate(tables, metrics=METRICS, subsets={"has_evidence": "label = 1"},
                              slices={"overall": [], "fold": ["fold"]}, weight="w", across_folds="fold")
    from evalframe.engine.evaluation import run

    via_pipeline = run(tables, from_pipeline)
    assert_frame_equal(via_pipeline.summary, from_python.summary)
    assert_frame_equal(via_pipeline.per_unit_values, from_python.per_unit_values)


def test_any_level_through_the_run_and_qrels_door(make_run, make_qrels):
    run = make_run({"q1": ["a", "b"], "q2": ["c"]}, system="s")
    qrels = make_qrels({"q1": {"b": 1}, "q2": {"c": 1}})
    queries = pl.DataFrame({"system": ["s", "s"], "query_id": ["q1", "q2"], "label": [1, 0], "prob": [0.8, 0.3]})
    ev = ef.evaluate(run, qrels, ["mrr", "auroc", "brier", "tp"], queries=queries)
    values = dict(ev.summary.select("metric", "value").iter_rows())
    assert values == {"mrr": 0.75, "auroc": 1.0, "brier": pytest.approx((0.04 + 0.09) / 2), "tp": 1.0}


def test_the_queries_contract_holds_wherever_a_queries_table_comes_in(make_run, make_qrels):
    run = make_run({"q1": ["a"]}, system="s")
    qrels = make_qrels({"q1": {"a": 1}})
    twice = pl.DataFrame({"system": ["s", "s"], "query_id": ["q1", "q1"]})
    with pytest.raises(ef.InputError, match="the same query is listed twice for one system"):
        ef.evaluate(run, qrels, ["mrr"], queries=twice)


def test_a_unit_takes_its_keys_from_the_declaration(tables):
    renamed = replace(tables, queries=tables.queries.rename({"post_id": "thread"}))
    ev = ef.evaluate(renamed, metrics=["micro_f1", "exact_match"], units={"post": ["thread"]})
    rows = ev.summary.filter(system="full_pipeline")
    assert rows.get_column("n").to_list() == [500, 500]  # posts
    reference = ef.evaluate(tables, metrics=["micro_f1", "exact_match"]).summary.filter(system="full_pipeline")
    assert rows.get_column("value").to_list() == reference.get_column("value").to_list()


def test_a_slice_that_does_not_group_a_unit_gives_no_row_and_says_so(tables):
    ev = ef.evaluate(tables, metrics=["macro_f1", "mrr"], slices={"overall": [], "criterion": ["criterion_id"]})
    criterion = ev.summary.filter(grouping="criterion")
    assert set(criterion.get_column("metric")) == {"mrr"}
    expected = "slice `criterion` does not apply to unit `post` (`criterion_id` varies within a post): no rows"
    assert ev.notes.count(expected) == 1
    assert json.loads(json.dumps(ev.info))["notes"] == [expected]


def test_missing_policy_for_ranked_lists(tables):
    lists = tables.ranked_lists.filter(pl.col("query_id") != "p00001|A.1")
    without = replace(tables, ranked_lists=lists)
    with pytest.raises(ef.InputError) as error:
        ef.evaluate(without, metrics=["mrr"])
    assert "1 of 5,000 evaluated queries have no ranking from system 'full_pipeline': 'p00001|A.1'" in str(error.value)
    ev = ef.evaluate(without, metrics=["mrr"], missing="zero")
    assert any("absent from the run were scored as empty rankings" in note for note in ev.notes)


def test_a_ranked_list_given_twice_changes_neither_the_absent_pairs_nor_their_error(tables):
    # The absent pairs are an anti join against the lists' pairs as they stand (no unique first).
    lists = tables.ranked_lists.filter(pl.col("query_id") != "p00001|A.1")
    once = replace(tables, ranked_lists=lists)
    twice = replace(tables, ranked_lists=pl.concat([lists, lists.head(3)]))
    assert twice.ranked_pairs(each_once=False).height == once.ranked_pairs().height + 3
    assert twice.ranked_pairs().height == once.ranked_pairs().height
    errors = []
    for without in (once, twice):
        with pytest.raises(ef.InputError) as error:
            ef.evaluate(without, metrics=["mrr"])
        errors.append(str(error.value))
    assert errors[0] == errors[1]
    assert "1 of 5,000 evaluated queries have no ranking from system 'full_pipeline': 'p00001|A.1'" in errors[0]
