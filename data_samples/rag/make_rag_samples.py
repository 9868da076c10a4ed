"""Make the RAG sample of issue 23: ``data_samples/rag/`` (seed 000's inputs, two systems).

Run ``python data_samples/rag/make_rag_samples.py`` (from anywhere; about a second). It rewrites

- ``rag_outputs.jsonl``: one record per (sample, system) in the one-file form, flat nesting;
- ``samples.jsonl`` and ``outputs.jsonl``: the same data in the two-file form (the evaluation
  samples once, the systems' outputs joined on ``sample_id``), in seed 000's own nesting
  (``reference_answer: {"text"}``, ``response: {"text"}``, ``retrieved: [{"doc": {...}, ...}]``).

Everything comes from ``random.Random(SEED)`` and ``numpy.random.default_rng(SEED)``, so the
same command writes byte-identical files. The data are synthetic:

- 200 original questions over four topics (billing, shipping, account, product), each with a
  fact document (grade 2), a related document (grade 1) and distractors; 40 paraphrase and 30
  typo variants of original questions, 15 counterfactual variants (the question changes one
  detail; the right answer stays) and 15 unanswerable questions (no relevant document, no
  reference answer): 300 samples;
- two systems: ``bm25`` (lexical retrieval, extractive answers that often add or drop words,
  answers unanswerable questions) and ``hybrid`` (better ranking, closer answers, refuses more
  often when nothing relevant was found; slower);
- each retrieved document has an 8-dimensional embedding (documents of one topic point the
  same way), ``timings`` ``end_to_end`` and ``retrieval`` in seconds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

SEED = 20260123
HERE = Path(__file__).resolve().parent
TOPICS = {
    "billing": ["refund window", "invoice date", "late fee", "payment method", "billing cycle"],
    "shipping": ["delivery time", "tracking number", "return label", "shipping cost", "pickup point"],
    "account": ["password reset", "two factor login", "account deletion", "email change", "data export"],
    "product": ["battery life", "warranty period", "screen size", "water resistance", "charging port"],
}
PLANS = ["basic", "plus", "premium", "family", "business", "student", "trial", "enterprise", "annual", "monthly"]
VALUES = ["14 days", "30 days", "45 days", "two weeks", "five working days", "the first of the month",
          "a credit card or PayPal", "12 months", "24 months", "six hours", "the settings page", "USB-C",
          "free above 50 euros", "3.5 euros", "48 hours", "the account menu", "an email link", "IP68"]
REFUSAL = "I don't know, the documents do not say."
SYSTEMS = ("bm25", "hybrid")
DIM = 8


def typo(text: str, rng: random.Random) -> str:
    """The text with two neighbouring letters of two words swapped."""
    words = text.split()
    for _ in range(2):
        i = rng.randrange(len(words))
        word = words[i]
        if len(word) > 3:
            j = rng.randrange(len(word) - 1)
            words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:]
    return " ".join(words)


def main() -> None:
    rng = random.Random(SEED)
    nrng = np.random.default_rng(SEED)
    topic_axis = {topic: nrng.normal(size=DIM) for topic in TOPICS}

    def embedding(topic: str) -> list[float]:
        vector = topic_axis[topic] + nrng.normal(scale=0.8, size=DIM)
        return [round(float(x), 4) for x in vector / np.linalg.norm(vector)]

    # Documents and original questions.
    samples, documents = [], {}
    for q in range(200):
        topic = list(TOPICS)[q % 4]
        subject = TOPICS[topic][(q // 4) % 5]
        plan = PLANS[(q // 20) % 10]
        value = rng.choice(VALUES)
        fact, related = f"d{q:03d}a", f"d{q:03d}b"
        documents[fact] = (topic, f"For the {plan} plan the {subject} is {value}.")
        documents[related] = (topic, f"The {subject} of other plans is explained on the help pages.")
        samples.append({
            "sample_id": f"q{q:03d}", "query": f"What is the {subject} for the {plan} plan?",
            "reference_answer": f"The {subject} is {value}.", "relevant_docs": [(fact, 2), (related, 1)],
            "labels": {"scenario": "original", "topic": topic}, "value": value,
        })
    originals = list(samples)
    for position, scenario in [(0, "paraphrase")] * 40 + [(1, "typo")] * 30 + [(2, "counterfactual")] * 15:
        parent = rng.choice(originals)
        subject_plan = parent["query"][len("What is the "):-1]
        query = {"paraphrase": f"Could you tell me the {subject_plan}?",
                 "typo": typo(parent["query"], rng),
                 "counterfactual": f"If I had upgraded last week, what would the {subject_plan} be?"}[scenario]
        samples.append({
            "sample_id": f"q{len(samples):03d}", "query": query, "reference_answer": parent["reference_answer"],
            "relevant_docs": parent["relevant_docs"], "value": parent["value"],
            "labels": {"scenario": scenario, "topic": parent["labels"]["topic"], "variant_of": parent["sample_id"]},
        })
    for u in range(15):
        topic = list(TOPICS)[u % 4]
        samples.append({
            "sample_id": f"q{len(samples):03d}", "query": f"What is the {rng.choice(TOPICS[topic])} on Mars?",
            "reference_answer": None, "relevant_docs": [], "value": None,
            "labels": {"scenario": "unanswerable", "topic": topic},
        })
    embeddings = {doc: embedding(topic) for doc, (topic, _) in documents.items()}
    doc_ids = sorted(documents)

    # System outputs.
    records = []
    for sample in samples:
        scenario = sample["labels"]["scenario"]
        noisy = scenario in ("paraphrase", "typo")
        for system in SYSTEMS:
            strong = system == "hybrid"
            gold = [doc for doc, _ in sample["relevant_docs"]]
            pool = [d for d in doc_ids if d not in gold and documents[d][0] == sample["labels"]["topic"]]
            retrieved = rng.sample(pool, 10)
            found = rng.random() < (0.85 if strong else 0.65) - (0.15 if noisy else 0.0)
            if gold and found:
                retrieved[rng.randrange(0, 2 if strong else 5)] = gold[0]
                if rng.random() < (0.6 if strong else 0.4):
                    retrieved[rng.randrange(2, 10)] = gold[1]
            scores = sorted((round(rng.uniform(0.2, 0.95), 4) for _ in retrieved), reverse=True)
            if sample["value"] is None:
                refuses = rng.random() < (0.7 if strong else 0.3)
                response = REFUSAL if refuses else f"The answer is {rng.choice(VALUES)}."
            elif not found and rng.random() < (0.6 if strong else 0.2):
                response = REFUSAL
            else:
                right = found and rng.random() < (0.85 if strong else 0.7)
                value = sample["value"] if right else rng.choice(VALUES)
                subject = sample["reference_answer"][len("The "):].split(" is ")[0]
                response = rng.choice([f"The {subject} is {value}.", f"{value}", f"It is {value} for your plan.",
                                       f"According to the help pages the {subject} is {value}."])
            retrieval = round(rng.uniform(0.05, 0.2) * (2.0 if strong else 1.0), 4)
            end_to_end = round(retrieval + rng.lognormvariate(0.0, 0.4) * (1.2 if strong else 1.0), 4)
            records.append({
                "sample_id": sample["sample_id"], "system": system, "query": sample["query"],
                "reference_answer": sample["reference_answer"],
                "relevant_docs": [{"doc_id": d, "text": documents[d][1], "relevance": g} for d, g in sample["relevant_docs"]],
                "retrieved": [{"doc_id": d, "text": documents[d][1], "score": s, "rank": r, "embedding": embeddings[d]}
                              for r, (d, s) in enumerate(zip(retrieved, scores, strict=True), start=1)],
                "response": response, "timings": {"end_to_end": end_to_end, "retrieval": retrieval},
                "labels": sample["labels"],
            })

    def write(name: str, rows: list[dict]) -> None:
        with (HERE / name).open("w") as handle:
            handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)

    write("rag_outputs.jsonl", records)
    write("samples.jsonl", [
        {"sample_id": r["sample_id"], "query": r["query"],
         "reference_answer": None if r["reference_answer"] is None else {"text": r["reference_answer"]},
         "relevant_docs": [{"doc_id": d["doc_id"], "text": d["text"], "metadata": {"relevance": d["relevance"]}}
                           for d in r["relevant_docs"]],
         "labels": r["labels"]}
        for r in records if r["system"] == SYSTEMS[0]
    ])
    write("outputs.jsonl", [
        {"sample_id": r["sample_id"], "system": r["system"], "response": {"text": r["response"]},
         "retrieved": [{"doc": {"doc_id": d["doc_id"], "text": d["text"], "metadata": {"embedding": d["embedding"]}},
                        "score": d["score"], "rank": d["rank"]} for d in r["retrieved"]],
         "timings": r["timings"]}
        for r in records
    ])
    print(f"wrote {len(records)} records ({len(samples)} samples × {len(SYSTEMS)} systems) to {HERE}")


if __name__ == "__main__":
    main()
