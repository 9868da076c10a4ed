"""Dynamic-K extraction (contract §4): each query's extracted set, counted on its row.

The evidence metrics at the selected K (:mod:`evalframe.metrics.dynamic_k`) read three columns
of the queries table, which this stage provides when a metric needs them:

- ``n_extracted``: how many sentences (items) the system extracted for the query;
- ``n_extracted_relevant``: how many of them are relevant (relevance >= the threshold);
- ``selected_k``: the K the system chose; ``n_extracted`` where the input gives no K.

Where the counts come from, for each query the first that applies:

1. the queries table itself (the per_query reader counts ``extracted_sent_uids``, including
   sentences outside the ranking when the reader allows them);
2. a long ranking with an ``extracted`` boolean column: the rows flagged true;
3. the top ``selected_k`` of the ranking: the rows with ``rank <= selected_k`` (so
   ``n_extracted = min(selected_k, n_ranked)``).

A query with neither (a null ``selected_k`` and no extracted set) keeps null counts, which
the metrics report as undefined with a reason. The same function, fed a per-query K computed
by a policy, is what the dynamic-K γ sweep (:mod:`evalframe.analyses.dynamic_k_sweep`)
evaluates: one implementation of "the extracted set and its counts".
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from evalframe.data.tables import Tables
from evalframe.data.units import QUERY_KEYS
from evalframe.engine.ranking import rank_items
from evalframe.errors import ConfigError

#: Columns this stage adds to the queries table.
EXTRACTION_COLUMNS = ("n_extracted", "n_extracted_relevant")


def top_k_counts(
    run: pl.DataFrame,
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    k_columns: Sequence[str] = ("selected_k",),
    *,
    relevance_threshold: int = 1,
) -> pl.DataFrame:
    """``system, query_id`` and, for each K column ``c`` of ``queries``, ``n_extracted__c`` and
    ``n_extracted_relevant__c``: the ranked rows at or above the query's K, and the relevant
    ones among them (``min(K, n_ranked)`` and the relevant items of the top K). One pass over
    the ranking for every K column (the γ sweep counts all its γ at once). Null counts where
    the K is null; 0 for a query without ranked rows.
    """
    keys = queries.lazy().select(*QUERY_KEYS, *k_columns)
    if "rank" not in run.columns:
        run = rank_items(run)
    rows = run.lazy().select(*QUERY_KEYS, "doc_id", "rank").join(keys, on=QUERY_KEYS, how="inner")
    counted = (
        with_relevance(rows, judgments, relevance_threshold)
        .group_by(QUERY_KEYS)
        .agg(
            expression.alias(f"{name}__{column}")
            for column in k_columns
            for name, expression in zip(EXTRACTION_COLUMNS, top_k_aggregations(pl.col(column)), strict=True)
        )
    )
    counts = [f"{name}__{column}" for column in k_columns for name in EXTRACTION_COLUMNS]
    return (
        keys.join(counted, on=QUERY_KEYS, how="left")
        .select(
            *QUERY_KEYS,
            *(pl.when(pl.col(column).is_not_null()).then(pl.col(f"{name}__{column}").fill_null(0)).alias(f"{name}__{column}")
              for column in k_columns for name in EXTRACTION_COLUMNS),
        )
        .select(*QUERY_KEYS, *counts)
        .collect(engine="in-memory")
    )


def with_relevance(rows: pl.LazyFrame, judgments: pl.DataFrame, relevance_threshold: int) -> pl.LazyFrame:
    """Ranked ``rows`` (``query_id, doc_id``, …) with ``_relevant``: true for an item judged
    relevant (relevance >= the threshold), null otherwise; in no particular row order."""
    return rows.join(_relevant_items(judgments, relevance_threshold), on=["query_id", "doc_id"], how="left")


def top_k_aggregations(k: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """``n_extracted`` and ``n_extracted_relevant`` at K = ``k`` as aggregations over one query's
    ranked rows (``rank``, and ``_relevant`` from :func:`with_relevance`): the rows at or above
    K, and the relevant ones among them. ``k`` is a column or a per-query aggregate (a policy's K)."""
    in_top = (pl.col("rank") <= k).fill_null(False)
    return in_top.sum().cast(pl.Int64), (in_top & pl.col("_relevant").fill_null(False)).sum().cast(pl.Int64)


def _relevant_items(judgments: pl.DataFrame, relevance_threshold: int) -> pl.LazyFrame:
    return (
        judgments.lazy()
        .filter(pl.col("relevance") >= relevance_threshold)
        .select("query_id", "doc_id", _relevant=pl.lit(True))
        .unique(["query_id", "doc_id"])
    )


def counts_from_ranking(
    tables: Tables, queries: pl.DataFrame, *, relevance_threshold: int = 1
) -> pl.DataFrame:
    """``system, query_id, n_extracted, n_extracted_relevant`` of every query of ``queries``
    from the ranking: its ``extracted`` rows when the ranking has that column, else the top
    ``selected_k`` (:func:`top_k_counts`).
    """
    pairs = queries.select(QUERY_KEYS)
    run = tables.ranking_of(pairs)
    if "extracted" not in run.columns:
        if "selected_k" not in queries.columns:
            msg = "the extracted set needs a `selected_k` column, an `extracted_sent_uids` column or a ranking with `extracted`"
            raise ConfigError(msg)
        counted = top_k_counts(run, tables.judgments, queries, relevance_threshold=relevance_threshold)
        return counted.rename({f"{name}__selected_k": name for name in EXTRACTION_COLUMNS})
    extracted = pl.col("extracted").fill_null(False)
    counted = (
        run.lazy().join(pairs.lazy(), on=QUERY_KEYS, how="semi")
        .join(_relevant_items(tables.judgments, relevance_threshold), on=["query_id", "doc_id"], how="left")
        .group_by(QUERY_KEYS)
        .agg(
            n_extracted=extracted.sum().cast(pl.Int64),
            n_extracted_relevant=(extracted & pl.col("_relevant").fill_null(False)).sum().cast(pl.Int64),
        )
    )
    return (
        pairs.lazy().join(counted, on=QUERY_KEYS, how="left")
        .with_columns(pl.col(EXTRACTION_COLUMNS).fill_null(0))
        .collect(engine="in-memory")
    )


def with_extraction(tables: Tables, queries: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """``queries`` with ``n_extracted``, ``n_extracted_relevant`` and ``selected_k`` (module
    docstring for where each comes from). Raises :class:`~evalframe.errors.ConfigError` naming
    the columns when the data says nothing about extraction."""
    given = all(name in queries.columns for name in EXTRACTION_COLUMNS)
    has_flags = tables.ranking_rows is not None and "extracted" in tables.ranking_rows.columns
    if not given and "selected_k" not in queries.columns and not has_flags:
        msg = ("dynamic-K metrics need the extracted set: give a `selected_k` column (the top K of the ranking), "
               "an `extracted_sent_uids` column, or a ranking with an `extracted` column")
        raise ConfigError(msg)
    incomplete = (not given) or bool(queries.select(pl.col("n_extracted").is_null().any()).item())
    if incomplete and ("selected_k" in queries.columns or has_flags):
        counted = counts_from_ranking(tables, queries, relevance_threshold=relevance_threshold)
        queries = queries.join(counted, on=QUERY_KEYS, how="left", suffix="_ranked", maintain_order="left")
        if given:
            queries = queries.with_columns(
                pl.coalesce(name, f"{name}_ranked").alias(name) for name in EXTRACTION_COLUMNS
            ).drop(f"{name}_ranked" for name in EXTRACTION_COLUMNS)
    if "selected_k" not in queries.columns:
        queries = queries.with_columns(selected_k=pl.col("n_extracted"))
    return queries
