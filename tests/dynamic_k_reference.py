"""A plain-Python reference of the dynamic-K metrics (contract §4), the query counts (§7.1) and
the γ sweep (§8.2), written from the contract's code without evalframe or polars.

- the extracted set of a query is ``extracted_sent_uids`` when the file has it, else the first
  ``selected_k`` ranked sentences; its K is ``selected_k``, else the extracted set's size;
- ``evidence_recall_at_selected_k`` and ``evidence_precision_at_selected_k`` are the contract's
  own functions (§4.2, §4.3: an empty extraction has precision 0.0), on queries with
  has_evidence_gold = 1; ``selected_k`` and ``n_extracted`` on all queries;
- ``n_queries`` counts a slice's queries, ``n_positive`` its positives, ``positive_rate`` is
  their ratio;
- per slice and system: mean, sample std, median, p25, p75, p90 (numpy's linear interpolation),
  min, max; count metrics are summed;
- the γ sweep: for each query, the smallest k whose running sum of ``ranked_scores`` reaches
  γ · their total (softmax-normalised first on request), clipped to [k_min, k_max]; the top K of
  the ranking is the extracted set.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: The metrics this reference computes, each with its subset (None: all queries) and summary.
METRICS = {
    "selected_k": (None, "mean"),
    "n_extracted": (None, "sum"),
    "n_queries": (None, "sum"),
    "n_positive": (None, "sum"),
    "positive_rate": (None, "mean"),
    "evidence_recall@selected_k": ("has_evidence", "mean"),
    "evidence_precision@selected_k": ("has_evidence", "mean"),
}


def evidence_recall_at_selected_k(gold_sent_uids: set[str], extracted_sent_uids: set[str]) -> float:
    """Contract §4.2, as written there."""
    if not gold_sent_uids:
        return 0.0
    retrieved_gold = gold_sent_uids & extracted_sent_uids
    return len(retrieved_gold) / len(gold_sent_uids)


def evidence_precision_at_selected_k(gold_sent_uids: set[str], extracted_sent_uids: set[str]) -> float:
    """Contract §4.3, as written there."""
    if not extracted_sent_uids:
        return 0.0
    retrieved_gold = gold_sent_uids & extracted_sent_uids
    return len(retrieved_gold) / len(extracted_sent_uids)


def parse_list(cell: Any) -> list[str] | None:
    """A list cell (JSON array, ``a;b``, an empty cell) or a list; None stays None."""
    if cell is None:
        return None
    if isinstance(cell, (list, tuple)):
        return [str(item) for item in cell]
    text = str(cell).strip()
    if text.startswith("["):
        return [str(item) for item in json.loads(text)]
    return [part.strip() for part in text.split(";") if part.strip()]


def parse_scores(cell: Any) -> list[float]:
    if isinstance(cell, (list, tuple)):
        return [float(x) for x in cell]
    text = str(cell).strip()
    if text.startswith("["):
        return [float(x) for x in json.loads(text)]
    return [float(part) for part in text.split(";") if part.strip()]


def query_values(row: Mapping[str, Any]) -> dict[str, float | None]:
    """Every metric of one per_query row (a dict with the contract's column names); None where
    the metric does not apply (outside its subset)."""
    gold = set(parse_list(row["gold_sent_uids"]) or [])
    ranked = parse_list(row["ranked_sent_uids"]) or []
    # An empty extracted cell is an empty extraction (the reader's rule for every list cell).
    extracted_cell = (parse_list(row["extracted_sent_uids"]) or []) if "extracted_sent_uids" in row else None
    selected = row.get("selected_k")
    selected = None if selected is None or selected == "" else int(selected)
    if extracted_cell is not None:
        extracted = extracted_cell
    elif selected is not None:
        extracted = ranked[:selected]
    else:
        extracted = None
    label = int(row["has_evidence_gold"])
    values: dict[str, float | None] = {
        "n_queries": 1.0,
        "n_positive": float(label),
        "positive_rate": float(label),
        "selected_k": float(selected) if selected is not None else (float(len(extracted)) if extracted is not None else None),
        "n_extracted": float(len(extracted)) if extracted is not None else None,
    }
    if label == 1 and extracted is not None:
        values["evidence_recall@selected_k"] = evidence_recall_at_selected_k(gold, set(extracted))
        values["evidence_precision@selected_k"] = evidence_precision_at_selected_k(gold, set(extracted))
    else:
        values["evidence_recall@selected_k"] = None
        values["evidence_precision@selected_k"] = None
    return values


def describe(values: Sequence[float], summary: str) -> dict[str, float | None]:
    if not values:
        return {"value": 0.0 if summary == "sum" else None, "std": None, "median": None, "p25": None, "p75": None,
                "p90": None, "min": None, "max": None}
    array = np.asarray(values, dtype=float)
    return {
        "value": float(array.sum()) if summary == "sum" else float(array.mean()),
        "std": float(array.std(ddof=1)) if len(array) > 1 else None,
        "median": float(np.median(array)),
        "p25": float(np.percentile(array, 25)),
        "p75": float(np.percentile(array, 75)),
        "p90": float(np.percentile(array, 90)),
        "min": float(array.min()),
        "max": float(array.max()),
    }


def reference_rows(rows: Sequence[Mapping[str, Any]], slices: Mapping[str, Sequence[str]]) -> dict[tuple, dict]:
    """``{(grouping, system, slice values…, metric): {n, n_skipped, value, std, …}}``.

    ``rows`` are per_query rows (dicts) with ``config``; slice keys are per_query column names
    (``fold``, ``criterion_id``, ``state``, ``has_evidence_gold``).
    """
    computed = [(row, query_values(row)) for row in rows]
    out: dict[tuple, dict] = {}
    for grouping, keys in slices.items():
        cells: dict[tuple, list] = {}
        for row, values in computed:
            cell = (grouping, str(row.get("config", "default")), *(str(row[key]) for key in keys))
            cells.setdefault(cell, []).append(values)
        for cell, members in cells.items():
            for metric, (_, summary) in METRICS.items():
                defined = [v[metric] for v in members if v[metric] is not None]
                out[(*cell, metric)] = {"n": len(defined), "n_skipped": len(members) - len(defined),
                                        **describe(defined, summary)}
    return out


# --- the γ sweep -----------------------------------------------------------------------------


def mass_policy_k(scores: Sequence[float], gamma: float, k_min: int, k_max: int, normalize: str | None) -> int:
    """Smallest k with s_1 + … + s_k >= γ · (s_1 + … + s_n), clipped to [k_min, k_max]."""
    scores = list(scores)
    if normalize == "softmax" and scores:
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        scores = [e / sum(exps) for e in exps]
    total = 0.0
    for s in scores:  # in rank order, as the running sums
        total += s
    k, running = 0, 0.0
    if scores:
        for k, s in enumerate(scores, start=1):  # noqa: B007
            running += s
            if running >= gamma * total:
                break
    return min(max(k, k_min), k_max)


def sweep_rows(
    rows: Sequence[Mapping[str, Any]],
    gammas: Sequence[float],
    *,
    k_min: int,
    k_max: int,
    normalize: str | None = None,
    slices: Mapping[str, Sequence[str]] | None = None,
) -> dict[tuple, dict]:
    """``{(gamma, grouping, system, slice values…): {mean_k, evidence_recall, …}}``."""
    slices = slices or {"overall": []}
    out = {}
    for gamma in gammas:
        per_query = []
        for row in rows:
            ranked = parse_list(row["ranked_sent_uids"]) or []
            k = mass_policy_k(parse_scores(row["ranked_scores"]), gamma, k_min, k_max, normalize)
            gold = set(parse_list(row["gold_sent_uids"]) or [])
            extracted = set(ranked[:k])
            per_query.append((row, k, len(ranked[:k]), gold, extracted))
        for grouping, keys in slices.items():
            cells: dict[tuple, list] = {}
            for item in per_query:
                row = item[0]
                cells.setdefault((gamma, grouping, str(row.get("config", "default")), *(str(row[key]) for key in keys)), []).append(item)
            for cell, members in cells.items():
                with_evidence = [m for m in members if int(m[0]["has_evidence_gold"]) == 1]
                recalls = [evidence_recall_at_selected_k(m[3], m[4]) for m in with_evidence]
                precisions = [evidence_precision_at_selected_k(m[3], m[4]) for m in with_evidence]
                extracted = sum(m[2] for m in members)
                out[cell] = {
                    "n_queries": len(members),
                    "mean_k": float(np.mean([m[1] for m in members])),
                    "n_with_evidence": len(with_evidence),
                    "evidence_recall": float(np.mean(recalls)) if recalls else None,
                    "evidence_precision": float(np.mean(precisions)) if precisions else None,
                    "sentences_extracted": extracted,
                    "sentences_per_1000_queries": extracted / len(members) * 1000,
                }
    return out
