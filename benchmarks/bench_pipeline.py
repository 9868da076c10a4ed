"""Pipeline benchmark: ``evalframe run pipelines/evidence_contract.yaml`` against plain pandas + scikit-learn.

What it does (see ``benchmarks/README.md``, section "Pipeline benchmark", for the figures):

1. inputs: the bundled ``data_samples/per_query.csv`` (30,000 rows: 500 posts × 10 criteria × 6
   configs, size 1) and, for a size ``N`` > 1, the sample replicated ``N`` times under
   ``benchmarks/data/`` (git-ignored). Copy ``c`` renumbers the posts ``p{c * 500 + i}`` (zero-padded; copy 0 is the sample itself) in
   ``post_id`` and in every sentence id, and keeps each row's fold, so folds stay post-disjoint
   and every copy has the same metrics. Deterministic: the same size gives the same bytes;
2. runs every tool in its own fresh Python process, ``--runs`` times (default 3, best kept),
   the tools interleaved within each repetition:

   - ``evalframe``: what ``evalframe run`` does (load the pipeline, read + validate the CSV, all
     metrics of the YAML, slices overall / fold / criterion per config, across folds, run.json)
     and writing its five outputs, through the Python API so that the stages can be timed;
   - ``evalframe (CLI)``: the ``evalframe run`` command itself (process wall time and peak RSS
     only; the check that the harness matches the real command);
   - ``reference (groupby.apply)``: ``benchmarks/pandas_reference.py`` (which drives the
     tests' reference of the contract, ``tests/pipeline_reference.py``) with the contract's
     per-query functions applied by ``groupby(query).apply``;
   - ``reference (loop)``: the same script with a plain Python loop over the rows instead;

   and records the process wall time (interpreter start to exit: what a user waits for) and
   CPU time, the time inside the process without imports (the tool's own modules, and pyarrow
   for pandas' ``to_parquet``, are imported first and timed apart; packages the tool still
   imports while running, e.g. pandera when evalframe's contract screen has a doubt, count as
   run time and are listed in ``late_imports``), the time spent writing outputs, and the peak
   RSS of the process (``wait4``). "Best" is, per figure, the minimum over the runs;
3. checks that evalframe and every reference variant agree on every (grouping, config, fold,
   criterion, metric) row of the summary that the reference computes (contract §2, §3, §6 over
   overall / fold / criterion; evalframe's further metrics and slices are counted as
   ``rows_not_in_reference``) — ``n`` and ``n_skipped`` exactly, ``value``, ``std``,
   ``median``, ``p25`` and ``p75`` to 1e-9, null where the other is null — and on every
   per-query value (evalframe lists the queries of each metric's subset; both sides must hold
   the same (query, metric) pairs); prints each disagreement and exits with status 1 (after
   writing results);
4. prints a table and writes ``benchmarks/results/pipeline.json``.

``--profile`` adds, per size, a run of evalframe with each stage timed (read, list parsing,
contract, checks, split, per-query values, set metrics, summaries, across folds, the input's
sha256, run.json, writing) and per_query_values timed per metric family; nothing in evalframe
is edited (the stage functions are wrapped in the profiling process only).

Usage::

    python benchmarks/bench_pipeline.py                    # sizes 1 and 10, best of 3
    python benchmarks/bench_pipeline.py --sizes 1 --runs 1 # a quick check
    python benchmarks/bench_pipeline.py --sizes 1,10 --profile
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
ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / "data"
RESULTS_DIR = BENCH_DIR / "results"
SAMPLE = ROOT / "data_samples" / "per_query.csv"
PIPELINE = ROOT / "pipelines" / "evidence_contract.yaml"

#: Bump when the generator changes so that stale data files are not reused.
GENERATOR_VERSION = 2  # 2: the six-config sample of issue 10
TOLERANCE = 1e-9
KEYS = ["grouping", "system", "fold", "criterion_id", "metric"]
EXACT_STATS = ["n", "n_skipped"]
FLOAT_STATS = ["value", "std", "median", "p25", "p75"]

EVALFRAME = "evalframe"
EVALFRAME_CLI = "evalframe (CLI)"
REFERENCE = "reference (groupby.apply)"
REFERENCE_LOOP = "reference (loop)"
#: Label → short name used on the command line (``--tools``).
TOOLS = {EVALFRAME: "evalframe", EVALFRAME_CLI: "cli", REFERENCE: "reference", REFERENCE_LOOP: "loop"}

#: Modules imported before the clock of "time without imports" starts, per harness child: the
#: tool's own modules (and pandas' Parquet engine, which ``to_parquet`` would import). Whatever
#: the tool still imports while it runs (e.g. pandera, which evalframe imports only when its
#: screen finds a possible contract violation) counts as run time and is listed in ``late_imports``.
PRELOAD = {
    "evalframe": ["evalframe", "evalframe.pipeline", "evalframe.io.per_query", "evalframe.data.contracts",
                  "evalframe.results.run_info", "evalframe.report.outputs", "evalframe.report.terminal"],
    "reference": ["pandas_reference", "pyarrow", "pyarrow.parquet", "pandas.io.parquet"],
}


# --- data -------------------------------------------------------------------------------------


def data_path(scale: int) -> Path:
    """The input file of size ``scale`` (the bundled sample for 1)."""
    return SAMPLE if scale == 1 else DATA_DIR / f"per_query_x{scale}_v{GENERATOR_VERSION}.csv"


def make_data(scale: int) -> Path:
    """Write (or reuse) the sample replicated ``scale`` times with posts renumbered per copy."""
    import polars as pl

    path = data_path(scale)
    if path.is_file():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    sample = pl.read_csv(SAMPLE, infer_schema=False)  # as text: every cell is written back unchanged
    posts = sample.get_column("post_id").unique().sort().to_list()
    if len({len(post) for post in posts}) != 1:
        msg = "the sample's post ids must all have the same length (none may be a substring of another)"
        raise SystemExit(msg)
    width = max(len(posts[0]) - 1, len(str(scale * len(posts))))
    id_columns = [c for c in ("post_id", "gold_sent_uids", "ranked_sent_uids", "extracted_sent_uids") if c in sample.columns]
    copies = []
    for copy in range(scale):
        renamed = [f"p{copy * len(posts) + position + 1:0{width}d}" for position in range(len(posts))]
        # Post ids all have the same length, so none is a substring of another; sentence ids
        # start with their post id, so replacing post ids renames them too.
        copies.append(sample.with_columns(pl.col(c).str.replace_many(posts, renamed) for c in id_columns))
    partial = path.with_suffix(".partial")
    pl.concat(copies).write_csv(partial)
    partial.replace(path)
    return path


# --- the measured children ----------------------------------------------------------------------


def _preload(kind: str) -> None:
    import importlib

    if kind == "reference":
        sys.path.insert(0, str(BENCH_DIR))
    for module in PRELOAD[kind]:
        importlib.import_module(module)


def child_evalframe(input_path: str, out_dir: str, stages: dict) -> None:
    from evalframe.pipeline import load_pipeline

    started = time.perf_counter()
    pipeline = load_pipeline(str(PIPELINE))
    result = pipeline.run(input_path)  # what `evalframe run` does before writing
    stages["compute"] = time.perf_counter() - started
    started = time.perf_counter()
    result.write(out_dir)
    stages["write"] = time.perf_counter() - started


def child_reference(input_path: str, out_dir: str, stages: dict, mode: str) -> None:
    import pandas_reference

    started = time.perf_counter()
    inner: dict[str, float] = {}
    summary, per_query = pandas_reference.recompute(input_path, per_query_mode=mode, timings=inner)
    stages["compute"] = time.perf_counter() - started
    started = time.perf_counter()
    pandas_reference.write_outputs(summary, per_query, out_dir)
    stages["write"] = time.perf_counter() - started
    stages["reference_stages"] = inner


def run_child(tool: str, input_path: str, out_dir: str, report: str) -> None:
    """Body of a harness child: preload imports, run, record times and peak RSS in ``report``."""
    import resource

    started = time.perf_counter()
    kind = "evalframe" if tool == "evalframe" else "reference"
    _preload(kind)
    stages: dict = {"import": time.perf_counter() - started}
    modules_before = set(sys.modules)
    if tool == "evalframe":
        child_evalframe(input_path, out_dir, stages)
    else:
        child_reference(input_path, out_dir, stages, mode="loop" if tool == "loop" else "groupby")
    late = {m.split(".")[0] for m in set(sys.modules) - modules_before if not m.startswith("_")}
    stages["late_imports"] = sorted(late)
    stages["peak_mb_inside"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(report).write_text(json.dumps(stages))


def measure(label: str, input_path: Path, out_dir: Path) -> dict:
    """Run one tool once in a fresh process; return its times (s) and peak RSS (MB)."""
    report = out_dir.with_suffix(".json")
    short = TOOLS[label]
    if short == "cli":
        executable = Path(sys.executable).with_name("evalframe")
        command = [str(executable), "run", str(PIPELINE), "--input", str(input_path), "--out", str(out_dir)]
    else:
        command = [sys.executable, str(Path(__file__).resolve()), "--child", short,
                   "--input", str(input_path), "--out", str(out_dir), "--report", str(report)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"benchmark child `{label}` failed with status {process.returncode}: {' '.join(command)}")
    figures = {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}
    if short != "cli":
        inside = json.loads(report.read_text())
        figures.update(
            import_s=inside["import"],
            compute_s=inside["compute"],
            write_s=inside["write"],
            without_imports_s=inside["compute"] + inside["write"],
            late_imports=inside["late_imports"],
        )
        if "reference_stages" in inside:
            figures["stages"] = inside["reference_stages"]
    return figures


def best_of(runs: list[dict]) -> dict:
    """Per figure, the smallest value over the runs (times and memory)."""
    best = {}
    for key, value in runs[0].items():
        if isinstance(value, int | float):
            best[key] = min(run[key] for run in runs)
        elif isinstance(value, dict):
            best[key] = {name: min(run[key][name] for run in runs) for name in value}
        elif isinstance(value, list):
            best[key] = sorted({item for run in runs for item in run[key]})
    return best


# --- profiling of evalframe (a child process; nothing in evalframe is edited) -----------------


def profile_child(input_path: str, report: str) -> None:
    """Time evalframe's stages by wrapping its stage functions in this process only."""
    import functools
    from importlib import import_module

    _preload("evalframe")
    from evalframe.metrics.base import ItemMetric

    evaluation = import_module("evalframe.engine.evaluation")
    partials = import_module("evalframe.engine.partials")
    per_unit = import_module("evalframe.engine.per_unit")
    aggregate = import_module("evalframe.engine.aggregate")
    ranking = import_module("evalframe.engine.ranking")
    per_query_io = import_module("evalframe.io.per_query")
    pipeline_run = import_module("evalframe.pipeline.run")
    outputs = import_module("evalframe.report.outputs")
    run_info = import_module("evalframe.results.run_info")

    totals: dict[str, float] = {}
    calls: dict[str, int] = {}

    def timed(module, name: str, label: str) -> None:
        original = getattr(module, name)

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                totals[label] = totals.get(label, 0.0) + time.perf_counter() - started
                calls[label] = calls.get(label, 0) + 1

        setattr(module, name, wrapper)

    # (module whose global is looked up at call time, function name, label in the tree)
    stage_plan = [
        (pipeline_run, "read_input", "read"),
        (per_query_io, "read_frame", "read/csv"),
        (per_query_io, "parse_list_columns", "read/parse_lists"),
        (per_query_io, "_number_lists", "read/parse_number_lists"),
        (per_query_io, "_cast_beside", "read/cast (beside the lists)"),
        (per_query_io, "conform_with", "read/contract"),
        (per_query_io, "_check_no_repeated_ids", "read/contract/check_repeated_ids (beside the contract's checks)"),
        (per_query_io, "_check_gold_agrees_across_configs", "read/contract/check_gold_across_configs (beside them)"),
        (per_query_io, "split_per_query", "read/contract/split_tables (beside them)"),
        (pipeline_run, "run", "metrics"),
        (evaluation, "compute_partials", "metrics/partials"),
        (partials, "prepare", "metrics/partials/validate_and_derive"),
        (partials, "item_partials", "metrics/partials/item_partials"),
        (per_unit, "rank_items", "metrics/partials/item_partials/rank_items"),
        (ranking, "_reject_tied_ranks", "metrics/partials/item_partials/rank_items/reject_tied_ranks"),
        (per_unit, "judge_items", "metrics/partials/item_partials/judge_items"),
        (partials, "query_unit_values", "metrics/partials/query_unit_values"),
        (partials, "coarse_unit_values", "metrics/partials/coarse_unit_values"),
        (aggregate, "moments", "metrics/partials/moments"),
        (partials.pl, "collect_all", "metrics/partials/set_metric_states (collect_all)"),
        (evaluation, "finalize", "metrics/finalize"),
        (aggregate, "quantiles", "metrics/finalize/quantiles"),
        (aggregate, "across_folds", "metrics/finalize/across_folds"),
        (pipeline_run, "sha256_of", "sha256 (in a background thread)"),
        (run_info, "describe_run", "run_json"),
        (outputs, "write_outputs", "write"),
        (outputs, "render_markdown", "write/summary_md"),
    ]
    for module, name, label in stage_plan:
        timed(module, name, label)

    started = time.perf_counter()
    result = pipeline_run.load_pipeline(str(PIPELINE)).run(input_path)
    run_seconds = time.perf_counter() - started
    out_dir = Path(tempfile.mkdtemp(prefix="bench_pipeline_profile_"))
    try:
        started = time.perf_counter()
        result.write(out_dir / "out")
        write_seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)

    # per_query_values per metric family, on the pipeline's own tables (wrappers removed).
    families: dict[str, list] = {}
    item_group = next(g for g in result.plan.groups if any(isinstance(m, ItemMetric) for m in g.metrics))
    item_metrics = [m for m in item_group.metrics if isinstance(m, ItemMetric)]
    for metric in item_metrics:
        families.setdefault(metric.name.split("@")[0], []).append(metric)
    tables = result.inputs  # the input tables (result.tables holds the analyses)
    every_query = result.queries.select("system", "query_id")
    in_subset = result.queries.filter(item_group.subset.condition()).select("system", "query_id")
    stages, stage_calls = dict(totals), dict(calls)
    per_family = {}
    plan = [("all, on every query", item_metrics, every_query),
            ("all, on the subset's queries only (as the engine calls it)", item_metrics, in_subset)]
    plan += [(f"{family}, subset only", metrics, in_subset) for family, metrics in families.items()]
    for family, metrics, universe in plan:
        started = time.perf_counter()
        per_unit.item_partials(tables, universe, metrics)
        per_family[family] = time.perf_counter() - started
    Path(report).write_text(json.dumps({
        "run_s": run_seconds, "write_s": write_seconds, "calls": stage_calls,
        "stages": {label: stages[label] for _, _, label in stage_plan if label in stages},
        "per_query_values_by_family_s": per_family,
        "rows": {"queries": tables.queries.height, "ranking": tables.n_ranking_rows,
                 "per_query_long": result.per_query.height, "summary": result.summary.height},
    }))


def profile(scale: int, input_path: Path) -> dict:
    report = Path(tempfile.mkdtemp(prefix="bench_pipeline_")) / "profile.json"
    try:
        command = [sys.executable, str(Path(__file__).resolve()), "--child", "profile",
                   "--input", str(input_path), "--report", str(report)]
        subprocess.run(command, check=True, cwd=ROOT)
        return json.loads(report.read_text())
    finally:
        shutil.rmtree(report.parent, ignore_errors=True)


def print_profile(scale: int, found: dict) -> None:
    print(f"\nevalframe stages, size {scale}x ({found['rows']['queries']:,} queries, "
          f"{found['rows']['ranking']:,} ranked sentences, {found['rows']['per_query_long']:,} per-query rows): "
          f"run {found['run_s']:.2f} s + write {found['write_s']:.2f} s")
    def line(depth: int, name: str, seconds: float, n_calls: int) -> None:
        print(f"  {'  ' * depth}{name:<{52 - 2 * depth}}{seconds:8.2f} s  ({n_calls} call{'s' if n_calls > 1 else ''})")

    for label, seconds in found["stages"].items():
        line(label.count("/"), label.rsplit("/", 1)[-1], seconds, found["calls"][label])
    print("  per_query_values of the ranking metrics, timed alone:")
    for family, seconds in found["per_query_values_by_family_s"].items():
        print(f"    {family:<50}{seconds:8.2f} s")


# --- agreement ---------------------------------------------------------------------------------


def _clean(frame, columns):
    import polars as pl

    return frame.with_columns(pl.col(c).cast(pl.Float64).fill_nan(None) for c in columns)


def compare_summaries(evalframe_dir: Path, reference_dir: Path) -> dict:
    """Every summary row of evalframe against the reference's; return counts and disagreements."""
    import polars as pl

    columns = [*KEYS, *EXACT_STATS, *FLOAT_STATS]
    ours = _clean(pl.read_parquet(evalframe_dir / "summary.parquet").select(columns), FLOAT_STATS)
    theirs = _clean(pl.read_parquet(reference_dir / "summary.parquet").select(columns), FLOAT_STATS)
    # The reference covers contract §2, §3 and §6 on its slices; evalframe computes more.
    covered = pl.col("metric").is_in(theirs.get_column("metric").unique().implode()) & pl.col("grouping").is_in(
        theirs.get_column("grouping").unique().implode())
    not_in_reference = ours.filter(~covered).height
    ours = ours.filter(covered)
    theirs = theirs.with_columns(pl.col("fold").cast(ours.schema["fold"]), pl.col(EXACT_STATS).cast(pl.Int64))
    joined = ours.join(theirs, on=KEYS, how="full", nulls_equal=True, suffix="_reference", coalesce=True)
    problems = []
    only = joined.filter(pl.col("n").is_null() | pl.col("n_reference").is_null())
    for row in only.head(20).iter_rows(named=True):
        side = "evalframe" if row["n_reference"] is None else "the reference"
        problems.append({**{k: row[k] for k in KEYS}, "problem": f"row only in {side}"})
    both = joined.filter(pl.col("n").is_not_null() & pl.col("n_reference").is_not_null())
    max_diff = {}
    for stat in [*EXACT_STATS, *FLOAT_STATS]:
        mine, other = pl.col(stat), pl.col(f"{stat}_reference")
        diff = (mine - other).abs()
        max_diff[stat] = both.select(diff.max()).item()
        tolerance = 0 if stat in EXACT_STATS else TOLERANCE
        bad = both.filter((mine.is_null() != other.is_null()) | (diff > tolerance))
        for row in bad.head(20).iter_rows(named=True):
            problems.append({**{k: row[k] for k in KEYS}, "stat": stat, "evalframe": row[stat],
                             "reference": row[f"{stat}_reference"]})
    n_values = both.select(pl.sum_horizontal(pl.col(FLOAT_STATS).is_not_null().sum())).item()
    return {"rows_evalframe": ours.height, "rows_reference": theirs.height, "rows_compared": both.height,
            "rows_not_in_reference": not_in_reference,
            "float_values_compared": n_values, "max_abs_diff": max_diff,
            "ok": not problems, "disagreements": problems}


def compare_per_query(evalframe_dir: Path, reference_dir: Path) -> dict:
    """Every per-query value (ranking metrics and the Brier term) of evalframe against the reference's.

    evalframe lists the queries of each metric's subset only: the Brier term on every query,
    the ranking metrics on the queries with ``has_evidence_gold = 1``. The reference's wide
    table (NaN outside the subset) is cut to the same queries, so that both sides must hold
    the same (query, metric) pairs.
    """
    import polars as pl

    keys = ["system", "post_id", "criterion_id", "metric"]
    ours = _clean(pl.read_parquet(evalframe_dir / "per_query.parquet").select(*keys, "value"), ["value"])
    wide = pl.read_parquet(reference_dir / "per_query.parquet")
    # The reference's per-query metrics (ranking and Brier); evalframe's further ones are left out.
    metrics = sorted(m for m in ours.get_column("metric").unique().to_list() if m in wide.columns)
    ours = ours.filter(pl.col("metric").is_in(metrics))
    theirs = _clean(
        wide.rename({"config": "system"}).unpivot(on=metrics, index=["system", "post_id", "criterion_id", "has_evidence_gold"],
                                                   variable_name="metric", value_name="value"),
        ["value"],
    )
    in_subset = (pl.col("metric") == "brier") | (pl.col("has_evidence_gold") == 1)
    theirs = theirs.filter(in_subset).drop("has_evidence_gold")
    joined = ours.join(theirs, on=keys, how="full", suffix="_reference", coalesce=True)
    mine, other = pl.col("value"), pl.col("value_reference")
    bad = joined.filter((mine.is_null() != other.is_null()) | ((mine - other).abs() > TOLERANCE))
    unmatched = joined.height - ours.height
    problems = [dict(row) for row in bad.head(20).iter_rows(named=True)]
    return {"values_evalframe": ours.height, "values_reference": theirs.height,
            "non_null_compared": joined.filter(mine.is_not_null()).height,
            "max_abs_diff": joined.select((mine - other).abs().max()).item(),
            "rows_without_partner": unmatched, "n_disagreeing": bad.height,
            "ok": bad.height == 0 and unmatched == 0 and theirs.height == ours.height, "disagreements": problems}


# --- main --------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("evalframe", "polars", "pandera", "pyarrow", "pandas", "numpy", "scikit-learn"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    return found


def print_table(results: dict, labels: list[str]) -> None:
    header = (f"{'size':>5} {'rows':>9}  {'tool':<26}{'wall (s)':>9}{'no imports':>11}{'imports':>8}"
              f"{'write':>7}{'peak RSS':>10}{'ref/ef wall':>12}{'ref/ef no imp.':>15}")
    print("\n" + header)
    print("-" * len(header))
    for scale, entry in results.items():
        base = entry["best"].get(EVALFRAME)
        for label in labels:
            best = entry["best"][label]
            ratio_wall = ratio_inside = ""
            if base and label in (REFERENCE, REFERENCE_LOOP):
                ratio_wall = f"{best['wall_s'] / base['wall_s']:.1f}x"
                ratio_inside = f"{best['without_imports_s'] / base['without_imports_s']:.1f}x"

            def seconds(key: str) -> str:
                return f"{best[key]:.2f}" if key in best else "–"

            print(f"{scale + 'x':>5} {entry['rows']:>9,}  {label:<26}{seconds('wall_s'):>9}{seconds('without_imports_s'):>11}"
                  f"{seconds('import_s'):>8}{seconds('write_s'):>7}{best['peak_rss_mb']:>7,.0f} MB{ratio_wall:>12}{ratio_inside:>15}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10", help="comma-separated multiples of the sample (default 1,10)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool and size; the best is kept (default 3)")
    parser.add_argument("--tools", default="evalframe,cli,reference,loop",
                        help="comma-separated subset of: evalframe, cli, reference, loop")
    parser.add_argument("--profile", action="store_true", help="also time evalframe's stages at every size")
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "pipeline.json")
    parser.add_argument("--child", choices=["evalframe", "reference", "loop", "profile"], help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--report", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "profile":
        profile_child(args.input, args.report)
        return 0
    if args.child:
        run_child(args.child, args.input, args.out, args.report)
        return 0

    try:
        sizes = sorted({int(size) for size in args.sizes.split(",")})
    except ValueError:
        parser.error(f"--sizes takes whole numbers separated by commas, got {args.sizes!r}")
    if not sizes or sizes[0] < 1 or args.runs < 1:
        parser.error("sizes and --runs must be >= 1")
    wanted = {name.strip() for name in args.tools.split(",")}
    unknown = wanted - set(TOOLS.values())
    if unknown or EVALFRAME not in [label for label, short in TOOLS.items() if short in wanted]:
        parser.error(f"--tools takes a subset of {sorted(TOOLS.values())} that includes evalframe")
    labels = [label for label, short in TOOLS.items() if short in wanted]
    from evalframe.results.run_info import sha256_of  # the input's hash, as run.json records it

    results: dict[str, dict] = {}
    load_before = os.getloadavg()
    ok = True
    for scale in sizes:
        started = time.perf_counter()
        input_path = make_data(scale)
        with input_path.open("rb") as handle:
            rows = sum(1 for _ in handle) - 1
        print(f"size {scale}x: {input_path.relative_to(ROOT)}, {rows:,} rows, "
              f"{input_path.stat().st_size / 1e6:.1f} MB ({time.perf_counter() - started:.1f} s)", flush=True)
        work = Path(tempfile.mkdtemp(prefix="bench_pipeline_"))
        runs: dict[str, list[dict]] = {label: [] for label in labels}
        try:
            for repetition in range(args.runs):
                for label in labels:
                    out_dir = work / f"{TOOLS[label]}_{repetition}"
                    figures = measure(label, input_path, out_dir)
                    runs[label].append(figures)
                    print(f"  run {repetition + 1}/{args.runs} {label:<26} {figures['wall_s']:7.2f} s  "
                          f"{figures['peak_rss_mb']:7,.0f} MB", flush=True)
            agreement = {}
            last = args.runs - 1
            for label in (REFERENCE, REFERENCE_LOOP):
                if label in labels:
                    ef_dir, ref_dir = work / f"evalframe_{last}", work / f"{TOOLS[label]}_{last}"
                    agreement[label] = {"summary": compare_summaries(ef_dir, ref_dir),
                                        "per_query": compare_per_query(ef_dir, ref_dir)}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        entry = {
            "input": str(input_path.relative_to(ROOT)),
            "rows": rows,
            "bytes": input_path.stat().st_size,
            "sha256": sha256_of(input_path),
            "runs": runs,
            "best": {label: best_of(figures) for label, figures in runs.items()},
            "agreement": agreement,
        }
        base = entry["best"][EVALFRAME]
        entry["ratios"] = {
            f"{label} / evalframe": {
                "wall": entry["best"][label]["wall_s"] / base["wall_s"],
                "without_imports": entry["best"][label]["without_imports_s"] / base["without_imports_s"],
            }
            for label in (REFERENCE, REFERENCE_LOOP) if label in labels
        }
        if args.profile:
            entry["profile"] = profile(scale, input_path)
            print_profile(scale, entry["profile"])
        for label, checks in agreement.items():
            for part, found in checks.items():
                if not found["ok"]:
                    ok = False
                    print(f"\nDISAGREEMENT, size {scale}x, evalframe vs {label}, {part}:")
                    for problem in found["disagreements"]:
                        print("  ", problem)
                else:
                    compared = found.get("float_values_compared", found.get("non_null_compared"))
                    print(f"  agreement with {label}, {part}: ok ({compared:,} values, "
                          f"max |diff| {json.dumps(found['max_abs_diff'])})")
        results[str(scale)] = entry

    print_table(results, labels)
    document = {
        "benchmark": "pipeline: evalframe run pipelines/evidence_contract.yaml vs pandas + scikit-learn",
        "tolerance": TOLERANCE,
        "runs_per_tool": args.runs,
        "best": "per figure, the minimum over the runs",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "versions": versions(),
        "sizes": results,
        "agreement_ok": ok,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nwrote {args.output}")
    if not ok:
        print("evalframe and the reference disagree (see above): possible bug", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
