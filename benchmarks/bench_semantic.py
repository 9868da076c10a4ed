"""Model-backed RAG metrics benchmark (issue 26 part 8), both sides timed in the same run.

    python benchmarks/bench_semantic.py embeddings [--pairs 10000]   # embedding_similarity vs the per-pair loop
    python benchmarks/bench_semantic.py judge [--prompts 1000]       # the LLM judge against a 50 ms fake server
    python benchmarks/bench_semantic.py all

**Embeddings.** ``N`` (response, reference) pairs (default 10,000) over ``N/50`` distinct
references and ``N/5`` distinct responses (many systems give the same answer to the same question): evalframe's
``embedding_similarity`` (``ef.evaluate`` on the bundled all-MiniLM-L6-v2: each unique text
encoded once, in batches) against the loop a user writes, ``model.encode([response, reference])``
and a cosine per pair. Both use the same loaded model (warmed up first); the values must agree
(1e-5: a text encoded alone or in a padded batch differs in the last float32 bits). Target ≥ 5×.

**Judge.** ``M`` prompts (default 1,000) to :class:`evalframe.OpenAICompatibleCritic` through
``ef.evaluate(..., metrics=[ef.LLMFaithfulnessScore(critic)])`` against the fake chat completions
server of the tests (``tests/fake_openai.py``) answering after 50 ms, 8 requests in flight:
target well under 20 s (``M × 50 ms`` in sequence would be 50 s); then the same evaluation with a
new critic on the same cache file: zero calls, target under 1 s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

WORDS = ("plan price refund window account menu invoice date billing cycle student family basic plus monthly "
         "support page help days weeks euros fee late card transfer bank password reset login email").split()


def _sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(length)).capitalize() + "."


def _rag_file(folder: Path, pairs: list[tuple[str, str]]) -> Path:
    path = folder / "pairs.jsonl"
    with path.open("w") as out:
        for i, (response, reference) in enumerate(pairs):
            out.write(json.dumps({"sample_id": f"q{i:06d}", "system": "s", "query": "q", "reference_answer": reference,
                                  "response": response,
                                  "retrieved": [{"doc_id": "d", "text": reference, "score": 1.0, "rank": 1}]}) + "\n")
    return path


def bench_embeddings(n_pairs: int) -> dict:
    import polars as pl

    import evalframe as ef
    from evalframe.semantic.models import model_directory, sentence_model

    rng = random.Random(0)
    # The shape of 10,000 pairs at any size: a distinct reference per 50 pairs, a response per 5.
    references = [_sentence(rng, rng.randint(6, 14)) for _ in range(max(1, n_pairs // 50))]
    responses = [_sentence(rng, rng.randint(4, 12)) for _ in range(max(1, n_pairs // 5))]
    pairs = [(rng.choice(responses), rng.choice(references)) for _ in range(n_pairs)]
    model = sentence_model(model_directory(None))
    model.encode(["warm up"])
    with tempfile.TemporaryDirectory() as folder:
        tables = ef.read_rag(_rag_file(Path(folder), pairs))
        start = time.perf_counter()
        ev = ef.evaluate(tables, metrics=["embedding_similarity"])
        evalframe_seconds = time.perf_counter() - start
    values = ev.per_query.filter(pl.col("metric") == "embedding_similarity").sort("query_id")["value"].to_numpy()

    start = time.perf_counter()
    loop = []
    for response, reference in pairs:
        a, b = model.encode([response, reference])
        loop.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    loop_seconds = time.perf_counter() - start
    difference = float(np.max(np.abs(values - np.array(loop))))
    assert difference < 1e-5, f"values differ by {difference}"
    return {"pairs": n_pairs, "unique_texts": len({t for p in pairs for t in p}), "evalframe_s": round(evalframe_seconds, 2),
            "loop_s": round(loop_seconds, 2), "speedup": round(loop_seconds / evalframe_seconds, 1), "max_abs_difference": difference}


def bench_judge(n_prompts: int) -> dict:
    import evalframe as ef
    from fake_openai import FakeOpenAI

    rng = random.Random(1)
    pairs = [(_sentence(rng, 8) + f" #{i}", _sentence(rng, 10)) for i in range(n_prompts)]
    with tempfile.TemporaryDirectory() as folder, FakeOpenAI(latency=0.05) as server:
        tables = ef.read_rag(_rag_file(Path(folder), pairs))
        cache = Path(folder) / "judge_cache.parquet"
        critic = ef.OpenAICompatibleCritic("bench-judge", base_url=server.url, api_key="unused", cache=cache, max_concurrency=8)
        start = time.perf_counter()
        first = ef.evaluate(tables, metrics=[ef.LLMFaithfulnessScore(critic)])
        live_seconds = time.perf_counter() - start
        calls = server.calls
        again = ef.OpenAICompatibleCritic("bench-judge", base_url=server.url, api_key="unused", cache=cache, max_concurrency=8)
        start = time.perf_counter()
        second = ef.evaluate(tables, metrics=[ef.LLMFaithfulnessScore(again)])
        cached_seconds = time.perf_counter() - start
        assert server.calls == calls == n_prompts, (server.calls, calls)
        assert first.summary["value"].to_list() == second.summary["value"].to_list()
    return {"prompts": n_prompts, "latency_ms": 50, "in_flight": 8, "max_in_flight_seen": server.max_in_flight,
            "live_s": round(live_seconds, 2), "sequential_floor_s": round(n_prompts * 0.05, 1),
            "cached_rerun_s": round(cached_seconds, 2), "cached_rerun_calls": server.calls - calls}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("embeddings", "judge", "all"))
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=1_000)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for both sides (default 1: on a shared 2-core machine two OpenMP threads "
                             "spin against the other processes and every figure collapses)")
    args = parser.parse_args(argv)
    # Before torch is imported: the limit then holds in every thread (Polars calls the encoder from its own).
    import os

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.part in ("judge", "all"):
        print(json.dumps({"judge": bench_judge(args.prompts)}))
    if args.part in ("embeddings", "all"):
        print(json.dumps({"embeddings": bench_embeddings(args.pairs)}))


if __name__ == "__main__":
    main()
