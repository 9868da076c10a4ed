"""``evalframe agreement ANNOTATIONS [--gold GOLD] [--out DIR]``: agreement of human labels and annotator QA.

Reads a long annotations table (one row per task and annotator; CSV, TSV, Parquet or JSONL) and
prints agreement (exact and pairwise agreement, Fleiss' κ, Krippendorff's α with bootstrap CIs
and Landis–Koch words, :mod:`evalframe.stats.label_agreement`). With ``--out`` it writes
``summary.csv``, ``pairwise_kappa.csv``, ``per_annotator.csv``, ``disagreements.csv``,
``report.md`` and plots; with ``--gold`` also ``filtered.csv`` (the chapter's filter) and, when
the annotations have ``query_id`` and ``doc_id`` columns, ``qrels.txt`` (TREC qrels of the kept
labels, ready for ``evalframe trec``). Outputs appear all at once (the one atomic writer,
:mod:`evalframe.results.writer`); bad input exits 2 naming the file, line and value, with
nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalframe.errors import ConfigError, ExitCode


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "agreement",
        help="agreement of human labels (κ, α with CIs), annotator QA, filtered labels as qrels",
        description="Inter-annotator agreement and annotator quality checks of a long annotations table.",
    )
    parser.add_argument("annotations", help="table with one row per task and annotator")
    parser.add_argument("--gold", help="gold tasks: a table with task_id and rating (or expected)")
    parser.add_argument("--out", help="folder for the tables, report.md and plots")
    parser.add_argument("--force", action="store_true", help="write into an --out folder that holds other files")
    parser.add_argument("--rater", default="annotator_id", help="annotator column (default annotator_id)")
    parser.add_argument("--item", default="task_id", help="task column (default task_id)")
    parser.add_argument("--rating", default="rating", help="rating column (default rating)")
    parser.add_argument("--scale", help="the rating scale: 0-4, 1,2,3 or bad,ok,good (default: the values found)")
    parser.add_argument("--min-accuracy", type=float, default=0.7, help="reliable annotators' gold accuracy (default 0.7)")
    parser.add_argument("--min-gold-tasks", type=int, default=10, help="reliable annotators' gold tasks (default 10)")
    parser.add_argument("--max-spread", type=float, default=1, help="kept tasks' max − min rating (default 1)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap replicates (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--no-bootstrap", action="store_true", help="no confidence intervals")
    parser.add_argument("--widest", type=int, default=20, help="tasks listed for review (default 20)")


def _text(ag, filtered) -> str:
    lines = []
    for row in ag.summary.iter_rows(named=True):
        if row["metric"] == "tasks_with_multiple_annotations":
            lines.append(f"tasks with multiple annotations: {int(row['value']):,} ({row['note']})")
            continue
        value = "—" if row["value"] is None else f"{row['value']:.4f}"
        ci = f"  [{row['ci_low']:.4f}, {row['ci_high']:.4f}]" if row["ci_low"] is not None else ""
        words = f"  {row['interpretation']}" if row["interpretation"] else ""
        lines.append(f"{row['metric']:<30} {value}{ci}{words}")
    lines += [f"note: {note}" for note in ag.notes]
    if filtered is not None:
        lines.append(f"filtered labels: {filtered.height:,} tasks kept")
    return "\n".join(lines)


def _write(out: Path, ag, filtered, qrels, args) -> None:
    """Every output through the one atomic writer (:func:`~evalframe.results.writer.write_result`)."""
    from importlib.util import find_spec

    from evalframe.report import domain
    from evalframe.report.plots import save
    from evalframe.results.writer import write_result

    def csv(table):
        return lambda path: table.write_csv(path, float_precision=10)

    writers = {"summary.csv": csv(ag.summary), "pairwise_kappa.csv": csv(ag.pairwise),
               "per_annotator.csv": csv(ag.per_annotator), "disagreements.csv": csv(ag.disagreements)}
    if filtered is not None:
        writers["filtered.csv"] = csv(filtered)
    if qrels is not None:
        writers["qrels.txt"] = lambda path: path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.iter_rows()))
    figures = {}
    if find_spec("matplotlib") is not None:  # the plots need the `report` extra
        figures["kappa_heatmap"] = domain.kappa_heatmap(ag.pairwise)
        if ag.gold is not None:
            figures["annotator_accuracy"] = domain.annotator_accuracy(ag.per_annotator, args.min_accuracy)

    def plots(folder: Path) -> None:
        folder.mkdir()
        for stem, figure in figures.items():
            (folder / f"{stem}.png").write_bytes(save(figure, "png"))
            (folder / f"{stem}.svg").write_bytes(save(figure, "svg"))

    if figures:
        writers["plots"] = plots
    report = domain.agreement_markdown(ag, filtered=filtered, plots=[f"plots/{stem}.png" for stem in figures],
                                       min_accuracy=args.min_accuracy, min_tasks=args.min_gold_tasks)
    writers["report.md"] = lambda path: path.write_text(report)
    write_result(out, writers, force=args.force)


def main(args: argparse.Namespace) -> tuple[str, int]:
    from evalframe.stats.label_agreement import agreement
    from evalframe.stats.annotator_qa import as_qrels
    from evalframe.io.tables import read_frame
    from evalframe.engine.bootstrap import Bootstrap

    if args.max_spread < 0 or not 0 <= args.min_accuracy <= 1 or args.min_gold_tasks < 0:
        raise ConfigError("--max-spread must be >= 0, --min-accuracy in [0, 1], --min-gold-tasks >= 0")
    annotations, locate = read_frame(args.annotations)
    gold = read_frame(args.gold)[0] if args.gold else None
    settings = None if args.no_bootstrap else Bootstrap(resamples=args.resamples, seed=args.seed)
    ag = agreement(annotations, rater=args.rater, item=args.item, rating=args.rating, scale=args.scale, gold=gold,
                   bootstrap=settings, widest=args.widest, source=args.annotations, locator=locate, gold_source=args.gold)
    filtered = qrels = None
    if ag.gold is not None:
        filtered = ag.filtered(args.min_accuracy, args.max_spread, min_tasks=args.min_gold_tasks)
        if {"query_id", "doc_id"} <= set(filtered.columns):
            qrels = as_qrels(filtered, ag.annotations)
        else:
            ag.notes.append("no query_id/doc_id columns: the filtered labels are not written as qrels")
    if args.out:
        _write(Path(args.out), ag, filtered, qrels, args)
    return _text(ag, filtered), ExitCode.OK
