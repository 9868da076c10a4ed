"""Calibration metrics (contract §2.4): Brier against scikit-learn, ECE against a reference.

scikit-learn has no ECE, so :func:`reference_ece` below is written straight from the
definition: equal-width bins ``[b/B, (b+1)/B)``, the last one closed, weighted by bin size.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import brier_score_loss

from evalframe.errors import ConfigError
from evalframe.metrics.base import Level, TargetCategory
from evalframe.metrics.calibration import Brier, ExpectedCalibrationError
from evalframe.metrics.set_values import NO_SCORED_QUERY, NO_WEIGHT
from evalframe.metrics.registry import resolve

TOLERANCE = 1e-12
#: Probabilities exactly on bin edges of 10 (and other) equal-width bins.
EDGE_PROBS = [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0, 0.25, 0.75, 1 / 3, 2 / 3]


def reference_ece(labels, probs, bins: int) -> float:
    """ECE from its definition, one bin at a time in plain Python."""
    n = len(probs)
    total = 0.0
    for b in range(bins):
        lower, upper = b / bins, (b + 1) / bins
        last = b == bins - 1
        members = [i for i, prob in enumerate(probs) if lower <= prob and (prob < upper or (last and prob <= 1.0))]
        if members:
            mean_prob = sum(probs[i] for i in members) / len(members)
            mean_label = sum(labels[i] for i in members) / len(members)
            total += len(members) / n * abs(mean_prob - mean_label)
    return total


def build_queries() -> pl.DataFrame:
    rng = np.random.default_rng(31337)
    frames = []
    for fold, size, decimals in (("fold_a", 500, 2), ("fold_b", 61, 1), ("fold_c", 2000, 3)):
        probs = rng.random(size).round(decimals)
        probs[: len(EDGE_PROBS)] = EDGE_PROBS
        labels = (rng.random(size) < probs**1.3).astype(int)  # slightly miscalibrated
        frames.append(pl.DataFrame({"fold": fold, "label": labels, "prob": probs}))
    frames.append(pl.DataFrame({"fold": "one_class", "label": [0, 0, 0], "prob": [0.1, 0.95, 0.5]}))
    frames.append(pl.DataFrame({"fold": ["fold_a", "unscored", "unscored"], "label": [None, 1, None],
                                "prob": [0.2, None, 0.4]}))
    table = pl.concat(frames, how="vertical_relaxed").cast({"fold": pl.String, "label": pl.Int64, "prob": pl.Float64})
    return table.sample(fraction=1.0, shuffle=True, seed=5)


QUERIES = build_queries()
SCORED = QUERIES.drop_nulls(["label", "prob"])
FOLDS = ("fold_a", "fold_b", "fold_c", "one_class")


def slice_lists(fold: str) -> tuple[list[int], list[float]]:
    rows = SCORED.filter(pl.col("fold") == fold)
    return rows["label"].to_list(), rows["prob"].to_list()


# --- ECE -------------------------------------------------------------------------------------


def test_bins_follow_the_definition_on_edges():
    probs = pl.DataFrame({"label": [0] * 8, "prob": [0.0, 0.1, 0.5, 0.99, 1.0, 0.3, 0.7, 0.0999]})
    bins = probs.select(ExpectedCalibrationError().bin_index()).to_series().to_list()
    assert bins == [0, 1, 5, 9, 9, 3, 7, 0]
    one_bin = probs.select(ExpectedCalibrationError(bins=1).bin_index()).to_series().to_list()
    assert one_bin == [0] * 8


@pytest.mark.parametrize("bins", [10, 15, 7, 4, 3, 1])
def test_ece_matches_the_reference_per_slice(bins):
    result = ExpectedCalibrationError(bins=bins).compute(QUERIES.lazy(), ["fold"]).collect()
    assert result.schema == pl.Schema({"fold": pl.String, "n": pl.Int64, "value": pl.Float64, "note": pl.String})
    rows = {row["fold"]: row for row in result.iter_rows(named=True)}
    assert set(rows) == {*FOLDS, "unscored"}
    for fold in FOLDS:
        labels, probs = slice_lists(fold)
        assert rows[fold]["n"] == len(labels)
        assert rows[fold]["note"] is None
        assert rows[fold]["value"] == pytest.approx(reference_ece(labels, probs, bins), abs=TOLERANCE, rel=0)
    assert rows["unscored"] == {"fold": "unscored", "n": 0, "value": None, "note": NO_SCORED_QUERY}


def test_ece_hand_computed():
    # Two bins: [0.2, 0.4] with labels [0, 0] and [0.6, 0.9] with labels [1, 1].
    queries = pl.LazyFrame({"label": [0, 1, 0, 1], "prob": [0.2, 0.6, 0.4, 0.9]})
    assert ExpectedCalibrationError(bins=2).compute(queries, []).collect().row(0) == (4, pytest.approx(0.275), None)
    # Perfect calibration in each bin gives 0.
    queries = pl.LazyFrame({"label": [0, 0, 0, 1, 1, 0, 1, 1], "prob": [0.25] * 4 + [0.5, 0.5, 1.0, 1.0]})
    assert ExpectedCalibrationError(bins=2).compute(queries, []).collect().row(0) == (8, 0.0, None)
    # With one bin, ECE is |mean prob − mean label|.
    queries = pl.LazyFrame({"label": [1, 1, 0, 0], "prob": [0.9, 0.8, 0.3, 0.2]})
    assert ExpectedCalibrationError(bins=1).compute(queries, []).collect().item(0, "value") == pytest.approx(0.05)


def test_ece_edge_probabilities_decide_the_value():
    # 0.1 sits in the second of ten bins: [0.1, 0.2) holds it alone (gap |0.1 − 1| = 0.9),
    # while the first bin holds 0.05 (gap 0.05). Putting 0.1 in the first bin would give 0.425.
    queries = pl.LazyFrame({"label": [1, 0], "prob": [0.1, 0.05]})
    value = ExpectedCalibrationError().compute(queries, []).collect().item(0, "value")
    assert value == pytest.approx((0.9 + 0.05) / 2, abs=TOLERANCE)
    assert value == pytest.approx(reference_ece([1, 0], [0.1, 0.05], 10), abs=TOLERANCE)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 1),
                  st.one_of(st.sampled_from(EDGE_PROBS), st.floats(0.0, 1.0, allow_nan=False))),
        min_size=1,
        max_size=50,
    ),
    bins=st.integers(1, 20),
)
def test_ece_matches_the_reference_on_random_slices(rows, bins):
    queries = pl.LazyFrame(rows, schema={"group": pl.Int64, "label": pl.Int64, "prob": pl.Float64}, orient="row")
    result = ExpectedCalibrationError(bins=bins).compute(queries, ["group"]).collect()
    for group, n, value, note in result.iter_rows():
        labels = [label for g, label, _ in rows if g == group]
        probs = [prob for g, _, prob in rows if g == group]
        assert (n, note) == (len(labels), None)
        assert value == pytest.approx(reference_ece(labels, probs, bins), abs=TOLERANCE, rel=0)


def test_ece_without_slice_keys_and_on_empty_input():
    whole = ExpectedCalibrationError().compute(SCORED.lazy(), []).collect()
    labels, probs = SCORED["label"].to_list(), SCORED["prob"].to_list()
    assert whole.columns == ["n", "value", "note"]
    assert whole.item(0, "value") == pytest.approx(reference_ece(labels, probs, 10), abs=TOLERANCE)
    empty = ExpectedCalibrationError().compute(QUERIES.clear().lazy(), []).collect()
    assert empty.row(0) == (0, None, NO_SCORED_QUERY)
    assert ExpectedCalibrationError().compute(QUERIES.clear().lazy(), ["fold"]).collect().height == 0


def test_ece_does_not_depend_on_row_order():
    metric = ExpectedCalibrationError(bins=15)
    by_fold = metric.compute(QUERIES.lazy(), ["fold"]).collect().sort("fold")
    shuffled = QUERIES.sample(fraction=1.0, shuffle=True, seed=99)
    assert metric.compute(shuffled.lazy(), ["fold"]).collect().sort("fold").equals(by_fold)


# --- Brier -----------------------------------------------------------------------------------


def test_brier_slice_mean_matches_brier_score_loss():
    per_query = QUERIES.with_columns(brier=Brier().expr(), reason=Brier().skip_reason())
    means = dict(per_query.group_by("fold").agg(pl.col("brier").mean()).iter_rows())
    for fold in FOLDS:
        labels, probs = slice_lists(fold)
        expected = brier_score_loss(labels, probs, labels=[0, 1])
        assert means[fold] == pytest.approx(expected, abs=TOLERANCE, rel=0)
    assert means["unscored"] is None
    reasons = per_query.filter(pl.col("brier").is_null()).sort("prob", nulls_last=True)["reason"].to_list()
    assert reasons == ["no label", "no label", "no prob"]
    assert per_query.filter(pl.col("brier").is_not_null())["reason"].null_count() == per_query["brier"].count()


def test_brier_per_query_values():
    queries = pl.DataFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.0, 1.0]})
    assert queries.select(Brier().expr()).to_series().to_list() == pytest.approx([0.01, 0.16, 1.0, 1.0])


# --- metadata and names ----------------------------------------------------------------------


def test_metadata():
    assert Brier().level is Level.QUERY
    assert ExpectedCalibrationError().level is Level.SET
    for metric in (Brier(), ExpectedCalibrationError()):
        assert metric.target is TargetCategory.CALIBRATION
        assert metric.higher_is_better is False
        assert metric.subset == "all queries"
        assert metric.required_columns == {"queries": ("label", "prob")}
        assert metric.summary == "mean"


@pytest.mark.parametrize("name", ["brier", "ece", "ece(bins=15)", "ece(bins=1)"])
def test_canonical_names_parse_back_to_an_equal_metric(name):
    metric = resolve(name)
    assert metric.name == name
    assert resolve(metric.name) == metric


def test_names():
    assert resolve("ece(bins=15)") == ExpectedCalibrationError(bins=15)
    assert resolve("ece(bins=10)").name == "ece"
    assert resolve("brier_score") == Brier()
    assert resolve("ECE") == ExpectedCalibrationError()


@pytest.mark.parametrize("text", ["ece(bins=0)", "ece(bins=2.5)", "ece(bins=-3)", "ece@10", "brier(bins=3)"])
def test_bad_parameters_are_config_errors(text):
    with pytest.raises(ConfigError):
        resolve(text)


def test_bins_must_be_a_whole_number():
    with pytest.raises(ConfigError):
        ExpectedCalibrationError(bins=True)
    with pytest.raises(ConfigError):
        ExpectedCalibrationError(bins=2.0)


# --- weights ---------------------------------------------------------------------------------


def reference_weighted_ece(labels, probs, weights, bins: int) -> float:
    """Weighted ECE from its definition in plain NumPy: Σ_b |Σ_b w·prob − Σ_b w·label| / Σ w."""
    labels, probs, weights = (np.asarray(x, dtype=float) for x in (labels, probs, weights))
    gaps = 0.0
    for b in range(bins):
        lower, upper = b / bins, (b + 1) / bins
        members = (probs >= lower) & ((probs < upper) | ((b == bins - 1) & (probs <= 1.0)))
        gaps += abs(np.sum(weights[members] * probs[members]) - np.sum(weights[members] * labels[members]))
    return gaps / np.sum(weights)


@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    n_folds=st.integers(1, 3),
    bins=st.integers(1, 20),
)
def test_weighted_ece_matches_the_reference_per_fold(data, n_folds, bins):
    probs = st.one_of(st.sampled_from(EDGE_PROBS), st.floats(0.0, 1.0))
    weights = st.one_of(st.integers(0, 5).map(float), st.floats(0.001, 100.0))
    rows = data.draw(st.lists(st.tuples(st.integers(0, n_folds - 1), st.integers(0, 1), probs, weights),
                              min_size=1, max_size=50))
    queries = pl.LazyFrame(rows, schema={"fold": pl.Int64, "label": pl.Int64, "prob": pl.Float64,
                                         "_weight": pl.Float64}, orient="row")
    result = ExpectedCalibrationError(bins=bins).compute(queries, ["fold"]).collect()
    assert sorted(result["fold"]) == sorted({fold for fold, *_ in rows})
    for fold, n, value, note in result.iter_rows():
        mine = [row for row in rows if row[0] == fold]
        labels, probs_, weights_ = ([row[i] for row in mine] for i in (1, 2, 3))
        assert n == len(mine)  # rows, not weight
        if sum(weights_) == 0:
            assert (value, note) == (None, NO_WEIGHT)
        else:
            assert note is None
            expected = reference_weighted_ece(labels, probs_, weights_, bins)
            assert value == pytest.approx(expected, abs=TOLERANCE, rel=0)


def test_weighted_ece_hand_computed():
    # Two bins: [0.2 (w 3), 0.4 (w 1)] with labels [0, 1]: |0.6 + 0.4 − 1| = 0; [0.9 (w 2)] with
    # label 0: |1.8 − 0| = 1.8. ECE = 1.8 / 6 = 0.3.
    queries = pl.LazyFrame({"label": [0, 1, 0], "prob": [0.2, 0.4, 0.9], "_weight": [3.0, 1.0, 2.0]})
    assert ExpectedCalibrationError(bins=2).compute(queries, []).collect().row(0) == (3, pytest.approx(0.3), None)
    # Weight 0 leaves a row out of the value but not out of n; all weights 0: no value.
    queries = pl.LazyFrame({"label": [0, 1], "prob": [0.2, 0.9], "_weight": [0.0, 0.0]})
    assert ExpectedCalibrationError().compute(queries, []).collect().row(0) == (2, None, NO_WEIGHT)


def test_ece_state_is_per_bin_sums():
    queries = pl.LazyFrame({"fold": ["a", "a", "a", "b"], "label": [0, 1, 1, None], "prob": [0.25, 0.375, 0.75, 0.5],
                            "_weight": [1.0, 3.0, 2.0, 1.0]})
    metric = ExpectedCalibrationError(bins=2)
    state = metric.state(queries, ["fold"]).collect().sort("fold", "bin", nulls_last=True)
    assert metric.state_keys == ("bin",)
    assert metric.state_id == ExpectedCalibrationError(bins=2).state_id != ExpectedCalibrationError().state_id
    assert state.columns == ["fold", "bin", "n", "weight", "weighted_prob", "weighted_label"]
    assert state.rows() == [("a", 0, 2, 4.0, 1.375, 3.0), ("a", 1, 1, 2.0, 1.5, 2.0), ("b", None, 0, 0.0, 0.0, 0.0)]
