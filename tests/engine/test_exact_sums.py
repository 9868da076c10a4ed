"""Exact replicate sums (:mod:`evalframe.engine.exact_sums`, :mod:`evalframe.engine.replicate_sums`):
the digits rebuild every float exactly, the sums equal the exact rational sums (checked with
``fractions.Fraction``, an independent oracle) to within one rounding, and any split of the rows
into parts, merged in any order, gives the same floats bit for bit."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.engine import exact_sums
from evalframe.engine.replicate_sums import ReplicateSums, part_sums, replicate_totals

floats = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.sampled_from(
    [0.0, -0.0, 5e-324, -5e-324, 1e-310, 1.0, 0.1, 1 - 2**-53, 2.0**1000, -(2.0**-1000)])


def _exact(value: float) -> Fraction:
    return Fraction(value)


@given(values=st.lists(floats, min_size=1, max_size=40))
@settings(max_examples=30, deadline=None)
def test_digits_rebuild_every_float_exactly(values):
    position, limbs = exact_sums.digits(np.array(values))
    assert np.all(np.abs(limbs) < 2**exact_sums.LIMB_BITS)
    for value, k, digits in zip(values, position.tolist(), limbs.tolist(), strict=True):
        rebuilt = sum(Fraction(int(d)) * Fraction(2) ** (exact_sums.LIMB_BITS * (k + j)) for j, d in enumerate(digits))
        assert rebuilt == _exact(value)


def _sums_by_hand(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digit totals per grid position (a plain loop: the oracle's side)."""
    position, limbs = exact_sums.digits(values)
    grid = sorted({k + j for k in position.tolist() for j in range(exact_sums.LIMBS)})
    sums = np.zeros((len(grid), counts.shape[1]), dtype=np.int64)
    for i in range(values.size):
        for j in range(exact_sums.LIMBS):
            sums[grid.index(int(position[i]) + j)] += int(limbs[i, j]) * counts[i].astype(np.int64)
    return np.array(grid), sums


@given(values=st.lists(st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.3, 1e-12, -2.5]), min_size=1, max_size=30),
       seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_sums_equal_the_exact_rational_sums_within_one_rounding(values, seed):
    values = np.array(values)
    counts = np.random.default_rng(seed).integers(0, 21, size=(values.size, 5))
    grid, sums = _sums_by_hand(values, counts)
    found = exact_sums.to_float(grid, sums)
    for r in range(counts.shape[1]):
        exact = sum(_exact(v) * int(c) for v, c in zip(values.tolist(), counts[:, r].tolist(), strict=True))
        closest = float(exact)
        assert abs(Fraction(found[r]) - exact) <= abs(Fraction(math.ulp(closest))), (found[r], closest)


def test_non_finite_terms_are_counted_apart():
    grid = np.array([0, exact_sums.POS_INF, exact_sums.NEG_INF, exact_sums.NAN])
    sums = np.array([[3, 3, 3, 3],   # digits at position 0: the finite part, 3
                     [1, 0, 1, 0],   # +inf drawn
                     [0, 0, 2, 0],   # −inf drawn
                     [0, 0, 0, 1]])  # nan drawn
    found = exact_sums.to_float(grid, sums)
    assert found[0] == math.inf and found[1] == 3.0
    assert math.isnan(found[2]) and math.isnan(found[3])  # +inf and −inf: nan; a nan: nan


@given(n=st.integers(1, 60), parts=st.integers(1, 6), weighted=st.booleans(), strata=st.booleans(), data=st.data())
@settings(max_examples=25, deadline=None)
def test_any_split_into_parts_gives_the_same_floats(n, parts, weighted, strata, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    resamples = 7
    values = rng.normal(size=(n, 2)) * 10.0 ** rng.integers(-8, 8, size=(n, 1))
    values[rng.random(size=values.shape) < 0.2] = np.nan
    frame = pl.DataFrame({
        "system": rng.choice(["a", "b"], size=n), "fold": rng.integers(0, 3, size=n),
        "m1": values[:, 0], "m2": values[:, 1], "w": rng.integers(0, 4, size=n).astype(float) / 3.0,
        "cluster": rng.integers(0, max(1, n // 3), size=n),
    })
    unit_counts = rng.integers(0, 21, size=(frame.get_column("cluster").max() + 1, resamples)).astype(np.float64)
    by = {"overall": ["system"], "fold": ["system", "fold"]}
    options = dict(metric_names=["m1", "m2"], weight="w" if weighted else None, by=by,
                   strata="fold" if strata else None, resamples=resamples)

    def sums_of(rows: np.ndarray) -> dict[str, ReplicateSums]:
        part = frame[rows]
        return part_sums(part, unit_index=part.get_column("cluster").to_numpy(),
                         unit_counts=lambda positions: unit_counts[positions], **options)

    whole = sums_of(np.arange(n))
    part_of = rng.integers(0, parts, size=n)
    pieces = [sums_of(np.flatnonzero(part_of == p)) for p in range(parts) if (part_of == p).any()]
    order = data.draw(st.permutations(range(len(pieces))))
    scale = {str(f): rng.random(resamples) for f in range(3)} if strata else None
    for grouping in by:
        merged = pieces[order[0]][grouping].merge(*(pieces[i][grouping] for i in order[1:]))
        merged = ReplicateSums.from_frame(merged.to_frame())  # through the wire format
        a = replicate_totals(merged, 2, resamples, scale)
        b = replicate_totals(whole[grouping], 2, resamples, scale)
        assert a[0].equals(b[0])
        assert np.array_equal(a[1], b[1], equal_nan=True) and np.array_equal(a[2], b[2], equal_nan=True)
        # and they are the sums: Σ c·w·v and Σ c·w over rows with a value (float reference)
        keys = a[0].rows()
        user = frame.get_column("w").to_numpy() if weighted else np.ones(n)
        for s, key in enumerate(keys):
            inside = np.all([frame.get_column(c).to_numpy() == v for c, v in zip(by[grouping], key, strict=True)], axis=0)
            counts = unit_counts[frame.get_column("cluster").to_numpy()[inside]]
            factor = np.array([scale[str(f)] for f in frame.get_column("fold").to_numpy()[inside]]) if strata else 1.0
            for m in range(2):
                present = ~np.isnan(values[inside, m])
                expected = (np.where(present, values[inside, m] * user[inside], 0.0)[:, None] * counts * factor).sum(axis=0)
                np.testing.assert_allclose(a[1][s, m], expected, rtol=1e-9, atol=1e-9 * np.abs(values[:, m][~np.isnan(values[:, m])]).max(initial=1))
                weight_expected = (np.where(present, user[inside], 0.0)[:, None] * counts * factor).sum(axis=0)
                np.testing.assert_allclose(a[2][s, m], weight_expected, rtol=1e-12, atol=1e-12)
