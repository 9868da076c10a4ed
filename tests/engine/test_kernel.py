"""The kernel contract (issue 27 part 1, :mod:`evalframe.engine.kernel`): complete units in,
serialisable partials out; finalising the merge of ANY partition of the units (1–16 parts,
through Arrow and Parquet, merged in any order and grouping) equals one in-memory run (the
tolerances of :func:`partition_checks.assert_same_evaluation`)."""

from __future__ import annotations

import io

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partition_checks import METRICS, SLICES, SUBSETS, assert_same_evaluation, with_answers
from tables_strategy import evidence_tables, restrict

import evalframe as ef
from evalframe.engine import kernel
from evalframe.errors import ConfigError, InputError


def _plan(weighted: bool, bootstrap: bool):
    return kernel.make_plan(
        METRICS, subsets=SUBSETS, slices=SLICES, weight="w" if weighted else None,
        across_folds="fold", bootstrap=ef.Bootstrap(resamples=40, seed=3) if bootstrap else None,
    )


def _through_parquet(table: pa.Table) -> pa.Table:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return pq.read_table(io.BytesIO(buffer.getvalue()))


def check_any_partition(tables, weighted, bootstrap, data):
    tables = with_answers(tables, data)
    plan = _plan(weighted, bootstrap)
    whole = ef.evaluate(tables, metrics=METRICS, subsets=SUBSETS, slices=SLICES,
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
@settings(max_examples=6, deadline=None)
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


@given(tables=evidence_tables(min_posts=2, max_posts=3))
@settings(max_examples=3, deadline=None)
def test_a_unit_in_two_parts_is_refused(tables):
    plan = kernel.make_plan(["recall@3", "auroc", "exact_match"])
    part = kernel.evaluate_part(tables, plan)
    with pytest.raises(InputError, match="has queries in parts 1, 2"):
        kernel.merge([part, part])
