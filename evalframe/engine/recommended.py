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

from evalframe.data.tables import Tables
from evalframe.data.units import QUERY_KEYS
from evalframe.engine.plan import MetricGroup, Plan
from evalframe.metrics.recommendation import RECOMMENDED, bind_catalog as bind_metric


def with_recommended(tables: Tables, queries: pl.DataFrame) -> pl.DataFrame:
    """``queries`` with :data:`RECOMMENDED` built from the ranking (module docstring)."""
    ranking = tables.ranking
    # Each user's items sorted within the group (short lists), never the whole table by its string keys.
    if "rank" in ranking.columns:
        ordered = pl.col("doc_id").cast(pl.String).sort_by("rank")
    else:
        ordered = pl.col("doc_id").cast(pl.String).sort_by(["score", "doc_id"], descending=[True, True])
    lists = ranking.group_by(list(QUERY_KEYS)).agg(ordered.alias(RECOMMENDED))
    return queries.join(lists, on=list(QUERY_KEYS), how="left", maintain_order="left").with_columns(
        pl.col(RECOMMENDED).fill_null(pl.lit([], dtype=pl.List(pl.String))))


def bind_catalog(plan: Plan, catalog: object | None) -> Plan:
    """The plan with ``catalog`` bound to every metric that reads one."""
    if catalog is None:
        return plan
    groups = tuple(MetricGroup(group.subset, tuple(bind_metric(m, catalog) for m in group.metrics)) for group in plan.groups)
    return replace(plan, groups=groups)
