"""Slices over a list column (tags): a unit counts in the slice of each value it lists, checked
against a plain-Python reference; groupings without the list key count every unit once."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.data.tables import Tables

TAGS = ["a", "b", "c"]


def _tables(tags: list[list[str]], hits: list[int]) -> Tables:
    n = len(tags)
    ids = [f"q{i}" for i in range(n)]
    queries = pl.DataFrame({"system": ["s"] * n, "query_id": ids, "tags": tags, "label": [i % 2 for i in range(n)],
                            "prob": [((i * 37) % 11) / 10 for i in range(n)]},
                           schema_overrides={"tags": pl.List(pl.String)})
    ranked = pl.DataFrame({"system": ["s"] * n, "query_id": ids,
                           "doc_id": [["g", "x"] if hit else ["x", "y"] for hit in hits]})
    judgments = pl.DataFrame({"query_id": ids, "doc_id": ["g"] * n, "relevance": [1] * n})
    return Tables(queries=queries, judgments=judgments, ranked_lists=ranked, n_rows=n)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(TAGS), max_size=3), st.integers(0, 1)), min_size=1, max_size=12))
def test_each_tag_slice_is_the_mean_over_cases_listing_it(cases):
    tags, hits = [c[0] for c in cases], [c[1] for c in cases]
    ev = ef.evaluate(_tables(tags, hits), metrics=["recall@1"], slices={"overall": [], "tag": ["tags"]})
    rows = ev.summary.filter(pl.col("grouping") == "tag")
    found = {row["tags"]: (row["n"], row["value"]) for row in rows.to_dicts()}
    expected = {}
    for tag in [*TAGS, None]:
        members = [hit for case_tags, hit in zip(tags, hits) if (tag in case_tags if tag else not case_tags)]
        if members:
            expected[tag] = (len(members), pytest.approx(sum(members) / len(members)))
    assert found == expected
    overall = ev.summary.filter(pl.col("grouping") == "overall").row(0, named=True)
    assert overall["n"] == len(cases)  # never double counted
    assert overall["value"] == pytest.approx(sum(hits) / len(hits))


def test_set_metrics_slice_over_a_list_column_too():
    tags = [["a"], ["a", "b"], ["b"], ["a"]]
    ev = ef.evaluate(_tables(tags, [1, 0, 1, 0]), metrics=["brier", "fp", "tn"], slices={"tag": ["tags"]})
    queries = _tables(tags, [1, 0, 1, 0]).queries  # labels 0 1 0 1, probs 0.0 0.4 0.8 0.1
    for tag in ("a", "b"):
        rows = queries.filter(pl.col("tags").list.contains(tag))
        summary = ev.summary.filter(pl.col("tags") == tag)
        value = dict(summary.select("metric", "value").rows())
        assert value["brier"] == pytest.approx(((rows["prob"] - rows["label"]) ** 2).mean())
        negative = rows.filter(pl.col("label") == 0)
        assert value["fp"] == (negative["prob"] >= 0.5).sum()   # set-level (confusion state) per tag
        assert value["tn"] == (negative["prob"] < 0.5).sum()


def test_parts_over_a_list_slice_merge_into_the_whole():
    from evalframe.engine.evaluation import finalize, run
    from evalframe.engine.partials import compute_partials
    from evalframe.engine.plan import Plan, build_groups

    tags = [["a"], ["a", "b"], ["b"], [], ["c", "a"], ["b"]]
    hits = [1, 0, 1, 1, 0, 1]
    tables = _tables(tags, hits)
    plan = Plan(groups=build_groups(["recall@1", "fp"], None), slices={"overall": (), "tag": ("tags",)})

    def part(ids):
        return Tables(queries=tables.queries.filter(pl.col("query_id").is_in(ids)),
                      judgments=tables.judgments.filter(pl.col("query_id").is_in(ids)),
                      ranked_lists=tables.ranked_lists.filter(pl.col("query_id").is_in(ids)), n_rows=len(ids))

    parts = [part(["q0", "q2", "q4"]), part(["q1", "q3", "q5"])]
    merged = finalize(compute_partials(parts[0], plan).merge(compute_partials(parts[1], plan)))
    whole = run(tables, plan)
    columns = ["grouping", "tags", "metric", "n", "n_skipped", "value"]
    assert merged.summary.select(columns).sort("grouping", "tags", "metric", nulls_last=True).rows() == \
        whole.summary.select(columns).sort("grouping", "tags", "metric", nulls_last=True).rows()
