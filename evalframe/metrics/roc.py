"""Threshold-free classification metrics (contract §2.1–2.2): AUROC, AUPRC, TPR@FPR.

All three read one mergeable state, the ROC points of a slice
(:func:`~evalframe.metrics.curves.roc_points`: per distinct probability, the rows and the
positive and negative weight there; ``state_id`` :data:`ROC_POINTS_STATE`), and finish with
the shared step of :mod:`evalframe.metrics.set_values` (``n``, ``value``, ``note``).

**Weights** are scikit-learn's ``sample_weight``: a row of weight ``w`` adds ``w`` to every
count, so integer weights give the values of the table with each row repeated ``w`` times and a
row of weight 0 changes no value (it is still counted in ``n``). Which class a slice lacks is
read from weights: a slice whose positive weight is 0 has "no positive".

**Replicates.** Every other set metric gets its bootstrap values from its one definition
(``finalize`` of the generic stacked state, :mod:`evalframe.metrics.stacked`). The ROC state
has one row per distinct probability, so its stacked state has (points × replicates) rows:
about 10⁸ on the demo sample. Measured on the sample's six systems (overall slice, 1000
replicates, the six ROC metrics of the evidence pipeline): 5.6 s through :class:`RocCurves`
against 64 s through ``finalize`` of the stacked state (2 s to stack each slice's state, about
1 s per metric for Polars' per-replicate sorts and running sums). The family therefore keeps one
vectorised evaluation under weight matrices (:class:`RocCurves`, cumulative sums per weight
column), tested equal to ``finalize`` of the stacked state (the definition) to 1e-12, exact
ties and points exactly at a TPR@FPR target included. Tried again with the stacked state emitted
in key order (slice, replicate, probability) and a ``finalize`` that reads it without any sort
(running sums over a sorted group key, shared by the family in one Polars batch): 24 s against
2.7 s CPU for the family's part of the sample's bootstrap, about 10⁸ stacked rows whose stacking
(sparse products, gathers) and per-group running sums cost tens of nanoseconds a row each, where
:class:`RocCurves` adds each weight column's points in one contiguous cumulative sum. The ROC
band of the plots reads these curves too (:meth:`RocCurves.operating_points`).

>>> import polars as pl
>>> queries = pl.LazyFrame({"fold": [0, 0, 0, 0, 1, 1],
...                         "label": [1, 0, 1, 0, 0, 0],
...                         "prob": [0.9, 0.4, 0.4, 0.1, 0.7, 0.2]})
>>> AUROC().compute(queries, by=["fold"]).collect()
shape: (2, 4)
┌──────┬─────┬───────┬─────────────────────────────┐
│ fold ┆ n   ┆ value ┆ note                        │
│ ---  ┆ --- ┆ ---   ┆ ---                         │
│ i64  ┆ i64 ┆ f64   ┆ str                         │
╞══════╪═════╪═══════╪═════════════════════════════╡
│ 0    ┆ 4   ┆ 0.875 ┆ null                        │
│ 1    ┆ 2   ┆ null  ┆ only one class in the slice │
└──────┴─────┴───────┴─────────────────────────────┘
"""


from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import polars as pl

from evalframe.metrics.params import param
from evalframe.metrics.base import RowWeights, SetMetric, TargetCategory
from evalframe.metrics.weight_matrices import scored_rows
from evalframe.metrics.curves import (
    PROB,
    ordered_sum,
    points,
    points_fp,
    points_tp,
    roc_points,
    total_negative_weight,
    total_positive_weight,
)
from evalframe.metrics.set_values import NO_POSITIVE, ONE_CLASS, Reason, finalized, no_scored_query, per_slice

# --- threshold-free metrics: the ROC points --------------------------------------------------

#: ``state_id`` of every metric reading the ROC points (AUROC, AUPRC, all TPR@FPR).
ROC_POINTS_STATE = ("roc_points",)


class RocMetric(SetMetric):
    """A threshold-free metric read from a slice's ROC points (:func:`~evalframe.metrics.curves.roc_points`).

    State: one row per (slice, distinct ``prob``) with ``n``, ``positive_weight`` and
    ``negative_weight``, shared by every ROC metric. ``value()`` is an aggregation over one
    slice's points (:func:`~evalframe.metrics.curves.points_tp`, ``points_fp``, …, which sort
    the points themselves); ``undefined()`` lists when it has no value, read from the slice's
    ``total_positive`` and ``total_negative`` weights. A slice without a used row has no value
    (note "no query with both label and prob in the slice").
    """

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    state_keys: ClassVar[tuple[str, ...]] = (PROB,)
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    @property
    def state_id(self) -> object:
        return ROC_POINTS_STATE

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return roc_points(rows, by)

    @abstractmethod
    def value(self) -> pl.Expr:
        """The metric as an aggregation over one slice's ROC points."""

    def undefined(self) -> list[Reason]:
        """When the value is undefined, and why; none by default."""
        return []

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        table = per_slice(state, by, {
            "n": pl.col("n").sum(),
            "total_positive": total_positive_weight(),
            "total_negative": total_negative_weight(),
            "value": self.value(),
        })
        return finalized(table, by, pl.col("value"), [no_scored_query(), *self.undefined()])

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> RocCurves:  # type: ignore[override]
        """The slice's ROC points under every weight column, as cumulative sums (module docstring)."""
        return roc_curves(frame, weights)

    def values_from_replicate_state(self, state: RocCurves) -> np.ndarray:  # type: ignore[override]
        with np.errstate(invalid="ignore", divide="ignore"):
            values = self.values_on_curves(state)
        return np.where(state.defined(self.needs_both_classes), values, np.nan)

    #: Whether the value needs both classes (AUROC, TPR@FPR) or only positives (AUPRC).
    needs_both_classes: ClassVar[bool] = True

    @abstractmethod
    def values_on_curves(self, curves: RocCurves) -> np.ndarray:
        """The metric under each weight column from :func:`roc_curves` (NumPy twin of :meth:`value`)."""


class RocCurves:
    """The ROC points of one slice under R weight columns (:func:`roc_curves`), class by class.

    With the slice's distinct probabilities as points (highest first), the points holding a
    positive row and those holding a negative row are kept apart:

    - ``positive_here`` (R × P): the positive weight at each point with a positive row;
      ``tp`` (R × (P + 1)): its cumulative sums after a column of zeros, so ``tp[:, k]`` is
      the positive weight of the first ``k`` such points;
    - ``negative_here`` (R × N) and ``fp`` (R × (N + 1)) likewise for the negative rows;
    - ``fp_at_positive`` (P): for each positive point, how many negative points are at or
      above it (``fp[:, fp_at_positive]`` is the FP at that threshold); ``tp_above_negative``
      and ``tp_at_negative`` (N): positive points strictly above / at or above each negative
      point;
    - ``n`` (R): rows of positive weight;
    - ``positive_prob`` (P) and ``negative_prob`` (N): the probability of each positive and each
      negative point (the thresholds a metric may report).

    Replicates are rows (cumulative sums run along contiguous memory), and no matrix of both
    classes' points is built; metrics read what they need.
    """

    def __init__(self, positive_here, negative_here, fp_at_positive, tp_above_negative, tp_at_negative, n,
                 positive_prob=None, negative_prob=None):
        self.positive_here, self.negative_here, self.n = positive_here, negative_here, n
        self.positive_prob, self.negative_prob = positive_prob, negative_prob
        self.fp_at_positive, self.tp_above_negative, self.tp_at_negative = fp_at_positive, tp_above_negative, tp_at_negative
        self.tp = _with_zero_row(positive_here)
        self.fp = _with_zero_row(negative_here)
        self.total_positive = self.tp[:, -1]
        self.total_negative = self.fp[:, -1]

    @cached_property
    def false_positive_rate(self) -> np.ndarray:
        """FP / W_neg down to each negative point (R × N); 0 where W_neg is 0 (undefined anyway)."""
        fp = self.fp[:, 1:]
        return np.divide(fp, self.total_negative[:, None], out=np.zeros_like(fp), where=self.total_negative[:, None] > 0)

    def operating_points(self) -> tuple[np.ndarray, np.ndarray]:
        """``(FPR, TPR)`` (R × M each) at the point (0, 0) and every distinct probability of the
        slice, highest first (a point of both classes once): the ROC curve under each column
        (``roc_curve(drop_intermediate=False)``), NaN in a column without positive or negative weight."""
        probs = np.unique(np.concatenate([self.positive_prob, self.negative_prob]))[::-1]
        thresholds = np.r_[np.inf, probs]
        # Points of each class at or above each threshold (probabilities sorted descending).
        positives = np.searchsorted(-self.positive_prob, -thresholds, side="right")
        negatives = np.searchsorted(-self.negative_prob, -thresholds, side="right")
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr = self.tp[:, positives] / self.total_positive[:, None]
            fpr = self.fp[:, negatives] / self.total_negative[:, None]
        undefined = ~((self.total_positive > 0) & (self.total_negative > 0))
        tpr[undefined], fpr[undefined] = np.nan, np.nan
        return fpr, tpr

    def defined(self, both_classes: bool) -> np.ndarray:
        """Columns with a used row, positive weight and (if asked) negative weight."""
        ok = (self.n > 0) & (self.total_positive > 0)
        return ok & (self.total_negative > 0) if both_classes else ok


def _with_zero_row(here: np.ndarray) -> np.ndarray:
    """Cumulative sums along each row, after a column of zeros."""
    out = np.zeros((here.shape[0], here.shape[1] + 1))
    np.cumsum(here, axis=1, out=out[:, 1:])
    return out


def _point_sums(rows: np.ndarray, point: np.ndarray, w) -> tuple[np.ndarray, np.ndarray]:
    """The weight of each point of ``rows`` (sorted by point): (R × points), and the points."""
    if rows.size == 0:
        return np.zeros((w.shape[1], 0)), np.zeros(0, np.int64)
    first = np.r_[True, point[1:] != point[:-1]]
    return np.ascontiguousarray(w.grouped(np.cumsum(first) - 1, rows).T), point[first]


def roc_curves(frame: pl.DataFrame, weights: np.ndarray) -> RocCurves:
    """The ROC points of ``frame``'s rows under every column of ``weights``: one sort by ``prob``
    (descending; tied probabilities are one point), per-point weights and cumulative sums per
    column, class by class (:class:`RocCurves`). The NumPy twin of
    :func:`~evalframe.metrics.curves.roc_points` for weight matrices."""
    positive, prob, w = scored_rows(frame, weights)
    order = np.argsort(-prob, kind="stable")
    sorted_prob = prob[order]
    point = np.cumsum(np.r_[False, sorted_prob[1:] != sorted_prob[:-1]]) if prob.size else np.zeros(0, np.int64)
    is_positive = positive[order]
    distinct_prob = sorted_prob[np.r_[True, sorted_prob[1:] != sorted_prob[:-1]]] if prob.size else np.zeros(0)
    positive_here, positive_points = _point_sums(order[is_positive], point[is_positive], w)
    negative_here, negative_points = _point_sums(order[~is_positive], point[~is_positive], w)
    return RocCurves(
        positive_here, negative_here,
        fp_at_positive=np.searchsorted(negative_points, positive_points, side="right"),
        tp_above_negative=np.searchsorted(positive_points, negative_points, side="left"),
        tp_at_negative=np.searchsorted(positive_points, negative_points, side="right"),
        n=_rows_drawn(w),
        positive_prob=distinct_prob[positive_points],
        negative_prob=distinct_prob[negative_points],
    )


def _one_class() -> Reason:
    return (pl.col("total_positive") == 0) | (pl.col("total_negative") == 0), ONE_CLASS


@dataclass(frozen=True)
class AUROC(RocMetric):
    """Area under the ROC curve: the chance that a random positive outranks a random negative.

    The weighted Mann–Whitney statistic, ties counting one half, equal to
    ``sklearn.metrics.roc_auc_score(sample_weight=w)``. Over the slice's operating points
    ``t`` (highest first), with ``TP(t)`` the positive weight with ``prob >= t``,
    ``TP(t⁻)`` that of the point before and ``w_neg(t)`` the negative weight at ``t``::

        AUROC = Σ_t w_neg(t) · (TP(t⁻) + TP(t)) / 2  /  (W_pos · W_neg)

    i.e. the trapezoids under the ROC curve. With unit weights every term is a multiple of 1/2,
    so the sum is exact. Undefined (null, note "only one class in the slice") when the slice's
    positive or negative weight is 0. Example: labels ``[1, 0, 1, 0]``, probs
    ``[0.9, 0.4, 0.4, 0.1]`` → ``(1 · (1 + 2) / 2 + 1 · (2 + 2) / 2) / 4 = 3.5 / 4 = 0.875``.
    """

    @property
    def name(self) -> str:
        return "auroc"

    def value(self) -> pl.Expr:
        tp = points_tp()
        trapezoids = points("negative_weight") * (tp.shift(1, fill_value=0.0) + tp) / 2
        return ordered_sum(trapezoids) / (total_positive_weight() * total_negative_weight())

    def undefined(self) -> list[Reason]:
        return [_one_class()]

    def values_on_curves(self, curves: RocCurves) -> np.ndarray:
        # Σ over negative points of w_neg(t)·(TP(t⁻) + TP(t))/2, as column-wise dot products.
        negative_here = curves.negative_here
        area = _weighted_tp(negative_here, curves.tp, curves.tp_above_negative)
        if not np.array_equal(curves.tp_above_negative, curves.tp_at_negative):  # a point holds both classes
            area = (area + _weighted_tp(negative_here, curves.tp, curves.tp_at_negative)) / 2
        return area / (curves.total_positive * curves.total_negative)


def _weighted_tp(negative_here: np.ndarray, tp: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``Σ_t negative_here[:, t] · tp[:, index[t]]`` per row; ``index`` is non-decreasing, so the
    negative weights are first added per distinct index (contiguous runs), then one dot product."""
    if index.size == 0:
        return np.zeros(tp.shape[0])
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    summed = np.add.reduceat(negative_here, starts, axis=1)
    return np.einsum("rk,rk->r", summed, tp[:, index[starts]])


@dataclass(frozen=True)
class AUPRC(RocMetric):
    """Area under the precision–recall curve as average precision (``average_precision_score``).

    Step-wise over the distinct probabilities ``t`` taken as thresholds (predicted positive when
    ``prob >= t``; tied probabilities form one threshold), equal to
    ``sklearn.metrics.average_precision_score(sample_weight=w)``::

        AP = Σ_t (R(t) − R(t⁻)) · P(t)  =  Σ_t w_pos(t) · P(t) / W_pos

    where ``P(t) = TP(t) / (TP(t) + FP(t))`` and ``R(t) = TP(t) / W_pos`` are the weighted
    precision and recall at ``t`` and ``w_pos(t)`` the positive weight at ``t``: each positive
    contributes, with its weight, the precision at its own probability (the terms are added in
    ascending order). Undefined (null, note "no positive in the slice") when the positive weight
    is 0; 1.0 when every query is positive. Example: labels ``[1, 0, 0, 1]``, probs
    ``[0.9, 0.6, 0.5, 0.2]`` → ``(1/1 + 2/4) / 2 = 0.75``.
    """

    @property
    def name(self) -> str:
        return "auprc"

    def value(self) -> pl.Expr:
        positive_here = points("positive_weight")
        tp = points_tp()
        precision = tp / (tp + points_fp())
        # Points without positive weight add no recall (and their precision may be 0 / 0).
        terms = (positive_here * precision).filter(positive_here > 0)
        return ordered_sum(terms) / total_positive_weight()

    def undefined(self) -> list[Reason]:
        return [(pl.col("total_positive") == 0, NO_POSITIVE)]

    needs_both_classes = False

    def values_on_curves(self, curves: RocCurves) -> np.ndarray:
        # Over the points with a positive row: TP(t) and FP(t) at each.
        tp = curves.tp[:, 1:]
        predicted = tp + curves.fp[:, curves.fp_at_positive]
        # Where no weight is predicted positive, no positive weight is there either: term 0.
        precision = np.divide(tp, predicted, out=np.zeros_like(predicted), where=predicted > 0)
        return np.einsum("rt,rt->r", curves.positive_here, precision) / curves.total_positive


@dataclass(frozen=True)
class TPRAtFPR(RocMetric):
    """Highest true positive rate among operating points whose false positive rate is <= ``fpr``.

    The operating points are "predicted positive when ``prob >= t``" for every distinct
    probability ``t`` of the slice, plus the point that predicts nothing positive (TPR = FPR = 0),
    i.e. ``sklearn.metrics.roc_curve(drop_intermediate=False, sample_weight=w)``; a tie of
    probabilities is one point (never split). ``TPR(t) = TP(t) / W_pos``,
    ``FPR(t) = FP(t) / W_neg`` with weighted counts (contract §2.1); ``W_pos`` and ``W_neg`` are
    the counts at the lowest threshold, so the last point has FPR exactly 1::

        TPR@FPR = max { TP(t) : FP(t) / W_neg <= fpr } / W_pos    (max of nothing: 0)

    Undefined (null, note "only one class in the slice") when the positive or negative weight is
    0. Example: labels ``[1, 0, 1, 1, 0, 1]``, probs ``[0.9, 0.8, 0.7, 0.6, 0.3, 0.2]``,
    ``tpr@fpr=0.5`` → thresholds down to 0.6 have one false positive → ``3 / 4 = 0.75``.
    """

    fpr: float = param(doc="target false positive rate in (0, 1]", low=0, high=1, low_open=True)

    @property
    def name(self) -> str:
        return f"tpr@fpr={self.fpr!r}"

    def value(self) -> pl.Expr:
        fp = points_fp()
        # FP / W_neg as a division of two columns, IEEE-rounded as scikit-learn's fps / fps[-1]:
        # Polars divides a column by a scalar as a product with its reciprocal, which can put a
        # point exactly at the target (147 / 4900 = 0.03) one ulp above it.
        within_target = fp / (fp * 0.0 + total_negative_weight()) <= self.fpr
        # The point predicting nothing positive is always within target: 0 true positives.
        best = points_tp().filter(within_target).max().fill_null(0.0)
        return best / total_positive_weight()

    def undefined(self) -> list[Reason]:
        return [_one_class()]

    def values_on_curves(self, curves: RocCurves) -> np.ndarray:
        # FP and TP grow down the points, so the best point within target is the last one: just
        # above the first negative point k whose FP exceeds the target (all points if none does).
        # k = #{negative points whose FP / W_neg <= target} (the rate as the Polars path reads it).
        allowed = np.count_nonzero(curves.false_positive_rate <= self.fpr, axis=1)
        tp_above = np.append(curves.tp_above_negative, curves.tp.shape[1] - 1)
        best = curves.tp[np.arange(curves.tp.shape[0]), tp_above[allowed]]
        return best / curves.total_positive


def _rows_drawn(w: RowWeights) -> np.ndarray:
    """Rows of positive weight under each column (R integers)."""
    per_unit = np.bincount(w.index[w.scale > 0], minlength=w.units.shape[0]).astype(np.float64)
    return np.rint(per_unit @ w.positive_units).astype(np.int64)


def _summary_line(metric: type) -> str:
    return (metric.__doc__ or "").strip().splitlines()[0]


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("auroc", AUROC, _summary_line(AUROC), aliases=("roc_auc",),
                   meaning="Chance that a query with evidence scores higher than one without (0.5 = random, 1 = perfect).", kind="score"),
        MetricSpec("auprc", AUPRC, _summary_line(AUPRC), aliases=("average_precision",),
                   meaning="Precision of the evidence alarm averaged over all sensitivities (random = the positive rate).", kind="score"),
        # ``tpr@fpr=0.01`` is the ROC operating point; plain ``tpr`` is sensitivity at a threshold.
        MetricSpec("tpr", TPRAtFPR, _summary_line(TPRAtFPR), at="fpr", at_required=True,
                   without_cutoff="sensitivity",
                   meaning="Share of evidence cases caught when false alarms are held at {fpr_pct} of no-evidence queries.", kind="rate"),
    ]


SPECS = _specs()
