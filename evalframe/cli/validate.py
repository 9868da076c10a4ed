"""``evalframe validate --schema NAME FILE [--map contract=yours ...]``: check a file against a
table contract (exit 0 or 2); ``--map`` reads a column of another name as the contract's column,
as ``input.columns`` does in a pipeline."""

from __future__ import annotations

import argparse

from evalframe.errors import ExitCode


def _per_query(path: str, **csv_options) -> str:
    from evalframe.io.per_query import read_per_query

    tables = read_per_query(path, **csv_options)
    systems = tables.queries.get_column("system").n_unique()
    return (f"{path}: ok: {tables.n_rows:,} rows, {tables.queries.height:,} queries in {systems} config(s), "
            f"{tables.n_ranking_rows:,} ranked and {tables.judgments.height:,} gold sentences")


def _ranking(path: str, **csv_options) -> str:
    from evalframe.io import read_run

    run = read_run(path, **csv_options)
    return f"{path}: ok: {run.height:,} ranked items of {run.get_column('query_id').n_unique():,} queries"


def _judgments(path: str, **csv_options) -> str:
    from evalframe.io import read_qrels

    qrels = read_qrels(path, **csv_options)
    return f"{path}: ok: {qrels.height:,} judgments of {qrels.get_column('query_id').n_unique():,} queries"


def _queries(path: str, **csv_options) -> str:
    from evalframe.io import read_table

    queries = read_table(path, "queries", **csv_options)
    return f"{path}: ok: {queries.height:,} queries of {queries.get_column('system').n_unique()} system(s)"


def _rag(path: str, **csv_options) -> str:
    from evalframe.io.rag import read_rag

    tables = read_rag(path)
    queries = tables.queries
    systems = queries.get_column("system").n_unique()
    return (f"{path}: ok: {tables.n_rows:,} records, {queries.get_column('query_id').n_unique():,} samples × {systems} "
            f"system(s), {tables.n_ranking_rows:,} retrieved and {tables.judgments.height:,} relevant documents")


VALIDATORS = {"per_query": _per_query, "ranking": _ranking, "judgments": _judgments, "queries": _queries, "rag": _rag}


def add_parser(commands) -> None:
    validate = commands.add_parser(
        "validate",
        help="check a file against a table contract, without computing metrics",
        description="Check FILE against the contract in schemas/<SCHEMA>.yaml; exit 0 when it conforms, 2 otherwise.",
    )
    validate.add_argument("--schema", required=True, choices=sorted(VALIDATORS), help="table contract")
    validate.add_argument("file", help="file to check")
    validate.add_argument("--separator", default=None, metavar="CHAR",
                          help="field separator of a CSV file (default `,` for .csv, tab for .tsv), e.g. ';'")
    validate.add_argument("--map", action="append", default=[], metavar="CONTRACT=YOURS",
                          help="read your column YOURS as the contract's column CONTRACT (repeatable), "
                               "e.g. --map p_has_evidence=prob")
    validate.add_argument("--decimal-comma", action="store_true", help="numbers of a CSV file have a decimal comma (0,85)")


def _mapping(pairs: list[str]) -> dict[str, str]:
    """``["p_has_evidence=prob", ...]`` → ``{"p_has_evidence": "prob"}``; a malformed pair is a ConfigError."""
    from evalframe.errors import ConfigError

    mapping = {}
    for pair in pairs:
        contract, _, yours = pair.partition("=")
        if not contract.strip() or not yours.strip():
            raise ConfigError(f"--map {pair!r}: expected CONTRACT=YOURS, e.g. --map p_has_evidence=prob")
        mapping[contract.strip()] = yours.strip()
    return mapping


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    options = {"separator": args.separator, "decimal_comma": args.decimal_comma}
    if args.map:
        options["columns"] = _mapping(args.map)
    return VALIDATORS[args.schema](args.file, **options), ExitCode.OK
