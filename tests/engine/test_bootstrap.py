"""Bootstrap intervals (evalframe.engine.bootstrap): against scipy.stats.bootstrap, the strata
rule, the settings' validation, and coverage on synthetic data with a known truth."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

import evalframe as ef
from evalframe.errors import ConfigError
from evalframe.engine.bootstrap import Bootstrap, intervals, jackknife_acceleration, unit_weight_matrix

EMPTY_JUDGMENTS = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
EMPTY_LISTS = pl.DataFrame(schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.List(pl.String)})


def query_tables(queries: pl.DataFrame) -> ef.Tables:
    """Tables with only a queries table (query-level and set metrics need nothing else)."""
    return ef.Tables(queries=queries, judgments=EMPTY_JUDGMENTS, ranked_lists=EMPTY_LISTS)


def brier_queries(n: int, seed: int, system: str = "s") -> tuple[pl.DataFrame, np.ndarray]:
    """Queries whose Brier terms (prob − label)² are skewed; returns the table and the terms."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    prob = rng.beta(2, 5, n)
    queries = pl.DataFrame({"system": system, "query_id": [f"q{i}" for i in range(n)], "label": label, "prob": prob})
    return queries, (prob - label) ** 2


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_per_unit_mean_interval_agrees_with_scipy(method):
    """Same data, 4,000 resamples each: endpoints within a tenth of the interval's width."""
    queries, terms = brier_queries(150, seed=3)
    ev = ef.evaluate(query_tables(queries), metrics=["brier"], bootstrap=Bootstrap(resamples=4000, method=method, seed=7))
    row = ev.summary.row(0, named=True)
    reference = stats.bootstrap((terms,), np.mean, n_resamples=4000, method="BCa" if method == "bca" else "percentile",
                                confidence_level=0.95, rng=np.random.default_rng(1)).confidence_interval
    width = reference.high - reference.low
    assert abs(row["ci_low"] - reference.low) <= width / 10
    assert abs(row["ci_high"] - reference.high) <= width / 10
    assert row["ci_low"] < row["value"] < row["ci_high"]
    assert row["se"] == pytest.approx(terms.std(ddof=1) / np.sqrt(terms.size), rel=0.1)


def test_auroc_interval_agrees_with_scipy_percentile():
    """Our 3,000-resample percentile interval against scipy's bootstrap of scikit-learn's AUROC,
    each endpoint within a tenth of the width. scipy's side takes 1,000 resamples (one
    scikit-learn call each, ~1.6 ms): the Monte Carlo error of the two endpoints' difference is
    then about a quarter of the tolerance (sd of a 2.5 % quantile's estimate ≈ 0.05σ at 3,000
    resamples and 0.085σ at 1,000, against 3.92σ / 10), and the test costs a third (issue 20)."""
    rng = np.random.default_rng(5)
    label = rng.integers(0, 2, 200)
    prob = np.clip(0.3 * label + rng.normal(0.35, 0.2, 200), 0, 1)
    queries = pl.DataFrame({"system": "s", "query_id": [f"q{i}" for i in range(200)], "label": label, "prob": prob})
    ev = ef.evaluate(query_tables(queries), metrics=["auroc"], bootstrap=Bootstrap(resamples=3000, seed=2))
    row = ev.summary.row(0, named=True)
    reference = stats.bootstrap((label, prob), lambda y, p: roc_auc_score(y, p), paired=True, vectorized=False,
                                n_resamples=1000, method="percentile", rng=np.random.default_rng(0)).confidence_interval
    width = reference.high - reference.low
    assert abs(row["ci_low"] - reference.low) <= width / 10
    assert abs(row["ci_high"] - reference.high) <= width / 10


def test_bca_quantiles_equal_scipys_rule_on_given_replicates():
    """Given the same replicate values and jackknife, the BCa endpoints are scipy's formula."""
    rng = np.random.default_rng(0)
    values = rng.exponential(size=80)
    replicates = rng.choice(values, size=(2000, values.size)).mean(axis=1)
    estimate = values.mean()
    acceleration = jackknife_acceleration(values[:, None], np.ones((values.size, 1)))
    result = intervals(replicates[None, :], np.array([estimate]), 0.95, acceleration)
    # scipy's BCa (stats._resampling._bca_interval), written out.
    leave_one_out = (values.sum() - values) / (values.size - 1)
    deviation = leave_one_out.mean() - leave_one_out
    a = (deviation**3).sum() / (6 * ((deviation**2).sum()) ** 1.5)
    z0 = stats.norm.ppf((replicates < estimate).mean())
    bounds = [stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in stats.norm.ppf([0.025, 0.975])]
    assert acceleration[0] == pytest.approx(a, rel=1e-9)
    assert result.low[0] == pytest.approx(np.percentile(replicates, 100 * bounds[0]), rel=1e-12)
    assert result.high[0] == pytest.approx(np.percentile(replicates, 100 * bounds[1]), rel=1e-12)


def test_percentile_interval_is_numpys_percentile_of_the_defined_replicates():
    replicates = np.array([[np.nan, 1.0, 2.0, 3.0, 4.0, np.nan, 10.0]])
    result = intervals(replicates, np.array([2.5]), 0.9)
    defined = replicates[~np.isnan(replicates)]
    assert result.n_valid[0] == 5
    assert result.low[0] == pytest.approx(np.percentile(defined, 5))
    assert result.high[0] == pytest.approx(np.percentile(defined, 95))
    assert result.se[0] == pytest.approx(defined.std(ddof=1))
    # fewer than two defined replicates, or no estimate: no interval
    few = intervals(np.array([[np.nan, 1.0], [1.0, 2.0]]), np.array([1.0, np.nan]), 0.95)
    assert np.isnan(few.low).all() and np.isnan(few.se).all()


def test_strata_keep_their_size_in_every_replicate():
    units = pl.DataFrame({"post_id": [f"p{i}" for i in range(30)]})
    strata = np.array(["a"] * 5 + ["b"] * 10 + ["c"] * 15)
    weights = unit_weight_matrix(units, Bootstrap(resamples=500, strata="fold"), strata)
    for name, size in (("a", 5), ("b", 10), ("c", 15)):
        totals = weights[strata == name].sum(axis=0)
        drawn = totals > 0
        assert drawn.mean() > 0.9
        np.testing.assert_allclose(totals[drawn], size, rtol=1e-12)
    # Within a stratum the weights are the counts rescaled by one factor per replicate.
    counts = unit_weight_matrix(units, Bootstrap(resamples=500))
    ratio = np.divide(weights[:5], counts[:5], out=np.full((5, 500), np.nan), where=counts[:5] > 0)
    spread = np.nanmax(ratio, axis=0) - np.nanmin(ratio, axis=0)
    assert np.nanmax(spread) < 1e-12


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"resamples": 1}, "resamples"),
        ({"resamples": True}, "resamples"),
        ({"confidence": 1.0}, "confidence"),
        ({"seed": -1}, "seed"),
        ({"method": "bc"}, "method"),
        ({"unit": []}, "unit"),
        ({"strata": ""}, "strata"),
    ],
)
def test_bad_settings_are_config_errors(settings, message):
    with pytest.raises(ConfigError, match=message):
        Bootstrap(**settings)


# --- coverage on synthetic data with a known truth (vectorised: one evaluation, one slice per repeat) ---

REPEATS = 1000


def _coverage(summary: pl.DataFrame, truth: float) -> float:
    rows = summary.filter(pl.col("grouping") == "repeat")
    assert rows.height == REPEATS and rows.get_column("ci_low").null_count() == 0
    truth = float(truth)
    inside = (pl.col("ci_low") <= truth) & (pl.col("ci_high") >= truth)
    return rows.select(inside.mean()).item()


def _repeats(n: int, seed: int, draw) -> pl.DataFrame:
    """``REPEATS`` independent samples of ``n`` queries, told apart by the slice key ``repeat``."""
    rng = np.random.default_rng(seed)
    label, prob = draw(rng, (REPEATS, n))
    repeat = np.repeat(np.arange(REPEATS), n)
    return pl.DataFrame({
        "system": "s", "query_id": [f"r{r}q{i}" for r in range(REPEATS) for i in range(n)], "repeat": repeat,
        "label": label.reshape(-1), "prob": prob.reshape(-1),
    })


@pytest.mark.slow  # 1,000 repeats × 400 resamples: `make bench` runs it
def test_coverage_of_a_per_unit_mean():
    """Brier terms of p ~ U(0.4, 0.6), y ~ Bernoulli(1/2): E[(p − y)²] = E[p²] − E[p] + 1/2 = 1/4 + 1/300."""
    def draw(rng, shape):
        return rng.integers(0, 2, shape), rng.uniform(0.4, 0.6, shape)

    queries = _repeats(100, seed=11, draw=draw)
    ev = ef.evaluate(query_tables(queries), metrics=["brier"], slices={"repeat": ["repeat"]},
                     bootstrap=Bootstrap(resamples=400, seed=1))
    assert 0.93 <= _coverage(ev.summary, 0.25 + 1 / 300) <= 0.97


@pytest.mark.slow  # 1,000 repeats × 400 resamples: `make bench` runs it
def test_coverage_of_auroc():
    """Binormal scores, positives shifted by d = 1: AUROC = Φ(d / √2)."""
    def draw(rng, shape):
        label = rng.integers(0, 2, shape)
        return label, stats.norm.cdf(rng.normal(size=shape) + label)

    queries = _repeats(120, seed=12, draw=draw)
    ev = ef.evaluate(query_tables(queries), metrics=["auroc"], slices={"repeat": ["repeat"]},
                     bootstrap=Bootstrap(resamples=400, seed=2))
    assert 0.93 <= _coverage(ev.summary, stats.norm.cdf(1 / np.sqrt(2))) <= 0.97


@pytest.mark.slow  # 1,000 repeats × 400 resamples: `make bench` runs it
def test_coverage_of_ece():
    """p ~ U(0.5, 1), y ~ Bernoulli(p − 0.3): every bin's gap is 0.3, so ECE = 0.3 (each bin's gap
    is large against its noise, so the absolute value adds no bias)."""
    def draw(rng, shape):
        prob = rng.uniform(0.5, 1.0, shape)
        return (rng.random(shape) < prob - 0.3).astype(np.int64), prob

    queries = _repeats(150, seed=13, draw=draw)
    ev = ef.evaluate(query_tables(queries), metrics=["ece"], slices={"repeat": ["repeat"]},
                     bootstrap=Bootstrap(resamples=400, seed=3))
    assert 0.93 <= _coverage(ev.summary, 0.3) <= 0.97
