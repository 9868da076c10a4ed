"""The ``evalframe`` command line.

Subcommands: ``run`` (a declarative pipeline), ``validate`` (a table contract check), ``trec``
(trec_eval-compatible evaluation) and ``metrics`` (the registry).
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

    run = commands.add_parser(
        "run",
        help="run a declarative pipeline (e.g. pipelines/evidence_contract.yaml)",
        description="Run PIPELINE (a YAML file or a bundled pipeline name) and write its outputs.",
    )
    run.add_argument("pipeline", help="pipeline YAML file, or the name of a bundled pipeline (evidence_contract)")
    run.add_argument("--input", help="input file (default: the pipeline's input path)")
    run.add_argument("--out", help="output folder (default: reports/<pipeline name>/)")

    validate = commands.add_parser(
        "validate",
        help="check a file against a table contract, without computing metrics",
        description="Check FILE against the contract in schemas/<SCHEMA>.yaml; exit 0 when it conforms, 2 otherwise.",
    )
    validate.add_argument("--schema", required=True, choices=sorted(VALIDATORS), help="table contract")
    validate.add_argument("file", help="file to check")

    commands.add_parser("metrics", help="list the registered metrics and their parameters")
    return parser


def _validate_per_query(path: str) -> str:
    from evalframe.io.per_query import read_per_query

    tables = read_per_query(path)
    systems = tables.queries.get_column("system").n_unique()
    return (f"{path}: ok: {tables.n_rows:,} rows, {tables.queries.height:,} queries in {systems} config(s), "
            f"{tables.n_ranking_rows:,} ranked and {tables.judgments.height:,} gold sentences")


def _validate_ranking(path: str) -> str:
    from evalframe.io import read_run

    run = read_run(path)
    return f"{path}: ok: {run.height:,} ranked items of {run.get_column('query_id').n_unique():,} queries"


def _validate_judgments(path: str) -> str:
    from evalframe.io import read_qrels

    qrels = read_qrels(path)
    return f"{path}: ok: {qrels.height:,} judgments of {qrels.get_column('query_id').n_unique():,} queries"


VALIDATORS = {"per_query": _validate_per_query, "ranking": _validate_ranking, "judgments": _validate_judgments}


def _cmd_run(args: argparse.Namespace) -> str:
    from pathlib import Path

    from evalframe.pipeline import load_pipeline

    pipeline = load_pipeline(args.pipeline)
    result = pipeline.run(args.input)
    out = Path(args.out) if args.out else Path("reports") / pipeline.name
    result.write(out)
    files = ", ".join(pipeline.outputs)
    return f"{result.overview()}\n\nwrote {out}/ ({files})"


def _cmd_validate(args: argparse.Namespace) -> str:
    return VALIDATORS[args.schema](args.file)


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
        example = {spec.at: 10 if spec.param(spec.at).kind is int else 0.1} if spec.at_required else {}
        metric = spec.build(**example)
        params = ", ".join(
            f"{p.name}={p.default}" + (f" {{{'|'.join(map(str, p.choices))}}}" if p.choices else "")
            for p in spec.params
        )
        aliases = f" (aliases: {', '.join(spec.aliases)})" if spec.aliases else ""
        lines.append(f"{spec.name:<14} {metric.level.value:<6} {metric.target.value:<22} {spec.doc}{aliases}")
        if params:
            lines.append(f"{'':<14} params: {params}")
    return "\n".join(lines)


COMMANDS = {"trec": _cmd_trec, "run": _cmd_run, "validate": _cmd_validate, "metrics": _cmd_metrics}


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
