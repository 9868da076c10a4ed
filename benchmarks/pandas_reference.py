"""Plain pandas + scikit-learn recomputation of ``pipelines/evidence_contract.yaml``.

The reference of ``benchmarks/bench_pipeline.py``: the metrics contract (seed 001) recomputed
from a ``per_query.csv`` the way an independent verification script is usually written
(contract §11.2, "recompute_metrics_from_csv.py"). It imports neither evalframe nor polars:

1. ``pandas.read_csv``, ``json.loads`` on each list cell, and the checks of
   ``schemas/per_query.yaml`` written as pandas expressions (unique key, post-disjoint folds,
   ranges, gold present when ``has_evidence_gold`` = 1, no repeated ids, same gold in every
   config);
2. ranking metrics (contract §3) per query with the contract's own per-query Python functions
   (recall@k, precision@k, MRR, AP@k, nDCG@k; hit rate as "any gold in the top k"), applied with
   ``groupby(query).apply(...)`` (``--per-query groupby``, the default) or with a plain loop over
   the rows (``--per-query loop``); only on queries with evidence, as the contract says;
3. the NE-gate metrics (contract §2) per slice with scikit-learn: ``roc_auc_score``,
   ``average_precision_score``, ``roc_curve(drop_intermediate=False)`` for TPR at a target FPR,
   ``confusion_matrix``, ``recall_score``, ``precision_score``, ``f1_score``,
   ``matthews_corrcoef``, ``balanced_accuracy_score`` and ``brier_score_loss``; ECE in numpy;
4. slices overall, per fold and per criterion, each per config; for per-query metrics (ranking
   and the Brier term) the mean, std (ddof = 1), median, p25 and p75 over the slice's queries;
   then mean ± std across folds of every per-fold value (contract §10.1).

Conventions (the same as evalframe's documented ones, so that the two can be compared):

- predicted positive when ``p >= 0.5``;
- a value that is undefined on a slice is null (NaN), never scikit-learn's ``zero_division``
  value: AUROC / TPR@FPR / MCC / balanced accuracy need both classes, sensitivity and AUPRC a
  positive, specificity and FPR a negative, precision a predicted positive, NPV a predicted
  negative, F1 a positive and a predicted positive, MCC also both predicted classes;
- ECE: 10 equal-width bins ``[b/10, (b+1)/10)`` with the last one closed; the inner edges are
  ``b / 10`` exactly (``np.linspace(0, 1, 11)`` would give 0.30000000000000004 for the fourth);
- ``n`` counts the slice's queries with a value, ``n_skipped`` the others (queries without
  evidence, for ranking metrics); set-level metrics have no std or quantiles;
- across folds: ``n`` folds with a value, ``n_skipped`` folds without, the mean, std (ddof = 1),
  median, p25 and p75 of the fold values.

Usage::

    python benchmarks/pandas_reference.py data_samples/per_query.csv --out /tmp/reference
    # writes summary.csv, summary.parquet and per_query.parquet (one row per query and config)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

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

THRESHOLD = 0.5
ECE_BINS = 10
CUTOFFS = (1, 3, 5, 10, 20)
FPR_TARGETS = (0.01, 0.03, 0.05, 0.1)
LIST_COLUMNS = ("gold_sent_uids", "ranked_sent_uids", "extracted_sent_uids")
REQUIRED_COLUMNS = ("post_id", "criterion_id", "fold", "has_evidence_gold", "p_has_evidence",
                    "gold_sent_uids", "ranked_sent_uids")
STATES = ("NEG", "UNCERTAIN", "POS")
QUERY_KEYS = ["config", "post_id", "criterion_id"]
SLICES = {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]}

#: Metric names in the order of pipelines/evidence_contract.yaml.
SET_METRICS = (
    ["auroc", "auprc"] + [f"tpr@fpr={target!r}" for target in FPR_TARGETS]
    + ["tp", "tn", "fp", "fn", "sensitivity", "specificity", "fpr", "precision", "npv", "f1", "mcc",
       "balanced_accuracy"]
)
RANKING_METRICS = [
    f"{family}@{k}" for family in ("recall", "precision", "hit_rate", "map", "ndcg") for k in CUTOFFS
] + ["mrr"]
PER_QUERY_METRICS = ["brier", *RANKING_METRICS]
METRIC_ORDER = [*SET_METRICS, "brier", "ece", *RANKING_METRICS]
SUBSETS = {name: "all queries" for name in [*SET_METRICS, "brier", "ece"]}
SUBSETS.update({name: "queries with has_evidence_gold = 1" for name in RANKING_METRICS})
SUMMARY_COLUMNS = ["grouping", "system", "fold", "criterion_id", "metric", "subset",
                   "n", "n_skipped", "value", "std", "median", "p25", "p75"]


# --- reading ------------------------------------------------------------------------------------


def read_per_query(path: str | Path) -> pd.DataFrame:
    """Read per_query.csv, decode its JSON list columns and check it; raise on any problem."""
    frame = pd.read_csv(path, dtype={"post_id": str, "criterion_id": str, "config": str, "state": str})
    missing = [column for column in REQUIRED_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    if "config" not in frame.columns:
        frame["config"] = "default"
    for column in LIST_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(json.loads)
    check_per_query(frame, path)
    return frame


def check_per_query(frame: pd.DataFrame, path: str | Path) -> None:
    """The checks of schemas/per_query.yaml, as a verification script would write them."""
    problems = []
    if frame[["post_id", "criterion_id", "config"]].isna().any().any():
        problems.append("missing post_id, criterion_id or config")
    if frame.duplicated(["post_id", "criterion_id", "config"]).any():
        problems.append("a (post_id, criterion_id) is listed twice for one config")
    if not pd.api.types.is_integer_dtype(frame["fold"]) or (frame["fold"] < 0).any():
        problems.append("fold must be a whole number >= 0")
    if (frame.groupby("post_id")["fold"].nunique() > 1).any():
        problems.append("a post appears in more than one fold")
    if not frame["has_evidence_gold"].isin([0, 1]).all():
        problems.append("has_evidence_gold must be 0 or 1")
    probability = frame["p_has_evidence"]
    if not (np.isfinite(probability) & (probability >= 0) & (probability <= 1)).all():
        problems.append("p_has_evidence must be a finite number in [0, 1]")
    if "selected_k" in frame.columns and (frame["selected_k"] < 0).any():
        problems.append("selected_k must be >= 0")
    if "state" in frame.columns and not frame["state"].dropna().isin(STATES).all():
        problems.append(f"state must be one of {STATES}")
    for column in LIST_COLUMNS:
        if column in frame.columns and not frame[column].map(lambda ids: isinstance(ids, list)).all():
            problems.append(f"{column} must hold JSON arrays")
    n_gold = frame["gold_sent_uids"].map(len)
    if ((frame["has_evidence_gold"] == 1) & (n_gold == 0)).any():
        problems.append("has_evidence_gold is 1 but the gold list is empty")
    for column in ("gold_sent_uids", "ranked_sent_uids"):
        if frame[column].map(lambda ids: len(set(ids)) != len(ids)).any():
            problems.append(f"{column} lists the same sentence id more than once")
    gold_key = frame["gold_sent_uids"].map(lambda ids: tuple(sorted(ids)))
    if (gold_key.groupby([frame["post_id"], frame["criterion_id"]]).nunique() > 1).any():
        problems.append("a query has different gold lists in different configs")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))


# --- per-query ranking metrics: the contract's §3 functions ------------------------------------


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
    """Contract §3.3 (no function given there): 1 when a gold sentence is in the top k."""
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
    return dcg / idcg


def ranking_values(gold_list: list[str], ranked: list[str]) -> dict[str, float]:
    """Every ranking metric of one query (contract §3)."""
    gold = set(gold_list)
    values = {}
    for k in CUTOFFS:
        values[f"recall@{k}"] = recall_at_k(gold, ranked, k)
    for k in CUTOFFS:
        values[f"precision@{k}"] = precision_at_k(gold, ranked, k)
    for k in CUTOFFS:
        values[f"hit_rate@{k}"] = hit_rate_at_k(gold, ranked, k)
    for k in CUTOFFS:
        values[f"map@{k}"] = average_precision_at_k(gold, ranked, k)
    for k in CUTOFFS:
        values[f"ndcg@{k}"] = ndcg_at_k(gold, ranked, k)
    values["mrr"] = mrr_single_query(gold, ranked)
    return values


def per_query_table(frame: pd.DataFrame, mode: str = "groupby") -> pd.DataFrame:
    """One row per (config, query): keys, fold, the Brier term and the ranking metrics.

    Ranking metrics are computed on queries with evidence only (NaN elsewhere, contract §3).
    """
    with_evidence = frame[frame["has_evidence_gold"] == 1]
    if mode == "groupby":
        ranking = with_evidence.groupby(QUERY_KEYS, sort=False)[["gold_sent_uids", "ranked_sent_uids"]].apply(
            lambda query: pd.Series(ranking_values(query["gold_sent_uids"].iloc[0], query["ranked_sent_uids"].iloc[0]))
        )
        ranking = ranking.reset_index()
    elif mode == "loop":
        rows = [
            ranking_values(gold, ranked)
            for gold, ranked in zip(with_evidence["gold_sent_uids"], with_evidence["ranked_sent_uids"], strict=True)
        ]
        ranking = pd.concat(
            [with_evidence[QUERY_KEYS].reset_index(drop=True), pd.DataFrame(rows, columns=RANKING_METRICS)], axis=1
        )
    else:
        raise ValueError(f"unknown per-query mode {mode!r} (groupby or loop)")
    table = frame[[*QUERY_KEYS, "fold", "has_evidence_gold", "p_has_evidence"]].copy()
    table["brier"] = (table["p_has_evidence"] - table["has_evidence_gold"]) ** 2
    return table.merge(ranking, on=QUERY_KEYS, how="left")


# --- set-level metrics of a slice: scikit-learn -------------------------------------------------


def expected_calibration_error(labels: np.ndarray, probabilities: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE over equal-width bins [b/B, (b+1)/B), the last closed: Σ_b (n_b / N) |mean p_b − mean y_b|."""
    inner_edges = np.arange(1, bins) / bins
    bin_of = np.digitize(probabilities, inner_edges, right=False)
    total = 0.0
    for b in range(bins):
        in_bin = bin_of == b
        if in_bin.any():
            total += in_bin.sum() / len(labels) * abs(probabilities[in_bin].mean() - labels[in_bin].mean())
    return total


def set_metric_values(labels: np.ndarray, probabilities: np.ndarray) -> dict[str, float]:
    """The NE-gate metrics of one slice (contract §2); NaN where undefined."""
    nan = float("nan")
    values: dict[str, float] = {}
    n_positive = int(labels.sum())
    n_negative = len(labels) - n_positive
    both_classes = n_positive > 0 and n_negative > 0
    values["auroc"] = roc_auc_score(labels, probabilities) if both_classes else nan
    values["auprc"] = average_precision_score(labels, probabilities) if n_positive > 0 else nan
    if both_classes:
        fpr, tpr, _ = roc_curve(labels, probabilities, drop_intermediate=False)
    for target in FPR_TARGETS:
        values[f"tpr@fpr={target!r}"] = float(tpr[fpr <= target].max()) if both_classes else nan

    predicted = (probabilities >= THRESHOLD).astype(int)
    tn, fp, fn, tp = confusion_matrix(labels, predicted, labels=[0, 1]).ravel()
    values.update(tp=float(tp), tn=float(tn), fp=float(fp), fn=float(fn))
    has_positive, has_negative = tp + fn > 0, tn + fp > 0
    predicts_positive, predicts_negative = tp + fp > 0, tn + fn > 0
    values["sensitivity"] = recall_score(labels, predicted) if has_positive else nan
    values["specificity"] = recall_score(labels, predicted, pos_label=0) if has_negative else nan
    values["fpr"] = fp / (fp + tn) if has_negative else nan
    values["precision"] = precision_score(labels, predicted) if predicts_positive else nan
    values["npv"] = precision_score(labels, predicted, pos_label=0) if predicts_negative else nan
    values["f1"] = f1_score(labels, predicted) if has_positive and predicts_positive else nan
    all_margins = has_positive and has_negative and predicts_positive and predicts_negative
    values["mcc"] = matthews_corrcoef(labels, predicted) if all_margins else nan
    values["balanced_accuracy"] = balanced_accuracy_score(labels, predicted) if both_classes else nan
    values["brier"] = brier_score_loss(labels, probabilities)
    values["ece"] = expected_calibration_error(labels, probabilities)
    return values


# --- slices -------------------------------------------------------------------------------------


def slice_summary(frame: pd.DataFrame, per_query: pd.DataFrame, grouping: str, keys: list[str]) -> pd.DataFrame:
    """Summary rows of one grouping set (per config): set metrics, then per-query metric stats."""
    by = ["config", *keys]
    rows, brier = [], {}
    for key, group in frame.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        labels = group["has_evidence_gold"].to_numpy()
        values = set_metric_values(labels, group["p_has_evidence"].to_numpy(dtype=float))
        brier[key] = values["brier"]
        for metric in [*SET_METRICS, "ece"]:
            rows.append({**dict(zip(by, key, strict=True)), "metric": metric, "n": len(group), "n_skipped": 0,
                         "value": values[metric]})
    set_rows = pd.DataFrame(rows)

    grouped = per_query.groupby(by, sort=True)[PER_QUERY_METRICS]
    statistics = {
        "n": grouped.count(),
        "size": grouped.size(),
        "value": grouped.mean(),
        "std": grouped.std(ddof=1),
        "median": grouped.median(),
        "p25": grouped.quantile(0.25),
        "p75": grouped.quantile(0.75),
    }
    size = statistics.pop("size")
    # stack() keeps NaN (pandas >= 3): a slice without a value still gets its row.
    long = pd.concat({name: table.stack() for name, table in statistics.items()}, axis=1)
    long.index = long.index.set_names([*by, "metric"])
    long = long.reset_index()
    long["n_skipped"] = long.merge(size.rename("size").reset_index(), on=by, how="left")["size"] - long["n"]
    # The Brier score of a slice is scikit-learn's; the per-query terms give its std and quantiles.
    is_brier = long["metric"] == "brier"
    long.loc[is_brier, "value"] = [brier[tuple(row)] for row in long.loc[is_brier, by].itertuples(index=False)]
    summary = pd.concat([set_rows, long], ignore_index=True)
    summary.insert(0, "grouping", grouping)
    return summary


def across_folds(fold_rows: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std (ddof = 1), median and quartiles of each metric's per-fold values, per config."""
    grouped = fold_rows.groupby(["config", "metric"], sort=False)["value"]
    table = pd.DataFrame({
        "n": grouped.count(),
        "n_skipped": grouped.size() - grouped.count(),
        "value": grouped.mean(),
        "std": grouped.std(ddof=1),
        "median": grouped.median(),
        "p25": grouped.quantile(0.25),
        "p75": grouped.quantile(0.75),
    }).reset_index()
    table.insert(0, "grouping", "across_folds")
    return table


def recompute(path: str | Path, *, per_query_mode: str = "groupby", timings: dict | None = None):
    """Read ``path`` and return ``(summary, per_query)``; stage times go into ``timings`` if given."""
    timings = {} if timings is None else timings
    started = time.perf_counter()
    frame = read_per_query(path)
    timings["read_parse_check"] = time.perf_counter() - started

    started = time.perf_counter()
    per_query = per_query_table(frame, per_query_mode)
    timings["per_query_metrics"] = time.perf_counter() - started

    started = time.perf_counter()
    parts = [slice_summary(frame, per_query, grouping, keys) for grouping, keys in SLICES.items()]
    summary = pd.concat(parts, ignore_index=True)
    timings["slices"] = time.perf_counter() - started

    started = time.perf_counter()
    summary = pd.concat([summary, across_folds(summary[summary["grouping"] == "fold"])], ignore_index=True)
    summary = summary.rename(columns={"config": "system"})
    summary["subset"] = summary["metric"].map(SUBSETS)
    for column in ("fold", "criterion_id", "std", "median", "p25", "p75"):
        if column not in summary.columns:
            summary[column] = np.nan
    summary["fold"] = summary["fold"].astype("Int64")
    summary[["n", "n_skipped"]] = summary[["n", "n_skipped"]].astype("int64")
    order = {metric: position for position, metric in enumerate(METRIC_ORDER)}
    grouping_order = {name: position for position, name in enumerate([*SLICES, "across_folds"])}
    summary = summary.assign(_g=summary["grouping"].map(grouping_order), _m=summary["metric"].map(order))
    summary = summary.sort_values(["_g", "system", "fold", "criterion_id", "_m"], na_position="last")
    summary = summary[SUMMARY_COLUMNS].reset_index(drop=True)
    timings["across_folds_and_order"] = time.perf_counter() - started
    return summary, per_query


def write_outputs(summary: pd.DataFrame, per_query: pd.DataFrame, out_dir: str | Path) -> None:
    """summary.csv and summary.parquet (tidy), per_query.parquet (one row per query and config)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out_dir / "summary.csv", index=False)
    summary.to_parquet(out_dir / "summary.parquet", index=False)
    per_query.to_parquet(out_dir / "per_query.parquet", index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="per_query.csv")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--per-query", choices=("groupby", "loop"), default="groupby",
                        help="apply the per-query functions with groupby().apply (default) or a plain loop")
    args = parser.parse_args(argv)
    timings: dict[str, float] = {}
    summary, per_query = recompute(args.input, per_query_mode=args.per_query, timings=timings)
    write_outputs(summary, per_query, args.out)
    overall = summary[(summary["grouping"] == "overall")].pivot(index="metric", columns="system", values="value")
    print(overall.reindex(METRIC_ORDER).to_string(float_format=lambda value: f"{value:.4f}"))
    print("stage seconds:", json.dumps({name: round(value, 3) for name, value in timings.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
