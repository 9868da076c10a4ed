"""Read a recommender's output, its held-out items and its item catalog into the engine's tables.

``read_recommendations(recs, ground_truth=…, items=…, history=…, similarity=…)`` gives
:class:`~evalframe.data.tables.Tables` whose ranking is the recommendations (a user is a query:
``query_id``; an item is a document: ``doc_id``; ``rank`` or ``score`` orders them; optional
``system``), whose judgments are the held-out items (relevance 1 unless a ``relevance`` column
says otherwise) and whose catalog is :func:`~evalframe.data.catalog.catalog` of the other tables.
Every user of the recommendations is evaluated (the queries table lists them all), with or
without held-out items: ``hit_rate@k`` is then defined on the users with held-out items and the
beyond-accuracy metrics on all of them. Each argument is a path (CSV, TSV, Parquet, JSONL) or a
Polars frame; ``user`` and ``item`` name the id columns of the user's files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl

from evalframe.data.catalog import catalog
from evalframe.data.tables import Tables
from evalframe.errors import InputError, Problem
from evalframe.io import read_qrels, read_run
from evalframe.io.tables import read_frame

Source = str | Path | pl.DataFrame


def _frame(source: Source | None) -> tuple[pl.DataFrame | None, str]:
    if source is None:
        return None, ""
    if isinstance(source, pl.DataFrame):
        return source, "table"
    return read_frame(source)[0], str(source)


def _renamed(frame: pl.DataFrame, user: str, item: str, name: str, *, item_to: str = "doc_id") -> pl.DataFrame:
    mapping = {k: v for k, v in ((user, "query_id"), (item, item_to)) if k in frame.columns and k != v}
    missing = [c for c in (user, item) if c not in frame.columns]
    if missing:
        raise InputError(name, [Problem(None, c, None, f"no column `{c}` (columns: {frame.columns})") for c in missing])
    return frame.rename(mapping)


def run_starts(keys: list[str]) -> pl.Expr:
    """True on each row whose ``keys`` differ from the previous row's (the first row included):
    the starts of the runs of equal keys, as a ranking lists each user's items together."""
    return pl.any_horizontal([(pl.col(k) != pl.col(k).shift()).fill_null(True) for k in keys])


def _users(run: pl.DataFrame) -> pl.DataFrame:
    """The run's (system, query_id) pairs, each once, in order of first appearance.

    A recommender's output lists each user's items together (as the bench and most exports do):
    then the first row of each run of equal keys is the pair's first appearance, found in one
    pass without hashing 20,000,000 string keys; the runs are checked to be distinct (a user's
    rows apart fall back to the hash ``unique``, which gives the same table)."""
    keys = ["system", "query_id"]
    firsts = run.lazy().select(keys).filter(run_starts(keys)).collect()  # lazy: half the eager filter's time
    distinct_hashes = firsts.select(pl.struct(keys).hash().n_unique()).item() == firsts.height  # all differ: distinct
    if not distinct_hashes and firsts.select(pl.struct(keys).is_duplicated().any()).item():
        return run.select(keys).unique(maintain_order=True)
    return firsts


def read_recommendations(recs: Source, *, ground_truth: Source | None = None, items: Source | None = None,
                         history: Source | None = None, similarity: Source | None = None,
                         user: str = "query_id", item: str = "doc_id") -> Tables:
    """Tables of a recommender's output (module docstring)."""
    frame, name = _frame(recs)
    frame = _renamed(frame, user, item, name or "recommendations")
    if "rank" not in frame.columns and "score" not in frame.columns:
        raise InputError(name or "recommendations", Problem(None, None, None, "needs a `rank` or `score` column to order each user's items"))
    run = read_run(frame)
    truth_frame, truth_name = _frame(ground_truth)
    if truth_frame is None:
        judgments = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    else:
        truth_frame = _renamed(truth_frame, user, item, truth_name)
        if "relevance" not in truth_frame.columns:
            truth_frame = truth_frame.with_columns(relevance=pl.lit(1, dtype=pl.Int64))
        judgments = read_qrels(truth_frame.select("query_id", "doc_id", "relevance"))
    queries = _users(run)
    tables = Tables.from_run(run, judgments, queries, source=name or "recommendations")
    # What a pipeline part may require: the recommendations' columns, and the held-out items when given.
    tables = replace(tables, source_columns=(*frame.columns, *(["ground_truth"] if truth_frame is not None else [])))
    items_frame, items_name = _frame(items)
    history_frame, _ = _frame(history)
    if history_frame is not None:
        history_frame = _renamed(history_frame, user, "item_id" if "item_id" in history_frame.columns else item, "history",
                                 item_to="item_id")
    similarity_frame, _ = _frame(similarity)
    if items_frame is None and history_frame is None and similarity_frame is None:
        return tables
    bound = catalog(items_frame, history=history_frame, similarity=similarity_frame,
                    item="item_id" if items_frame is None or "item_id" in items_frame.columns else item, source=items_name or "catalog")
    return replace(tables, catalog=bound)
