"""Declared expectations of the input (contract §1): ``expect: {n_queries, n_positive, posts_per_fold}``.

Each given expectation is checked per system against ``evaluation.queries``: the number of
queries, of queries with ``label = 1``, and of distinct posts in each fold (in fold order).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from evalframe.checks.table import FAIL, MUST, PASS, row
from evalframe.data.units import SYSTEM
from evalframe.errors import ConfigError

KEYS = ("n_queries", "n_positive", "posts_per_fold")


def expectation_checks(evaluation, expect: Mapping[str, Any] | None) -> list[dict]:
    expect = dict(expect or {})
    unknown = sorted(set(expect) - set(KEYS))
    if unknown:
        raise ConfigError(f"checks.expect: unknown keys {unknown} (known: {list(KEYS)})")
    queries = evaluation.queries
    rows = []
    for system in queries.get_column(SYSTEM).unique(maintain_order=True).to_list():
        mine = queries.filter(pl.col(SYSTEM) == system)
        scope = {"system": system}
        observed: dict[str, Any] = {"n_queries": mine.height}
        if "label" in mine.columns:
            observed["n_positive"] = int((mine.get_column("label") == 1).sum())
        if {"fold", "post_id"} <= set(mine.columns):
            per_fold = mine.group_by("fold").agg(pl.col("post_id").n_unique()).sort("fold")
            observed["posts_per_fold"] = per_fold.get_column("post_id").to_list()
        for key, wanted in expect.items():
            value = observed.get(key)
            wanted = list(wanted) if isinstance(wanted, list | tuple) else wanted
            status = PASS if value == wanted else FAIL
            rows.append(row(f"expect_{key}", severity=MUST, status=status, scope=scope, observed=value,
                            expected=wanted, message=f"declared expectation `{key}`"))
    return rows
