"""Reader for ``per_query.csv``: one row per query of an evidence-retrieval pipeline.

The file is checked against ``schemas/per_query.yaml`` and split into the three tables of
DESIGN §2:

- ``queries``: ``system`` (from ``config``), ``query_id`` (``post_id|criterion_id``),
  ``post_id``, ``criterion_id``, ``fold``, ``label`` (has_evidence_gold), ``prob``
  (p_has_evidence), ``n_gold`` and, when present, ``selected_k``, ``state``;
- ``ranking``: one row per ranked sentence, ``rank`` = position in ``ranked_sent_uids``;
- ``judgments``: one row per gold sentence, ``relevance`` = 1.

List columns hold JSON arrays (``["s1", "s2"]``) or ``;``-separated values (``s1;s2``); an
empty cell is an empty list. A cell that starts like a JSON array but is not one is an error.
The gold list of a query must be the same in every config (judgments belong to the query).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evalframe.contracts import conform, load_contract
from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.io.tables import apply_mapping, read_frame

LIST_COLUMNS = ("gold_sent_uids", "ranked_sent_uids", "extracted_sent_uids")
QUERY_ID_SEPARATOR = "|"

# A JSON array whose items are strings or integers (sentence ids).
_JSON_ITEM = r'\s*(?:"(?:[^"\\]|\\.)*"|-?\d+)\s*'
_JSON_ARRAY = rf"^\s*\[\s*(?:{_JSON_ITEM}(?:,{_JSON_ITEM})*)?\]\s*$"


@dataclass(frozen=True)
class PerQueryTables:
    """The three long tables read from a per_query file, plus the file's row count."""

    queries: pl.DataFrame
    ranking: pl.DataFrame
    judgments: pl.DataFrame
    n_rows: int


def parse_list_column(frame: pl.DataFrame, column: str, *, locate, label: str) -> tuple[pl.Series, list[Problem]]:
    """Parse a text column of JSON arrays or ``;``-separated values into a list column."""
    text = frame.get_column(column).cast(pl.String).str.strip_chars()
    looks_json = text.str.starts_with("[")
    valid_json = text.str.contains(_JSON_ARRAY)
    bad = (looks_json & ~valid_json).fill_null(False)
    problems = [
        Problem(locate(index), label, frame.get_column(column)[index], "is not a list (expected a JSON array or `a;b;c`)")
        for index in bad.arg_true().head(50).to_list()
    ]
    if problems:
        return text, problems
    # Integers in a JSON array decode to their text, so that ids compare as text.
    as_json = pl.col("t").str.json_decode(pl.List(pl.String))
    as_split = pl.col("t").str.split(";").list.eval(pl.element().str.strip_chars()).list.filter(pl.element() != "")
    parsed = pl.DataFrame({"t": text}).select(
        pl.when(pl.col("t").is_null() | (pl.col("t") == "")).then(pl.lit([], dtype=pl.List(pl.String)))
        .when(pl.col("t").str.starts_with("[")).then(as_json)
        .otherwise(as_split)
        .alias(column)
    )
    return parsed.to_series(), []


def read_per_query(
    source: str | Path | pl.DataFrame, *, columns: Mapping[str, str] | None = None
) -> PerQueryTables:
    """Read and check a per_query file (CSV or Parquet) and split it into long tables.

    ``columns`` maps contract names to the file's names, e.g. ``{"p_has_evidence": "prob"}``.
    """
    if isinstance(source, pl.DataFrame):
        name, frame, locate = "per_query table", source, (lambda index: f"row {index + 1}")
    else:
        name = str(source)
        frame, locate = read_frame(source)
    frame, labels = apply_mapping(frame, columns, source=name)
    problems: list[Problem] = []
    parsed = {}
    for column in LIST_COLUMNS:
        if column in frame.columns and frame.schema[column] != pl.List(pl.String):
            parsed[column], found = parse_list_column(frame, column, locate=locate, label=labels.get(column, column))
            problems += found
    if problems:
        raise InputError(name, problems)
    frame = conform(frame.with_columns(**parsed), load_contract("per_query"), source=name, locate=locate, column_labels=labels)
    _check_no_repeated_ids(frame, name, locate, labels)
    _check_gold_agrees_across_configs(frame, name, locate)
    return split_per_query(frame)


def _check_no_repeated_ids(frame: pl.DataFrame, source: str, locate, labels: Mapping[str, str]) -> None:
    """A sentence id may appear once per list: a ranking cannot hold an item twice."""
    problems = []
    for column in ("gold_sent_uids", "ranked_sent_uids"):
        repeated = frame.select(pl.col(column).list.n_unique() < pl.col(column).list.len()).to_series().arg_true()
        problems += [
            Problem(locate(index), labels.get(column, column), frame.get_column(column)[index].to_list(),
                    "lists the same sentence id more than once")
            for index in repeated.head(20).to_list()
        ]
    if problems:
        raise InputError(source, problems)


def _check_gold_agrees_across_configs(frame: pl.DataFrame, source: str, locate) -> None:
    keyed = frame.select("post_id", "criterion_id", gold=pl.col("gold_sent_uids").list.sort()).with_row_index("_row")
    conflicts = (
        keyed.group_by("post_id", "criterion_id")
        .agg(pl.col("gold").n_unique().alias("_n"), pl.col("_row").min().alias("_first"), pl.col("_row").max().alias("_last"))
        .filter(pl.col("_n") > 1)
        .sort("_first")
    )
    if conflicts.height:
        problems = [
            Problem(locate(last), "gold_sent_uids", NO_VALUE,
                    f"query ({post!r}, {criterion!r}) has a different gold list than at {locate(first)}; "
                    "gold judgments must be the same in every config")
            for post, criterion, _, first, last in conflicts.head(20).iter_rows()
        ]
        raise InputError(source, problems)


def split_per_query(frame: pl.DataFrame) -> PerQueryTables:
    """Split a conformed per_query frame into the ``queries``, ``ranking`` and ``judgments`` tables."""
    query_id = pl.concat_str("post_id", "criterion_id", separator=QUERY_ID_SEPARATOR).alias("query_id")
    optional = [name for name in ("selected_k", "state") if name in frame.columns]
    keyed = frame.with_columns(query_id, pl.col("config").alias("system"))
    queries = keyed.select(
        "system",
        "query_id",
        "post_id",
        "criterion_id",
        "fold",
        pl.col("has_evidence_gold").alias("label"),
        pl.col("p_has_evidence").alias("prob"),
        pl.col("gold_sent_uids").list.len().cast(pl.Int64).alias("n_gold"),
        pl.col("ranked_sent_uids").list.len().cast(pl.Int64).alias("n_ranked"),
        *optional,
    ).sort("system", "query_id")
    ranking = (
        keyed.select("system", "query_id", pl.col("ranked_sent_uids").alias("doc_id"))
        .with_columns(rank=pl.int_ranges(1, pl.col("doc_id").list.len() + 1))
        .explode("doc_id", "rank")
        .drop_nulls("doc_id")
        .with_columns(pl.col("rank").cast(pl.Int64))
    )
    judgments = (
        keyed.select("query_id", pl.col("gold_sent_uids").alias("doc_id"))
        .explode("doc_id")
        .drop_nulls("doc_id")
        .unique(maintain_order=True)
        .with_columns(relevance=pl.lit(1, dtype=pl.Int64))
    )
    return PerQueryTables(queries=queries, ranking=ranking, judgments=judgments, n_rows=frame.height)
