"""Anomaly and fraud detection metrics against the chapter's AnomalyDetectionMetrics (§21.4.3)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.errors import ConfigError
from evalframe.metrics.detection import (
    DetectionRateAtFPR,
    MinimumCost,
    MinimumCostThreshold,
    cost_curve,
    time_to_detection_summary,
)
from evalframe.metrics.registry import resolve


def chapter_detection(scores, labels, target_fpr):
    """The chapter's ``detection_rate_at_false_positive_rate``, as written."""
    sorted_labels = labels[np.argsort(scores)[::-1]]
    n_positives = labels.sum()
    n_negatives = len(labels) - n_positives
    max_fp = int(target_fpr * n_negatives)
    fp = tp = threshold_idx = 0
    for i, label in enumerate(sorted_labels):
        if label == 1:
            tp += 1
        else:
            fp += 1
            if fp >= max_fp:
                threshold_idx = i
                break
    return {"detection_rate": tp / n_positives if n_positives > 0 else 0,
            "actual_fpr": fp / n_negatives if n_negatives > 0 else 0, "threshold_index": threshold_idx}


def chapter_costs(predictions, labels, fp_cost, fn_cost):
    fp = ((predictions == 1) & (labels == 0)).sum()
    fn = ((predictions == 0) & (labels == 1)).sum()
    total = fp * fp_cost + fn * fn_cost
    baseline = labels.sum() * fn_cost
    return {"total_cost": total, "cost_per_prediction": total / len(labels),
            "cost_reduction_vs_baseline": 1 - total / baseline if baseline > 0 else 0}


def chapter_data():
    """The chapter's example data, made exactly as its code makes it."""
    np.random.seed(42)
    n_samples = 10000
    labels = (np.random.random(n_samples) < 0.01).astype(int)
    scores = np.random.random(n_samples)
    scores[labels == 1] += 0.3
    scores = np.clip(scores, 0, 1)
    return scores, labels


def tables_of(scores, labels, **extra) -> ef.Tables:
    queries = pl.DataFrame({"query_id": [str(i) for i in range(len(scores))], "label": np.asarray(labels, dtype=np.int64),
                            "prob": np.asarray(scores, dtype=np.float64), **extra})
    judgments = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    return ef.Tables(queries=queries, judgments=judgments)


def values(ev) -> dict:
    return dict(ev.summary.select("metric", "value").iter_rows())


COSTS = "(fp_cost=100,fn_cost=10000)"


def test_the_chapters_example():
    scores, labels = chapter_data()
    got = values(ef.evaluate(tables_of(scores, labels), metrics=[
        "detection_rate@fpr=0.01", "actual_fpr@fpr=0.01", "threshold_index@fpr=0.01", f"cost_reduction_vs_baseline{COSTS}"]))
    assert f"{got['detection_rate@fpr=0.01']:.1%}" == "24.2%"
    assert f"{got[f'cost_reduction_vs_baseline{COSTS}']:.1%}" == "23.0%"
    chapter = chapter_detection(scores, labels, 0.01)
    assert got["detection_rate@fpr=0.01"] == pytest.approx(chapter["detection_rate"])
    assert got["actual_fpr@fpr=0.01"] == pytest.approx(chapter["actual_fpr"])
    assert got["threshold_index@fpr=0.01"] == chapter["threshold_index"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 10**6)), min_size=2, max_size=60, unique_by=lambda t: t[1]),
       st.sampled_from([0.01, 0.05, 0.1, 0.25, 0.5, 1.0]))
def test_walk_equals_the_chapters_loop_on_distinct_scores(cases, target):
    labels = np.array([c[0] for c in cases])
    scores = np.array([c[1] for c in cases], dtype=float) / 10**6
    if labels.sum() == 0 or labels.sum() == len(labels):
        return
    got = values(ef.evaluate(tables_of(scores, labels), metrics=[
        f"detection_rate@fpr={target}", f"actual_fpr@fpr={target}", f"threshold_index@fpr={target}"]))
    chapter = chapter_detection(scores, labels, target)
    assert got[f"detection_rate@fpr={target}"] == pytest.approx(chapter["detection_rate"])
    assert got[f"actual_fpr@fpr={target}"] == pytest.approx(chapter["actual_fpr"])
    assert got[f"threshold_index@fpr={target}"] == chapter["threshold_index"]
    # The bootstrap path (NumPy twin) equals the Polars path under each weight column.
    frame = tables_of(scores, labels).queries.select("label", "prob")
    weights = np.random.default_rng(len(cases)).integers(1, 4, size=(len(cases), 3)).astype(float)
    for cls in ("detection_rate", "actual_fpr", "threshold_index"):
        metric = resolve(f"{cls}@fpr={target}")
        under = metric.values_under(frame, weights)
        for column in range(weights.shape[1]):
            normal = metric.compute(frame.lazy().with_columns(pl.Series("_weight", weights[:, column])), by=[]).collect()
            expected = normal.get_column("value").item()
            assert (np.isnan(under[column]) and expected is None) or under[column] == pytest.approx(expected)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 20)), min_size=1, max_size=50),
       st.integers(0, 500), st.integers(0, 5000), st.sampled_from([0.25, 0.5, 0.75]))
def test_costs_equal_the_chapter_and_the_minimum_is_the_curves(cases, fp_cost, fn_cost, threshold):
    labels = np.array([c[0] for c in cases])
    scores = np.array([c[1] for c in cases], dtype=float) / 20
    costs = f"(fp_cost={fp_cost},fn_cost={fn_cost},threshold={threshold})"
    names = [f"total_cost{costs}", f"cost_per_prediction{costs}", f"cost_reduction_vs_baseline{costs}",
             f"min_cost(fp_cost={fp_cost},fn_cost={fn_cost})"]
    ev = ef.evaluate(tables_of(scores, labels), metrics=names)
    got = dict(ev.summary.select("metric", "value").iter_rows())
    got = {resolve(k).name: v for k, v in got.items()}
    chapter = chapter_costs((scores >= threshold).astype(int), labels, fp_cost, fn_cost)
    assert got[resolve(names[0]).name] == pytest.approx(chapter["total_cost"])
    assert got[resolve(names[1]).name] == pytest.approx(chapter["cost_per_prediction"])
    if labels.sum() * fn_cost > 0:
        assert got[resolve(names[2]).name] == pytest.approx(chapter["cost_reduction_vs_baseline"])
    else:  # zero-cost baseline: undefined with a note (the chapter's 0 would be made up)
        assert got[resolve(names[2]).name] is None
    # Brute force over every threshold and "flag nothing".
    brute = min([labels.sum() * fn_cost] + [chapter_costs((scores >= t).astype(int), labels, fp_cost, fn_cost)["total_cost"]
                                           for t in np.unique(scores)])
    assert got[resolve(names[3]).name] == pytest.approx(brute)
    curve = cost_curve(labels, scores, fp_cost, fn_cost)
    assert curve.get_column("cost").min() == pytest.approx(brute)
    frame = tables_of(scores, labels).queries.select("label", "prob")
    weights = np.random.default_rng(len(cases)).integers(1, 4, size=(len(cases), 4)).astype(float)
    metric = MinimumCost(fp_cost=fp_cost, fn_cost=fn_cost)
    under = metric.values_under(frame, weights)
    for column in range(4):
        expected = metric.compute(frame.lazy().with_columns(pl.Series("_weight", weights[:, column])), by=[]).collect()
        value = expected.get_column("value").item()
        assert (value is None and np.isnan(under[column])) or under[column] == pytest.approx(value)


def test_hand_cases_no_negatives_and_zero_cost_baseline():
    ev = ef.evaluate(tables_of([0.9, 0.8], [1, 1]), metrics=["detection_rate@fpr=0.01", f"cost_reduction_vs_baseline{COSTS}"])
    rows = {m: (v, note) for m, v, note in ev.summary.select("metric", "value", "note").iter_rows()}
    assert rows["detection_rate@fpr=0.01"][0] is None and "no negative" in rows["detection_rate@fpr=0.01"][1]
    ev = ef.evaluate(tables_of([0.9, 0.1], [0, 0]), metrics=[f"cost_reduction_vs_baseline{COSTS}"])
    value, note = ev.summary.select("value", "note").row(0)
    assert value is None and "baseline" in note
    with pytest.raises(ConfigError, match="fp_cost"):
        resolve("total_cost(fp_cost=-1,fn_cost=3)")
    assert resolve("total_cost").name == "total_cost(fp_cost=1,fn_cost=1)"  # undeclared costs: errors counted
    with pytest.raises(ConfigError):
        DetectionRateAtFPR(fpr=0.0)
    # Shared parameters reach cost metrics from a pipeline's `parameters:` block.
    metric = resolve("total_cost", defaults={"fp_cost": 1.0, "fn_cost": 2.0})
    assert metric.name == "total_cost(fp_cost=1,fn_cost=2)"


def test_minimum_cost_threshold_and_curve():
    labels = np.array([1, 0, 1, 0, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.2, 0.1])
    curve = cost_curve(labels, scores, fp_cost=1, fn_cost=5)
    assert curve.get_column("cost").to_list() == [10.0, 5.0, 6.0, 1.0, 2.0, 3.0]
    got = values(ef.evaluate(tables_of(scores, labels), metrics=["min_cost(fp_cost=1,fn_cost=5)", "min_cost_threshold(fp_cost=1,fn_cost=5)"]))
    assert got["min_cost(fp_cost=1,fn_cost=5)"] == 1.0
    assert got["min_cost_threshold(fp_cost=1,fn_cost=5)"] == 0.7


def brute_force_min_cost_threshold(labels, scores, weights, fp_cost, fn_cost) -> float:
    """The data set with each row repeated ``weight`` times (what a bootstrap replicate is), every
    distinct score tried as the threshold: the highest score at the least cost, nan when flagging
    nothing costs no more."""
    keep = weights > 0
    labels, scores, weights = labels[keep], scores[keep], weights[keep]
    nothing = (weights * labels).sum() * fn_cost
    costs = {t: (weights * ((scores >= t) & (labels == 0))).sum() * fp_cost + (weights * ((scores < t) & (labels == 1))).sum() * fn_cost
             for t in np.unique(scores)}
    if not costs or min(costs.values()) >= nothing:
        return np.nan
    least = min(costs.values())
    return max(t for t, cost in costs.items() if cost == least)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 8), st.lists(st.sampled_from([0, 0, 1, 2, 3]), min_size=5, max_size=5)),
                min_size=1, max_size=30),
       st.sampled_from([0, 1, 3, 10]), st.sampled_from([0, 1, 3, 10]))
def test_min_cost_threshold_replicates_equal_a_brute_force_resample(cases, fp_cost, fn_cost):
    labels = np.array([c[0] for c in cases])
    scores = np.array([c[1] for c in cases]) / 8
    weights = np.array([c[2] for c in cases], dtype=float)
    frame = pl.DataFrame({"label": labels, "prob": scores})
    metric = MinimumCostThreshold(fp_cost=fp_cost, fn_cost=fn_cost)
    under = metric.values_under(frame, weights)  # the engine's replicate path (weight matrices)
    for column in range(weights.shape[1]):
        expected = brute_force_min_cost_threshold(labels, scores, weights[:, column], fp_cost, fn_cost)
        assert (np.isnan(expected) and np.isnan(under[column])) or under[column] == expected
        polars = metric.compute(frame.lazy().with_columns(pl.Series("_weight", weights[:, column])), by=[]).collect()
        value = polars.get_column("value").item()
        assert (value is None and np.isnan(expected)) or value == expected


def test_min_cost_threshold_has_a_bootstrap_interval():
    labels = np.array([1, 0, 1, 0, 0, 1, 0, 0, 1, 0] * 6)
    scores = np.round(np.random.default_rng(3).random(60) * 0.5 + labels * 0.4, 3)
    name = "min_cost_threshold(fp_cost=1,fn_cost=5)"
    ev = ef.evaluate(tables_of(scores, labels), metrics=[name], bootstrap=ef.Bootstrap(resamples=200, seed=1))
    value, low, high = ev.summary.select("value", "ci_low", "ci_high").row(0)
    brute = brute_force_min_cost_threshold(labels, scores, np.ones(60), 1, 5)
    assert value == brute and low is not None and low < high and low <= value <= high


def test_time_to_detection():
    onset = [0.0, 10.0, 20.0, 30.0]
    detected = [5.0, None, 26.0, 31.0]
    summary = time_to_detection_summary(onset, detected)
    delays = np.array([5.0, 6.0, 1.0])
    assert summary == {"mean_ttd": pytest.approx(delays.mean()), "median_ttd": 5.0, "p95_ttd": pytest.approx(np.percentile(delays, 95)),
                       "detection_rate": 0.75, "n_undetected": 1}
    queries = pl.DataFrame({"query_id": ["a", "b", "c", "d"], "onset": ["2024-01-01 00:00:00", "2024-01-01 00:00:10",
                                                                       "2024-01-01 00:00:20", "2024-01-01 00:00:30"],
                            "detected_at": ["2024-01-01 00:00:05", None, "2024-01-01 00:00:26", "2024-01-01 00:00:31"]})
    ev = ef.evaluate(ef.Tables(queries=queries, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})),
                     metrics=["time_to_detection", "detected"])
    rows = {r["metric"]: r for r in ev.summary.to_dicts()}
    assert rows["time_to_detection"]["value"] == pytest.approx(4.0)
    assert rows["time_to_detection"]["median"] == 5.0
    assert rows["time_to_detection"]["n_skipped"] == 1
    assert rows["detected"]["value"] == 0.75
    assert time_to_detection_summary([1.0], [None])["detection_rate"] == 0.0


def test_the_difference_from_tpr_at_fpr():
    labels = [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    scores = np.linspace(1.0, 0.0, len(labels))
    got = values(ef.evaluate(tables_of(scores, labels), metrics=["detection_rate@fpr=0.1", "tpr@fpr=0.1", "actual_fpr@fpr=0.1"]))
    assert got == {"detection_rate@fpr=0.1": 0.5, "tpr@fpr=0.1": 1.0, "actual_fpr@fpr=0.1": 0.1}
    assert chapter_detection(scores, np.array(labels), 0.1)["detection_rate"] == 0.5
