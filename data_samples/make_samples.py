"""Make evalframe's bundled sample data: ``per_query.csv`` and a small TREC run/qrels set.

Run ``python data_samples/make_samples.py`` (from anywhere); it rewrites

- ``per_query.csv``: the per-query output of an evidence-retrieval pipeline, shaped like the
  metrics contract §1 at a third of its size (500 posts × 10 criteria = 5,000 queries, 466
  positives, 5 post-disjoint folds of 100 posts), for the six ablation configs of contract §8.1,
  from ``retriever_only`` to ``full_pipeline`` (:data:`CONFIGS`);
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
  separation ``d`` sets the AUROC (d ≈ 1.8 gives ≈ 0.9). The early configs gate on the
  retrieval scores (smaller ``d``, overconfident); the P4 NE gate is well separated and nearly
  calibrated (:data:`GATES`).
- A sentence's ranking score is a post-level salience shared by all criteria, plus noise, plus
  a boost when it is gold (larger when the gate's own noise was favourable, so confident
  queries also rank better); each reranker raises the boost (:data:`RANKERS`). The ranked list
  is the whole post, best first; ``ranked_scores`` are ``sigmoid(3 · (score − 1.5))`` rounded
  to 3 decimals (non-negative and non-increasing, as the mass policy of §8.2 needs).
- Extraction: before P2 the top ``FIXED_K`` = 5; with P2 dynamic K, ``selected_k`` grows with
  the probability (1-10, at most the post's sentence count); the full pipeline skips NEG queries
  (``selected_k`` = 0, an empty extraction). ``extracted_sent_uids`` is the first ``selected_k``
  of the ranking.
- ``state``: before the three-state gate a binary one (``NEG`` if p < 0.5 else ``POS``); the full
  pipeline applies tau_neg = 0.1 and tau_pos = 0.6 to the probability as written (6 decimals).
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

N_POSTS = 500
N_CRITERIA = 10
CRITERIA = tuple(f"A.{number}" for number in range(1, N_CRITERIA + 1))
#: Positives per criterion (sum 466, the contract's 1,379 scaled to 500 posts, §1.1): common
#: criteria first, A.10 rare.
POSITIVES_PER_CRITERION = (88, 73, 61, 54, 47, 42, 37, 32, 24, 8)
#: Posts per fold (contract §1.2 has 295 × 4 + 297; a third of it here).
FOLD_SIZES = (100, 100, 100, 100, 100)
#: The fold in which the rare criterion A.10 has no positive.
EMPTY_FOLD_FOR_RARE_CRITERION = 2
MIN_SENTENCES, MAX_SENTENCES = 8, 35
#: Probabilities of 1, 2, 3, 4 gold sentences for a positive query.
GOLD_COUNT_PROBABILITIES = (0.45, 0.30, 0.15, 0.10)
TAU_NEG, TAU_POS = 0.1, 0.6
#: The binary gate of the configs before the three-state gate: NEG below, POS at or above.
BINARY_THRESHOLD = 0.5
MAX_SELECTED_K = 10
#: Sentences extracted per query by the configs without dynamic K.
FIXED_K = 5
PROBABILITY_DECIMALS = 6
SCORE_DECIMALS_PER_QUERY = 3
#: The state of the random stream after the first version of this script (1,477 posts, two
#: configs) drew its per_query data: the TREC sample continues from it, so its files stay
#: byte-identical whatever the per_query part draws.
TREC_STREAM_STATE = {
    "bit_generator": "PCG64",
    "state": {"state": 182344149695082433337386505832201488241, "inc": 123284873247379285796297707654709313797},
    "has_uint32": 0,
    "uinteger": 4028777442,
}


@dataclass(frozen=True)
class GateProfile:
    """How good a has-evidence gate is: separation and calibration."""

    separation: float  # mean shift of the gate score between positives and negatives
    separation_spread: float  # per-criterion spread of the separation (some criteria are harder)
    logit_slope: float  # > 1 overconfident, < 1 underconfident
    logit_shift: float  # > 0 over-predicts evidence
    gate_noise_share: float  # how much of the gate's noise is shared with the P4 gate


@dataclass(frozen=True)
class RankerProfile:
    """How well a ranking stage puts gold sentences first."""

    gold_boost: float  # ranking-score boost of a gold sentence
    gold_boost_noise: float  # per-query spread of that boost


@dataclass(frozen=True)
class SystemProfile:
    """One ablation config (contract §8.1): which gate and ranker, and how it extracts and gates."""

    name: str
    gate: str  # key of GATES
    ranker: str  # key of RANKERS
    dynamic_k: bool  # P2: K grows with the probability (else FIXED_K)
    three_state: bool  # the clinical gate: NEG / UNCERTAIN / POS and NEG queries skipped


#: Gates: the early configs gate on retrieval scores (better with each reranker); P4 is a GNN.
GATES = {
    "retrieval": GateProfile(1.20, 0.20, 2.00, 1.50, 0.6),
    "reranker": GateProfile(1.35, 0.20, 1.70, 1.10, 0.7),
    "graph": GateProfile(1.45, 0.20, 1.50, 0.90, 0.75),
    "p4_gnn": GateProfile(1.85, 0.25, 0.85, 0.25, 1.0),
}
RANKERS = {
    "nv_embed_top24": RankerProfile(0.55, 0.45),
    "jina": RankerProfile(0.85, 0.45),
    "p3_graph": RankerProfile(1.00, 0.45),
}
#: The six configs of contract §8.1, in the ablation's order.
SYSTEMS = (
    SystemProfile("retriever_only", "retrieval", "nv_embed_top24", dynamic_k=False, three_state=False),
    SystemProfile("plus_jina_reranker", "reranker", "jina", dynamic_k=False, three_state=False),
    SystemProfile("plus_p3_graph_reranker", "graph", "p3_graph", dynamic_k=False, three_state=False),
    SystemProfile("plus_p2_dynamic_k", "graph", "p3_graph", dynamic_k=True, three_state=False),
    SystemProfile("plus_p4_ne_gate", "p4_gnn", "p3_graph", dynamic_k=True, three_state=False),
    SystemProfile("full_pipeline", "p4_gnn", "p3_graph", dynamic_k=True, three_state=True),
)
CONFIGS = tuple(system.name for system in SYSTEMS)


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
    rng: np.random.Generator, queries: pl.DataFrame, system: GateProfile, shared_noise: np.ndarray
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
    rng: np.random.Generator, candidates: pl.DataFrame, gate_noise: np.ndarray, system: RankerProfile
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


def number_list(column: str, decimals: int) -> pl.Expr:
    """A list[f64] column as a compact JSON array of numbers, each rounded to ``decimals``."""
    items = pl.col(column).list.eval(pl.element().round(decimals).cast(pl.String))
    return pl.concat_str(pl.lit("["), items.list.join(","), pl.lit("]")).alias(column)


def build_per_query(rng: np.random.Generator) -> pl.DataFrame:
    """The whole per_query table, every config, in the contract's column order.

    A gate or ranker shared by several configs is drawn once (the ablation changes one stage
    at a time), in the order of :data:`SYSTEMS`.
    """
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

    gates: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    rankings: dict[str, pl.DataFrame] = {}
    dynamic_k: np.ndarray | None = None
    n_sentences = queries["n_sentences"].to_numpy()
    tables = []
    for system in SYSTEMS:
        if system.gate not in gates:
            gates[system.gate] = gate_probabilities(rng, queries, GATES[system.gate], shared_noise)
        probability, gate_noise = gates[system.gate]
        if system.ranker not in rankings:
            score = ranking_scores(rng, candidates, gate_noise, RANKERS[system.ranker])
            rankings[system.ranker] = (
                candidates.select("query_index", "sent_uid", "sentence_number")
                .with_columns(score=score, ranked_score=1.0 / (1.0 + np.exp(-3.0 * (score - 1.5))))
                .sort(["query_index", "score", "sentence_number"], descending=[False, True, False])
                .group_by("query_index", maintain_order=True)
                .agg(ranked_sent_uids=pl.col("sent_uid"), ranked_scores=pl.col("ranked_score"))
            )
        if system.dynamic_k:
            # Dynamic K grows with the probability: about 1 at p = 0 and 9-10 at p = 1; the
            # noise is drawn once, so the configs with P2 differ only by their probability.
            if dynamic_k is None:
                dynamic_k = 0.9 * rng.standard_normal(queries.height)
            raw_k = np.rint(1.0 + 8.5 * probability**0.8 + dynamic_k)
            selected_k = np.clip(raw_k, 1, np.minimum(MAX_SELECTED_K, n_sentences)).astype(np.int64)
        else:
            selected_k = np.minimum(FIXED_K, n_sentences).astype(np.int64)
        p = pl.col("p_has_evidence")
        if system.three_state:
            state = pl.when(p < TAU_NEG).then(pl.lit("NEG")).when(p < TAU_POS).then(pl.lit("UNCERTAIN")).otherwise(pl.lit("POS"))
            # The clinical gate skips NEG queries: nothing is extracted for them.
            selected_k = np.where(probability < TAU_NEG, 0, selected_k)
        else:
            state = pl.when(p < BINARY_THRESHOLD).then(pl.lit("NEG")).otherwise(pl.lit("POS"))
        table = (
            queries.with_columns(
                criterion_id=criterion_names.gather(queries["criterion_index"]),
                p_has_evidence=pl.Series(probability),
                selected_k=pl.Series(selected_k),
                config=pl.lit(system.name),
            )
            .join(gold, on="query_index", how="left")
            .join(rankings[system.ranker], on="query_index", how="left")
            .with_columns(
                gold_sent_uids=pl.col("gold_sent_uids").fill_null(pl.lit([], dtype=pl.List(pl.String))),
                extracted_sent_uids=pl.col("ranked_sent_uids").list.head(pl.col("selected_k")),
                state=state,
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
        number_list("ranked_scores", SCORE_DECIMALS_PER_QUERY),
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
        extracted = [(set(json.loads(r["gold_sent_uids"])), set(json.loads(r["extracted_sent_uids"]))) for r in positive]
        evidence_recall = [len(gold & chosen) / len(gold) for gold, chosen in extracted]
        evidence_precision = [len(gold & chosen) / len(chosen) if chosen else 0.0 for gold, chosen in extracted]
        print(
            f"{config}: positives {len(positive)}, AUROC {roc_auc_score(labels, probabilities):.4f}, "
            f"ECE {expected_calibration_error(labels, probabilities):.4f}, "
            f"recall@5 {sum(recall5) / len(recall5):.4f}, nDCG@10 {sum(ndcg10) / len(ndcg10):.4f}, "
            f"mean selected_k {mean_k:.2f}, evidence recall / precision @selected_k "
            f"{sum(evidence_recall) / len(positive):.4f} / {sum(evidence_precision) / len(positive):.4f}, "
            f"states {states}"
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
    rng.bit_generator.state = TREC_STREAM_STATE
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
