"""Which columns are constant within a unit (:func:`evalframe.data.units.constant_within`): the
slices a unit can be grouped by, read in one group-by for every candidate column (issue 22)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.data.units import QUERY_KEYS, constant_within

POSTS = pl.DataFrame({
    "system": ["a", "a", "a", "b", "b"],
    "query_id": ["p|A", "p|B", "q|A", "p|A", "p|B"],
    "post_id": ["p", "p", "q", "p", "p"],
    "fold": [1, 1, 2, 1, 1],
    "criterion_id": ["A", "B", "A", "A", "B"],
    "tag": [None, None, "x", None, "y"],  # post p of system b has a null and a "y": two values
})


def test_constant_within_keeps_the_columns_with_one_value_per_unit_in_their_order():
    keys = ["system", "post_id"]
    assert constant_within(POSTS, keys, ["criterion_id", "fold", "tag", "fold"]) == ["fold"]
    assert constant_within(POSTS.filter(pl.col("system") == "a"), keys, ["tag", "fold"]) == ["tag", "fold"]  # null is one value
    assert constant_within(POSTS, keys, []) == []


def test_every_column_is_constant_within_the_query_and_none_within_units_of_an_empty_table():
    assert constant_within(POSTS, QUERY_KEYS, ["criterion_id", "tag"]) == ["criterion_id", "tag"]
    assert constant_within(POSTS.clear(), ["system", "post_id"], ["fold"]) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("uv"), st.sampled_from([0, 1, None]), st.sampled_from(["x", "y", None])),
                min_size=1, max_size=12))
def test_constant_within_agrees_with_one_group_by_per_column(rows):
    frame = pl.DataFrame(rows, schema={"post_id": pl.String, "fold": pl.Int64, "tag": pl.String}, orient="row")
    frame = frame.with_columns(system=pl.lit("s"))
    one_by_one = [name for name in ("fold", "tag")
                  if frame.group_by("system", "post_id").agg(pl.col(name).n_unique()).get_column(name).max() <= 1]
    assert constant_within(frame, ["system", "post_id"], ["fold", "tag"]) == one_by_one
