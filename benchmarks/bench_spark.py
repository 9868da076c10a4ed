"""Spark benchmark (issue 27 part 5b): evalframe.spark on Spark ``local[2]`` against the bucket
path on the same machine, and against Spark MLlib's ``RankingMetrics``.

What it does:

1. makes, once, a seeded run of ``--queries`` queries × ``--candidates`` candidates (distinct
   random scores) and binary qrels (a few retrieved and one never-retrieved relevant item per
   query, plus judged non-relevant items; every query has a relevant item), as Parquet under
   ``--data`` (reused when the parameters match);
2. times, in this process, each path from the Parquet files to the numbers in memory:
   - ``spark``: ``evalframe.spark.evaluate(spark.read.parquet(run), spark.read.parquet(qrels), …)``
     (the first Spark job of the process also pays the Python workers' start; the session's
     own start is timed apart);
   - ``buckets``: ``ef.evaluate(ef.scan_run(run), ef.scan_qrels(qrels), …, buckets=N)``;
   - ``mllib``: the run grouped per query into a ranked list (score descending, doc_id
     descending, as trec_eval), joined to its relevant items (grade descending) and their
     grades, then ``RankingMetrics(...).ndcgAt(10)``, ``precisionAt(10)``,
     ``meanAveragePrecision`` — the Python API, which sends the rows through Python;
3. checks that spark and buckets give the same summary (counts exact, values to 1e-12), and
   compares MLlib's three means with evalframe's ``ndcg@10``, ``P@10`` and ``map``.

Definitions (MLlib against evalframe): ``precisionAt(k)`` divides by k (= ``P@k``);
``meanAveragePrecision`` divides by the number of relevant items (= ``map``, trec_eval's);
``ndcgAt(k)`` is documented as gain 2^rel − 1 with relevance values, but through the Python API
here it gave the binary nDCG on graded judgments (0.3219705578925736 on 5,000 graded queries,
evalframe's ``ndcg@10`` on the judgments binarised: 0.321971; graded 0.268691), so the data is
binary, where every gain convention agrees. A query without a relevant item scores 0 and counts in MLlib,
while evalframe skips it: the data has none, so the means are comparable. MLlib has no slices,
no intervals, no per-query values.

Usage::

    python benchmarks/bench_spark.py --queries 20000            # a quick check
    python benchmarks/bench_spark.py --queries 2000000          # issue 27 part 5b (minutes)
    python benchmarks/bench_spark.py --paths spark,buckets      # leave MLlib out
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

BENCH_DIR = Path(__file__).resolve().parent
METRICS = ["ndcg@10", "P@10", "map", "recall@10", "mrr"]
#: MLlib's call for each evalframe metric it has.
MLLIB = {"ndcg@10": "ndcgAt(10)", "precision@10": "precisionAt(10)", "map": "meanAveragePrecision"}
GENERATOR_VERSION = 2


def make_data(folder: Path, n_queries: int, n_candidates: int, seed: int = 27) -> tuple[Path, Path]:
    """The run and qrels Parquet files (made once per parameters; no Python loop over rows)."""
    stem = f"spark_v{GENERATOR_VERSION}_{n_queries}x{n_candidates}_s{seed}"
    run_path, qrels_path = folder / f"{stem}_run.parquet", folder / f"{stem}_qrels.parquet"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    query = np.repeat(np.arange(n_queries), n_candidates)
    doc = np.tile(np.arange(n_candidates), n_queries)
    query_ids = pl.Series("query_id", np.char.add("q", np.arange(n_queries).astype(str)))
    run = pl.DataFrame({
        "query_id": query_ids.gather(query),
        "doc_id": pl.Series(np.char.add("d", doc.astype(str))),
        "score": rng.random(query.size),
    })
    # judged: each candidate with probability 0.25 (relevant or not), one relevant candidate per
    # query for sure, and one relevant item nobody retrieved; binary grades (module docstring)
    judged = rng.random(query.size) < 0.25
    sure = np.arange(n_queries) * n_candidates + rng.integers(0, n_candidates, n_queries)
    judged[sure] = True
    grades = rng.integers(0, 2, query.size)
    grades[sure] = 1
    qrels = pl.concat([
        pl.DataFrame({"query_id": query_ids.gather(query[judged]), "doc_id": run.get_column("doc_id").filter(pl.Series(judged)),
                      "relevance": grades[judged]}),
        pl.DataFrame({"query_id": query_ids, "doc_id": pl.Series(["unretrieved"] * n_queries),
                      "relevance": np.ones(n_queries, dtype=np.int64)}),
    ])
    run.write_parquet(run_path)
    qrels.write_parquet(qrels_path)
    return run_path, qrels_path


def spark_session(cores: int, memory: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master(f"local[{cores}]").appName("evalframe-bench")
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(4 * cores)).config("spark.driver.memory", memory)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def run_spark(spark, run_path: Path, qrels_path: Path):
    from evalframe.spark import evaluate

    return evaluate(spark.read.parquet(str(run_path)), spark.read.parquet(str(qrels_path)), METRICS)


def run_buckets(run_path: Path, qrels_path: Path, buckets: int | str):
    import evalframe as ef

    return ef.evaluate(ef.scan_run(str(run_path)), ef.scan_qrels(str(qrels_path)), METRICS, buckets=buckets)


def run_mllib(spark, run_path: Path, qrels_path: Path) -> dict[str, float]:
    """MLlib's means (module docstring): ranked lists and relevant lists built in Spark SQL."""
    import pyspark.sql.functions as F
    from pyspark.mllib.evaluation import RankingMetrics

    run = spark.read.parquet(str(run_path))
    qrels = spark.read.parquet(str(qrels_path)).where(F.col("relevance") >= 1)
    ranked = run.groupBy("query_id").agg(
        F.sort_array(F.collect_list(F.struct(-F.col("score"), F.col("doc_id"))), asc=True).alias("items"))
    # doc_id descending among equal scores: sort by (-score asc, doc_id desc) — scores are distinct here
    ranked = ranked.select("query_id", F.col("items.doc_id").alias("predicted"))
    relevant = qrels.groupBy("query_id").agg(
        F.sort_array(F.collect_list(F.struct(-F.col("relevance").cast("double"), F.col("doc_id"))), asc=True).alias("items"))
    relevant = relevant.select("query_id", F.col("items.doc_id").alias("labels"),
                               F.transform(F.col("items.col1"), lambda g: -g).alias("grades"))
    pairs = ranked.join(relevant, "query_id").select("predicted", "labels", "grades")
    metrics = RankingMetrics(pairs.rdd.map(tuple))
    return {"ndcg@10": metrics.ndcgAt(10), "precision@10": metrics.precisionAt(10), "map": metrics.meanAveragePrecision}


#: Summary statistics compared between the Spark and the bucket paths.
STATISTICS = ("value", "std", "median", "p25", "p75", "p90", "min", "max", "se")


def summary_values(evaluation) -> pl.DataFrame:
    return evaluation.summary.select("metric", "n", "n_skipped", *STATISTICS).sort("metric")


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a − b| / |b| (0 where both are 0); infinite when one is NaN and the other not."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf")
    both = ~np.isnan(a)
    scale = np.where(b[both] == 0, 1.0, np.abs(b[both]))
    return float(np.max(np.abs(a[both] - b[both]) / scale)) if both.any() else 0.0


def compare_paths(ours, theirs) -> dict:
    """Spark against buckets: summary counts exact and statistics' largest relative difference;
    the per-unit values (every query × metric): keys and skip reasons exact, values' difference."""
    a, b = summary_values(ours), summary_values(theirs)
    keys = ["system", "query_id", "metric"]
    values_a = ours.per_unit_values.select(*keys, "value", "skip_reason").sort(keys)
    values_b = theirs.per_unit_values.select(*keys, "value", "skip_reason").sort(keys)
    return {
        "same_summary_counts": a.select("metric", "n", "n_skipped").equals(b.select("metric", "n", "n_skipped")),
        "summary_max_relative_difference": max(relative_difference(a[c].to_numpy(), b[c].to_numpy()) for c in STATISTICS),
        "per_unit_values": values_a.height,
        "same_per_unit_keys": values_a.drop("value").equals(values_b.drop("value")),
        "per_unit_max_relative_difference": relative_difference(values_a["value"].to_numpy(), values_b["value"].to_numpy()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--paths", default="spark,buckets,mllib")
    parser.add_argument("--buckets", default="auto")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--data", type=Path, default=BENCH_DIR / "data")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each path (the fastest counts; the first "
                        "Spark job also starts the Python workers)")
    args = parser.parse_args()
    paths = args.paths.split(",")
    started = time.perf_counter()
    run_path, qrels_path = make_data(args.data, args.queries, args.candidates)
    figures: dict[str, object] = {"queries": args.queries, "candidates": args.candidates, "rows": args.queries * args.candidates,
                                  "data_seconds": round(time.perf_counter() - started, 1)}
    results = {}
    spark = None
    if "spark" in paths or "mllib" in paths:
        started = time.perf_counter()
        spark = spark_session(args.cores, args.driver_memory)
        figures["spark_session_seconds"] = round(time.perf_counter() - started, 1)
    for path in paths:
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            if path == "spark":
                results[path] = run_spark(spark, run_path, qrels_path)
            elif path == "buckets":
                results[path] = run_buckets(run_path, qrels_path, int(args.buckets) if args.buckets.isdigit() else args.buckets)
            elif path == "mllib":
                results[path] = run_mllib(spark, run_path, qrels_path)
            else:
                parser.error(f"unknown path {path!r} (spark, buckets, mllib)")
            times.append(round(time.perf_counter() - started, 2))
        figures[f"{path}_seconds"] = min(times)
        figures[f"{path}_runs"] = times
        print(f"{path:8s} {times} s", flush=True)
    status = 0
    if "spark" in results and "buckets" in results:
        compared = compare_paths(results["spark"], results["buckets"])
        compared["time_ratio"] = round(figures["spark_seconds"] / figures["buckets_seconds"], 2)
        figures["spark_vs_buckets"] = compared
        equal = (compared["same_summary_counts"] and compared["same_per_unit_keys"]
                 and compared["summary_max_relative_difference"] <= 1e-12 and compared["per_unit_max_relative_difference"] <= 1e-14)
        status |= 0 if equal else 1
        print(f"spark / buckets: {compared}")
    reference = results.get("spark") or results.get("buckets")
    if "mllib" in results and reference is not None:
        ours = dict(reference.summary.select("metric", "value").iter_rows())
        figures["mllib_vs_evalframe"] = {metric: {"mllib": results["mllib"][metric], "evalframe": ours[metric],
                                                  "difference": results["mllib"][metric] - ours[metric]} for metric in MLLIB}
        for metric, call in MLLIB.items():
            row = figures["mllib_vs_evalframe"][metric]
            print(f"{metric:8s} MLlib {call:22s} {row['mllib']:.15f}  evalframe {row['evalframe']:.15f}  Δ {row['difference']:.1e}")
        if "spark_seconds" in figures:
            figures["mllib_vs_spark_time_ratio"] = round(figures["mllib_seconds"] / figures["spark_seconds"], 2)
    print(json.dumps(figures, indent=2, default=str))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    if spark is not None:
        spark.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
