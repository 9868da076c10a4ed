"""Speed targets of issue 22, each a ratio measured in the same run (``make bench``).

Every case times whole processes (a fresh interpreter each, as a user runs them), two commands in
turn — A B A B … after one warm-up of each — and reports, per command, the median wall time, CPU
time and peak RSS (``os.wait4`` in a small launcher process), and the median of the pair-by-pair ratios (a pair runs within
seconds, so a ratio holds when a shared machine's speed drifts):

========== ============================================================== ===========================
case       A / B                                                          target
========== ============================================================== ===========================
trec       ``evalframe trec`` (7 measures, 100k queries × 100 docs,       B / A ≥ 8, memory A / B ≤ 0.4
           Parquet) / pytrec_eval reading the same files
pipeline   evidence pipeline, summary.csv + run.json, no bootstrap /      B / A ≥ 10
           the lean pandas + scikit-learn script (sample × 5)
outputs    the same with the default outputs (reports, plots, curves) /   A / B ≤ 2 (≤ 1× on top)
           summary only
bootstrap  summary only with 1,000 resamples / without (sample × 5);      A / B ≤ 3; loop / A ≥ 30
           and a pandas + scikit-learn bootstrap loop on the sample
           (``bench_bootstrap.loop_bootstrap``, scaled to 1,000) against
           evalframe with CIs on the sample
compare    ``evalframe compare`` on the demo output, all metrics          A ≤ 10 s
import     ``python -c "import evalframe"`` / ``import polars``           A ≤ 0.3 s
========== ============================================================== ===========================

ranx (≥ 25× with a warm JIT cache) comes from ``bench_ranking.py`` (same data, its own harness).
Results go to ``benchmarks/results/speed.json``; ``write_results.py`` turns them and the other
benchmarks' JSON into ``benchmarks/RESULTS.md``.

Usage::

    python benchmarks/bench_speed.py                 # every case, 3 pairs each
    python benchmarks/bench_speed.py --cases import,outputs --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "benchmarks"
RESULTS_DIR = BENCH_DIR / "results"
PIPELINE = ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = ROOT / "data_samples" / "per_query.csv"
PYTHON = sys.executable
EVALFRAME = str(Path(PYTHON).with_name("evalframe"))
#: trec_eval measures of the ranking benchmark (its 7 metrics).
TREC_MEASURES = ["-m", "recall.5,10", "-m", "P.5", "-m", "success.10", "-m", "recip_rank", "-m", "map_cut.100",
                 "-m", "ndcg_cut.10"]
#: Outputs of the summary-only run.
SUMMARY_ONLY = ["summary.csv", "run.json"]
#: The report outputs a pipeline writes by default (the bundled pipeline's list, without replicates).
DEFAULT_OUTPUTS = ["per_query.parquet", "per_unit.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json",
                   "curves.parquet", "report.md", "report.html", "report.tex", "report_tables.csv", "plots"]

sys.path.insert(0, str(BENCH_DIR))


# --- commands -----------------------------------------------------------------------------------


#: The bundled pipeline's stages after the engine (tables besides the summary).
ANALYSES = ("dynamic_k_sweep", "ablation", "tuning", "checks")


def pipeline_variant(folder: Path, name: str, *, outputs: list[str], bootstrap: bool, analyses: bool = True) -> Path:
    """The bundled pipeline with its ``outputs`` replaced, its bootstrap kept or removed, and its
    analyses (:data:`ANALYSES`) kept or removed."""
    import yaml

    spec = yaml.safe_load(PIPELINE.read_text())
    spec["outputs"] = outputs
    if not bootstrap:
        spec.pop("bootstrap", None)
    if not analyses:
        for key in ANALYSES:
            spec.pop(key, None)
    spec["input"]["path"] = str(SAMPLE)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def evalframe_run(pipeline: Path, input_path: Path, out: Path) -> list[str]:
    return [EVALFRAME, "run", str(pipeline), "--input", str(input_path), "--out", str(out), "-q"]


PYTREC_CHILD = """
import sys
import pyarrow.parquet as pq
import pytrec_eval
run_table = pq.read_table(sys.argv[1])
run = {}
for q, d, s in zip(run_table.column("query_id").to_pylist(), run_table.column("doc_id").to_pylist(),
                   run_table.column("score").to_pylist()):
    run.setdefault(q, {})[d] = s
del run_table
qrels_table = pq.read_table(sys.argv[2])
qrels = {}
for q, d, r in zip(qrels_table.column("query_id").to_pylist(), qrels_table.column("doc_id").to_pylist(),
                   qrels_table.column("relevance").to_pylist()):
    qrels.setdefault(q, {})[d] = r
measures = {"recall.5,10", "P.5", "success.10", "recip_rank", "map_cut.100", "ndcg_cut.10"}
per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
print(len(per_query))
"""


# --- the harness ----------------------------------------------------------------------------------


#: A small process that starts the timed command and reports its wall time and ``wait4`` usage as
#: JSON on stdout. Linux keeps a process's peak RSS across ``exec``, so a command forked straight
#: from this harness (which holds the generated data) would report at least the harness's own
#: memory; forked from this launcher, it reports its own peak (plus the launcher's ~10 MB at most).
LAUNCHER = r"""
import json, os, sys, time
command = sys.argv[1:]
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        os.write(2, f"{command[0]}: {error}\n".encode())
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
print(json.dumps({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
                  "code": os.waitstatus_to_exitcode(status)}))
"""


def run_once(command: list[str], *, timeout: float | None = None) -> dict:
    """One whole process: wall and CPU seconds and peak RSS (MB), through :data:`LAUNCHER`. A command
    that exits with a status other than 0 or 1 (1: a pipeline's failed check, outputs written)
    stops the benchmark with its status and stderr; on ``timeout``, or when the harness is
    interrupted, the launcher and the command are killed together."""
    process = subprocess.Popen([PYTHON, "-S", "-c", LAUNCHER, *command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"wall_s": None, "timed_out_after_s": timeout, "command": command}
    except BaseException:  # Ctrl-C: the command is in a session of its own, so it did not get it
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    errors = stderr.decode(errors="replace")[-2000:]
    if process.returncode != 0 or not stdout.strip():
        raise SystemExit(f"benchmark launcher failed ({process.returncode}): {' '.join(command)}\n{errors}")
    usage = json.loads(stdout)
    code = usage.pop("code")
    if code not in (0, 1):
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(command)}\n{errors}")
    return usage


def paired(a: list[str], b: list[str], runs: int, *, warmup: bool = True) -> dict:
    """A and B in turn, ``runs`` pairs after one warm-up each: medians and pair-by-pair ratios."""
    if warmup:
        run_once(a)
        run_once(b)
    pairs = [(run_once(a), run_once(b)) for _ in range(runs)]
    return summarise(pairs)


def summarise(pairs: list[tuple[dict, dict]]) -> dict:
    def median(side: int, key: str) -> float:
        return statistics.median(p[side][key] for p in pairs)

    return {
        "runs": len(pairs),
        "a": {key: median(0, key) for key in ("wall_s", "cpu_s", "peak_mb")},
        "b": {key: median(1, key) for key in ("wall_s", "cpu_s", "peak_mb")},
        "a_over_b_wall": statistics.median(a["wall_s"] / b["wall_s"] for a, b in pairs),
        "a_over_b_cpu": statistics.median(a["cpu_s"] / b["cpu_s"] for a, b in pairs),
        "a_over_b_peak": statistics.median(a["peak_mb"] / b["peak_mb"] for a, b in pairs),
        "walls": [[a["wall_s"], b["wall_s"]] for a, b in pairs],
    }


# --- the cases -----------------------------------------------------------------------------------


def case_trec(args, work: Path) -> dict:
    from bench_ranking import make_data

    paths = make_data(args.queries, args.candidates, 42)
    run_path, qrels_path = paths["run"], paths["qrels"]
    a = [EVALFRAME, "trec", str(qrels_path), str(run_path), *TREC_MEASURES]
    b = [PYTHON, "-c", PYTREC_CHILD, str(run_path), str(qrels_path)]
    result = paired(a, b, args.runs)
    result.update(target="pytrec_eval / evalframe trec >= 8 (wall), memory evalframe / pytrec_eval <= 0.4",
                  size=f"{args.queries:,} queries x {args.candidates} candidates",
                  ratio=1 / result["a_over_b_wall"], met=1 / result["a_over_b_wall"] >= 8 and result["a_over_b_peak"] <= 0.4)
    return result


def case_pipeline(args, work: Path) -> dict:
    from bench_pipeline import make_data

    data = make_data(args.scale)
    # The same work as the pandas script: the 53 metrics, their slices and across folds.
    metrics_only = pipeline_variant(work, "metrics_only", outputs=SUMMARY_ONLY, bootstrap=False, analyses=False)
    summary_only = pipeline_variant(work, "summary_only", outputs=SUMMARY_ONLY, bootstrap=False)
    a = evalframe_run(metrics_only, data, work / "out_pipeline")
    b = [PYTHON, str(BENCH_DIR / "pandas_reference.py"), str(data), "--out", str(work / "out_reference"),
         "--per-query", "loop"]
    result = paired(a, b, args.runs)
    # The bundled pipeline as a whole (its dynamic-K sweep, ablation, tuning and checks too).
    whole = paired(evalframe_run(summary_only, data, work / "out_whole"), a, args.runs, warmup=False)
    result.update(target="lean pandas script / evalframe >= 10 (wall)", size=f"sample x {args.scale}",
                  ratio=1 / result["a_over_b_wall"], met=1 / result["a_over_b_wall"] >= 10,
                  with_analyses={"wall_s": whole["a"]["wall_s"], "cpu_s": whole["a"]["cpu_s"],
                                 "over_metrics_only_wall": whole["a_over_b_wall"]})
    return result


def case_outputs(args, work: Path) -> dict:
    from bench_pipeline import make_data

    data = make_data(args.scale)
    summary_only = pipeline_variant(work, "summary_only", outputs=SUMMARY_ONLY, bootstrap=False)
    default = pipeline_variant(work, "default_outputs", outputs=DEFAULT_OUTPUTS, bootstrap=False)
    a = evalframe_run(default, data, work / "out_default")
    b = evalframe_run(summary_only, data, work / "out_summary")
    result = paired(a, b, args.runs)
    result.update(target="default outputs / summary only <= 2 (the outputs cost <= 1x the summary run on top)",
                  size=f"sample x {args.scale}", ratio=result["a_over_b_wall"], met=result["a_over_b_wall"] <= 2)
    return result


def case_bootstrap(args, work: Path) -> dict:
    from bench_pipeline import make_data

    data = make_data(args.bootstrap_scale)
    with_ci = pipeline_variant(work, "with_ci", outputs=SUMMARY_ONLY, bootstrap=True)
    without = pipeline_variant(work, "without_ci", outputs=SUMMARY_ONLY, bootstrap=False)
    result = paired(evalframe_run(with_ci, data, work / "out_ci"), evalframe_run(without, data, work / "out_noci"),
                    args.runs)
    # The loop anchor: bench_bootstrap's pandas + scikit-learn loop on the sample, scaled to 1,000.
    from bench_bootstrap import RESAMPLES, loop_bootstrap

    started = time.perf_counter()
    loop_bootstrap(args.loop_resamples)
    loop_seconds = (time.perf_counter() - started) * RESAMPLES / args.loop_resamples
    on_sample = [run_once(evalframe_run(with_ci, SAMPLE, work / "out_ci_sample")) for _ in range(args.runs)]
    sample_wall = statistics.median(r["wall_s"] for r in on_sample)
    result.update(
        target="with CIs / without <= 3 (wall); pandas bootstrap loop / evalframe with CIs >= 30",
        size=f"sample x {args.bootstrap_scale} (ratio to no-CI); the sample (loop)",
        ratio=result["a_over_b_wall"],
        loop={"resamples_run": args.loop_resamples, "seconds_scaled_to_1000": loop_seconds,
              "evalframe_with_ci_on_sample_s": sample_wall, "ratio": loop_seconds / sample_wall},
        met=result["a_over_b_wall"] <= 3 and loop_seconds / sample_wall >= 30,
    )
    return result


def case_compare(args, work: Path) -> dict:
    demo = work / "demo_output"
    # `make demo`'s own run (the pipeline with the sample's overlay), not timed
    run_once([EVALFRAME, "run", str(PIPELINE), "--config", str(ROOT / "data_samples" / "evidence_contract.sample.yaml"),
              "--out", str(demo), "-q"])
    command = [EVALFRAME, "compare", str(demo), "--baseline", "retriever_only", "--out", str(work / "compare.csv")]
    runs = [run_once(command, timeout=args.compare_timeout) for _ in range(args.runs)]
    finished = [r for r in runs if r.get("wall_s") is not None]
    if not finished:
        return {"target": "compare <= 10 s", "runs": len(runs), "timed_out_after_s": args.compare_timeout, "met": False}
    wall = statistics.median(r["wall_s"] for r in finished)
    return {"target": "compare <= 10 s", "runs": len(finished), "a": {"wall_s": wall,
            "cpu_s": statistics.median(r["cpu_s"] for r in finished),
            "peak_mb": statistics.median(r["peak_mb"] for r in finished)}, "ratio": wall, "met": wall <= 10}


def case_import(args, work: Path) -> dict:
    a = [PYTHON, "-c", "import evalframe"]
    b = [PYTHON, "-c", "import polars"]
    result = paired(a, b, max(args.runs, 5))
    heavy = subprocess.run(
        [PYTHON, "-c", "import sys, evalframe; print(','.join(m for m in ('matplotlib', 'great_tables', 'pandera', "
         "'sklearn', 'scipy', 'pandas', 'pyarrow') if m in sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout.strip()
    result.update(target="import evalframe <= 0.3 s", ratio=result["a"]["wall_s"],
                  heavy_modules_imported=heavy.split(",") if heavy else [], met=result["a"]["wall_s"] <= 0.3)
    return result


CASES = {"import": case_import, "trec": case_trec, "pipeline": case_pipeline, "outputs": case_outputs,
         "bootstrap": case_bootstrap, "compare": case_compare}


def compile_bytecode() -> None:
    """Compile evalframe's modules to bytecode first, as installing the package does: a shell with
    PYTHONDONTWRITEBYTECODE set (or a read-only checkout) would otherwise compile every module
    in every timed process, about 0.07 s of each command's start."""
    import compileall

    compileall.compile_dir(ROOT / "evalframe", quiet=1)


def machine() -> dict:
    import platform

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    memory = next((int(line.split()[1]) // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), None) if Path("/proc/meminfo").exists() else None
    return {"cpu": model, "cores": os.cpu_count(), "memory_mb": memory, "python": platform.python_version(),
            "load_average_start": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated (default all: {','.join(CASES)})")
    parser.add_argument("--runs", type=int, default=3, help="pairs per case after a warm-up (default 3)")
    parser.add_argument("--scale", type=int, default=5, help="multiple of the sample for the pipeline cases (default 5)")
    parser.add_argument("--bootstrap-scale", type=int, default=5, help="multiple of the sample for the bootstrap case")
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--loop-resamples", type=int, default=3)
    parser.add_argument("--compare-timeout", type=float, default=120.0)
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "speed.json")
    args = parser.parse_args(argv)
    previous = json.loads(args.output.read_text()) if args.output.exists() else {}
    results = {"machine": machine(), "cases": dict(previous.get("cases", {}))}
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="evalframe-bench-") as folder:
        for name in args.cases.split(","):
            print(f"[{time.strftime('%H:%M:%S')}] {name} ...", flush=True)
            found = CASES[name](args, Path(folder))
            found["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            found["load_average"] = os.getloadavg()
            found["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                             cwd=Path(__file__).resolve().parent).stdout.strip() or "unknown"
            results["cases"][name] = found
            print(f"  {name}: ratio {found.get('ratio')}, met {found.get('met')}", flush=True)
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(results, indent=2) + "\n")
    results["machine"]["load_average_end"] = os.getloadavg()
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
