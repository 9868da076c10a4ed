"""``evalframe score PREDICTIONS GOLD [--k K] [--output OUT] [--dedupe]``: the legal ``score.py``.

A thin door onto the engine: the legal files are read into the engine's tables
(:func:`evalframe.io.legal.read_legal`), the legal metrics evaluated and score.py's block
printed (:mod:`evalframe.compat.legal`), on stdout and nothing else::

    Evaluation Results:
    ==========================
    exact_match: 0.0000
    span_f1: 0.2009
    recall@10: 0.3717
    ndcg@10: 0.2757
    num_examples: 100.0000
    ==========================

Notes and warnings (tests without a prediction, queries whose nDCG exceeds 1) go to stderr.
``--output`` writes the same keys as JSON with full precision. When the passages carry
character spans, ``span_precision@K`` and ``span_recall@K`` follow ``ndcg@K``. Bad input exits 2
naming the file and the JSON path of the problem; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalframe.errors import ConfigError, ExitCode


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


def _write_json(path: Path, results: dict) -> None:
    """Write atomically: a failed write leaves no partial file."""
    from evalframe.results.writer import write_file

    write_file(path, lambda temporary: temporary.write_text(json.dumps(results, indent=2) + "\n"))


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.compat.legal import queries_above_one, render_block, score
    from evalframe.io.legal import read_legal

    if args.k < 1:
        raise ConfigError(f"--k must be a whole number >= 1, got {args.k}")
    tables = read_legal(args.predictions, args.gold)
    results, evaluation = score(tables, args.k, dedupe=args.dedupe)
    for note in evaluation.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    above = 0 if args.dedupe else queries_above_one(evaluation, args.k)
    if above:
        print(f"evalframe: warning: {above} of {tables.queries.height} queries have ndcg@{args.k} above 1 "
              "(several passages match one gold answer, as score.py counts them); --dedupe credits each answer once",
              file=sys.stderr)
    if args.output:
        _write_json(Path(args.output), results)
    return render_block(results), ExitCode.OK
