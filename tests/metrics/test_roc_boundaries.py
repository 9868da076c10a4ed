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
