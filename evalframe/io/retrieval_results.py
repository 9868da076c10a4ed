"""Reader for retrieval results on a gold set: one row per case, as a RAG team keeps them.

The file (JSONL, CSV or Parquet) is checked against ``schemas/retrieval_results.yaml``:

=================  ==================================================================
``query_id``       the case
``retrieved_ids``  list, best first (what the retriever returned)
``gold_ids``       list of the relevant ids (binary relevance)
``tags``           optional: list of task-type tags, or one string for one tag
``tier``           optional: gold-set tier (``A`` / ``B``)
``system``         optional: which retriever produced the row (default ``default``)
=================  ==================================================================

Other names come through a column mapping (``{"retrieved_ids": "ranked_chunks"}``). List cells
are parsed by the shared list parser of :mod:`evalframe.io.per_query` (JSON arrays, native lists,
``a;b;c`` text; an empty cell is an empty list; a single tag string is a list of one).

The result is the engine's three tables (:class:`~evalframe.data.tables.Tables`):

- ``queries``: ``system, query_id, tier, tags`` (a list; empty when the case has none),
  ``n_gold``, ``n_ranked`` (ids retrieved) and any other column of the file, unchanged;
- ``ranking``: the retrieved lists (``rank`` = position, 1-based);
- ``judgments``: one row per gold id, ``relevance`` = 1.

Errors name the file, line (row for Parquet), column and value, and stop the read (exit 2): a
missing column, a cell that is not a list, a duplicate (query_id, system), an id listed twice
in one list, and a query whose gold list differs between systems of one file (judgments belong
to the query). A case without gold ids is not an error: ranking metrics skip it and count it
in ``n_skipped`` (DESIGN §4).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.data.tables import Tables
from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.io.per_query import (
    _check_gold_agrees_across_configs,
    _check_no_repeated_ids,
    parse_list_columns,
)
from evalframe.io.tables import apply_mapping, read_frame

LIST_COLUMNS = ("retrieved_ids", "gold_ids", "tags")
CONTRACT = "retrieval_results"


def read_retrieval_results(
    source: str | Path | pl.DataFrame, *, columns: Mapping[str, str] | None = None
) -> Tables:
    """Read and check a retrieval results file (JSONL, CSV or Parquet) into the engine's tables.

    ``columns`` maps contract names to the file's names, e.g. ``{"query_id": "case_id"}``.

    >>> frame = pl.DataFrame({"query_id": ["c1", "c2"], "retrieved_ids": [["d1", "d2"], ["d3"]],
    ...                       "gold_ids": [["d2"], ["d9"]], "tags": [["lookup", "numeric"], ["lookup"]]})
    >>> tables = read_retrieval_results(frame)
    >>> tables.queries.select("system", "query_id", "tags", "n_gold", "n_ranked").rows()
    [('default', 'c1', ['lookup', 'numeric'], 1, 2), ('default', 'c2', ['lookup'], 1, 1)]
    """
    if isinstance(source, pl.DataFrame):
        name, frame, locate = "retrieval results table", source, (lambda index: f"row {index + 1}")
    else:
        name = str(source)
        frame, locate = read_frame(source)
    frame, labels = apply_mapping(frame, columns, source=name)
    frame, problems = _lists_as_text_or_strings(frame, labels, locate)
    to_parse = [c for c in LIST_COLUMNS if c in frame.columns and frame.schema[c] == pl.String]
    parsed, more = parse_list_columns(frame, to_parse, locate=locate, labels=labels)
    problems += more
    if problems:
        raise InputError(name, problems)
    frame = frame.with_columns(**parsed)
    if "tags" not in frame.columns:
        frame = frame.with_columns(tags=pl.lit([], dtype=pl.List(pl.String)))
    if "tier" not in frame.columns:
        frame = frame.with_columns(tier=pl.lit(None, dtype=pl.String))
    frame = conform(frame, load_contract(CONTRACT), source=name, locate=locate, column_labels=labels)
    frame = frame.with_columns(pl.col("tags").fill_null(pl.lit([], dtype=pl.List(pl.String))))
    _check_no_repeated_ids(frame, name, locate, labels, ("retrieved_ids", "gold_ids"), what="id")
    _check_gold_agrees_across_configs(frame, name, locate, ("query_id",), "gold_ids", config="system",
                                      label=labels.get("gold_ids", "gold_ids"))
    return split_retrieval_results(frame)


def _lists_as_text_or_strings(
    frame: pl.DataFrame, labels: Mapping[str, str], locate
) -> tuple[pl.DataFrame, list[Problem]]:
    """Native list columns (Parquet) with their items as text; other types are problems."""
    casts, problems = {}, []
    for column in (c for c in LIST_COLUMNS if c in frame.columns):
        dtype = frame.schema[column]
        if isinstance(dtype, pl.List) and (dtype.inner.is_numeric() or dtype.inner == pl.String):
            casts[column] = pl.col(column).cast(pl.List(pl.String))
        elif dtype == pl.Null:
            casts[column] = pl.col(column).cast(pl.String)
        elif dtype != pl.String:
            problems.append(Problem(None, labels.get(column, column), NO_VALUE,
                                    f"expected a list of ids or text, found dtype {dtype}"))
    return frame.with_columns(**casts), problems


def split_retrieval_results(frame: pl.DataFrame) -> Tables:
    """The ``queries``, ``ranking`` (as ranked lists) and ``judgments`` of a conformed frame."""
    known = set(load_contract(CONTRACT).columns)
    extra = [c for c in frame.columns if c not in known]
    keyed = frame.select(
        "system",
        "query_id",
        "tier",
        "tags",
        pl.col("gold_ids").list.len().cast(pl.Int64).alias("n_gold"),
        pl.col("retrieved_ids").list.len().cast(pl.Int64).alias("n_ranked"),
        *extra,
    )
    queries = keyed.sort("system", "query_id")
    ranked_lists = frame.select("system", "query_id", doc_id=pl.col("retrieved_ids"))
    judgments = (
        frame.select("query_id", doc_id=pl.col("gold_ids"))
        .explode("doc_id")
        .drop_nulls("doc_id")
        .unique(maintain_order=True)
        .with_columns(relevance=pl.lit(1, dtype=pl.Int64))
    )
    return Tables(queries=queries, judgments=judgments, ranked_lists=ranked_lists, n_rows=frame.height)
