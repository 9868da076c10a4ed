"""The ``evalframe`` command line.

Subcommands: ``trec`` (trec_eval-compatible evaluation) and ``metrics`` (the registry).
Bad input or configuration prints one message on stderr and exits with status 2; nothing is
printed or written before the whole result is ready.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from evalframe.errors import EvalframeError


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalframe",
        description="Exact, fast, sliceable evaluation of retrieval, RAG and evidence-gating systems.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    commands.add_parser("metrics", help="list the registered metrics and their parameters")
    return parser


def _cmd_trec(args: argparse.Namespace) -> str:
    from evalframe.io import read_qrels, read_run
    from evalframe.trec_compat import evaluate_trec, format_lines, parse_measures

    selected = parse_measures(args.measures or [])
    qrels = read_qrels(args.qrels)
    run = read_run(args.run)
    result = evaluate_trec(
        run, qrels, selected, relevance_threshold=args.level, complete=args.complete, max_depth=args.max_depth
    )
    for note in result.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    return "\n".join(format_lines(result, selected, per_query=args.per_query))


def _cmd_metrics(args: argparse.Namespace) -> str:
    from evalframe.metrics.registry import available

    lines = []
    for spec in available():
        metric = spec.build(**({spec.at: 10} if spec.at_required else {}))
        params = ", ".join(
            f"{p.name}={p.default}" + (f" {{{'|'.join(map(str, p.choices))}}}" if p.choices else "")
            for p in spec.params
        )
        aliases = f" (aliases: {', '.join(spec.aliases)})" if spec.aliases else ""
        lines.append(f"{spec.name:<14} {metric.level.value:<6} {metric.target.value:<22} {spec.doc}{aliases}")
        if params:
            lines.append(f"{'':<14} params: {params}")
    return "\n".join(lines)


COMMANDS = {"trec": _cmd_trec, "metrics": _cmd_metrics}


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        output = COMMANDS[args.command](args)
    except EvalframeError as error:
        print(f"evalframe: error: {error}", file=sys.stderr)
        return error.exit_code
    except Exception as error:  # a bug, not bad input: say so briefly
        if os.environ.get("EVALFRAME_DEBUG"):
            raise
        print(f"evalframe: internal error: {type(error).__name__}: {error} (set EVALFRAME_DEBUG=1 for details)",
              file=sys.stderr)
        return 1
    if output:
        print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
