"""The kernel contract (issue 27 part 1, :mod:`evalframe.engine.kernel`): complete units in,
serialisable partials out; finalising the merge of ANY partition of the units (1–16 parts,
through Arrow and Parquet, merged in any order) equals one in-memory run — counts, per-unit
values, quantiles and bootstrap intervals to the last bit, sums and moments within 1e-12."""

from __future__ import annotations

import io
import math

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, Phase
from hypothesis import strategies as st
from tables_strategy import evidence_tables, restrict

import evalframe as ef
from evalframe.engine import kernel
from evalframe.errors import ConfigError, InputError

#: Every metric family: ranking (item), classification and calibration set metrics (confusion,
#: ROC, ECE), a query-level score, per-post multi-label metrics, RAG lexical metrics.
METRICS = {
    "all_queries": ["auroc", "auprc", "ece", "f1", "mcc", "tp", "brier", "exact_match", "macro_f1", "micro_f1",
                    "token_f1", "answer_exact_match"],
    "has_evidence": ["recall@3", "ndcg@5", "mrr", "map", "num_ret"],
}
SLICES = {"overall": (), "fold": ("fold",), "criterion": ("criterion_id",)}
COUNTS = ("n", "n_skipped", "n_outside_subset")
EXACT = ("median", "p25", "p75", "p90", "min", "max", "se", "ci_low", "ci_high", "note")
CLOSE = ("value", "std")
WORDS = ["the", "cat", "sat", "a", "mat", "dog", "ran", "Cat!"]


def with_answers(tables: ef.Tables, data) -> ef.Tables:
    """The tables with a RAG reference and response per query (a few words each, often equal)."""
    n = tables.queries.height
    words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)
    references = data.draw(st.lists(words, min_size=n, max_size=n))
    responses = [data.draw(st.sampled_from([ref, ref.upper()]) | words) for ref in references]
    queries = tables.queries.with_columns(pl.Series("reference", references), pl.Series("response", responses))
    return ef.Tables(queries=queries, judgments=tables.judgments, ranked_lists=tables.ranked_lists)


def _plan(weighted: bool, bootstrap: bool):
    return kernel.make_plan(
        METRICS, subsets={"has_evidence": "label = 1"}, slices=SLICES, weight="w" if weighted else None,
        across_folds="fold", bootstrap=ef.Bootstrap(resamples=40, seed=3) if bootstrap else None,
    )


def _through_parquet(table: pa.Table) -> pa.Table:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return pq.read_table(io.BytesIO(buffer.getvalue()))


def assert_same_evaluation(ours: ef.Evaluation, whole: ef.Evaluation) -> None:
    """Counts, quantiles, intervals and notes equal; value and std within 1e-12; per-unit values
    and replicate values equal (rows in any order)."""
    columns = whole.per_unit_values.columns
    order = [c for c in columns if c != "value"]
    ours_values = ours.per_unit_values.select(columns).sort(order, nulls_last=True)
    whole_values = whole.per_unit_values.sort(order, nulls_last=True)
    assert ours_values.select(order).equals(whole_values.select(order))
    differ = ours_values.filter(pl.col("value").ne_missing(whole_values.get_column("value")))
    assert differ.is_empty(), (differ, whole_values.filter(pl.col("value").ne_missing(ours_values.get_column("value"))))
    keys = ["grouping", "system", "fold", "criterion_id", "metric", "subset"]
    a = ours.summary.sort(keys, nulls_last=True)
    b = whole.summary.sort(keys, nulls_last=True)
    assert a.select(keys).equals(b.select(keys))
    a, b = a.with_columns(folds=pl.col("grouping") == "across_folds"), b.with_columns(folds=pl.col("grouping") == "across_folds")
    # across-folds rows summarise fold means (sums): their quantiles are within 1e-12 too
    folds = pl.col("folds")
    for stat in (*COUNTS, *EXACT):
        exact = a.get_column(stat) if stat in ("se", "ci_low", "ci_high", "note", *COUNTS) else a.filter(~folds).get_column(stat)
        other = b.get_column(stat) if stat in ("se", "ci_low", "ci_high", "note", *COUNTS) else b.filter(~folds).get_column(stat)
        differ = [(row, x, y) for row, (x, y) in enumerate(zip(exact.to_list(), other.to_list(), strict=True)) if x != y]
        rows = a if stat in ("se", "ci_low", "ci_high", "note", *COUNTS) else a.filter(~folds)
        assert not differ, (stat, differ[:3], rows.select(keys)[differ[0][0]].rows())
    for stat in (*CLOSE, *EXACT[:6]):
        for x, y in zip(a.get_column(stat).to_list(), b.get_column(stat).to_list(), strict=True):
            assert (x is None) == (y is None) and (x is None or math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)), (stat, x, y)
    assert ours.skipped.equals(whole.skipped)
    if whole.replicates is not None:
        rows = [c for c in whole.replicates.columns if c != "values"]
        assert ours.replicates.sort(rows, nulls_last=True).equals(whole.replicates.sort(rows, nulls_last=True))


def check_any_partition(tables, weighted, bootstrap, data):
    tables = with_answers(tables, data)
    plan = _plan(weighted, bootstrap)
    whole = ef.evaluate(tables, metrics=METRICS, subsets={"has_evidence": "label = 1"}, slices=SLICES,
                        weight="w" if weighted else None, across_folds="fold", bootstrap=plan.bootstrap)
    posts = tables.queries.get_column("post_id").unique().sort().to_list()
    n_parts = data.draw(st.integers(1, 16))
    part_of = {post: data.draw(st.integers(0, n_parts - 1)) for post in posts}
    groups = [[p for p in posts if part_of[p] == i] for i in range(n_parts)]
    arrow = [_through_parquet(kernel.to_arrow(kernel.evaluate_part(restrict(tables, group), plan), part=str(i)))
             for i, group in enumerate(groups) if group]
    collected = pa.concat_tables(data.draw(st.permutations(arrow)))
    parts = data.draw(st.permutations(kernel.from_arrow(collected)))
    # associativity: merge a random split of the parts first, then the two merges
    cut = data.draw(st.integers(1, len(parts)))
    halves = [kernel.merge(parts[:cut])] + ([kernel.merge(parts[cut:])] if parts[cut:] else [])
    assert_same_evaluation(kernel.finalise(kernel.merge(halves)), whole)


@given(tables=evidence_tables(weights="integer", min_posts=1, max_posts=8), weighted=st.booleans(),
       bootstrap=st.booleans(), data=st.data())
@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
def test_any_partition_merges_to_the_in_memory_run(tables, weighted, bootstrap, data):
    check_any_partition(tables, weighted, bootstrap, data)


@pytest.mark.slow
@given(tables=evidence_tables(weights="float", min_posts=1, max_posts=12), weighted=st.booleans(),
       bootstrap=st.booleans(), data=st.data())
@settings(max_examples=100, deadline=None)
def test_any_partition_merges_to_the_in_memory_run_wide_sweep(tables, weighted, bootstrap, data):
    check_any_partition(tables, weighted, bootstrap, data)


def test_a_system_without_rows_in_a_part_still_gets_its_judged_queries():
    """A part where system `b` retrieved nothing: with the whole run's systems, `b`'s judged
    queries there are evaluated (missing="zero": empty rankings), as in the whole run."""
    run = pl.DataFrame({"system": ["a", "a", "b"], "query_id": ["q1", "q2", "q1"], "doc_id": ["d1", "d2", "d1"],
                        "score": [1.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 1]})
    plan = kernel.make_plan(["recall@1"], missing="zero")
    whole = ef.evaluate(ef.read_run(run), ef.read_qrels(qrels), ["recall@1"], missing="zero")
    parts = [
        kernel.evaluate_part(ef.Tables.from_run(ef.read_run(run.filter(pl.col("query_id") == q)),
                                                ef.read_qrels(qrels.filter(pl.col("query_id") == q))), plan,
                             systems=["a", "b"])
        for q in ("q1", "q2")
    ]
    merged = kernel.finalise(kernel.merge(parts))
    assert merged.summary.select("system", "n", "value").sort("system").rows() == [("a", 2, 1.0), ("b", 2, 0.5)]
    assert merged.summary.select("system", "n", "value").sort("system").equals(
        whole.summary.select("system", "n", "value").sort("system"))
    assert merged.notes == whole.notes  # "1 judged (system, query) pairs absent …": counted once, summed


def test_counted_notes_add_up_and_other_notes_stay_once():
    notes = kernel.merged_notes([
        ("3 run rows of 2 queries without judgments were ignored", "`ndcg@5` uses exponential gain 2^grade − 1"),
        ("`ndcg@5` uses exponential gain 2^grade − 1", "4 run rows of 1 queries without judgments were ignored"),
    ])
    assert notes == ("7 run rows of 3 queries without judgments were ignored", "`ndcg@5` uses exponential gain 2^grade − 1")


def test_partials_of_other_shape_are_refused():
    with pytest.raises(ConfigError, match="missing"):
        kernel.from_arrow(pa.table({"part": ["x"], "kind": ["facts"]}))
    with pytest.raises(ConfigError, match="at least one part"):
        kernel.merge([])


def test_a_unit_in_two_parts_is_refused():
    tables = evidence_tables(min_posts=2).example()
    plan = kernel.make_plan(["recall@3", "auroc", "exact_match"])
    part = kernel.evaluate_part(tables, plan)
    with pytest.raises(InputError, match="has queries in parts 1, 2"):
        kernel.merge([part, part])
