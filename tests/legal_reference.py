"""A plain-Python reference of score.py's definitions (seed 003), written from its description.

Slow and obvious on purpose: a dict from query to passages, loops over passages and gold answers,
Python's ``in`` and ``==``. Used by the tests as the oracle of the engine's legal metrics.
Also a reference of the character-span metrics: sets of character positions.
"""

from __future__ import annotations

import math

from evalframe.data.text import word_tokens


def norm(text: str) -> str:
    return text.strip().lower()


def matches(passage: str, gold: str) -> bool:
    """Either contains the other after strip().lower(); an empty passage matches nothing."""
    p, g = norm(passage), norm(gold)
    if not p:
        return False
    return g in p or p in g


def exact_match(passages: list[str], golds: list[str]) -> float:
    if not passages:
        return 0.0
    return float(any(norm(passages[0]) == norm(g) for g in golds))


def token_set(text: str) -> set[str]:
    return set(word_tokens(text))


def span_f1(passages: list[str], golds: list[str]) -> float:
    if not passages:
        return 0.0
    best = 0.0
    predicted = token_set(passages[0])
    for gold in golds:
        truth = token_set(gold)
        common = len(predicted & truth)
        if not predicted or not truth or common == 0:
            f1 = 0.0
        else:
            precision, recall = common / len(predicted), common / len(truth)
            f1 = 2 * precision * recall / (precision + recall)
        best = max(best, f1)
    return best


def recall_at(passages: list[str], golds: list[str], k: int) -> float:
    top = passages[:k]
    found = sum(1 for gold in golds if any(matches(p, gold) for p in top))
    return found / len(golds)


def ndcg_at(passages: list[str], golds: list[str], k: int, *, dedupe: bool = False) -> float:
    dcg = 0.0
    credited: set[int] = set()
    for i, passage in enumerate(passages[:k], start=1):
        hit = [j for j, gold in enumerate(golds) if matches(passage, gold)]
        if dedupe:
            rel = 1.0 if any(j not in credited for j in hit) else 0.0
            credited.update(hit)
        else:
            rel = 1.0 if hit else 0.0
        dcg += rel / math.log2(i + 1)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(golds), k) + 1))
    return dcg / idcg


def score(predictions: list[dict], gold: dict, k: int = 10, *, dedupe: bool = False) -> dict[str, float]:
    """score.py's results from the parsed JSON files."""
    by_query = {}
    for record in predictions:
        by_query[record["query"]] = [p if isinstance(p, str) else p["text"] for p in record["retrieved_passages"]]
    rows = []
    for test in gold["tests"]:
        passages = by_query.get(test["query"], [])
        golds = [s["answer"] for s in test["snippets"]]
        rows.append((exact_match(passages, golds), span_f1(passages, golds), recall_at(passages, golds, k),
                     ndcg_at(passages, golds, k, dedupe=dedupe)))
    n = len(rows)
    return {
        "exact_match": sum(r[0] for r in rows) / n,
        "span_f1": sum(r[1] for r in rows) / n,
        f"recall@{k}": sum(r[2] for r in rows) / n,
        f"ndcg@{k}": sum(r[3] for r in rows) / n,
        "num_examples": float(n),
    }


def span_scores(retrieved: list[tuple[str, int, int]], gold: list[tuple[str, int, int]], k: int) -> tuple[float | None, float | None]:
    """(span_precision@k, span_recall@k) by sets of (file, character) positions."""
    covered = {(f, c) for f, s, e in retrieved[:k] for c in range(s, e)}
    truth = {(f, c) for f, s, e in gold for c in range(s, e)}
    both = len(covered & truth)
    precision = both / len(covered) if covered else None
    recall = both / len(truth) if truth else None
    return precision, recall
