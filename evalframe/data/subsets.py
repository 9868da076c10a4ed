"""Subsets: named sets of queries, each a Polars SQL condition over the ``queries`` table.

A subset is how every part of evalframe says which units a number is computed on: a pipeline's
``subsets:`` block (``has_evidence: {where: "label = 1"}``), ``evaluate(subsets=...)``, and a
metric's own subset (ranking metrics are defined on "queries with at least one relevant item",
``n_relevant > 0``). Conditions are SQL, never Python, so that a pipeline file stays data.

>>> import polars as pl
>>> queries = pl.DataFrame({"query_id": ["a", "b"], "label": [1, 0]})
>>> queries.filter(Subset("positives", "queries with label 1", "label = 1").condition())["query_id"].to_list()
['a']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import polars as pl

from evalframe.errors import ConfigError

#: The name of the subset holding every query.
ALL_QUERIES = "all_queries"


@dataclass(frozen=True)
class Subset:
    """A named set of queries: ``where`` is a Polars SQL condition on the queries table (None: all).

    ``reason`` is the skip reason of a unit outside the subset where one is recorded; by default
    ``outside subset: <description>``.
    """

    name: str
    description: str
    where: str | None = None
    reason: str | None = None

    @cached_property
    def _parsed(self) -> pl.Expr:
        if self.where is None:
            return pl.lit(True)
        try:
            return pl.sql_expr(self.where)
        except Exception as error:  # Polars raises several kinds for bad SQL
            msg = f"subset `{self.name}`: cannot parse `where: {self.where}` as Polars SQL ({error})"
            raise ConfigError(msg) from None

    def condition(self) -> pl.Expr:
        """True for the rows inside the subset (a null condition counts as outside)."""
        condition = self._parsed.fill_null(False)
        if not self.columns():
            # A condition that reads no column is one value; spread it over the rows, since
            # Polars 2.1 rejects a filter by such a scalar on frames of more than one chunk.
            condition = pl.repeat(condition, pl.len())
        return condition

    def columns(self) -> list[str]:
        """The columns the condition reads."""
        return [] if self.where is None else self._parsed.meta.root_names()

    @property
    def outside_reason(self) -> str:
        """The skip reason of a unit outside the subset."""
        return self.reason or f"outside subset: {self.description}"


EVERY_QUERY = Subset(ALL_QUERIES, "all queries")
