"""Ranking construction: from a validated run table to ranked, judged item rows.

- With a ``rank`` column, the given order is the ranking (ranks need not be contiguous;
  two items of one query with the same rank are an error).
- With only ``score``, items are ordered by score descending, then ``doc_id`` descending
  (trec_eval's tie rule, a byte-wise string comparison).

The result carries ``rank`` as the 1-based position in that order, optionally cut at
``max_depth`` items per query (trec_eval ``-M``), and is sorted by system, query and rank.
"""

from __future__ import annotations

import polars as pl

from evalframe.errors import ConfigError, InputError, Problem

QUERY_KEYS = ["system", "query_id"]


def rank_items(run: pl.DataFrame, *, max_depth: int | None = None, source: str = "run") -> pl.DataFrame:
    """Return ``run`` sorted by system, query and rank, with ``rank`` = 1-based position."""
    if "rank" in run.columns:
        _reject_tied_ranks(run, source)
        ordered = run.sort([*QUERY_KEYS, "rank"])
    else:
        ordered = run.sort([*QUERY_KEYS, "score", "doc_id"], descending=[False, False, True, True])
    ranked = ordered.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY_KEYS))
    if max_depth is not None:
        ranked = ranked.filter(pl.col("rank") <= max_depth)
    return ranked


def _reject_tied_ranks(run: pl.DataFrame, source: str) -> None:
    tied = (
        run.group_by([*QUERY_KEYS, "rank"])
        .agg(pl.col("doc_id").head(2), pl.len().alias("count"))
        .filter(pl.col("count") > 1)
        .sort([*QUERY_KEYS, "rank"])
    )
    if tied.height:
        problems = [
            Problem(
                None,
                "rank",
                rank,
                f"query {query_id!r} of system {system!r} gives rank {rank} to {count} items "
                f"({', '.join(map(repr, docs))}, ...); a given order cannot have ties",
            )
            for system, query_id, rank, docs, count in tied.head(20).iter_rows()
        ]
        raise InputError(source, problems)


def judge_items(ranked: pl.DataFrame, judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """Attach each ranked item's judged ``relevance`` (null if unjudged) and ``is_relevant``."""
    judged = ranked.join(
        judgments.select("query_id", "doc_id", "relevance"),
        on=["query_id", "doc_id"],
        how="left",
        maintain_order="left",
    )
    return judged.with_columns(is_relevant=(pl.col("relevance") >= relevance_threshold).fill_null(False))


def query_context(judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """Per-query facts from the judgments: ``n_relevant`` and ``ideal_grades`` (positive, best first)."""
    return judgments.group_by("query_id").agg(
        n_relevant=(pl.col("relevance") >= relevance_threshold).sum().cast(pl.Int64),
        ideal_grades=pl.col("relevance").filter(pl.col("relevance") > 0).sort(descending=True),
    )


def check_threshold(relevance_threshold: int) -> None:
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, int) or relevance_threshold < 1:
        msg = f"relevance threshold must be a whole number >= 1, got {relevance_threshold!r}"
        raise ConfigError(msg)
