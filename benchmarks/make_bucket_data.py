"""Generate the out-of-core benchmark's data (issue 27 part 5a, ``bench_buckets.py``).

``--queries`` queries × ``--candidates`` ranked documents each (the issue's full size is
10,000,000 × 20 = 200 M ranking rows), written in chunks so that generating never holds more
than one chunk:

- ``run/part-00000.parquet`` …: ``system, query_id, doc_id, score`` (one system);
- ``qrels.parquet``: ``query_id, doc_id, relevance`` (5 judged documents per query, grades 0–2,
  about half of them among the query's candidates);
- ``queries.parquet``: ``system, query_id, topic`` (``topic``: the benchmark's slice, 10 values).

Deterministic (``--seed``). Usage::

    python benchmarks/make_bucket_data.py --queries 1000000 --out /tmp/bucket-data-1m
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

CHUNK = 250_000
JUDGED = 5
DOCS = 1_000


def chunk_tables(start: int, stop: int, candidates: int, rng: np.random.Generator) -> tuple[pl.DataFrame, pl.DataFrame]:
    n = stop - start
    ids = pl.Series("query_id", np.arange(start, stop)).cast(pl.String)
    query_id = ("q" + ids.str.zfill(8)).alias("query_id")
    # candidates per query: distinct documents (a random offset and stride modulo DOCS)
    offset = rng.integers(0, DOCS, size=n)
    stride = rng.choice([1, 3, 7, 9, 11, 13], size=n)
    docs = (offset[:, None] + stride[:, None] * np.arange(candidates)[None, :]) % DOCS
    run = pl.DataFrame({
        "system": pl.Series(["bm25"] * (n * candidates), dtype=pl.String),
        "query_id": query_id.gather(np.repeat(np.arange(n), candidates)),
        "doc_id": pl.Series(docs.reshape(-1)).cast(pl.String),
        "score": np.round(rng.random(n * candidates), 4),
    })
    # judged: half from the candidates (positions 0..candidates-1), half from elsewhere
    judged_pos = rng.integers(0, 2 * candidates, size=(n, JUDGED))
    judged = np.where(judged_pos < candidates,
                      (offset[:, None] + stride[:, None] * judged_pos) % DOCS,
                      (offset[:, None] + 500 + judged_pos) % DOCS)
    qrels = pl.DataFrame({
        "query_id": query_id.gather(np.repeat(np.arange(n), JUDGED)),
        "doc_id": pl.Series(judged.reshape(-1)).cast(pl.String),
        "relevance": rng.integers(0, 3, size=n * JUDGED),
    }).unique(["query_id", "doc_id"], keep="first", maintain_order=True)
    return run, qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    (args.out / "run").mkdir(parents=True, exist_ok=True)
    qrels_parts, queries_parts = [], []
    for number, start in enumerate(range(0, args.queries, CHUNK)):
        stop = min(args.queries, start + CHUNK)
        run, qrels = chunk_tables(start, stop, args.candidates, rng)
        run.write_parquet(args.out / "run" / f"part-{number:05d}.parquet", row_group_size=1_000_000)
        qrels_parts.append(qrels)
        queries_parts.append(run.select("system", "query_id").unique(maintain_order=True).with_columns(
            topic=(pl.col("query_id").str.slice(1).cast(pl.Int64) * 7919 % 10).cast(pl.Int64)))
        print(f"queries {start:,}–{stop:,} written", flush=True)
    pl.concat(qrels_parts).write_parquet(args.out / "qrels.parquet")
    pl.concat(queries_parts).write_parquet(args.out / "queries.parquet")
    print(f"wrote {args.out}: {args.queries:,} queries × {args.candidates} candidates")


if __name__ == "__main__":
    main()
