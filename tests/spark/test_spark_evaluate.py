"""evalframe.spark on Spark ``local[2]`` against the in-memory path on the same rows (issue 27
parts 3 and 4): metrics per query and per post (multi-label), slices, weights, the bootstrap,
per-unit values written by Spark, and errors raised as evalframe's own.

One test function on purpose: a JVM takes seconds to start, and pytest-xdist would start one
per worker that runs a Spark test; everything that needs no JVM is in ``test_tasks.py``.
Arrow batches of 7 rows (a query has 4–16 rows per system) make units straddle batches.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evalframe.errors import ConfigError, InputError
from evalframe.spark import evaluate as spark_evaluate  # the `test` extra installs pyspark
from spark_data import (BOOTSTRAP, CLASSIFICATION, POST_METRICS, POST_SLICES, RANKING, SLICES, assert_same_per_unit_values,
                        assert_same_replicates, assert_same_summary, generated, generated_posts, in_memory)

# pyspark 4 warns about pandas >= 3 when a session starts; evalframe.spark exchanges Arrow only
pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")


def test_spark_local_gives_the_in_memory_evaluation(spark, tmp_path):
    data = generated()
    frames = {name: spark.createDataFrame(frame.to_arrow()) for name, frame in data.items()}
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")

    # ranking and classification set metrics, slices, weights, the bootstrap; per-unit values to Parquet
    options = {"slices": SLICES, "weight": "w", "bootstrap": BOOTSTRAP}
    path = str(tmp_path / "per_unit")
    ours = spark_evaluate(frames["run"], frames["qrels"], RANKING + CLASSIFICATION, queries=frames["queries"],
                          per_unit_path=path, rows_per_call=400, **options)
    theirs = in_memory(data, RANKING + CLASSIFICATION, queries=data["queries"], **options)
    assert theirs.summary.height == 2 * 4 * len(RANKING + CLASSIFICATION)  # systems × (overall + 3 topics) × metrics
    assert_same_summary(ours.summary, theirs.summary)
    assert_same_replicates(ours.replicates, theirs.replicates)
    assert ours.notes == theirs.notes
    assert ours.skipped.sort(ours.skipped.columns).equals(theirs.skipped.sort(theirs.skipped.columns))
    assert_same_per_unit_values(pl.read_parquet(f"{path}/*.parquet"), theirs.per_unit_values)
    with pytest.raises(ConfigError, match="exists"):  # nothing of the user's is replaced; checked before any job
        spark_evaluate(frames["run"], frames["qrels"], ["mrr"], per_unit_path=path)

    # no queries table: every system of the run × every judged query, one system absent from some tasks
    run = data["run"].filter(~((pl.col("system") == "dense") & (pl.col("query_id") < "q0040")))
    ours = spark_evaluate(spark.createDataFrame(run.to_arrow()), frames["qrels"], RANKING, missing="zero", partitions=2)
    theirs = in_memory({"run": run, "qrels": data["qrels"]}, RANKING, missing="zero")
    assert_same_summary(ours.summary, theirs.summary)
    assert ours.notes == theirs.notes

    # per-post (multi-label) metrics: the post is the partition and sort key; the run's and the qrels' rows go where
    # their query's post goes (a query absent from the queries table keeps its own key); per-unit values to Parquet
    posts = generated_posts()
    post_frames = {name: spark.createDataFrame(frame.to_arrow()) for name, frame in posts.items()}
    options = {"slices": POST_SLICES, "weight": "w", "bootstrap": BOOTSTRAP, "missing": "zero"}
    metrics = [*POST_METRICS, "recall@5", "ndcg@10", "auroc"]
    path = str(tmp_path / "per_post")
    ours = spark_evaluate(post_frames["run"], post_frames["qrels"], metrics, queries=post_frames["queries"], per_unit_path=path,
                          rows_per_call=30, partitions=3, **options)
    theirs = in_memory(posts, metrics, queries=posts["queries"], **options)
    assert theirs.summary.filter(pl.col("metric") == "macro_f1").height == 2 * (1 + 3)  # systems × (overall + folds)
    assert_same_summary(ours.summary, theirs.summary)
    assert_same_replicates(ours.replicates, theirs.replicates)
    assert sorted(ours.notes) == sorted(theirs.notes) and any("not in the queries table" in note for note in ours.notes)
    assert ours.skipped.sort(ours.skipped.columns).equals(theirs.skipped.sort(theirs.skipped.columns))
    written = pl.read_parquet(f"{path}/*.parquet")
    assert written.filter(pl.col("unit") == "post").height == theirs.per_unit_values.filter(pl.col("unit") == "post").height > 0
    assert_same_per_unit_values(written, theirs.per_unit_values, keys=["system", "post_id", "query_id", "metric", "subset"])
    with pytest.raises(ConfigError, match=r"queries DataFrame with the unit's key columns \['post_id'\]"):
        spark_evaluate(post_frames["run"], post_frames["qrels"], ["macro_f1"])
    # a query of two posts (one per system) is refused: its run and qrels rows could go to one post only
    moved = posts["queries"].with_columns(post_id=pl.when((pl.col("system") == "dense") & (pl.col("query_id") == "p001|c0"))
                                          .then(pl.lit("p999")).otherwise(pl.col("post_id")))
    with pytest.raises(InputError, match=r"query 'p001\|c0': is in 2 different units"):
        spark_evaluate(post_frames["run"], post_frames["qrels"], ["macro_f1"], queries=spark.createDataFrame(moved.to_arrow()),
                       missing="zero")

    # a bad value inside a task: evalframe's own error and message, no Java stack trace
    bad = data["run"].with_columns(score=pl.when(pl.col("doc_id") == "d3").then(np.inf).otherwise(pl.col("score")))
    with pytest.raises(InputError, match="score") as raised:
        spark_evaluate(spark.createDataFrame(bad.to_arrow()), frames["qrels"], ["ndcg@10"])
    message = str(raised.value)
    assert message.startswith("run DataFrame: ") and "doc 'd3', column `score`: is not a finite number (value: inf)" in message
    assert "java" not in message.lower() and "Traceback" not in message
