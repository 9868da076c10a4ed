"""``ef.embedding_quality``: the tidy table of several models, its bootstrap intervals, label slices."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.analyses import embedding_quality as eq
from evalframe.metrics import embedding_space as space
from evalframe.engine.replicates import poisson_counts


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(24)
    healthy = rng.normal(size=(300, 12))
    collapsed = healthy.copy()
    collapsed[:, 3:] *= 0.001
    collapsed += 5.0
    labels = rng.integers(0, 6, 300)
    return {"healthy": healthy, "collapsed": collapsed}, labels


def _value(table, model, metric, slice_="overall", label=None):
    rows = table.filter((pl.col("model") == model) & (pl.col("metric") == metric) & (pl.col("slice") == slice_))
    if label is not None:
        rows = rows.filter(pl.col("label") == label)
    return rows.row(0, named=True)


def test_one_tidy_table_for_several_models(models):
    matrices, labels = models
    table = ef.embedding_quality(matrices, labels=labels, bootstrap=None)
    assert table.columns == list(eq.QUALITY_SCHEMA)
    for name, X in matrices.items():
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        spectrum = space.Spectrum.of(X)
        assert _value(table, name, "partition_isotropy")["value"] == space.isotropy(spectrum)["partition_isotropy"]
        assert _value(table, name, "avg_cosine_similarity")["value"] == pytest.approx(space.mean_cosine(U), abs=1e-15)
        pairs = space.pairs_from_labels(labels)
        row = _value(table, name, "alignment")
        assert row["value"] == pytest.approx(space.alignment(U, pairs)) and row["n"] == len(pairs)
        uniformity = _value(table, name, "uniformity")
        assert uniformity["value"] == pytest.approx(space.uniformity(U).value) and uniformity["n"] == 300 * 299 // 2
        assert _value(table, name, "alignment_uniformity_sum")["value"] == pytest.approx(row["value"] + uniformity["value"])
        assert _value(table, name, "effective_rank")["value"] == space.collapse(spectrum)["effective_rank"]
    assert _value(table, "healthy", "dead_ratio")["verdict"] == "good"
    assert _value(table, "collapsed", "dead_ratio")["verdict"] == "warning"
    assert _value(table, "collapsed", "avg_cosine_similarity")["verdict"] == "warning"
    assert _value(table, "collapsed", "collapse_detected")["value"] == 1.0


def test_bootstrap_intervals_are_the_engines_replicates_of_per_vector_means(models, monkeypatch):
    matrices, labels = models
    monkeypatch.setattr(eq, "_COUNT_ROWS", 7)  # the blocked accumulation equals the whole-matrix one
    settings = ef.Bootstrap(resamples=400, seed=3)
    table = ef.embedding_quality(matrices, labels=labels, bootstrap=settings)
    X = matrices["healthy"]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    values = space.cosine_contributions(U)
    counts = poisson_counts(pl.DataFrame({"id": np.arange(300).astype(str)}), 400, 3).astype(float)
    replicates = values @ counts / counts.sum(axis=0)
    row = _value(table, "healthy", "avg_cosine_similarity")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(np.percentile(replicates, [2.5, 97.5])), rel=1e-9)
    assert row["se"] == pytest.approx(replicates.std(ddof=1), rel=1e-9)
    assert row["se"] == pytest.approx(values.std(ddof=1) / np.sqrt(300), rel=0.2)
    alignment = _value(table, "healthy", "alignment")
    assert alignment["ci_low"] < alignment["value"] < alignment["ci_high"]
    assert _value(table, "healthy", "uniformity")["ci_low"] is None  # not a mean of independent parts
    assert table.equals(ef.embedding_quality(matrices, labels=labels, bootstrap=settings))  # deterministic


def test_label_slices_are_the_metrics_of_each_labels_vectors(models):
    matrices, labels = models
    table = ef.embedding_quality({"healthy": matrices["healthy"]}, labels=labels, by_label=True, bootstrap=None)
    inside = np.flatnonzero(labels == 2)
    X = matrices["healthy"][inside]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert _value(table, "healthy", "avg_cosine_similarity", "label", "2")["value"] == pytest.approx(space.mean_cosine(U))
    assert _value(table, "healthy", "alignment", "label", "2")["value"] == pytest.approx(
        space.alignment(U, space.pairs_from_labels(np.zeros(len(inside)))))
    assert set(table.filter(pl.col("slice") == "label")["label"]) == {str(v) for v in np.unique(labels)}


def test_uniformity_sample_is_recorded(models):
    matrices, _ = models
    table = ef.embedding_quality({"h": matrices["healthy"]}, pair_budget=1000, sample_size=5000, seed=9, bootstrap=None)
    row = _value(table, "h", "uniformity")
    assert row["n"] == 5000 and "seed 9" in row["note"]
    assert _value(table, "h", "alignment")["value"] is None
    assert "no positive pairs" in _value(table, "h", "alignment")["note"]


def test_label_count_must_match(models):
    matrices, _ = models
    with pytest.raises(ef.InputError, match="3 labels"):
        ef.embedding_quality({"h": matrices["healthy"]}, labels=[1, 2, 3])
    with pytest.raises(ef.ConfigError, match="by_label"):
        ef.embedding_quality({"h": matrices["healthy"]}, by_label=True)
