"""Make the legal sample files: a gold file in score.py's format and two systems' predictions.

Run ``python data_samples/legal/make_legal_samples.py`` (from anywhere); it rewrites, next to
itself,

- ``gold.json``: ``{"tests": [...]}``, 48 tests over the four LegalBench-RAG benchmarks
  (contractnli, cuad, maud, privacy_qa; 12 each), each with 1-3 gold snippets (``file_path``,
  ``span``, ``answer``) cut from synthetic contracts;
- ``predictions_weak.json``: a weak system's ranked passages as plain strings (score.py's
  format), 10 per query, one gold test left without a prediction;
- ``predictions_better.json``: a better system's passages as LegalBench-RAG objects
  (``text``, ``file_path``, ``span``), 10 per query, so the span metrics apply.

The contracts are sentences drawn from clause templates; a passage is a window of characters of
a contract (the better system's windows fall on or near the gold spans more often, some cover
a gold answer whole, some only part of it, some repeat it so that nDCG exceeds 1). Everything
comes from one ``random.Random(SEED)`` stream: the same command writes byte-identical files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED = 20261122
HERE = Path(__file__).resolve().parent
BENCHMARKS = ("contractnli", "cuad", "maud", "privacy_qa")
TESTS_PER_BENCHMARK = 12
PASSAGES = 10

PARTIES = ["Acme Corp.", "Borealis Ltd.", "Cobalt Holdings LLC", "Delta-Pharma Inc.", "Evergreen Partners LP",
           "Fulcrum Media S.A.", "Granite Bank N.A.", "Helios Energy plc"]
SUBJECTS = ["The Receiving Party", "The Company", "Each Party", "The Licensee", "The Buyer", "The Service Provider",
            "The Disclosing Party", "Parent", "The Seller"]
VERBS = ["shall not disclose", "shall promptly return", "may terminate", "shall indemnify", "shall use reasonable efforts to protect",
         "shall not assign", "shall maintain insurance covering", "may audit", "shall deliver written notice of"]
OBJECTS = ["any Confidential Information", "all proprietary rights", "this Agreement", "the Licensed Technology",
           "the Merger Consideration", "personal data of users", "the Escrow Amount", "any third-party claims",
           "the records described in Section 4.2"]
TAILS = ["within thirty (30) days after the Effective Date", "without the prior written consent of the other Party",
         "to the extent permitted by applicable law", "for a period of five (5) years", "except as set forth in Exhibit B",
         "upon a Change of Control", "in accordance with Section 12.3", "at its sole cost and expense"]
QUESTIONS = {
    "contractnli": "Consider the Non-Disclosure Agreement between {a} and {b}; does it state that {s} {v} {o}?",
    "cuad": "In the agreement between {a} and {b}, which clause says {s} {v} {o}?",
    "maud": "In the merger agreement of {a} and {b}, what does it say about how {s} {v} {o}?",
    "privacy_qa": "Does the privacy policy of {a} say that {s} {v} {o}?",
}


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."


def document(rng: random.Random, n_sentences: int) -> tuple[str, list[tuple[int, int]]]:
    """Text of a contract and the [start, end) of each sentence."""
    parts, spans, at = [], [], 0
    for i in range(n_sentences):
        text = sentence(rng)
        if i and i % 5 == 0:
            text = f"Section {i // 5}.{rng.randint(1, 9)} {text}"
        spans.append((at, at + len(text)))
        parts.append(text)
        at += len(text) + 1
    return " ".join(parts), spans


def window(rng: random.Random, doc: str, spans: list[tuple[int, int]], target: tuple[int, int] | None, mode: str) -> tuple[int, int]:
    """A passage's [start, end): exactly a sentence span, a span with context, part of it, or a random one."""
    if target is None or mode == "random":
        start, end = rng.choice(spans)
        return start, min(len(doc), end + rng.choice([0, 0, 40]))
    start, end = target
    if mode == "exact":
        return start, end
    if mode == "superset":
        return max(0, start - rng.randint(5, 60)), min(len(doc), end + rng.randint(5, 60))
    # part of it: a prefix or suffix of the answer
    cut = rng.randint((end - start) // 3, 2 * (end - start) // 3)
    return (start, start + cut) if rng.random() < 0.5 else (start + cut, end)


def make() -> dict[str, object]:
    rng = random.Random(SEED)
    tests, weak, better = [], [], []
    for benchmark in BENCHMARKS:
        for number in range(TESTS_PER_BENCHMARK):
            file_path = f"{benchmark}/{benchmark}_{number:03d}.txt"
            doc, spans = document(rng, rng.randint(12, 24))
            gold_spans = rng.sample(spans[1:], rng.choice([1, 1, 2, 3]))
            if rng.random() < 0.15:  # a longer answer: two consecutive sentences
                start, end = gold_spans[0]
                following = [s for s in spans if s[0] > end]
                if following:
                    gold_spans[0] = (start, following[0][1])
            a, b = rng.sample(PARTIES, 2)
            anchor = doc[gold_spans[0][0]:gold_spans[0][1]].split(" ")
            query = QUESTIONS[benchmark].format(a=a, b=b, s=" ".join(anchor[:2]), v=" ".join(anchor[2:5]), o="…")
            query = f"{query} [{file_path}]"
            snippets = [{"file_path": file_path, "span": [s, e], "answer": doc[s:e]} for s, e in gold_spans]
            tests.append({"query": query, "snippets": snippets})

            for skill, ordered, out in ((0.06, 0.0, weak), (0.25, 0.6, better)):
                drawn = []
                for _ in range(PASSAGES):
                    target = rng.choice(gold_spans) if rng.random() < skill else None
                    mode = rng.choices(["exact", "superset", "part", "random"], [3, 3, 2, 1])[0]
                    start, end = window(rng, doc, spans, target, mode)
                    drawn.append((target is None, {"text": doc[start:end], "file_path": file_path, "span": [start, end]}))
                if rng.random() < ordered:  # the better system often ranks its on-target passages first
                    drawn.sort(key=lambda pair: pair[0])
                passages = [passage for _, passage in drawn]
                if rng.random() < 0.1:  # case and whitespace variants of a passage
                    passages[0]["text"] = f"  {passages[0]['text'].upper()} "
                out.append({"query": query, "passages": passages})
    weak_file = [{"query": p["query"], "retrieved_passages": [x["text"] for x in p["passages"]]} for p in weak[1:]]
    better_file = [{"query": p["query"], "retrieved_passages": p["passages"]} for p in better]
    return {"gold.json": {"tests": tests}, "predictions_weak.json": weak_file, "predictions_better.json": better_file}


def main() -> None:
    for name, content in make().items():
        (HERE / name).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
