"""``evalframe compare RESULT_DIR --baseline NAME``: paired tests of every system against a baseline.

Reads a result folder written by ``evalframe run`` (``summary.parquet``, the per-unit values in
``per_query.parquet`` / ``per_unit.parquet``, ``replicates.parquet`` when present; for set
metrics the run's input, re-read from ``run.json`` when its sha256 still matches) and prints a
readable table. Writes nothing unless ``--out FILE`` (``.csv`` or ``.parquet``) is given; never
into the result folder. The statistics are :func:`evalframe.stats.compare.compare`'s.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalframe.errors import ConfigError, ExitCode


def add_parser(commands) -> None:
    compare = commands.add_parser(
        "compare",
        help="paired significance tests of every system against a baseline, with corrected p-values",
        description=(
            "Compare every system of a result folder (`evalframe run --out DIR`) with BASELINE on the same "
            "units: delta, its bootstrap interval (when the run kept replicates), effect size, randomization / "
            "t / Wilcoxon p-values adjusted over the family, and whether the change is significant."
        ),
    )
    compare.add_argument("result_dir", metavar="RESULT_DIR", help="folder written by `evalframe run`")
    compare.add_argument("--baseline", required=True, help="the system to compare with")
    compare.add_argument("--metric", action="append", help="only this metric (repeatable)")
    compare.add_argument("--grouping", action="append", help="groupings to print (repeatable; default the first slice); --out writes all")
    compare.add_argument("--tests", default="randomization,t,wilcoxon", help="comma-separated tests (default randomization,t,wilcoxon)")
    compare.add_argument("--correction", default="holm", choices=["holm", "bonferroni", "bh", "by", "none"], help="default holm")
    compare.add_argument("--family", default="slice", choices=["slice", "comparison", "metric", "grouping", "all"],
                         help="tests corrected together (default `slice`: one metric on one slice across the systems "
                              "compared with the baseline; `comparison`: all metrics × slices of one system; `all`)")
    compare.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    compare.add_argument("--confidence", type=float, default=0.95, help="level of the delta's interval (default 0.95)")
    compare.add_argument("--permutations", type=int, default=10_000, help="randomization test permutations (default 10000)")
    compare.add_argument("--set-permutations", type=int,
                         help="test set metrics (AUROC, F1, …) by N permutations, recomputed per permutation (slow); "
                              "default: their paired bootstrap replicates")
    compare.add_argument("--seed", type=int, default=0, help="seed of the permutation signs (default 0)")
    compare.add_argument("--unpaired", default="error", choices=["error", "drop"], help="units of one system only: error (default) or drop")
    compare.add_argument("--out", metavar="FILE", help="also write the whole table to FILE (.csv or .parquet)")


def _cell(value, digits: int = 4, *, count: bool = False, sign: str = "") -> str:
    """A number as the report prints it: a count (tp, n_queries, …) whole when it is whole."""
    if value is None:
        return "–"
    if count and float(value).is_integer():
        return f"{value:{sign},.0f}"
    return f"{value:{sign}.{digits}f}"


def _is_count(metric: str) -> bool:
    """Whether ``metric`` is a count (its interpretation's kind), so it prints as an integer."""
    from evalframe.errors import ConfigError
    from evalframe.metrics.interpretation import describe
    from evalframe.metrics.registry import resolve

    try:
        return describe(resolve(metric)).kind == "count"
    except ConfigError:
        return False


def _p(value, floor: float | None = None) -> str:
    """A p-value as its test resolves it: at the randomization test's floor 1/(B+1), ``<`` it."""
    if value is None:
        return "–"
    if floor is not None and value <= floor * (1 + 1e-9):
        return f"<{floor:.0e}" if floor < 1e-3 else f"<{floor:.4f}"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"


def render(table, groupings: list[str], correction: str, alpha: float, confidence: float = 0.95) -> str:
    """One block per system and grouping: metric, n, baseline, value, delta [CI], effect, p, adjusted p."""
    import polars as pl

    lines = []
    slice_keys = [c for c in table.columns[table.columns.index("grouping") + 1: table.columns.index("metric")]]
    for (system,), rows in table.group_by(["system"], maintain_order=True):
        baseline = rows.get_column("baseline").first()
        for grouping in groupings:
            chosen = rows.filter(pl.col("grouping") == grouping)
            if chosen.height == 0:
                continue
            width = max(18, *(len(m) for m in chosen.get_column("metric").to_list()))
            header = (f"{'slice':<12} {'metric':<{width}} {'n':>7} {'baseline':>9} {'value':>9} {'delta':>9} "
                      f"{f'{confidence:.0%} CI of delta':>21} {'effect':>7} {'test':>13} {'p':>8} {'p adj':>8}")
            lines += [f"{system} vs {baseline} · {grouping} · p adjusted by {correction} · * significant at α = {alpha}", header]
            for row in chosen.iter_rows(named=True):
                label = " × ".join(str(row[k]) for k in slice_keys if row[k] is not None) or "all"
                count = _is_count(row["metric"])
                interval = ("–" if row["delta_ci_low"] is None else
                            f"[{_cell(row['delta_ci_low'], count=count, sign='+')}, {_cell(row['delta_ci_high'], count=count, sign='+')}]")
                test = row["test"] or "–"
                p = row[f"p_{test}"] if row["test"] else None
                adjusted = row[f"p_{test}_adjusted"] if row["test"] else None
                floor = None
                if test == "randomization" and not row["randomization_exact"]:
                    floor = 1.0 / (row["permutations"] + 1.0)
                elif test == "bootstrap" and row["resamples"]:
                    floor = 2.0 / (row["resamples"] + 1.0)
                mark = "*" if row["significant"] else " "
                delta = _cell(row["delta"], count=count, sign="+")
                lines.append(
                    f"{label:<12} {row['metric']:<{width}} {row['n_pairs'] or 0:>7,} {_cell(row['baseline_value'], count=count):>9} {_cell(row['value'], count=count):>9} "
                    f"{delta:>9} {interval:>21} {_cell(row['effect_size'], 3):>7} {test:>13} {_p(p, floor):>8} {_p(adjusted):>8}{mark}"
                )
            lines.append("")
    notes = sorted({n for n in table.get_column("note").drop_nulls().to_list()})
    lines += [f"note: {note}" for note in notes]
    return "\n".join(lines).rstrip()


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.results.reader import read_result
    from evalframe.stats.compare import compare

    if args.out and Path(args.out).suffix not in (".csv", ".parquet"):
        raise ConfigError(f"--out {args.out}: write a .csv or .parquet file")
    data = read_result(args.result_dir).data()
    groupings = args.grouping or [next(iter(data.slices))]
    unknown = [g for g in groupings if g not in data.slices]
    if unknown:
        raise ConfigError(f"unknown groupings {unknown} (groupings: {', '.join(data.slices)})")
    # The default family (one metric on one slice, across systems) lies within one grouping, so
    # only the printed groupings are computed; a wider family, or --out, needs every grouping.
    computed = groupings if args.family == "slice" and not args.out else None
    table = compare(
        data, args.baseline, metrics=args.metric, groupings=computed, tests=[t.strip() for t in args.tests.split(",") if t.strip()],
        correction=args.correction, alpha=args.alpha, permutations=args.permutations, set_permutations=args.set_permutations,
        seed=args.seed, family=args.family, confidence=args.confidence, unpaired=args.unpaired,
    )
    text = render(table, groupings, args.correction, args.alpha, args.confidence)
    if args.out:
        out = Path(args.out)
        if out.resolve().parent == Path(args.result_dir).resolve():
            raise ConfigError(f"--out {out}: not inside the result folder (compare never writes there)")
        from evalframe.results.writer import write_file

        if out.suffix == ".csv":
            write_file(out, lambda path: table.write_csv(path, float_precision=10))
        else:
            write_file(out, lambda path: table.write_parquet(path, statistics=False))
        text += f"\n\nwrote {out} ({table.height:,} rows)"
    return text, ExitCode.OK
