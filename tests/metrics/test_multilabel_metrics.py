"""Per-post multi-label metrics (contract §6): hand-built cases, scikit-learn as the oracle, merging.

The metrics are evaluated here without the engine, the way the engine will run them: a
per-post metric's ``expr()`` in a group-by over (system, post) and the weighted mean of the
per-post values over a slice (:func:`slice_mean`); a set metric through ``compute`` (or
``state`` / ``merge_states`` / ``finalize``).
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import accuracy_score, f1_score, hamming_loss

import evalframe as ef
from evalframe.metrics.base import WEIGHT, Level, merge_states, weight
from evalframe.metrics.multilabel import (
    CRITERION_KEY,
    NO_CRITERION_WITH_POSITIVE,
    NO_POSITIVE_AT_ALL,
    NO_POSITIVE_IN_SLICE,
    NO_POST,
    NO_SCORED_CRITERION,
    ExactMatch,
    HammingLoss,
    HammingScore,
    LabelMacroF1,
    MacroF1,
    MicroF1,
    WeightedF1,
)

SCHEMA = {
    "system": pl.String,
    "post_id": pl.String,
    "criterion_id": pl.String,
    "fold": pl.Int64,
    "label": pl.Int64,
    "prob": pl.Float64,
    WEIGHT: pl.Float64,
}


def queries(rows: list[tuple]) -> pl.LazyFrame:
    """Rows ``(system, post_id, criterion_id, fold, label, prob, weight)``."""
    return pl.LazyFrame(rows, schema=SCHEMA, orient="row")


def post(post_id: str, labels: list, probs: list, *, system="s", fold=0, weight=1.0) -> list[tuple]:
    """One post's rows, criteria ``c0``, ``c1``, …"""
    return [(system, post_id, f"c{i}", fold, label, prob, weight) for i, (label, prob) in enumerate(zip(labels, probs, strict=True))]


# --- the engine's two steps, kept tiny -------------------------------------------------------


def per_post(metric, rows: pl.LazyFrame) -> pl.DataFrame:
    """One row per (system, post): ``value``, ``skip_reason``, the ``note`` flag and the weight."""
    note = metric.note()
    flag = note[0] if note is not None else pl.lit(False)
    return (
        rows.group_by("system", "post_id", "fold")
        .agg(
            metric.expr().cast(pl.Float64).alias("value"),
            metric.skip_reason().alias("skip_reason"),
            flag.alias("flag"),
            weight().first().alias("w"),
        )
        .with_columns(skip_reason=pl.when(pl.col("value").is_null()).then("skip_reason"))
        .collect()
    )


def slice_mean(metric, rows: pl.LazyFrame, by: list[str]) -> dict[tuple, float | None]:
    """The weighted mean of the per-post values of each slice (null values left out)."""
    values = per_post(metric, rows).filter(pl.col("value").is_not_null())
    means = values.group_by(by).agg(((pl.col("value") * pl.col("w")).sum() / pl.col("w").sum()).alias("mean"))
    return {tuple(row[:-1]): row[-1] for row in means.iter_rows()}


def set_values(metric, rows: pl.LazyFrame, by: list[str]) -> dict[tuple, tuple]:
    """``{slice: (n, value, note)}`` of a set metric."""
    table = metric.compute(rows, by).collect()
    assert table.columns == [*by, "n", "value", "note"]
    assert table.schema["n"] == pl.Int64 and table.schema["value"] == pl.Float64 and table.schema["note"] == pl.String
    return {tuple(row[: len(by)]): tuple(row[len(by):]) for row in table.iter_rows()}


def one(metric, rows: pl.LazyFrame) -> tuple:
    """``(n, value, note)`` of a set metric over all rows."""
    return set_values(metric, rows, [])[()]


# --- description -----------------------------------------------------------------------------

PER_POST = (ExactMatch, HammingScore, HammingLoss, MacroF1)
SET = (MicroF1, WeightedF1, LabelMacroF1)


@pytest.mark.parametrize("metric", [cls() for cls in (*PER_POST, *SET)], ids=str)
def test_every_metric_has_the_post_unit(metric):
    assert metric.unit == "post"
    assert metric.level is (Level.QUERY if isinstance(metric, PER_POST) else Level.SET)
    assert metric.higher_is_better is (not isinstance(metric, HammingLoss))
    assert {"label", "prob"} <= set(metric.required_columns["queries"])


def test_set_metrics_need_criterion_and_post_keys():
    assert MicroF1().required_columns == {"queries": ("label", "prob", "criterion_id", "post_id")}
    assert MicroF1(unit_keys=("doc", "post_no")).required_columns["queries"][-2:] == ("doc", "post_no")
    assert MicroF1(unit_keys=("doc",)) == MicroF1(), "the post's key columns are not part of the metric's identity"


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [
        ("macro_f1", MacroF1(), "macro_f1"),
        ("macro_f1(zero_division=1.0)", MacroF1(zero_division=1.0), "macro_f1(zero_division=1.0)"),
        ("macro_f1(zero_division=1)", MacroF1(zero_division=1.0), "macro_f1(zero_division=1.0)"),
        ("macro_f1(zero_division=0)", MacroF1(), "macro_f1"),
        ("macro_f1(zero_division=null)", MacroF1(zero_division=None), "macro_f1(zero_division=null)"),
        ("macro_f1(zero_division=nan)", MacroF1(zero_division=None), "macro_f1(zero_division=null)"),
        ("samples_f1", MacroF1(), "macro_f1"),
        ("micro_f1(threshold=0.3)", MicroF1(threshold=0.3), "micro_f1(threshold=0.3)"),
        ("weighted_f1(threshold=0.3, zero_division=1.0)", WeightedF1(threshold=0.3, zero_division=1.0),
         "weighted_f1(threshold=0.3,zero_division=1.0)"),
        ("label_macro_f1", LabelMacroF1(), "label_macro_f1"),
        ("exact_match", ExactMatch(), "exact_match"),
        ("hamming_score(threshold=0.7)", HammingScore(threshold=0.7), "hamming_score(threshold=0.7)"),
        ("hamming_loss", HammingLoss(), "hamming_loss"),
    ],
)
def test_names_parse(text, expected, canonical):
    metric = ef.resolve_metric(text)
    assert metric == expected and type(metric) is type(expected)
    assert metric.name == canonical
    assert ef.resolve_metric(canonical) == metric


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("macro_f1(zero_division=2)", "must be one of"),
        ("macro_f1(zero_division=abc)", "must be float_or_null"),
        ("micro_f1(threshold=1.5)", "threshold in [0, 1]"),
        ("exact_match(zero_division=1)", "no parameter `zero_division`"),
    ],
)
def test_bad_parameters_are_config_errors(text, fragment):
    with pytest.raises(ef.ConfigError) as error:
        ef.resolve_metric(text)
    assert fragment in str(error.value)


@pytest.mark.parametrize("bad", [0.5, 2, True, "1", -1.0])
def test_zero_division_must_be_zero_one_or_null(bad):
    with pytest.raises(ef.ConfigError, match="zero_division"):
        MicroF1(zero_division=bad)
    assert MacroF1(zero_division=float("nan")) == MacroF1(zero_division=None)


def test_micro_weighted_and_label_macro_share_one_state_per_threshold():
    ids = {cls(zero_division=zd).state_id for cls in SET for zd in (0.0, 1.0, None)}
    assert len(ids) == 1
    assert MicroF1(threshold=0.3).state_id != MicroF1().state_id
    assert MicroF1(unit_keys=("doc",)).state_id != MicroF1().state_id
    rows = queries(post("p1", [1, 0, 1], [0.9, 0.6, 0.2]) + post("p2", [0, 1, 0], [0.1, 0.8, 0.3]))
    state = MicroF1().state(rows, ["system"])
    for cls in SET:
        assert_frame_equal(cls().finalize(state, ["system"]), cls().compute(rows, ["system"]))


def assert_frame_equal(left: pl.LazyFrame, right: pl.LazyFrame) -> None:
    from polars.testing import assert_frame_equal as equal

    equal(left.collect(), right.collect())


# --- hand-built cases ------------------------------------------------------------------------


def test_post_with_all_negatives_and_no_predictions():
    rows = queries(post("p1", [0, 0, 0], [0.1, 0.2, 0.49]))
    assert per_post(ExactMatch(), rows)["value"].to_list() == [1.0]
    assert per_post(HammingScore(), rows)["value"].to_list() == [1.0]
    assert per_post(HammingLoss(), rows)["value"].to_list() == [0.0]
    for zero_division, expected in ((0.0, 0.0), (1.0, 1.0)):
        values = per_post(MacroF1(zero_division=zero_division), rows)
        assert values.select("value", "skip_reason", "flag").rows() == [(expected, None, True)]
    values = per_post(MacroF1(zero_division=None), rows)
    assert values.select("value", "skip_reason").rows() == [(None, NO_POSITIVE_AT_ALL)]
    assert MacroF1(zero_division=None).note() is None


def test_note_counts_the_posts_scored_zero_division():
    rows = queries(
        post("p1", [0, 0], [0.1, 0.2]) + post("p2", [1, 0], [0.9, 0.2]) + post("p3", [0, 0], [0.3, 0.0])
        + post("p4", [0, 0], [0.3, 0.6])  # no true positive but a predicted one: F1 = 0, not zero_division
        + post("p5", [None, 0], [0.1, None])  # no usable criterion: null (skipped), not zero_division
    )
    flag, template = MacroF1().note()
    assert template == "{count} posts with no true and no predicted positive scored 0.0"
    assert MacroF1(zero_division=1.0).note()[1] == "{count} posts with no true and no predicted positive scored 1.0"
    counted = rows.group_by("post_id").agg(flag.alias("flag")).collect()
    assert dict(counted.rows()) == {"p1": True, "p2": False, "p3": True, "p4": False, "p5": False}
    values = per_post(MacroF1(), rows).select("post_id", "value", "skip_reason").sort("post_id").rows()
    assert values == [("p1", 0.0, None), ("p2", 1.0, None), ("p3", 0.0, None), ("p4", 0.0, None),
                      ("p5", None, NO_SCORED_CRITERION)]


def test_per_post_values_by_hand():
    # labels [1, 0, 1, 0], predictions [1, 1, 0, 0] (0.5 is predicted: prob >= threshold)
    rows = queries(post("p1", [1, 0, 1, 0], [0.9, 0.5, 0.2, 0.0]))
    assert per_post(ExactMatch(), rows)["value"].to_list() == [0.0]
    assert per_post(HammingScore(), rows)["value"].to_list() == [0.5]
    assert per_post(HammingLoss(), rows)["value"].to_list() == [0.5]
    assert per_post(MacroF1(), rows)["value"].to_list() == [0.5]  # 2·1 / (2·1 + 1 + 1)
    assert per_post(MacroF1(threshold=0.51), rows)["value"].to_list() == [2 / 3]  # 2 / (2 + 0 + 1)
    assert per_post(ExactMatch(threshold=0.1), rows)["value"].to_list() == [0.0]


def test_rows_without_label_or_prob_are_left_out():
    rows = queries(post("p1", [1, None, 0], [0.9, 0.7, None]) + post("p2", [None, 1], [0.3, None]))
    values = per_post(HammingScore(), rows).sort("post_id")
    assert values.select("value", "skip_reason").rows() == [(1.0, None), (None, NO_SCORED_CRITERION)]
    for metric in (ExactMatch(), HammingLoss(), MacroF1(), MacroF1(zero_division=1.0)):
        assert per_post(metric, rows).sort("post_id").select("skip_reason").to_series().to_list() == [
            None, NO_SCORED_CRITERION], metric.name
    # The set metrics see p1's criterion c0 only (p2 has nothing usable): one post, F1 1.
    assert one(MicroF1(), rows) == (1, 1.0, None)
    assert one(LabelMacroF1(), rows) == (1, 1.0, None)


def test_slice_without_a_usable_post_is_null_with_a_note():
    rows = queries(post("p1", [None, 1], [0.3, None], fold=1) + post("p2", [1, 1], [0.9, 0.8], fold=2))
    for cls in SET:
        values = set_values(cls(), rows, ["fold"])
        assert values[(1,)] == (0, None, NO_POST), cls
        assert values[(2,)] == (1, 1.0, None), cls
    for cls in SET:  # no row at all: one row, n = 0
        assert one(cls(), rows.filter(pl.lit(False))) == (0, None, NO_POST), cls


@pytest.mark.parametrize(("zero_division", "expected"), [(0.0, 0.0), (1.0, 1.0), (None, None)])
def test_slice_with_no_true_and_no_predicted_positive(zero_division, expected):
    rows = queries(post("p1", [0, 0], [0.1, 0.2]) + post("p2", [0, 0], [0.0, 0.4]))
    assert one(MicroF1(zero_division=zero_division), rows) == (
        2, expected, NO_POSITIVE_IN_SLICE if expected is None else None)
    for cls in (WeightedF1, LabelMacroF1):
        assert one(cls(zero_division=zero_division), rows) == (
            2, expected, NO_CRITERION_WITH_POSITIVE if expected is None else None), cls


@pytest.mark.parametrize(("zero_division", "label_macro", "weighted"), [
    (0.0, (0.5 + 1.0 + 0.0 + 0.0) / 4, (2 * 0.5 + 1 * 1.0) / 3),
    (1.0, (0.5 + 1.0 + 0.0 + 1.0) / 4, (2 * 0.5 + 1 * 1.0) / 3),
    (None, (0.5 + 1.0 + 0.0) / 3, (2 * 0.5 + 1 * 1.0) / 3),
])
def test_criteria_never_positive(zero_division, label_macro, weighted):
    # c0: true twice, predicted once right and once wrong on p3 → tp 1, fp 1, fn 1, F1 0.5;
    # c1: tp 1, F1 1.0; c2: never true, predicted once → F1 0; c3: never true nor predicted.
    rows = queries(
        post("p1", [1, 1, 0, 0], [0.9, 0.8, 0.1, 0.1])
        + post("p2", [1, 0, 0, 0], [0.2, 0.1, 0.7, 0.1])
        + post("p3", [0, 0, 0, 0], [0.6, 0.3, 0.2, 0.4])
    )
    assert one(LabelMacroF1(zero_division=zero_division), rows) == (3, pytest.approx(label_macro, abs=1e-15), None)
    assert one(WeightedF1(zero_division=zero_division), rows) == (3, pytest.approx(weighted, abs=1e-15), None)
    assert one(MicroF1(zero_division=zero_division), rows) == (3, pytest.approx(2 * 2 / (2 * 2 + 2 + 1)), None)


def test_weighted_f1_without_any_true_positive_label_is_label_macro():
    # No label is positive: supports are all 0; c0 was predicted (F1 0), c1 was not (zero_division).
    rows = queries(post("p1", [0, 0], [0.9, 0.1]) + post("p2", [0, 0], [0.2, 0.3]))
    assert one(WeightedF1(), rows)[1] == 0.0
    assert one(WeightedF1(zero_division=1.0), rows)[1] == 0.5
    assert one(WeightedF1(zero_division=None), rows)[1] == 0.0
    assert one(WeightedF1(zero_division=1.0), rows)[1] == one(LabelMacroF1(zero_division=1.0), rows)[1]


def test_weights_multiply_counts_and_zero_weight_posts_count_in_n_only():
    rows = queries(
        post("p1", [1, 0], [0.9, 0.8], weight=3.0)  # tp 1, fp 1
        + post("p2", [1, 1], [0.1, 0.9], weight=1.0)  # fn 1, tp 1
        + post("p3", [0, 1], [0.9, 0.1], weight=0.0)  # would add fp 1, fn 1
    )
    assert one(MicroF1(), rows) == (3, pytest.approx(2 * 4 / (2 * 4 + 3 + 1)), None)
    means = slice_mean(HammingScore(), rows, ["system"])
    assert means[("s",)] == pytest.approx((3 * 0.5 + 1 * 0.5 + 0 * 0.0) / 4)


def test_set_metrics_sliced_by_criterion():
    # The state's criterion key is private, so a slice by criterion_id neither clashes nor merges wrongly.
    rows = queries(post("p1", [1, 0], [0.9, 0.8]) + post("p2", [1, 1], [0.1, 0.9]))
    by = ["criterion_id"]
    whole = set_values(MicroF1(), rows, by)
    assert whole == {("c0",): (2, 2 / 3, None), ("c1",): (2, 2 / 3, None)}
    states = [MicroF1().state(rows.filter(pl.col("post_id") == p), by) for p in ("p1", "p2")]
    merged = MicroF1().finalize(merge_states(states, by, MicroF1.state_keys), by).collect()
    assert {row[0]: row[1:] for row in merged.iter_rows()} == {key[0]: value for key, value in whole.items()}
    assert CRITERION_KEY in MicroF1().state(rows, by).collect_schema().names()


def test_values_do_not_depend_on_row_order():
    rng = random.Random(7)
    rows_list = [
        row for p in range(40)
        for row in post(f"p{p}", [rng.randint(0, 1) for _ in range(5)], [rng.random() for _ in range(5)],
                        fold=p % 3, weight=rng.random() * 10)
    ]
    expected = {cls: cls().compute(queries(rows_list), ["fold"]).sort("fold").collect() for cls in SET}
    for _ in range(3):
        rng.shuffle(rows_list)
        for cls in SET:
            got = cls().compute(queries(rows_list), ["fold"]).sort("fold").collect()
            assert got.equals(expected[cls]), cls  # bit for bit


# --- scikit-learn as the oracle --------------------------------------------------------------

weights = st.one_of(st.integers(0, 3).map(float), st.floats(0, 5, allow_subnormal=False))
probs = st.one_of(st.sampled_from([0.0, 0.3, 0.5, 0.7, 1.0]), st.floats(0, 1))


@st.composite
def multilabel_data(draw):
    n_criteria = draw(st.integers(2, 6))
    n_posts = draw(st.integers(1, 30))
    n_systems = draw(st.integers(1, 2))
    n_folds = draw(st.integers(1, 3))
    # Sparse positives and sparse predictions often enough that slices and criteria with no true
    # and no predicted positive (the zero_division cases) come up.
    positives_in_ten = draw(st.sampled_from([0, 1, 5]))
    label = st.integers(0, 9).map(lambda digit: int(digit < positives_in_ten))
    labels = draw(st.lists(st.lists(label, min_size=n_criteria, max_size=n_criteria),
                           min_size=n_posts, max_size=n_posts))
    scores = draw(st.lists(st.lists(st.lists(probs, min_size=n_criteria, max_size=n_criteria),
                                    min_size=n_posts, max_size=n_posts), min_size=n_systems, max_size=n_systems))
    scale = draw(st.sampled_from([1.0, 0.4, 0.0]))  # 0.4: predicted only at threshold 0.3; 0: never
    folds = draw(st.lists(st.integers(0, n_folds - 1), min_size=n_posts, max_size=n_posts))
    post_weights = draw(st.lists(weights, min_size=n_posts, max_size=n_posts))
    threshold = draw(st.sampled_from([0.5, 0.3, 0.7]))
    zero_division = draw(st.sampled_from([0.0, 1.0, None]))
    return np.array(labels), np.array(scores) * scale, np.array(folds), np.array(post_weights), threshold, zero_division


def frame(labels, scores, folds, post_weights) -> pl.LazyFrame:
    rows = [
        (f"s{s}", f"p{p}", f"c{c}", int(folds[p]), int(labels[p, c]), float(scores[s, p, c]), float(post_weights[p]))
        for s in range(scores.shape[0]) for p in range(labels.shape[0]) for c in range(labels.shape[1])
    ]
    return queries(rows)


def sklearn_values(y_true, y_pred, sample_weight, zero_division) -> dict[type, float]:
    zd = np.nan if zero_division is None else zero_division
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        f1 = {average: f1_score(y_true, y_pred, average=average, sample_weight=sample_weight, zero_division=zd)
              for average in ("samples", "micro", "weighted", "macro")}
    return {
        ExactMatch: accuracy_score(y_true, y_pred, sample_weight=sample_weight),
        HammingScore: 1 - hamming_loss(y_true, y_pred, sample_weight=sample_weight),
        HammingLoss: hamming_loss(y_true, y_pred, sample_weight=sample_weight),
        MacroF1: f1["samples"],
        MicroF1: f1["micro"],
        WeightedF1: f1["weighted"],
        LabelMacroF1: f1["macro"],
    }


def same(got: float | None, expected: float | None) -> bool:
    """Equal to 1e-12, or both missing (None here, NaN or None there)."""
    if got is None or expected is None or math.isnan(expected):
        return got is None and (expected is None or math.isnan(expected))
    return abs(got - expected) <= 1e-12


@given(multilabel_data())
def test_equal_to_scikit_learn_per_system_and_fold(data):
    labels, scores, folds, post_weights, threshold, zero_division = data
    rows = frame(labels, scores, folds, post_weights)
    metrics = [cls(threshold=threshold) for cls in (ExactMatch, HammingScore, HammingLoss)]
    metrics += [cls(threshold=threshold, zero_division=zero_division) for cls in (MacroF1, *SET)]
    for by in (["system"], ["system", "fold"]):
        ours = {
            type(m): slice_mean(m, rows, by) if isinstance(m, PER_POST)
            else {key: value for key, (_, value, _) in set_values(m, rows, by).items()}
            for m in metrics
        }
        keys = set()
        for s in range(scores.shape[0]):
            for fold in sorted(set(folds.tolist())) if "fold" in by else [None]:
                in_slice = np.ones(len(folds), bool) if fold is None else folds == fold
                key = (f"s{s}",) if fold is None else (f"s{s}", fold)
                keys.add(key)
                y_true, y_pred = labels[in_slice], (scores[s][in_slice] >= threshold).astype(int)
                w = post_weights[in_slice]
                if w.sum() == 0:  # scikit-learn refuses all-zero weights: every count is 0
                    for m in metrics[4:]:
                        assert ours[type(m)][key] == zero_division, (m.name, key)
                    continue
                expected = sklearn_values(y_true, y_pred, w, zero_division)
                for m in metrics:
                    got = ours[type(m)].get(key)
                    if isinstance(m, MacroF1) and zero_division is None:
                        defined = (y_true | y_pred).any(axis=1)
                        if w[defined].sum() == 0:  # no weight left once undefined posts are out
                            continue
                    assert same(got, expected[type(m)]), (m.name, key, got, expected[type(m)])
        for m in metrics[4:]:
            assert set(ours[type(m)]) == keys, m.name


@given(multilabel_data(), st.integers(1, 8), st.data())
def test_states_of_parts_merge_to_the_whole(data, n_parts, draw):
    labels, scores, folds, post_weights, threshold, zero_division = data
    rows = frame(labels, scores, folds, post_weights)
    part_of_post = draw.draw(st.lists(st.integers(0, n_parts - 1), min_size=len(folds), max_size=len(folds)))
    parts = pl.LazyFrame({"post_id": [f"p{p}" for p in range(len(folds))], "part": part_of_post})
    rows = rows.join(parts, on="post_id")
    by = ["system", "fold"]
    for cls in SET:
        metric = cls(threshold=threshold, zero_division=zero_division)
        states = [metric.state(rows.filter(pl.col("part") == part), by) for part in range(n_parts)]
        merged = metric.finalize(merge_states(states, by, metric.state_keys), by).sort(by).collect()
        whole = metric.compute(rows, by).sort(by).collect()
        assert merged.select(*by, "n", "note").equals(whole.select(*by, "n", "note")), metric.name
        assert merged["n"].to_list() == whole["n"].to_list()
        for got, expected in zip(merged["value"], whole["value"], strict=True):
            assert same(got, expected), (metric.name, got, expected)
    n_posts = {(f"s{s}", f): int((folds == f).sum()) for s in range(scores.shape[0]) for f in set(folds.tolist())}
    got = {tuple(row[:2]): row[2] for row in MicroF1().compute(rows, by).select(*by, "n").collect().iter_rows()}
    assert got == n_posts
