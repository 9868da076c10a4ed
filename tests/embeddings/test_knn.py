"""Exact kNN retrieval (``ef.knn_run``) against a brute-force sort, and through the engine's metrics."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.engine import knn


def brute_force(Q, C, k, metric="cosine", doc_ids=None):
    """Every score, then Python's sort by (score desc, doc_id desc): the engine's tie rule."""
    if metric == "cosine":
        Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        C = C / np.linalg.norm(C, axis=1, keepdims=True)
    scores = Q @ C.T
    doc_ids = doc_ids if doc_ids is not None else [str(j) for j in range(len(C))]
    rows = []
    for i in range(len(Q)):
        ranked = sorted(range(len(C)), key=lambda j: (scores[i, j], doc_ids[j].encode()), reverse=True)[:k]
        rows += [(str(i), doc_ids[j], r + 1, scores[i, j]) for r, j in enumerate(ranked)]
    return rows


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("tile_cells", [knn.TILE_CELLS, 40, 7])
def test_knn_equals_brute_force_sort(metric, tile_cells):
    rng = np.random.default_rng(0)
    # ±1 vectors in 4 dimensions (norm 2; for dot products, scaled by whole numbers): every score is exact whatever
    # the order of the arithmetic, and many tie (the tie rule decides).
    Q = rng.choice([-1.0, 1.0], size=(23, 4))
    C = rng.choice([-1.0, 1.0], size=(157, 4))
    if metric == "dot":
        Q *= rng.integers(1, 4, size=(23, 1))
        C *= rng.integers(1, 4, size=(157, 1))
    for k in (1, 5, 157, 500):
        got = knn.knn_run(Q, C, k=k, metric=metric, tile_cells=tile_cells)
        want = brute_force(Q, C, k, metric)
        assert got.select("query_id", "doc_id", "rank").rows() == [row[:3] for row in want]
        np.testing.assert_allclose(got["score"].to_numpy(), [row[3] for row in want], atol=1e-12)


def test_ties_at_the_cut_follow_doc_id_descending_as_the_engine():
    C = np.array([[1.0, 0.0]] * 6)  # six equal documents
    doc_ids = ["a", "b", "c", "aa", "10", "9"]
    corpus = ef.read_embeddings(pl.DataFrame({"id": doc_ids, "vector": C.tolist()}))["default"]
    run = knn.knn_run(np.array([[1.0, 0.0]]), corpus, k=3, tile_cells=2)
    assert run["doc_id"].to_list() == ["c", "b", "aa"]  # byte-wise descending: c > b > aa > a > 9 > 10
    # The engine ranks the scores alone the same way.
    ranked = ef.evaluate(run.drop("rank"), pl.DataFrame({"query_id": ["0"], "doc_id": ["c"], "relevance": [1]}),
                         metrics=["mrr"])
    assert ranked.summary["value"].to_list() == [1.0]


def test_knn_run_through_the_engine_equals_metrics_by_hand():
    rng = np.random.default_rng(4)
    Q, C = rng.normal(size=(40, 6)), rng.normal(size=(300, 6))
    relevant = rng.integers(0, 300, size=(40, 3))
    qrels = pl.DataFrame({"query_id": np.repeat(np.arange(40), 3).astype(str),
                          "doc_id": relevant.ravel().astype(str), "relevance": 1}).unique(["query_id", "doc_id"])
    run = ef.knn_run(Q, C, k=20)
    ev = ef.evaluate(run, qrels, metrics=["recall@10", "mrr", "ndcg@10", "precision@5"])
    values = dict(zip(ev.summary["metric"], ev.summary["value"]))
    ranked = [[doc for _, doc, _, _ in group] for group in np.array_split(brute_force(Q, C, 20), 40)]
    truth = [set(qrels.filter(pl.col("query_id") == str(i))["doc_id"]) for i in range(40)]
    recall = np.mean([len(set(r[:10]) & t) / len(t) for r, t in zip(ranked, truth)])
    mrr = np.mean([next((1 / (p + 1) for p, d in enumerate(r) if d in t), 0.0) for r, t in zip(ranked, truth)])
    precision = np.mean([len(set(r[:5]) & t) / 5 for r, t in zip(ranked, truth)])
    ndcg = np.mean([sum(1 / np.log2(p + 2) for p, d in enumerate(r[:10]) if d in t)
                    / sum(1 / np.log2(p + 2) for p in range(min(10, len(t)))) for r, t in zip(ranked, truth)])
    assert values["recall@10"] == pytest.approx(recall)
    assert values["mrr"] == pytest.approx(mrr)
    assert values["precision@5"] == pytest.approx(precision)
    assert values["ndcg@10"] == pytest.approx(ndcg)


def test_several_models_are_several_systems_and_compare_applies():
    rng = np.random.default_rng(9)
    C = rng.normal(size=(200, 8))
    Q = C[:60] + rng.normal(scale=0.3, size=(60, 8))  # query i is near document i
    noisy = Q + rng.normal(scale=2.0, size=Q.shape)
    run = ef.knn_run({"good": Q, "noisy": noisy}, {"good": C, "noisy": C}, k=10)
    assert run["system"].unique().sort().to_list() == ["good", "noisy"]
    qrels = ef.relevance_judgments(np.arange(60))
    ev = ef.evaluate(run, qrels, metrics=["recall@10", "mrr"], bootstrap=ef.Bootstrap(resamples=200))
    values = {(s, m): v for s, m, v in ev.summary.select("system", "metric", "value").iter_rows()}
    assert values[("good", "mrr")] > values[("noisy", "mrr")]
    assert ev.summary["ci_low"].null_count() == 0
    comparison = ef.compare(ev, baseline="noisy")
    assert set(comparison["system"]) == {"good"}


def test_score_run_and_relevance_shapes():
    scores = np.array([[0.2, 0.9, 0.9, 0.1], [0.5, 0.4, 0.3, 0.2]])
    run = ef.score_run(scores, k=3, doc_ids=["d0", "d1", "d2", "d3"])
    assert run.filter(pl.col("query_id") == "0")["doc_id"].to_list() == ["d2", "d1", "d0"]
    graded = ef.relevance_judgments(np.array([[0, 2, 0, 1], [3, 0, 0, 0]]), doc_ids=["d0", "d1", "d2", "d3"])
    assert graded.sort("query_id", "doc_id").rows() == [("0", "d1", 2), ("0", "d3", 1), ("1", "d0", 3)]
    with pytest.raises(ef.InputError, match="not a whole grade"):
        ef.relevance_judgments(np.array([[0.5, 0.0]]))
    with pytest.raises(ef.InputError, match="not a corpus row index"):
        ef.relevance_judgments(np.array([0, 7]), doc_ids=["a", "b"])


def test_bad_inputs_are_named():
    with pytest.raises(ef.InputError, match="row 2.*zero vector"):
        ef.knn_run(np.ones((2, 3)), np.array([[1.0, 0, 0], [0, 0, 0]]), k=1)
    assert ef.knn_run(np.ones((1, 3)), np.array([[1.0, 0, 0], [0, 0, 0]]), k=1, metric="dot")["doc_id"].to_list() == ["0"]
    with pytest.raises(ef.InputError, match="different lengths"):
        ef.knn_run(np.ones((2, 3)), np.ones((4, 2)), k=1)
    with pytest.raises(ef.ConfigError, match="`k` must be"):
        ef.knn_run(np.ones((2, 3)), np.ones((4, 3)), k=0)
    with pytest.raises(ef.ConfigError, match="`metric` must be"):
        ef.knn_run(np.ones((2, 3)), np.ones((4, 3)), metric="l2")


def test_docstring_examples_run():
    import doctest

    from evalframe.analyses import embedding_quality
    from evalframe.io import embeddings

    for module in (knn, embeddings, embedding_quality):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
