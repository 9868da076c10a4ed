"""Bootstrap benchmark (issue 11, part 6): CIs for every metric and slice of both systems.

Three timings on the bundled sample (``data_samples/per_query.csv``, 2 systems × 14,770
queries, 1,477 posts):

1. ``evalframe (CIs)``: ``ef.run_pipeline("pipelines/evidence_contract.yaml")`` as bundled:
   every metric, slices overall / fold / criterion per system, across folds, and 1,000
   bootstrap replicates that resample posts;
2. ``evalframe (no CIs)``: the same run with ``bootstrap=False``;
3. ``pandas + scikit-learn loop``: the bootstrap written the usual way: for every system and
   slice, for every replicate, draw the slice's posts with replacement (NumPy), take their
   rows (``DataFrame.iloc``) and recompute every metric of the pipeline with scikit-learn
   (``roc_auc_score``, ``average_precision_score``, ``roc_curve`` for TPR@FPR,
   ``confusion_matrix`` for the confusion family, ``brier_score_loss``, ``f1_score`` for the
   multi-label F1s) or pandas (the means of the per-query ranking values and per-post
   values, ECE's bins). The per-query and per-post values it averages are computed once,
   outside the timing (evalframe's own run computes them inside its timing). The loop runs
   ``--loop-resamples`` replicates (default 10) and its time is scaled linearly to 1,000
   (the loop's work is the same for every replicate); the scale factor is printed.

Each evalframe figure is the median of ``--runs`` runs (default 5) in this process after one
warm-up run. Prints the medians, the ratios (target: CIs ≥ 30× faster than the loop, and at
most 3× the run without CIs, issue 22) and writes ``benchmarks/results/bootstrap.json``.

Usage::

    python benchmarks/bench_bootstrap.py
    python benchmarks/bench_bootstrap.py --runs 3 --loop-resamples 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import (
    average_precision_score,
    brier_score_loss,
    confusion_matrix,
    f1_score,
    roc_auc_score,
    roc_curve,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import evalframe as ef  # noqa: E402

PIPELINE = ROOT / "pipelines" / "evidence_contract.yaml"
INPUT = ROOT / "data_samples" / "per_query.csv"
RESAMPLES = 1000


def time_evalframe(runs: int, bootstrap) -> list[float]:
    ef.run_pipeline(PIPELINE, input=INPUT, bootstrap=bootstrap)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        ef.run_pipeline(PIPELINE, input=INPUT, bootstrap=bootstrap)
        times.append(time.perf_counter() - start)
    return times


# --- the loop written the usual way ---------------------------------------------------------

FPRS = (0.01, 0.03, 0.05, 0.1)


def classification_metrics(frame: pd.DataFrame) -> dict[str, float]:
    """Every set and query metric of contract §2 on one resampled slice (scikit-learn)."""
    label, prob = frame["label"].to_numpy(), frame["prob"].to_numpy()
    out: dict[str, float] = {}
    both = 0 < label.sum() < label.size
    out["auroc"] = roc_auc_score(label, prob) if both else np.nan
    out["auprc"] = average_precision_score(label, prob) if label.sum() else np.nan
    if both:
        fpr, tpr, _ = roc_curve(label, prob, drop_intermediate=False)
        for target in FPRS:
            out[f"tpr@fpr={target}"] = tpr[fpr <= target].max()
    tn, fp, fn, tp = confusion_matrix(label, prob >= 0.5, labels=[0, 1]).ravel()
    out |= {"tp": tp, "tn": tn, "fp": fp, "fn": fn}
    with np.errstate(divide="ignore", invalid="ignore"):
        out["sensitivity"] = tp / (tp + fn)
        out["specificity"] = tn / (tn + fp)
        out["fpr"] = fp / (fp + tn)
        out["precision"] = tp / (tp + fp)
        out["npv"] = tn / (tn + fn)
        out["f1"] = 2 * tp / (2 * tp + fp + fn)
        out["mcc"] = (tp * tn - fp * fn) / np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
        out["balanced_accuracy"] = (out["sensitivity"] + out["specificity"]) / 2
    out["brier"] = brier_score_loss(label, prob)
    bins = np.minimum((prob * 10).astype(int), 9)
    gaps = pd.DataFrame({"bin": bins, "gap": prob - label}).groupby("bin")["gap"].sum().abs().sum()
    out["ece"] = gaps / label.size
    return out


def multilabel_metrics(frame: pd.DataFrame, post_values: pd.DataFrame) -> dict[str, float]:
    """Contract §6 on one resampled slice of posts: per-post means and scikit-learn's F1s."""
    out = post_values.mean().to_dict()
    wide_true = frame.pivot_table(index="_draw", columns="criterion_id", values="label", aggfunc="first")
    wide_pred = frame.assign(pred=(frame["prob"] >= 0.5).astype(int)).pivot_table(
        index="_draw", columns="criterion_id", values="pred", aggfunc="first")
    for average, name in (("micro", "micro_f1"), ("weighted", "weighted_f1"), ("macro", "label_macro_f1")):
        out[name] = f1_score(wide_true.to_numpy(), wide_pred.to_numpy(), average=average, zero_division=0)
    return out


def loop_bootstrap(resamples: int, seed: int = 0) -> int:
    """The usual loop; returns how many metric values it computed."""
    ev = ef.run_pipeline(PIPELINE, input=INPUT, bootstrap=False)
    queries = ev.queries.to_pandas()
    ranking = ev.wide("query").to_pandas()  # per-query ranking values, computed once
    posts = ev.wide("post").to_pandas()
    ranking_metrics = [c for c in ranking.columns if "@" in c or c == "mrr"]
    post_metrics = ["exact_match", "hamming_score", "hamming_loss", "macro_f1"]
    queries = queries.merge(ranking[["system", "query_id", *ranking_metrics]], on=["system", "query_id"], how="left")
    rng = np.random.default_rng(seed)
    computed = 0
    for system, rows in queries.groupby("system"):
        post_table = posts[posts["system"] == system].set_index("post_id")
        slices = [("overall", rows)] + [(f"fold={k}", part) for k, part in rows.groupby("fold")] + [
            (f"criterion={k}", part) for k, part in rows.groupby("criterion_id")]
        for name, part in slices:
            by_post = part.groupby("post_id").indices
            post_ids = np.array(list(by_post))
            for _ in range(resamples):
                drawn = rng.integers(0, post_ids.size, post_ids.size)
                positions = np.concatenate([by_post[post_ids[i]] for i in drawn])
                sample = part.iloc[positions]
                values = classification_metrics(sample)
                relevant = sample[sample["label"] == 1]
                values |= relevant[ranking_metrics].mean().to_dict()
                if not name.startswith("criterion"):  # criterion does not slice posts
                    draw_id = np.repeat(np.arange(drawn.size), [len(by_post[post_ids[i]]) for i in drawn])
                    values |= multilabel_metrics(sample.assign(_draw=draw_id), post_table.loc[post_ids[drawn], post_metrics])
                computed += len(values)
    return computed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loop-resamples", type=int, default=10)
    args = parser.parse_args()

    with_ci = time_evalframe(args.runs, None)
    without_ci = time_evalframe(args.runs, False)
    start = time.perf_counter()
    computed = loop_bootstrap(args.loop_resamples)
    loop_measured = time.perf_counter() - start
    scale = RESAMPLES / args.loop_resamples
    loop_scaled = loop_measured * scale
    medians = {"evalframe (CIs)": statistics.median(with_ci), "evalframe (no CIs)": statistics.median(without_ci)}
    result = {
        "input": str(INPUT.relative_to(ROOT)),
        "resamples": RESAMPLES,
        "evalframe_runs": {"with_ci": with_ci, "without_ci": without_ci},
        "medians_seconds": medians,
        "loop": {"resamples_run": args.loop_resamples, "seconds_measured": loop_measured, "scale": scale,
                 "seconds_scaled_to_1000": loop_scaled, "metric_values_computed": computed},
        "ratios": {"loop / evalframe (CIs)": loop_scaled / medians["evalframe (CIs)"],
                   "evalframe (CIs) / evalframe (no CIs)": medians["evalframe (CIs)"] / medians["evalframe (no CIs)"]},
    }
    print(f"evalframe with 1,000-replicate CIs     median {medians['evalframe (CIs)']:.2f} s  ({args.runs} runs)")
    print(f"evalframe without CIs                  median {medians['evalframe (no CIs)']:.2f} s  ({args.runs} runs)")
    print(f"pandas + scikit-learn loop             {loop_measured:.2f} s for {args.loop_resamples} replicates "
          f"× {scale:g} = {loop_scaled:.1f} s for 1,000 (scaled linearly)")
    for label, ratio in result["ratios"].items():
        print(f"{label:40s} {ratio:.1f}×")
    out = ROOT / "benchmarks" / "results" / "bootstrap.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
