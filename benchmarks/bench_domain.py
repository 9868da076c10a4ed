"""Speed of label agreement and beyond-accuracy metrics (issue 25, part 7), one side per process.

Each call times ONE side on one input, so that a whole-process timer can pair two sides (A B A B
…, medians of CPU and wall time, the ratio pair by pair; ``/usr/bin/time -v`` for one run), and
prints the side's own in-process figures on stderr, each in wall and CPU seconds (interpreter,
NumPy and Polars start-up excluded): loading its input, with ``--warm-up`` its imports and a
warm-up run on the input's first rows (evalframe loads its engine and metric registry on first
use; without it, as in whole-process timings, the computation includes them), and the
computation from the loaded input.

- ``agreement``: 100,000 tasks × 10 annotators = 1,000,000 annotations (0–4 scale, every
  annotator rates every task):

  - ``evalframe``: ``ef.agreement`` — exact and pairwise agreement, Fleiss' κ, Krippendorff's α
    (nominal, ordinal, interval), Cohen's κ of all 45 pairs × 3 weightings, with bootstrap CIs
    (``--resamples``, default 1000; ``0``: no CIs, the same single numbers as the libraries);
  - ``chapter``: the chapter's ``compute_inter_annotator_agreement`` (exact and pairwise
    agreement only), on the list of dicts the chapter reads;
  - ``chapter-bootstrap``: that function in a bootstrap loop over tasks (``--loop-resamples``
    replicates, the time scaled to 1,000);
  - ``libraries``: the libraries called the usual way: ``cohen_kappa_score`` per pair and
    weighting (135 calls), ``statsmodels`` ``aggregate_raters`` + ``fleiss_kappa``, and
    ``krippendorff.alpha`` on the full 10 × 100,000 matrix for each level (no CIs).

- ``recs``: 1,000,000 users × 20 distinct recommendations over 200,000 items (Zipf popularity):

  - ``evalframe``: ``read_recommendations`` with the catalog (the ranking contract included) and
    ``ef.evaluate`` of ``catalog_coverage@20``, ``category_coverage@20``, ``gini@20``,
    ``popularity_bias@20``, ``unique_items@20`` (one item-count state; no CIs by default,
    ``--resamples`` adds them);
  - ``chapter``: the chapter's ``beyond_accuracy_report`` (``Counter`` of the flattened lists,
    list comprehensions) on its inputs (each user's list, two dicts);
  - ``chapter-bootstrap``: that report in a bootstrap loop over users (draw 1,000,000 users with
    replacement, call it on their lists; ``--loop-resamples`` replicates, scaled to 1,000).

The ``chapter`` sides are the chapter's code as printed (seed 004 §21.3.1
``compute_inter_annotator_agreement``, §21.4.2 ``beyond_accuracy_report`` and
``gini_coefficient``), on the inputs those functions take, built from the same Parquet files
(the ``load`` phase). Inputs are generated once (seeded) into ``benchmarks/data/`` (git-ignored).

Usage::

    python benchmarks/bench_domain.py make
    python benchmarks/bench_domain.py agreement evalframe --resamples 0
    python benchmarks/bench_domain.py recs chapter-bootstrap --loop-resamples 2
"""

from __future__ import annotations

import argparse
import contextlib
import io
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


# Each side is split in two: ``load()`` reads the files into the inputs that side takes (Polars
# frames for evalframe, the chapter's list of dicts or lists and dicts, the libraries' long table),
# and ``compute(inputs)`` turns them into the numbers. ``main`` times both apart, after the side's
# imports: the in-process figures (start-up, imports and loading excluded) next to the paired
# whole-process ones.


# --- agreement ------------------------------------------------------------------------------------


def agreement_load_frame() -> pl.DataFrame:
    return pl.read_parquet(ANNOTATIONS)


def agreement_evalframe(table: pl.DataFrame, resamples: int) -> None:
    import evalframe as ef

    ag = ef.agreement(table, scale="0-4", bootstrap=ef.Bootstrap(resamples=resamples) if resamples else None)
    print(ag.summary.select("metric", "value", "ci_low", "ci_high"))
    print(ag.pairwise.head(3).select("annotator_a", "annotator_b", "weights", "kappa", "ci_low", "ci_high"))


def compute_inter_annotator_agreement(annotations: list[dict]) -> dict:
    """The chapter's function (seed 004 §21.3.1) as printed, without its class."""
    task_annotations: dict = {}
    for ann in annotations:
        tid = ann["task_id"]
        if tid not in task_annotations:
            task_annotations[tid] = []
        task_annotations[tid].append(ann["rating"])
    multi = {k: v for k, v in task_annotations.items() if len(v) >= 2}
    if not multi:
        return {"error": "No tasks with multiple annotations"}
    agreements = []
    for ratings in multi.values():
        agreements.append(1.0 if len(set(ratings)) == 1 else 0.0)
    pairwise = []
    for ratings in multi.values():
        for i in range(len(ratings)):
            for j in range(i + 1, len(ratings)):
                pairwise.append(1.0 if ratings[i] == ratings[j] else 0.0)
    return {"exact_agreement_rate": sum(agreements) / len(agreements),
            "pairwise_agreement_rate": sum(pairwise) / len(pairwise) if pairwise else 0,
            "tasks_with_multiple_annotations": len(multi)}


def agreement_load_chapter() -> list[dict]:
    return pl.read_parquet(ANNOTATIONS).to_dicts()  # the chapter's input: a list of dicts


def agreement_chapter(annotations: list[dict]) -> None:
    print(compute_inter_annotator_agreement(annotations))


def agreement_load_by_task() -> tuple[list, list]:
    by_task = pl.read_parquet(ANNOTATIONS).group_by("task_id", maintain_order=True).agg("rating")
    return by_task.get_column("task_id").to_list(), by_task.get_column("rating").to_list()


def agreement_chapter_bootstrap(loaded: tuple[list, list], loop_resamples: int) -> None:
    """The chapter's function in a bootstrap loop over tasks (draw tasks with replacement, rebuild
    the chapter's list of dicts, call it): ``loop_resamples`` replicates, the time scaled to 1,000."""
    ids, ratings = loaded
    rng = np.random.default_rng(0)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(loop_resamples):
        drawn = rng.integers(0, len(ids), len(ids))
        annotations = [{"task_id": f"{ids[i]}#{n}", "rating": r} for n, i in enumerate(drawn) for r in ratings[i]]
        compute_inter_annotator_agreement(annotations)
    _print_scaled("chapter loop bootstrap (agreement)", start, cpu, loop_resamples)


def agreement_libraries(table: pl.DataFrame) -> None:
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

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

RECS_METRICS = ["catalog_coverage@20", "category_coverage@20", "gini@20", "popularity_bias@20", "unique_items@20"]


def recs_load_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    return pl.read_parquet(RECS), pl.read_parquet(ITEMS)


def recs_evalframe(frames: tuple[pl.DataFrame, pl.DataFrame], resamples: int) -> None:
    import evalframe as ef

    recs, items = frames
    tables = ef.read_recommendations(recs, items=items)
    ev = ef.evaluate(tables, metrics=RECS_METRICS, bootstrap=ef.Bootstrap(resamples=resamples) if resamples else None)
    print(ev.summary.select("metric", "n", "value", "ci_low", "ci_high"))


def gini_coefficient(item_recommendation_counts: list) -> float:
    """The chapter's ``RecommendationMetrics.gini_coefficient`` (seed 004 §21.4.2) as printed."""
    counts = np.array(sorted(item_recommendation_counts))
    n = len(counts)
    index = np.arange(1, n + 1)
    return (2 * np.sum(index * counts) - (n + 1) * np.sum(counts)) / (n * np.sum(counts))


def beyond_accuracy_report(recommendations: list, item_categories: dict, item_popularity: dict, k: int = 10) -> dict:
    """The chapter's ``RecommendationMetrics.beyond_accuracy_report`` (seed 004 §21.4.2) as printed."""
    all_recs = [item for rec in recommendations for item in rec[:k]]
    rec_counts = Counter(all_recs)
    coverage = len(set(all_recs)) / len(item_popularity)
    popularity_counts = list(rec_counts.values())
    gini = gini_coefficient(popularity_counts)
    rec_categories = set(item_categories.get(item, "unk") for item in set(all_recs))  # noqa: C401 (as printed)
    category_coverage = len(rec_categories) / len(set(item_categories.values()))
    avg_pop = np.mean([item_popularity.get(item, 0) for item in all_recs])
    overall_avg_pop = np.mean(list(item_popularity.values()))
    popularity_bias = avg_pop / overall_avg_pop
    return {"catalog_coverage": coverage, "gini_coefficient": gini, "category_coverage": category_coverage,
            "popularity_bias": popularity_bias, "unique_items_recommended": len(set(all_recs))}


def recs_load_chapter() -> tuple[list, dict, dict]:
    """The chapter's inputs: each user's list of item ids, and the catalog's two dicts."""
    recommendations = pl.read_parquet(RECS).group_by("query_id", maintain_order=True).agg("doc_id").get_column("doc_id").to_list()
    items = pl.read_parquet(ITEMS)
    ids = items.get_column("item_id").to_list()
    item_popularity = dict(zip(ids, items.get_column("popularity").to_list(), strict=True))
    item_categories = dict(zip(ids, items.get_column("category").to_list(), strict=True))
    return recommendations, item_categories, item_popularity


def recs_chapter(loaded: tuple[list, dict, dict]) -> None:
    recommendations, item_categories, item_popularity = loaded
    print(beyond_accuracy_report(recommendations, item_categories, item_popularity, k=20))


def recs_chapter_bootstrap(loaded: tuple[list, dict, dict], loop_resamples: int) -> None:
    """The chapter's report in a bootstrap loop over users (draw users with replacement, call it
    on their lists): ``loop_resamples`` replicates, the time scaled to 1,000."""
    recommendations, item_categories, item_popularity = loaded
    rng = np.random.default_rng(0)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(loop_resamples):
        drawn = rng.integers(0, len(recommendations), len(recommendations))
        beyond_accuracy_report([recommendations[i] for i in drawn], item_categories, item_popularity, k=20)
    _print_scaled("chapter loop bootstrap (beyond accuracy)", start, cpu, loop_resamples)


def _print_scaled(label: str, start: float, cpu: float, replicates: int) -> None:
    wall, cpu = (time.perf_counter() - start) / replicates, (time.process_time() - cpu) / replicates
    print(f"{label}: {wall:.2f} s wall, {cpu:.2f} s cpu per replicate; "
          f"{wall * 1000:.0f} s wall, {cpu * 1000:.0f} s cpu for 1,000 (scaled from {replicates})")


def _small(loaded):
    """The first few rows of a loaded input (the warm-up's input)."""
    if isinstance(loaded, pl.DataFrame):
        return loaded.head(1000)  # 100 tasks × 10 annotators
    if isinstance(loaded, tuple) and isinstance(loaded[0], pl.DataFrame):
        return (loaded[0].head(2000), loaded[1])  # 100 users × 20 items, the whole catalog
    if isinstance(loaded, list):
        return loaded[:1000]
    return tuple(part[:100] if isinstance(part, list) else part for part in loaded)


def _sides(task: str, side: str, resamples: int | None, loop_resamples: int):
    """(load, compute) of one side."""
    if task == "agreement":
        return {
            "evalframe": (agreement_load_frame, lambda t: agreement_evalframe(t, 1000 if resamples is None else resamples)),
            "chapter": (agreement_load_chapter, agreement_chapter),
            "libraries": (agreement_load_frame, agreement_libraries),
            "chapter-bootstrap": (agreement_load_by_task, lambda t: agreement_chapter_bootstrap(t, loop_resamples)),
        }[side]
    return {
        "evalframe": (recs_load_frames, lambda f: recs_evalframe(f, resamples or 0)),
        "chapter": (recs_load_chapter, recs_chapter),
        "chapter-bootstrap": (recs_load_chapter, lambda t: recs_chapter_bootstrap(t, loop_resamples)),
    }[side]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["make", "agreement", "recs"])
    parser.add_argument("side", nargs="?", choices=["evalframe", "chapter", "libraries", "chapter-bootstrap"])
    parser.add_argument("--loop-resamples", type=int, default=3, help="replicates of the chapter's bootstrap loop (scaled to 1,000)")
    parser.add_argument("--resamples", type=int, default=None, help="bootstrap replicates (agreement default 1000, recs default 0)")
    parser.add_argument("--warm-up", action="store_true",
                        help="before the timed computation, import and run once on the first rows (in-process figures)")
    args = parser.parse_args(argv)
    if args.task == "make":
        make()
        return 0
    load, compute = _sides(args.task, args.side, args.resamples, args.loop_resamples)
    clock = [(time.perf_counter(), time.process_time())]
    loaded = load()
    clock.append((time.perf_counter(), time.process_time()))
    if args.warm_up and not args.side.endswith("bootstrap"):
        with contextlib.redirect_stdout(io.StringIO()):
            compute(_small(loaded))  # imports (evalframe loads its engine on first use) and warm-up
    clock.append((time.perf_counter(), time.process_time()))
    compute(loaded)
    clock.append((time.perf_counter(), time.process_time()))
    # In-process figures, each phase apart (interpreter and NumPy/Polars start-up excluded):
    # loading the side's input, its imports with a warm-up run on the first rows, and the
    # computation from the loaded input.
    phases = ("load", "imports + warm-up", "compute")
    figures = ", ".join(f"{name} {clock[i + 1][0] - clock[i][0]:.2f} s wall / {clock[i + 1][1] - clock[i][1]:.2f} s cpu"
                        for i, name in enumerate(phases))
    print(f"{args.task} {args.side}: {figures}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
