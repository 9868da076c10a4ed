"""``evalframe._sorting``: two halves of a large array sorted at once on two threads; ids encoded
to their positions among the sorted distinct ids (``sorted_codes``) as a binary search would."""

from __future__ import annotations

from unittest import mock

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe import _sorting


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=80),
    cut=st.floats(min_value=0, max_value=1),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    split=st.booleans(),
)
def test_split_sort_sorts_when_the_halves_are_apart(values, cut, seed, split):
    ordered = np.array(sorted(values), dtype=np.uint64)
    middle = int(cut * len(ordered))
    shuffled = ordered.copy()
    rng = np.random.default_rng(seed)
    rng.shuffle(shuffled[:middle])  # every value below `middle` is still <= every value above it
    rng.shuffle(shuffled[middle:])
    with mock.patch.object(_sorting, "MIN_SPLIT_LENGTH", 0 if split else _sorting.MIN_SPLIT_LENGTH):
        _sorting.sort_split_in_place(shuffled, middle)
    assert shuffled.tolist() == ordered.tolist()


def test_split_sort_on_a_large_array_uses_the_threaded_path():
    rng = np.random.default_rng(7)
    values = rng.integers(0, 2**63, _sorting.MIN_SPLIT_LENGTH * 2, dtype=np.uint64)
    middle = len(values) // 3
    values = np.partition(values, middle)
    expected = np.sort(values)
    _sorting.sort_split_in_place(values, middle)
    assert np.array_equal(values, expected)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "B", "b", "ab", "é", "10", "9"])), max_size=12))
def test_sorted_codes_are_the_positions_among_the_sorted_distinct_ids(values):
    series = pl.Series("id", values, dtype=pl.String)
    distinct, position = _sorting.sorted_codes(series)
    expected = series.unique().sort()
    assert distinct.equals(expected)
    assert position.dtype == np.int64
    assert np.array_equal(position, expected.search_sorted(series).to_numpy().astype(np.int64))
