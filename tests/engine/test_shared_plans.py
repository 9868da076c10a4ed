"""What the engine builds once for a whole run (issue 22): a set-metric state shared by several
metrics is one plan per grouping set, and which slice keys are constant within a unit is read in
one group-by (:func:`evalframe.data.units.constant_keys`)."""

from __future__ import annotations

import polars as pl
import pytest

import evalframe as ef
import evalframe.metrics.confusion as confusion
from evalframe.data.units import constant_keys, slice_applies

SAMPLE = "data_samples/per_query.csv"
POSTS = ["system", "post_id"]


@pytest.fixture(scope="module")
def tables():
    return ef.read_per_query(SAMPLE)


def test_a_shared_state_is_built_once_per_grouping_set(tables, monkeypatch):
    calls = []
    counted = confusion.confusion_counts

    def counting(rows, by, threshold):
        calls.append(tuple(by))
        return counted(rows, by, threshold)

    monkeypatch.setattr(confusion, "confusion_counts", counting)
    result = ef.evaluate(tables, metrics=["tp", "fp", "sensitivity", "f1", "mcc"], slices={"overall": [], "fold": ["fold"]})
    # five metrics read one state (equal threshold): one plan for each of the two grouping sets
    assert sorted(calls) == [("system",), ("system", "fold")]
    assert result.summary.filter(pl.col("metric") == "tp").height > 0


def test_constant_keys_are_those_with_one_value_in_every_unit():
    queries = pl.DataFrame({
        "system": ["a", "a", "a", "a", "b"],
        "post_id": ["p", "p", "q", "q", "p"],
        "fold": [1, 1, 2, 2, 1],
        "criterion_id": ["A.1", "A.2", "A.1", "A.1", "A.1"],
        "nulls": [None, None, 3, 3, None],  # a null is a value: constant where all are null
        "mixed": [None, 1, 2, 2, 5],  # null and 1 in post p of system a: two values
    })
    candidates = ["criterion_id", "fold", "mixed", "nulls"]
    assert constant_keys(queries, POSTS, candidates) == ["fold", "nulls"]
    for key in candidates:  # each key alone as slice_applies reads it
        assert slice_applies(queries, POSTS, [key]) == (key in ("fold", "nulls"))
    assert slice_applies(queries, POSTS, ["fold", "nulls"])
    assert not slice_applies(queries, POSTS, ["fold", "criterion_id"])


def test_constant_keys_without_units_and_for_the_query_unit():
    empty = pl.DataFrame(schema={"system": pl.String, "post_id": pl.String, "fold": pl.Int64})
    # no unit shows that a key is constant: none is (a slice then groups no units)
    assert constant_keys(empty, POSTS, ["fold"]) == []
    assert not slice_applies(empty, POSTS, ["fold"])
    # every key is constant within one query; no key to ask about is a slice that applies
    assert constant_keys(empty, ["system", "query_id"], ["fold"]) == ["fold"]
    assert slice_applies(empty, POSTS, [])
