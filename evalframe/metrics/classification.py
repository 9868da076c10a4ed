"""Classification metrics of the evidence gate (contract §2.1–2.3): AUROC, AUPRC, TPR@FPR, confusion.

The input is the ``queries`` table: one row per (system, query) with ``label`` (the gold
has-evidence flag, 1 for a positive) and ``prob`` (the predicted probability of evidence), and
the unit weight :data:`~evalframe.metrics.base.WEIGHT`. Every metric here is set level: a
property of a whole slice of queries (a fold, a criterion, …) computed in two steps
(:class:`~evalframe.metrics.base.SetMetric`). ``state(rows, by)`` reduces each slice of ``by``
to sums that merge by addition; ``finalize(state, by)`` turns them into one row per slice with

- ``n``: the queries used (rows whose ``label`` and ``prob`` are both present; a count of
  rows, not a weight);
- ``value``: the metric, null where it is undefined on that slice;
- ``note``: why ``value`` is null ("only one class in the slice", "no predicted positive", …),
  null where the value is defined.

Two states serve every metric of this module:

- the ROC points (:func:`~evalframe.metrics.curves.roc_points`: per distinct probability, the
  rows and the positive and negative weight there), shared by AUROC, AUPRC and every TPR@FPR
  (``state_id`` :data:`ROC_POINTS_STATE`);
- the confusion counts at a threshold (:func:`confusion_counts`: weighted tp, fp, tn, fn),
  shared by the whole confusion family at that threshold (``state_id`` ``("confusion", t)``).

**Weights** are scikit-learn's ``sample_weight``: a row of weight ``w`` adds ``w`` to every
count, so integer weights give the values of the table with each row repeated ``w`` times and a
row of weight 0 changes no value (it is still counted in ``n``). Which class a slice lacks is
read from weights: a slice whose positive weight is 0 has "no positive".

An undefined value is never replaced by 0 or 1 (unlike scikit-learn's ``zero_division``).

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

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import numpy as np
import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import (
    ReplicateState,
    SetMetric,
    TargetCategory,
    replicate_frame,
    safe_divide,
    scored_rows,
)
from evalframe.metrics.curves import (
    PROB,
    is_scored,
    ordered_sum,
    points,
    points_fp,
    points_tp,
    roc_points,
    total_negative_weight,
    total_positive_weight,
    weighted_counts,
)

# --- reasons for an undefined value ----------------------------------------------------------

NO_SCORED_QUERY = "no query with both label and prob in the slice"
ONE_CLASS = "only one class in the slice"
NO_POSITIVE = "no positive in the slice"
NO_NEGATIVE = "no negative in the slice"
NO_PREDICTED_POSITIVE = "no predicted positive"
NO_PREDICTED_NEGATIVE = "no predicted negative"
NO_POSITIVE_NOR_PREDICTED = "no positive and no predicted positive"
#: A slice with used rows that all weigh 0, for a metric that no class or count explains.
NO_WEIGHT = "every query used in the slice has weight 0"

#: A reason a value is undefined: where the condition (over a slice's partials) holds, the value
#: is null and the note is the text. The first condition that holds gives the note.
Reason = tuple[pl.Expr, str]

# --- shared steps of finalize ----------------------------------------------------------------


def per_slice(table: pl.LazyFrame, by: Sequence[str], aggregations: Mapping[str, pl.Expr]) -> pl.LazyFrame:
    """One row per group of ``by`` (in order of first appearance), or one row when ``by`` is empty."""
    named = [expr.alias(name) for name, expr in aggregations.items()]
    if by:
        return table.group_by(list(by), maintain_order=True).agg(named)
    return table.select(named)


def undefined_where(value: pl.Expr, reasons: Sequence[Reason]) -> tuple[pl.Expr, pl.Expr]:
    """``(value, note)``: the value where no reason holds, else null and the first reason's text."""
    note = pl.lit(None, dtype=pl.String)
    for condition, text in reversed(reasons):
        note = pl.when(condition).then(pl.lit(text)).otherwise(note)
    return pl.when(note.is_null()).then(value).cast(pl.Float64), note.cast(pl.String)


def finalized(table: pl.LazyFrame, by: Sequence[str], value: pl.Expr, reasons: Sequence[Reason]) -> pl.LazyFrame:
    """``finalize``'s result from a table with one row per slice and a column ``n``.

    Columns ``*by``, ``n`` (Int64), ``value`` (Float64, null where a reason holds) and ``note``
    (String), sorted by the slice keys so that the result does not depend on the state's order.
    """
    value, note = undefined_where(value, reasons)
    result = table.select(*by, pl.col("n").cast(pl.Int64), value.alias("value"), note.alias("note"))
    return result.sort(list(by), nulls_last=True) if by else result


def _no_scored_query() -> Reason:
    return pl.col("n") == 0, NO_SCORED_QUERY


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
        return finalized(table, by, pl.col("value"), [_no_scored_query(), *self.undefined()])

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray) -> RocCurves:
        return roc_curves(frame, weights)

    def values_from_replicate_state(self, state: RocCurves) -> np.ndarray:
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
    - ``n`` (R): rows of positive weight.

    Replicates are rows (cumulative sums run along contiguous memory), and no matrix of both
    classes' points is built; metrics read what they need.
    """

    def __init__(self, positive_here, negative_here, fp_at_positive, tp_above_negative, tp_at_negative, n):
        self.positive_here, self.negative_here, self.n = positive_here, negative_here, n
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
    positive_here, positive_points = _point_sums(order[is_positive], point[is_positive], w)
    negative_here, negative_points = _point_sums(order[~is_positive], point[~is_positive], w)
    return RocCurves(
        positive_here, negative_here,
        fp_at_positive=np.searchsorted(negative_points, positive_points, side="right"),
        tp_above_negative=np.searchsorted(positive_points, negative_points, side="left"),
        tp_at_negative=np.searchsorted(positive_points, negative_points, side="right"),
        n=w.positive_counts(np.zeros(w.shape[0], np.int64), 1)[0],
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

    fpr: float

    def __post_init__(self) -> None:
        valid = isinstance(self.fpr, int | float) and not isinstance(self.fpr, bool) and 0 < self.fpr <= 1
        if not valid:
            msg = f"`tpr@fpr` needs a target false positive rate in (0, 1], got {self.fpr!r}"
            raise ConfigError(msg)
        object.__setattr__(self, "fpr", float(self.fpr))

    @property
    def name(self) -> str:
        return f"tpr@fpr={self.fpr!r}"

    def value(self) -> pl.Expr:
        within_target = points_fp() / total_negative_weight() <= self.fpr
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


# --- the confusion family at a threshold -----------------------------------------------------


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

    threshold: float = 0.5
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    #: Whether a slice without a used row has a value (the counts: 0).
    defined_when_empty: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    #: Name in the registry, and the name printed (they differ only for ``ppv``/``precision``).
    key: ClassVar[str]
    printed: ClassVar[str]

    def __post_init__(self) -> None:
        threshold = self.threshold
        valid = isinstance(threshold, int | float) and not isinstance(threshold, bool)
        if not valid or not math.isfinite(threshold) or not 0 <= threshold <= 1:
            msg = f"`{self.key}` needs a threshold in [0, 1], got {threshold!r}"
            raise ConfigError(msg)
        object.__setattr__(self, "threshold", float(threshold))

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
        reasons = [] if self.defined_when_empty else [_no_scored_query()]
        return finalized(state, by, self.value(), [*reasons, *self.undefined()])

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray) -> ReplicateState:
        """The confusion counts per weight column: each used row's weights added to its cell
        (:meth:`~evalframe.metrics.base.RowWeights.sums`, the cell one-hot ᵀ · weights), as a state
        with one slice per column (key ``_replicate``)."""
        positive, prob, w = scored_rows(frame, weights)
        predicted = prob >= self.threshold
        # Cells 0..3 = tp, fp, tn, fn.
        cell = np.where(predicted, np.where(positive, 0, 1), np.where(positive, 3, 2))
        counts = w.sums(cell, 4)
        columns = {"n": w.positive_counts(cell, 4).sum(axis=0), **dict(zip(("tp", "fp", "tn", "fn"), counts, strict=True))}
        return replicate_frame(columns, w.shape[1])


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


def _summary_line(metric: type) -> str:
    return (metric.__doc__ or "").strip().splitlines()[0]


def _specs():
    from evalframe.metrics.registry import MetricSpec, Param

    threshold = Param("threshold", float, 0.5, doc="predicted positive when prob >= threshold")
    fpr = Param("fpr", float, doc="target false positive rate in (0, 1]")
    specs = [
        MetricSpec("auroc", AUROC, _summary_line(AUROC), aliases=("roc_auc",)),
        MetricSpec("auprc", AUPRC, _summary_line(AUPRC), aliases=("average_precision",)),
        # ``tpr@fpr=0.01`` is the ROC operating point; plain ``tpr`` is sensitivity at a threshold.
        MetricSpec("tpr", TPRAtFPR, _summary_line(TPRAtFPR), (fpr,), at="fpr", at_required=True,
                   without_cutoff="sensitivity"),
    ]
    aliases = {"specificity": ("tnr",), "balanced_accuracy": ("balanced_acc",)}
    specs += [
        MetricSpec(metric.key, metric, _summary_line(metric), (threshold,), aliases=aliases.get(metric.key, ()),
                   shared=("threshold",))
        for metric in CONFUSION_METRICS
    ]
    return specs


SPECS = _specs()
