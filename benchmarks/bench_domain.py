"""Speed of label agreement and beyond-accuracy metrics (issue 25, part 7), one side per process.

Each call times ONE side on one input so that ``farm-bench`` can time whole processes and pair
two sides (``farm-bench --vs 'B' -- A``; quote the medians):

- ``agreement``: 100,000 tasks × 10 annotators = 1,000,000 annotations (0–4 scale, every
  annotator rates every task):

  - ``evalframe``: ``ef.agreement`` — exact and pairwise agreement, Fleiss' κ, Krippendorff's α
    (nominal, ordinal, interval), Cohen's κ of all 45 pairs × 3 weightings, with bootstrap CIs
    (``--resamples``, default 1000; ``0``: no CIs, the same single numbers as the libraries);
  - ``chapter``: the chapter's ``compute_inter_annotator_agreement`` loops (exact and pairwise
    agreement only), on the list of dicts the chapter reads;
  - ``libraries``: the libraries called the usual way: ``cohen_kappa_score`` per pair and
    weighting (135 calls), ``statsmodels`` ``aggregate_raters`` + ``fleiss_kappa``, and
    ``krippendorff.alpha`` on the full 10 × 100,000 matrix for each level (no CIs).

- ``recs``: 1,000,000 users × 20 distinct recommendations over 200,000 items (Zipf popularity):

  - ``evalframe``: ``ef.evaluate`` of ``catalog_coverage@20``, ``category_coverage@20``,
    ``gini@20``, ``popularity_bias@20``, ``unique_items@20`` (one item-count state; no CIs by
    default, ``--resamples`` adds them);
  - ``chapter``: the chapter's ``beyond_accuracy_report`` (``Counter`` of the flattened lists,
    list comprehensions) on Python lists.

The ``chapter`` sides are the chapter's code as printed (seed 004 §21.3.1
``compute_inter_annotator_agreement``, §21.4.2 ``beyond_accuracy_report``), on the inputs those
functions take (a list of dicts; per-user lists and two dicts), built from the same Parquet files
inside their time: they are plain loops, and at this size they are cheap (about 1.5 s and 17 s of
CPU), so a side's fixed costs (start-up, ``import evalframe``, reading, the input contract) weigh
in every ratio.

Inputs are generated once (seeded) into ``benchmarks/data/`` (git-ignored) and read by every
side; reading them is inside each side's time. Each run prints its figures on stdout.

Usage::

    python benchmarks/bench_domain.py make
    farm-bench -n 3 --timeout 900 --vs '.venv/bin/python benchmarks/bench_domain.py agreement libraries' -- \\
        .venv/bin/python benchmarks/bench_domain.py agreement evalframe --resamples 0
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

DATA = Path(__file__).resolve().parent / "data"
ANNOTATIONS = DATA / "annotations_100k_x10.parquet"
RECS = DATA / "recs_1m_x20.parquet"
ITEMS = DATA / "items_200k.parquet"


def make(only: str | None = None) -> None:
    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(25)
    tasks, raters = 100_000, 10
    grade = rng.integers(0, 5, tasks)
    ratings = np.clip(grade[:, None] + rng.integers(-1, 2, (tasks, raters)) * (rng.random((tasks, raters)) < 0.4), 0, 4)
    pl.DataFrame({
        "task_id": np.repeat(np.array([f"t{i}" for i in range(tasks)]), raters),
        "annotator_id": np.tile(np.array([f"a{j}" for j in range(raters)]), tasks),
        "rating": ratings.reshape(-1).astype(np.int64),
    }).write_parquet(ANNOTATIONS)
    users, k, n_items = 1_000_000, 20, 200_000
    popularity = rng.zipf(1.5, n_items).clip(1, 100_000)
    probabilities = popularity / popularity.sum()
    drawn = 2 * k  # a ranking lists an item once: draw twice as many, keep each user's first k distinct
    items = rng.choice(n_items, size=users * drawn, p=probabilities)
    (
        pl.DataFrame({"query_id": np.repeat(np.arange(users), drawn).astype(str), "doc_id": items.astype(str)})
        .unique(["query_id", "doc_id"], keep="first", maintain_order=True)
        .with_columns(rank=pl.int_range(1, pl.len() + 1).over("query_id"))
        .filter(pl.col("rank") <= k)
        .write_parquet(RECS)
    )
    pl.DataFrame({"item_id": np.arange(n_items).astype(str), "popularity": popularity,
                  "category": (np.arange(n_items) % 50).astype(str)}).write_parquet(ITEMS)
    print(f"wrote {ANNOTATIONS.name}, {RECS.name}, {ITEMS.name}")


# --- agreement ------------------------------------------------------------------------------------


def agreement_evalframe(resamples: int) -> None:
    import evalframe as ef

    table = pl.read_parquet(ANNOTATIONS)
    ag = ef.agreement(table, scale="0-4", bootstrap=ef.Bootstrap(resamples=resamples) if resamples else None)
    print(ag.summary.select("metric", "value", "ci_low", "ci_high"))
    print(ag.pairwise.head(3).select("annotator_a", "annotator_b", "weights", "kappa", "ci_low", "ci_high"))


def agreement_chapter() -> None:
    annotations = pl.read_parquet(ANNOTATIONS).to_dicts()
    task_annotations: dict = {}
    for ann in annotations:
        tid = ann["task_id"]
        if tid not in task_annotations:
            task_annotations[tid] = []
        task_annotations[tid].append(ann["rating"])
    multi = {k: v for k, v in task_annotations.items() if len(v) >= 2}
    agreements = [1.0 if len(set(r)) == 1 else 0.0 for r in multi.values()]
    pairwise = []
    for ratings in multi.values():
        for i in range(len(ratings)):
            for j in range(i + 1, len(ratings)):
                pairwise.append(1.0 if ratings[i] == ratings[j] else 0.0)
    print({"exact_agreement_rate": sum(agreements) / len(agreements), "pairwise_agreement_rate": sum(pairwise) / len(pairwise),
           "tasks_with_multiple_annotations": len(multi)})


def agreement_chapter_bootstrap(loop_resamples: int) -> None:
    """The chapter's function in a bootstrap loop over tasks (draw tasks with replacement, rebuild
    the chapter's list of dicts, call it): ``loop_resamples`` replicates, the time scaled to 1,000."""
    table = pl.read_parquet(ANNOTATIONS)
    by_task = table.group_by("task_id", maintain_order=True).agg("rating")
    ids, ratings = by_task.get_column("task_id").to_list(), by_task.get_column("rating").to_list()
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(loop_resamples):
        drawn = rng.integers(0, len(ids), len(ids))
        annotations = [{"task_id": f"{ids[i]}#{n}", "rating": r} for n, i in enumerate(drawn) for r in ratings[i]]
        task_annotations: dict = {}
        for ann in annotations:
            task_annotations.setdefault(ann["task_id"], []).append(ann["rating"])
        multi = {k: v for k, v in task_annotations.items() if len(v) >= 2}
        agreements = [1.0 if len(set(r)) == 1 else 0.0 for r in multi.values()]
        pairwise = [1.0 if r[i] == r[j] else 0.0 for r in multi.values() for i in range(len(r)) for j in range(i + 1, len(r))]
        sum(agreements) / len(agreements), sum(pairwise) / len(pairwise)
    per_replicate = (time.perf_counter() - start) / loop_resamples
    print(f"chapter loop bootstrap: {per_replicate:.2f} s per replicate, {per_replicate * 1000:.0f} s for 1,000 (scaled)")


def agreement_libraries() -> None:
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table = pl.read_parquet(ANNOTATIONS)
    wide = table.pivot(on="annotator_id", index="task_id", values="rating").drop("task_id").to_numpy()  # tasks × raters
    kappas = {}
    for a in range(wide.shape[1]):
        for b in range(a + 1, wide.shape[1]):
            for weights in (None, "linear", "quadratic"):
                kappas[(a, b, weights)] = cohen_kappa_score(wide[:, a], wide[:, b], labels=[0, 1, 2, 3, 4], weights=weights)
    counts, _ = aggregate_raters(wide, n_cat=5)
    fleiss = fleiss_kappa(counts)
    alphas = {level: krippendorff.alpha(reliability_data=wide.T.astype(float), level_of_measurement=level, value_domain=[0, 1, 2, 3, 4])
              for level in ("nominal", "ordinal", "interval")}
    print({"fleiss": fleiss, **alphas, "kappa(a0,a1)": kappas[(0, 1, None)]})


# --- recommendations ------------------------------------------------------------------------------


def recs_evalframe(resamples: int) -> None:
    import evalframe as ef

    tables = ef.read_recommendations(pl.read_parquet(RECS), items=pl.read_parquet(ITEMS))
    ev = ef.evaluate(tables, metrics=["catalog_coverage@20", "category_coverage@20", "gini@20", "popularity_bias@20", "unique_items@20"],
                     bootstrap=ef.Bootstrap(resamples=resamples) if resamples else None)
    print(ev.summary.select("metric", "n", "value", "ci_low", "ci_high"))


def recs_chapter() -> None:
    table = pl.read_parquet(RECS)
    recommendations = table.group_by("query_id", maintain_order=True).agg("doc_id").get_column("doc_id").to_list()
    items = pl.read_parquet(ITEMS)
    item_popularity = dict(zip(items.get_column("item_id").to_list(), items.get_column("popularity").to_list(), strict=True))
    item_categories = dict(zip(items.get_column("item_id").to_list(), items.get_column("category").to_list(), strict=True))
    k = 20
    all_recs = [item for rec in recommendations for item in rec[:k]]
    rec_counts = Counter(all_recs)
    coverage = len(set(all_recs)) / len(item_popularity)
    counts = np.array(sorted(rec_counts.values()))
    n = len(counts)
    gini = (2 * np.sum(np.arange(1, n + 1) * counts) - (n + 1) * np.sum(counts)) / (n * np.sum(counts))
    rec_categories = {item_categories.get(item, "unk") for item in set(all_recs)}
    category_coverage = len(rec_categories) / len(set(item_categories.values()))
    popularity_bias = np.mean([item_popularity.get(item, 0) for item in all_recs]) / np.mean(list(item_popularity.values()))
    print({"catalog_coverage": coverage, "gini": gini, "category_coverage": category_coverage,
           "popularity_bias": popularity_bias, "unique_items": len(set(all_recs))})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["make", "agreement", "recs"])
    parser.add_argument("side", nargs="?", choices=["evalframe", "chapter", "libraries", "chapter-bootstrap"])
    parser.add_argument("--loop-resamples", type=int, default=3, help="replicates of the chapter's bootstrap loop (scaled to 1,000)")
    parser.add_argument("--resamples", type=int, default=None, help="bootstrap replicates (agreement default 1000, recs default 0)")
    args = parser.parse_args(argv)
    if args.task == "make":
        make()
        return 0
    start, cpu = time.perf_counter(), time.process_time()
    if args.task == "agreement":
        {"evalframe": lambda: agreement_evalframe(1000 if args.resamples is None else args.resamples),
         "chapter": agreement_chapter, "libraries": agreement_libraries,
         "chapter-bootstrap": lambda: agreement_chapter_bootstrap(args.loop_resamples)}[args.side]()
    else:
        {"evalframe": lambda: recs_evalframe(args.resamples or 0), "chapter": recs_chapter}[args.side]()
    # In-process figures (reading the input and the side's own imports included, interpreter and
    # NumPy/Polars start-up not): what the computation costs once the process is up.
    print(f"{args.task} {args.side}: {time.perf_counter() - start:.2f} s wall, {time.process_time() - cpu:.2f} s cpu in process",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
