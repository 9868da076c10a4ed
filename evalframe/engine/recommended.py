"""The recommendation stage before the metrics: each user's recommended items, and the catalog.

- :func:`with_recommended`: the queries column :data:`~evalframe.metrics.recommendation.RECOMMENDED`
  (each user's item ids, best first: by ``rank`` when the ranking gives it, else by score
  descending, then ``doc_id`` descending as everywhere in the engine), built from the ranking
  when a metric reads it; a user without a ranked item gets an empty list;
- :func:`bind_catalog`: the plan with the evaluation's catalog (``Tables.catalog``) bound to the
  metrics that read one.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from evalframe.data import layout
from evalframe.data.tables import Tables
from evalframe.data.units import QUERY_KEYS
from evalframe.engine.plan import MetricGroup, Plan
from evalframe.io.recommendations import run_starts
from evalframe.metrics.recommendation import RECOMMENDED, bind_catalog as bind_metric


def with_recommended(tables: Tables, queries: pl.DataFrame) -> pl.DataFrame:
    """``queries`` with :data:`RECOMMENDED` built from the ranking (module docstring)."""
    ranking = tables.ranking
    lists = _lists_of_ordered_runs(ranking, queries)
    if lists is None:
        # Each user's items sorted within the group (short lists), never the whole table by its string keys.
        if "rank" in ranking.columns:
            ordered = pl.col("doc_id").cast(pl.String).sort_by("rank")
        else:
            ordered = pl.col("doc_id").cast(pl.String).sort_by(["score", "doc_id"], descending=[True, True])
        lists = ranking.group_by(list(QUERY_KEYS)).agg(ordered.alias(RECOMMENDED))
    keys = list(QUERY_KEYS)
    if layout.same_keys(queries, lists, keys):
        # The queries are the ranking's users in its order (the recommendations reader's table):
        # the lists line up row by row, no join of 1,000,000 string keys.
        return queries.with_columns(lists.get_column(RECOMMENDED))
    return queries.join(lists, on=keys, how="left", maintain_order="left").with_columns(
        pl.col(RECOMMENDED).fill_null(pl.lit([], dtype=pl.List(pl.String))))


def _lists_of_ordered_runs(ranking: pl.DataFrame, queries: pl.DataFrame | None = None) -> pl.DataFrame | None:
    """Each user's items when the ranking already lists them user by user with ``rank`` strictly
    increasing within each user (as the readers leave it): the runs of equal keys are numbered in
    one pass and grouped by that sorted number, so the string keys are neither hashed per row nor
    sorted (when every user has the same number of items, the item column is just cut in rows of
    that many). None when the rows are not so (a user's rows apart, ranks out of order or tied): the
    caller then groups by the keys. When the runs' keys are ``queries``' keys row by row (whose
    key the queries contract has checked unique), the runs are distinct without a check."""
    keys = list(QUERY_KEYS)
    if "rank" not in ranking.columns or ranking.height == 0:
        return None
    runs = ranking.select(pl.col("doc_id").cast(pl.String), "rank", run_starts(keys).alias("_start"))
    out_of_order = runs.select((~pl.col("_start") & (pl.col("rank") <= pl.col("rank").shift())).any()).item()
    if out_of_order:
        return None
    firsts = ranking.select(keys).filter(runs.get_column("_start"))
    aligned = queries is not None and firsts.height == queries.height and firsts.equals(queries.select(keys))
    if not aligned and firsts.select(pl.struct(keys).is_duplicated().any()).item():  # a user's rows are not together
        return None
    bounds = runs.get_column("_start").arg_true()
    size = ranking.height // firsts.height
    if size * firsts.height == ranking.height and (bounds.diff().drop_nulls() == size).all():
        # every user has the same number of items (a top-k list each): the column cut in rows of k
        recommended = runs.get_column("doc_id").reshape((-1, size)).cast(pl.List(pl.String))
    else:
        recommended = (
            runs.select(pl.col("_start").cum_sum().set_sorted().alias("_run"), "doc_id")
            .group_by("_run", maintain_order=True).agg(pl.col("doc_id"))
            .get_column("doc_id")
        )
    return firsts.with_columns(recommended.alias(RECOMMENDED))


def bind_catalog(plan: Plan, catalog: object | None) -> Plan:
    """The plan with ``catalog`` bound to every metric that reads one."""
    if catalog is None:
        return plan
    groups = tuple(MetricGroup(group.subset, tuple(bind_metric(m, catalog) for m in group.metrics)) for group in plan.groups)
    return replace(plan, groups=groups)
