"""``evalframe score PREDICTIONS GOLD [--k K] [--output OUT] [--dedupe]``: the legal ``score.py``.

A thin door onto the engine: the legal files are read into the engine's tables
(:func:`evalframe.io.legal.read_legal`), the legal metrics are evaluated
(:mod:`evalframe.metrics.legal`), and score.py's block is printed on stdout, nothing else::

    Evaluation Results:
    ==========================
    exact_match: 0.0000
    span_f1: 0.2009
    recall@10: 0.3717
    ndcg@10: 0.2757
    num_examples: 100.0000
    ==========================

Notes and warnings (tests without a prediction, queries whose nDCG exceeds 1) go to stderr.
``--output`` writes the same keys as JSON with full precision (plus ``span_precision@K`` and
``span_recall@K`` when the passages carry spans, printed in the block after nDCG). Bad input
exits 2 naming the file and JSON path; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from evalframe.errors import ConfigError, ExitCode

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.result import Evaluation

RULE = "=" * 26


def add_parser(commands) -> None:
    score = commands.add_parser(
        "score",
        help="the legal passage scorer (score.py): exact match, span F1, recall@K, nDCG@K",
        description="Score PREDICTIONS against GOLD as the legal score.py does, and print its block.",
    )
    score.add_argument("predictions", help='JSON list of {"query", "retrieved_passages"}')
    score.add_argument("gold", help='JSON object {"tests": [{"query", "snippets": [{"answer", ...}]}]}')
    score.add_argument("--k", type=int, default=10, help="cutoff of recall@K and nDCG@K (default 10)")
    score.add_argument("--output", help="also write the results as JSON (full precision)")
    score.add_argument("--dedupe", action="store_true",
                       help="nDCG credits each gold answer at most once (stays in [0, 1])")


def metric_names(k: int, *, dedupe: bool, spans: bool) -> dict[str, str]:
    """score.py's output key → the engine's metric name."""
    names = {
        "exact_match": "legal_exact_match",
        "span_f1": "legal_span_f1",
        f"recall@{k}": f"legal_recall@{k}",
        f"ndcg@{k}": f"legal_ndcg@{k}" + ("(dedupe=true)" if dedupe else ""),
    }
    if spans:
        names |= {f"span_precision@{k}": f"span_precision@{k}", f"span_recall@{k}": f"span_recall@{k}"}
    return names


def has_spans(tables: Tables) -> bool:
    return "span_start" in tables.ranking.columns


def score(tables: Tables, k: int, *, dedupe: bool = False) -> tuple[dict[str, float], Evaluation]:
    """score.py's results (its keys, full precision) from the engine, and the evaluation."""
    from evalframe.engine.evaluation import evaluate

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"--k must be a whole number >= 1, got {k!r}")
    names = metric_names(k, dedupe=dedupe, spans=has_spans(tables))
    evaluation = evaluate(tables, metrics=list(names.values()), missing="zero")
    values = dict(evaluation.summary.filter(grouping="overall").select("metric", "value").iter_rows())
    results = {key: values[name] for key, name in names.items()}
    results["num_examples"] = float(tables.queries.height)
    return results, evaluation


def render_block(results: dict[str, float]) -> str:
    """score.py's block: one ``key: value`` line per result with 4 decimals, between rules."""
    lines = ["Evaluation Results:", RULE]
    lines += [f"{key}: {'nan' if value is None else f'{value:.4f}'}" for key, value in results.items()]
    return "\n".join([*lines, RULE])


def _write_json(path: Path, results: dict[str, float]) -> None:
    """Write atomically: a failed write leaves no partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(results, file, indent=2)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.io.legal import read_legal

    if args.k < 1:
        raise ConfigError(f"--k must be a whole number >= 1, got {args.k}")
    tables = read_legal(args.predictions, args.gold)
    results, evaluation = score(tables, args.k, dedupe=args.dedupe)
    for note in evaluation.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    ndcg = metric_names(args.k, dedupe=args.dedupe, spans=False)[f"ndcg@{args.k}"]
    above = _count_above_one(evaluation, ndcg)
    if above:
        print(f"evalframe: warning: {above} of {tables.queries.height} queries have ndcg@{args.k} above 1 "
              "(several passages match one gold answer, as score.py counts them); --dedupe credits each answer once",
              file=sys.stderr)
    if args.output:
        _write_json(Path(args.output), results)
    return render_block(results), ExitCode.OK


def _count_above_one(evaluation: Evaluation, metric: str) -> int:
    import polars as pl

    return evaluation.per_query.filter((pl.col("metric") == metric) & (pl.col("value") > 1.0)).height
