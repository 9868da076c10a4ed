"""Rank-aware retrieval metrics: reciprocal rank, average precision, nDCG, R-precision.

Rows are one query's ranked items in rank order with ``rank`` (1-based), ``relevance`` (the
judged grade, null if unjudged), ``is_relevant`` (grade >= threshold) and ``relevant_at_rank``
(relevant items at this rank or above). Per-query context: ``n_relevant`` (relevant judged
items). None of these metrics depends on unjudged items (nDCG gives them a zero gain).
Queries without relevant items are outside the subset (null, counted in ``n_skipped``) unless
the caller asks for ``empty="zero"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import polars as pl

from evalframe.metrics.base import ItemMetric, TargetCategory, cutoff_suffix, safe_divide
from evalframe.metrics.params import cutoff, param
from evalframe.metrics.retrieval_basic import hits_at


def _within(k: int | None) -> pl.Expr:
    return pl.lit(True) if k is None else pl.col("rank") <= k


@dataclass(frozen=True)
class MRRAtK(ItemMetric):
    """Reciprocal rank of the first relevant item: ``1 / rank_first_relevant``.

    0 when no relevant item is ranked (within the top k when ``k`` is given). Its mean over
    queries is the MRR (contract §3.4; trec_eval ``recip_rank`` with ``k=None``).
    """

    k: int | None = cutoff(None, "cutoff rank (none: the whole ranking)")
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    reads_unjudged_items: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return f"mrr{cutoff_suffix(self.k)}"

    def partials(self) -> dict[str, pl.Expr]:
        first = pl.when(pl.col("is_relevant") & _within(self.k)).then(1.0 / pl.col("rank")).max()
        return {f"rr{cutoff_suffix(self.k)}": first}

    def value(self) -> pl.Expr:
        return pl.col(f"rr{cutoff_suffix(self.k)}").cast(pl.Float64)


APDenominator = Literal["relevant", "retrieved"]


@dataclass(frozen=True)
class MeanAveragePrecision(ItemMetric):
    """Average precision of a query, optionally cut at k; its mean over queries is MAP@k.

    ``AP@k = Σ_{relevant items at rank r <= k} precision@r / n_relevant`` (contract §3.5,
    trec_eval ``map`` / ``map_cut_k``). With ``denominator="retrieved"`` it divides by the number
    of relevant items retrieved within k instead (seed 000 §3.2.2), and is 0 when none was.
    """

    k: int | None = cutoff(None, "cutoff rank (none: the whole ranking)")
    denominator: APDenominator = param("relevant", "divide by the relevant items, or by those retrieved", kind=str,
                                       choices=("relevant", "retrieved"))
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    reads_unjudged_items: ClassVar[bool] = False

    @property
    def name(self) -> str:
        suffix = "" if self.denominator == "relevant" else f"(denominator={self.denominator})"
        return f"map{cutoff_suffix(self.k)}{suffix}"

    def _sum_name(self) -> str:
        return f"precision_sum{cutoff_suffix(self.k)}"

    def partials(self) -> dict[str, pl.Expr]:
        # At a relevant item, precision@rank = relevant_at_rank / rank.
        precision_here = pl.col("relevant_at_rank") / pl.col("rank")
        precision_sum = pl.when(pl.col("is_relevant") & _within(self.k)).then(precision_here).sum()
        return {self._sum_name(): precision_sum, **dict([hits_at(self.k)])}

    def value(self) -> pl.Expr:
        precision_sum = pl.col(self._sum_name())
        if self.denominator == "relevant":
            return safe_divide(precision_sum, pl.col("n_relevant"))
        return safe_divide(precision_sum, pl.col(hits_at(self.k)[0])).fill_null(0.0)


GainScheme = Literal["exponential", "linear"]


def gain(grade: pl.Expr, scheme: GainScheme) -> pl.Expr:
    """Gain of a relevance grade: ``2^grade - 1`` (exponential) or ``grade`` (linear).

    Negative grades (-1, judged but unjudgeable) and unjudged items gain 0, as in trec_eval.
    """
    positive = grade.fill_null(0).clip(lower_bound=0).cast(pl.Float64)
    return pl.lit(2.0).pow(positive) - 1.0 if scheme == "exponential" else positive


@dataclass(frozen=True)
class NDCGAtK(ItemMetric):
    """Normalised discounted cumulative gain, optionally cut at k.

    ``DCG@k = Σ_{r <= k} gain(grade_r) / log2(r + 1)``; ``IDCG@k`` is the same sum over the
    ideal ordering of all the query's judged items with positive grade (``ideal_partials``);
    ``nDCG@k = DCG@k / IDCG@k``. Gain is ``2^grade - 1`` by default (seeds 000, 001, 004; equal
    to the grade for binary relevance) or the grade itself with ``gain="linear"`` (trec_eval).
    Every positive grade gains, whatever the relevance threshold, as in trec_eval.
    """

    k: int | None = cutoff(None, "cutoff rank (none: the whole ranking)")
    gain: GainScheme = param("exponential", "gain of a grade g: 2^g − 1 (exponential) or g (linear)", kind=str,
                             choices=("exponential", "linear"))
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    reads_unjudged_items: ClassVar[bool] = False  # an unjudged item gains 0

    @property
    def name(self) -> str:
        suffix = "" if self.gain == "exponential" else f"(gain={self.gain})"
        return f"ndcg{cutoff_suffix(self.k)}{suffix}"

    def _dcg_name(self) -> str:
        return f"dcg{cutoff_suffix(self.k)}[{self.gain}]"

    def _dcg(self) -> pl.Expr:
        discounted = gain(pl.col("relevance"), self.gain) / (pl.col("rank") + 1).log(2)
        return pl.when(_within(self.k)).then(discounted).sum()

    def partials(self) -> dict[str, pl.Expr]:
        return {self._dcg_name(): self._dcg()}

    def ideal_partials(self) -> dict[str, pl.Expr]:
        return {f"ideal_{self._dcg_name()}": self._dcg()}

    def value(self) -> pl.Expr:
        # DCG <= IDCG exactly; the two sums may add their terms in different orders, so a
        # perfect ranking could come out one ulp above 1. Clipping removes only that excess.
        ratio = safe_divide(pl.col(self._dcg_name()), pl.col(f"ideal_{self._dcg_name()}"))
        return ratio.clip(upper_bound=1.0)


@dataclass(frozen=True)
class RPrecision(ItemMetric):
    """Precision at rank R, where R is the query's number of relevant items (trec_eval ``Rprec``).

    ``Rprec = |relevant ∩ top R| / R``; undefined when R = 0.
    """

    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    reads_unjudged_items: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return "r_precision"

    def partials(self) -> dict[str, pl.Expr]:
        return {"relevant_ranks": pl.col("rank").filter(pl.col("is_relevant"))}

    def value(self) -> pl.Expr:
        ranks_past_r = pl.col("relevant_ranks") - pl.col("n_relevant")
        hits_in_top_r = ranks_past_r.list.eval((pl.element() <= 0).sum()).list.first()
        return safe_divide(hits_in_top_r.fill_null(0), pl.col("n_relevant"))


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("mrr", MRRAtK, at="k",
                   aliases=("recip_rank", "rr", "reciprocal_rank"),
                   meaning="How high the first gold sentence ranks: 1 at rank 1, 1/2 at rank 2, … (0 beyond the cut).", kind="score"),
        MetricSpec("map", MeanAveragePrecision,
                   at="k",
                   aliases=("ap",),
                   meaning="Precision at each gold sentence's rank, averaged: rewards putting all evidence early.", kind="score"),
        MetricSpec("ndcg", NDCGAtK,
                   at="k",
                   meaning="Quality of the top {k} order against the ideal one (1 = all evidence first).", kind="score"),
        MetricSpec("r_precision", RPrecision,
                   aliases=("rprec",),
                   meaning="Share of gold sentences in the top R, R being the query's number of gold sentences.", kind="rate"),
    ]


SPECS = _specs()
