"""The paired bootstrap interval of a change (gates/noise.py) against a plain-Python reference."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.gates.noise import paired_delta_ci
from evalframe.engine.replicates import poisson_counts


def _reference(base: dict, cand: dict, resamples: int, seed: int, confidence: float):
    """Loop over replicates and cases: Σ w (cand − base) / Σ w, percentile interval."""
    ids = sorted(base)
    counts = poisson_counts(pl.DataFrame({"query_id": ids}), resamples, seed)
    replicates = []
    for r in range(resamples):
        total = sum(int(counts[i, r]) for i in range(len(ids)))
        if total == 0:
            continue
        replicates.append(sum(int(counts[i, r]) * (cand[q] - base[q]) for i, q in enumerate(ids)) / total)
    alpha = 1 - confidence
    low, high = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    return sum(cand[q] - base[q] for q in ids) / len(ids), low, high


def _frame(values: dict) -> pl.DataFrame:
    return pl.DataFrame({"query_id": list(values), "value": list(values.values())})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30), st.integers(0, 2**32))
def test_matches_the_reference(pairs, seed):
    base = {f"q{i}": b for i, (b, _) in enumerate(pairs)}
    cand = {f"q{i}": c for i, (_, c) in enumerate(pairs)}
    found = paired_delta_ci(_frame(base), _frame(cand), resamples=200, seed=seed)
    delta, low, high = _reference(base, cand, 200, seed, 0.95)
    assert (found.delta, found.low, found.high) == (pytest.approx(delta), pytest.approx(low), pytest.approx(high))


def test_row_order_does_not_matter_and_the_seed_repeats():
    base = {f"q{i}": float(i % 3 == 0) for i in range(50)}
    cand = {f"q{i}": float(i % 4 == 0) for i in range(50)}
    one = paired_delta_ci(_frame(base), _frame(cand), seed=3)
    shuffled = paired_delta_ci(_frame(base).reverse(), _frame(cand).sample(fraction=1.0, shuffle=True, seed=1), seed=3)
    assert one == shuffled
    assert paired_delta_ci(_frame(base), _frame(cand), seed=4) != one


def test_cases_null_on_both_sides_are_left_out_one_side_is_an_error():
    base = pl.DataFrame({"query_id": ["a", "b", "c"], "value": [1.0, None, 0.0]})
    cand = pl.DataFrame({"query_id": ["a", "b", "c"], "value": [1.0, None, 1.0]})
    assert paired_delta_ci(base, cand, resamples=100).n == 2
    with pytest.raises(ef.InputError, match="0 have a value in the baseline only, 1 in the candidate only"):
        paired_delta_ci(base, cand.with_columns(pl.lit(1.0).alias("value")), resamples=100)
