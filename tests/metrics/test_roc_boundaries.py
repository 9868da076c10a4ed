"""TPR@FPR at a point whose false positive rate is exactly the target (FP / W_neg = fpr in IEEE
division, as scikit-learn's ``fps / fps[-1]``): the point is within the target on the data, in
the bootstrap's replicates, and in scikit-learn alike."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import roc_curve

from evalframe.metrics.base import WEIGHT, SetMetric
from evalframe.metrics.registry import resolve

# 147 / 4900 is 0.03 in IEEE division, but 147 · (1 / 4900) is 0.030000000000000002.
FRAME = pl.DataFrame({"label": [0, 1, 0, 1], "prob": [0.9, 0.8, 0.1, 0.05], WEIGHT: [147.0, 1.0, 4753.0, 1.0]})


def _sklearn(fpr: float) -> float:
    rates, tpr, _ = roc_curve(FRAME["label"], FRAME["prob"], sample_weight=FRAME[WEIGHT], drop_intermediate=False)
    return float(tpr[rates <= fpr].max())


@pytest.mark.parametrize("fpr", [0.03, 0.02, 0.5])
def test_a_point_exactly_at_the_target_counts(fpr):
    metric = resolve(f"tpr@fpr={fpr}")
    on_data = metric.compute(FRAME.lazy(), []).collect().get_column("value").item()
    assert on_data == _sklearn(fpr)
    weights = FRAME.get_column(WEIGHT).to_numpy()[:, None]
    rows = FRAME.drop(WEIGHT)
    assert metric.values_under(rows, weights)[0] == on_data  # the bootstrap's path
    stacked = SetMetric.values_from_replicate_state(metric, SetMetric.replicate_state(metric, rows, weights))
    assert stacked[0] == on_data  # finalize of the generic stacked state
    if fpr == 0.03:
        assert on_data == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_the_bisection_counts_the_points_each_division_counts(seed):
    """``RocCurves.points_within`` (a bisection over the running FP) counts the negative points
    whose ``FP / W_neg`` is within the target exactly as dividing at every point does: whole and
    fractional weights, weights of 0, a column without negative weight, points exactly at the
    target, and no negative point at all."""
    from evalframe.metrics.roc import RocCurves

    rng = np.random.default_rng(seed)
    columns, points = 9, int(rng.integers(0, 40))
    negative = np.where(rng.random((columns, points)) < 0.3, 0.0, rng.integers(1, 5, (columns, points)).astype(np.float64))
    if seed % 2:
        negative = negative * rng.random((columns, points))
    negative[0] = 0.0  # no negative weight: W_neg = 0
    curves = RocCurves(np.ones((columns, 1)), negative, np.zeros(1, np.int64), np.arange(points), np.ones(columns, np.int64),
                       whole=False, positive_prob=np.zeros((1, 1)), negative_prob=np.zeros((1, points)))
    fp = np.cumsum(negative, axis=1)
    exact_targets = [fp[c, k] / fp[c, -1] for c in range(1, columns) for k in range(points) if fp[c, -1] > 0][:5]
    for target in [1e-9, 0.01, 0.03, 0.25, 0.5, 0.999, 1.0, *exact_targets]:
        with np.errstate(invalid="ignore", divide="ignore"):
            counted = np.count_nonzero(fp / curves.total_negative[:, None] <= target, axis=1)
        np.testing.assert_array_equal(curves.points_within(target), counted, err_msg=str(target))


@pytest.mark.parametrize("points", [0, 1, 127, 128, 129, 300])
def test_running_sums_made_by_point_have_the_bits_of_one_running_sum(points):
    """``RocCurves`` made from points × C weights (the dense state's layout) transpose and sum
    them block by block: the running sums, and the class weights read afterwards, are bit for
    bit those of the C × points form (fractional weights, across block boundaries)."""
    from evalframe.metrics.roc import RocCurves

    rng = np.random.default_rng(points)
    positive = rng.random((points, 5)) * rng.integers(0, 3, (points, 5))
    negative = rng.random((points + 3, 5)) / 3
    kwargs = dict(n=np.ones(5, np.int64), whole=False, positive_prob=np.zeros((1, points)),
                  negative_prob=np.zeros((1, points + 3)))
    by_point = RocCurves(positive, negative, np.arange(points), np.arange(points + 3), by_point=True, **kwargs)
    by_column = RocCurves(positive.T.copy(), negative.T.copy(), np.arange(points), np.arange(points + 3), **kwargs)
    for name in ("tp", "fp", "total_positive", "total_negative", "positive", "negative"):
        one, two = getattr(by_point, name), getattr(by_column, name)
        assert one.shape == two.shape, name
        np.testing.assert_array_equal(one.view(np.uint64), two.view(np.uint64), err_msg=name)
