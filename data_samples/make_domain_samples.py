"""Make the sample inputs of human-label agreement, recommendation and detection evaluation.

Run ``python data_samples/make_domain_samples.py`` (from anywhere); it rewrites, from one
``numpy.random.default_rng(SEED)`` stream (byte-identical files on every run):

- ``labels/annotations.csv``: 300 search-relevance tasks (``q<query>_c<candidate>``) on the
  chapter's 0–4 scale rated by 6 annotators (each task by 3–5 of them), with ``query_id``,
  ``doc_id``, ``seconds`` and ``position`` (the order in the annotator's session). Ratings are a
  latent grade plus annotator noise: ``ann_hasty`` answers in ~4 s and is noisy (pitfall 5),
  ``ann_drift`` rates earlier items higher (pitfall 1); 40 tasks are gold.
- ``labels/gold_tasks.csv``: the 40 gold tasks and their expected rating.
- ``recommendations/recs.csv``: top-20 recommendations (``query_id`` = user, ``doc_id`` = item,
  ``rank``) of 500 users from a popularity-biased recommender over 1,000 items;
  ``recommendations/ground_truth.csv``: each user's held-out items (qrels, relevance 1);
  ``recommendations/items.csv``: the catalog (``item_id``, ``popularity``, ``category``);
  ``recommendations/history.csv``: each user's past items; ``recommendations/similarity.csv``:
  item-pair similarities of the items that share a category (``item_a``, ``item_b``, ``similarity``).
- ``detection/scores.csv``: 20,000 scored transactions (``query_id``, ``label`` 1 = fraud at
  ~1 %, ``prob``, ``segment``; for frauds ``onset``, the transaction's time, and ``detected_at``
  when the score reached 0.5 and an analyst confirmed it); ``detection/anomalies.csv``: 120 incidents with ``onset`` and
  ``detected_at`` (empty when never detected).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

SEED = 20261125
HERE = Path(__file__).resolve().parent


def annotations(rng: np.random.Generator) -> tuple[pl.DataFrame, pl.DataFrame]:
    annotators = ["ann_alice", "ann_bob", "ann_chen", "ann_dana", "ann_hasty", "ann_drift"]
    noise = {"ann_alice": 0.3, "ann_bob": 0.35, "ann_chen": 0.4, "ann_dana": 0.45, "ann_hasty": 1.6, "ann_drift": 0.4}
    tasks = [(f"q{q}", f"c{c}") for q in range(60) for c in range(5)]
    grade = rng.integers(0, 5, len(tasks))
    gold = rng.choice(len(tasks), 40, replace=False)
    rows = []
    positions = {a: 0 for a in annotators}
    for t, (query, candidate) in enumerate(tasks):
        raters = annotators if t in set(gold.tolist()) else list(rng.choice(annotators, rng.integers(3, 6), replace=False))
        for annotator in raters:
            position = positions[annotator]
            positions[annotator] += 1
            shift = 2.0 - position / 50 if annotator == "ann_drift" else 0.0
            rating = int(np.clip(np.rint(grade[t] + shift + rng.normal(0, noise[annotator])), 0, 4))
            seconds = rng.gamma(2.0, 2.0) if annotator == "ann_hasty" else rng.gamma(6.0, 4.0)
            rows.append({"task_id": f"{query}_{candidate}", "annotator_id": annotator, "rating": rating,
                         "query_id": query, "doc_id": f"{query}_{candidate}", "seconds": round(float(seconds), 1),
                         "position": position})
    table = pl.DataFrame(rows).sort("task_id", "annotator_id")
    gold_table = pl.DataFrame({"task_id": [f"{tasks[g][0]}_{tasks[g][1]}" for g in sorted(gold)],
                               "rating": [int(grade[g]) for g in sorted(gold)]})
    return table, gold_table


def recommendations(rng: np.random.Generator) -> dict[str, pl.DataFrame]:
    n_items, n_users, k = 1000, 500, 20
    popularity = np.sort(rng.zipf(1.6, n_items).clip(1, 5000))[::-1].astype(np.int64)
    category = rng.integers(0, 12, n_items)
    items = [f"item_{i:04d}" for i in range(n_items)]
    weights = popularity / popularity.sum()
    rec_rows, truth_rows, history_rows = [], [], []
    for u in range(n_users):
        user = f"user_{u:03d}"
        liked = rng.choice(12, 2, replace=False)
        affinity = weights ** 0.7 * np.where(np.isin(category, liked), 4.0, 1.0)
        affinity /= affinity.sum()
        chosen = rng.choice(n_items, k + 8, replace=False, p=affinity)
        for rank, item in enumerate(chosen[:k], start=1):
            rec_rows.append({"query_id": user, "doc_id": items[item], "rank": rank})
        truth = rng.choice(n_items, 3, replace=False, p=affinity)
        truth_rows += [{"query_id": user, "doc_id": items[i], "relevance": 1} for i in truth]
        history_rows += [{"query_id": user, "item_id": items[i]} for i in chosen[k:]]
    pairs = []
    for c in range(12):
        members = np.nonzero(category == c)[0][:25]
        for a in members:
            for b in members:
                if a < b:
                    pairs.append({"item_a": items[a], "item_b": items[b], "similarity": round(float(rng.uniform(0.3, 0.95)), 3)})
    return {
        "recs.csv": pl.DataFrame(rec_rows),
        "ground_truth.csv": pl.DataFrame(truth_rows),
        "items.csv": pl.DataFrame({"item_id": items, "popularity": popularity, "category": [f"cat_{c:02d}" for c in category]}),
        "history.csv": pl.DataFrame(history_rows),
        "similarity.csv": pl.DataFrame(pairs),
    }


def detection(rng: np.random.Generator) -> dict[str, pl.DataFrame]:
    n = 20_000
    label = (rng.random(n) < 0.01).astype(np.int64)
    segment = rng.choice(["card_present", "online", "transfer"], n, p=[0.5, 0.35, 0.15])
    score = rng.beta(2, 8, n) + label * rng.uniform(0.05, 0.6, n)
    scores = pl.DataFrame({"query_id": [f"tx_{i:05d}" for i in range(n)], "label": label,
                           "prob": np.round(np.clip(score, 0, 1), 6), "segment": segment})
    onsets = np.sort(rng.uniform(0, 86_400 * 7, 120))
    delay = rng.gamma(2.0, 900.0, 120)
    detected = np.where(rng.random(120) < 0.85, np.round(onsets + delay, 1), np.nan)
    anomalies = pl.DataFrame({"query_id": [f"inc_{i:03d}" for i in range(120)], "onset": np.round(onsets, 1),
                              "detected_at": detected}).with_columns(pl.col("detected_at").fill_nan(None))
    # Each fraud's time line from its own stream (the columns above stay as they were): the
    # transaction's time (``onset``, seconds into the week) and, when the detector flagged it
    # (prob >= 0.5, the pipeline's threshold), when an analyst confirmed it (``detected_at``).
    timing = np.random.default_rng(SEED + 1)
    fraud = label == 1
    onset = np.round(timing.uniform(0, 86_400 * 7, n), 1)
    confirmed = np.round(onset + timing.gamma(2.0, 600.0, n), 1)
    flagged = fraud & (scores.get_column("prob").to_numpy() >= 0.5)
    scores = scores.with_columns(pl.Series("onset", np.where(fraud, onset, np.nan)).fill_nan(None),
                                 pl.Series("detected_at", np.where(flagged, confirmed, np.nan)).fill_nan(None))
    return {"scores.csv": scores, "anomalies.csv": anomalies}


def main() -> None:
    rng = np.random.default_rng(SEED)
    labels, gold = annotations(rng)
    (HERE / "labels").mkdir(exist_ok=True)
    labels.write_csv(HERE / "labels" / "annotations.csv")
    gold.write_csv(HERE / "labels" / "gold_tasks.csv")
    for folder, tables in (("recommendations", recommendations(rng)), ("detection", detection(rng))):
        (HERE / folder).mkdir(exist_ok=True)
        for name, table in tables.items():
            table.write_csv(HERE / folder / name)
    print(f"labels: {labels.height} ratings of {labels['task_id'].n_unique()} tasks, {gold.height} gold tasks")


if __name__ == "__main__":
    main()
