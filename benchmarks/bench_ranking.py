"""Ranking benchmark: evalframe against pytrec_eval and ranx on one synthetic run.

What it does (see ``benchmarks/README.md`` for the figures and the conventions):

1. makes, once, a seeded synthetic run (``query_id, doc_id, score``; scores rounded to two
   decimals, so ties are common) and graded qrels (``query_id, doc_id, relevance`` in 0-3, a
   handful of judged items per query, some relevant items never retrieved) as Parquet under
   ``benchmarks/data/``; files made earlier with the same parameters are reused;
2. runs each tool end to end (read the Parquet files, build its structures, compute recall@5,
   recall@10, P@5, success@10, MRR, MAP@100 and nDCG@10) in its own fresh Python process, and
   records the time from the process's first line to the scores in memory and the process's
   peak resident memory at that moment; evalframe and pytrec_eval run ``--repeat`` times,
   interleaved, and the fastest run counts; ranx runs once with an empty numba cache (its kernels
   are compiled, as on first use) and once with that cache filled;
3. checks that the tools agree on every query and every metric to 1e-9 and stops with status 1
   (after writing the results) when they do not;
4. prints a table with times, peak memory and ratios, and writes ``benchmarks/results/ranking.json``.

Matched conventions (the fair comparison):

- nDCG uses linear gain in all three (trec_eval and ranx's ``ndcg`` do; evalframe's default is
  ``2^rel - 1``, so evalframe is asked for ``ndcg@10(gain=linear)``);
- a query whose judgments have no relevant item scores 0 and counts (trec_eval, ranx); evalframe's
  default skips such queries (null, counted in ``n_skipped``), so it runs with ``empty="zero"``;
- tied scores: evalframe and trec_eval order them by doc_id descending; ranx leaves their order to
  an unstable sort. ranx's timed runs use the real (tied) scores and are checked on the queries
  where no tie mixes relevance grades (where the order of tied items cannot change any metric);
  a further ranx run on the same run with ties broken the trec_eval way is checked on every query.

Usage::

    python benchmarks/bench_ranking.py                      # 100,000 queries x 100 candidates
    python benchmarks/bench_ranking.py --queries 2000 --candidates 50   # a quick check
    python benchmarks/bench_ranking.py --skip-ranx          # evalframe and pytrec_eval only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
DATA_DIR = BENCH_DIR / "data"
RESULTS_DIR = BENCH_DIR / "results"

#: Bump when the generator changes so that stale data files are not reused.
GENERATOR_VERSION = 1
TOLERANCE = 1e-9

#: Canonical metric label → (evalframe metric, pytrec_eval output key, ranx metric).
METRICS = {
    "recall@5": ("recall@5", "recall_5", "recall@5"),
    "recall@10": ("recall@10", "recall_10", "recall@10"),
    "P@5": ("precision@5", "P_5", "precision@5"),
    "success@10": ("hit_rate@10", "success_10", "hit_rate@10"),
    "MRR": ("mrr", "recip_rank", "mrr"),
    "MAP@100": ("map@100", "map_cut_100", "map@100"),
    "nDCG@10": ("ndcg@10(gain=linear)", "ndcg_cut_10", "ndcg@10"),
}
PYTREC_MEASURES = {"recall.5,10", "P.5", "success.10", "recip_rank", "map_cut.100", "ndcg_cut.10"}


# --- data -------------------------------------------------------------------------------------


def data_paths(queries: int, candidates: int, seed: int) -> dict[str, Path]:
    stem = f"q{queries}_c{candidates}_s{seed}_v{GENERATOR_VERSION}"
    return {
        "run": DATA_DIR / f"run_{stem}.parquet",
        "qrels": DATA_DIR / f"qrels_{stem}.parquet",
        # Same run with ties broken the trec_eval way (score desc, doc_id desc): for ranx's check.
        "run_untied": DATA_DIR / f"run_untied_{stem}.parquet",
    }


def make_data(queries: int, candidates: int, seed: int) -> dict[str, Path]:
    """Write (or reuse) the run, the qrels and the untied run; return their paths.

    Each query retrieves ``candidates`` distinct documents of a 2^21-document corpus (an odd
    stride modulo a power of two never repeats). 1-6 of the retrieved documents are judged,
    with grades 0-3 (P = .4, .3, .2, .1), and 0-3 more judged documents are not retrieved at all.
    Scores are a standard normal plus 0.8 x grade, rounded to two decimals (ties are common).
    """
    import numpy as np
    import polars as pl

    paths = data_paths(queries, candidates, seed)
    if all(path.is_file() for path in paths.values()):
        return paths
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    corpus = 1 << max(21, (4 * candidates).bit_length())
    max_judged_retrieved = min(6, candidates)
    start = rng.integers(0, corpus, queries, dtype=np.int64)
    stride = rng.integers(0, corpus // 2, queries, dtype=np.int64) * 2 + 1
    positions = np.arange(candidates + 3, dtype=np.int64)
    doc_numbers = (start[:, None] + positions[None, :] * stride[:, None]) % corpus
    retrieved = doc_numbers[:, :candidates]
    unretrieved = doc_numbers[:, candidates:]

    n_judged_retrieved = rng.integers(1, max_judged_retrieved + 1, queries)
    n_judged_unretrieved = rng.integers(0, 4, queries)
    grades = rng.choice(4, size=(queries, max_judged_retrieved + 3), p=[0.4, 0.3, 0.2, 0.1])
    judged_retrieved = np.arange(max_judged_retrieved)[None, :] < n_judged_retrieved[:, None]
    boost = np.zeros((queries, candidates))
    boost[:, :max_judged_retrieved] = np.where(judged_retrieved, grades[:, :max_judged_retrieved] * 0.8, 0.0)
    scores = np.round(rng.normal(size=(queries, candidates)) + boost, 2)

    def ids(prefix: str, numbers: pl.Expr, width: int) -> pl.Expr:
        return pl.format(prefix + "{}", numbers.cast(pl.String).str.zfill(width))

    query_numbers = np.arange(queries)
    run = pl.DataFrame(
        {
            "query_number": np.repeat(query_numbers, candidates),
            "doc_number": retrieved.ravel(),
            "score": scores.ravel(),
        }
    ).select(
        query_id=ids("q", pl.col("query_number"), 6),
        doc_id=ids("d", pl.col("doc_number"), 7),
        score=pl.col("score"),
    )
    judged_mask = np.concatenate(
        [judged_retrieved, np.arange(3)[None, :] < n_judged_unretrieved[:, None]], axis=1
    )
    judged_docs = np.concatenate([retrieved[:, :max_judged_retrieved], unretrieved], axis=1)
    query_of = np.broadcast_to(query_numbers[:, None], judged_mask.shape)
    qrels = pl.DataFrame(
        {
            "query_number": query_of[judged_mask],
            "doc_number": judged_docs[judged_mask],
            "relevance": grades[judged_mask].astype(np.int64),
        }
    ).select(
        query_id=ids("q", pl.col("query_number"), 6),
        doc_id=ids("d", pl.col("doc_number"), 7),
        relevance=pl.col("relevance"),
    )
    # trec_eval's order: score descending, then doc_id descending (byte-wise); -rank keeps it.
    untied = (
        run.with_row_index("row")
        .sort(["query_id", "score", "doc_id"], descending=[False, True, True])
        .with_columns(score=-(pl.int_range(1, pl.len() + 1).over("query_id")).cast(pl.Float64))
        .sort("row")
        .drop("row")
    )
    for name, frame in (("run", run), ("qrels", qrels), ("run_untied", untied)):
        partial = paths[name].with_suffix(".partial")
        frame.write_parquet(partial)
        partial.replace(paths[name])
    return paths


# --- the measured children ----------------------------------------------------------------------
# Each runs in a fresh interpreter: time from the top of the child (before any library import)
# to the scores in memory, and the process's peak RSS at that point. Per-query values are then
# written for the agreement check (not timed).


def child_evalframe(run_path: str, qrels_path: str) -> dict[str, dict[str, float]]:
    import evalframe as ef

    mark("import")
    run = ef.read_run(run_path)
    qrels = ef.read_qrels(qrels_path)
    mark("read + validate")
    result = ef.evaluate(run, qrels, [names[0] for names in METRICS.values()], empty="zero")
    mark("evaluate")
    mark_done()
    wide = result.wide()
    query_ids = wide.get_column("query_id").to_list()
    return {
        label: dict(zip(query_ids, wide.get_column(names[0]).to_list(), strict=True))
        for label, names in METRICS.items()
    }


def child_pytrec_eval(run_path: str, qrels_path: str) -> dict[str, dict[str, float]]:
    import pyarrow.parquet as pq
    import pytrec_eval

    mark("import")
    run_table = pq.read_table(run_path)
    mark("read")
    run: dict[str, dict[str, float]] = {}
    for query_id, doc_id, score in zip(
        run_table.column("query_id").to_pylist(),
        run_table.column("doc_id").to_pylist(),
        run_table.column("score").to_pylist(),
        strict=True,
    ):
        run.setdefault(query_id, {})[doc_id] = score
    del run_table
    qrels_table = pq.read_table(qrels_path)
    qrels: dict[str, dict[str, int]] = {}
    for query_id, doc_id, relevance in zip(
        qrels_table.column("query_id").to_pylist(),
        qrels_table.column("doc_id").to_pylist(),
        qrels_table.column("relevance").to_pylist(),
        strict=True,
    ):
        qrels.setdefault(query_id, {})[doc_id] = relevance
    mark("build dicts")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    per_query = evaluator.evaluate(run)
    mark("evaluate")
    mark_done()
    return {
        label: {query_id: values[names[1]] for query_id, values in per_query.items()}
        for label, names in METRICS.items()
    }


def child_ranx(run_path: str, qrels_path: str) -> dict[str, dict[str, float]]:
    import warnings

    import pandas as pd
    from numba.core.errors import NumbaTypeSafetyWarning
    from ranx import Qrels, Run, evaluate

    # ranx's own kernels cast hashed ids from uint64 to int64 and numba warns about it.
    warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
    mark("import")
    # ranx asserts object-dtype id columns; pandas >= 3 reads Parquet strings as `str`.
    run_frame = pd.read_parquet(run_path).astype({"query_id": object, "doc_id": object})
    qrels_frame = pd.read_parquet(qrels_path).astype({"query_id": object, "doc_id": object})
    mark("read")
    run = Run.from_df(run_frame, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    del run_frame
    qrels = Qrels.from_df(qrels_frame, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")
    mark("build Run/Qrels")
    evaluate(qrels, run, [names[2] for names in METRICS.values()])
    mark("evaluate")
    mark_done()
    return {label: dict(run.scores[names[2]]) for label, names in METRICS.items()}


CHILDREN = {"evalframe": child_evalframe, "pytrec_eval": child_pytrec_eval, "ranx": child_ranx}
_CHILD_STATE: dict = {}


def mark(phase: str) -> None:
    """Record how long the phase that ends now took."""
    now = time.perf_counter()
    _CHILD_STATE.setdefault("phases", {})[phase] = now - _CHILD_STATE.get("last", _CHILD_STATE["start"])
    _CHILD_STATE["last"] = now


def mark_done() -> None:
    """Record the time and the peak RSS so far: the scores are in memory."""
    import resource

    _CHILD_STATE["seconds"] = time.perf_counter() - _CHILD_STATE["start"]
    _CHILD_STATE["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(tool: str, run_path: str, qrels_path: str, out_path: str) -> None:
    _CHILD_STATE["start"] = time.perf_counter()
    values = CHILDREN[tool](run_path, qrels_path)
    import polars as pl

    query_ids = sorted(next(iter(values.values())))
    table = pl.DataFrame(
        {"query_id": query_ids, **{label: [values[label][q] for q in query_ids] for label in METRICS}},
        schema={"query_id": pl.String, **{label: pl.Float64 for label in METRICS}},
    )
    table.write_parquet(out_path)
    Path(out_path).with_suffix(".json").write_text(json.dumps(_CHILD_STATE))


def measure(tool: str, run_path: Path, qrels_path: Path, out_path: Path, env: dict[str, str] | None = None) -> dict:
    """Run one tool in a fresh process; return its timings and peak memory."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", tool,
               "--run-path", str(run_path), "--qrels-path", str(qrels_path), "--out", str(out_path)]
    started = time.perf_counter()
    process = subprocess.Popen(command, env={**os.environ, **(env or {})})
    _, status, usage = os.wait4(process.pid, 0)
    process_seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"benchmark child `{tool}` failed with status {process.returncode}")
    inside = json.loads(out_path.with_suffix(".json").read_text())
    return {
        "seconds": inside["seconds"],
        "peak_mb": inside["peak_mb"],
        "phases": inside["phases"],
        "process_seconds": process_seconds,
        "process_peak_mb": usage.ru_maxrss / 1024,
    }


# --- agreement ---------------------------------------------------------------------------------


def tie_sensitive_queries(run_path: Path, qrels_path: Path):
    """Queries where tied scores mix relevance grades, so the tie order can change a metric.

    Unjudged items count as grade 0; within a tie group of one grade every order gives the same
    grade sequence, hence the same value of every metric.
    """
    import polars as pl

    run = pl.scan_parquet(run_path)
    qrels = pl.scan_parquet(qrels_path)
    return (
        run.join(qrels, on=["query_id", "doc_id"], how="left")
        .with_columns(grade=pl.col("relevance").fill_null(0).clip(lower_bound=0))
        .group_by("query_id", "score")
        .agg(pl.col("grade").n_unique().alias("grades"))
        .filter(pl.col("grades") > 1)
        .select("query_id")
        .unique()
        .collect()
    )


def differing_queries(reference, other, queries) -> int:
    """How many of ``queries`` have some metric differing by more than the tolerance."""
    import polars as pl

    joined = reference.join(other, on="query_id", suffix="_other").join(queries, on="query_id", how="semi")
    differs = pl.any_horizontal((pl.col(label) - pl.col(f"{label}_other")).abs() > TOLERANCE for label in METRICS)
    return joined.select(differs.sum()).item()


def compare(reference, other, *, restrict_to=None) -> dict:
    """Per-query and mean differences of ``other`` against ``reference`` for every metric."""
    import polars as pl

    if reference.get_column("query_id").to_list() != other.get_column("query_id").to_list():
        only_ref = set(reference.get_column("query_id")) - set(other.get_column("query_id"))
        only_other = set(other.get_column("query_id")) - set(reference.get_column("query_id"))
        return {"ok": False, "error": f"query sets differ: {len(only_ref)} only in reference, {len(only_other)} only in other"}
    joined = reference.join(other, on="query_id", suffix="_other")
    if restrict_to is not None:
        joined = joined.join(restrict_to, on="query_id", how="semi")
    report = {"queries_compared": joined.height, "metrics": {}, "ok": True}
    for label in METRICS:
        diff = (pl.col(label) - pl.col(f"{label}_other")).abs()
        row = joined.select(
            max_abs_diff=diff.max(),
            mean_reference=pl.col(label).mean(),
            mean_other=pl.col(f"{label}_other").mean(),
            n_null=pl.col(label).is_null().sum() + pl.col(f"{label}_other").is_null().sum(),
        ).row(0, named=True)
        row["mean_abs_diff"] = abs(row["mean_reference"] - row["mean_other"])
        row["ok"] = row["n_null"] == 0 and row["max_abs_diff"] <= TOLERANCE and row["mean_abs_diff"] <= TOLERANCE
        report["metrics"][label] = row
        report["ok"] &= row["ok"]
    return report


# --- main --------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("evalframe", "polars", "pandera", "pyarrow", "pandas", "pytrec-eval-terrier", "ranx", "numba"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs of evalframe and pytrec_eval, interleaved; the fastest counts (ranx runs once)")
    parser.add_argument("--skip-ranx", action="store_true", help="leave ranx out (it is by far the slowest)")
    parser.add_argument("--no-ranx-warm", action="store_true", help="skip the timing of ranx with a warm JIT cache")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "ranking.json")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--run-path", help=argparse.SUPPRESS)
    parser.add_argument("--qrels-path", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child, args.run_path, args.qrels_path, args.out)
        return 0

    import polars as pl

    load_at_start = os.getloadavg()
    # evalframe's bytecode compiled first, as installing the package does (a shell with
    # PYTHONDONTWRITEBYTECODE set would otherwise compile every module in every timed child).
    import compileall

    compileall.compile_dir(BENCH_DIR.parent / "evalframe", quiet=1)
    started = time.perf_counter()
    paths = make_data(args.queries, args.candidates, args.seed)
    print(f"data: {paths['run'].name}, {paths['qrels'].name} ({time.perf_counter() - started:.1f} s)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench_ranking_"))
    # A fresh numba cache: ranx's first run compiles its kernels, as on a user's first use.
    ranx_env = {"NUMBA_CACHE_DIR": str(work / "numba_cache")}
    # (label, tool, run file, environment); the fast tools are repeated, interleaved, so that a
    # burst of load on a shared machine does not fall on one tool only.
    repeated = [("evalframe", "evalframe", paths["run"], None), ("pytrec_eval", "pytrec_eval", paths["run"], None)]
    once = []
    if not args.skip_ranx:
        once.append(("ranx", "ranx", paths["run"], ranx_env))
        if not args.no_ranx_warm:
            once.append(("ranx (warm JIT cache)", "ranx", paths["run"], ranx_env))
        once.append(("ranx (ties broken)", "ranx", paths["run_untied"], ranx_env))
    schedule = [(attempt, step) for attempt in range(args.repeat) for step in repeated] + [(0, step) for step in once]
    runs: dict[str, list[dict]] = {}
    values = {}
    try:
        for attempt, (label, tool, run_path, env) in schedule:
            repeats = args.repeat if (label, tool, run_path, env) in repeated else 1
            print(f"running {label} ({attempt + 1}/{repeats}) ...", flush=True)
            out = work / f"{tool}_{run_path.stem}.parquet"
            runs.setdefault(label, []).append(measure(tool, run_path, paths["qrels"], out, env))
            values[label] = pl.read_parquet(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    measured = {}
    for label, figures in runs.items():
        best = min(figures, key=lambda run: run["seconds"])
        measured[label] = {**best, "all_seconds": [run["seconds"] for run in figures]}

    # Agreement: evalframe is the reference; every comparison must hold to TOLERANCE.
    agreement = {"pytrec_eval vs evalframe (all queries)": compare(values["evalframe"], values["pytrec_eval"])}
    tie_note = None
    if not args.skip_ranx:
        sensitive = tie_sensitive_queries(paths["run"], paths["qrels"])
        insensitive = values["evalframe"].select("query_id").join(sensitive, on="query_id", how="anti")
        for label in [name for name in values if name.startswith("ranx") and name != "ranx (ties broken)"]:
            result = compare(values["evalframe"], values[label], restrict_to=insensitive)
            result["tie_sensitive_queries_differing"] = differing_queries(values["evalframe"], values[label], sensitive)
            agreement[f"{label} vs evalframe (queries where ties cannot matter)"] = result
        agreement["ranx (ties broken) vs evalframe (all queries)"] = compare(values["evalframe"], values["ranx (ties broken)"])
        tie_note = (
            f"{sensitive.height:,} of {values['evalframe'].height:,} queries have tied scores that mix relevance grades; "
            f"on {agreement['ranx vs evalframe (queries where ties cannot matter)']['tie_sensitive_queries_differing']:,} "
            "of them ranx (unstable tie order) differs from trec_eval's doc_id-descending rule"
        )

    reference = measured["evalframe"]
    rows = [
        {
            "tool": label,
            **figures,
            "time_vs_evalframe": figures["seconds"] / reference["seconds"],
            "memory_vs_evalframe": figures["peak_mb"] / reference["peak_mb"],
        }
        for label, figures in measured.items()
    ]
    means = {label: values["evalframe"].get_column(label).mean() for label in METRICS}
    report = {
        "benchmark": "ranking",
        "queries": args.queries,
        "candidates": args.candidates,
        "run_rows": args.queries * args.candidates,
        "qrels_rows": pl.scan_parquet(paths["qrels"]).select(pl.len()).collect().item(),
        "seed": args.seed,
        "repeat": args.repeat,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg(),
        "versions": versions(),
        "metrics": {label: {"evalframe": n[0], "pytrec_eval": n[1], "ranx": n[2]} for label, n in METRICS.items()},
        "mean_values": means,
        "timings": rows,
        "agreement": agreement,
        "tie_note": tie_note,
        "tolerance": TOLERANCE,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")

    print()
    print(f"{args.queries:,} queries x {args.candidates} candidates ({report['run_rows']:,} run rows, "
          f"{report['qrels_rows']:,} qrels rows), {os.cpu_count()} CPUs; best of {args.repeat} interleaved runs "
          "for evalframe and pytrec_eval")
    print(f"{'tool':<24}{'wall s':>9}{'peak MB':>10}{'time / evalframe':>18}{'memory / evalframe':>20}")
    for row in rows:
        print(f"{row['tool']:<24}{row['seconds']:>9.2f}{row['peak_mb']:>10.0f}"
              f"{row['time_vs_evalframe']:>17.1f}x{row['memory_vs_evalframe']:>19.2f}x")
    print("\nphases (s): " + "; ".join(
        f"{row['tool']}: " + ", ".join(f"{phase} {seconds:.2f}" for phase, seconds in row["phases"].items())
        for row in rows if row["tool"] in ("evalframe", "pytrec_eval", "ranx")
    ))
    print("mean over queries: " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
    if tie_note:
        print(f"ties: {tie_note}")
    failed = []
    for name, result in agreement.items():
        if "error" in result:
            failed.append(f"{name}: {result['error']}")
            continue
        worst = max(m["max_abs_diff"] or 0.0 for m in result["metrics"].values())
        print(f"agreement {name}: {result['queries_compared']:,} queries x {len(METRICS)} metrics, "
              f"max |diff| {worst:.1e} -> {'OK' if result['ok'] else 'FAILED'}")
        failed += [f"{name}: {label} {m}" for label, m in result["metrics"].items() if not m["ok"]]
    print(f"results: {args.output}")
    if failed:
        print("\nDISAGREEMENT between tools:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
