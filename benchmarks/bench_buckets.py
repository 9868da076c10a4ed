"""Out-of-core benchmark (issue 27 part 5a): the bucket path against the in-memory path.

Data from ``make_bucket_data.py`` (Parquet: run folder, qrels, queries with a ``topic`` slice).
Seven ranking metrics, slices ``overall`` and ``topic``, 1,000 bootstrap replicates. Each path
runs in its own child process, so its peak RSS is its own (``resource.getrusage`` of the
child process, ``ru_maxrss`` of ``RUSAGE_SELF`` at its end):

- ``memory``: ``ef.evaluate(read_run(folder), read_qrels(...), queries=...)``;
- ``buckets``: ``ef.evaluate(ef.scan_run("run/*.parquet"), ef.scan_qrels(...), queries=scan,
  buckets=--buckets)`` (default ``auto``, budget ``--memory``, default a third of the machine).

Prints wall and CPU time (user + sys: the fairer figure on a busy machine), time per ranking row, peak RSS and, when both ran, the ratio of the times per
row (target ≤ 1.5) and whether the summaries are equal (counts, quantiles and intervals bit for
bit; mean, std and se, which add in the buckets' order, within 1e-12). Writes ``benchmarks/results/buckets.json``.

Usage::

    python benchmarks/make_bucket_data.py --queries 1000000 --out /tmp/bucket-data-1m
    python benchmarks/bench_buckets.py --data /tmp/bucket-data-1m                 # both paths
    python benchmarks/bench_buckets.py --data /tmp/bucket-data-10m --paths buckets # 200 M rows
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

METRICS = ["ndcg@10", "ndcg@20", "recall@10", "recall@20", "P@10", "map", "mrr"]
SLICES = {"overall": [], "topic": ["topic"]}


def child(path: str, data: Path, out: Path, buckets: str, memory: str | None, resamples: int) -> None:
    """Run one path, write its summary to ``out`` and print its timing as JSON."""
    import polars as pl

    import evalframe as ef

    options = dict(metrics=METRICS, slices=SLICES, bootstrap=ef.Bootstrap(resamples=resamples))
    start = time.perf_counter()
    if path == "memory":
        run = ef.read_run(pl.read_parquet(data / "run" / "*.parquet"))
        result = ef.evaluate(run, ef.read_qrels(pl.read_parquet(data / "qrels.parquet")),
                             queries=pl.read_parquet(data / "queries.parquet"), **options)
        rows = run.height
    else:
        bucket_count = buckets if buckets == "auto" else int(buckets)
        result = ef.evaluate(ef.scan_run(str(data / "run" / "*.parquet")), ef.scan_qrels(data / "qrels.parquet"),
                             queries=pl.scan_parquet(data / "queries.parquet"), **options,
                             buckets=bucket_count, memory=memory)
        rows = pl.scan_parquet(data / "run" / "*.parquet").select(pl.len()).collect().item()
    seconds = time.perf_counter() - start
    result.summary.write_parquet(out)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this process's peak (kB on Linux) and CPU time
    print(json.dumps({"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "rows": rows,
                      "peak_rss_kb": usage.ru_maxrss}))


def run_child(path: str, args: argparse.Namespace, out: Path) -> dict:
    command = [sys.executable, __file__, "--child", path, "--data", str(args.data), "--out", str(out),
               "--buckets", args.buckets, "--resamples", str(args.resamples)]
    if args.memory:
        command += ["--memory", args.memory]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate()
    # the child's own peak RSS (os.wait4 is not available after communicate: use the Popen's rusage)
    if process.returncode:
        sys.exit(f"{path} failed:\n{stderr}")
    found = json.loads(stdout.strip().splitlines()[-1])
    found["peak_rss_gb"] = found.pop("peak_rss_kb") / 2**20
    return found


def equal_summaries(a: Path, b: Path) -> tuple[bool, float]:
    import numpy as np
    import polars as pl

    keys = ["grouping", "system", "topic", "metric", "subset"]
    x, y = pl.read_parquet(a).sort(keys, nulls_last=True), pl.read_parquet(b).sort(keys, nulls_last=True)
    exact = [*keys, "n", "n_skipped", "median", "p25", "p75", "p90", "min", "max", "ci_low", "ci_high"]
    same = x.select(exact).equals(y.select(exact))
    worst = 0.0
    for column in ("value", "std", "se"):
        u, v = x.get_column(column).to_numpy().astype(float), y.get_column(column).to_numpy().astype(float)
        difference = np.nanmax(np.abs(u - v) / np.maximum(np.abs(v), 1e-300)) if len(u) else 0.0
        worst = max(worst, float(difference))
    return same and worst <= 1e-12, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--paths", default="memory,buckets", help="memory, buckets or both (comma-separated)")
    parser.add_argument("--buckets", default="auto")
    parser.add_argument("--memory", default=None, help="memory budget of buckets=auto, e.g. 8GB")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--child", choices=["memory", "buckets"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data, args.out, args.buckets, args.memory, args.resamples)
        return
    results_dir = Path(__file__).parent / "results"
    results_dir.mkdir(exist_ok=True)
    found = {}
    for path in [p for p in ("buckets", "memory") if p in args.paths.split(",")]:
        out = results_dir / f"buckets_{path}_summary.parquet"
        found[path] = run_child(path, args, out) | {"summary": str(out)}
        r = found[path]
        print(f"{path:8s} {r['rows']:>13,} rows  {r['seconds']:8.1f} s wall  {r['cpu_seconds']:8.1f} s CPU  "
              f"{1e9 * r['seconds'] / r['rows']:8.1f} ns/row  peak RSS {r['peak_rss_gb']:.2f} GB", flush=True)
    if len(found) == 2:
        ratio = (found["buckets"]["seconds"] / found["buckets"]["rows"]) / (found["memory"]["seconds"] / found["memory"]["rows"])
        same, worst = equal_summaries(Path(found["buckets"]["summary"]), Path(found["memory"]["summary"]))
        found["ratio_time_per_row"] = ratio
        found["ratio_cpu_per_row"] = ((found["buckets"]["cpu_seconds"] / found["buckets"]["rows"])
                                      / (found["memory"]["cpu_seconds"] / found["memory"]["rows"]))
        found["equal"] = same
        found["largest_relative_difference"] = worst
        print(f"buckets / memory time per row: {ratio:.2f} wall, {found['ratio_cpu_per_row']:.2f} CPU (target ≤ 1.5); "
              f"summaries equal: {same} "
              f"(largest relative difference of value/std/se: {worst:.1e})")
    (results_dir / "buckets.json").write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
