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

import polars as pl

from evalframe.data.tables import Tables
from evalframe.data.units import QUERY_KEYS
from evalframe.engine.ranking import rank_items
from evalframe.errors import ConfigError

#: Columns this stage adds to the queries table.
EXTRACTION_COLUMNS = ("n_extracted", "n_extracted_relevant")
#: The input columns a metric on the extracted set needs one of.
EXTRACTION_SOURCES = ("selected_k", "extracted_sent_uids")


def counts_from_ranking(
    tables: Tables, queries: pl.DataFrame, *, relevance_threshold: int = 1
) -> pl.DataFrame:
    """``system, query_id, n_extracted, n_extracted_relevant`` of every query of ``queries``
    from the ranking: its ``extracted`` rows when the ranking has that column, else the rows
    ranked at or above the query's ``selected_k``. Null counts where neither says anything
    (no ``extracted`` column and a null ``selected_k``); 0 for a query without ranked rows.
    """
    pairs = queries.select(QUERY_KEYS)
    run = tables.ranking_of(pairs)
    flagged = "extracted" in run.columns
    if not flagged and "selected_k" not in queries.columns:
        msg = "the extracted set needs a `selected_k` column, an `extracted_sent_uids` column or a ranking with `extracted`"
        raise ConfigError(msg)
    if not flagged and "rank" not in run.columns:
        run = rank_items(run)
    rows = run.lazy().join(pairs.lazy(), on=QUERY_KEYS, how="semi")
    if flagged:
        extracted = pl.col("extracted").fill_null(False)
    else:
        rows = rows.join(queries.lazy().select(*QUERY_KEYS, "selected_k"), on=QUERY_KEYS, how="left")
        extracted = pl.col("rank") <= pl.col("selected_k")
    relevant = (
        tables.judgments.lazy()
        .filter(pl.col("relevance") >= relevance_threshold)
        .select("query_id", "doc_id", _relevant=pl.lit(True))
        .unique(["query_id", "doc_id"])
    )
    counted = (
        rows.join(relevant, on=["query_id", "doc_id"], how="left")
        .group_by(QUERY_KEYS)
        .agg(
            n_extracted=extracted.fill_null(False).sum().cast(pl.Int64),
            n_extracted_relevant=(extracted & pl.col("_relevant").fill_null(False)).fill_null(False).sum().cast(pl.Int64),
        )
    )
    table = pairs.lazy().join(counted, on=QUERY_KEYS, how="left").with_columns(pl.col(EXTRACTION_COLUMNS).fill_null(0))
    if not flagged:
        known = queries.lazy().select(*QUERY_KEYS, _known=pl.col("selected_k").is_not_null())
        table = table.join(known, on=QUERY_KEYS, how="left").with_columns(
            pl.when("_known").then(pl.col(name)).alias(name) for name in EXTRACTION_COLUMNS
        ).drop("_known")
    return table.collect(engine="in-memory")


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
