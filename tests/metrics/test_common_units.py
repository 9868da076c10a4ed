"""One set of fixed-point units for every group of an exact sum (:func:`evalframe.metrics.curves.common_units`):
where it is given, the sums are those of each group's own units, bit for bit."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import evalframe.metrics.curves as curves
from evalframe.metrics.base import all_weights_one
from evalframe.metrics.curves import Exact, calibration_bins, common_units, exact_sums


def _bits(frame: pl.DataFrame) -> list:
    return [column.to_numpy().view(np.uint64).tolist() if column.dtype == pl.Float64 else column.to_list()
            for column in frame.get_columns()]


def _sums(rows: pl.DataFrame, units: dict | None) -> pl.DataFrame:
    return exact_sums(rows.lazy(), ["g"], {"s": Exact(pl.col("v"))}, units=units).collect().sort("g")


VALUES = st.one_of(
    st.floats(0, 1),  # probabilities
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1e-30, 2.0**-40, 1.0, 0.1, 3e300, 2.0**100, 1e30]),
)


def test_a_tiny_value_beside_a_huge_one_is_not_rounded_to_zero():
    """Units coarser than 1 (the largest magnitude ≥ 2^90): a value they scale to zero is no whole
    number of them, so each group keeps its own units and its sum (5e-324, not 0)."""
    frame = pl.DataFrame({"g": [0, 1, 1], "v": [2.0**100, 5e-324, 0.0]})
    assert common_units(frame.lazy(), pl.col("v")) is None
    own = _sums(frame, None)
    assert own.filter(pl.col("g") == 1).get_column("s").to_list() == [5e-324]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=60))
def test_common_units_give_the_sums_of_each_groups_own_units(rows):
    frame = pl.DataFrame({"g": [g for g, _ in rows], "v": [v for _, v in rows]}, schema={"g": pl.Int64, "v": pl.Float64})
    units = common_units(frame.lazy(), pl.col("v"))
    if units is None:  # some value is no whole number of the largest value's units, or out of range
        largest = max(abs(v) for _, v in rows)
        exponent = 89 - int(np.floor(np.log2(largest))) if largest > 0 else 0
        assert abs(exponent) > 900 or any((Fraction(v) * Fraction(2) ** exponent).denominator != 1 for _, v in rows)
        return
    event("common units")
    assert _bits(_sums(frame, {"s": units})) == _bits(_sums(frame, None))


@pytest.mark.parametrize(("values", "found"), [
    ([0.9, 0.5, 0.0], 90.0),          # 89 - floor(log2 0.9) = 90: every value a whole number of 2^-90
    ([0.9, 1e-30], None),             # 1e-30 is no whole number of 2^-90: each group keeps its own units
    ([0.5, float("nan")], None),
    ([0.5, float("inf")], None),
    ([0.0, 0.0], 0.0),
    ([1e-300], None),                 # units of 2^1085: beyond the normal numbers' room
])
def test_common_units_or_none(values, found):
    assert common_units(pl.LazyFrame({"v": values}), pl.col("v")) == found


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 1, None]), st.floats(0, 1) | st.sampled_from([1e-20, 0.0, 1.0]),
                          st.sampled_from([1.0, 0.5, 3.0])), min_size=1, max_size=50),
       st.booleans())
def test_calibration_bins_are_those_of_each_groups_own_units(rows, unit_weights):
    frame = pl.DataFrame({"fold": [r[0] for r in rows], "label": [r[1] for r in rows], "prob": [r[2] for r in rows],
                          "_weight": [1.0 if unit_weights else r[3] for r in rows]},
                         schema={"fold": pl.Int64, "label": pl.Int64, "prob": pl.Float64, "_weight": pl.Float64})
    with all_weights_one(unit_weights):
        found = calibration_bins(frame.lazy(), ["fold"], 10).collect().sort("fold", "bin", nulls_last=True)
        original = curves.common_units
        try:
            curves.common_units = lambda rows, values: None  # each group's own units (a window per group)
            expected = calibration_bins(frame.lazy(), ["fold"], 10).collect().sort("fold", "bin", nulls_last=True)
        finally:
            curves.common_units = original
    assert _bits(found) == _bits(expected)
