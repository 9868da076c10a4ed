"""Sums added exactly in fixed point (``curves.exact_sums``): the correctly rounded sum of each
group and column (``math.fsum``), the same bits in any row order, whatever other groups hold."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.metrics.curves import Exact, exact_sums

#: Magnitudes of one group within 2^30 of each other (exact in fixed point), groups of any scale.
values = st.lists(st.floats(1.0, 2.0 ** 30, allow_subnormal=False), min_size=1, max_size=20)
scales = st.sampled_from([1.0, 2.0 ** -600, 2.0 ** -1040, 2.0 ** 400, 1e-300, 3.3e-105])


def _sums(frame: pl.DataFrame) -> pl.DataFrame:
    return exact_sums(frame.lazy(), ["g"], {"n": pl.len().cast(pl.Int64), "total": Exact(pl.col("x"))}).collect().sort("g")


@settings(max_examples=20, deadline=None)
@given(groups=st.lists(st.tuples(values, scales), min_size=1, max_size=4), data=st.data())
def test_each_group_gets_its_correctly_rounded_sum_in_any_order(groups, data):
    rows = [(g, x * scale) for g, (xs, scale) in enumerate(groups) for x in xs]
    frame = pl.DataFrame({"g": [g for g, _ in rows], "x": [x for _, x in rows]})
    found = _sums(frame)
    for g, (xs, scale) in enumerate(groups):
        assert found.filter(pl.col("g") == g).get_column("total").item() == math.fsum(x * scale for x in xs)
    order = data.draw(st.permutations(range(frame.height)))
    assert _sums(frame[list(order)]).equals(found)


def test_a_tiny_value_is_not_lost_beside_a_large_one_of_another_group_or_column():
    frame = pl.DataFrame({"g": [0, 0, 1], "x": [4.7, 0.0, 3.3e-105], "y": [0.0, 3.3e-105, 1.0]})
    found = exact_sums(frame.lazy(), ["g"], {"x": Exact(pl.col("x")), "y": Exact(pl.col("y"))}).collect().sort("g")
    assert found.rows() == [(0, 4.7, 3.3e-105), (1, 3.3e-105, 1.0)]


def test_without_keys_one_row_and_integers_stay_exact():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, 10_000).astype(np.float64)
    found = exact_sums(pl.LazyFrame({"x": counts}), [], {"total": Exact(pl.col("x"))}).collect()
    assert found.rows() == [(float(counts.sum()),)]
