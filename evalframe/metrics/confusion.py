"""The confusion family at a threshold (contract §2.3): TP … MCC, balanced accuracy.

A query is predicted positive when ``prob >= threshold`` (default 0.5). Every metric here reads
one mergeable state, the slice's weighted confusion counts at that threshold
(:func:`confusion_counts`, ``state_id`` ``("confusion", threshold)``), divides them once as
scikit-learn does with ``sample_weight``, and finishes with the shared step of
:mod:`evalframe.metrics.set_values` (``n``, ``value``, ``note``): a ratio whose denominator is 0
is null with a note naming why, never scikit-learn's ``zero_division`` value. Bootstrap values
come from the same definition (``finalize`` of the stacked state, :mod:`evalframe.metrics.stacked`).

>>> import polars as pl
>>> queries = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.6, 0.2, 0.1]})
>>> F1Score().compute(queries, by=[]).collect().rows()
[(4, 0.5, None)]
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evalframe.metrics.base import SetMetric, TargetCategory, safe_divide
from evalframe.metrics.params import param
from evalframe.metrics.curves import is_scored, weighted_counts
from evalframe.metrics.set_values import (
    NO_NEGATIVE,
    NO_POSITIVE,
    NO_POSITIVE_NOR_PREDICTED,
    NO_PREDICTED_NEGATIVE,
    NO_PREDICTED_POSITIVE,
    Reason,
    finalized,
    no_scored_query,
)

def confusion_counts(rows: pl.LazyFrame, by: Sequence[str], threshold: float) -> pl.LazyFrame:
    """State of the confusion family: one row per slice of ``by`` (one row when ``by`` is empty).

    Columns ``*by``, ``n`` (Int64: rows used) and the weighted counts ``tp``, ``fp``, ``tn``,
    ``fn`` (Float64: Σ weight of the used rows in each cell, predicted positive when
    ``prob >= threshold``), each as ``sklearn.metrics.confusion_matrix(sample_weight=w)`` and
    added exactly (:func:`~evalframe.metrics.curves.weighted_counts`). One group-by.

    >>> rows = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.6, 0.2, 0.1], "_weight": [2.0, 1.0, 1.0, 0.5]})
    >>> confusion_counts(rows, [], 0.5).collect().rows()
    [(4, 2.0, 1.0, 0.5, 1.0)]
    """
    scored = is_scored()
    positive = pl.col("label") == 1
    predicted_positive = pl.col("prob") >= threshold
    return weighted_counts(rows, by, {
        "tp": scored & predicted_positive & positive,
        "fp": scored & predicted_positive & ~positive,
        "tn": scored & ~predicted_positive & ~positive,
        "fn": scored & ~predicted_positive & positive,
    })


TP, FP, TN, FN = (pl.col(name) for name in ("tp", "fp", "tn", "fn"))


@dataclass(frozen=True)
class ConfusionMetric(SetMetric):
    """Base of the metrics of the confusion matrix at ``threshold`` (contract §2.3).

    A query is predicted positive when ``prob >= threshold`` (default 0.5). The slice's weighted
    counts ``tp``, ``fp``, ``tn``, ``fn`` (:func:`confusion_counts`, shared by every metric at
    that threshold) are computed first; each metric divides them once, as scikit-learn does with
    ``sample_weight``. A ratio whose denominator is 0 (a weight of 0: "no positive" when the
    positive weight is 0, …) is null with a note naming why, never scikit-learn's
    ``zero_division`` value. A slice without a used row has no value, except the counts (0).
    """

    threshold: float = param(0.5, "predicted positive when prob >= threshold", low=0, high=1, shared=True)
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    #: Whether a slice without a used row has a value (the counts: 0).
    defined_when_empty: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    state_kinds: ClassVar[Mapping[str, str] | None] = {"n": "count", "tp": "sum", "fp": "sum", "tn": "sum", "fn": "sum"}
    #: Name in the registry, and the name printed (they differ only for ``ppv``/``precision``).
    key: ClassVar[str]
    printed: ClassVar[str]

    @property
    def name(self) -> str:
        return self.printed if self.threshold == 0.5 else f"{self.printed}(threshold={self.threshold!r})"

    @property
    def state_id(self) -> object:
        return ("confusion", self.threshold)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return confusion_counts(rows, by, self.threshold)

    @abstractmethod
    def value(self) -> pl.Expr:
        """The metric from the counts ``tp``, ``fp``, ``tn``, ``fn`` of one slice."""

    def undefined(self) -> list[Reason]:
        """When the value is undefined, and why; none by default."""
        return []

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        # The state has one row per slice already: finalize is row-wise.
        reasons = [] if self.defined_when_empty else [no_scored_query()]
        return finalized(state, by, self.value(), [*reasons, *self.undefined()])


_NO_POSITIVE: Reason = (TP + FN == 0, NO_POSITIVE)
_NO_NEGATIVE: Reason = (TN + FP == 0, NO_NEGATIVE)
_NO_PREDICTED_POSITIVE: Reason = (TP + FP == 0, NO_PREDICTED_POSITIVE)
_NO_PREDICTED_NEGATIVE: Reason = (TN + FN == 0, NO_PREDICTED_NEGATIVE)


class _ConfusionCount(ConfusionMetric):
    """A weighted count: defined on every slice (0 when empty) and summed, not averaged."""

    summary = "sum"
    defined_when_empty = True
    value_range = (0.0, math.inf)

    def value(self) -> pl.Expr:
        return pl.col(self.key)


class TruePositives(_ConfusionCount):
    """TP: positives predicted positive (``label = 1`` and ``prob >= threshold``), Σ weight.

    Always defined (0.0 on a slice without a used row). Example: labels ``[1, 1, 0]``, probs
    ``[0.9, 0.2, 0.7]``, weights ``[2, 1, 1]`` → 2.0.
    """

    key = printed = "tp"


class TrueNegatives(_ConfusionCount):
    """TN: negatives predicted negative (``label = 0`` and ``prob < threshold``), Σ weight.

    Always defined (0.0 on a slice without a used row). Example: labels ``[0, 0, 1]``, probs
    ``[0.1, 0.7, 0.2]``, weights ``[1.5, 1, 1]`` → 1.5.
    """

    key = printed = "tn"


class FalsePositives(_ConfusionCount):
    """FP: negatives predicted positive (false alarms), Σ weight; lower is better.

    Always defined (0.0 on a slice without a used row). Example: labels ``[0, 0, 1]``, probs
    ``[0.1, 0.7, 0.9]``, weights ``[1, 3, 1]`` → 3.0.
    """

    key = printed = "fp"
    higher_is_better = False


class FalseNegatives(_ConfusionCount):
    """FN: positives predicted negative (missed evidence), Σ weight; lower is better.

    Always defined (0.0 on a slice without a used row). Example: labels ``[1, 1, 0]``, probs
    ``[0.9, 0.2, 0.1]``, weights ``[1, 0.5, 1]`` → 0.5.
    """

    key = printed = "fn"
    higher_is_better = False


class Sensitivity(ConfusionMetric):
    """Sensitivity (TPR, recall): ``TP / (TP + FN)``, the fraction of positives detected.

    Null with note "no positive in the slice" when ``TP + FN = 0`` (no positive, or positives of
    weight 0). Example: TP 3, FN 1 → 0.75.
    """

    key = printed = "sensitivity"

    def value(self) -> pl.Expr:
        return safe_divide(TP, TP + FN)

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE]


class Specificity(ConfusionMetric):
    """Specificity (TNR): ``TN / (TN + FP)``, the fraction of negatives correctly rejected.

    Null with note "no negative in the slice" when ``TN + FP = 0``. Example: TN 9, FP 1 → 0.9.
    """

    key = printed = "specificity"

    def value(self) -> pl.Expr:
        return safe_divide(TN, TN + FP)

    def undefined(self) -> list[Reason]:
        return [_NO_NEGATIVE]


class FalsePositiveRate(ConfusionMetric):
    """False positive rate (false alarm rate): ``FP / (TN + FP)``; lower is better.

    Null with note "no negative in the slice" when ``TN + FP = 0``. Example: TN 9, FP 1 → 0.1.
    """

    key = printed = "fpr"
    higher_is_better = False

    def value(self) -> pl.Expr:
        return safe_divide(FP, TN + FP)

    def undefined(self) -> list[Reason]:
        return [_NO_NEGATIVE]


class PositivePredictiveValue(ConfusionMetric):
    """Precision (PPV): ``TP / (TP + FP)``, the fraction of positive predictions that are right.

    Registered as ``ppv`` and printed ``precision`` (plain ``precision`` without ``@k`` means this
    metric; ``precision@k`` is the ranking metric). Null with note "no predicted positive" when
    ``TP + FP = 0``. Example: TP 3, FP 1 → 0.75.
    """

    key = "ppv"
    printed = "precision"

    def value(self) -> pl.Expr:
        return safe_divide(TP, TP + FP)

    def undefined(self) -> list[Reason]:
        return [_NO_PREDICTED_POSITIVE]


class NegativePredictiveValue(ConfusionMetric):
    """NPV: ``TN / (TN + FN)``, the fraction of negative predictions that are right.

    Null with note "no predicted negative" when ``TN + FN = 0``. Example: TN 8, FN 2 → 0.8.
    """

    key = printed = "npv"

    def value(self) -> pl.Expr:
        return safe_divide(TN, TN + FN)

    def undefined(self) -> list[Reason]:
        return [_NO_PREDICTED_NEGATIVE]


class F1Score(ConfusionMetric):
    """F1: harmonic mean of precision and recall, ``2·P·R / (P + R) = 2 TP / (2 TP + FP + FN)``.

    Null only when ``TP + FP + FN = 0`` (note "no positive and no predicted positive"), as
    scikit-learn's ``f1_score`` (DESIGN §4): a slice with positives but no prediction, or
    predictions but no positive, scores 0. Example: TP 3, FP 1, FN 1 → 6 / 8 = 0.75.
    """

    key = printed = "f1"

    def value(self) -> pl.Expr:
        return safe_divide(2 * TP, 2 * TP + FP + FN)

    def undefined(self) -> list[Reason]:
        return [(TP + FP + FN == 0, NO_POSITIVE_NOR_PREDICTED)]


class MatthewsCorrelation(ConfusionMetric):
    """MCC: ``(TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN))``, in [−1, 1].

    Null when any factor of the denominator is 0, with a note naming the first empty one ("no
    positive in the slice", "no negative in the slice", "no predicted positive", "no predicted
    negative"); scikit-learn says 0 there. Example: TP 1, TN 1, FP 1, FN 1 → 0.
    """

    key = printed = "mcc"
    value_range = (-1.0, 1.0)

    def value(self) -> pl.Expr:
        denominator = ((TP + FP) * (TP + FN)).sqrt() * ((TN + FP) * (TN + FN)).sqrt()
        return safe_divide(TP * TN - FP * FN, denominator)

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE, _NO_NEGATIVE, _NO_PREDICTED_POSITIVE, _NO_PREDICTED_NEGATIVE]


class BalancedAccuracy(ConfusionMetric):
    """Balanced accuracy: ``(sensitivity + specificity) / 2``.

    Null when either is undefined (note "no positive in the slice" or "no negative in the
    slice"). Example: sensitivity 0.75, specificity 0.9 → 0.825.
    """

    key = printed = "balanced_accuracy"

    def value(self) -> pl.Expr:
        return (safe_divide(TP, TP + FN) + safe_divide(TN, TN + FP)) / 2

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE, _NO_NEGATIVE]


CONFUSION_METRICS: tuple[type[ConfusionMetric], ...] = (
    TruePositives,
    TrueNegatives,
    FalsePositives,
    FalseNegatives,
    Sensitivity,
    Specificity,
    FalsePositiveRate,
    PositivePredictiveValue,
    NegativePredictiveValue,
    F1Score,
    MatthewsCorrelation,
    BalancedAccuracy,
)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    aliases = {"specificity": ("tnr",), "balanced_accuracy": ("balanced_acc",)}
    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "tp": ("Queries with evidence that the gate flags (p ≥ {threshold}).", "count"),
        "tn": ("Queries without evidence that the gate clears (p < {threshold}).", "count"),
        "fp": ("False alarms: queries without evidence that the gate flags (p ≥ {threshold}).", "count"),
        "fn": ("Missed evidence: queries with evidence that the gate clears (p < {threshold}).", "count"),
        "sensitivity": ("Of 100 queries with evidence, how many the gate flags (p ≥ {threshold}).", "rate"),
        "specificity": ("Of 100 queries without evidence, how many the gate correctly clears.", "rate"),
        "fpr": ("Of 100 queries without evidence, how many raise a false alarm.", "rate"),
        "ppv": ("Of 100 flagged queries, how many truly have evidence.", "rate"),
        "npv": ("Of 100 cleared queries, how many truly have no evidence.", "rate"),
        "f1": ("Balance of catching evidence and avoiding false alarms (harmonic mean of precision and sensitivity).", "score"),
        "mcc": ("Agreement of flags with the truth: −1 always wrong, 0 chance, 1 perfect; fair when evidence is rare.", "score"),
        "balanced_accuracy": ("Mean of the share of evidence flagged and the share of no-evidence cleared (0.5 = chance).", "rate"),
    }
    return [
        MetricSpec(metric.key, metric, (metric.__doc__ or "").strip().splitlines()[0],
                   aliases=aliases.get(metric.key, ()),
                   meaning=meanings[metric.key][0], kind=meanings[metric.key][1])
        for metric in CONFUSION_METRICS
    ]


SPECS = _specs()
