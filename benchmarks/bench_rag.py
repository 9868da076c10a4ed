"""RAG benchmark (issue 23): the rag pipeline's metrics against the plain Python script a user writes.

    python benchmarks/bench_rag.py make [--samples 10000]   # benchmarks/data/rag_<n>.jsonl (git-ignored)
    python benchmarks/bench_rag.py evalframe [--samples N]  # ef.read_rag + ef.evaluate, no bootstrap
    python benchmarks/bench_rag.py reference [--samples N]  # rouge-score per row, sacrebleu.corpus_bleu,
                                                            # a SQuAD loop, dict loops for the rest
    python benchmarks/bench_rag.py compare [--samples N]    # every (system, slice, metric) value equal

Each timed mode runs in its own process and writes its values to ``benchmarks/results/`` with its
own wall time (from interpreter start) and peak RSS. Time the two as whole processes, in turn
(evalframe, reference, evalframe, …), and compare medians.

The input: ``N`` samples (default 10,000) × 2 systems × 10 retrieved documents (8-dim
embeddings), with paraphrase/typo variants (30%), unanswerable samples (5%), graded relevant
documents, timings and a scenario label: the shape of ``data_samples/rag`` at scale. Metrics per
system, overall and per scenario: recall@5, precision@5 (over min(5, retrieved)), hit_rate@5,
MRR, MAP (over relevant retrieved), nDCG@10 (2^rel − 1), answer EM, token F1, ROUGE-1/2/L,
corpus BLEU, noise robustness, negative rejection, mean and p95 latency, distinct-2, ILD@5.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import random
import re
import resource
import string
import sys
import time
from pathlib import Path

START = time.perf_counter()
HERE = Path(__file__).resolve().parent
METRICS = ["recall@5", "precision@5(denominator=retrieved)", "hit_rate@5", "mrr", "map(denominator=retrieved)", "ndcg@10",
           "answer_exact_match", "token_f1", "rouge1_answer", "rouge2_answer", "rougeL_answer", "bleu",
           "noise_robustness", "negative_rejection_rate", "mean_latency", "p95_latency", "distinct_2",
           "intra_list_diversity@5"]
WORDS = ("the refund window delivery time tracking number invoice date late fee password reset battery life "
         "warranty period plan premium basic family days weeks months euros account menu settings page").split()


def data_path(samples: int) -> Path:
    return HERE / "data" / f"rag_{samples}.jsonl"


def make(samples: int) -> None:
    rng = random.Random(7)
    path = data_path(samples)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for i in range(samples):
            kind = rng.random()
            scenario = "unanswerable" if kind < 0.05 else "paraphrase" if kind < 0.2 else "typo" if kind < 0.35 else "original"
            parent = f"s{rng.randrange(0, max(i, 1)):05d}" if scenario in ("paraphrase", "typo") and i > 0 else None
            if parent is None and scenario in ("paraphrase", "typo"):
                scenario = "original"
            reference = None if scenario == "unanswerable" else " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) + "."
            relevant = [] if reference is None else [{"doc_id": f"d{i}_{j}", "text": " ".join(rng.choices(WORDS, k=15)),
                                                      "relevance": rng.choice([1, 2])} for j in range(rng.randint(1, 3))]
            for system in ("bm25", "hybrid"):
                docs = [f"d{rng.randrange(samples)}_{rng.randrange(3)}" for _ in range(10)]
                if relevant and rng.random() < 0.7:
                    docs[rng.randrange(10)] = relevant[0]["doc_id"]
                docs = list(dict.fromkeys(docs))
                if reference is None:
                    response = "I don't know." if rng.random() < 0.5 else " ".join(rng.choices(WORDS, k=6))
                else:
                    tokens = reference.rstrip(".").split()
                    response = " ".join(t for t in tokens if rng.random() < 0.8) + rng.choice(["", ".", "!", " extra words"])
                record = {
                    "sample_id": f"s{i:05d}", "system": system, "query": "what is " + " ".join(rng.choices(WORDS, k=5)),
                    "reference_answer": reference, "relevant_docs": relevant, "response": response,
                    "retrieved": [{"doc_id": d, "text": " ".join(rng.choices(WORDS, k=12)), "score": round(1 - r / 20, 3),
                                   "rank": r + 1, "embedding": [round(rng.gauss(0, 1), 4) for _ in range(8)]}
                                  for r, d in enumerate(docs)],
                    "timings": {"end_to_end": round(rng.lognormvariate(0, 0.5), 4)},
                    "labels": {"scenario": scenario, **({"variant_of": parent} if parent else {})},
                }
                handle.write(json.dumps(record) + "\n")
    print(f"wrote {path}")


def finish(name: str, samples: int, values: dict) -> None:
    out = HERE / "results" / f"rag_{name}_{samples}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = time.perf_counter() - START
    out.write_text(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb, "values": values}, indent=0, sort_keys=True))
    print(f"{name}: {seconds:.2f} s from interpreter start, peak RSS {peak_mb:.0f} MB, {len(values)} values -> {out}")


def run_evalframe(samples: int) -> None:
    import polars as pl

    import evalframe as ef

    tables = ef.read_rag(data_path(samples))
    ev = ef.evaluate(tables, metrics=METRICS, slices={"overall": [], "scenario": ["scenario"]},
                     parameters=None, empty="skip", missing="zero")
    values = {f"{r['system']}|{r['scenario'] or 'overall'}|{r['metric']}": r["value"]
              for r in ev.summary.filter(pl.col("value").is_not_null()).iter_rows(named=True)}
    finish("evalframe", samples, values)


# --- the plain Python script -------------------------------------------------------------------


def normalize_answer(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1(prediction: str, truth: str) -> float:
    p, t = normalize_answer(prediction).split(), normalize_answer(truth).split()
    same = sum((collections.Counter(p) & collections.Counter(t)).values())
    if same == 0:
        return 0.0
    precision, recall = 1.0 * same / len(p), 1.0 * same / len(t)
    return (2 * precision * recall) / (precision + recall)


def run_reference(samples: int) -> None:
    import numpy as np
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    records = [json.loads(line) for line in data_path(samples).open()]
    groups: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for record in records:
        scenario = record["labels"].get("scenario")
        groups[(record["system"], "overall")].append(record)
        groups[(record["system"], scenario)].append(record)
    values = {}
    for (system, slice_name), rows in groups.items():
        per: dict[str, list[float]] = collections.defaultdict(list)
        for r in rows:
            grades = {d["doc_id"]: d.get("relevance", 1) for d in r["relevant_docs"]}
            ranked = [d["doc_id"] for d in sorted(r["retrieved"], key=lambda d: d["rank"])]
            if grades:
                hits = [doc in grades for doc in ranked]
                per["recall@5"].append(sum(hits[:5]) / len(grades))
                per["precision@5(denominator=retrieved)"].append(sum(hits[:5]) / min(5, len(ranked)))
                per["hit_rate@5"].append(float(any(hits[:5])))
                per["mrr"].append(next((1 / (i + 1) for i, h in enumerate(hits) if h), 0.0))
                found, precisions = 0, []
                for i, h in enumerate(hits):
                    if h:
                        found += 1
                        precisions.append(found / (i + 1))
                per["map(denominator=retrieved)"].append(sum(precisions) / found if found else 0.0)
                dcg = sum((2 ** grades.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:10]))
                ideal = sorted(grades.values(), reverse=True)[:10]
                idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
                per["ndcg@10"].append(min(dcg / idcg, 1.0))
            if r["reference_answer"] is not None:
                per["answer_exact_match"].append(float(normalize_answer(r["response"]) == normalize_answer(r["reference_answer"])))
                per["token_f1"].append(f1(r["response"], r["reference_answer"]))
                scores = scorer.score(r["reference_answer"], r["response"])
                for variant in ("rouge1", "rouge2", "rougeL"):
                    per[f"{variant}_answer"].append(scores[variant].fmeasure)
            else:
                low = r["response"].strip().lower()
                per["negative_rejection_rate"].append(float(any(p in low for p in ("i don't know", "cannot answer", "not enough information"))))
            per["mean_latency"].append(r["timings"]["end_to_end"])
            embeddings = [np.asarray(d["embedding"]) / np.linalg.norm(d["embedding"]) for d in sorted(r["retrieved"], key=lambda d: d["rank"])[:5]]
            if len(embeddings) >= 2:
                sims = [embeddings[i] @ embeddings[j] for i in range(len(embeddings)) for j in range(i + 1, len(embeddings))]
                per["intra_list_diversity@5"].append(1 - sum(sims) / len(sims))
        for name, found in per.items():
            if found:
                values[f"{system}|{slice_name}|{name}"] = sum(found) / len(found)
        with_reference = [r for r in rows if r["reference_answer"] is not None]
        if with_reference:
            bleu = sacrebleu.corpus_bleu([r["response"] for r in with_reference], [[r["reference_answer"] for r in with_reference]])
            values[f"{system}|{slice_name}|bleu"] = bleu.score
        times = sorted(r["timings"]["end_to_end"] for r in rows)
        values[f"{system}|{slice_name}|p95_latency"] = times[math.ceil(0.95 * len(times)) - 1]
        grams = [tuple(t[i:i + 2]) for r in rows for t in [normalize_answer(r["response"]).split()] for i in range(len(t) - 1)]
        if grams:
            values[f"{system}|{slice_name}|distinct_2"] = len(set(grams)) / len(grams)
        base = [f1(r["response"], r["reference_answer"]) for r in rows
                if "variant_of" not in r["labels"] and r["reference_answer"] is not None]
        noisy = [f1(r["response"], r["reference_answer"]) for r in rows
                 if "variant_of" in r["labels"] and r["labels"].get("scenario") in ("paraphrase", "typo") and r["reference_answer"] is not None]
        if base and noisy and sum(base) > 0:
            values[f"{system}|{slice_name}|noise_robustness"] = (sum(noisy) / len(noisy)) / (sum(base) / len(base))
    finish("reference", samples, values)


def compare(samples: int) -> int:
    ours = json.loads((HERE / "results" / f"rag_evalframe_{samples}.json").read_text())
    theirs = json.loads((HERE / "results" / f"rag_reference_{samples}.json").read_text())
    a, b = ours["values"], theirs["values"]
    missing = sorted(set(b) - set(a))
    differ = [(key, a[key], b[key]) for key in sorted(set(a) & set(b)) if not math.isclose(a[key], b[key], rel_tol=1e-12, abs_tol=1e-12)]
    largest = max((abs(a[k] - b[k]) for k in set(a) & set(b)), default=0.0)
    print(f"{len(set(a) & set(b))} values compared, largest difference {largest:.3g}; "
          f"{len(missing)} reference values evalframe lacks; {len(differ)} differ")
    for row in differ[:20] + [(k, None, b[k]) for k in missing[:20]]:
        print("  ", row)
    ratio = theirs["seconds"] / ours["seconds"]
    print(f"time in process: evalframe {ours['seconds']:.2f} s, reference {theirs['seconds']:.2f} s ({ratio:.1f}×); "
          f"peak RSS evalframe {ours['peak_rss_mb']:.0f} MB, reference {theirs['peak_rss_mb']:.0f} MB")
    return 1 if differ or missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["make", "evalframe", "reference", "compare"])
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    if args.mode == "make":
        make(args.samples)
    elif args.mode == "evalframe":
        run_evalframe(args.samples)
    elif args.mode == "reference":
        run_reference(args.samples)
    else:
        return compare(args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
