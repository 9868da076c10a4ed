"""Compatibility with the legal ``score.py`` (seed 003): its result keys, its block, its averages.

``evalframe score PREDICTIONS GOLD --k K`` prints what score.py prints, computed by the engine's
legal metrics (:mod:`evalframe.metrics.legal`) on the tables of :func:`evalframe.io.legal.read_legal`:

=====================  =================================  =====================================
score.py key           evalframe metric                   definition
=====================  =================================  =====================================
``exact_match``        ``legal_exact_match``              top passage == a gold answer (strip, lower)
``span_f1``            ``legal_span_f1``                  best token-set F1 of the top passage
``recall@K``           ``legal_recall@K``                 gold answers matched in the top K / answers
``ndcg@K``             ``legal_ndcg@K``                   IDCG over min(#answers, K), may exceed 1
                       (``legal_ndcg@K(dedupe=true)``     with ``--dedupe``: each answer credited once)
``span_precision@K``   ``span_precision@K``               only when passages carry spans
``span_recall@K``      ``span_recall@K``                  only when passages carry spans
``num_examples``       —                                  number of gold tests
=====================  =================================  =====================================

Each value is the mean over the gold tests (a test without a prediction scores 0: the
evaluation runs with ``missing="zero"``); the span metrics average the tests they apply to. The
block prints 4 decimals; :func:`score` gives the full-precision values ``--output`` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from evalframe.errors import ConfigError

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.result import Evaluation

#: The rule above and below score.py's block.
RULE = "=" * 26


def metric_names(k: int, *, dedupe: bool = False, spans: bool = False) -> dict[str, str]:
    """score.py's result key → the engine's metric name."""
    names = {
        "exact_match": "legal_exact_match",
        "span_f1": "legal_span_f1",
        f"recall@{k}": f"legal_recall@{k}",
        f"ndcg@{k}": f"legal_ndcg@{k}" + ("(dedupe=true)" if dedupe else ""),
    }
    if spans:
        names |= {f"span_precision@{k}": f"span_precision@{k}", f"span_recall@{k}": f"span_recall@{k}"}
    return names


def score(tables: Tables, k: int = 10, *, dedupe: bool = False) -> tuple[dict[str, float | None], Evaluation]:
    """score.py's results (its keys, in its order, full precision) and the engine's evaluation."""
    from evalframe.engine.evaluation import evaluate

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"--k must be a whole number >= 1, got {k!r}")
    spans = "span_start" in tables.ranking.columns
    names = metric_names(k, dedupe=dedupe, spans=spans)
    evaluation = evaluate(tables, metrics=list(names.values()), missing="zero")
    values = dict(evaluation.summary.filter(grouping="overall").select("metric", "value").iter_rows())
    results = {key: values[name] for key, name in names.items()}
    results["num_examples"] = float(tables.queries.height)
    return results, evaluation


def queries_above_one(evaluation: Evaluation, k: int) -> int:
    """How many queries score.py's nDCG@k puts above 1 (several passages matching one answer)."""
    name = metric_names(k)[f"ndcg@{k}"]
    return evaluation.per_query.filter((pl.col("metric") == name) & (pl.col("value") > 1.0)).height


def render_block(results: dict[str, float | None]) -> str:
    """score.py's block: ``Evaluation Results:``, a rule, ``key: value`` with 4 decimals, a rule.

    >>> print(render_block({"exact_match": 0.0, "span_f1": 0.20091, "num_examples": 100.0}))
    Evaluation Results:
    ==========================
    exact_match: 0.0000
    span_f1: 0.2009
    num_examples: 100.0000
    ==========================
    """
    lines = [f"{key}: {'nan' if value is None else f'{value:.4f}'}" for key, value in results.items()]
    return "\n".join(["Evaluation Results:", RULE, *lines, RULE])
