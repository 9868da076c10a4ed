"""The long tables an evaluation reads (DESIGN §2): ``queries``, ``ranking`` and ``judgments``.

- ``queries``: one row per (system, query_id) with slice keys, labels, probabilities, …;
- ``ranking``: one row per ranked item, long (``system, query_id, doc_id`` and ``rank`` and/or
  ``score``, optionally ``extracted``: whether the system extracted the item, dynamic K), or
  held as one list of item ids per query (``ranked_lists``: ``doc_id`` a list, best first, and
  optionally ``score``, a list aligned with it), whose long rows are built only for the queries
  a metric needs;
- ``judgments``: one row per judged item (``query_id, doc_id, relevance``).

``relevance_rule`` says how a ranked item meets its judgments: ``doc_id`` (the same id, the
default) or ``text`` (their texts match, :mod:`evalframe.engine.matching`; the legal files,
whose gold answers have no ids).

When ``queries`` is not given (a TREC run and its qrels), the evaluated queries are every
system of the ranking × every judged query, which the engine builds from the ranking's index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import polars as pl

from evalframe.data.units import QUERY_KEYS, SYSTEM
from evalframe.errors import ConfigError

RelevanceRule = Literal["doc_id", "text"]


@dataclass(frozen=True)
class Tables:
    """The three long tables (see the module docstring) and facts about where they came from.

    ``queries`` is the set of evaluated (system, query) pairs (None: every system of the ranking ×
    every judged query). ``notes`` say what the reader left out, never silently; ``n_rows`` is the
    input's row count.
    """

    queries: pl.DataFrame | None
    judgments: pl.DataFrame
    ranking_rows: pl.DataFrame | None = None
    ranked_lists: pl.DataFrame | None = None
    n_rows: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: How messages name the ranking's origin (the run file's path when known).
    ranking_source: str = "run"
    relevance_rule: RelevanceRule = "doc_id"
    #: The input file's own columns (contract names, before defaults), when a reader knows them.
    source_columns: tuple[str, ...] = ()
    #: Columns of ``queries`` the reader added as nulls because the input does not give them (a
    #: RAG file without labels still has ``scenario``): a pipeline part requiring one is skipped.
    absent_columns: tuple[str, ...] = ()
    #: What is known about the items beyond the ranking (popularity, category, users' history,
    #: item similarity): a :class:`~evalframe.data.catalog.Catalog` for the beyond-accuracy
    #: recommendation metrics, which the engine binds to them; None when not given.
    catalog: object | None = None
    #: Every system of the whole run when these tables hold a part of it (buckets, Spark
    #: partitions): with ``queries`` None the evaluated pairs are these systems × the judged
    #: queries, so a system without rows in the part still gets them; None: the ranking's systems.
    systems: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.relevance_rule not in ("doc_id", "text"):
            msg = f"relevance_rule must be 'doc_id' or 'text', got {self.relevance_rule!r}"
            raise ConfigError(msg)

    @classmethod
    def from_run(
        cls, run: pl.DataFrame, judgments: pl.DataFrame, queries: pl.DataFrame | None = None, *, source: str = "run"
    ) -> Tables:
        """Tables of a run and its judgments (``queries`` None: every system × every judged query);
        ``source`` names the run in messages (its path)."""
        return cls(queries=queries, judgments=judgments, ranking_rows=run, n_rows=run.height, ranking_source=source)

    @cached_property
    def ranking(self) -> pl.DataFrame:
        """The long ranking table: one row per ranked item."""
        if self.ranking_rows is not None:
            return self.ranking_rows
        return _explode(self.ranked_lists if self.ranked_lists is not None else _no_lists())

    def ranking_of(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """Ranking rows covering the (system, query_id) ``pairs``: for ranked lists, only theirs;
        a long ranking is returned whole (the ranking stage keeps the pairs it evaluates)."""
        if self.ranking_rows is not None:
            return self.ranking_rows
        lists = self.ranked_lists if self.ranked_lists is not None else _no_lists()
        return _explode(lists.join(pairs.select(QUERY_KEYS), on=QUERY_KEYS, how="semi"))

    def ranked_pairs(self, *, each_once: bool = True) -> pl.DataFrame:
        """The (system, query_id) pairs the ranking lists, each once; with ``each_once=False``,
        ranked lists give their pairs as they stand (a pair listed twice repeats: for a join
        that a repeat does not change, without a hash of every pair first). A long ranking's
        pairs are always made unique (its rows repeat each pair once per item)."""
        if self.ranking_rows is not None:
            return self.ranking_rows.select(QUERY_KEYS).unique()
        lists = self.ranked_lists if self.ranked_lists is not None else _no_lists()
        return lists.select(QUERY_KEYS).unique() if each_once else lists.select(QUERY_KEYS)

    @property
    def n_ranking_rows(self) -> int:
        """Number of rows of :attr:`ranking`, without building it."""
        if self.ranking_rows is not None:
            return self.ranking_rows.height
        if self.ranked_lists is None:
            return 0
        return int(self.ranked_lists.select(pl.col("doc_id").list.len().sum()).item())

    @property
    def has_ranking(self) -> bool:
        return self.ranking_rows is not None or self.ranked_lists is not None


def _no_lists() -> pl.DataFrame:
    return pl.DataFrame(schema={SYSTEM: pl.String, "query_id": pl.String, "doc_id": pl.List(pl.String)})


def _explode(ranked_lists: pl.DataFrame) -> pl.DataFrame:
    """Long rows of ranked lists: every list column (``doc_id``, ``score``) item by item.

    The lists are first put in one chunk per column: the explode repeats each row's keys once
    per item, a gather that costs about ten times as much from the many chunks a CSV reader
    gives (38 on sample × 5: 0.12 against 0.02 CPU-s with the rechunk, which costs 0.01)."""
    lists = [name for name, dtype in ranked_lists.schema.items() if isinstance(dtype, pl.List)]
    return (
        ranked_lists.rechunk()
        .with_columns(rank=pl.int_ranges(1, pl.col("doc_id").list.len() + 1, dtype=pl.Int64))
        .explode(*lists, "rank")
        .drop_nulls("doc_id")
    )
