"""Make evalframe's bundled sample data: ``per_query.csv`` and a small TREC run/qrels set.

Run ``python data_samples/make_samples.py`` (from anywhere); it rewrites

- ``per_query.csv``: the per-query output of an evidence-retrieval pipeline, shaped like the
  metrics contract §1 (1,477 posts × 10 criteria = 14,770 queries, 1,379 positives, 5
  post-disjoint folds), for two configs (``full_pipeline`` and the weaker ``retriever_only``);
- ``trec/qrels.txt``, ``trec/run_bm25.txt``, ``trec/run_dense.txt``: 50 topics with graded
  judgments and two 100-document runs,

and prints a short summary (counts, AUROC, ECE, mean recall@5 and nDCG@10 recomputed from the
written file in plain Python as a sanity check).

The data are synthetic. Everything comes from one ``numpy.random.default_rng(SEED)`` stream,
so the same command writes byte-identical files.

How the per-query data are drawn
--------------------------------
- Posts have a latent severity; a criterion's positives are drawn from the posts with weights
  ``exp(0.8 · severity)``, so positives cluster in some posts. The number of positives per
  criterion is fixed (``POSITIVES_PER_CRITERION``, summing to 1,379); A.10 is rare and has no
  positive in fold 2 (an empty fold × criterion cell, on purpose).
- A positive query has 1-4 gold sentences drawn from its post.
- The gate's probability is the Bayes posterior of a binormal score (``score = d · y + noise``,
  the prior being the criterion's positive rate), mildly distorted on the logit scale; the
  separation ``d`` sets the AUROC (d ≈ 1.8 gives ≈ 0.9). ``retriever_only`` has a smaller
  ``d`` and a stronger distortion (overconfident, worse calibrated).
- A sentence's ranking score is a post-level salience shared by all criteria, plus noise, plus
  a boost when it is gold (larger when the gate's own noise was favourable, so confident
  queries also rank better). The ranked list is the whole post, best first.
- ``selected_k`` grows with the probability (1-10, at most the post's sentence count);
  ``extracted_sent_uids`` is the first ``selected_k`` of the ranking; ``state`` applies
  tau_neg = 0.1 and tau_pos = 0.6 to the probability as written (6 decimals).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

SEED = 20260118
OUT_DIR = Path(__file__).resolve().parent

N_POSTS = 1477
N_CRITERIA = 10
CRITERIA = tuple(f"A.{number}" for number in range(1, N_CRITERIA + 1))
#: Positives per criterion (sum 1,379, contract §1.1): common criteria first, A.10 rare.
POSITIVES_PER_CRITERION = (260, 215, 180, 160, 140, 125, 110, 95, 70, 24)
#: Posts per fold (contract §1.2).
FOLD_SIZES = (295, 295, 295, 295, 297)
#: The fold in which the rare criterion A.10 has no positive.
EMPTY_FOLD_FOR_RARE_CRITERION = 2
MIN_SENTENCES, MAX_SENTENCES = 8, 35
#: Probabilities of 1, 2, 3, 4 gold sentences for a positive query.
GOLD_COUNT_PROBABILITIES = (0.45, 0.30, 0.15, 0.10)
TAU_NEG, TAU_POS = 0.1, 0.6
MAX_SELECTED_K = 10
PROBABILITY_DECIMALS = 6


@dataclass(frozen=True)
class SystemProfile:
    """How good one config is: gate separation and calibration, ranking boost of gold sentences."""

    name: str
    separation: float  # mean shift of the gate score between positives and negatives
    separation_spread: float  # per-criterion spread of the separation (some criteria are harder)
    logit_slope: float  # > 1 overconfident, < 1 underconfident
    logit_shift: float  # > 0 over-predicts evidence
    gold_boost: float  # ranking-score boost of a gold sentence
    gold_boost_noise: float  # per-query spread of that boost
    gate_noise_share: float  # how much of the gate's noise is shared with full_pipeline


SYSTEMS = (
    SystemProfile("full_pipeline", 1.85, 0.25, 0.85, 0.25, 1.00, 0.45, 1.0),
    SystemProfile("retriever_only", 1.20, 0.20, 2.00, 1.50, 0.65, 0.45, 0.6),
)


# --------------------------------------------------------------------------------------------
# per_query.csv
# --------------------------------------------------------------------------------------------


def draw_posts(rng: np.random.Generator) -> pl.DataFrame:
    """One row per post: post_id, fold (post-disjoint), n_sentences, severity."""
    fold_of_position = np.repeat(np.arange(len(FOLD_SIZES)), FOLD_SIZES)
    fold = np.empty(N_POSTS, dtype=np.int64)
    fold[rng.permutation(N_POSTS)] = fold_of_position
    # Right-skewed sentence counts: 8 + Gamma(2.2, 4.6) has mean ≈ 18, median ≈ 16.5, tail to 35.
    # A mean of 18 rather than 20 keeps per_query.csv near 10 MB (each ranked id costs ~15 bytes).
    n_sentences = np.clip(
        MIN_SENTENCES + np.rint(rng.gamma(2.2, 4.6, size=N_POSTS)), MIN_SENTENCES, MAX_SENTENCES
    ).astype(np.int64)
    severity = rng.standard_normal(N_POSTS)
    return pl.DataFrame(
        {
            "post_index": np.arange(N_POSTS),
            "post_id": [f"p{index + 1:05d}" for index in range(N_POSTS)],
            "fold": fold,
            "n_sentences": n_sentences,
            "severity": severity,
        }
    )


def draw_labels(rng: np.random.Generator, posts: pl.DataFrame) -> np.ndarray:
    """has_evidence_gold as a (post, criterion) 0/1 matrix with the fixed positive counts."""
    weight = np.exp(0.8 * posts["severity"].to_numpy())
    fold = posts["fold"].to_numpy()
    labels = np.zeros((N_POSTS, N_CRITERIA), dtype=np.int64)
    for criterion_index, n_positive in enumerate(POSITIVES_PER_CRITERION):
        eligible = np.arange(N_POSTS)
        if criterion_index == N_CRITERIA - 1:
            eligible = eligible[fold != EMPTY_FOLD_FOR_RARE_CRITERION]
        chosen = rng.choice(eligible, size=n_positive, replace=False, p=weight[eligible] / weight[eligible].sum())
        labels[chosen, criterion_index] = 1
    return labels


def draw_queries(rng: np.random.Generator, posts: pl.DataFrame, labels: np.ndarray) -> pl.DataFrame:
    """One row per query (post × criterion): keys, label, number of gold sentences."""
    n_queries = N_POSTS * N_CRITERIA
    n_gold = np.where(
        labels.ravel() == 1,
        rng.choice(np.arange(1, 5), size=n_queries, p=GOLD_COUNT_PROBABILITIES),
        0,
    )
    return pl.DataFrame(
        {
            "query_index": np.arange(n_queries),
            "post_index": np.repeat(np.arange(N_POSTS), N_CRITERIA),
            "criterion_index": np.tile(np.arange(N_CRITERIA), N_POSTS),
            "has_evidence_gold": labels.ravel(),
            "n_gold": n_gold,
        }
    ).join(posts.select("post_index", "post_id", "fold", "n_sentences"), on="post_index", how="left")


def draw_candidates(rng: np.random.Generator, queries: pl.DataFrame) -> pl.DataFrame:
    """One row per (query, candidate sentence of its post), with is_gold and the post salience."""
    n_sentences = queries["n_sentences"].to_numpy()
    query_index = np.repeat(queries["query_index"].to_numpy(), n_sentences)
    group_start = np.repeat(np.cumsum(n_sentences) - n_sentences, n_sentences)
    sentence_number = np.arange(query_index.size) - group_start + 1  # 1-based within the post
    post_index = np.repeat(queries["post_index"].to_numpy(), n_sentences)

    # Salience of a sentence is a property of the post, shared by its 10 criteria.
    post_sentence_counts = queries.unique("post_index", keep="first", maintain_order=True)["n_sentences"].to_numpy()
    salience_by_post = rng.standard_normal(post_sentence_counts.sum())
    post_offset = np.cumsum(post_sentence_counts) - post_sentence_counts
    salience = salience_by_post[post_offset[post_index] + sentence_number - 1]

    # Gold sentences: the n_gold candidates with the smallest random key in each query.
    key = rng.random(query_index.size)
    order = np.lexsort((key, query_index))
    position_in_query = np.empty(query_index.size, dtype=np.int64)
    position_in_query[order] = np.arange(query_index.size) - group_start[order]
    is_gold = position_in_query < np.repeat(queries["n_gold"].to_numpy(), n_sentences)

    post_id = queries["post_id"].to_numpy()
    return pl.DataFrame(
        {
            "query_index": query_index,
            "sentence_number": sentence_number,
            "is_gold": is_gold,
            "salience": salience,
        }
    ).with_columns(
        sent_uid=pl.concat_str(
            pl.Series(np.repeat(post_id, n_sentences)),
            pl.lit("_s"),
            pl.col("sentence_number").cast(pl.String).str.zfill(2),
        )
    )


def gate_probabilities(
    rng: np.random.Generator, queries: pl.DataFrame, system: SystemProfile, shared_noise: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return (probability rounded to 6 decimals, the gate's noise) for one system.

    score = d_c · y + noise; the Bayes posterior with prior pi_c is
    logit p = logit(pi_c) + d_c · score − d_c² / 2, then distorted as slope · logit + shift.
    """
    criterion_index = queries["criterion_index"].to_numpy()
    label = queries["has_evidence_gold"].to_numpy()
    separation_by_criterion = system.separation + system.separation_spread * np.linspace(1.0, -1.0, N_CRITERIA)
    separation = separation_by_criterion[criterion_index]
    prior = np.asarray(POSITIVES_PER_CRITERION, dtype=float)[criterion_index] / N_POSTS
    own_share = math.sqrt(1.0 - system.gate_noise_share**2)
    noise = system.gate_noise_share * shared_noise + own_share * rng.standard_normal(label.size)
    score = separation * label + noise
    logit = np.log(prior / (1.0 - prior)) + separation * score - separation**2 / 2.0
    probability = 1.0 / (1.0 + np.exp(-(system.logit_slope * logit + system.logit_shift)))
    return np.round(probability, PROBABILITY_DECIMALS), noise


def ranking_scores(
    rng: np.random.Generator, candidates: pl.DataFrame, gate_noise: np.ndarray, system: SystemProfile
) -> np.ndarray:
    """Score of each candidate: 0.6 · salience + noise + boost if gold (better when gate noise helps)."""
    query_index = candidates["query_index"].to_numpy()
    boost = system.gold_boost + system.gold_boost_noise * np.clip(gate_noise, -2.0, 2.0)
    return (
        0.6 * candidates["salience"].to_numpy()
        + rng.standard_normal(query_index.size)
        + candidates["is_gold"].to_numpy() * boost[query_index]
    )


def json_list(column: str) -> pl.Expr:
    """A list[str] column as a compact JSON array of strings (ids never need escaping)."""
    return (
        pl.when(pl.col(column).list.len() == 0)
        .then(pl.lit("[]"))
        .otherwise(pl.concat_str(pl.lit('["'), pl.col(column).list.join('","'), pl.lit('"]')))
        .alias(column)
    )


def build_per_query(rng: np.random.Generator) -> pl.DataFrame:
    """The whole per_query table, both configs, in the contract's column order."""
    posts = draw_posts(rng)
    labels = draw_labels(rng, posts)
    queries = draw_queries(rng, posts, labels)
    candidates = draw_candidates(rng, queries)
    gold = (
        candidates.filter(pl.col("is_gold"))
        .group_by("query_index", maintain_order=True)
        .agg(gold_sent_uids=pl.col("sent_uid"))
    )
    shared_noise = rng.standard_normal(queries.height)
    criterion_names = pl.Series(CRITERIA)

    tables = []
    for system in SYSTEMS:
        probability, gate_noise = gate_probabilities(rng, queries, system, shared_noise)
        ranked = (
            candidates.select("query_index", "sent_uid", "sentence_number")
            .with_columns(score=ranking_scores(rng, candidates, gate_noise, system))
            .sort(["query_index", "score", "sentence_number"], descending=[False, True, False])
            .group_by("query_index", maintain_order=True)
            .agg(ranked_sent_uids=pl.col("sent_uid"))
        )
        # Dynamic K grows with the probability: about 1 at p = 0 and 9-10 at p = 1.
        raw_k = np.rint(1.0 + 8.5 * probability**0.8 + 0.9 * rng.standard_normal(queries.height))
        selected_k = np.clip(raw_k, 1, np.minimum(MAX_SELECTED_K, queries["n_sentences"].to_numpy())).astype(np.int64)
        table = (
            queries.with_columns(
                criterion_id=criterion_names.gather(queries["criterion_index"]),
                p_has_evidence=pl.Series(probability),
                selected_k=pl.Series(selected_k),
                config=pl.lit(system.name),
            )
            .join(gold, on="query_index", how="left")
            .join(ranked, on="query_index", how="left")
            .with_columns(
                gold_sent_uids=pl.col("gold_sent_uids").fill_null(pl.lit([], dtype=pl.List(pl.String))),
                extracted_sent_uids=pl.col("ranked_sent_uids").list.head(pl.col("selected_k")),
                state=pl.when(pl.col("p_has_evidence") < TAU_NEG)
                .then(pl.lit("NEG"))
                .when(pl.col("p_has_evidence") < TAU_POS)
                .then(pl.lit("UNCERTAIN"))
                .otherwise(pl.lit("POS")),
            )
            .sort("query_index")
        )
        tables.append(table)

    return pl.concat(tables).select(
        "post_id",
        "criterion_id",
        pl.col("fold").cast(pl.Int64),
        pl.col("has_evidence_gold").cast(pl.Int64),
        "p_has_evidence",
        json_list("gold_sent_uids"),
        json_list("ranked_sent_uids"),
        "selected_k",
        json_list("extracted_sent_uids"),
        "state",
        "config",
    )


def write_per_query(table: pl.DataFrame, path: Path) -> None:
    """Write with a fixed float format and Unix line endings so reruns are byte-identical."""
    table.write_csv(path, float_precision=PROBABILITY_DECIMALS, line_terminator="\n")


# --------------------------------------------------------------------------------------------
# TREC sample
# --------------------------------------------------------------------------------------------

N_TOPICS = 50
FIRST_TOPIC = 401
RUN_DEPTH = 100
COLLECTION_SIZE = 60_000
#: The docs at the top POOL_DEPTH ranks of either run are judged (the pool).
POOL_DEPTH = 30
#: Decimals of each run's scores: coarse enough that equal scores happen, as in real runs.
SCORE_DECIMALS = {"bm25": 3, "dense": 5}


def doc_names(rng: np.random.Generator) -> np.ndarray:
    """Collection doc ids: mostly ``FT9xx-nnnnn``, a web subset named ``WEB#nnnnn``."""
    names = np.array([f"FT9{index % 4 + 1}{index // 4 % 10}-{index:05d}" for index in range(COLLECTION_SIZE)])
    web = rng.choice(COLLECTION_SIZE, size=COLLECTION_SIZE // 40, replace=False)
    names[web] = [f"WEB#{index:05d}" for index in web]
    return names


def make_trec(rng: np.random.Generator) -> tuple[list[str], dict[str, list[str]]]:
    """Return qrels lines and {run tag: run lines} for N_TOPICS topics."""
    names = doc_names(rng)
    qrels_lines: list[str] = []
    run_lines: dict[str, list[str]] = {tag: [] for tag in SCORE_DECIMALS}
    for topic in range(FIRST_TOPIC, FIRST_TOPIC + N_TOPICS):
        n_candidates = 400  # docs a topic's runs can retrieve from
        candidates = rng.choice(COLLECTION_SIZE, size=n_candidates, replace=False)
        # Graded relevance of the candidates: most 0; 4-40 relevant (grades 1-3) per topic.
        n_relevant = int(rng.integers(4, 41))
        grade = np.zeros(n_candidates, dtype=np.int64)
        grade[:n_relevant] = rng.choice([1, 2, 3], size=n_relevant, p=[0.5, 0.3, 0.2])
        topic_difficulty = rng.normal(0.0, 0.4)

        bm25 = 12.0 + 2.2 * (grade > 0) + 0.9 * grade + topic_difficulty + 2.6 * rng.standard_normal(n_candidates)
        dense = 0.45 + 0.07 * (grade > 0) + 0.035 * grade + 0.015 * topic_difficulty + 0.07 * rng.standard_normal(n_candidates)
        scores = {"bm25": bm25, "dense": np.clip(dense, -1.0, 1.0)}
        scores = {tag: np.round(score, SCORE_DECIMALS[tag]) for tag, score in scores.items()}

        pooled = np.zeros(n_candidates, dtype=bool)
        for tag, score in scores.items():
            doc = names[candidates]
            # trec_eval's order: score descending, then docno descending.
            order = np.lexsort((doc, score))[::-1][:RUN_DEPTH]
            pooled[order[:POOL_DEPTH]] = True
            run_lines[tag].extend(
                f"{topic} Q0 {doc[index]} {rank} {score[index]:.{SCORE_DECIMALS[tag]}f} {tag}"
                for rank, index in enumerate(order, start=1)
            )
        judged = pooled | (grade > 0)  # every relevant doc is judged, retrieved or not
        # A few pooled docs were seen but left unjudged (-1).
        unjudged = judged & (grade == 0) & (rng.random(n_candidates) < 0.04)
        relevance = np.where(unjudged, -1, grade)
        judged_index = np.flatnonzero(judged)
        judged_index = judged_index[np.argsort(names[candidates[judged_index]], kind="stable")]
        qrels_lines.extend(f"{topic} 0 {names[candidates[index]]} {relevance[index]}" for index in judged_index)
    return qrels_lines, run_lines


def write_lines(lines: list[str], path: Path) -> None:
    """Write one line per item with Unix line endings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")


# --------------------------------------------------------------------------------------------
# Sanity summary (plain Python reading of the written file, as the contract's reference code)
# --------------------------------------------------------------------------------------------


def recall_at_k(gold: set[str], ranked: list[str], k: int) -> float:
    """Contract §3.1: |gold ∩ top k| / |gold| (gold is never empty here)."""
    return len(gold & set(ranked[:k])) / len(gold)


def ndcg_at_k(gold: set[str], ranked: list[str], k: int) -> float:
    """Contract §3.6 with binary relevance: sum of 1 / log2(rank + 1) over gold in the top k, over its ideal."""
    dcg = sum(1.0 / math.log2(position + 2) for position, uid in enumerate(ranked[:k]) if uid in gold)
    idcg = sum(1.0 / math.log2(position + 2) for position in range(min(len(gold), k)))
    return dcg / idcg


def expected_calibration_error(labels: list[int], probabilities: list[float], n_bins: int = 10) -> float:
    """10 equal-width bins on [0, 1] (p = 1 falls in the last bin), weighted by bin size."""
    totals = [[0, 0.0, 0] for _ in range(n_bins)]  # count, sum of p, sum of labels
    for label, probability in zip(labels, probabilities, strict=True):
        bin_ = totals[min(int(probability * n_bins), n_bins - 1)]
        bin_[0] += 1
        bin_[1] += probability
        bin_[2] += label
    return sum(abs(p_sum - y_sum) for _, p_sum, y_sum in totals) / len(labels)


def summarise(per_query_path: Path, trec_dir: Path) -> None:
    from sklearn.metrics import roc_auc_score

    with per_query_path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    configs = sorted({row["config"] for row in rows}, key=[system.name for system in SYSTEMS].index)
    first = [row for row in rows if row["config"] == configs[0]]
    posts_per_fold: dict[str, set[str]] = {}
    for row in first:
        posts_per_fold.setdefault(row["fold"], set()).add(row["post_id"])
    n_candidates = [len(json.loads(row["ranked_sent_uids"])) for row in first if row["criterion_id"] == "A.1"]
    print(f"per_query.csv: {len(rows)} rows, {len(configs)} configs, {len(first)} queries per config")
    print("  posts per fold: " + ", ".join(f"{fold}: {len(posts_per_fold[fold])}" for fold in sorted(posts_per_fold)))
    print(
        f"  candidates per post: mean {sum(n_candidates) / len(n_candidates):.2f}, "
        f"min {min(n_candidates)}, max {max(n_candidates)}"
    )
    positives_by_criterion = {criterion: 0 for criterion in CRITERIA}
    for row in first:
        positives_by_criterion[row["criterion_id"]] += int(row["has_evidence_gold"])
    print("  positives per criterion: " + ", ".join(f"{c} {n}" for c, n in positives_by_criterion.items()))
    empty_cells = sorted(
        {(row["fold"], row["criterion_id"]) for row in first}
        - {(row["fold"], row["criterion_id"]) for row in first if row["has_evidence_gold"] == "1"}
    )
    print(f"  fold x criterion cells without positives: {empty_cells or 'none'}")
    for config in configs:
        selected = [row for row in rows if row["config"] == config]
        labels = [int(row["has_evidence_gold"]) for row in selected]
        probabilities = [float(row["p_has_evidence"]) for row in selected]
        positive = [row for row in selected if row["has_evidence_gold"] == "1"]
        gold_and_ranked = [(set(json.loads(r["gold_sent_uids"])), json.loads(r["ranked_sent_uids"])) for r in positive]
        recall5 = [recall_at_k(gold, ranked, 5) for gold, ranked in gold_and_ranked]
        ndcg10 = [ndcg_at_k(gold, ranked, 10) for gold, ranked in gold_and_ranked]
        states = {state: sum(row["state"] == state for row in selected) for state in ("NEG", "UNCERTAIN", "POS")}
        mean_k = sum(int(row["selected_k"]) for row in selected) / len(selected)
        print(
            f"{config}: positives {len(positive)}, AUROC {roc_auc_score(labels, probabilities):.4f}, "
            f"ECE {expected_calibration_error(labels, probabilities):.4f}, "
            f"recall@5 {sum(recall5) / len(recall5):.4f}, nDCG@10 {sum(ndcg10) / len(ndcg10):.4f}, "
            f"mean selected_k {mean_k:.2f}, states {states}"
        )

    qrels = [line.split() for line in (trec_dir / "qrels.txt").read_text(encoding="utf-8").splitlines()]
    grades = {grade: sum(fields[3] == grade for fields in qrels) for grade in ("-1", "0", "1", "2", "3")}
    print(
        f"trec/qrels.txt: {len({fields[0] for fields in qrels})} topics, {len(qrels)} judgments, "
        f"relevance counts {grades}, doc ids with '#': {sum('#' in fields[2] for fields in qrels)}"
    )
    for tag in ("bm25", "dense"):
        run = [line.split() for line in (trec_dir / f"run_{tag}.txt").read_text(encoding="utf-8").splitlines()]
        tied = len(run) - len({(fields[0], fields[4]) for fields in run})
        print(
            f"trec/run_{tag}.txt: {len({fields[0] for fields in run})} topics, {len(run)} lines, "
            f"{tied} lines tie an earlier score of their topic"
        )


def main() -> None:
    rng = np.random.default_rng(SEED)
    per_query_path = OUT_DIR / "per_query.csv"
    trec_dir = OUT_DIR / "trec"
    write_per_query(build_per_query(rng), per_query_path)
    qrels_lines, run_lines = make_trec(rng)
    write_lines(qrels_lines, trec_dir / "qrels.txt")
    for tag, lines in run_lines.items():
        write_lines(lines, trec_dir / f"run_{tag}.txt")

    summarise(per_query_path, trec_dir)
    for path in (per_query_path, trec_dir / "qrels.txt", trec_dir / "run_bm25.txt", trec_dir / "run_dense.txt"):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print(f"{path.relative_to(OUT_DIR)}: {path.stat().st_size:,} bytes, sha256 {digest}…")


if __name__ == "__main__":
    main()
