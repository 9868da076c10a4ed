"""Set-metric states (``SetMetric.state`` / ``finalize``): weights, merging, order independence.

Run over every set metric of the classification and calibration families:

- integer weights give the values of the table with each row repeated that many times;
- the state of disjoint parts, merged with ``merge_states``, finalizes to the value of the whole
  (exactly with integer weights, to 1e-12 with float weights);
- shuffling the rows (or the state's rows) changes no bit of any value;
- the state's shape: its keys, columns and sharing (``state_id``).

The values themselves are checked against scikit-learn in ``test_classification_metrics.py`` and
against a NumPy reference in ``test_calibration_metrics.py``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_curve

from evalframe.metrics.base import WEIGHT, Level, SetMetric, merge_states
from evalframe.metrics.calibration import ExpectedCalibrationError
from evalframe.metrics.confusion import CONFUSION_METRICS
from evalframe.metrics.roc import AUPRC, AUROC, ROC_POINTS_STATE, TPRAtFPR
from evalframe.metrics.gate import GATE_METRICS
from evalframe.metrics.registry import available

TOLERANCE = 1e-12

SET_METRICS: list[SetMetric] = [
    AUROC(),
    AUPRC(),
    TPRAtFPR(0.1),
    TPRAtFPR(1 / 3),
    *(metric_type() for metric_type in CONFUSION_METRICS),
    *(metric_type(threshold=0.3) for metric_type in CONFUSION_METRICS),
    ExpectedCalibrationError(),
    ExpectedCalibrationError(bins=3),
    # The gate's states from prob (the `state` column variant reads no prob: pinned in test_gate_metrics.py).
    *(metric_type(tau_neg=0.3, tau_pos=0.6) for metric_type in GATE_METRICS),
]


def is_count(metric: SetMetric) -> bool:
    """tp, tn, fp, fn: weighted counts, which scale with the weights."""
    return metric.summary == "sum"


SCHEMA = {"fold": pl.Int64, "label": pl.Int64, "prob": pl.Float64, WEIGHT: pl.Float64}
probs = st.one_of(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 1.0]), st.floats(0.0, 1.0), st.none())
integer_weights = st.integers(0, 4).map(float)
float_weights = st.one_of(st.just(0.0), st.floats(0.001, 100.0))


@st.composite
def tables(draw, weights=integer_weights | float_weights):
    """Rows (fold, label, prob, weight) over 1–3 folds; a few probs are missing (rows not used)."""
    n_folds = draw(st.integers(1, 3))
    row = st.tuples(st.integers(0, n_folds - 1), st.integers(0, 1), probs, weights)
    return pl.DataFrame(draw(st.lists(row, min_size=1, max_size=40)), schema=SCHEMA, orient="row")


def compute(metric: SetMetric, table: pl.DataFrame, by=("fold",)) -> pl.DataFrame:
    return metric.compute(table.lazy(), list(by)).collect()


def value_bits(result: pl.DataFrame) -> list[int | None]:
    """The value column's bits (so that 0.0 and -0.0, or two nearby floats, differ)."""
    return [None if v is None else int(np.float64(v).view(np.int64)) for v in result["value"].to_list()]


def close(left: float | None, right: float | None, *, rel: float = TOLERANCE) -> bool:
    """Both null, or within 1e-12 (absolute, and relative ``rel`` for large counts)."""
    if left is None or right is None:
        return left is right
    return left == pytest.approx(right, abs=TOLERANCE, rel=rel)


def assert_same_bits(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert left.drop("value").equals(right.drop("value"))
    assert value_bits(left) == value_bits(right)


def test_the_list_covers_every_registered_set_metric():
    # The query-unit set metrics (the per-post ones are pinned in test_multilabel_metrics.py).
    registered = {spec.build for spec in available()}
    # RAG set metrics (text, timing and robustness states) are pinned in test_rag_metrics.py; the
    # recommendation and detection families (issue 25) in test_recommendation_metrics.py and
    # test_detection_metrics.py.
    own_tests = {"evalframe.metrics.generation_bleu", "evalframe.metrics.robustness", "evalframe.metrics.additional",
                 "evalframe.metrics.recommendation", "evalframe.metrics.detection"}
    set_types = {build for build in registered
                 if isinstance(build, type) and issubclass(build, SetMetric) and build.unit == "query"
                 and build.__module__ not in own_tests}
    assert set_types == {type(metric) for metric in SET_METRICS}
    assert all(metric.level is Level.SET for metric in SET_METRICS)


# --- weights are repetitions -----------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(table=tables(weights=integer_weights))
def test_integer_weights_equal_repeated_rows(table):
    # Each row w times with unit weight (no weight column: compute adds 1.0).
    repeated = table.select(pl.exclude(WEIGHT).repeat_by(pl.col(WEIGHT).cast(pl.Int64)).explode()).drop_nulls("fold")
    used = table.filter(pl.col("prob").is_not_null())
    # A fold whose used rows all weigh 0 has no used row once repeated: compared separately.
    folds_with_weight = set(used.filter(pl.col(WEIGHT) > 0)["fold"])
    for metric in SET_METRICS:
        values = compute(metric, table)
        weighted = values.filter(pl.col("fold").is_in(folds_with_weight))
        again = compute(metric, repeated).filter(pl.col("fold").is_in(folds_with_weight))
        assert weighted["fold"].to_list() == again["fold"].to_list()
        # n counts rows used (zero-weight rows too), not weight.
        rows_used = dict(used.group_by("fold").len().iter_rows())
        assert weighted["n"].to_list() == [rows_used.get(fold, 0) for fold in weighted["fold"]]
        assert weighted["note"].to_list() == again["note"].to_list(), metric.name
        if isinstance(metric, ExpectedCalibrationError):
            # Σ w·prob and prob added w times round differently: equal to 1e-12, not bit for bit.
            for mine, theirs in zip(weighted["value"], again["value"], strict=True):
                assert close(mine, theirs, rel=0)
        else:  # weighted counts are exact integers: the same state, the same bits
            assert value_bits(weighted) == value_bits(again), metric.name
        weightless = values.filter(pl.col("fold").is_in(folds_with_weight).not_() & (pl.col("n") > 0))
        assert weightless["value"].to_list() == [0.0 if is_count(metric) else None] * weightless.height


@pytest.mark.parametrize("metric", SET_METRICS, ids=str)
def test_unit_weights_are_the_default(metric):
    table = pl.DataFrame({"fold": [0, 0, 0, 1, 1], "label": [1, 0, 1, 0, 1], "prob": [0.9, 0.4, 0.4, 0.6, 0.2]})
    with_weights = table.with_columns(pl.lit(1.0).alias(WEIGHT))
    assert_same_bits(compute(metric, table), compute(metric, with_weights))
    doubled = table.with_columns(pl.lit(2.0).alias(WEIGHT))
    if not is_count(metric):
        assert_same_bits(compute(metric, table), compute(metric, doubled))


@settings(max_examples=15, deadline=None)
@given(table=tables(weights=float_weights), exponent=st.sampled_from([-60, -20, 20, 60]))
def test_scaling_every_weight_by_a_power_of_two_changes_no_ratio(table, exponent):
    # The fixed-point units of the weighted counts follow the largest weight, so tiny and huge
    # weights are added as exactly as weights near 1.
    scaled = table.with_columns(pl.col(WEIGHT) * 2.0**exponent)
    for metric in SET_METRICS:
        before, after = compute(metric, table), compute(metric, scaled)
        if is_count(metric):
            assert value_bits(after.with_columns(pl.col("value") / 2.0**exponent)) == value_bits(before)
        else:
            assert_same_bits(before, after)


# --- merging the states of parts -------------------------------------------------------------


def states_by_id(metrics):
    groups: dict[object, list[SetMetric]] = {}
    for metric in metrics:
        groups.setdefault(metric.state_id, []).append(metric)
    return groups


def near_fpr_target(rows: pl.DataFrame, target: float) -> bool:
    """Whether an operating point of the rows has an FPR within rounding of the target."""
    rows = rows.filter(pl.col("prob").is_not_null() & (pl.col(WEIGHT) > 0))
    if rows.filter(pl.col("label") == 0).height == 0 or rows.filter(pl.col("label") == 1).height == 0:
        return False
    fpr, _, _ = roc_curve(rows["label"], rows["prob"], sample_weight=rows[WEIGHT], drop_intermediate=False)
    return bool(np.any(np.abs(fpr - target) < 1e-9))


@settings(max_examples=15, deadline=None)
@given(data=st.data(), exact=st.booleans(), by=st.sampled_from([["fold"], []]))
def test_merged_states_of_parts_finalize_to_the_whole(data, exact, by):
    table = data.draw(tables(weights=integer_weights if exact else float_weights))
    n_parts = data.draw(st.integers(1, 8))
    part_of = data.draw(st.lists(st.integers(0, n_parts - 1), min_size=table.height, max_size=table.height))
    table = table.with_columns(part=pl.Series(part_of))
    for members in states_by_id(SET_METRICS).values():
        first = members[0]
        parts = [first.state(table.filter(pl.col("part") == part).lazy(), by) for part in range(n_parts)]
        merged = merge_states(parts, by, first.state_keys).collect().lazy()
        for metric in members:
            whole = metric.compute(table.lazy(), by).collect()
            again = metric.finalize(merged, by).collect()
            assert again.columns == whole.columns
            assert again.drop("value", "note").equals(whole.drop("value", "note"))  # keys and n, exactly
            if exact and not isinstance(metric, ExpectedCalibrationError):
                # Integer weights: every weighted count, and so every value, is exact. (ECE's
                # Σ w·prob is not a count: its sums of parts round apart.)
                assert_same_bits(again, whole)
                continue
            for row, other in zip(whole.iter_rows(named=True), again.iter_rows(named=True), strict=True):
                assert row["note"] == other["note"]
                if close(row["value"], other["value"]):
                    continue
                # The one jump: an FPR on the target itself, where a last bit decides the side.
                assert isinstance(metric, TPRAtFPR), metric.name
                slice_rows = table.filter(pl.col("fold") == row["fold"]) if by else table
                assert near_fpr_target(slice_rows, metric.fpr)


def test_merging_needs_every_part_only_once():
    table = pl.DataFrame({"fold": [0, 0, 0, 0], "label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1],
                          WEIGHT: [1.0, 2.0, 0.5, 1.0]})
    metric = AUROC()
    halves = [metric.state(table.lazy().slice(0, 2), ["fold"]), metric.state(table.lazy().slice(2), ["fold"])]
    merged = metric.finalize(merge_states(halves, ["fold"], metric.state_keys), ["fold"]).collect()
    assert merged.row(0) == (0, 4, 4 / 4.5, None)
    twice = metric.finalize(merge_states([*halves, halves[0]], ["fold"], metric.state_keys), ["fold"]).collect()
    assert twice.row(0) != merged.row(0)  # a part counted twice is a different table


# --- order independence ----------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_shuffled_rows_give_the_same_bits(data):
    table = data.draw(tables(weights=float_weights))
    order = data.draw(st.permutations(range(table.height)))
    shuffled = table[list(order)]
    for metric in SET_METRICS:
        for by in (["fold"], []):
            assert_same_bits(compute(metric, table, by), compute(metric, shuffled, by))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_finalize_does_not_depend_on_the_order_of_state_rows(data):
    table = data.draw(tables(weights=float_weights))
    for members in states_by_id(SET_METRICS).values():
        state = members[0].state(table.lazy(), ["fold"]).collect()
        order = data.draw(st.permutations(range(state.height)))
        for metric in members:
            expected = metric.finalize(state.lazy(), ["fold"]).collect()
            assert_same_bits(metric.finalize(state[list(order)].lazy(), ["fold"]).collect(), expected)


def test_equal_sums_in_any_order_on_a_larger_table():
    # Float weights whose plain sum depends on the order of addition.
    rng = np.random.default_rng(3)
    n = 5_000
    table = pl.DataFrame({"fold": rng.integers(0, 3, n), "label": rng.integers(0, 2, n),
                          "prob": rng.random(n).round(1), WEIGHT: rng.random(n) * 10.0 ** rng.integers(-3, 4, n)})
    for metric in SET_METRICS:
        expected = compute(metric, table)
        for seed in range(3):
            assert_same_bits(compute(metric, table.sample(fraction=1.0, shuffle=True, seed=seed)), expected)


# --- the states themselves -------------------------------------------------------------------

TABLE = pl.DataFrame({"fold": [0, 0, 0, 0, 1, 1, 2], "label": [1, 0, 1, 0, 0, None, 1],
                      "prob": [0.9, 0.4, 0.4, 0.1, 0.7, 0.2, None], WEIGHT: [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 1.0]})


def test_roc_metrics_share_the_roc_points():
    ids = {metric.state_id for metric in (AUROC(), AUPRC(), TPRAtFPR(0.1), TPRAtFPR(0.5))}
    assert ids == {ROC_POINTS_STATE}
    state = AUROC().state(TABLE.lazy(), ["fold"]).collect().sort("fold", "prob", nulls_last=True)
    assert AUROC().state_keys == ("prob",)
    assert state.schema == pl.Schema({"fold": pl.Int64, "prob": pl.Float64, "n": pl.Int64,
                                      "positive_weight": pl.Float64, "negative_weight": pl.Float64})
    assert state.rows() == [
        (0, 0.1, 1, 0.0, 1.0), (0, 0.4, 2, 0.5, 2.0), (0, 0.9, 1, 1.0, 0.0),
        (1, 0.7, 1, 0.0, 3.0), (1, None, 0, 0.0, 0.0),  # the unused row keeps the slice
        (2, None, 0, 0.0, 0.0),
    ]


def test_confusion_metrics_share_the_counts_of_their_threshold():
    metrics = [metric_type(threshold=0.4) for metric_type in CONFUSION_METRICS]
    assert {metric.state_id for metric in metrics} == {("confusion", 0.4)}
    assert CONFUSION_METRICS[0]().state_id == ("confusion", 0.5)
    assert metrics[0].state_keys == ()
    state = metrics[0].state(TABLE.lazy(), ["fold"]).collect().sort("fold")
    assert state.schema == pl.Schema({"fold": pl.Int64, "n": pl.Int64, "tp": pl.Float64, "fp": pl.Float64,
                                      "tn": pl.Float64, "fn": pl.Float64})
    assert state.rows() == [(0, 4, 1.5, 2.0, 1.0, 0.0), (1, 1, 0.0, 3.0, 0.0, 0.0), (2, 0, 0.0, 0.0, 0.0, 0.0)]
    whole = metrics[0].state(TABLE.lazy(), []).collect()
    assert whole.rows() == [(5, 1.5, 5.0, 1.0, 0.0)]


def test_state_id_groups_are_disjoint_kinds():
    ids = {metric.state_id for metric in SET_METRICS}
    assert ids == {ROC_POINTS_STATE, ("confusion", 0.5), ("confusion", 0.3), ("calibration_bins", 10),
                   ("calibration_bins", 3), ("gate", 0.3, 0.6)}


@pytest.mark.parametrize("metric", SET_METRICS, ids=str)
def test_state_has_one_row_per_key(metric):
    state = metric.state(TABLE.lazy(), ["fold"]).collect()
    keys = ["fold", *metric.state_keys]
    assert state.select(keys).is_duplicated().sum() == 0
    sums = {name: dtype for name, dtype in state.schema.items() if name not in keys}
    assert sums["n"] == pl.Int64
    assert len(sums) > 1 and all(dtype == pl.Float64 for name, dtype in sums.items() if name != "n")


def test_roc_points_of_many_distinct_probabilities_take_one_group_by():
    rows = pl.LazyFrame({"fold": [0, 1], "label": [1, 0], "prob": [0.3, 0.2], WEIGHT: [1.0, 1.0]})
    assert AUROC().state(rows, ["fold"]).explain().count("AGGREGATE") == 1
