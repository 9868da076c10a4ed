"""Write ``benchmarks/RESULTS.md`` from the benchmarks' JSON results (``make bench``'s last step).

Reads ``benchmarks/results/speed.json`` (``bench_speed.py``: every issue-22 target as a paired
ratio) and ``benchmarks/results/ranking.json`` (``bench_ranking.py``: ranx and the per-query
agreement with pytrec_eval), and prints the machine, the versions and one row per target.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
OUT = ROOT / "benchmarks" / "RESULTS.md"
PACKAGES = ("polars", "numpy", "pyarrow", "pandas", "scikit-learn", "scipy", "matplotlib", "pandera",
            "pytrec-eval-terrier", "ranx", "numba")
#: Above this load average per core the machine was busy: the figures say so.
BUSY_LOAD_PER_CORE = 1.5


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    import subprocess

    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return found.stdout.strip() or "unknown"


def _commits(cases: dict) -> str:
    """The commit each case was measured at (recorded by bench_speed.py; older results: HEAD's)."""
    by_commit: dict[str, list[str]] = {}
    for name, case in cases.items():
        by_commit.setdefault(case.get("commit") or _commit(), []).append(name)
    if len(by_commit) <= 1:
        return f"commit {next(iter(by_commit), _commit())}"
    return "commits " + "; ".join(f"{commit} ({', '.join(names)})" for commit, names in by_commit.items())


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _mb(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} MB"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}×"


def rows(speed: dict, ranking: dict | None) -> list[str]:
    cases = speed.get("cases", {})
    out = ["| target | evalframe (median) | anchor (median) | ratio (median of pairs) | peak memory | met | pairs | load avg |",
           "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: |"]

    def load(case: dict) -> str:
        return f"{case['load_average'][0]:.1f}" if case.get("load_average") else "—"

    def met(case: dict) -> str:
        return "yes" if case.get("met") else "**no**"

    if (case := cases.get("trec")) is not None:
        out.append(f"| 1. `evalframe trec`, 7 measures, {case['size']}: ≥ 8× pytrec_eval, memory ≤ 0.4× | "
                   f"{_s(case['a']['wall_s'])} | pytrec_eval {_s(case['b']['wall_s'])} | {_x(1 / case['a_over_b_wall'])} (cpu {_x(1 / case['a_over_b_cpu'])}) | "
                   f"{_mb(case['a']['peak_mb'])} vs {_mb(case['b']['peak_mb'])} ({case['a_over_b_peak']:.2f}×) | "
                   f"{met(case)} | {case['runs']} | {load(case)} |")
    if ranking is not None:
        timings = {row["tool"]: row for row in ranking.get("timings", [])}
        ef = (timings.get("evalframe") or {}).get("seconds")
        warm = next((row["seconds"] for tool, row in timings.items() if tool.startswith("ranx") and "warm" in tool), None)
        if not warm:
            out.append("| 1. ≥ 25× ranx (warm JIT cache) | — | not measured in this run (`bench_ranking.py --skip-ranx`) "
                       "| — | — | — | — | — |")
        if ef and warm:
            out.append(f"| 1. ≥ 25× ranx (warm JIT cache), same data (`bench_ranking.py`, read + evaluate in process) | "
                       f"{_s(ef)} | ranx {_s(warm)} | {_x(warm / ef)} | — | {'yes' if warm / ef >= 25 else '**no**'} | "
                       f"best of {ranking.get('repeat', '?')} | {ranking.get('load_average_at_start', [0])[0]:.1f} |")
    if (case := cases.get("pipeline")) is not None:
        out.append(f"| 2. evidence pipeline, summary only, {case['size']}: ≥ 10× the lean pandas script | "
                   f"{_s(case['a']['wall_s'])} | pandas {_s(case['b']['wall_s'])} | {_x(1 / case['a_over_b_wall'])} (cpu {_x(1 / case['a_over_b_cpu'])}) | "
                   f"{_mb(case['a']['peak_mb'])} vs {_mb(case['b']['peak_mb'])} | {met(case)} | {case['runs']} | {load(case)} |")
        if case.get("with_analyses"):
            whole = case["with_analyses"]
            out.append(f"| 2. … the bundled pipeline as a whole (its dynamic-K sweep, ablation, tuning and checks too) | "
                       f"{_s(whole['wall_s'])} | pandas {_s(case['b']['wall_s'])} | "
                       f"{_x(1 / (case['a_over_b_wall'] * whole['over_metrics_only_wall']))} | — | — | {case['runs']} | {load(case)} |")
    if (case := cases.get("outputs")) is not None:
        on_top = case["a_over_b_wall"] - 1
        out.append(f"| 3. default outputs (reports, plots, curves) on top of the summary run: ≤ 1× | "
                   f"{_s(case['a']['wall_s'])} | summary only {_s(case['b']['wall_s'])} | {on_top:.2f}× on top "
                   f"({case['a_over_b_wall']:.2f}× in all) | {_mb(case['a']['peak_mb'])} | {met(case)} | {case['runs']} | {load(case)} |")
    if (case := cases.get("bootstrap")) is not None:
        loop = case.get("loop") or {}
        out.append(f"| 4. 1,000-resample bootstrap, {case['size'].split(' (')[0]}: ≤ 3× the no-CI run | "
                   f"{_s(case['a']['wall_s'])} | no CI {_s(case['b']['wall_s'])} | {_x(case['a_over_b_wall'])} | "
                   f"{_mb(case['a']['peak_mb'])} vs {_mb(case['b']['peak_mb'])} | "
                   f"{'yes' if case['a_over_b_wall'] <= 3 else '**no**'} | {case['runs']} | {load(case)} |")
        if loop:
            out.append(f"| 4. … ≥ 30× a pandas + scikit-learn bootstrap loop (the sample; loop {loop['resamples_run']} "
                       f"replicates scaled to 1,000) | {_s(loop['evalframe_with_ci_on_sample_s'])} | loop "
                       f"{_s(loop['seconds_scaled_to_1000'])} | {_x(loop['ratio'])} | — | "
                       f"{'yes' if loop['ratio'] >= 30 else '**no**'} | {case['runs']} | {load(case)} |")
    if (case := cases.get("compare")) is not None:
        if "a" in case:
            out.append(f"| 5. `evalframe compare` on the demo output, all metrics: ≤ 10 s | {_s(case['a']['wall_s'])} | — | — | "
                       f"{_mb(case['a']['peak_mb'])} | {met(case)} | {case['runs']} | {load(case)} |")
        else:
            out.append(f"| 5. `evalframe compare` on the demo output, all metrics: ≤ 10 s | not finished in "
                       f"{case['timed_out_after_s']:.0f} s | — | — | — | **no** | {case['runs']} | {load(case)} |")
    if (case := cases.get("import")) is not None:
        heavy = ", ".join(case.get("heavy_modules_imported") or []) or "none"
        out.append(f"| 6. `import evalframe`: ≤ 0.3 s (heavy modules imported: {heavy}) | {_s(case['a']['wall_s'])} "
                   f"(cpu {case['a']['cpu_s']:.2f} s) | `import polars` {_s(case['b']['wall_s'])} (cpu {case['b']['cpu_s']:.2f} s) | "
                   f"{_x(case['a_over_b_wall'])} of polars (cpu {_x(case['a_over_b_cpu'])}) | {_mb(case['a']['peak_mb'])} | "
                   f"{met(case)} | {case['runs']} | {load(case)} |")
    return out


def main() -> int:
    speed_path, ranking_path = RESULTS_DIR / "speed.json", RESULTS_DIR / "ranking.json"
    if not speed_path.exists():
        print("no benchmarks/results/speed.json: run benchmarks/bench_speed.py first", file=sys.stderr)
        return 2
    speed = json.loads(speed_path.read_text())
    ranking = json.loads(ranking_path.read_text()) if ranking_path.exists() else None
    machine = speed.get("machine", {})
    cores = machine.get("cores") or 1
    loads = [case["load_average"][0] for case in speed.get("cases", {}).values() if case.get("load_average")]
    busy = bool(loads) and max(loads) / cores > BUSY_LOAD_PER_CORE
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (`benchmarks/bench_ranking.py`, `benchmarks/bench_speed.py`, then",
        "`benchmarks/write_results.py`); do not edit by hand. Every figure is a whole process (a fresh",
        "interpreter, as a user runs it); evalframe and its anchor run in turn (A B A B …, after one warm-up",
        "each), and a ratio is the median of the pair-by-pair ratios, so it holds when the machine's speed",
        "drifts. Times are medians; peak memory is the process's peak RSS (`wait4`).",
        "",
        f"- machine: {machine.get('cpu', '?')}, {cores} cores, {machine.get('memory_mb') or '?'} MB; "
        f"Python {machine.get('python', '?')}; evalframe at {_commits(speed.get('cases', {}))}",
        "- versions: " + ", ".join(f"{name} {_version(name)}" for name in PACKAGES),
        f"- load average during the cases: {', '.join(f'{value:.1f}' for value in loads) or '—'}",
    ]
    if busy:
        lines += [
            "",
            f"**These figures were taken on a busy machine** (load average up to {max(loads):.1f} on {cores} cores,",
            "shared with other work): absolute times are several times those of a quiet machine, and",
            "ratios against a single-threaded anchor understate evalframe, which uses every core. Quote",
            "the ratios, not the seconds, and rerun `make bench` on a quiet machine for the record.",
        ]
    lines += ["", *rows(speed, ranking), ""]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
