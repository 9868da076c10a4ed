"""Paired tests against scipy and exact enumeration (issue 11, parts 2 and 5)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalframe.stats.paired_tests import (
    paired_statistics,
    paired_t_test,
    permutation_bits,
    randomization_test,
    sign_flip_pvalues,
    wilcoxon_test,
)
from evalframe.engine.replicates import unit_hashes

values = st.lists(st.sampled_from([0.0, 0.1, 0.25, 1 / 3, 0.5, 0.75, 1.0]), min_size=3, max_size=80)


@settings(max_examples=30, deadline=None)
@given(x=values, data=st.data())
def test_t_and_wilcoxon_equal_scipy(x, data):
    y = data.draw(st.lists(st.sampled_from([0.0, 0.2, 0.25, 0.5, 1.0]), min_size=len(x), max_size=len(x)))
    x, y = np.array(x), np.array(y)
    d = x - y
    t, p = paired_t_test(x, y)
    if np.std(d) > 0:
        expected = stats.ttest_rel(x, y)
        assert t == pytest.approx(expected.statistic, rel=1e-9)
        assert p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    else:
        assert np.isnan(p) or np.mean(d) != 0
    w, pw = wilcoxon_test(x, y)
    if np.any(d != 0):
        expected = stats.wilcoxon(x, y)
        assert w == pytest.approx(expected.statistic, rel=1e-12)
        assert pw == pytest.approx(expected.pvalue, rel=1e-9)
    else:
        assert np.isnan(pw)


@pytest.mark.parametrize("n", [51, 300, 5000])
def test_large_sample_wilcoxon_is_computed_here_and_equals_scipy(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 6, n) / 5
    y = np.clip(x + rng.integers(-1, 3, n) / 5, 0, 1)
    w, p = wilcoxon_test(x, y)
    expected = stats.wilcoxon(x, y)
    assert w == pytest.approx(expected.statistic, rel=1e-12)
    assert p == pytest.approx(expected.pvalue, rel=1e-9)


def test_grouped_statistics_equal_each_group_alone():
    rng = np.random.default_rng(0)
    table = pl.DataFrame({"g": rng.integers(0, 4, 400), "d": rng.normal(0.05, 0.3, 400).round(1)})
    grouped = paired_statistics(table, ["g"]).sort("g")
    for row in grouped.iter_rows(named=True):
        d = table.filter(pl.col("g") == row["g"]).get_column("d").to_numpy()
        assert row["n_pairs"] == d.size
        assert row["p_t"] == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue, rel=1e-9)
        assert row["p_wilcoxon"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-9)
        assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)


def _enumerated(d):
    observed = abs(d.sum())
    flips = [abs(sum(s * v for s, v in zip(signs, d))) for signs in itertools.product([1, -1], repeat=len(d))]
    return sum(f >= observed * (1 - 1e-9) for f in flips) / len(flips)


@settings(max_examples=30, deadline=None)
@given(d=st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.1, 0.25, 0.5, 1.0]), min_size=1, max_size=10))
def test_small_n_is_exact_enumeration(d):
    d = np.array(d)
    assert randomization_test(d, np.zeros_like(d)) == pytest.approx(_enumerated(d), abs=1e-15)


def test_monte_carlo_approaches_the_exact_value():
    rng = np.random.default_rng(5)
    d = rng.normal(0.1, 1.0, 16)
    exact = randomization_test(d, np.zeros(16), permutations=2**16)
    sampled = randomization_test(d, np.zeros(16), permutations=20_000, seed=3)
    assert exact == pytest.approx(_enumerated(d))
    assert abs(sampled - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_monte_carlo_p_is_never_zero_and_depends_only_on_seed_and_keys():
    d = np.full(40, 1.0)
    keys = [f"q{i}" for i in range(40)]
    p = randomization_test(d, np.zeros(40), permutations=999, keys=keys)
    assert p == pytest.approx(1 / 1000)
    hashes = unit_hashes(pl.DataFrame({"k": keys}))
    bits = permutation_bits(hashes, seed=7, first=0, count=64)
    shuffled = np.random.default_rng(1).permutation(40)
    np.testing.assert_array_equal(permutation_bits(hashes[shuffled], seed=7, first=0, count=64), bits[shuffled])
    np.testing.assert_array_equal(permutation_bits(hashes, seed=7, first=10, count=5), bits[:, 10:15])
    assert 0.4 < bits.mean() < 0.6


def test_columns_with_missing_pairs_use_their_own_units():
    rng = np.random.default_rng(2)
    d = rng.normal(0.2, 1.0, (60, 2))
    d[30:, 1] = np.nan
    hashes = unit_hashes(pl.DataFrame({"k": [str(i) for i in range(60)]}))
    p, exact = sign_flip_pvalues(d, hashes, permutations=5000, seed=1)
    alone, _ = sign_flip_pvalues(d[:30, 1], hashes[:30], permutations=5000, seed=1)
    assert p[1] == alone[0]
    assert not exact.any()


@settings(max_examples=15, deadline=None)  # the oracle (scipy's permutation_test) is the slow side
@given(d=st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.1, 0.25, 1 / 3, 0.5, 1.0]), min_size=1, max_size=13))
def test_small_wilcoxon_with_zeros_or_ties_is_scipys_permutation_rule_to_the_bit(d):
    """Up to 13 pairs with a zero or a tie, scipy enumerates every sign vector; so does evalframe
    (one matrix product instead of scipy's per-vector statistic): the same statistic and p-value."""
    d = np.array(d)
    if not np.any(d != 0):
        return
    row = paired_statistics(pl.DataFrame({"d": d}), []).row(0, named=True)
    expected = stats.wilcoxon(d)
    assert row["wilcoxon"] == float(expected.statistic)
    assert row["p_wilcoxon"] == float(expected.pvalue)


def test_shared_products_skip_zero_units_and_repeated_columns_and_keep_every_p_value():
    """Columns equal up to sign and units whose differences are all 0 are left out of the
    sign-flip products: every p-value equals the plain dense test's (one full product per block
    of permutations, written here)."""
    from evalframe.stats.paired_tests import shared_sign_flip_pvalues

    rng = np.random.default_rng(8)
    n = 300
    hashes = unit_hashes(pl.DataFrame({"unit": [f"u{i}" for i in range(n)]}))
    wide = np.where(rng.random((n, 3)) < 0.3, rng.integers(-2, 3, (n, 3)) / 4, 0.0)   # mostly 0
    narrow = np.full((n, 2), np.nan)
    subset = rng.random(n) < 0.15                                                   # another subset
    narrow[subset] = rng.normal(0.2, 1, (subset.sum(), 2))
    matrix = np.column_stack([wide, -wide[:, 0], wide[:, 1], narrow, np.zeros(n)])   # negated, repeated, all 0
    (p, exact), = shared_sign_flip_pvalues(hashes, [(np.arange(n), matrix)], permutations=3000, seed=2)
    filled = np.nan_to_num(matrix)
    observed = filled.sum(axis=0)
    extreme = np.zeros(matrix.shape[1])
    for start in range(0, 3000, 500):
        kept = permutation_bits(hashes, 2, start, 500).astype(float)
        statistics = 2.0 * (filled.T @ kept) - observed[:, None]
        extreme += (np.abs(statistics) >= np.abs(observed)[:, None] * (1 - 1e-9) - 1e-300).sum(axis=1)
    np.testing.assert_array_equal(p, (1 + extreme) / 3001)
    assert p[3] == p[0] and p[4] == p[1] and p[-1] == 1.0 and not exact.any()


def test_a_sum_that_is_zero_but_for_rounding_has_p_one_in_any_order():
    """0.1 + 0.2 − 0.3 is 5.6e-17 in float64, not 0: a T that is 0 within its sum's rounding
    error is 0, so p is 1, exactly (not the share of sign vectors whose own rounding happens to
    reach it: 0.931 before this rule on the 24 differences below)."""
    d = np.tile([0.1, 0.2, -0.3], 8)
    assert d.sum() != 0
    assert randomization_test(d, np.zeros_like(d), permutations=999) == 1.0              # sampled
    assert randomization_test(d[:15], np.zeros(15), permutations=2**15) == 1.0          # every sign vector
