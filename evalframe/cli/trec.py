"""``evalframe trec QRELS RUN -m MEASURE ...``: trec_eval-compatible evaluation and output."""

from __future__ import annotations

import argparse
import sys

from evalframe.errors import ExitCode


def add_parser(commands) -> None:
    trec = commands.add_parser(
        "trec",
        help="trec_eval-compatible evaluation of a run against qrels",
        description="Evaluate RUN against QRELS and print trec_eval's lines for the supported measures.",
    )
    trec.add_argument("qrels", help="qrels: TREC text (qid iter docno rel) or a .parquet/.csv judgments table")
    trec.add_argument("run", help="run: TREC text (qid Q0 docno rank sim tag) or a .parquet/.csv ranking table")
    trec.add_argument("-m", dest="measures", action="append", metavar="MEASURE",
                      help="measure, e.g. map, P.5,10, ndcg_cut.10, success.1,5, all_trec (repeatable; default: official)")
    trec.add_argument("-q", dest="per_query", action="store_true", help="also print per-topic values")
    trec.add_argument("-c", dest="complete", action="store_true",
                      help="score judged topics missing from the run as 0 instead of failing")
    trec.add_argument("-l", dest="level", type=int, default=1, metavar="LEVEL",
                      help="relevance threshold: grades >= LEVEL are relevant (default 1)")
    trec.add_argument("-M", dest="max_depth", type=int, default=None, metavar="N",
                      help="use only the first N documents of each topic")
    from evalframe.cli.run import add_bucket_arguments

    add_bucket_arguments(trec)


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.io import early, read_qrels, read_run

    out_of_core = {"buckets": args.buckets, "memory": args.memory, "bucket_dir": args.bucket_dir}
    in_memory = all(value is None for value in out_of_core.values())
    if in_memory:
        # Both files are read on threads of their own from here on (Polars works without the GIL),
        # beside the imports of the evaluation and the metric registry that parsing the measures
        # needs; taken below in the order errors are reported: measures, then qrels, then run.
        early.begin(read_run, args.run)
        early.begin(read_qrels, args.qrels)
    from evalframe.compat.trec import evaluate_trec, format_output, parse_measures

    selected = parse_measures(args.measures or [])
    if in_memory:
        import numpy  # noqa: F401  (the ranking stage's; imported while the files are read)

        import evalframe.compat.number_text  # noqa: F401  (the output's; likewise)

        qrels = early.take(read_qrels, args.qrels)
        run = early.take(read_run, args.run)
    else:
        from evalframe.engine.buckets import check_buckets, parse_memory
        from evalframe.io.scan import scan_qrels, scan_run

        out_of_core["buckets"] = check_buckets(args.buckets or "auto", key="--buckets")
        parse_memory(args.memory, key="--memory")
        qrels, run = scan_qrels(args.qrels), scan_run(args.run)  # Parquet/CSV stay on disk until bucketed
    result = evaluate_trec(
        run, qrels, selected, relevance_threshold=args.level, complete=args.complete, max_depth=args.max_depth,
        source=args.run, **out_of_core,
    )
    for note in result.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    return format_output(result, selected, per_query=args.per_query), ExitCode.OK
