"""Intrinsic embedding metrics against plain NumPy / SciPy references that build the n × n
matrices and the full SVD the blocked code avoids (seed 004 §21.1; definitions in
:mod:`evalframe.metrics.embedding_space`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist

from evalframe.metrics import embedding_space as space


# --- references: the definitions written the slow, obvious way ------------------------------
def ref_isotropy(X):
    lam = np.clip(np.linalg.eigvalsh(np.cov(X, rowvar=False, ddof=1).reshape(X.shape[1], X.shape[1])), 1e-10, None)[::-1]
    return {
        "partition_isotropy": lam.min() * lam.size / lam.sum(),
        "effective_dimensionality": lam.sum() ** 2 / (lam**2).sum(),
        "effective_dim_ratio": lam.sum() ** 2 / (lam**2).sum() / X.shape[1],
        "top_10_variance_ratio": lam[:10].sum() / lam.sum(),
        "top_50_variance_ratio": lam[:50].sum() / lam.sum(),
        "embedding_dim": X.shape[1],
    }


def ref_unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def ref_mean_cosine(X):
    U = ref_unit(X)
    sims = U @ U.T
    return sims[~np.eye(len(U), dtype=bool)].mean()


def ref_uniformity_all_pairs(U, t=2.0):
    return np.log(np.exp(-t * pdist(U, "sqeuclidean")).mean())


def ref_collapse(X, threshold=0.01):
    variances = X.var(axis=0, ddof=1)
    sigma = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    p = sigma / sigma.sum()
    p = p[p > 0]
    return {
        "dead_dimensions": int((variances < threshold).sum()),
        "variance_min": variances.min(),
        "variance_p25": np.percentile(variances, 25),
        "variance_median": np.sort(variances)[(len(variances) - 1) // 2],  # torch.median: the lower middle
        "variance_p75": np.percentile(variances, 75),
        "variance_max": variances.max(),
        "effective_rank": np.exp(-(p * np.log(p)).sum()),
        "stable_rank": sigma.sum() ** 2 / (sigma**2).sum(),
        "stable_rank_classic": (sigma**2).sum() / sigma.max() ** 2,
    }


def ref_label_pairs(labels):
    """The chapter's double loop, verbatim in NumPy."""
    pairs = []
    for label in np.unique(labels):
        indices = np.flatnonzero(labels == label)
        for i in range(min(len(indices), 50)):
            for j in range(i + 1, min(len(indices), 50)):
                pairs.append([indices[i], indices[j]])
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _matrices():
    rng = np.random.default_rng(7)
    rank_two = rng.normal(size=(60, 2)) @ rng.normal(size=(2, 12))
    constant = rng.normal(size=(40, 6))
    constant[:, 2] = 3.5
    offset = rng.normal(size=(50, 5)) * 0.01 + 1000.0  # a large mean: centring must not cancel
    anisotropic = rng.normal(size=(200, 64))
    anisotropic[:, :10] *= 10
    return {
        "random": rng.normal(size=(120, 16)),
        "random_float32": rng.normal(size=(90, 24)).astype(np.float32),
        "rank_deficient": rank_two,
        "constant_column": constant,
        "n_below_d": rng.normal(size=(5, 20)),
        "d_is_1": rng.normal(size=(30, 1)) + 0.3,
        "large_mean": offset,
        "anisotropic": anisotropic,
        "two_rows": np.array([[1.0, 0.0], [0.0, 2.0]]),
    }


MATRICES = _matrices()


@pytest.fixture(params=[None, 7], ids=["one_block", "blocks_of_7"])
def blocks(request, monkeypatch):
    """Every test runs with one block and with blocks of 7 rows (and pair tiles of 5)."""
    if request.param:
        monkeypatch.setattr(space, "BLOCK_ROWS", request.param)
        monkeypatch.setattr(space, "PAIR_BLOCK", request.param)
        monkeypatch.setattr(space, "PAIR_TILE", 5)
    return request.param


@pytest.mark.parametrize("name", MATRICES)
def test_isotropy_matches_the_reference(name, blocks):
    X = MATRICES[name]
    got = space.isotropy(space.Spectrum.of(X))
    want = ref_isotropy(X.astype(np.float64))
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key


@pytest.mark.parametrize("name", MATRICES)
def test_mean_cosine_in_O_nd_equals_the_n_by_n_definition(name, blocks):
    X = MATRICES[name].astype(np.float64)
    U = ref_unit(X)
    assert space.mean_cosine(U) == pytest.approx(ref_mean_cosine(X), abs=1e-12)
    assert space.cosine_contributions(U).mean() == pytest.approx(ref_mean_cosine(X), abs=1e-12)
    # Each vector's contribution is its mean cosine to the others.
    sims = U @ U.T
    np.fill_diagonal(sims, np.nan)
    np.testing.assert_allclose(space.cosine_contributions(U), np.nanmean(sims, axis=1), atol=1e-12)


@pytest.mark.parametrize("name", MATRICES)
def test_blocked_uniformity_equals_every_pair(name, blocks):
    U = ref_unit(MATRICES[name].astype(np.float64))
    found = space.uniformity(U)
    assert found.exact and found.pairs == len(U) * (len(U) - 1) // 2
    assert found.value == pytest.approx(ref_uniformity_all_pairs(U), rel=1e-10)
    assert space.uniformity(U, t=0.5).value == pytest.approx(ref_uniformity_all_pairs(U, 0.5), rel=1e-10)


def test_sampled_uniformity_is_seeded_recorded_and_unbiased():
    U = ref_unit(np.random.default_rng(3).normal(size=(400, 8)))
    exact = ref_uniformity_all_pairs(U)
    a = space.uniformity(U, pair_budget=100, sample_size=20_000, seed=5)
    b = space.uniformity(U, pair_budget=100, sample_size=20_000, seed=5)
    c = space.uniformity(U, pair_budget=100, sample_size=20_000, seed=6)
    assert (a.exact, a.pairs, a.seed) == (False, 20_000, 5) and "seed 5" in a.note and "20,000" in a.note
    assert a.value == b.value and a.value != c.value
    assert abs(a.value - exact) < 0.05
    # The sample is i ≠ j uniformly: recompute it with the same generator calls.
    rng = np.random.default_rng(5)
    first = rng.integers(0, 400, size=20_000)
    second = rng.integers(0, 399, size=20_000)
    second += second >= first
    assert (first != second).all()
    d = ((U[first] - U[second]) ** 2).sum(axis=1)
    assert a.value == pytest.approx(np.log(np.exp(-2 * d).mean()), rel=1e-12)


@pytest.mark.parametrize("name", MATRICES)
def test_collapse_matches_the_svd_reference(name, blocks):
    X = MATRICES[name]
    got = space.collapse(space.Spectrum.of(X))
    want = ref_collapse(X.astype(np.float64))
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    d = X.shape[1]
    assert got["dead_ratio"] == want["dead_dimensions"] / d
    assert got["collapse_detected"] == (want["dead_dimensions"] / d > 0.1 or want["effective_rank"] < 0.3 * d)


def test_collapse_of_identical_rows_has_zero_rank():
    got = space.collapse(space.Spectrum.of(np.ones((10, 4))))
    assert (got["effective_rank"], got["stable_rank"], got["dead_dimensions"], got["collapse_detected"]) == (0.0, 0.0, 4, True)


def test_alignment_and_pairs_from_labels_match_the_chapters_loops():
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 7, 400)  # some labels have more than 50 members
    labels[:3] = 99  # a label of 3 members
    labels[3] = 100  # a label of one member: no pair
    pairs = space.pairs_from_labels(labels)
    np.testing.assert_array_equal(pairs, ref_label_pairs(labels))
    U = ref_unit(rng.normal(size=(400, 9)))
    want = np.mean([np.linalg.norm(U[a] - U[b]) ** 2 for a, b in ref_label_pairs(labels)])
    assert space.alignment(U, pairs) == pytest.approx(want, rel=1e-12)
    assert space.alignment(U, pairs, alpha=1.0) == pytest.approx(
        np.mean([np.linalg.norm(U[a] - U[b]) for a, b in pairs]), rel=1e-12)
    assert space.alignment(U, np.empty((0, 2), dtype=np.int64)) is None


def test_pairs_from_text_labels_and_nulls():
    labels = np.array(["b", "a", None, "b", "a", "a", float("nan")], dtype=object)
    assert space.pairs_from_labels(labels).tolist() == [[1, 4], [1, 5], [4, 5], [0, 3]]


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 6)),
              elements=st.floats(-10, 10, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-3)))
def test_random_matrices_against_the_references(X):
    norms = np.linalg.norm(X, axis=1)
    spectrum = space.Spectrum.of(X)
    if np.ptp(X, axis=0).max() > 0:
        want = ref_isotropy(X)
        got = space.isotropy(spectrum)
        for key in ("partition_isotropy", "effective_dimensionality", "top_10_variance_ratio"):
            assert got[key] == pytest.approx(want[key], rel=1e-6, abs=1e-9)
        want_collapse = ref_collapse(X)
        assert space.collapse(spectrum)["stable_rank"] == pytest.approx(want_collapse["stable_rank"], rel=1e-6, abs=1e-9)
    if (norms > 0).all():
        U = ref_unit(X)
        assert space.mean_cosine(U) == pytest.approx(ref_mean_cosine(X), abs=1e-12)
        assert space.uniformity(U).value == pytest.approx(ref_uniformity_all_pairs(U), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("metric", "value", "verdict"), [
    ("partition_isotropy", 0.6, "good"), ("partition_isotropy", 0.4, "fair"),
    ("effective_dim_ratio", 0.6, "good"), ("effective_dim_ratio", 0.3, "fair"), ("effective_dim_ratio", 0.1, "warning"),
    ("avg_cosine_similarity", 0.0, "good"), ("avg_cosine_similarity", 0.05, "good"), ("avg_cosine_similarity", -0.02, "fair"),
    ("avg_cosine_similarity", 0.2, "fair"), ("avg_cosine_similarity", 0.31, "warning"),
    ("top_10_variance_ratio", 0.1, "good"), ("top_10_variance_ratio", 0.3, "fair"), ("top_10_variance_ratio", 0.6, "warning"),
    ("alignment", 0.4, "good"), ("alignment", 0.6, "fair"), ("uniformity", -2.5, "good"), ("uniformity", -1.5, "fair"),
    ("dead_ratio", 0.0, "good"), ("dead_ratio", 0.5, "warning"), ("alignment", None, None),
])
def test_health_verdicts_follow_the_chapters_thresholds(metric, value, verdict):
    assert space.HEALTH[metric].verdict(value) == verdict
