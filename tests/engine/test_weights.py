"""Weights (DESIGN §2): every metric honours a per-unit weight.

With whole-number weights every summary statistic equals that of the sample with each unit
repeated ``weight`` times (a unit of weight 0 drops out); with other weights the mean, the
frequency-weight std and the weighted inverted-CDF quantiles match numpy.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tables_strategy import evidence_tables, repeat_by_weight

import evalframe as ef
from evalframe.engine.aggregate import _weighted_quantile

PER_UNIT = ["recall@3", "ndcg@5", "mrr", "map@3", "num_ret", "brier"]
SET = ["auroc", "auprc", "tpr@fpr=0.3", "ece", "tp", "f1", "mcc", "precision", "specificity"]
POST = ["exact_match", "hamming_loss", "macro_f1", "micro_f1", "weighted_f1", "label_macro_f1"]
SLICES = {"overall": [], "fold": ["fold"]}
STATS = ["value", "std", "median", "p25", "p75", "p90", "min", "max"]


def _keyed(summary: pl.DataFrame) -> dict:
    return {
        (row["grouping"], row["system"], row["fold"], row["metric"], row["subset"]): row
        for row in summary.iter_rows(named=True)
    }


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def assert_same_statistics(weighted: pl.DataFrame, repeated: pl.DataFrame) -> None:
    """Rows with a positive total weight agree on every statistic; ``n`` is not compared
    (it counts units, whatever their weight)."""
    ours, theirs = _keyed(weighted), _keyed(repeated)
    compared = 0
    for key, row in ours.items():
        other = theirs.get(key)
        if other is None:  # a slice whose units all weigh 0 has no copy to compare with
            continue
        for stat in STATS:
            assert _close(row[stat], other[stat]), (key, stat, row[stat], other[stat])
        compared += 1
    assert compared > 0


@given(tables=evidence_tables(weights="integer"), metrics=st.sampled_from([PER_UNIT, SET, POST]))
@settings(max_examples=15)
def test_whole_weights_equal_repeated_units(tables, metrics):
    if tables.queries.get_column("w").sum() == 0:
        return
    weighted = ef.evaluate(tables, metrics=metrics, slices=SLICES, weight="w")
    repeated = ef.evaluate(repeat_by_weight(tables), metrics=metrics, slices=SLICES)
    assert_same_statistics(weighted.summary, repeated.summary)


@given(tables=evidence_tables(weights="one"))
@settings(max_examples=15)
def test_unit_weights_change_nothing(tables):
    metrics = [*PER_UNIT, *SET]
    weighted = ef.evaluate(tables, metrics=metrics, slices=SLICES, weight="w")
    plain = ef.evaluate(tables, metrics=metrics, slices=SLICES)
    assert_same_statistics(weighted.summary, plain.summary)


@given(values=st.lists(st.floats(0, 1), min_size=1, max_size=30), data=st.data())
def test_fractional_weights_match_numpy(values, data):
    weights = data.draw(st.lists(st.floats(0.01, 5, allow_nan=False), min_size=len(values), max_size=len(values)))
    weights[0] = 0.5  # at least one weight that is not a whole number
    frame = pl.DataFrame({"x": values, "w": weights})
    for q in (0.25, 0.5, 0.75):
        ours = frame.select(_weighted_quantile(pl.col("x"), pl.col("w"), q)).item()
        assert ours == np.quantile(values, q, weights=weights, method="inverted_cdf")


@given(values=st.lists(st.floats(0, 1), min_size=1, max_size=30), data=st.data())
def test_whole_weight_quantiles_match_the_repeated_sample(values, data):
    weights = data.draw(st.lists(st.integers(0, 4), min_size=len(values), max_size=len(values)))
    if sum(weights) == 0:
        return
    frame = pl.DataFrame({"x": values, "w": [float(w) for w in weights]})
    repeated = np.repeat(values, weights)
    for q in (0.25, 0.5, 0.75):
        ours = frame.select(_weighted_quantile(pl.col("x"), pl.col("w"), q)).item()
        assert ours == pytest.approx(np.quantile(repeated, q), rel=1e-12, abs=1e-15)


@given(tables=evidence_tables(weights="float", min_posts=2))
@settings(max_examples=30)
def test_fractional_weights_mean_and_std(tables):
    ev = ef.evaluate(tables, metrics=["brier", "recall@3"], slices={"overall": []}, weight="w")
    for metric in ("brier", "recall@3"):
        per_unit = ev.per_query.filter(pl.col("metric") == metric).join(
            tables.queries.select("system", "query_id", "w"), on=["system", "query_id"]
        )
        for system in per_unit.get_column("system").unique().to_list():
            rows = per_unit.filter((pl.col("system") == system) & pl.col("value").is_not_null())
            x, w = rows.get_column("value").to_numpy(), rows.get_column("w").to_numpy()
            row = ev.summary.filter((pl.col("system") == system) & (pl.col("metric") == metric)).row(0, named=True)
            if w.sum() == 0:
                assert row["value"] is None
                continue
            mean = np.average(x, weights=w)
            assert row["value"] == pytest.approx(mean, rel=1e-12, abs=1e-15)
            if w.sum() > 1:
                std = math.sqrt(np.sum(w * (x - mean) ** 2) / (w.sum() - 1))
                assert row["std"] == pytest.approx(std, rel=1e-9, abs=1e-12)
            else:
                assert row["std"] is None


def test_bad_weights_are_errors_naming_the_query(make_tables):
    tables = make_tables(weights=[1.0, -2.0, float("nan")])
    with pytest.raises(ef.InputError) as caught:
        ef.evaluate(tables, metrics=["brier"], weight="w")
    message = str(caught.value)
    assert "query 'p0|c1' of system 's'" in message and "-2.0" in message and "nan" in message


def test_a_posts_queries_must_share_its_weight(make_tables):
    tables = make_tables(weights=[1.0, 2.0, 1.0])
    assert ef.evaluate(tables, metrics=["brier"], weight="w").summary.height == 1  # query unit: fine
    with pytest.raises(ef.InputError, match=r"post system='s', post_id='p0' has queries with different weights"):
        ef.evaluate(tables, metrics=["macro_f1"], weight="w")


@pytest.fixture
def make_tables():
    def build(weights):
        n = len(weights)
        queries = pl.DataFrame({
            "system": ["s"] * n, "query_id": [f"p0|c{i}" for i in range(n)], "post_id": ["p0"] * n,
            "criterion_id": [f"c{i}" for i in range(n)], "label": [1, 0, 1][:n], "prob": [0.9, 0.2, 0.4][:n],
            "w": weights,
        })
        return ef.Tables(queries=queries, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String,
                                                                          "relevance": pl.Int64}))
    return build
