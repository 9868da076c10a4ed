"""Embedding benchmark (issue 24): evalframe vs a plain NumPy script vs the chapter's code as written.

    .venv/bin/python benchmarks/bench_embeddings.py                       # 200,000 × 384; 10,000 queries
    .venv/bin/python benchmarks/bench_embeddings.py --docs 20000 --queries 1000   # a quick look
    ... --chapter-python /path/to/python-with-torch                         # also the chapter's code

Two tasks, each side in its own fresh process (so one side's memory never counts for another):

- **intrinsic**: isotropy, cosine mean, alignment (pairs within 100 labels), uniformity (a seeded
  sample of 1,000,000 pairs: 2·10¹⁰ pairs are past any budget), dimension collapse of
  ``docs × dim`` float32 vectors.
- **knn**: exact top-100 cosine retrieval of ``queries`` query vectors over the ``docs`` corpus,
  then recall@10, nDCG@10 and MRR against qrels of 1–5 relevant documents per query.

The sides:

- *evalframe*: ``ef.embedding_quality`` (no bootstrap) / ``ef.knn_run`` + ``ef.evaluate``;
- *numpy*: the same computations written plainly with whole-matrix NumPy (centred copy,
  ``np.linalg.svd`` of it as the chapter does, normalised copies, the sampled pairs in four slices of
  250,000, one 1,000 × n_docs score block at a time with ``argpartition``, metrics on padded
  relevant-id arrays);
- *chapter*: seed 004's functions run as written (``compute_isotropy``,
  ``compute_alignment_uniformity``, ``detect_dimension_collapse``; ``recall_at_k`` of §21.2.1 with
  its single-relevant shape), in a Python with torch, under an address-space cap of 6 GB above what
  the process holds after making the data: an allocation past it fails at once and is reported with
  its size (the machine is shared; an 8 GB score matrix must not actually be taken).

Each side reports the computation's wall time and its peak memory beyond the loaded input
(peak RSS − RSS after the data are made). evalframe's and NumPy's values are checked equal
(relative 1e-4; uniformity on the same seeded pairs is not shared, so it is checked to 0.01).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
K, SAMPLE_PAIRS, LABELS = 100, 1_000_000, 100


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_vectors(docs: int, dim: int, queries: int):
    """Anisotropic float32 vectors (decaying scales per dimension, a shared offset), labels, queries
    near some documents, and their qrels (1–5 relevant documents per query)."""
    rng = np.random.default_rng(24)
    scales = (1.0 / np.sqrt(np.arange(1, dim + 1))).astype(np.float32)
    corpus = rng.standard_normal((docs, dim), dtype=np.float32)
    corpus *= scales
    corpus += np.float32(0.05)
    labels = rng.integers(0, LABELS, docs)
    asked = rng.integers(0, docs, queries)
    query_vectors = corpus[asked] + np.float32(0.5) * rng.standard_normal((queries, dim), dtype=np.float32) * scales
    extra = rng.integers(0, docs, (queries, 4))
    count = rng.integers(0, 5, queries)
    relevant = np.where(np.arange(4)[None, :] < count[:, None], extra, -1)
    relevant = np.concatenate([asked[:, None], relevant], axis=1)  # -1 pads
    return corpus, labels, query_vectors, relevant


# --- the sides ---------------------------------------------------------------------------------
def intrinsic_evalframe(X, labels):
    import evalframe as ef

    table = ef.embedding_quality({"m": X}, labels=labels, bootstrap=None, sample_size=SAMPLE_PAIRS, seed=0)
    return dict(zip(table["metric"], table["value"]))


def intrinsic_numpy(X, labels):
    n, d = X.shape
    Xc = X - X.mean(axis=0)
    cov = (Xc.T @ Xc) / (n - 1)
    lam = np.clip(np.linalg.eigvalsh(cov), 1e-10, None)[::-1]
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    s = U.sum(axis=0, dtype=np.float64)
    out = {"partition_isotropy": lam.min() * d / lam.sum(), "effective_dimensionality": lam.sum() ** 2 / (lam**2).sum(),
           "top_10_variance_ratio": lam[:10].sum() / lam.sum(),
           "avg_cosine_similarity": (s @ s - (U.astype(np.float64) ** 2).sum()) / (n * (n - 1))}
    order = np.lexsort((np.arange(n), labels))
    first, second = [], []
    for label in np.unique(labels):
        members = order[labels[order] == label][:50]
        a, b = np.triu_indices(len(members), k=1)
        first.append(members[a])
        second.append(members[b])
    first, second = np.concatenate(first), np.concatenate(second)
    out["alignment"] = float(((U[first] - U[second]) ** 2).sum(axis=1).mean())
    rng = np.random.default_rng(0)
    i = rng.integers(0, n, SAMPLE_PAIRS)
    j = rng.integers(0, n - 1, SAMPLE_PAIRS)
    j += j >= i
    # In four slices of 250,000 pairs (one slice of 1M pairs would take ~6 GB on a shared machine).
    kernel = [np.exp(-2.0 * ((U[i[s:s + 250_000]] - U[j[s:s + 250_000]]) ** 2).sum(axis=1)) for s in range(0, SAMPLE_PAIRS, 250_000)]
    out["uniformity"] = float(np.log(np.concatenate(kernel).mean()))
    variances = X.var(axis=0, ddof=1)
    sigma = np.linalg.svd(Xc, compute_uv=False)
    p = sigma / sigma.sum()
    out["dead_dimensions"] = int((variances < 0.01).sum())
    out["effective_rank"] = float(np.exp(-(p[p > 0] * np.log(p[p > 0])).sum()))
    out["stable_rank"] = float(sigma.sum() ** 2 / (sigma**2).sum())
    return {key: float(value) for key, value in out.items()}


def knn_evalframe(corpus, queries, relevant):
    import polars as pl

    import evalframe as ef

    run = ef.knn_run(queries, corpus, k=K)
    rows, cols = np.nonzero(relevant >= 0)
    qrels = pl.DataFrame({"query_id": rows.astype(str), "doc_id": relevant[rows, cols].astype(str), "relevance": 1}).unique(
        ["query_id", "doc_id"])
    summary = ef.evaluate(run, qrels, metrics=["recall@10", "ndcg@10", "mrr"]).summary
    return dict(zip(summary["metric"], summary["value"]))


def knn_numpy(corpus, queries, relevant):
    Cn = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    Qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    top = np.empty((len(queries), K), dtype=np.int64)
    for start in range(0, len(queries), 1000):
        scores = Qn[start:start + 1000] @ Cn.T
        part = np.argpartition(-scores, K - 1, axis=1)[:, :K]
        order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
        top[start:start + 1000] = np.take_along_axis(part, order, axis=1)
    # Distinct relevant ids per query (the padded array may repeat one).
    rel = np.sort(relevant, axis=1)
    rel[:, 1:][rel[:, 1:] == rel[:, :-1]] = -1
    n_rel = (rel >= 0).sum(axis=1)
    hit = (top[:, :, None] == rel[:, None, :]).any(axis=2)
    recall = hit[:, :10].sum(axis=1) / n_rel
    discount = 1.0 / np.log2(np.arange(2, 12))
    idcg = np.array([discount[:min(10, m)].sum() for m in n_rel])
    ndcg = (hit[:, :10] * discount).sum(axis=1) / idcg
    first = np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, np.inf)
    return {"recall@10": float(recall.mean()), "ndcg@10": float(ndcg.mean()), "mrr": float((1.0 / first).mean())}


CHAPTER = Path("/work/shared/seeds/004_74b6fe7caf0f042b.txt")


def _chapter_functions() -> dict:
    """The chapter's §21.1 and §21.2.1 functions, as written (their examples left out)."""
    text = CHAPTER.read_text().split("\n") if CHAPTER.exists() else None
    if text is None:
        raise SystemExit(f"the chapter is not at {CHAPTER}")
    namespace: dict = {}
    for start, stop in ((22, 86), (141, 246), (272, 326), (369, 423)):
        exec("\n".join(text[start:stop]), namespace)  # noqa: S102 - the seed's own code, benchmarked as written
    return namespace


def _capped(extra_gb: float) -> None:
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
    limit = vm + int(extra_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def chapter_intrinsic(X, labels):
    import torch

    f = _chapter_functions()
    tensor, label_tensor = torch.from_numpy(X), torch.from_numpy(labels)
    out = {}
    for name, call in (("compute_isotropy", lambda: f["compute_isotropy"](tensor)),
                       ("compute_alignment_uniformity", lambda: f["compute_alignment_uniformity"](tensor, labels=label_tensor)),
                       ("detect_dimension_collapse", lambda: f["detect_dimension_collapse"](tensor))):
        started = time.perf_counter()
        try:
            value = call()
            out[name] = {"seconds": time.perf_counter() - started, "value": {k: v for k, v in value.items() if isinstance(v, float)}}
        except (RuntimeError, MemoryError) as error:
            out[name] = {"seconds": time.perf_counter() - started, "error": str(error).splitlines()[0][:160]}
    return out


def chapter_knn(corpus, queries, relevant):
    import torch

    f = _chapter_functions()
    started = time.perf_counter()
    try:
        value = f["recall_at_k"](torch.from_numpy(queries), torch.from_numpy(corpus), torch.from_numpy(relevant[:, 0]), [10])
        return {"recall_at_k": {"seconds": time.perf_counter() - started, "value": value}}
    except (RuntimeError, MemoryError) as error:
        return {"recall_at_k": {"seconds": time.perf_counter() - started, "error": str(error).splitlines()[0][:160]}}


SIDES = {"intrinsic-evalframe": intrinsic_evalframe, "intrinsic-numpy": intrinsic_numpy, "knn-evalframe": knn_evalframe,
         "knn-numpy": knn_numpy, "intrinsic-chapter": chapter_intrinsic, "knn-chapter": chapter_knn}


def one_side(side: str, docs: int, dim: int, queries: int) -> dict:
    """Run one side in this process: make the data, then time and measure the computation."""
    corpus, labels, query_vectors, relevant = make_vectors(docs, dim, queries)
    # Libraries are imported before the baseline: their memory is not the computation's.
    if side.endswith("chapter"):
        import torch  # noqa: F401

        _capped(6.0)
    elif side.endswith("evalframe"):
        import evalframe as ef

        ef.embedding_quality, ef.knn_run, ef.evaluate  # noqa: B018 - load the lazy modules too
        from evalframe.engine import evaluation, knn  # noqa: F401
        from evalframe.analyses import embedding_quality  # noqa: F401
    baseline = _rss_mb()
    started = time.perf_counter()
    if side.startswith("intrinsic"):
        values = SIDES[side](corpus, labels)
    else:
        values = SIDES[side](corpus, query_vectors, relevant)
    seconds = time.perf_counter() - started
    return {"side": side, "seconds": seconds, "peak_extra_mb": _peak_mb() - baseline, "input_mb": baseline, "values": values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--side", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--chapter-python", help="a Python with torch, for the chapter's code")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_side(args.side, args.docs, args.dim, args.queries)))
        return
    results = {}
    sides = ["intrinsic-evalframe", "intrinsic-numpy", "knn-evalframe", "knn-numpy"]
    if args.chapter_python:
        sides += ["intrinsic-chapter", "knn-chapter"]
    for side in sides:
        python = args.chapter_python if side.endswith("chapter") else sys.executable
        command = [python, str(Path(__file__).resolve()), "--side", side, "--docs", str(args.docs), "--dim", str(args.dim),
                   "--queries", str(args.queries)]
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            results[side] = {"side": side, "failed": done.stderr.strip().splitlines()[-1:] or ["(no message)"]}
        else:
            results[side] = json.loads(done.stdout.strip().splitlines()[-1])
        print(json.dumps(results[side]), flush=True)
    for task in ("intrinsic", "knn"):
        ours, plain = results.get(f"{task}-evalframe", {}), results.get(f"{task}-numpy", {})
        if "values" in ours and "values" in plain:
            for key, value in plain["values"].items():
                tolerance = 0.01 if key == "uniformity" else 1e-4 * max(1.0, abs(value))
                if abs(ours["values"][key] - value) > tolerance:
                    print(f"MISMATCH {task} {key}: evalframe {ours['values'][key]} vs numpy {value}")
            print(f"{task}: evalframe {ours['seconds']:.1f} s, {ours['peak_extra_mb']:.0f} MB; numpy {plain['seconds']:.1f} s, "
                  f"{plain['peak_extra_mb']:.0f} MB; time ratio {ours['seconds'] / plain['seconds']:.2f}, "
                  f"memory ratio {ours['peak_extra_mb'] / max(plain['peak_extra_mb'], 1e-9):.3f}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
