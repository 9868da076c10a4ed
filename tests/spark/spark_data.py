"""Generated rows and comparisons shared by the Spark tests (the task side and Spark itself)."""

from __future__ import annotations

import numpy as np
import polars as pl

import evalframe as ef

RANKING = ["ndcg@10", "recall@10", "map", "P@5", "mrr"]
CLASSIFICATION = ["auroc", "ece"]
SLICES = {"overall": [], "topic": ["topic"]}
BOOTSTRAP = ef.Bootstrap(resamples=50, seed=7)
INTEGERS = ("n", "n_skipped", "n_outside_subset")
FLOATS = ("value", "std", "median", "p25", "p75", "p90", "min", "max", "se", "ci_low", "ci_high")


def generated(n_queries: int = 120, seed: int = 3) -> dict[str, pl.DataFrame]:
    """Two systems, 4–16 retrieved documents per query (tied scores included), graded qrels with
    judged-unretrieved documents and queries without a relevant one, a queries table with a
    topic, a label, a probability and a weight per (system, query)."""
    rng = np.random.default_rng(seed)
    query_ids = [f"q{i:04d}" for i in range(n_queries)]
    run_rows, qrels_rows, queries_rows = [], [], []
    for query_id in query_ids:
        docs = [f"d{j}" for j in range(rng.integers(8, 20))]
        for doc in docs:
            if rng.random() < 0.4:
                qrels_rows.append((query_id, doc, int(rng.integers(0, 4)) if rng.random() < 0.9 else 0))
        for system in ("bm25", "dense"):
            retrieved = rng.choice(docs, size=int(rng.integers(4, min(16, len(docs)) + 1)), replace=False)
            for doc in retrieved:
                run_rows.append((system, query_id, str(doc), float(np.round(rng.random(), 1))))  # ties
            queries_rows.append((system, query_id, f"t{rng.integers(0, 3)}", int(rng.integers(0, 2)),
                                 float(rng.random()), float(rng.integers(1, 4))))
    run = pl.DataFrame(run_rows, schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.String, "score": pl.Float64},
                       orient="row")
    qrels = pl.DataFrame(qrels_rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row")
    queries = pl.DataFrame(queries_rows, schema={"system": pl.String, "query_id": pl.String, "topic": pl.String,
                                                 "label": pl.Int64, "prob": pl.Float64, "w": pl.Float64}, orient="row")
    judged = qrels.get_column("query_id").unique()
    return {"run": run, "qrels": qrels, "queries": queries.filter(pl.col("query_id").is_in(judged.implode()))}


def in_memory(data, metrics, **options):
    tables = ef.Tables.from_run(ef.read_run(data["run"]), ef.read_qrels(data["qrels"]), options.pop("queries", None))
    return ef.evaluate(tables, metrics=metrics, **options)


def assert_same_summary(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    keys = [c for c in theirs.columns if c not in {*INTEGERS, *FLOATS, "note"}]
    assert ours.columns == theirs.columns
    ours, theirs = ours.sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True)
    assert ours.select(*keys, *INTEGERS, "note").equals(theirs.select(*keys, *INTEGERS, "note"))
    for column in FLOATS:
        a, b = ours.get_column(column).to_numpy(), theirs.get_column(column).to_numpy()
        assert np.array_equal(np.isnan(a.astype(float)), np.isnan(b.astype(float))), column
        np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-12, atol=0, equal_nan=True, err_msg=column)


def assert_same_replicates(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    keys = [c for c in theirs.columns if c != "values"]
    ours, theirs = ours.sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True)
    assert ours.select(keys).equals(theirs.select(keys))
    np.testing.assert_allclose(ours.get_column("values").to_numpy(), theirs.get_column("values").to_numpy(),
                               rtol=1e-12, atol=0, equal_nan=True)


def assert_same_per_unit_values(ours: pl.DataFrame, theirs: pl.DataFrame, keys=("system", "query_id", "metric", "subset")) -> None:
    """Keys and skip reasons exact; values to 1e-14 relative, as the kernel contract promises
    (Polars may round one expression differently on frames of different sizes)."""
    keys = list(keys)
    ours, theirs = ours.select(theirs.columns).sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True)
    assert ours.drop("value").equals(theirs.drop("value"))
    np.testing.assert_allclose(ours.get_column("value").to_numpy(), theirs.get_column("value").to_numpy(), rtol=1e-14,
                               atol=0, equal_nan=True)


POST_METRICS = ["macro_f1", "exact_match", "hamming_loss", "micro_f1", "weighted_f1", "label_macro_f1"]
POST_SLICES = {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]}


def generated_posts(n_posts: int = 40, seed: int = 5) -> dict[str, pl.DataFrame]:
    """Posts of 1–4 criteria (a query each: ``p007|c2``), two systems: a fold and a weight per
    post, a label per criterion, a probability per system and criterion; each query's 0–8
    candidates ranked (``rank``) by each system, the gold among them when the label is 1. One
    query (``zz|c0``) is ranked and judged but absent from the queries table."""
    rng = np.random.default_rng(seed)
    run_rows, qrels_rows, queries_rows = [], [], []
    for post in range(n_posts):
        post_id, fold, weight = f"p{post:03d}", int(rng.integers(0, 3)), float(rng.integers(1, 4))
        for criterion in range(int(rng.integers(1, 5))):
            query_id = f"{post_id}|c{criterion}"
            candidates = [f"{post_id}_s{i}" for i in range(int(rng.integers(0, 9)))]
            label = int(rng.integers(0, 2)) if candidates else 0
            for doc in candidates:
                relevant = label and rng.random() < 0.4
                if relevant or rng.random() < 0.3:
                    qrels_rows.append((query_id, doc, int(relevant)))
            for system in ("bm25", "dense"):
                for rank, position in enumerate(rng.permutation(len(candidates)), start=1):
                    run_rows.append((system, query_id, candidates[position], rank))
                queries_rows.append((system, query_id, post_id, f"c{criterion}", fold, label, float(np.round(rng.random(), 1)), weight))
    run_rows += [("bm25", "zz|c0", "zz_s0", 1), ("dense", "zz|c0", "zz_s0", 1)]
    qrels_rows.append(("zz|c0", "zz_s0", 1))
    run = pl.DataFrame(run_rows, schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64},
                       orient="row")
    qrels = pl.DataFrame(qrels_rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row")
    queries = pl.DataFrame(queries_rows, schema={"system": pl.String, "query_id": pl.String, "post_id": pl.String,
                                                 "criterion_id": pl.String, "fold": pl.Int64, "label": pl.Int64,
                                                 "prob": pl.Float64, "w": pl.Float64}, orient="row")
    return {"run": run, "qrels": qrels, "queries": queries}
