"""The one slow, obviously-correct reference for the evidence-contract pipeline.

Written with pandas, numpy, scikit-learn and plain Python, never evalframe or polars code, from
the metrics contract (seeds/001 §1-3, §10) and the issue text that settles its open points; it
is the way an independent verification script is usually written (contract §11.2,
"recompute_metrics_from_csv.py"). Two callers share it:

- the tests (``test_pipeline.py``, ``test_per_query_reader.py``, ``test_cli_pipeline.py``):
  :func:`reference_summary`, :class:`Row`, :func:`compare_with_summary` and the declared error
  cases of a per_query file (:data:`BAD_FILES`);
- the pipeline benchmark, through ``benchmarks/pandas_reference.py`` (which adds this folder to
  ``sys.path``): :func:`load_queries`, :func:`per_query_table` with its ``groupby`` and ``loop``
  modes, :func:`slice_rows` and :func:`across_fold_rows`, timed stage by stage.

What it computes:

1. reading (:func:`load_queries`): ``pandas.read_csv`` with every cell as text, the list cells
   (JSON arrays, ``a;b;c`` text or empty) decoded with ``json.loads`` or split, and the checks of
   ``schemas/per_query.yaml`` written as pandas expressions (:func:`check_queries`: unique key,
   post-disjoint folds, ranges, gold present when ``has_evidence_gold`` = 1, no repeated ids, the
   same gold in every config); any broken rule raises :class:`ValueError`;
2. ranking (contract §3) on the queries with has_evidence_gold = 1 only, with the contract's own
   per-query snippets (recall@K, precision@K = hits / K, hit_rate@K = any gold in the top K,
   map@K = AP@K / number of gold, ndcg@K with binary gain and IDCG from ``min(n_gold, K)`` ones,
   mrr), applied with ``groupby(query).apply`` or with a plain loop over the rows;
3. classification on all queries of a slice (``label`` = has_evidence_gold, ``prob`` =
   p_has_evidence): ``auroc`` = ``roc_auc_score``, ``auprc`` = ``average_precision_score``,
   ``tpr@fpr=x`` = the highest TPR among the points of ``roc_curve(drop_intermediate=False)``
   whose FPR is <= x; the confusion family at threshold 0.5 (predicted positive when
   ``prob >= 0.5``) from the contract's §2.3 formulas or, on request, scikit-learn's functions
   (:func:`confusion_values`, :func:`sklearn_confusion_values`);
4. calibration: ``brier`` = ``brier_score_loss`` (per-query term ``(prob - label)²``), ``ece``
   over 10 equal-width bins ``[i/10, (i+1)/10)``, the last one closed, weighted by bin size; the
   inner edges are ``i / 10`` exactly (``np.linspace(0, 1, 11)`` would put the fourth at
   0.30000000000000004);
5. per slice and system: one row per metric; for per-query metrics (ranking and the Brier term)
   the mean, std (ddof = 1), median, p25 and p75 over the slice's queries (numpy's linear
   interpolation), with ``n`` the queries with a value and ``n_skipped`` the others (queries
   without evidence, for ranking metrics); set-level metrics have no std or quantiles. Across
   folds (contract §10.1): per system and metric, ``n`` folds with a value, ``n_skipped`` folds
   without, and the same statistics of the fold values.

Conventions (evalframe's documented ones, so that the two can be compared): a value that is
undefined on a slice is None (null), never scikit-learn's ``zero_division`` value; AUROC,
TPR@FPR and balanced accuracy need both classes, sensitivity and AUPRC a positive, specificity
and FPR a negative, precision a predicted positive, NPV a predicted negative, F1 a positive or
a predicted positive (scikit-learn's f1_score), MCC also both predicted classes.

:func:`reference_summary` returns one :class:`Row` per (grouping, system, fold, criterion_id,
metric), the same grain as evalframe's ``summary``; :func:`compare_with_summary` lists every
difference between the two. The last section holds the declared error cases of a per_query
file (:data:`BAD_FILES`), shared by the reader and command-line tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import (
    average_precision_score,
    balanced_accuracy_score,
    brier_score_loss,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
    roc_curve,
)

CUTOFFS = (1, 3, 5, 10, 20)
FPR_TARGETS = (0.01, 0.03, 0.05, 0.1)
THRESHOLD = 0.5
ECE_BINS = 10

#: Metric names in the order of pipelines/evidence_contract.yaml.
CLASSIFICATION_METRICS = (
    "auroc", "auprc", *(f"tpr@fpr={x}" for x in FPR_TARGETS),
    "tp", "tn", "fp", "fn", "sensitivity", "specificity", "fpr", "precision", "npv", "f1", "mcc",
    "balanced_accuracy",
)
CALIBRATION_METRICS = ("brier", "ece")
RANKING_METRICS = (
    *(f"{family}@{k}" for family in ("recall", "precision", "hit_rate", "map", "ndcg") for k in CUTOFFS),
    "mrr",
)
#: Per-post multi-label metrics (contract §6): per-post values, then pooled over posts.
PER_POST_METRICS = ("exact_match", "hamming_score", "hamming_loss", "macro_f1")
POOLED_POST_METRICS = ("micro_f1", "weighted_f1", "label_macro_f1")
MULTILABEL_METRICS = (*PER_POST_METRICS, *POOLED_POST_METRICS)
ALL_METRICS = (*CLASSIFICATION_METRICS, *CALIBRATION_METRICS, *RANKING_METRICS)

#: The slices of pipelines/evidence_contract.yaml, plus the fold × criterion cells.
CONTRACT_SLICES = {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]}
ALL_SLICES = {**CONTRACT_SLICES, "fold_x_criterion": ["fold", "criterion_id"]}

#: One query of one system (the key of a per_query row).
QUERY_KEYS = ["system", "post_id", "criterion_id"]
REQUIRED_COLUMNS = ("post_id", "criterion_id", "fold", "has_evidence_gold", "p_has_evidence",
                    "gold_sent_uids", "ranked_sent_uids")
STATES = ("NEG", "UNCERTAIN", "POS")

#: A function giving the confusion family of one slice: ``(y_true, y_pred) -> {metric: value}``.
ConfusionFunction = Callable[[np.ndarray, np.ndarray], dict[str, float | None]]


# --- reading -----------------------------------------------------------------------------------


def parse_id_list(cell: Any) -> list[str]:
    """A list cell: a JSON array, ``a;b;c`` text, an empty cell, or already a list."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return []
    if isinstance(cell, (list, tuple, np.ndarray)):
        return [str(item) for item in cell]
    text = str(cell).strip()
    if text.startswith("["):
        return [str(item) for item in json.loads(text)]
    return [part.strip() for part in text.split(";") if part.strip()]


def load_queries(source: str | Path | pd.DataFrame, *, columns: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The checked per_query rows: ``system, post_id, criterion_id, fold, label, prob, gold, ranked``.

    ``source`` is a CSV path (read with every cell as text) or a frame. ``columns`` maps
    contract names to the source's names, as the pipeline's ``input.columns``. ``system`` is
    the ``config`` column, or ``"default"`` without one. Every row is checked with
    :func:`check_queries`; a missing column, an unreadable list cell (``json.JSONDecodeError``)
    or a broken rule raises :class:`ValueError`.
    """
    origin = str(source) if isinstance(source, (str, Path)) else "per_query table"
    frame = pd.read_csv(source, dtype=str, keep_default_na=False) if isinstance(source, (str, Path)) else source.copy()
    frame = frame.rename(columns={user: contract for contract, user in (columns or {}).items()})
    missing = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{origin}: missing columns {missing}")
    system = frame["config"].astype(str) if "config" in frame.columns else pd.Series("default", index=frame.index)
    queries = pd.DataFrame({
        "system": system.to_numpy(),
        "post_id": frame["post_id"].astype(str).to_numpy(),
        "criterion_id": frame["criterion_id"].astype(str).to_numpy(),
        "fold": frame["fold"].astype(int).to_numpy(),
        "label": frame["has_evidence_gold"].astype(int).to_numpy(),
        "prob": frame["p_has_evidence"].astype(float).to_numpy(),
        "gold": frame["gold_sent_uids"].map(parse_id_list).to_numpy(),
        "ranked": frame["ranked_sent_uids"].map(parse_id_list).to_numpy(),
    })
    check_queries(queries, frame, origin)
    return queries


def _is_blank(column: pd.Series) -> pd.Series:
    """Cells that are missing or empty text."""
    return column.isna() | (column.astype(str).str.strip() == "")


def check_queries(queries: pd.DataFrame, frame: pd.DataFrame, origin: str) -> None:
    """The rules of schemas/per_query.yaml, as a verification script would write them.

    ``queries`` is the frame :func:`load_queries` builds, ``frame`` the source with contract
    column names (for the optional columns ``config``, ``selected_k``, ``state`` and
    ``extracted_sent_uids``). Every broken rule is listed in one :class:`ValueError`.
    """
    problems = []
    key_columns = [column for column in ("post_id", "criterion_id", "config") if column in frame.columns]
    if any(_is_blank(frame[column]).any() for column in key_columns):
        problems.append("missing post_id, criterion_id or config")
    if queries.duplicated(QUERY_KEYS).any():
        problems.append("a (post_id, criterion_id) is listed twice for one config")
    if (queries["fold"] < 0).any():
        problems.append("fold must be a whole number >= 0")
    if (queries.groupby("post_id")["fold"].nunique() > 1).any():
        problems.append("a post appears in more than one fold")
    if not queries["label"].isin([0, 1]).all():
        problems.append("has_evidence_gold must be 0 or 1")
    probability = queries["prob"]
    if not (np.isfinite(probability) & (probability >= 0) & (probability <= 1)).all():
        problems.append("p_has_evidence must be a finite number in [0, 1]")
    if "selected_k" in frame.columns:
        selected_k = frame["selected_k"]
        if (pd.to_numeric(selected_k[~_is_blank(selected_k)]) < 0).any():
            problems.append("selected_k must be >= 0")
    if "state" in frame.columns:
        state = frame["state"]
        if not state[~_is_blank(state)].isin(STATES).all():
            problems.append(f"state must be one of {STATES}")
    if "extracted_sent_uids" in frame.columns:
        frame["extracted_sent_uids"].map(parse_id_list)  # raises on a cell that is not a list
    if ((queries["label"] == 1) & (queries["gold"].map(len) == 0)).any():
        problems.append("has_evidence_gold is 1 but the gold list is empty")
    for column, name in (("gold", "gold_sent_uids"), ("ranked", "ranked_sent_uids")):
        if queries[column].map(lambda ids: len(set(ids)) != len(ids)).any():
            problems.append(f"{name} lists the same sentence id more than once")
    gold_key = queries["gold"].map(lambda ids: tuple(sorted(ids)))
    if (gold_key.groupby([queries["post_id"], queries["criterion_id"]]).nunique() > 1).any():
        problems.append("a query has different gold lists in different configs")
    if problems:
        raise ValueError(f"{origin}: " + "; ".join(problems))


# --- ranking: the contract's §3 snippets, verbatim in substance --------------------------------


def recall_at_k(gold_sent_uids: set[str], ranked_sent_uids: list[str], k: int) -> float:
    if not gold_sent_uids:
        return 0.0
    top_k = set(ranked_sent_uids[:k])
    retrieved_gold = gold_sent_uids & top_k
    return len(retrieved_gold) / len(gold_sent_uids)


def precision_at_k(gold_sent_uids: set[str], ranked_sent_uids: list[str], k: int) -> float:
    top_k = set(ranked_sent_uids[:k])
    retrieved_gold = gold_sent_uids & top_k
    return len(retrieved_gold) / k


def hit_rate_at_k(gold_sent_uids: set[str], ranked_sent_uids: list[str], k: int) -> float:
    """Contract §3.3 per query: 1 when at least one gold sentence is in the top K."""
    return 1.0 if gold_sent_uids & set(ranked_sent_uids[:k]) else 0.0


def mrr_single_query(gold_sent_uids: set[str], ranked_sent_uids: list[str]) -> float:
    for rank, sent_uid in enumerate(ranked_sent_uids, start=1):
        if sent_uid in gold_sent_uids:
            return 1.0 / rank
    return 0.0


def average_precision_at_k(gold_sent_uids: set[str], ranked_sent_uids: list[str], k: int) -> float:
    if not gold_sent_uids:
        return 0.0
    precisions = []
    n_gold_found = 0
    for i, sent_uid in enumerate(ranked_sent_uids[:k], start=1):
        if sent_uid in gold_sent_uids:
            n_gold_found += 1
            precisions.append(n_gold_found / i)
    if not precisions:
        return 0.0
    return sum(precisions) / len(gold_sent_uids)


def ndcg_at_k(gold_sent_uids: set[str], ranked_sent_uids: list[str], k: int) -> float:
    relevance = [1 if sent in gold_sent_uids else 0 for sent in ranked_sent_uids[:k]]
    dcg = sum((2**rel - 1) / np.log2(i + 2) for i, rel in enumerate(relevance))
    n_gold = len(gold_sent_uids)
    ideal_relevance = [1] * min(n_gold, k) + [0] * max(0, k - n_gold)
    idcg = sum((2**rel - 1) / np.log2(i + 2) for i, rel in enumerate(ideal_relevance))
    if idcg == 0:
        return 0.0
    return float(dcg / idcg)


def ranking_values(gold: Sequence[str], ranked: Sequence[str]) -> dict[str, float]:
    """Every ranking metric of one query."""
    gold_set, ranked_list = set(gold), list(ranked)
    values = {}
    for k in CUTOFFS:
        values[f"recall@{k}"] = recall_at_k(gold_set, ranked_list, k)
        values[f"precision@{k}"] = precision_at_k(gold_set, ranked_list, k)
        values[f"hit_rate@{k}"] = hit_rate_at_k(gold_set, ranked_list, k)
        values[f"map@{k}"] = average_precision_at_k(gold_set, ranked_list, k)
        values[f"ndcg@{k}"] = ndcg_at_k(gold_set, ranked_list, k)
    values["mrr"] = mrr_single_query(gold_set, ranked_list)
    return values


def per_query_table(queries: pd.DataFrame, *, mode: str = "loop") -> pd.DataFrame:
    """``queries`` plus the Brier term and one column per ranking metric (NaN without evidence).

    Ranking metrics are computed on the queries with has_evidence_gold = 1 only (contract §3),
    with :func:`ranking_values` applied in one of two ways that give the same table:
    ``"loop"``, a plain loop over the rows, or ``"groupby"``, ``groupby(query).apply`` on the
    (system, post_id, criterion_id) key, the way a verification script often reads.
    """
    with_evidence = queries[queries["label"] == 1]
    if mode == "loop":
        values = [ranking_values(gold, ranked)
                  for gold, ranked in zip(with_evidence["gold"], with_evidence["ranked"], strict=True)]
        ranking = pd.DataFrame(values, index=with_evidence.index, columns=list(RANKING_METRICS))
    elif mode == "groupby":
        by_query = with_evidence.groupby(QUERY_KEYS, sort=False)[["gold", "ranked"]].apply(
            lambda query: pd.Series(ranking_values(query["gold"].iloc[0], query["ranked"].iloc[0]))
        )
        # The key is unique (check_queries), so the join gives each row its query's values.
        ranking = with_evidence[QUERY_KEYS].join(by_query, on=QUERY_KEYS).reindex(columns=list(RANKING_METRICS))
    else:
        raise ValueError(f"unknown per-query mode {mode!r} (loop or groupby)")
    table = queries.assign(brier=(queries["prob"] - queries["label"]) ** 2)
    return table.join(ranking)


# --- classification and calibration of one slice ----------------------------------------------


def expected_calibration_error(y_true: np.ndarray, y_prob: np.ndarray, bins: int = ECE_BINS) -> float:
    """Σ_b (n_b / N) |mean prob_b − mean label_b| over bins [b/B, (b+1)/B), the last one closed."""
    inner_edges = np.array([edge / bins for edge in range(1, bins)])
    bin_index = (y_prob[:, None] >= inner_edges[None, :]).sum(axis=1)  # 1.0 passes every edge: last bin
    error = 0.0
    for index in np.unique(bin_index):
        members = bin_index == index
        error += members.sum() / len(y_prob) * abs(y_prob[members].mean() - y_true[members].mean())
    return float(error)


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def confusion_values(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float | None]:
    """Contract §2.3 table: counts, then each ratio; a zero denominator gives None."""
    tp = int(((y_pred == 1) & (y_true == 1)).sum())
    tn = int(((y_pred == 0) & (y_true == 0)).sum())
    fp = int(((y_pred == 1) & (y_true == 0)).sum())
    fn = int(((y_pred == 0) & (y_true == 1)).sum())
    sensitivity = _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    precision = _ratio(tp, tp + fp)
    f1 = _ratio(2 * tp, 2 * tp + fp + fn)  # undefined only with no positive and no prediction (DESIGN §4)
    mcc_denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return {
        "tp": float(tp), "tn": float(tn), "fp": float(fp), "fn": float(fn),
        "sensitivity": sensitivity,
        "specificity": specificity,
        "fpr": _ratio(fp, tn + fp),
        "precision": precision,
        "npv": _ratio(tn, tn + fn),
        "f1": f1,
        "mcc": (tp * tn - fp * fn) / math.sqrt(mcc_denominator) if mcc_denominator > 0 else None,
        "balanced_accuracy": (
            (sensitivity + specificity) / 2 if sensitivity is not None and specificity is not None else None
        ),
    }


def sklearn_confusion_values(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float | None]:
    """The same ratios from scikit-learn, where :func:`confusion_values` says they are defined."""
    plain = confusion_values(y_true, y_pred)
    defined = {name: value is not None for name, value in plain.items()}
    tn, fp, fn, tp = (float(count) for count in confusion_matrix(y_true, y_pred, labels=[0, 1]).ravel())
    sklearn_values = {
        "tp": tp, "tn": tn, "fp": fp, "fn": fn,
        "sensitivity": lambda: recall_score(y_true, y_pred),
        "specificity": lambda: recall_score(y_true, y_pred, pos_label=0),
        "fpr": lambda: 1 - recall_score(y_true, y_pred, pos_label=0),
        "precision": lambda: precision_score(y_true, y_pred),
        "npv": lambda: precision_score(y_true, y_pred, pos_label=0),
        "f1": lambda: f1_score(y_true, y_pred),
        "mcc": lambda: matthews_corrcoef(y_true, y_pred),
        "balanced_accuracy": lambda: balanced_accuracy_score(y_true, y_pred),
    }
    return {
        name: (float(value()) if callable(value) else value) if defined[name] else None
        for name, value in sklearn_values.items()
    }


def classification_values(
    y_true: np.ndarray,
    y_prob: np.ndarray,
    threshold: float = THRESHOLD,
    *,
    confusion: ConfusionFunction = confusion_values,
) -> dict[str, float | None]:
    """The contract §2.1–2.4 metrics of one slice; None where a metric is undefined.

    Threshold-free metrics and Brier come from scikit-learn. The confusion family comes from
    ``confusion``: :func:`confusion_values` by default, the contract's §2.3 formulas, which the
    tests use because scikit-learn's per-call overhead would dominate them
    (``test_reference_confusion_family_matches_sklearn`` checks the two agree); or
    :func:`sklearn_confusion_values`, scikit-learn's functions, which the benchmark uses.
    """
    n_positive = int((y_true == 1).sum())
    n_negative = int((y_true == 0).sum())
    both_classes = n_positive > 0 and n_negative > 0
    values: dict[str, float | None] = {
        "auroc": float(roc_auc_score(y_true, y_prob)) if both_classes else None,
        "auprc": float(average_precision_score(y_true, y_prob)) if n_positive > 0 else None,
    }
    if both_classes:
        false_positive_rates, true_positive_rates, _ = roc_curve(y_true, y_prob, drop_intermediate=False)
    for target in FPR_TARGETS:
        values[f"tpr@fpr={target}"] = (
            float(true_positive_rates[false_positive_rates <= target].max()) if both_classes else None
        )
    values |= confusion(y_true, (y_prob >= threshold).astype(int))
    values["brier"] = float(brier_score_loss(y_true, y_prob, pos_label=1))
    values["ece"] = expected_calibration_error(y_true, y_prob)
    return values


# --- statistics and the summary ---------------------------------------------------------------


def describe(values: Iterable[float]) -> dict[str, float | None]:
    """mean, std (ddof = 1), median, p25, p75 of per-query values; None where undefined."""
    return describe_columns(np.asarray(list(values), dtype=float).reshape(-1, 1))[0]


def describe_columns(matrix: np.ndarray) -> list[dict[str, float | None]]:
    """:func:`describe` of every column of ``matrix`` (rows: queries), in one numpy pass."""
    n_rows, n_columns = matrix.shape
    if n_rows == 0:
        return [dict.fromkeys(("value", "std", "median", "p25", "p75")) for _ in range(n_columns)]
    mean = np.mean(matrix, axis=0)
    std = np.std(matrix, axis=0, ddof=1) if n_rows >= 2 else [None] * n_columns
    median = np.median(matrix, axis=0)
    p25, p75 = np.percentile(matrix, [25, 75], axis=0, method="linear")
    return [
        {
            "value": float(mean[j]),
            "std": None if std[j] is None else float(std[j]),
            "median": float(median[j]),
            "p25": float(p25[j]),
            "p75": float(p75[j]),
        }
        for j in range(n_columns)
    ]


@dataclass
class Row:
    """One reference summary row; ``value is None`` where the metric is undefined on the slice."""

    grouping: str
    system: str
    fold: int | None
    criterion_id: str | None
    metric: str
    n: int
    n_skipped: int
    value: float | None
    std: float | None = None
    median: float | None = None
    p25: float | None = None
    p75: float | None = None

    @property
    def key(self) -> tuple:
        return (self.grouping, self.system, self.fold, self.criterion_id, self.metric)


def _cell_rows(
    grouping: str, system: str, keys: dict, cell: pd.DataFrame, confusion: ConfusionFunction
) -> list[Row]:
    """The rows of one slice cell (one system, one value of the slice's keys), every metric."""
    fold, criterion = keys.get("fold"), keys.get("criterion_id")
    rows = []
    y_true = cell["label"].to_numpy()
    y_prob = cell["prob"].to_numpy()
    set_values = classification_values(y_true, y_prob, confusion=confusion)
    for metric in (*CLASSIFICATION_METRICS, "ece"):
        rows.append(Row(grouping, system, fold, criterion, metric, n=len(cell), n_skipped=0, value=set_values[metric]))
    brier = describe(cell["brier"]) | {"value": set_values["brier"]}  # brier_score_loss, not our mean
    rows.append(Row(grouping, system, fold, criterion, "brier", n=len(cell), n_skipped=0, **brier))
    positives = cell[cell["label"] == 1]
    stats = describe_columns(positives[list(RANKING_METRICS)].to_numpy(dtype=float))
    for metric, described in zip(RANKING_METRICS, stats, strict=True):
        rows.append(Row(grouping, system, fold, criterion, metric, n=len(positives),
                        n_skipped=len(cell) - len(positives), **described))
    return rows


def slice_rows(
    table: pd.DataFrame,
    slices: Mapping[str, Sequence[str]] = CONTRACT_SLICES,
    *,
    confusion: ConfusionFunction = confusion_values,
) -> list[Row]:
    """Every metric of every slice cell of :func:`per_query_table`'s ``table``, per system.

    ``slices`` maps a grouping name to its key columns (``[]`` for the whole table);
    ``confusion`` as in :func:`classification_values`.
    """
    rows: list[Row] = []
    for grouping, keys in slices.items():
        by = ["system", *keys]
        for values, cell in table.groupby(by, sort=True):
            values = values if isinstance(values, tuple) else (values,)
            named = dict(zip(by, values, strict=True))
            named = {k: (int(v) if k == "fold" else str(v)) for k, v in named.items()}
            rows += _cell_rows(grouping, named.pop("system"), named, cell, confusion)
    return rows


def multilabel_values(cell: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """Contract §6 on one slice cell: per-post values, and the pooled F1s with scikit-learn.

    A post's criteria are its rows; the prediction is ``prob >= 0.5``. Per post (pandas group
    sums): exact match (every criterion right), hamming score and loss (fraction right / wrong),
    F1 = 2tp / (2tp + fp + fn), 0 where nothing is true or predicted (scikit-learn's
    ``zero_division=0``). Pooled: micro F1 over every post × criterion pair (``f1_score``), and
    the per-criterion F1s (``f1_score`` per criterion) averaged plainly (label-macro) and by each
    criterion's number of positives (weighted).
    """
    predicted = (cell["prob"] >= THRESHOLD).astype(int)
    label = cell["label"].astype(int)
    counts = pd.DataFrame({
        "post_id": cell["post_id"], "right": (label == predicted).astype(float),
        "tp": label * predicted, "fp": (1 - label) * predicted, "fn": label * (1 - predicted),
    }).groupby("post_id", sort=True)
    right = counts["right"]
    sums = counts[["tp", "fp", "fn"]].sum()
    denominator = 2 * sums["tp"] + sums["fp"] + sums["fn"]
    per_post = pd.DataFrame({
        "exact_match": (right.min() == 1).astype(float),
        "hamming_score": right.mean(),
        "hamming_loss": 1 - right.mean(),
        "macro_f1": (2 * sums["tp"] / denominator.where(denominator > 0)).fillna(0.0),
    })
    f1s, support = [], []
    for _, rows in cell.assign(pred=predicted).groupby("criterion_id", sort=True):
        f1s.append(f1_score(rows["label"], rows["pred"], zero_division=0.0))
        support.append(rows["label"].sum())
    f1s, support = np.asarray(f1s, dtype=float), np.asarray(support, dtype=float)
    pooled = {
        "micro_f1": float(f1_score(label, predicted, zero_division=0.0)),
        "label_macro_f1": float(f1s.mean()),
        "weighted_f1": float((f1s * support).sum() / support.sum()) if support.sum() > 0 else float(f1s.mean()),
    }
    return per_post, pooled


def multilabel_rows(table: pd.DataFrame, slices: Mapping[str, Sequence[str]] = CONTRACT_SLICES) -> list[Row]:
    """Contract §6 rows of every slice whose keys are constant within a post (not criterion),
    per system; ``n`` counts posts."""
    rows: list[Row] = []
    for grouping, keys in slices.items():
        if "criterion_id" in keys:
            continue
        by = ["system", *keys]
        for values, cell in table.groupby(by, sort=True):
            values = values if isinstance(values, tuple) else (values,)
            named = dict(zip(by, values, strict=True))
            system, fold = str(named["system"]), (int(named["fold"]) if "fold" in named else None)
            per_post, pooled = multilabel_values(cell)
            stats = describe_columns(per_post[list(PER_POST_METRICS)].to_numpy(dtype=float))
            for metric, described in zip(PER_POST_METRICS, stats, strict=True):
                rows.append(Row(grouping, system, fold, None, metric, n=len(per_post), n_skipped=0, **described))
            for metric in POOLED_POST_METRICS:
                rows.append(Row(grouping, system, fold, None, metric, n=len(per_post), n_skipped=0, value=pooled[metric]))
    return rows


def across_fold_rows(rows: Sequence[Row]) -> list[Row]:
    """Across folds from the ``fold`` grouping's rows (others are ignored), per system and metric.

    ``n`` counts the folds where the metric has a value, ``n_skipped`` the others; value, std
    (ddof = 1), median, p25 and p75 are those of the defined fold values.
    """
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.grouping == "fold":
            groups.setdefault((row.system, row.metric), []).append(row)
    across = []
    for (system, metric), members in groups.items():
        defined = [row.value for row in members if row.value is not None]
        across.append(Row("across_folds", system, None, None, metric, n=len(defined),
                          n_skipped=len(members) - len(defined), **describe(defined)))
    return across


def reference_summary(
    source: str | Path | pd.DataFrame,
    slices: Mapping[str, Sequence[str]] = CONTRACT_SLICES,
    *,
    columns: Mapping[str, str] | None = None,
    across_folds: bool = True,
    multilabel: bool = True,
) -> dict[tuple, Row]:
    """Reference rows keyed by ``(grouping, system, fold, criterion_id, metric)``.

    ``source`` and ``columns`` as in :func:`load_queries`, ``slices`` as in :func:`slice_rows`;
    the per-post rows of contract §6 when ``multilabel``; the across-folds rows are added when
    ``across_folds`` (from a ``fold`` grouping, if any).
    """
    table = per_query_table(load_queries(source, columns=columns))
    rows = slice_rows(table, slices)
    if multilabel:
        rows += multilabel_rows(table, slices)
    if across_folds:
        rows += across_fold_rows(rows)
    return {row.key: row for row in rows}


# --- comparing with evalframe's summary -------------------------------------------------------


def summary_rows(summary) -> dict[tuple, dict]:
    """evalframe's summary (a Polars frame) keyed like :func:`reference_summary`."""
    keyed = {}
    for row in summary.iter_rows(named=True):
        key = (row["grouping"], row["system"], row.get("fold"), row.get("criterion_id"), row["metric"])
        if key in keyed:
            raise AssertionError(f"summary has two rows for {key}")
        keyed[key] = row
    return keyed


def _close(actual: float | None, expected: float | None, tolerance: float) -> bool:
    if expected is None or actual is None:
        return actual is None and expected is None
    return math.isfinite(actual) and abs(actual - expected) <= tolerance


def compare_with_summary(
    summary, reference: Mapping[tuple, Row], *, tolerance: float = 1e-9, check_notes: bool = True
) -> list[str]:
    """Every difference between evalframe's ``summary`` and the reference, as readable lines.

    Counts (``n``, ``n_skipped``) must be equal; values within ``tolerance``; a value the
    reference leaves undefined must be null in evalframe, with a non-empty ``note`` when
    ``check_notes``.
    """
    actual = summary_rows(summary)
    problems = [f"missing from evalframe's summary: {key}" for key in reference if key not in actual]
    problems += [f"not in the reference: {key}" for key in actual if key not in reference]
    for key, expected in reference.items():
        row = actual.get(key)
        if row is None:
            continue
        for name in ("n", "n_skipped"):
            if row[name] != getattr(expected, name):
                problems.append(f"{key}: {name} = {row[name]}, reference {getattr(expected, name)}")
        for name in ("value", "std", "median", "p25", "p75"):
            if not _close(row[name], getattr(expected, name), tolerance):
                problems.append(f"{key}: {name} = {row[name]!r}, reference {getattr(expected, name)!r}")
        if check_notes and expected.value is None and not row["note"]:
            problems.append(f"{key}: value is undefined but the note is empty ({row['note']!r})")
    return problems


# --- the declared error cases of a per_query file (shared by the reader and CLI tests) -------

PER_QUERY_HEADER = "post_id,criterion_id,fold,has_evidence_gold,p_has_evidence,gold_sent_uids,ranked_sent_uids,config"
#: A valid file: lines 2-5 (line 1 is the header); JSON arrays, `;` lists and an empty cell.
GOOD_PER_QUERY_LINES = (
    'a,X,0,1,0.9,"[""a1""]","[""a2"",""a1""]",s1',
    'a,Y,0,0,0.2,[],"[""a1"",""a2""]",s1',
    "b,X,1,0,0.6,,b1;b2,s1",
    "b,Y,1,1,0.3,b2,b2;b1,s1",
)


@dataclass(frozen=True)
class BadFile:
    """A per_query file breaking one rule, and what the error must name."""

    name: str
    lines: tuple[str, ...]
    location: str | None  # "line 3"; None when no single line is at fault (a missing column)
    column: str | None
    value: str | None  # how the value appears in the message, e.g. "(value: 1.5)"
    also: tuple[str, ...] = ()  # further text the message must contain

    def write(self, folder: Path) -> Path:
        path = Path(folder) / f"{self.name}.csv"
        path.write_text("\n".join(self.lines) + "\n")
        return path


def _replace_line(line_number: int, text: str) -> tuple[str, ...]:
    lines = [PER_QUERY_HEADER, *GOOD_PER_QUERY_LINES]
    lines[line_number - 1] = text
    return tuple(lines)


def _without_column(column: str) -> tuple[str, ...]:
    import csv
    import io

    rows = list(csv.reader(io.StringIO("\n".join([PER_QUERY_HEADER, *GOOD_PER_QUERY_LINES]))))
    drop = rows[0].index(column)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([cell for i, cell in enumerate(row) if i != drop] for row in rows)
    return tuple(buffer.getvalue().splitlines())


BAD_FILES = (
    BadFile("missing_column", _without_column("p_has_evidence"), None, "p_has_evidence", None, ("missing",)),
    BadFile("unparseable_list", _replace_line(3, 'a,Y,0,0,0.2,[],"[""a1"",",s1'), "line 3", "ranked_sent_uids",
            """(value: '["a1",')"""),
    BadFile("probability_above_one", _replace_line(3, 'a,Y,0,0,1.5,[],"[""a1"",""a2""]",s1'), "line 3",
            "p_has_evidence", "(value: 1.5)"),
    BadFile("probability_nan", _replace_line(3, 'a,Y,0,0,NaN,[],"[""a1"",""a2""]",s1'), "line 3",
            "p_has_evidence", "(value: nan)"),
    BadFile("label_not_binary", _replace_line(3, 'a,Y,0,2,0.2,[],"[""a1"",""a2""]",s1'), "line 3",
            "has_evidence_gold", "(value: 2)"),
    BadFile("duplicate_key", (PER_QUERY_HEADER, *GOOD_PER_QUERY_LINES, GOOD_PER_QUERY_LINES[1]), "line 6", "post_id",
            "post_id='a'", ("criterion_id='Y'", "config='s1'", "line 3")),
    BadFile("post_in_two_folds", _replace_line(3, 'a,Y,1,0,0.2,[],"[""a1"",""a2""]",s1'), "line 3", "fold",
            "'a'", ("line 2",)),
    BadFile("evidence_without_gold", _replace_line(3, 'a,Y,0,1,0.2,[],"[""a1"",""a2""]",s1'), "line 3",
            "gold_sent_uids", "(value: [])"),
)
