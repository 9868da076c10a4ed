"""The pipeline's out-of-core path (issue 27 part 2): ``evalframe run evidence_contract --input BIG
--buckets auto --memory M`` with an input larger than ``M``, against the same run in memory.

Input: the bundled sample replicated ``--scale`` times (``bench_pipeline.make_data``: posts
renumbered per copy; 30,000 rows and 14.6 MB per copy). Each path runs as the ``evalframe run``
command in its own process (``--no-bootstrap`` unless ``--bootstrap N``; outputs summary.csv
and run.json); the figures are the process's wall time, CPU time (user + sys) and peak RSS
(``wait4``). The two summaries and the two dynamic-K sweep tables must agree: keys and counts
exactly, every number within 1e-12 relative (sums added in another order), and so must run.json's
row counts; the script exits 1 otherwise.

Usage::

    python benchmarks/bench_pipeline_buckets.py --scale 10 --memory 128MB
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from bench_pipeline import ROOT, make_data  # noqa: E402


def run(input_path: Path, out: Path, extra: list[str]) -> dict:
    """``evalframe run`` in a fresh process: wall and CPU seconds, peak RSS in MB."""
    command = [str(Path(sys.executable).with_name("evalframe")), "run", "evidence_contract", "--input", str(input_path),
               "--out", str(out), "--outputs", "summary.csv,run.json", "-q", *extra]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: a check failed, outputs written
        raise SystemExit(f"failed: {' '.join(command)}")
    return {"wall_s": time.perf_counter() - started, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": usage.ru_maxrss / 1024}


def same_summaries(left: Path, right: Path) -> bool:
    import numpy as np
    import polars as pl

    a, b = pl.read_csv(left, infer_schema_length=None), pl.read_csv(right, infer_schema_length=None)
    if a.columns != b.columns or a.height != b.height:
        return False
    floats = [c for c, dtype in a.schema.items() if dtype.is_float()]
    if not a.drop(floats).equals(b.drop(floats)):
        return False
    return all(np.isclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-12, atol=0, equal_nan=True).all() for c in floats)


def same_table_counts(left: Path, right: Path) -> bool:
    """Whether the two run.json files give the same row counts (queries, ranking, judgments, systems)."""
    import json

    return json.loads(left.read_text())["tables"] == json.loads(right.read_text())["tables"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10, help="copies of the sample (default 10: 300,000 rows)")
    parser.add_argument("--memory", default="128MB", help="the bucket path's memory budget (default 128MB)")
    parser.add_argument("--bootstrap", type=int, default=0, help="bootstrap replicates (default 0: no intervals)")
    args = parser.parse_args()
    data = make_data(args.scale)
    size_mb = data.stat().st_size / 2**20
    intervals = ["--set", f"bootstrap.resamples={args.bootstrap}"] if args.bootstrap else ["--no-bootstrap"]
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-buckets-") as scratch:
        scratch = Path(scratch)
        memory = run(data, scratch / "memory", intervals)
        buckets = run(data, scratch / "buckets", [*intervals, "--buckets", "auto", "--memory", args.memory,
                                                  "--bucket-dir", str(scratch)])
        equal = same_summaries(scratch / "memory" / "summary.csv", scratch / "buckets" / "summary.csv")
        sweeps_equal = same_summaries(scratch / "memory" / "dynamic_k_sweep.csv", scratch / "buckets" / "dynamic_k_sweep.csv")
        counts_equal = same_table_counts(scratch / "memory" / "run.json", scratch / "buckets" / "run.json")
    print(f"input: {data.name}, {size_mb:,.0f} MB ({args.scale * 30_000:,} rows); bucket budget --memory {args.memory}; "
          f"{'bootstrap ' + str(args.bootstrap) if args.bootstrap else 'no bootstrap'}")
    print(f"{'path':<22}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}")
    for label, figures in (("in memory", memory), ("buckets auto", buckets)):
        print(f"{label:<22}{figures['wall_s']:>9.1f}{figures['cpu_s']:>9.1f}{figures['peak_rss_mb']:>13,.0f}")
    print(f"peak RSS ratio (buckets / in memory): {buckets['peak_rss_mb'] / memory['peak_rss_mb']:.2f}; "
          f"summaries {'equal' if equal else 'DIFFER'}; dynamic-K sweeps {'equal' if sweeps_equal else 'DIFFER'}; "
          f"run.json's table counts {'equal' if counts_equal else 'DIFFER'}")
    sys.exit(0 if equal and sweeps_equal and counts_equal else 1)


if __name__ == "__main__":
    main()
