"""evalframe.spark against the in-memory path on the same generated rows (issue 27 parts 3, 4).

Spark ``local[2]`` (one session for the test process, ``conftest.py``): ranking metrics
(nDCG, recall, MAP, P, MRR), classification set metrics (AUROC, ECE), slices, weights and the
bootstrap give the in-memory summary — counts exact, floats to 1e-12 relative, replicate values
and CIs equal; units that straddle Arrow batches; per-unit values written by Spark; a bad value
in a task raised as evalframe's own error.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.errors import InputError

pytest.importorskip("pyspark")  # the `test` extra installs it: this never skips in `make test`

from evalframe.spark import evaluate as spark_evaluate  # noqa: E402

RANKING = ["ndcg@10", "recall@10", "map", "P@5", "mrr"]
CLASSIFICATION = ["auroc", "ece"]
SLICES = {"overall": [], "topic": ["topic"]}
BOOTSTRAP = ef.Bootstrap(resamples=50, seed=7)
INTEGERS = ("n", "n_skipped", "n_outside_subset")
FLOATS = ("value", "std", "median", "p25", "p75", "p90", "min", "max", "se", "ci_low", "ci_high")


def _generated(n_queries: int = 120, seed: int = 3) -> dict[str, pl.DataFrame]:
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


@pytest.fixture(scope="module")
def data():
    return _generated()


@pytest.fixture(scope="module")
def spark_data(spark, data):
    return {name: spark.createDataFrame(frame.to_arrow()) for name, frame in data.items()}


def _in_memory(data, metrics, **options):
    tables = ef.Tables.from_run(ef.read_run(data["run"]), ef.read_qrels(data["qrels"]), options.pop("queries", None))
    return ef.evaluate(tables, metrics=metrics, **options)


def _assert_same_summary(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    keys = [c for c in theirs.columns if c not in {*INTEGERS, *FLOATS, "note"}]
    assert ours.columns == theirs.columns
    ours, theirs = ours.sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True)
    assert ours.select(*keys, *INTEGERS, "note").equals(theirs.select(*keys, *INTEGERS, "note"))
    for column in FLOATS:
        a, b = ours.get_column(column).to_numpy(), theirs.get_column(column).to_numpy()
        assert np.array_equal(np.isnan(a.astype(float)), np.isnan(b.astype(float))), column
        np.testing.assert_allclose(a.astype(float), b.astype(float), rtol=1e-12, atol=0, equal_nan=True, err_msg=column)


def _assert_same_replicates(ours: pl.DataFrame, theirs: pl.DataFrame) -> None:
    keys = [c for c in theirs.columns if c != "values"]
    ours, theirs = ours.sort(keys, nulls_last=True), theirs.sort(keys, nulls_last=True)
    assert ours.select(keys).equals(theirs.select(keys))
    np.testing.assert_allclose(ours.get_column("values").to_numpy(), theirs.get_column("values").to_numpy(),
                               rtol=1e-12, atol=0, equal_nan=True)


def test_ranking_metrics_with_slices_weights_and_bootstrap_equal_in_memory(data, spark_data):
    options = {"slices": SLICES, "weight": "w", "bootstrap": BOOTSTRAP}
    ours = spark_evaluate(spark_data["run"], spark_data["qrels"], RANKING + CLASSIFICATION, queries=spark_data["queries"],
                          **options)
    theirs = _in_memory(data, RANKING + CLASSIFICATION, queries=data["queries"], **options)
    assert theirs.summary.height == 2 * 4 * len(RANKING + CLASSIFICATION)  # systems × (overall + 3 topics) × metrics
    _assert_same_summary(ours.summary, theirs.summary)
    _assert_same_replicates(ours.replicates, theirs.replicates)
    assert ours.notes == theirs.notes
    assert ours.skipped.sort(ours.skipped.columns).equals(theirs.skipped.sort(theirs.skipped.columns))


def test_units_straddling_arrow_batches_and_no_queries_table(spark, data, spark_data):
    """Batches of 7 rows (a query has 4–16 rows per system), a kernel call per few units: every
    unit is carried whole across batch boundaries; without a queries table the evaluated queries
    are every system × every judged query, as in memory."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "7")
    try:
        ours = spark_evaluate(spark_data["run"], spark_data["qrels"], RANKING, slices={"overall": []}, rows_per_call=20,
                              partitions=2)
    finally:
        spark.conf.set(key, before)
    theirs = _in_memory(data, RANKING)
    _assert_same_summary(ours.summary, theirs.summary)
    assert ours.per_unit_values.height == theirs.per_unit_values.height


def test_per_unit_values_written_by_spark(tmp_path, data, spark_data):
    path = str(tmp_path / "per_unit")
    ours = spark_evaluate(spark_data["run"], spark_data["qrels"], ["ndcg@10", "recall@10"], queries=spark_data["queries"],
                          slices=SLICES, per_unit_path=path)
    theirs = _in_memory(data, ["ndcg@10", "recall@10"], queries=data["queries"], slices=SLICES)
    written = pl.read_parquet(f"{path}/*.parquet")
    expected = theirs.per_unit_values
    keys = ["system", "query_id", "metric", "subset"]
    assert written.select(expected.columns).sort(keys).equals(expected.sort(keys))
    _assert_same_summary(ours.summary, theirs.summary)


def test_a_bad_value_in_a_task_is_evalframes_error(spark, data):
    run = data["run"].with_columns(score=pl.when(pl.col("doc_id") == "d3").then(float("inf")).otherwise(pl.col("score")))
    run_sdf, qrels_sdf = spark.createDataFrame(run.to_arrow()), spark.createDataFrame(data["qrels"].to_arrow())
    with pytest.raises(InputError) as raised:
        spark_evaluate(run_sdf, qrels_sdf, ["ndcg@10"])
    message = str(raised.value)
    assert "score" in message and "finite" in message
    assert "java" not in message.lower() and "Traceback" not in message
    with pytest.raises(InputError, match="score"):
        ef.evaluate(run, data["qrels"], ["ndcg@10"])
