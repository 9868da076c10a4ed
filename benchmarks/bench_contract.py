"""Contract benchmark (issue 10, part 10): the evidence pipeline with the gate, ablation, tuning and
checks stages against the same pipeline without them, and one fold's threshold grid.

Two questions, measured in one run on the same machine:

1. **Pipeline.** ``evalframe run pipelines/evidence_contract.yaml`` on the bundled sample (29,540
   rows) as it is now (three-state gate metrics, the ablation table, (τ_neg, τ_pos) and §2.3
   threshold tuning at a 0.01 grid, the consistency checks) against the *current pipeline*: the same
   file without the gate metric group and without the ``ablation:``, ``tuning:`` and ``checks:``
   blocks (what the bundled pipeline computed before issue 10). Each run reads and validates the
   CSV, computes everything and writes every output into a fresh temporary folder, in this process
   (after one warm-up run of each, so imports and first-call plan compilation are not counted),
   the two variants alternating. Target: within 2x.
2. **Grid.** The tuning of one fold's grid: 10,011 (τ_neg ≤ τ_pos) points (141 thresholds) over the
   11,820 tuning queries of one test fold of the sample (the four other folds of
   ``full_pipeline``): cumulative counts, the gate's state of every grid point, the seven gate
   metrics from their own ``finalize``, the choice rule. Target: well under a second.

Medians over ``--runs`` runs (default 7) are printed and written to ``benchmarks/results/contract.json``.

Usage::

    python benchmarks/bench_contract.py            # 7 runs of each
    python benchmarks/bench_contract.py --runs 3   # a quick check
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import yaml

import evalframe as ef
from evalframe.analyses.tuning import GateRule, choose_gate, counts_below, gate_counts_table, gate_pairs, metric_columns
from evalframe.metrics.gate import GATE_METRICS

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = ROOT / "data_samples" / "per_query.csv"
RESULTS = ROOT / "benchmarks" / "results" / "contract.json"
GATE_NAMES = {metric.key for metric in GATE_METRICS}
AFTER_ENGINE = ("ablation", "tuning", "checks")


def pipelines() -> dict[str, ef.Pipeline]:
    spec = yaml.safe_load(PIPELINE.read_text())
    current = {key: value for key, value in spec.items() if key not in AFTER_ENGINE}
    current["metrics"] = [group for group in spec["metrics"] if not set(group["names"]) <= GATE_NAMES]
    return {"current pipeline": ef.Pipeline.from_mapping(current), "with issue 10": ef.Pipeline.from_mapping(spec)}


def time_pipeline(pipeline: ef.Pipeline) -> float:
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        evaluation = pipeline.run(SAMPLE)
        evaluation.write(Path(folder) / "out", pipeline.outputs)
        return time.perf_counter() - start


def time_grid() -> tuple[float, int, int]:
    queries = pl.read_csv(SAMPLE, columns=["config", "fold", "has_evidence_gold", "p_has_evidence"])
    tuning = queries.filter((pl.col("config") == "full_pipeline") & (pl.col("fold") != 0))
    prob = tuning.get_column("p_has_evidence").to_numpy().astype(float)
    label = tuning.get_column("has_evidence_gold").to_numpy()
    thresholds = np.linspace(0.0, 1.0, 141)
    gate = {metric.key: metric(tau_neg=0.0, tau_pos=0.0) for metric in GATE_METRICS}
    start = time.perf_counter()
    i, j = gate_pairs(thresholds)
    below = counts_below(prob, label, np.ones(len(prob)), np.zeros(len(prob), dtype=np.int64), 1, thresholds)
    values = metric_columns(gate_counts_table(below, i, j), gate)
    choose_gate(values, (thresholds[i], thresholds[j]), GateRule(), 1)
    return time.perf_counter() - start, len(i), len(prob)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    variants = pipelines()
    for pipeline in variants.values():
        time_pipeline(pipeline)  # warm-up
    time_grid()
    times: dict[str, list[float]] = {name: [] for name in variants}
    grid_times = []
    for _ in range(args.runs):
        for name, pipeline in variants.items():
            times[name].append(time_pipeline(pipeline))
        seconds, points, rows = time_grid()
        grid_times.append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["with issue 10"] / medians["current pipeline"]
    grid = statistics.median(grid_times)
    print(f"evidence pipeline on the sample (29,540 rows), median of {args.runs} runs:")
    for name, value in medians.items():
        print(f"  {name:<18} {value:7.3f} s")
    print(f"  ratio              {ratio:7.2f}x  (target: within 2x)")
    print(f"one fold's tuning grid: {points:,} points x {rows:,} queries: {grid * 1000:.1f} ms median (target: well under 1 s)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "machine": {"python": platform.python_version(), "processor": platform.processor(), "polars": pl.__version__},
        "runs": args.runs,
        "pipeline_seconds": {name: {"median": medians[name], "all": values} for name, values in times.items()},
        "ratio": ratio,
        "grid": {"points": points, "queries": rows, "median_seconds": grid, "all": grid_times},
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
