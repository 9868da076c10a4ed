"""Counts of a slice's queries (contract §7.1): ``n_queries``, ``n_positive``, ``positive_rate``.

Per-query values summarised like every other metric, so that each slice (the criterion table
above all) carries them next to its AUROC, sensitivity or recall@10:

- ``n_queries``: 1 per query, summed (with weights: the slice's total weight);
- ``n_positive``: the query's label (has_evidence_gold), summed;
- ``positive_rate``: the label, averaged: ``n_positive / n_queries``.
"""

from __future__ import annotations

from typing import ClassVar

import polars as pl

from evalframe.metrics.base import Parameterless, QueryMetric, TargetCategory


class _QueryCount(Parameterless, QueryMetric):
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    higher_is_better: ClassVar[bool] = True


class NumQueries(_QueryCount):
    """Number of queries of the slice."""

    name = "n_queries"  # type: ignore[assignment]
    summary = "sum"
    #: A count fixed by the data set's design: the bootstrap gives it no interval.
    design_count: ClassVar[bool] = True

    def expr(self) -> pl.Expr:
        return pl.lit(1.0, dtype=pl.Float64)


class NumPositive(_QueryCount):
    """Number of queries with a positive label (has_evidence_gold = 1)."""

    name = "n_positive"  # type: ignore[assignment]
    summary = "sum"
    design_count: ClassVar[bool] = True
    required_columns: ClassVar = {"queries": ("label",)}

    def expr(self) -> pl.Expr:
        return pl.col("label").cast(pl.Float64)


class PositiveRate(_QueryCount):
    """Fraction of the slice's queries with a positive label: n_positive / n_queries."""

    name = "positive_rate"  # type: ignore[assignment]
    required_columns: ClassVar = {"queries": ("label",)}

    def expr(self) -> pl.Expr:
        return pl.col("label").cast(pl.Float64)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "n_queries": ("Queries in the slice.", "count"),
        "n_positive": ("Queries with evidence in the slice.", "count"),
        "positive_rate": ("Share of the slice's queries that have evidence (a random ranker's precision).", "rate"),
    }
    return [MetricSpec(cls.name, cls, meaning=meanings[cls.name][0], kind=meanings[cls.name][1]) for cls in (NumQueries, NumPositive, PositiveRate)]


SPECS = _specs()
