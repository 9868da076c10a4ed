"""Make the gold-set sample: a baseline and a candidate retriever's results on one gold set.

Shaped like the gating decision record's gold set (seed 002, ADR-001): about 1,000 tier-A and
400 tier-B cases, binary relevance, task-type tags (a case has one or two). The candidate is a
little better overall but regresses on one tag (`multi_hop`), which is what the PR comment's
tag-level breakdown is for. Run from the repository root:

    python data_samples/gold_set/make_gold_set.py

The same seed gives the same bytes. Model: each gold chunk of a case lands at rank
``ceil(log(1 - u) / log(1 - p))`` (a geometric rank; beyond 10 it is not retrieved), where ``u``
is one uniform draw per gold chunk shared by both systems (the runs are paired, as two
retrievers on one gold set are) and ``p`` depends on the case's tier, its hardest tag and the
system; distractor chunks fill the other places of the top 10.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

SEED = 20240213
HERE = Path(__file__).resolve().parent
DEPTH = 10
TIERS = {"A": 1000, "B": 400}
#: Task-type tags, how often each is a case's first tag, and the per-tag chance ``p`` that a gold
#: chunk is found at each next rank (higher: easier), for the baseline and the candidate.
TAGS = {
    #            share  baseline  candidate
    "lookup":     (0.36, 0.42, 0.47),
    "definition": (0.20, 0.38, 0.43),
    "numeric":    (0.16, 0.32, 0.36),
    "comparison": (0.14, 0.29, 0.33),
    "multi_hop":  (0.14, 0.28, 0.22),   # the candidate's regression
}
#: Tier B cases are harder (longer documents, rarer topics).
TIER_FACTOR = {"A": 1.0, "B": 0.85}
SECOND_TAG = 0.35  # share of cases with a second tag


def main() -> None:
    rng = np.random.default_rng(SEED)
    names = list(TAGS)
    shares = np.array([TAGS[name][0] for name in names])
    cases = []
    for tier, count in TIERS.items():
        for index in range(count):
            first = names[rng.choice(len(names), p=shares / shares.sum())]
            tags = [first]
            if rng.random() < SECOND_TAG:
                tags.append(names[rng.choice(len(names), p=shares / shares.sum())])
            tags = list(dict.fromkeys(tags))
            document = f"doc{rng.integers(1, 4000):04d}"
            n_gold = int(rng.choice([1, 1, 1, 2, 2, 3]))
            gold = [f"{document}#c{c}" for c in rng.choice(40, size=n_gold, replace=False)]
            draws = rng.random(n_gold)
            distractors = [f"doc{rng.integers(1, 4000):04d}#c{rng.integers(0, 40)}" for _ in range(3 * DEPTH)]
            cases.append({"query_id": f"{tier}-{index + 1:04d}", "tier": tier, "tags": tags, "gold": gold,
                          "draws": draws, "distractors": distractors})
    for column, system in ((1, "baseline"), (2, "candidate")):
        lines = []
        for case in cases:
            p = min(TAGS[tag][column] for tag in case["tags"]) * TIER_FACTOR[case["tier"]]
            ranked = _ranking(case, p)
            # Tags as a list when a case has several, as one string when it has one: both spellings occur.
            tags = case["tags"] if len(case["tags"]) > 1 else case["tags"][0]
            lines.append(json.dumps({"query_id": case["query_id"], "retrieved_ids": ranked, "gold_ids": case["gold"],
                                     "tags": tags, "tier": case["tier"], "system": system}))
        (HERE / f"{system}.jsonl").write_text("\n".join(lines) + "\n")


def _ranking(case: dict, p: float) -> list[str]:
    """The top 10: each gold chunk at its geometric rank (the next free place), distractors elsewhere."""
    places: dict[int, str] = {}
    for chunk, u in zip(case["gold"], case["draws"], strict=True):
        rank = max(1, math.ceil(math.log1p(-u) / math.log1p(-p)))
        while rank in places:
            rank += 1
        if rank <= DEPTH:
            places[rank] = chunk
    fill = (d for d in case["distractors"] if d not in case["gold"])
    ranked = []
    for rank in range(1, DEPTH + 1):
        item = places.get(rank) or next(fill)
        while item in ranked:
            item = next(fill)
        ranked.append(item)
    return ranked


if __name__ == "__main__":
    main()
