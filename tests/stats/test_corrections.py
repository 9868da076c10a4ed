"""Multiple-testing corrections against statsmodels' multipletests (issue 11, parts 2 and 5)."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from evalframe.errors import ConfigError
from evalframe.stats.corrections import CORRECTIONS, adjust_in_families, adjust_pvalues

STATSMODELS = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh", "by": "fdr_by"}

p_values = st.lists(
    st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.01, 0.05, 0.5, 1.0])), min_size=1, max_size=40
)


def statsmodels_adjusted(p, method: str) -> np.ndarray:
    """statsmodels' adjusted p-values. Its `holm` branch ends with ``gc.collect()``, a full garbage
    collection that costs ~0.1 s in a test process holding large fixtures: skipped while it runs
    (a collection changes no number)."""
    with mock.patch.object(gc, "collect", lambda *args: 0):
        return multipletests(np.asarray(p), method=STATSMODELS[method])[1]


@pytest.mark.parametrize("method", list(STATSMODELS))
@settings(max_examples=25, deadline=None)
@given(p=p_values)
def test_equals_statsmodels(method, p):
    expected = statsmodels_adjusted(p, method)
    np.testing.assert_allclose(adjust_pvalues(p, method), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("method", list(STATSMODELS))
@settings(max_examples=12, deadline=None)
@given(p=p_values, families=st.lists(st.integers(0, 3), min_size=40, max_size=40))
def test_families_are_corrected_apart(method, p, families):
    table = pl.DataFrame({"family": families[: len(p)], "p": p})
    adjusted = adjust_in_families(table, "p", method, over=["family"]).to_numpy()
    for family in set(families[: len(p)]):
        inside = table.get_column("family").to_numpy() == family
        expected = statsmodels_adjusted(np.array(p)[inside], method)
        np.testing.assert_allclose(adjusted[inside], expected, rtol=1e-12, atol=1e-15)


def test_seed_example_bonferroni_and_bh():
    # 004 §21.5.3: seven metrics; at alpha 0.05 only NDCG@10 stays significant under both
    p = [0.001, 0.02, 0.03, 0.04, 0.06, 0.15, 0.25]
    assert (adjust_pvalues(p, "bonferroni") < 0.05).tolist() == [True] + [False] * 6
    assert (adjust_pvalues(p, "bh") < 0.05).tolist() == [True] + [False] * 6
    assert adjust_pvalues(p, "holm")[0] == pytest.approx(0.007)
    assert adjust_pvalues(p, "none").tolist() == p


def test_nulls_are_not_tests():
    table = pl.DataFrame({"p": [0.01, None, 0.02, float("nan")]})
    adjusted = adjust_in_families(table, "p", "bonferroni")
    assert adjusted.to_list() == [0.02, None, 0.04, None]
    assert np.isnan(adjust_pvalues([0.01, np.nan], "holm")[1])


def test_order_of_rows_does_not_matter():
    rng = np.random.default_rng(3)
    p = rng.random(50) ** 2
    order = rng.permutation(50)
    for method in CORRECTIONS:
        table = pl.DataFrame({"p": p})
        np.testing.assert_array_equal(
            adjust_in_families(table, "p", method).to_numpy()[order],
            adjust_in_families(table[order], "p", method).to_numpy(),
        )


def test_unknown_correction_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown correction `fdr`.*`bh`"):
        adjust_pvalues([0.1], "fdr")
