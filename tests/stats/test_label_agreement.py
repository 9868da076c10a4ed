"""Agreement of human labels against scikit-learn, statsmodels, krippendorff and the chapter's code."""

from __future__ import annotations

import math
from collections import defaultdict

import krippendorff
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from evalframe.stats.label_agreement import agreement, parse_scale
from evalframe.errors import ConfigError, InputError
from evalframe.stats.agreement import landis_koch
from evalframe.engine.bootstrap import Bootstrap, intervals
from evalframe.engine.replicates import poisson_counts

SCALE = [0, 1, 2, 3, 4]


def chapter_agreement(annotations: list[dict]) -> dict:
    """The chapter's ``compute_inter_annotator_agreement`` (§21.3.1), as written."""
    task_annotations: dict = {}
    for ann in annotations:
        task_annotations.setdefault(ann["task_id"], []).append(ann["rating"])
    multi = {k: v for k, v in task_annotations.items() if len(v) >= 2}
    if not multi:
        return {"error": "No tasks with multiple annotations"}
    agreements = [1.0 if len(set(r)) == 1 else 0.0 for r in multi.values()]
    pairwise = [1.0 if r[i] == r[j] else 0.0 for r in multi.values() for i in range(len(r)) for j in range(i + 1, len(r))]
    return {"exact_agreement_rate": sum(agreements) / len(agreements),
            "pairwise_agreement_rate": sum(pairwise) / len(pairwise) if pairwise else 0,
            "tasks_with_multiple_annotations": len(multi)}


def frame(rows) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["task_id", "annotator_id", "rating"], orient="row")


def value(ag, metric: str) -> float | None:
    return ag.summary.filter(pl.col("metric") == metric).get_column("value").item()


def kappa(ag, a: str, b: str, weights: str) -> float | None:
    row = ag.pairwise.filter((pl.col("annotator_a") == a) & (pl.col("annotator_b") == b) & (pl.col("weights") == weights))
    return row.get_column("kappa").item()


@st.composite
def designs(draw):
    """Random designs with missing ratings: tasks × raters, ratings on 0–4 (at least two values)."""
    n_tasks = draw(st.integers(3, 25))
    n_raters = draw(st.integers(2, 5))
    cells = draw(st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=n_tasks * n_raters, max_size=n_tasks * n_raters))
    rows, matrix = [], np.full((n_raters, n_tasks), np.nan)
    for position, (present, rating) in enumerate(cells):
        t, a = divmod(position, n_raters)
        if present or a < 2:  # raters 0 and 1 rate everything: their κ has data
            rows.append((f"t{t}", f"r{a}", rating))
            matrix[a, t] = rating
    return rows, matrix


@settings(max_examples=30, deadline=None)
@given(designs())
def test_random_designs_equal_the_libraries_and_the_chapter(design):
    rows, matrix = design
    ag = agreement(frame(rows), scale="0-4", bootstrap=None)
    chapter = chapter_agreement([{"task_id": t, "rating": r} for t, _, r in rows])
    assert value(ag, "exact_agreement") == pytest.approx(chapter["exact_agreement_rate"])
    assert value(ag, "pairwise_agreement") == pytest.approx(chapter["pairwise_agreement_rate"])
    assert value(ag, "tasks_with_multiple_annotations") == chapter["tasks_with_multiple_annotations"]
    distinct = np.unique(matrix[~np.isnan(matrix)])
    for level in ("nominal", "ordinal", "interval"):
        ours = value(ag, f"krippendorff_alpha_{level}")
        if distinct.size < 2:
            assert ours is None
            continue
        theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level, value_domain=SCALE)
        assert ours == pytest.approx(theirs, abs=1e-9)
    for weights, sk in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = cohen_kappa_score(matrix[0], matrix[1], labels=SCALE, weights=sk)
        ours = kappa(ag, "r0", "r1", weights)
        if math.isnan(theirs):
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.lists(st.integers(0, 4), min_size=6, max_size=120))
def test_fleiss_kappa_equals_statsmodels_on_complete_designs(n_raters, flat):
    n_tasks = len(flat) // n_raters
    if n_tasks < 1:
        return
    matrix = np.array(flat[: n_tasks * n_raters]).reshape(n_tasks, n_raters)
    rows = [(f"t{t}", f"r{a}", int(matrix[t, a])) for t in range(n_tasks) for a in range(n_raters)]
    ag = agreement(frame(rows), scale="0-4", bootstrap=None)
    table, _ = aggregate_raters(matrix, n_cat=5)
    with np.errstate(all="ignore"):
        theirs = fleiss_kappa(table)
    ours = value(ag, "fleiss_kappa")
    if not np.isfinite(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_hand_cases_all_agree_one_annotator_constant_rater():
    all_agree = agreement(frame([("t1", "a", 3), ("t1", "b", 3), ("t2", "a", 1), ("t2", "b", 1)]), scale="0-4", bootstrap=None)
    assert value(all_agree, "exact_agreement") == 1.0
    assert value(all_agree, "pairwise_agreement") == 1.0
    assert value(all_agree, "krippendorff_alpha_nominal") == 1.0
    assert kappa(all_agree, "a", "b", "unweighted") == 1.0
    # One annotator: no task has two ratings, nothing is defined, and the note says why.
    alone = agreement(frame([("t1", "a", 3), ("t2", "a", 1)]), scale="0-4", bootstrap=None)
    assert value(alone, "exact_agreement") is None
    assert value(alone, "tasks_with_multiple_annotations") == 0
    assert alone.pairwise.height == 0
    assert "one rating only" in alone.notes[0]
    # A constant rater: κ's chance agreement is 1 for the pair when both are constant (undefined) ...
    both_constant = agreement(frame([("t1", "a", 2), ("t1", "b", 2), ("t2", "a", 2), ("t2", "b", 2), ("t3", "c", 1), ("t3", "a", 0)]),
                              scale="0-4", bootstrap=None)
    assert kappa(both_constant, "a", "b", "unweighted") is None
    assert "same rating" in both_constant.pairwise.filter(annotator_a="a", annotator_b="b", weights="unweighted").get_column("note").item()
    # ... and 0 against a rater who varies (sklearn gives 0.0 too).
    one_constant = agreement(frame([("t1", "a", 2), ("t1", "b", 1), ("t2", "a", 2), ("t2", "b", 3)]), scale="0-4", bootstrap=None)
    assert kappa(one_constant, "a", "b", "unweighted") == pytest.approx(cohen_kappa_score([2, 2], [1, 3]))


def test_landis_koch_words():
    assert [landis_koch(v) for v in (-0.2, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)] == [
        "poor", "slight", "fair", "moderate", "substantial", "almost perfect", "almost perfect"]
    assert landis_koch(None) is None


def test_bootstrap_ci_is_the_engine_bootstrap_over_tasks():
    rng = np.random.default_rng(3)
    rows = [(f"t{t}", f"a{a}", int(rng.integers(0, 3))) for t in range(30) for a in range(3)]
    table = frame(rows)
    settings_ = Bootstrap(resamples=40, seed=7)
    ag = agreement(table, scale="0-2", bootstrap=settings_)
    # The same replicate: recompute exact agreement with the task counts poisson_counts draws.
    tasks = pl.DataFrame({"task_id": sorted({t for t, _, _ in rows})})
    counts = poisson_counts(tasks, 40, 7).astype(float)
    by_task = defaultdict(list)
    for t, _, r in rows:
        by_task[t].append(r)
    agree = np.array([float(len(set(by_task[t])) == 1) for t in tasks.get_column("task_id")])
    replicates = (agree @ counts) / counts.sum(axis=0)
    expected = intervals(replicates[None, :], np.array([agree.mean()]), 0.95)
    row = ag.summary.filter(metric="exact_agreement")
    assert row.get_column("ci_low").item() == pytest.approx(expected.low[0])
    assert row.get_column("ci_high").item() == pytest.approx(expected.high[0])
    assert row.get_column("ci_low").item() <= row.get_column("value").item() <= row.get_column("ci_high").item()
    pair = ag.pairwise.filter(annotator_a="a0", annotator_b="a1", weights="quadratic")
    assert pair.get_column("ci_low").item() is not None


def test_nominal_scale_gives_nominal_statistics_only():
    rows = [("t1", "a", "cat"), ("t1", "b", "dog"), ("t2", "a", "cat"), ("t2", "b", "cat"), ("t3", "a", "dog"), ("t3", "b", "dog")]
    ag = agreement(frame(rows), bootstrap=None)
    assert ag.scale.numeric is False
    metrics = ag.summary.get_column("metric").to_list()
    assert "krippendorff_alpha_nominal" in metrics and "krippendorff_alpha_interval" not in metrics
    matrix = np.array([[0, 0, 1], [1, 0, 1]], dtype=float)
    assert value(ag, "krippendorff_alpha_nominal") == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))


def test_widest_disagreements_come_first():
    rows = [("t1", "a", 0), ("t1", "b", 4), ("t2", "a", 2), ("t2", "b", 3), ("t3", "a", 1), ("t3", "b", 1), ("t4", "a", 2)]
    ag = agreement(frame(rows), scale="0-4", bootstrap=None, widest=2)
    assert ag.disagreements.get_column("task_id").to_list() == ["t1", "t2"]
    assert ag.disagreements.get_column("spread").to_list() == [4.0, 1.0]


def test_bad_inputs_name_row_and_value():
    with pytest.raises(InputError) as outside:
        agreement(frame([("t1", "a", 3), ("t1", "b", 7)]), scale="0-4", source="ann.csv")
    message = str(outside.value)
    assert "ann.csv" in message and "row 2" in message and "7" in message and "outside the rating scale" in message
    with pytest.raises(InputError) as twice:
        agreement(frame([("t1", "a", 3), ("t1", "b", 2), ("t1", "a", 1)]), scale="0-4")
    assert "row 3" in str(twice.value) and "second time" in str(twice.value) and "row 1" in str(twice.value)
    with pytest.raises(InputError, match="no column `rating`"):
        agreement(pl.DataFrame({"task_id": ["t"], "annotator_id": ["a"]}))
    with pytest.raises(ConfigError):
        parse_scale("3,1,2")
    assert parse_scale("0-4").values == (0, 1, 2, 3, 4)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
@settings(max_examples=12, deadline=None)
@given(st.integers(2, 3), st.integers(3, 20), st.booleans(), st.integers(0, 2**16))
def test_pair_kappa_replicates_equal_weighted_sklearn(n_raters, n_tasks, complete, seed):
    """Cohen's κ of every pair under integer weight columns (bootstrap counts: the float32 path)
    and float ones (the float64 path) equals ``cohen_kappa_score(sample_weight=…)`` column by
    column, in complete designs (marginals per rater) and with missing ratings (per pair)."""
    from evalframe.stats import agreement as kernels

    rng = np.random.default_rng(seed)
    grid = rng.integers(0, 5, (n_tasks, n_raters))
    rated = np.ones_like(grid, bool) if complete else rng.random(grid.shape) < 0.7
    task, rater = np.nonzero(rated)
    ratings = kernels.Ratings(task, rater, grid[task, rater], np.arange(5, dtype=float), n_tasks, n_raters)
    pairs = kernels.rater_pairs(n_raters)
    sums = kernels.PairSums(ratings, pairs)
    counts = rng.integers(0, 4, (n_tasks, 3)).astype(np.uint8)
    for weights in (counts, counts.astype(np.float64) * 0.5):
        got = sums.kappas(weights)
        for p, (a, b) in enumerate(pairs):
            both = rated[:, a] & rated[:, b]
            for c in range(weights.shape[1]):
                w = weights[both, c].astype(float)
                for kind, sk in zip(kernels.KAPPA_WEIGHTS, (None, "linear", "quadratic"), strict=True):
                    if w.sum() == 0:
                        assert np.isnan(got[p, kernels.KAPPA_WEIGHTS.index(kind), c])
                        continue
                    with np.errstate(all="ignore"):
                        theirs = cohen_kappa_score(grid[both, a], grid[both, b], labels=SCALE, weights=sk, sample_weight=w)
                    ours = got[p, kernels.KAPPA_WEIGHTS.index(kind), c]
                    assert (np.isnan(ours) and np.isnan(theirs)) or ours == pytest.approx(theirs, abs=1e-9)
    estimates = sums.estimates()  # the confusion-matrix path equals a column of ones
    assert np.allclose(estimates, sums.kappas(np.ones((n_tasks, 1), np.uint8))[:, :, 0], equal_nan=True, atol=1e-12)
