"""The embedding chapter's examples (seed 004 §21.1.1–§21.2.5), reproduced to its printed figures.

Each example draws its inputs after ``torch.manual_seed(42)``; :mod:`torch_rng` regenerates the
same numbers with NumPy (PyTorch's CPU Mersenne Twister and its rand / randint / randn
transforms), so these tests need no torch. The figures are the chapter's printed ones (4
decimals); evalframe computes them with its own code (intrinsic metrics, ``knn_run`` /
``score_run`` into the ranking engine).

Not reproduced: §21.6.2 (``EfficientEvaluator``) samples its queries with NumPy's global,
unseeded generator (``np.random.choice`` with no seed) and a 10,000 × 100,000 relevance matrix
(4 GB in torch): its printed Recall@10 cannot be regenerated.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from torch_rng import TorchGenerator

import evalframe as ef
from evalframe.metrics import embedding_space as space


def _summary(run, qrels, metrics, empty="skip"):
    evaluation = ef.evaluate(run, qrels, metrics=metrics, empty=empty, missing="zero")
    rows = evaluation.summary.filter(pl.col("grouping") == "overall")
    return dict(zip(rows["metric"], rows["value"]))


def test_isotropy_example_21_1_1():
    g = TorchGenerator(42)
    isotropic = g.randn(1000, 256)
    anisotropic = g.randn(1000, 256)
    anisotropic[:, :10] *= 10
    printed = {"iso": (0.2481, 0.7938, 0.0001), "aniso": (0.0518, 0.0591, -0.0001)}
    for name, X in (("iso", isotropic), ("aniso", anisotropic)):
        metrics = space.isotropy(space.Spectrum.of(X))
        partition, ratio, cosine = printed[name]
        assert round(metrics["partition_isotropy"], 4) == partition
        assert round(metrics["effective_dim_ratio"] * 100, 2) == round(ratio * 100, 2)
        assert round(space.mean_cosine(X / np.linalg.norm(X, axis=1, keepdims=True)), 4) == cosine


def test_alignment_uniformity_example_21_1_2():
    g = TorchGenerator(42)
    X = g.randn(500, 128)
    labels = g.randint(0, 10, (500,))
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    pairs = space.pairs_from_labels(labels)
    assert round(space.alignment(U, pairs), 4) == 1.9989
    # The chapter's uniformity is a sample of 10,000 index pairs drawn next from the generator
    # (pairs with i = j dropped). The same sample, through evalframe's pair kernel, gives its figure:
    first, second = g.randint(0, 500, (10_000,)), g.randint(0, 500, (10_000,))
    keep = first != second
    sampled = np.stack([first[keep], second[keep]], axis=1)
    distances = space.pair_distances(U, sampled, alpha=2.0)
    assert round(float(np.log(np.exp(-2.0 * distances).mean())), 4) == -3.9338
    # evalframe's own value is over every pair (124,750 ≤ the budget): within the sample's error.
    exact = space.uniformity(U)
    assert exact.exact and exact.pairs == 124_750
    assert abs(exact.value - (-3.9338)) < 0.02


def test_collapse_example_21_1_3():
    g = TorchGenerator(42)
    healthy = g.randn(1000, 256)
    collapsed = g.randn(1000, 256)
    collapsed[:, 50:] = 0.01 * g.randn(1000, 206)
    h = space.collapse(space.Spectrum.of(healthy))
    c = space.collapse(space.Spectrum.of(collapsed))
    assert (h["dead_dimensions"], round(h["effective_rank"], 1), h["collapse_detected"]) == (0, 247.0, False)
    assert (c["dead_dimensions"], round(c["effective_rank"], 1), c["collapse_detected"]) == (206, 61.5, True)


def test_recall_example_21_2_1_through_knn_and_the_engine():
    g = TorchGenerator(42)
    queries, corpus = g.randn(100, 256), g.randn(10_000, 256)
    relevant = g.randint(0, 10_000, (100,))
    run = ef.knn_run(queries, corpus, k=100)
    qrels = ef.relevance_judgments(relevant)
    values = _summary(run, qrels, ["recall@1", "recall@5", "recall@10", "recall@50", "recall@100"])
    assert [round(values[f"recall@{k}"], 4) for k in (1, 5, 10, 50, 100)] == [0.0, 0.0, 0.0, 0.0, 0.01]


def test_precision_example_21_2_2():
    g = TorchGenerator(42)
    similarities = g.randn(50, 1000)
    relevance = (g.rand(50, 1000) < 0.01).astype(np.int64)
    values = _summary(ef.score_run(similarities), ef.relevance_judgments(relevance),
                      ["precision@1", "precision@5", "precision@10"], empty="zero")
    assert [round(values[f"precision@{k}"], 4) for k in (1, 5, 10)] == [0.0, 0.0, 0.002]


def test_map_example_21_2_3():
    g = TorchGenerator(42)
    similarities = g.randn(100, 1000)
    relevance = (g.rand(100, 1000) < 0.02).astype(np.int64)
    evaluation = ef.evaluate(ef.score_run(similarities), ef.relevance_judgments(relevance), metrics=["map"],
                             empty="zero", missing="zero")
    per_query = evaluation.per_query.filter(pl.col("metric") == "map").get_column("value").to_numpy()
    assert round(per_query.mean(), 4) == 0.0259
    assert round(per_query.std(ddof=0), 4) == 0.0102  # the chapter's np.std


def test_mrr_example_21_2_4():
    g = TorchGenerator(42)
    similarities = g.randn(100, 1000)
    relevance = (g.rand(100, 1000) < 0.01).astype(np.int64)
    evaluation = ef.evaluate(ef.score_run(similarities), ef.relevance_judgments(relevance), metrics=["mrr"],
                             empty="zero", missing="zero")
    per_query = evaluation.per_query.filter(pl.col("metric") == "mrr").get_column("value").to_numpy()
    assert round(per_query.mean(), 4) == 0.0434
    assert int((per_query > 0).sum()) == 100


def test_ndcg_example_21_2_5_graded():
    g = TorchGenerator(42)
    similarities = g.randn(100, 1000)
    relevance = np.zeros((100, 1000), dtype=np.int64)
    relevance[g.rand(100, 1000) < 0.01] = 1
    relevance[g.rand(100, 1000) < 0.005] = 2
    relevance[g.rand(100, 1000) < 0.002] = 3
    values = _summary(ef.score_run(similarities), ef.relevance_judgments(relevance),
                      ["ndcg@5", "ndcg@10", "ndcg@20"], empty="zero")
    assert [round(values[f"ndcg@{k}"], 4) for k in (5, 10, 20)] == [0.0032, 0.0066, 0.0132]


@pytest.mark.parametrize("shape", [(1000, 256), (37, 3), (16,)])
def test_torch_twin_draws_normals_from_its_uniforms(shape):
    """The twin's Box–Muller is fed by its own uniforms: a fresh generator's first uniforms give
    the first normals' radius and angle (guards the twin itself, checked once against torch)."""
    values = TorchGenerator(42).randn(*shape).ravel()
    uniforms = TorchGenerator(42).rand(values.size)
    if values.size >= 16:
        u1, u2 = 1.0 - uniforms[0], uniforms[8]
        assert values[0] == pytest.approx(np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2), rel=1e-5)
