"""Replicate counts: Poisson(1), a pure function of (seed, unit key, replicate)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalframe.engine.replicates import poisson_counts, unit_hashes

KEYS = pl.DataFrame({"post_id": [f"p{i:05d}" for i in range(4000)]})


def test_counts_follow_poisson_one():
    counts = poisson_counts(KEYS, resamples=250, seed=7).ravel()
    observed = np.bincount(counts, minlength=7)[:7].astype(float)
    observed[-1] += (counts >= 7).sum()
    expected = stats.poisson(1).pmf(np.arange(7)) * counts.size
    expected[-1] = stats.poisson(1).sf(5) * counts.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    assert abs(counts.mean() - 1) < 0.01 and abs(counts.var() - 1) < 0.02


def test_replicates_and_seeds_are_uncorrelated():
    a = poisson_counts(KEYS, 2, seed=1).astype(float)
    b = poisson_counts(KEYS, 1, seed=2).astype(float)
    assert abs(np.corrcoef(a[:, 0], a[:, 1])[0, 1]) < 0.06
    assert abs(np.corrcoef(a[:, 0], b[:, 0])[0, 1]) < 0.06


def test_same_seed_same_counts_and_replicate_numbers_are_positions():
    whole = poisson_counts(KEYS, 20, seed=3)
    assert np.array_equal(whole, poisson_counts(KEYS, 20, seed=3))
    assert np.array_equal(whole[:, 5:12], poisson_counts(KEYS, 7, seed=3, first=5))
    assert not np.array_equal(whole, poisson_counts(KEYS, 20, seed=4))


@settings(max_examples=30, deadline=None)
@given(
    ids=st.lists(st.text(min_size=0, max_size=6), min_size=1, max_size=40, unique=True),
    cut=st.integers(0, 40),
    seed=st.integers(0, 2**32),
    order=st.randoms(use_true_random=False),
)
def test_counts_do_not_depend_on_row_order_or_parts(ids, cut, seed, order):
    keys = pl.DataFrame({"query_id": ids})
    whole = poisson_counts(keys, 8, seed=seed)
    cut = min(cut, len(ids))
    parts = np.vstack([poisson_counts(keys[:cut], 8, seed=seed), poisson_counts(keys[cut:], 8, seed=seed)])
    assert np.array_equal(whole, parts)
    permutation = list(range(len(ids)))
    order.shuffle(permutation)
    shuffled = poisson_counts(keys[permutation], 8, seed=seed)
    assert np.array_equal(shuffled, whole[permutation])


def test_hash_reads_key_text_and_keeps_columns_apart():
    assert unit_hashes(pl.DataFrame({"k": [7]}))[0] == unit_hashes(pl.DataFrame({"k": ["7"]}))[0]
    split = unit_hashes(pl.DataFrame({"a": ["ab", "a"], "b": ["c", "bc"]}))
    assert split[0] != split[1]
    assert len(set(unit_hashes(pl.DataFrame({"k": ["", None, "x"]})).tolist())) == 3
    # Known values pin the hash and the counts across machines and library versions.
    assert int(unit_hashes(pl.DataFrame({"k": ["p00001"]}))[0]) == 14113777762682392156
    assert poisson_counts(pl.DataFrame({"k": ["p00001", "p00002"]}), 5, seed=0).tolist() == [[0, 3, 1, 4, 1], [3, 1, 2, 2, 1]]


def test_no_keys_is_an_error():
    with pytest.raises(ValueError):
        unit_hashes(pl.DataFrame())
