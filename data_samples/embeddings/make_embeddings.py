"""Write the embeddings sample: two models' vectors of one corpus, their queries, and qrels.

    python data_samples/embeddings/make_embeddings.py     # any folder; about a second

Everything comes from ``numpy.random.default_rng(2024)``: the same command rewrites
byte-identical files. The corpus is 2,000 documents in 20 topics (``label``); each document has
a latent meaning (its topic's centre plus its own variation, 64 latent dimensions). Two
embedding models map the meanings to 64 dimensions:

- ``healthy``: a random rotation of the meaning (all 64 dimensions used) plus a little isotropic
  noise: spread over the sphere, topics tight, near-zero mean cosine;
- ``collapsed``: the meaning squeezed into 6 dimensions (the first carries most of it), a large
  shared offset (every vector points the same way: a high mean cosine) and 0.01-scale noise in the
  other 58 (dead dimensions) — the anisotropic, collapsed space of the chapter's warnings.

200 queries each paraphrase one document (its meaning plus noise), embedded by each model.
``qrels.txt`` (TREC) judges the paraphrased document 2 and three other documents of its topic 1.

Files: ``corpus.parquet`` (id, vector, label, model; 4,000 rows), ``queries.parquet`` (id,
vector, label — the topic of the paraphrased document —, model; 400 rows), ``qrels.txt``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
N_DOCS, N_TOPICS, N_QUERIES, LATENT, DIM = 2000, 20, 200, 64, 64


def _healthy(meaning: np.ndarray, rotation: np.ndarray, noise: np.ndarray) -> np.ndarray:
    return meaning @ rotation + 0.15 * noise


def _collapsed(meaning: np.ndarray, squeeze: np.ndarray, offset: np.ndarray, noise: np.ndarray) -> np.ndarray:
    out = 0.01 * noise
    out[:, :6] = meaning @ squeeze
    return out + offset


def main() -> None:
    rng = np.random.default_rng(2024)
    centres = 0.7 * rng.normal(size=(N_TOPICS, LATENT))
    topics = rng.integers(0, N_TOPICS, size=N_DOCS)
    meaning = centres[topics] + 0.55 * rng.normal(size=(N_DOCS, LATENT))
    rotation = np.linalg.qr(rng.normal(size=(DIM, DIM)))[0]  # a random rotation of R^64
    squeeze = rng.normal(size=(LATENT, 6)) * np.array([4.0, 1.0, 0.8, 0.6, 0.4, 0.3])
    offset = np.zeros(DIM)
    offset[:6] = 12.0
    offset[6:] = rng.normal(scale=0.05, size=DIM - 6)

    asked = rng.choice(N_DOCS, size=N_QUERIES, replace=False)
    query_meaning = meaning[asked] + 0.35 * rng.normal(size=(N_QUERIES, LATENT))
    models = {
        "healthy": (_healthy(meaning, rotation, rng.normal(size=(N_DOCS, DIM))),
                    _healthy(query_meaning, rotation, rng.normal(size=(N_QUERIES, DIM)))),
        "collapsed": (_collapsed(meaning, squeeze, offset, rng.normal(size=(N_DOCS, DIM))),
                      _collapsed(query_meaning, squeeze, offset, rng.normal(size=(N_QUERIES, DIM)))),
    }
    doc_ids = [f"d{i:04d}" for i in range(N_DOCS)]
    query_ids = [f"q{i:03d}" for i in range(N_QUERIES)]
    corpus = pl.concat([
        pl.DataFrame({"id": doc_ids, "vector": docs.astype(np.float32), "label": [f"topic_{t:02d}" for t in topics],
                      "model": name}) for name, (docs, _) in models.items()])
    queries = pl.concat([
        pl.DataFrame({"id": query_ids, "vector": asked_vectors.astype(np.float32),
                      "label": [f"topic_{t:02d}" for t in topics[asked]], "model": name})
        for name, (_, asked_vectors) in models.items()])
    corpus = corpus.with_columns(pl.col("vector").arr.to_list())
    queries = queries.with_columns(pl.col("vector").arr.to_list())
    corpus.write_parquet(HERE / "corpus.parquet", statistics=False)
    queries.write_parquet(HERE / "queries.parquet", statistics=False)

    lines = []
    for query_id, doc in zip(query_ids, asked):
        same_topic = np.flatnonzero(topics == topics[doc])
        others = rng.choice(same_topic[same_topic != doc], size=3, replace=False)
        lines.append(f"{query_id} 0 {doc_ids[doc]} 2")
        lines += [f"{query_id} 0 {doc_ids[other]} 1" for other in sorted(others)]
    (HERE / "qrels.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
