"""Set-based retrieval metrics at a cutoff: recall@k, precision@k, hit_rate@k, and counts.

Rows are one query's ranked items with ``rank`` (1-based) and ``is_relevant``
(relevance grade >= the threshold); none of these metrics reads an unjudged item. A query's
``n_relevant`` counts its relevant judged items, retrieved or not. Queries without relevant
items are outside the subset of the ratio metrics (null, counted in ``n_skipped``) unless the
caller asks for ``empty="zero"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import polars as pl

from evalframe.metrics.base import ItemMetric, Parameterless, TargetCategory, safe_divide
from evalframe.metrics.params import cutoff, param


def hits_at(k: int | None) -> tuple[str, pl.Expr]:
    """Partial: number of relevant items ranked at or above ``k`` (all retrieved if None)."""
    relevant = pl.col("is_relevant") if k is None else pl.col("is_relevant") & (pl.col("rank") <= k)
    return ("hits" if k is None else f"hits@{k}"), relevant.sum()


@dataclass(frozen=True)
class RecallAtK(ItemMetric):
    """Fraction of a query's relevant items found in the top k.

    ``recall@k = |relevant ∩ top k| / n_relevant``. Undefined (null, skipped) when the query
    has no relevant item. Matches trec_eval's ``recall_k``.

    >>> RecallAtK(5).name
    'recall@5'
    """

    k: int = cutoff()
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    reads_unjudged_items: ClassVar[bool] = False
    is_rate: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return f"recall@{self.k}"

    def partials(self) -> dict[str, pl.Expr]:
        return dict([hits_at(self.k)])

    def value(self) -> pl.Expr:
        return safe_divide(pl.col(hits_at(self.k)[0]), pl.col("n_relevant"))


PrecisionDenominator = Literal["k", "retrieved"]


@dataclass(frozen=True)
class PrecisionAtK(ItemMetric):
    """Fraction of the top k that is relevant.

    ``precision@k = |relevant ∩ top k| / k`` (contract §3.2, trec_eval ``P_k``: divides by k
    even when fewer than k items were retrieved). With ``denominator="retrieved"`` it divides
    by ``min(k, n_retrieved)`` instead (seed 000 §3.1.2), which is undefined when nothing
    was retrieved.
    """

    k: int = cutoff()
    denominator: PrecisionDenominator = param("k", "divide by k, or by the items retrieved (at most k)", kind=str,
                                              choices=("k", "retrieved"))
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    reads_unjudged_items: ClassVar[bool] = False
    is_rate: ClassVar[bool] = True

    @property
    def name(self) -> str:
        suffix = "" if self.denominator == "k" else f"(denominator={self.denominator})"
        return f"precision@{self.k}{suffix}"

    def partials(self) -> dict[str, pl.Expr]:
        return dict([hits_at(self.k)])

    def value(self) -> pl.Expr:
        hits = pl.col(hits_at(self.k)[0])
        if self.denominator == "k":
            return hits / self.k
        return safe_divide(hits, pl.min_horizontal(pl.col("n_retrieved"), pl.lit(self.k)))


@dataclass(frozen=True)
class HitRateAtK(ItemMetric):
    """1 when at least one relevant item is in the top k, else 0 (trec_eval ``success_k``).

    Its mean over queries is the hit rate (contract §3.3).
    """

    k: int = cutoff()
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    reads_unjudged_items: ClassVar[bool] = False
    is_rate: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return f"hit_rate@{self.k}"

    def partials(self) -> dict[str, pl.Expr]:
        return dict([hits_at(self.k)])

    def value(self) -> pl.Expr:
        return (pl.col(hits_at(self.k)[0]) > 0).cast(pl.Float64)


class _Count(Parameterless, ItemMetric):
    """Counts are defined for every query (no subset) and summed over a slice."""

    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    subset = "all queries"
    summary = "sum"
    value_range = (0.0, float("inf"))
    subset_where = None
    reads_unjudged_items: ClassVar[bool] = False  # n_retrieved is counted by the evaluator


class NumRetrieved(_Count):
    """Number of items retrieved for the query (after any depth cut), trec_eval ``num_ret``."""

    name = "num_ret"  # type: ignore[assignment]

    def partials(self) -> dict[str, pl.Expr]:
        return {}

    def value(self) -> pl.Expr:
        return pl.col("n_retrieved").cast(pl.Float64)


class NumRelevant(_Count):
    """Number of relevant judged items of the query, retrieved or not, trec_eval ``num_rel``."""

    name = "num_rel"  # type: ignore[assignment]

    def partials(self) -> dict[str, pl.Expr]:
        return {}

    def value(self) -> pl.Expr:
        return pl.col("n_relevant").cast(pl.Float64)


class NumRelevantRetrieved(_Count):
    """Number of relevant items retrieved, trec_eval ``num_rel_ret``."""

    name = "num_rel_ret"  # type: ignore[assignment]

    def partials(self) -> dict[str, pl.Expr]:
        return dict([hits_at(None)])

    def value(self) -> pl.Expr:
        return pl.col(hits_at(None)[0]).cast(pl.Float64)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("recall", RecallAtK, at="k", at_required=True,
                   aliases=("r",),
                   meaning="Share of a query's gold evidence sentences that appear in the top {k}.", kind="rate"),
        MetricSpec("precision", PrecisionAtK,
                   at="k", at_required=True,
                   aliases=("p",), without_cutoff="ppv",
                   meaning="Share of the top {k} sentences shown that are gold evidence.", kind="rate"),
        MetricSpec("hit_rate", HitRateAtK, at="k", at_required=True,
                   aliases=("success", "hitrate"),
                   meaning="Of 100 queries with evidence, how many have a gold sentence in the top {k}.", kind="rate"),
        MetricSpec("num_ret", NumRetrieved,
                   meaning="Sentences retrieved per query.", kind="count"),
        MetricSpec("num_rel", NumRelevant,
                   meaning="Gold evidence sentences per query.", kind="count"),
        MetricSpec("num_rel_ret", NumRelevantRetrieved,
                   meaning="Gold evidence sentences retrieved per query.", kind="count"),
    ]


SPECS = _specs()
