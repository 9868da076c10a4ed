"""Classification metrics (contract §2.1–2.3) against scikit-learn, slice by slice.

Oracles: ``roc_auc_score``, ``average_precision_score``, ``roc_curve(drop_intermediate=False)``,
``confusion_matrix`` and the confusion-family scores, on slices where the metric is defined.
Where it is not, evalframe's value is null with a note (scikit-learn's ``zero_division``
conventions are not ours), checked on hand-built slices.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    average_precision_score,
    balanced_accuracy_score,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
    roc_curve,
)

from evalframe.errors import ConfigError
from evalframe.metrics.base import Level, TargetCategory, merge_states, with_unit_weights
from evalframe.metrics.confusion import (
    CONFUSION_METRICS,
    ConfusionMetric,
    F1Score,
    MatthewsCorrelation,
    PositivePredictiveValue,
    Sensitivity,
    Specificity,
)
from evalframe.metrics.roc import AUPRC, AUROC, TPRAtFPR
from evalframe.metrics.set_values import (
    NO_NEGATIVE,
    NO_POSITIVE,
    NO_POSITIVE_NOR_PREDICTED,
    NO_PREDICTED_NEGATIVE,
    NO_PREDICTED_POSITIVE,
    NO_SCORED_QUERY,
    ONE_CLASS,
)
from evalframe.metrics.registry import resolve
from evalframe.metrics.retrieval_basic import PrecisionAtK

TOLERANCE = 1e-12
FPR_TARGETS = (0.01, 0.03, 0.05, 0.1)

# --- the slices ------------------------------------------------------------------------------

#: Hand-built degenerate slices (label, prob); thresholds 0.3 and 0.5 both split them as named.
ONE_CLASS_SLICE = ([0, 0, 0, 0, 0], [0.1, 0.7, 0.5, 0.2, 0.9])
NO_PREDICTED_POSITIVE_SLICE = ([1, 0, 1, 0, 0], [0.2, 0.1, 0.25, 0.05, 0.29])
ALL_POSITIVE_SLICE = ([1, 1, 1, 1, 1], [0.9, 0.2, 0.6, 0.1, 0.45])


def random_slice(rng: np.random.Generator, size: int, positive_rate: float, decimals: int):
    """Labels and probabilities rounded to ``decimals`` (many ties), positives scoring higher."""
    labels = (rng.random(size) < positive_rate).astype(int)
    probs = np.clip(rng.normal(0.35 + 0.3 * labels, 0.2), 0.0, 1.0).round(decimals)
    return labels.tolist(), probs.tolist()


def build_queries() -> pl.DataFrame:
    rng = np.random.default_rng(20240611)
    slices = {
        "fold_a": random_slice(rng, 400, 0.3, 2),
        "fold_b": random_slice(rng, 73, 0.5, 1),
        "fold_c": random_slice(rng, 1500, 0.1, 3),
        "one_class": ONE_CLASS_SLICE,
        "no_predicted_positive": NO_PREDICTED_POSITIVE_SLICE,
        "all_positive": ALL_POSITIVE_SLICE,
    }
    frames = [
        pl.DataFrame(
            {"fold": fold, "label": labels, "prob": probs},
            schema={"fold": pl.String, "label": pl.Int64, "prob": pl.Float64},
        )
        for fold, (labels, probs) in slices.items()
    ]
    # Rows without label or prob are not used; a slice of only such rows has no value.
    unscored = pl.DataFrame(
        {"fold": ["fold_a", "fold_a", "unscored", "unscored"], "label": [None, 1, None, 0],
         "prob": [0.4, None, 0.3, None]},
        schema={"fold": pl.String, "label": pl.Int64, "prob": pl.Float64},
    )
    table = pl.concat([*frames, unscored])
    # Interleave the slices so that a group-by, not the input order, keeps them apart.
    return table.sample(fraction=1.0, shuffle=True, seed=7)


QUERIES = build_queries()
SCORED = QUERIES.drop_nulls(["label", "prob"])
RANDOM_FOLDS = ("fold_a", "fold_b", "fold_c")


def slice_arrays(fold: str) -> tuple[np.ndarray, np.ndarray]:
    rows = SCORED.filter(pl.col("fold") == fold)
    return rows["label"].to_numpy(), rows["prob"].to_numpy()


def compute_by_fold(metric) -> dict[str, dict]:
    result = metric.compute(QUERIES.lazy(), ["fold"]).collect()
    assert result.columns == ["fold", "n", "value", "note"]
    assert result.schema == pl.Schema({"fold": pl.String, "n": pl.Int64, "value": pl.Float64, "note": pl.String})
    assert result["fold"].n_unique() == result.height
    return {row["fold"]: row for row in result.iter_rows(named=True)}


def assert_defined(row: dict, expected: float) -> None:
    assert row["note"] is None
    assert row["value"] == pytest.approx(expected, abs=TOLERANCE, rel=0)


def assert_undefined(row: dict, note: str) -> None:
    assert row["value"] is None
    assert row["note"] == note


def max_tpr_within(labels, probs, target: float) -> float:
    fpr, tpr, _ = roc_curve(labels, probs, drop_intermediate=False)
    return float(tpr[fpr <= target].max())


# --- threshold-free metrics ------------------------------------------------------------------


def test_slices_cover_the_cases_the_tests_claim():
    sizes = dict(QUERIES.group_by("fold").len().iter_rows())
    assert sizes == {"fold_a": 402, "fold_b": 73, "fold_c": 1500, "one_class": 5,
                     "no_predicted_positive": 5, "all_positive": 5, "unscored": 2}
    for fold in RANDOM_FOLDS:
        labels, probs = slice_arrays(fold)
        assert 0 < labels.sum() < len(labels)
        assert len(np.unique(probs)) < len(probs)  # ties


def test_auroc_matches_roc_auc_score_per_slice():
    rows = compute_by_fold(AUROC())
    for fold in (*RANDOM_FOLDS, "no_predicted_positive"):
        labels, probs = slice_arrays(fold)
        assert rows[fold]["n"] == len(labels)
        assert_defined(rows[fold], roc_auc_score(labels, probs))
    assert_undefined(rows["one_class"], ONE_CLASS)
    assert_undefined(rows["all_positive"], ONE_CLASS)
    assert_undefined(rows["unscored"], NO_SCORED_QUERY)
    assert rows["unscored"]["n"] == 0
    assert rows["fold_a"]["n"] == 400  # two rows of fold_a lack a label or a prob


def test_auprc_matches_average_precision_score_per_slice():
    rows = compute_by_fold(AUPRC())
    for fold in (*RANDOM_FOLDS, "no_predicted_positive", "all_positive"):
        labels, probs = slice_arrays(fold)
        assert_defined(rows[fold], average_precision_score(labels, probs))
    assert rows["all_positive"]["value"] == 1.0
    assert_undefined(rows["one_class"], NO_POSITIVE)
    assert_undefined(rows["unscored"], NO_SCORED_QUERY)


@pytest.mark.parametrize("target", FPR_TARGETS)
def test_tpr_at_fpr_matches_roc_curve_per_slice(target):
    rows = compute_by_fold(TPRAtFPR(target))
    for fold in (*RANDOM_FOLDS, "no_predicted_positive"):
        labels, probs = slice_arrays(fold)
        assert_defined(rows[fold], max_tpr_within(labels, probs, target))
    assert_undefined(rows["one_class"], ONE_CLASS)
    assert_undefined(rows["all_positive"], ONE_CLASS)
    assert_undefined(rows["unscored"], NO_SCORED_QUERY)


def test_tpr_at_fpr_values_are_not_all_trivial():
    # Guards the oracle comparison above against passing only on zeros.
    rows = compute_by_fold(TPRAtFPR(0.1))
    assert all(0 < rows[fold]["value"] < 1 for fold in RANDOM_FOLDS)


def test_tpr_at_fpr_never_splits_tied_probabilities():
    # One threshold at 0.7 takes both positives and one negative at once (FPR 0.5): with a
    # target of 0.4 the only reachable point is "nothing positive".
    queries = pl.LazyFrame({"label": [1, 1, 0, 0], "prob": [0.7, 0.7, 0.7, 0.2]})
    assert TPRAtFPR(0.4).compute(queries, []).collect().item(0, "value") == 0.0
    assert TPRAtFPR(0.5).compute(queries, []).collect().item(0, "value") == 1.0
    assert max_tpr_within([1, 1, 0, 0], [0.7, 0.7, 0.7, 0.2], 0.4) == 0.0


def test_hand_computed_values():
    queries = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1]})
    assert AUROC().compute(queries, []).collect().item(0, "value") == 0.875
    queries = pl.LazyFrame({"label": [1, 0, 0, 1], "prob": [0.9, 0.6, 0.5, 0.2]})
    assert AUPRC().compute(queries, []).collect().item(0, "value") == 0.75
    queries = pl.LazyFrame({"label": [1, 0, 1, 1, 0, 1], "prob": [0.9, 0.8, 0.7, 0.6, 0.3, 0.2]})
    assert TPRAtFPR(0.5).compute(queries, []).collect().item(0, "value") == 0.75


labelled_probs = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 1), st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 0.7, 0.95, 1.0])),
    min_size=1,
    max_size=40,
)


@settings(max_examples=30, deadline=None)
@given(rows=labelled_probs, target=st.sampled_from([0.01, 0.2, 0.25, 1 / 3, 0.5, 1.0]))
def test_threshold_free_metrics_match_sklearn_on_random_slices(rows, target):
    queries = pl.LazyFrame(rows, schema={"group": pl.Int64, "label": pl.Int64, "prob": pl.Float64}, orient="row")
    results = {
        metric: {row["group"]: row for row in metric.compute(queries, ["group"]).collect().iter_rows(named=True)}
        for metric in (AUROC(), AUPRC(), TPRAtFPR(target))
    }
    for group in {group for group, _, _ in rows}:
        labels = np.array([label for g, label, _ in rows if g == group])
        probs = np.array([prob for g, _, prob in rows if g == group])
        n_positive = int(labels.sum())
        both_classes = 0 < n_positive < len(labels)
        auroc, auprc, tpr = (results[metric][group] for metric in results)
        assert auroc["n"] == auprc["n"] == tpr["n"] == len(labels)
        if both_classes:
            assert_defined(auroc, roc_auc_score(labels, probs))
            assert_defined(tpr, max_tpr_within(labels, probs, target))
        else:
            assert_undefined(auroc, ONE_CLASS)
            assert_undefined(tpr, ONE_CLASS)
        if n_positive:
            assert_defined(auprc, average_precision_score(labels, probs))
        else:
            assert_undefined(auprc, NO_POSITIVE)


# --- the confusion family --------------------------------------------------------------------


def sklearn_confusion_value(key: str, labels, probs, threshold: float) -> float:
    predicted = (np.asarray(probs) >= threshold).astype(int)
    tn, fp, fn, tp = confusion_matrix(labels, predicted, labels=[0, 1]).ravel()
    scores = {
        "tp": lambda: tp,
        "tn": lambda: tn,
        "fp": lambda: fp,
        "fn": lambda: fn,
        "sensitivity": lambda: recall_score(labels, predicted),
        "specificity": lambda: recall_score(labels, predicted, pos_label=0),
        "fpr": lambda: fp / (fp + tn),
        "ppv": lambda: precision_score(labels, predicted),
        "npv": lambda: precision_score(labels, predicted, pos_label=0),
        "f1": lambda: f1_score(labels, predicted),
        "mcc": lambda: matthews_corrcoef(labels, predicted),
        "balanced_accuracy": lambda: balanced_accuracy_score(labels, predicted),
    }
    return float(scores[key]())


#: The null cells of the hand-built slices; every other cell is compared with scikit-learn.
UNDEFINED_CONFUSION = {
    "one_class": {key: NO_POSITIVE for key in ("sensitivity", "mcc", "balanced_accuracy")},
    "all_positive": {key: NO_NEGATIVE for key in ("specificity", "fpr", "mcc", "balanced_accuracy")},
    "no_predicted_positive": {key: NO_PREDICTED_POSITIVE for key in ("ppv", "mcc")},
}


@pytest.mark.parametrize("threshold", [0.5, 0.3])
@pytest.mark.parametrize("metric_type", CONFUSION_METRICS, ids=lambda metric: metric.key)
def test_confusion_metrics_match_sklearn_per_slice(metric_type, threshold):
    rows = compute_by_fold(metric_type(threshold=threshold))
    for fold in (*RANDOM_FOLDS, *UNDEFINED_CONFUSION):
        labels, probs = slice_arrays(fold)
        assert rows[fold]["n"] == len(labels)
        note = UNDEFINED_CONFUSION.get(fold, {}).get(metric_type.key)
        if note is None:
            assert_defined(rows[fold], sklearn_confusion_value(metric_type.key, labels, probs, threshold))
        else:
            assert_undefined(rows[fold], note)
    if metric_type.summary == "sum":
        assert_defined(rows["unscored"], 0.0)
    else:
        assert_undefined(rows["unscored"], NO_SCORED_QUERY)


def test_confusion_counts_add_up_per_slice():
    counts = {key: compute_by_fold(resolve(f"{key}(threshold=0.3)")) for key in ("tp", "tn", "fp", "fn")}
    for fold in (*RANDOM_FOLDS, *UNDEFINED_CONFUSION):
        labels, _ = slice_arrays(fold)
        value = {key: counts[key][fold]["value"] for key in counts}
        assert value["tp"] + value["tn"] + value["fp"] + value["fn"] == len(labels)
        assert value["tp"] + value["fn"] == labels.sum()


def test_predicted_positive_includes_the_threshold():
    queries = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.3, 0.3, 0.29999, 0.1]})
    assert resolve("tp(threshold=0.3)").compute(queries, []).collect().item(0, "value") == 1.0
    assert resolve("fp(threshold=0.3)").compute(queries, []).collect().item(0, "value") == 1.0


def test_mcc_names_the_empty_factor():
    no_predicted_negative = pl.LazyFrame({"label": [1, 0, 1], "prob": [0.9, 0.8, 0.6]})
    result = MatthewsCorrelation().compute(no_predicted_negative, []).collect()
    assert result.row(0) == (3, None, "no predicted negative")
    # sklearn would say 0 here; ours is undefined.
    assert matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0


def test_f1_is_zero_not_null_when_defined_without_true_positive():
    queries = pl.LazyFrame({"label": [1, 0, 0], "prob": [0.1, 0.9, 0.2]})
    assert F1Score().compute(queries, []).collect().row(0) == (3, 0.0, None)
    # positives but no prediction, or predictions but no positive: 0, as scikit-learn (DESIGN §4)
    for labels, probs in (([1, 0], [0.1, 0.2]), ([0, 0], [0.9, 0.2])):
        queries = pl.LazyFrame({"label": labels, "prob": probs})
        assert F1Score().compute(queries, []).collect().row(0) == (2, 0.0, None)
        assert f1_score(labels, [int(p >= 0.5) for p in probs], zero_division=1.0) == 0.0


def test_f1_is_null_only_without_positive_and_prediction():
    queries = pl.LazyFrame({"label": [0, 0], "prob": [0.1, 0.2]})
    assert F1Score().compute(queries, []).collect().row(0) == (2, None, "no positive and no predicted positive")


def test_mcc_has_no_integer_overflow_on_large_counts():
    n = 200_000
    queries = pl.LazyFrame({
        "label": np.tile([1, 1, 0, 0], n // 4),
        "prob": np.tile([0.9, 0.1, 0.1, 0.1], n // 4),
    })
    expected = matthews_corrcoef(np.tile([1, 1, 0, 0], n // 4), np.tile([1, 0, 0, 0], n // 4))
    value = MatthewsCorrelation().compute(queries, []).collect().item(0, "value")
    assert value == pytest.approx(expected, abs=TOLERANCE)


# --- shapes, invariances, metadata -----------------------------------------------------------

ALL_METRICS = [AUROC(), AUPRC(), *(TPRAtFPR(target) for target in FPR_TARGETS),
               *(metric_type() for metric_type in CONFUSION_METRICS)]


@pytest.mark.parametrize("metric", ALL_METRICS, ids=str)
def test_without_slice_keys_one_row_equals_the_whole_table(metric):
    whole = metric.compute(SCORED.lazy(), []).collect()
    assert whole.columns == ["n", "value", "note"]
    assert whole.height == 1
    one_slice = metric.compute(SCORED.with_columns(fold=pl.lit("all")).lazy(), ["fold"]).collect()
    assert whole.row(0) == one_slice.drop("fold").row(0)


@pytest.mark.parametrize("metric", ALL_METRICS, ids=str)
def test_empty_table_gives_one_row(metric):
    empty = QUERIES.clear().lazy()
    whole = metric.compute(empty, []).collect()
    expected_value = 0.0 if metric.summary == "sum" else None
    assert whole.row(0) == (0, expected_value, None if metric.summary == "sum" else NO_SCORED_QUERY)
    assert metric.compute(empty, ["fold"]).collect().height == 0


@pytest.mark.parametrize("metric", ALL_METRICS, ids=str)
def test_row_order_and_extra_keys_do_not_change_values(metric):
    by_fold = metric.compute(QUERIES.lazy(), ["fold"]).collect().sort("fold")
    shuffled = QUERIES.sample(fraction=1.0, shuffle=True, seed=11).with_columns(system=pl.lit("s1"))
    again = metric.compute(shuffled.lazy(), ["system", "fold"]).collect().sort("fold")
    assert again["system"].unique().to_list() == ["s1"]
    assert again.drop("system").equals(by_fold)


@pytest.mark.parametrize("metric", ALL_METRICS, ids=str)
def test_metadata(metric):
    assert metric.level is Level.SET
    assert metric.target is TargetCategory.CLASSIFICATION
    assert metric.subset == "all queries"
    assert metric.required_columns == {"queries": ("label", "prob")}
    lower_is_better = {"fp", "fn", "fpr"}
    assert metric.higher_is_better is (metric.name not in lower_is_better)
    assert metric.summary == ("sum" if metric.name in {"tp", "tn", "fp", "fn"} else "mean")
    assert (metric.__doc__ or "").strip()


# --- names -----------------------------------------------------------------------------------

CANONICAL_NAMES = [
    "auroc", "auprc", "tpr@fpr=0.01", "tpr@fpr=0.03", "tpr@fpr=0.05", "tpr@fpr=0.1",
    "tp", "tn", "fp", "fn", "sensitivity", "specificity", "fpr", "precision", "npv", "f1", "mcc",
    "balanced_accuracy", "f1(threshold=0.3)", "precision(threshold=0.3)", "mcc(threshold=0.25)",
    "tp(threshold=0.0)", "sensitivity(threshold=1.0)",
]


@pytest.mark.parametrize("name", CANONICAL_NAMES)
def test_canonical_names_parse_back_to_an_equal_metric(name):
    metric = resolve(name)
    assert metric.name == name
    assert resolve(metric.name) == metric


def test_names_aliases_and_cutoff_forms():
    assert resolve("tpr@fpr=0.01") == TPRAtFPR(0.01)
    assert resolve("tpr@0.01") == TPRAtFPR(0.01)
    assert resolve("TPR@fpr=0.1").name == "tpr@fpr=0.1"
    assert resolve("f1(threshold=0.3)") == F1Score(threshold=0.3)
    assert resolve("f1(threshold=0.5)").name == "f1"
    assert resolve("ppv") == PositivePredictiveValue()
    assert resolve("ppv").name == "precision"
    assert resolve("precision") == PositivePredictiveValue()
    assert resolve("precision(threshold=0.3)") == PositivePredictiveValue(threshold=0.3)
    assert resolve("precision@5") == PrecisionAtK(5)
    assert resolve("tpr") == Sensitivity()
    assert resolve("tpr(threshold=0.2)") == Sensitivity(threshold=0.2)
    assert resolve("tnr") == Specificity()
    assert resolve("roc_auc") == AUROC()
    assert resolve("average_precision") == AUPRC()
    assert resolve("sensitivity") != resolve("specificity")  # same threshold, different metric


@pytest.mark.parametrize(
    "text",
    ["tpr@fpr=0", "tpr@fpr=1.5", "tpr@fpr=abc", "f1(threshold=1.5)", "f1(threshold=-0.1)",
     "f1(threshold=nan)", "f1(bins=3)", "auroc@5"],
)
def test_bad_parameters_are_config_errors(text):
    with pytest.raises(ConfigError):
        resolve(text)


def test_confusion_metrics_are_registered_under_their_keys():
    for metric_type in CONFUSION_METRICS:
        assert issubclass(metric_type, ConfusionMetric)
        assert type(resolve(metric_type.key)) is metric_type


def test_metrics_sharing_a_state_id_finalize_one_state_to_their_own_values():
    """The engine computes one state per ``state_id`` and finalizes every metric from it; the same
    metric at two thresholds (or two ECE bin counts) must not share."""
    metrics = [AUROC(), F1Score(0.5), TPRAtFPR(0.05), F1Score(0.3), AUPRC(), TPRAtFPR(0.1), Sensitivity(0.3),
               MatthewsCorrelation()]
    groups: dict[object, list] = {}
    for metric in metrics:
        groups.setdefault(metric.state_id, []).append(metric)
    assert list(groups) == [("roc_points",), ("confusion", 0.5), ("confusion", 0.3)]
    assert {metric.state_keys for metric in groups[("roc_points",)]} == {("prob",)}
    rows = with_unit_weights(QUERIES.lazy())
    for members in groups.values():
        state = members[0].state(rows, ["fold"]).collect().lazy()
        for metric in members:
            shared = metric.finalize(state, ["fold"]).collect()
            alone = metric.compute(QUERIES.lazy(), ["fold"]).collect()
            assert shared.equals(alone), metric.name
            assert shared.height == QUERIES["fold"].n_unique()
    # A merged state of the folds' states is the state of the whole table.
    parts = [AUROC().state(rows.filter(pl.col("fold") == fold), ["fold"]) for fold in QUERIES["fold"].unique()]
    merged = merge_states(parts, ["fold"], AUROC().state_keys)
    assert AUROC().finalize(merged, ["fold"]).collect().equals(AUROC().compute(QUERIES.lazy(), ["fold"]).collect())


# --- weights: scikit-learn's sample_weight ---------------------------------------------------

#: A few distinct probabilities drawn often (many ties), or any probability.
weighted_probs = st.one_of(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 1.0]), st.floats(0.0, 1.0))
#: Non-negative weights: whole numbers (0 included) or floats.
weights = st.one_of(st.integers(0, 5).map(float), st.just(0.0), st.floats(0.001, 100.0))


@st.composite
def weighted_folds(draw):
    """Rows (fold, label, prob, weight) over 1–3 folds."""
    n_folds = draw(st.integers(1, 3))
    row = st.tuples(st.integers(0, n_folds - 1), st.integers(0, 1), weighted_probs, weights)
    return draw(st.lists(row, min_size=1, max_size=40))


def weighted_frame(rows) -> pl.LazyFrame:
    schema = {"fold": pl.Int64, "label": pl.Int64, "prob": pl.Float64, "_weight": pl.Float64}
    return pl.LazyFrame(rows, schema=schema, orient="row")


def fold_arrays(rows, fold: int):
    mine = [row for row in rows if row[0] == fold]
    return (np.array([row[1] for row in mine]), np.array([row[2] for row in mine]),
            np.array([row[3] for row in mine]))


def by_fold(metric, rows) -> dict[int, dict]:
    return {row["fold"]: row for row in metric.compute(weighted_frame(rows), ["fold"]).collect().iter_rows(named=True)}


def assert_close(row: dict, expected: float) -> None:
    """Defined and within 1e-12 (relative for weighted counts, which may be large)."""
    assert row["note"] is None
    assert row["value"] == pytest.approx(expected, abs=TOLERANCE, rel=TOLERANCE)


def tpr_within_weighted(labels, probs, sample_weight, target: float) -> set[float]:
    """``max TPR with FPR <= target`` from scikit-learn; both candidates when an FPR is within
    rounding (1e-12) of the target, where the order of float additions decides the side."""
    fpr, tpr, _ = roc_curve(labels, probs, sample_weight=sample_weight, drop_intermediate=False)
    return {float(tpr[fpr <= target + 1e-12].max()), float(tpr[fpr <= target - 1e-12].max())}


@settings(max_examples=30, deadline=None)
@given(rows=weighted_folds(), target=st.sampled_from([0.01, 0.2, 0.25, 1 / 3, 0.5, 1.0]))
def test_threshold_free_metrics_match_sklearn_with_sample_weight(rows, target):
    results = {metric: by_fold(metric, rows) for metric in (AUROC(), AUPRC(), TPRAtFPR(target))}
    auroc, auprc, tpr = results.values()
    for fold in {row[0] for row in rows}:
        labels, probs, weight = fold_arrays(rows, fold)
        positive_weight, negative_weight = weight[labels == 1].sum(), weight[labels == 0].sum()
        assert auroc[fold]["n"] == auprc[fold]["n"] == tpr[fold]["n"] == len(labels)  # rows, not weight
        if positive_weight > 0 and negative_weight > 0:
            assert_close(auroc[fold], roc_auc_score(labels, probs, sample_weight=weight))
            candidates = tpr_within_weighted(labels, probs, weight, target)
            assert tpr[fold]["note"] is None
            assert any(tpr[fold]["value"] == pytest.approx(c, abs=TOLERANCE) for c in candidates), candidates
        else:  # a class of weight 0 is a class missing
            assert_undefined(auroc[fold], ONE_CLASS)
            assert_undefined(tpr[fold], ONE_CLASS)
        if positive_weight > 0:
            assert_close(auprc[fold], average_precision_score(labels, probs, sample_weight=weight))
        else:
            assert_undefined(auprc[fold], NO_POSITIVE)


def sklearn_weighted_confusion(key: str, labels, probs, weight, threshold: float) -> float | None:
    """The metric from scikit-learn with ``sample_weight``; None where evalframe's is undefined."""
    predicted = (probs >= threshold).astype(int)
    if not weight.any():  # scikit-learn refuses weights that are all 0; every count is 0 then
        return 0.0 if key in {"tp", "tn", "fp", "fn"} else None
    tn, fp, fn, tp = confusion_matrix(labels, predicted, labels=[0, 1], sample_weight=weight).ravel()
    has = {"positive": tp + fn > 0, "negative": tn + fp > 0, "predicted positive": tp + fp > 0,
           "predicted negative": tn + fn > 0}
    needs = {
        "sensitivity": ("positive",), "specificity": ("negative",), "fpr": ("negative",),
        "ppv": ("predicted positive",), "npv": ("predicted negative",),
        "mcc": ("positive", "negative", "predicted positive", "predicted negative"),
        "balanced_accuracy": ("positive", "negative"),
    }
    if not all(has[need] for need in needs.get(key, ())):
        return None
    if key == "f1" and not (has["positive"] or has["predicted positive"]):
        return None  # 0/0: the only undefined F1
    w = {"sample_weight": weight}
    scores = {
        "tp": lambda: tp, "tn": lambda: tn, "fp": lambda: fp, "fn": lambda: fn,
        "sensitivity": lambda: recall_score(labels, predicted, **w),
        "specificity": lambda: recall_score(labels, predicted, pos_label=0, **w),
        "fpr": lambda: fp / (fp + tn),
        "ppv": lambda: precision_score(labels, predicted, **w),
        "npv": lambda: precision_score(labels, predicted, pos_label=0, **w),
        "f1": lambda: f1_score(labels, predicted, **w),
        "mcc": lambda: matthews_corrcoef(labels, predicted, **w),
        "balanced_accuracy": lambda: balanced_accuracy_score(labels, predicted, **w),
    }
    return float(scores[key]())


@settings(max_examples=30, deadline=None)
@given(rows=weighted_folds(), threshold=st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]))
def test_confusion_metrics_match_sklearn_with_sample_weight(rows, threshold):
    metrics = [metric_type(threshold=threshold) for metric_type in CONFUSION_METRICS]
    # One state for all, as the engine does (the metrics share its state_id).
    state = metrics[0].state(weighted_frame(rows), ["fold"]).collect().lazy()
    results = {
        metric.key: {row["fold"]: row for row in metric.finalize(state, ["fold"]).collect().iter_rows(named=True)}
        for metric in metrics
    }
    for fold in {row[0] for row in rows}:
        labels, probs, weight = fold_arrays(rows, fold)
        for key, result in results.items():
            row = result[fold]
            assert row["n"] == len(labels)
            expected = sklearn_weighted_confusion(key, labels, probs, weight, threshold)
            if expected is None:
                assert row["value"] is None, key
                assert row["note"] in {NO_POSITIVE, NO_NEGATIVE, NO_PREDICTED_POSITIVE, NO_PREDICTED_NEGATIVE,
                                       NO_POSITIVE_NOR_PREDICTED}
            elif key == "mcc":
                # scikit-learn's MCC subtracts products of the weight totals (n² − Σ t², …) and
                # loses up to ~1e-9 to cancellation when one class weighs little; the exact
                # rational value pins ours to 1e-12.
                assert row["value"] == pytest.approx(expected, abs=1e-8)
                assert_close(row, exact_mcc(labels, probs, weight, threshold))
            else:
                assert_close(row, expected)


def exact_mcc(labels, probs, weight, threshold: float) -> float:
    """MCC from the confusion counts added as exact fractions of the float weights."""
    cells = {(1, 1): Fraction(0), (0, 1): Fraction(0), (0, 0): Fraction(0), (1, 0): Fraction(0)}
    for label, prob, w in zip(labels.tolist(), probs.tolist(), weight.tolist(), strict=True):
        cells[(label, int(prob >= threshold))] += Fraction(w)
    tp, fp, tn, fn = cells[(1, 1)], cells[(0, 1)], cells[(0, 0)], cells[(1, 0)]
    numerator = tp * tn - fp * fn
    squared = numerator * numerator / ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return math.copysign(math.sqrt(squared), numerator)


def test_weighted_hand_computed_values():
    # Positive 0.9 (weight 1) outranks both negatives (weights 2 and 1): 3; positive 0.4 (0.5)
    # ties the negative 0.4 (2), half of 0.5 · 2, and outranks 0.1 (1): 0.5 + 0.5. 4 / (1.5 · 3).
    queries = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1], "_weight": [1.0, 2.0, 0.5, 1.0]})
    assert AUROC().compute(queries, []).collect().row(0) == (4, 4 / 4.5, None)
    # AP: the positive at 0.9 has precision 1/1, the one at 0.4 has 1.5 / 3.5; weighted mean.
    assert AUPRC().compute(queries, []).collect().item(0, "value") == pytest.approx((1 * 1 + 0.5 * 1.5 / 3.5) / 1.5)
    # FPR 2/3 at 0.4: a target of 0.5 reaches only the point at 0.9 (TPR 1 / 1.5).
    assert TPRAtFPR(0.5).compute(queries, []).collect().item(0, "value") == pytest.approx(1 / 1.5)
    counts = {key: resolve(key).compute(queries, []).collect().item(0, "value") for key in ("tp", "fp", "tn", "fn")}
    assert counts == {"tp": 1.0, "fp": 0.0, "tn": 3.0, "fn": 0.5}
    # A zero weight makes the only positive "no positive".
    queries = pl.LazyFrame({"label": [1, 0, 0], "prob": [0.9, 0.4, 0.6], "_weight": [0.0, 1.0, 2.0]})
    assert AUROC().compute(queries, []).collect().row(0) == (3, None, ONE_CLASS)
    assert AUPRC().compute(queries, []).collect().row(0) == (3, None, NO_POSITIVE)
    assert Sensitivity().compute(queries, []).collect().row(0) == (3, None, NO_POSITIVE)
    assert Specificity().compute(queries, []).collect().row(0) == (3, 1 / 3, None)
