"""Exact nearest-neighbour retrieval from embeddings into a ranking table (seed 004 §21.2, §21.6.2).

:func:`knn_run` scores every query against every corpus vector (cosine or dot product) and keeps
each query's top k, exactly, in memory bounded by one score tile: queries and corpus are cut into
blocks and a tile ``Q_block · C_blockᵀ`` (at most ``tile_cells`` scores) is all that is held at
once, never the n_queries × n_corpus matrix. Each query keeps its best k so far; in later corpus
blocks only the scores at or above its current k-th best are candidates (a comparison, not a
partition), so most of the corpus is passed over after one matrix product.

**Ties** follow the engine's ranking rule (:mod:`evalframe.engine.ranking`): score descending,
then ``doc_id`` descending (byte-wise), both for the order within the top k and for which of
several equal scores at the k-th place enter it. The output's ``rank`` is that order, so the
engine ranks it exactly as it would rank the scores alone.

The result is the ``ranking`` table (``system, query_id, doc_id, rank, score``): every ranking
metric, slice, bootstrap CI and :func:`evalframe.compare` applies unchanged. Several models give
several systems (:func:`knn_run` with mappings). :func:`relevance_judgments` turns the chapter's
two relevance shapes (a relevant corpus index per query, or a binary / graded relevance matrix)
into the ``judgments`` table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.io.embeddings import Embeddings, read_embeddings, row_norms

Similarity = Literal["cosine", "dot"]
#: Scores held at once (one tile): 16M float32 scores ≈ 64 MB.
TILE_CELLS = 16_000_000
QUERY_BLOCK = 1024
#: Documents of each query block's first tile (its k-th best score is the first floor).
FIRST_TILE_DOCS = 4096


def _as_embeddings(value, what: str) -> Embeddings:
    if isinstance(value, Embeddings):
        return value
    found = read_embeddings(value, name=what, min_vectors=1)
    if len(found) != 1:
        raise ConfigError(f"{what}: holds {len(found)} models ({', '.join(found)}); pass one model, or mappings "
                          "model → vectors for queries and corpus")
    return next(iter(found.values()))


def knn_run(
    queries,
    corpus,
    k: int = 100,
    metric: Similarity = "cosine",
    *,
    system: str = "default",
    tile_cells: int = TILE_CELLS,
) -> pl.DataFrame:
    """Each query's exact top ``k`` corpus vectors as a ``ranking`` table (module docstring).

    ``queries`` and ``corpus`` are NumPy matrices (ids: row numbers), :class:`Embeddings`, or
    embedding files; or two mappings model → those, which give one system per model (the keys
    must match). ``metric`` is ``"cosine"`` (zero vectors are an error) or ``"dot"``.

    >>> run = knn_run(np.eye(2), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), k=2)
    >>> run.select("query_id", "doc_id", "rank").rows()
    [('0', '0', 1), ('0', '2', 2), ('1', '1', 1), ('1', '2', 2)]
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"knn_run: `k` must be a whole number >= 1, got {k!r}")
    if metric not in ("cosine", "dot"):
        raise ConfigError(f"knn_run: `metric` must be 'cosine' or 'dot', got {metric!r}")
    if isinstance(queries, Mapping) or isinstance(corpus, Mapping):
        if not (isinstance(queries, Mapping) and isinstance(corpus, Mapping)) or set(queries) != set(corpus):
            raise ConfigError("knn_run: with several models, `queries` and `corpus` are both mappings model → vectors "
                              "with the same models")
        return pl.concat([knn_run(queries[name], corpus[name], k, metric, system=str(name), tile_cells=tile_cells)
                          for name in queries])
    query_set, corpus_set = _as_embeddings(queries, "queries"), _as_embeddings(corpus, "corpus")
    if query_set.dim != corpus_set.dim:
        raise InputError(f"{query_set.source}, {corpus_set.source}", Problem(
            None, "vector", f"{query_set.dim} vs {corpus_set.dim}", "queries and corpus have vectors of different lengths"))
    indices, scores = top_k(query_set, corpus_set, k, metric, tile_cells=tile_cells)
    return _ranking(system, query_set.ids, corpus_set.ids, indices, scores)


def tie_keys(ids: pl.Series) -> np.ndarray:
    """Each id's position in descending byte-wise order (0 first): the engine's tie rule."""
    order = ids.arg_sort(descending=True).to_numpy()
    keys = np.empty(order.size, dtype=np.int64)
    keys[order] = np.arange(order.size)
    return keys


def top_k(query_set: Embeddings, corpus_set: Embeddings, k: int, metric: Similarity = "cosine", *,
          tile_cells: int = TILE_CELLS) -> tuple[np.ndarray, np.ndarray]:
    """Row indices into the corpus (n_queries × min(k, n_corpus)) and their scores, best first."""
    Q, C = query_set.vectors, corpus_set.vectors
    dtype = np.result_type(Q.dtype, C.dtype)
    if metric == "cosine":
        doc_scale = _inverse_norms(corpus_set).astype(dtype)
        query_scale = _inverse_norms(query_set).astype(dtype)

    def tile(q0: int, q1: int, d0: int, d1: int) -> np.ndarray:
        block = Q[q0:q1].astype(dtype, copy=False)
        if metric == "cosine":
            block = block * query_scale[q0:q1, None]
        scores = block @ C[d0:d1].astype(dtype, copy=False).T
        if metric == "cosine":
            scores *= doc_scale[None, d0:d1]
        return scores

    return best_of_tiles(tile, Q.shape[0], C.shape[0], k, tie_keys(corpus_set.ids), dtype, tile_cells=tile_cells)


def best_of_tiles(tile, n_queries: int, n_docs: int, k: int, ties: np.ndarray, dtype, *,
                  tile_cells: int = TILE_CELLS) -> tuple[np.ndarray, np.ndarray]:
    """Each query's k best documents from score tiles ``tile(q0, q1, d0, d1)`` (module docstring):
    a running top k per query; a later tile's candidates are the scores at or above the current
    k-th best (ties included, so the tie rule decides who enters)."""
    k = min(k, n_docs)
    query_block = max(1, min(QUERY_BLOCK, n_queries))
    doc_block = max(k, min(n_docs, tile_cells // query_block))
    indices = np.empty((n_queries, k), dtype=np.int64)
    scores = np.empty((n_queries, k), dtype=dtype)
    for q0 in range(0, n_queries, query_block):
        q1 = min(n_queries, q0 + query_block)
        best_index = best_score = None
        # A small first tile gives each query a floor cheaply (a partition of few scores); the
        # later, large tiles are only compared with it.
        first = min(n_docs, max(k, min(doc_block, FIRST_TILE_DOCS)))
        for d0, d1 in [(0, first), *((d, min(n_docs, d + doc_block)) for d in range(first, n_docs, doc_block))]:
            block = tile(q0, q1, d0, d1)
            if best_score is None:
                # The first tile has at least k documents: its k-th best score is the first floor.
                floor = -np.partition(-block, k - 1, axis=1)[:, k - 1] if d1 - d0 > k else block.min(axis=1)
            else:
                floor = best_score[:, k - 1]
            rows, cols = np.nonzero(block >= floor[:, None])
            candidate_scores, candidate_index = block[rows, cols], cols + d0
            if best_score is None:
                best_index, best_score = _best_k(rows, candidate_scores, candidate_index, ties, q1 - q0, k)
                continue
            # Only the queries with a candidate are merged with their current best k.
            touched = np.unique(rows)
            if touched.size == 0:
                continue
            local = np.concatenate([np.repeat(np.arange(touched.size), k), np.searchsorted(touched, rows)])
            merged_scores = np.concatenate([best_score[touched].ravel(), candidate_scores])
            merged_index = np.concatenate([best_index[touched].ravel(), candidate_index])
            best_index[touched], best_score[touched] = _best_k(local, merged_scores, merged_index, ties, touched.size, k)
        indices[q0:q1], scores[q0:q1] = best_index, best_score
    return indices, scores


def score_run(scores, k: int | None = None, *, query_ids=None, doc_ids=None, system: str = "default") -> pl.DataFrame:
    """A ``ranking`` table from a score matrix (n_queries × n_corpus, the chapter's
    ``similarities``): each query's top ``k`` (default: every document), ordered and tie-broken
    as :func:`knn_run`. ``query_ids`` / ``doc_ids`` default to row and column numbers.

    >>> score_run(np.array([[0.1, 0.9, 0.5]]), k=2).select("doc_id", "rank").rows()
    [('1', 1), ('2', 2)]
    """
    matrix = np.asarray(scores)
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.number) or 0 in matrix.shape:
        raise InputError("scores", Problem(None, None, f"shape {matrix.shape}", "must be a non-empty (n_queries × n_corpus) matrix"))
    bad = np.argwhere(~np.isfinite(matrix))
    if bad.size:
        raise InputError("scores", [Problem(f"query {i}, document {j}", None, float(matrix[i, j]), "is not a finite score")
                                    for i, j in bad[:20]])
    n_queries, n_docs = matrix.shape
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"score_run: `k` must be a whole number >= 1, got {k!r}")
    query_ids, doc_ids = _ids(query_ids, n_queries), _ids(doc_ids, n_docs)
    indices, best = best_of_tiles(lambda q0, q1, d0, d1: matrix[q0:q1, d0:d1], n_queries, n_docs, k or n_docs,
                                  tie_keys(doc_ids), matrix.dtype if matrix.dtype.kind == "f" else np.float64)
    return _ranking(system, query_ids, doc_ids, indices, best)


def _ranking(system: str, query_ids: pl.Series, doc_ids: pl.Series, indices: np.ndarray, scores: np.ndarray) -> pl.DataFrame:
    n_queries, width = indices.shape
    query_rows = np.repeat(np.arange(n_queries), width)
    return pl.DataFrame({
        "system": pl.Series([system], dtype=pl.String).gather(np.zeros(query_rows.size, dtype=np.int64)),
        "query_id": query_ids.cast(pl.String).gather(query_rows).rename("query_id"),
        "doc_id": doc_ids.cast(pl.String).gather(indices.ravel()).rename("doc_id"),
        "rank": np.tile(np.arange(1, width + 1, dtype=np.int64), n_queries),
        "score": scores.ravel().astype(np.float64),
    })


def _best_k(rows, scores, index, ties, n_rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the k best candidates by score descending then tie key (doc_id descending)."""
    order = np.lexsort((ties[index], -scores, rows))
    rows, scores, index = rows[order], scores[order], index[order]
    starts = np.searchsorted(rows, np.arange(n_rows))
    take = (starts[:, None] + np.arange(k)[None, :]).ravel()
    return index[take].reshape(n_rows, k), scores[take].reshape(n_rows, k)


def _inverse_norms(embeddings: Embeddings) -> np.ndarray:
    norms = row_norms(embeddings.vectors)
    zero = np.flatnonzero(norms == 0)
    if zero.size:
        problems = [Problem(embeddings.locate(int(i)), "vector", f"id {embeddings.ids[int(i)]}",
                            "is a zero vector (a cosine needs a direction)") for i in zero[:20]]
        if zero.size > 20:
            problems.append(Problem.unlisted("vector", "is a zero vector (a cosine needs a direction)", zero.size - 20))
        raise InputError(embeddings.source, problems, hint='drop the zero vectors, or use metric="dot"')
    return 1.0 / norms


def relevance_judgments(relevance, query_ids=None, doc_ids=None, *, source: str = "relevance") -> pl.DataFrame:
    """The ``judgments`` table from the chapter's relevance shapes.

    - a 1-D array: the relevant corpus row of each query (relevance 1);
    - a 2-D (n_queries × n_corpus) array: each non-zero cell's value is the grade (binary or
      graded, whole numbers ≥ 0).

    ``query_ids`` / ``doc_ids`` name the rows and columns (default: row numbers, as
    :func:`knn_run` names the rows of plain matrices).

    >>> relevance_judgments(np.array([2, 0])).rows()
    [('0', '2', 1), ('1', '0', 1)]
    """
    matrix = np.asarray(relevance)
    if matrix.ndim not in (1, 2) or not np.issubdtype(matrix.dtype, np.number):
        raise InputError(source, Problem(None, None, f"shape {matrix.shape}",
                                         "must be a relevant corpus index per query (1-D) or a relevance matrix (2-D)"))
    n_queries = matrix.shape[0]
    query_ids = _ids(query_ids, n_queries)
    if matrix.ndim == 1:
        n_docs = len(doc_ids) if doc_ids is not None else None
        bad = ~np.isfinite(matrix) | (matrix != np.round(matrix)) | (matrix < 0)
        if n_docs is not None:
            bad |= matrix >= n_docs
        if bad.any():
            problems = [Problem(f"query {i}", None, matrix[i].item(), "is not a corpus row index") for i in np.flatnonzero(bad)[:20]]
            raise InputError(source, problems)
        columns = matrix.astype(np.int64)
        doc_ids = _ids(doc_ids, int(columns.max()) + 1 if columns.size else 0)
        return pl.DataFrame({"query_id": query_ids, "doc_id": doc_ids.gather(columns),
                             "relevance": np.ones(n_queries, dtype=np.int64)})
    doc_ids = _ids(doc_ids, matrix.shape[1])
    if len(doc_ids) != matrix.shape[1]:
        raise InputError(source, Problem(None, None, f"{matrix.shape[1]} columns", f"the corpus has {len(doc_ids)} vectors"))
    rows, cols = np.nonzero(matrix)
    grades = matrix[rows, cols]
    bad = ~np.isfinite(grades) | (grades != np.round(grades)) | (grades < 0)
    if bad.any():
        problems = [Problem(f"query {rows[i]}, document {cols[i]}", None, grades[i].item(), "is not a whole grade >= 0")
                    for i in np.flatnonzero(bad)[:20]]
        raise InputError(source, problems)
    return pl.DataFrame({"query_id": query_ids.gather(rows), "doc_id": doc_ids.gather(cols),
                         "relevance": grades.astype(np.int64)})


def _ids(ids, n: int) -> pl.Series:
    if ids is None:
        return pl.Series(np.arange(n).astype(str), dtype=pl.String)
    return pl.Series(ids).cast(pl.String)


__all__ = ["best_of_tiles", "knn_run", "relevance_judgments", "score_run", "tie_keys", "top_k"]
