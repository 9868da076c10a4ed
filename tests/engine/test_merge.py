"""Mergeable partials (DESIGN §3): parts of the data, evaluated apart and merged, give the summary
of the whole — exactly for counts and set metrics, to 1e-12 for floats; quantiles come from the
concatenated per-unit values."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tables_strategy import evidence_tables, restrict

import evalframe as ef
from evalframe.engine.evaluation import finalize, run
from evalframe.engine.partials import compute_partials
from evalframe.engine.plan import Plan, build_groups
from evalframe.errors import InputError

METRICS = {
    "all_queries": ["auroc", "auprc", "tpr@fpr=0.3", "ece", "tp", "fn", "f1", "mcc", "brier",
                    "exact_match", "hamming_loss", "macro_f1", "micro_f1", "weighted_f1", "label_macro_f1"],
    "has_evidence": ["recall@3", "ndcg@5", "mrr", "num_ret"],
}
COUNTS = {"n", "n_skipped", "n_outside_subset"}


def _plan(weighted: bool, metrics: dict = METRICS) -> Plan:
    """The evidence metrics on all queries and on ``has_evidence``, overall, per fold and per
    criterion, weighted by ``w`` or not (also :mod:`test_summary_pieces`' plan)."""
    return Plan(
        groups=build_groups(metrics, {"has_evidence": "label = 1"}),
        slices={"overall": (), "fold": ("fold",), "criterion": ("criterion_id",)},
        weight="w" if weighted else None,
        across_folds="fold",
    )


def _rows(summary: pl.DataFrame) -> dict:
    keys = ["grouping", "system", "fold", "criterion_id", "metric", "subset"]
    return {tuple(row[k] for k in keys): row for row in summary.iter_rows(named=True)}


@given(tables=evidence_tables(weights="integer", min_posts=2), weighted=st.booleans(), data=st.data())
@settings(max_examples=15)
def test_parts_merge_into_the_whole(tables, weighted, data):
    posts = tables.queries.get_column("post_id").unique().sort().to_list()
    n_parts = data.draw(st.integers(1, min(8, len(posts))))
    order = data.draw(st.permutations(posts))
    parts = [restrict(tables, list(order[i::n_parts])) for i in range(n_parts)]
    plan = _plan(weighted)
    whole = run(tables, plan)
    partials = [compute_partials(part, plan) for part in parts]
    merged = finalize(partials[0].merge(*partials[1:]))

    ours, theirs = _rows(merged.summary), _rows(whole.summary)
    assert ours.keys() == theirs.keys()
    for key, row in ours.items():
        other = theirs[key]
        for stat in ("n", "n_skipped", "n_outside_subset", "value", "std", "median", "p25", "p75", "p90", "min", "max", "note"):
            a, b = row[stat], other[stat]
            if stat in COUNTS or isinstance(a, str) or a is None or b is None:
                assert a == b, (key, stat, a, b)
            else:
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (key, stat, a, b)
    # per-unit values: the same rows, in any order (floats to 1e-12: a part's group-by may add in
    # another order than the whole's)
    keys = [c for c in merged.per_unit_values.columns if c != "value"]
    ours_values = merged.per_unit_values.sort(keys, nulls_last=True)
    whole_values = whole.per_unit_values.select(ours_values.columns).sort(keys, nulls_last=True)
    assert ours_values.select(keys).equals(whole_values.select(keys))
    a, b = ours_values.get_column("value"), whole_values.get_column("value")
    assert (a.is_null() == b.is_null()).all()
    assert ((a - b).abs().fill_null(0.0) <= 1e-12).all()


# --- safe merging: a unit split between parts is refused, never counted twice ----------------


def _split(tables, assignment: pl.DataFrame, part: int):
    """The tables of the query rows (system, query_id) assigned to ``part``."""
    rows = assignment.filter(pl.col("_part") == part).drop("_part")
    queries = tables.queries.join(rows, on=["system", "query_id"], how="semi")
    return ef.Tables(
        queries=queries,
        judgments=tables.judgments.filter(pl.col("query_id").is_in(queries.get_column("query_id").unique().implode())),
        ranked_lists=tables.ranked_lists.join(rows, on=["system", "query_id"], how="semi"),
    )


@given(tables=evidence_tables(weights="integer", min_posts=1), data=st.data())
@settings(max_examples=15, deadline=None)
def test_any_split_merges_to_the_whole_or_errors(tables, data):
    """Split the query rows into 1–16 parts by any key (a query column, or row by row): the merged
    partials give the whole's summary, or the merge stops with an error naming a unit split
    between parts; a split that keeps every post whole always merges."""
    key = data.draw(st.sampled_from(["post_id", "query_id", "criterion_id", "fold", "system", "row"]))
    n_parts = data.draw(st.integers(1, 16))
    rows = tables.queries.select("system", "query_id", "post_id", "criterion_id", "fold").with_row_index("row")
    values = rows.get_column(key).cast(pl.String).unique().sort().to_list()
    part_of = {value: data.draw(st.integers(0, n_parts - 1)) for value in values}
    assignment = rows.select("system", "query_id", pl.col(key).cast(pl.String).replace_strict(part_of).alias("_part"))
    used = sorted(assignment.get_column("_part").unique().to_list())
    plan = _plan(weighted=False)
    partials = [compute_partials(_split(tables, assignment, part), plan) for part in used]
    posts_split = assignment.join(rows.select("system", "query_id", "post_id"), on=["system", "query_id"]).group_by(
        "system", "post_id").agg(pl.col("_part").n_unique()).filter(pl.col("_part") > 1)
    if posts_split.height:
        with pytest.raises(InputError, match=r"post \(system='.*', post_id='.*'\) has queries in parts"):
            partials[0].merge(*partials[1:])
        return
    whole = run(tables, plan)  # only what a merge gives is compared with the whole
    merged = finalize(partials[0].merge(*partials[1:]))
    ours, theirs = _rows(merged.summary), _rows(whole.summary)
    assert ours.keys() == theirs.keys()
    for key_values, row in ours.items():
        other = theirs[key_values]
        for stat in ("n", "n_skipped", "value", "note"):
            a, b = row[stat], other[stat]
            if stat in COUNTS or isinstance(a, str) or a is None or b is None:
                assert a == b, (key_values, stat, a, b)
            else:
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (key_values, stat, a, b)


def test_the_issue_example_a_post_split_by_query_is_refused():
    """Issue 21: splitting by query_id and merging gave exact_match 0.706 instead of 0.514 (n 500 →
    999); now the merge names the split post and its parts."""
    queries = pl.DataFrame({"system": ["s"] * 4, "query_id": ["p1|a", "p1|b", "p2|a", "p2|b"],
                            "post_id": ["p1", "p1", "p2", "p2"], "criterion_id": ["a", "b", "a", "b"],
                            "fold": [0, 0, 0, 0], "label": [1, 0, 1, 1], "prob": [0.9, 0.2, 0.8, 0.3]})
    empty_j = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    empty_l = pl.DataFrame(schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.List(pl.String)})
    plan = Plan(groups=build_groups(["exact_match", "auroc"], None), slices={"overall": ()})
    parts = [ef.Tables(queries=queries.filter(pl.col("criterion_id") == c), judgments=empty_j, ranked_lists=empty_l)
             for c in ("a", "b")]
    first, second = (compute_partials(part, plan) for part in parts)
    with pytest.raises(InputError) as raised:
        first.merge(second)
    message = str(raised.value)
    assert "post (system='s', post_id='p1') has queries in parts 1, 2" in message
    assert "post (system='s', post_id='p2') has queries in parts 1, 2" in message
