"""Threshold-free classification metrics (contract §2.1–2.2): AUROC, AUPRC, TPR@FPR.

All three read one mergeable state, the ROC points of a slice
(:func:`~evalframe.metrics.curves.roc_points`: per distinct probability, the rows and the
positive and negative weight there; ``state_id`` :data:`ROC_POINTS_STATE`), and finish with
the shared step of :mod:`evalframe.metrics.set_values` (``n``, ``value``, ``note``).

**Weights** are scikit-learn's ``sample_weight``: a row of weight ``w`` adds ``w`` to every
count, so integer weights give the values of the table with each row repeated ``w`` times and a
row of weight 0 changes no value (it is still counted in ``n``). Which class a slice lacks is
read from weights: a slice whose positive weight is 0 has "no positive".

**One definition.** Each metric is one vectorised function of the ROC curves of C columns
(:class:`RocCurves`: the positive and negative weight at each distinct probability, highest
first, and their cumulative sums down the thresholds), :meth:`RocMetric.on_curves`. The family
is a :class:`~evalframe.metrics.keyed_sums.KeyedSumsMetric`: ``finalize`` (a run, merged
partials, buckets, Spark) calls it with the slices of the ROC points as the columns, the
bootstrap with one slice's ROC points under the R replicate weights (the generic replicate
state in dense form, :class:`~evalframe.metrics.stacked.DenseState`), so a value and its
replicates come from the same lines. The sums keep the bits a Polars plan of the same formula
gives: running sums down the points in order, and the sums of AUROC's and AUPRC's terms added
in ascending order (:func:`ascending_sums`). The ROC band of the plots reads these curves too
(:meth:`RocCurves.operating_points`). Tried and measured before this (issue 21): the stacked
state in long form finalized by Polars, 24 s against 2.7 s CPU for the family's share of the
sample's bootstrap (about 10⁸ stacked rows whose segmented running sums cost tens of ns a row).

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
from typing import Any, ClassVar

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.metrics.base import TargetCategory
from evalframe.metrics.curves import PROB, roc_points
from evalframe.metrics.keyed_sums import KeyedSumsMetric
from evalframe.metrics.params import param
from evalframe.metrics.set_values import NO_POSITIVE, ONE_CLASS, Reason, no_scored_query

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light

# --- threshold-free metrics: the ROC points --------------------------------------------------

#: ``state_id`` of every metric reading the ROC points (AUROC, AUPRC, all TPR@FPR).
ROC_POINTS_STATE = ("roc_points",)


class RocMetric(KeyedSumsMetric):
    """A threshold-free metric read from a slice's ROC points (:func:`~evalframe.metrics.curves.roc_points`).

    State: one row per (slice, distinct ``prob``) with ``n``, ``positive_weight`` and
    ``negative_weight``, shared by every ROC metric. :meth:`on_curves` is the metric over
    :class:`RocCurves` (one value per column: a slice, or a replicate); ``undefined()`` lists when
    it has no value, read from the column's ``total_positive`` and ``total_negative`` weights. A
    slice without a used row has no value (note "no query with both label and prob in the slice").
    """

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    state_keys: ClassVar[tuple[str, ...]] = (PROB,)
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    #: The columns of the ROC points besides the slice keys and ``prob``.
    state_kinds: ClassVar[Mapping[str, str]] = {"n": "count", "positive_weight": "sum", "negative_weight": "sum"}

    @property
    def state_id(self) -> object:
        return ROC_POINTS_STATE

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return roc_points(rows, by)

    def view(self, dense: Any) -> RocCurves:
        return RocCurves.of_state(dense)

    @abstractmethod
    def on_curves(self, curves: RocCurves) -> np.ndarray:
        """The metric of each column of ``curves`` (C values): its one definition."""

    def undefined(self) -> list[Reason]:
        """When the value is undefined, and why; none by default."""
        return []

    def reasons(self) -> list[Reason]:
        return [no_scored_query(), *self.undefined()]

    def slice_values(self, curves: RocCurves) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            value = self.on_curves(curves)
        return {"n": curves.n, "total_positive": curves.total_positive, "total_negative": curves.total_negative,
                "value": value}


class RocCurves:
    """The ROC points of C columns (slices, or one slice under C weight columns), class by class.

    Points are the distinct probabilities, highest first. The points holding positive weight in
    some column and those holding negative weight are kept apart (a point of both classes is in
    both; a point without weight in a column changes none of its values):

    - ``positive`` (C × P): the positive weight at each point with a positive row; ``tp``
      (C × (P + 1)): its running sums after a column of zeros, so ``tp[:, k]`` is the positive
      weight of the first ``k`` such points (the running sum over all points at them: the others
      add 0);
    - ``negative`` (C × N) and ``fp`` (C × (N + 1)) likewise for the negative rows;
    - ``fp_at_positive`` (P): for each positive point, how many negative points are at or above
      it (``fp[:, fp_at_positive]`` is the FP at that threshold); ``tp_above_negative`` and
      ``tp_at_negative`` (N): positive points strictly above / at or above each negative point;
    - ``n`` (C): rows used; ``whole``: whether every weight is a whole number;
    - ``positive_prob`` (1 × P, or C × P for slices) and ``negative_prob``: each point's probability.

    Columns are rows here: each running sum runs along contiguous memory.
    """

    def __init__(self, positive: np.ndarray, negative: np.ndarray, positive_points: np.ndarray,
                 negative_points: np.ndarray, n: np.ndarray, *, whole: bool,
                 positive_prob: np.ndarray, negative_prob: np.ndarray, by_point: bool = False):
        """``positive`` (C × P) and ``negative`` (C × N); or, with ``by_point``, the same as P × C
        and N × C (a point's weights in every column, as a dense state holds them): they are then
        transposed block by block together with their running sums (:func:`_running_sums_by_point`),
        and ``positive`` and ``negative`` themselves only when a metric reads them."""
        self.n, self.whole = n, whole
        self.positive_prob, self.negative_prob = positive_prob, negative_prob
        self.fp_at_positive = np.searchsorted(negative_points, positive_points, side="right")
        self.tp_above_negative = np.searchsorted(positive_points, negative_points, side="left")
        self.tp_at_negative = np.searchsorted(positive_points, negative_points, side="right")
        self._weights = {"positive": positive, "negative": negative}
        self._by_point = {"positive", "negative"} if by_point else set()  # still points × C
        running_sums = _running_sums_by_point if by_point else _with_zero_row
        self.tp = running_sums(positive)
        self.fp = running_sums(negative)
        self.columns = np.arange(self.tp.shape[0])
        self.total_positive = self.tp[:, -1].copy()  # a copy: kept after the curves are gone
        self.total_negative = self.fp[:, -1].copy()

    def _class_weights(self, name: str) -> np.ndarray:
        """``positive`` or ``negative`` (C × points); curves made by point transpose it when it is
        first read (AUROC on whole weights reads neither)."""
        if name in self._by_point:
            self._weights[name] = _transposed(self._weights[name])
            self._by_point.discard(name)
        return self._weights[name]

    @property
    def positive(self) -> np.ndarray:
        return self._class_weights("positive")

    @property
    def negative(self) -> np.ndarray:
        return self._class_weights("negative")

    @classmethod
    def of_state(cls, dense: Any) -> RocCurves:
        """The curves of a dense state of :func:`~evalframe.metrics.curves.roc_points` (keys in
        ascending order, read from the last: highest probability first)."""
        last = dense.size - 1
        positive_rows = dense.nonzero_keys("positive_weight")[::-1]
        negative_rows = dense.nonzero_keys("negative_weight")[::-1]
        prob = dense.key(PROB)
        return cls(
            dense.column("positive_weight", positive_rows),
            dense.column("negative_weight", negative_rows),
            last - positive_rows, last - negative_rows,
            np.rint(dense.total("n")).astype(np.int64),
            whole=dense.integral("positive_weight") and dense.integral("negative_weight"),
            positive_prob=prob[positive_rows].T, negative_prob=prob[negative_rows].T, by_point=True,
        )

    def points_within(self, fpr: float) -> np.ndarray:
        """Per column, how many negative points have ``FP / W_neg <= fpr`` (C values): ``FP / W_neg``
        at a point is an IEEE division, as scikit-learn's ``fps / fps[-1]``.

        FP is a running sum of non-negative weights, so it never decreases down the points, and
        neither does its quotient by ``W_neg`` (a rounded division is monotone): the points within
        ``fpr`` are a prefix, found by bisection, each column at once, with one division per step
        (about log2 N) instead of one per point. A column with ``W_neg = 0`` divides to NaN (or
        ±inf, never <= fpr): none."""
        fp = self.fp  # C × (N + 1): FP after each negative point is fp[:, 1:]
        low = np.zeros(fp.shape[0], dtype=np.int64)
        high = np.full(fp.shape[0], fp.shape[1] - 1, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            while True:
                open_ = low < high
                if not open_.any():
                    return low
                middle = (low + high) // 2
                after = np.minimum(middle + 1, fp.shape[1] - 1)  # a closed column may sit at N
                within = open_ & (self.at(fp, after) / self.total_negative <= fpr)
                low = np.where(within, middle + 1, low)
                high = np.where(open_ & ~within, middle, high)

    def at(self, matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
        """``matrix[c, points[c]]`` for every column ``c``."""
        return matrix[self.columns, points]

    def operating_points(self) -> tuple[np.ndarray, np.ndarray]:
        """``(FPR, TPR)`` (C × M each) at the point (0, 0) and every distinct probability of the
        slice, highest first (a point of both classes once): the ROC curve under each column
        (``roc_curve(drop_intermediate=False)``), NaN in a column without positive or negative
        weight. For curves of one slice (probabilities shared by the columns)."""
        positive_prob, negative_prob = self.positive_prob[0], self.negative_prob[0]
        probs = np.unique(np.concatenate([positive_prob, negative_prob]))[::-1]
        thresholds = np.r_[np.inf, probs]
        # Points of each class at or above each threshold (probabilities sorted descending).
        positives = np.searchsorted(-positive_prob, -thresholds, side="right")
        negatives = np.searchsorted(-negative_prob, -thresholds, side="right")
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr = self.tp[:, positives] / self.total_positive[:, None]
            fpr = self.fp[:, negatives] / self.total_negative[:, None]
        undefined = ~((self.total_positive > 0) & (self.total_negative > 0))
        tpr[undefined], fpr[undefined] = np.nan, np.nan
        return fpr, tpr


#: Rows of a points × C matrix transposed at a time by :func:`_transposed` (128 × C float64 read,
#: written as C short runs: both stay in cache).
_TRANSPOSE_ROWS = 128


def _transposed(matrix: np.ndarray) -> np.ndarray:
    """``matrix.T`` as a C-contiguous copy, made block by block of :data:`_TRANSPOSE_ROWS` rows:
    about twice as fast as one strided copy of a large matrix (the bootstrap's points × R)."""
    out = np.empty((matrix.shape[1], matrix.shape[0]))
    for start in range(0, matrix.shape[0], _TRANSPOSE_ROWS):
        out[:, start:start + _TRANSPOSE_ROWS] = matrix[start:start + _TRANSPOSE_ROWS].T
    return out


def _running_sums_by_point(by_point: np.ndarray) -> np.ndarray:
    """:func:`_with_zero_row` of ``by_point.T`` (points × C in, C × (points + 1) out), made block by
    block of :data:`_TRANSPOSE_ROWS` points: each block transposed into place, the running sum so
    far added to its first point, then summed along, while it is in cache. The same additions in
    the same order as one running sum: the same bits."""
    points, columns = by_point.shape
    out = np.empty((columns, points + 1))
    out[:, 0] = 0.0
    for start in range(0, points, _TRANSPOSE_ROWS):
        block = out[:, 1 + start:1 + start + _TRANSPOSE_ROWS]
        block[...] = by_point[start:start + _TRANSPOSE_ROWS].T
        if start:
            block[:, 0] += out[:, start]  # the sum so far plus the block's first point
        np.cumsum(block, axis=1, out=block)
    return out


def _with_zero_row(here: np.ndarray) -> np.ndarray:
    """Running sums along each row, after a column of zeros."""
    out = np.zeros((here.shape[0], here.shape[1] + 1))
    np.cumsum(here, axis=1, out=out[:, 1:])
    return out


def ascending_sums(terms: np.ndarray) -> np.ndarray:
    """Each row's terms (C × n) added one by one in ascending order (C values, 0 without terms):
    the same bits whatever the order of the points, and those of Polars' ``sort().cum_sum().last()``."""
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0])
    return np.cumsum(np.sort(terms, axis=1), axis=1)[:, -1]


def _one_class() -> Reason:
    return (pl.col("total_positive") == 0) | (pl.col("total_negative") == 0), ONE_CLASS


#: Whole weights whose total product is at most this make every AUROC term and partial sum a
#: multiple of 1/2 held exactly: then every order of adding them gives the same bits.
_EXACT_AREA = 2.0 ** 52


@dataclass(frozen=True)
class AUROC(RocMetric):
    """Area under the ROC curve: the chance that a random positive outranks a random negative.

    The weighted Mann–Whitney statistic, ties counting one half, equal to
    ``sklearn.metrics.roc_auc_score(sample_weight=w)``. Over the slice's operating points
    ``t`` (highest first), with ``TP(t)`` the positive weight with ``prob >= t``,
    ``TP(t⁻)`` that of the point before and ``w_neg(t)`` the negative weight at ``t``::

        AUROC = Σ_t w_neg(t) · (TP(t⁻) + TP(t)) / 2  /  (W_pos · W_neg)

    i.e. the trapezoids under the ROC curve, added in ascending order (:func:`ascending_sums`).
    With whole weights (and W_pos · W_neg <= 2^52) every term and partial sum is a multiple of
    1/2 held exactly, so the sum is exact in any order: it is then added per run of negative
    points between two positive ones, with no sort. Undefined (null, note "only one class in the
    slice") when the slice's positive or negative weight is 0. Example: labels ``[1, 0, 1, 0]``,
    probs ``[0.9, 0.4, 0.4, 0.1]`` → ``(1 · (1 + 2) / 2 + 1 · (2 + 2) / 2) / 4 = 3.5 / 4 = 0.875``.
    """

    @property
    def name(self) -> str:
        return "auroc"

    def undefined(self) -> list[Reason]:
        return [_one_class()]

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        negative, tp = curves.negative, curves.tp
        above, at = curves.tp_above_negative, curves.tp_at_negative
        exact = curves.whole and bool(np.all(curves.total_positive * curves.total_negative <= _EXACT_AREA))
        if exact:  # Σ_t w_neg(t)·TP(t⁻) and Σ_t w_neg(t)·TP(t), each exact
            area = _weighted_tp(curves.fp, tp, above)
            if not np.array_equal(above, at):  # a point holds both classes
                area = (area + _weighted_tp(curves.fp, tp, at)) / 2
        else:
            area = ascending_sums(negative * (tp[:, above] + tp[:, at]) / 2)
        return area / (curves.total_positive * curves.total_negative)


def _weighted_tp(fp: np.ndarray, tp: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``Σ_t w_neg(t) · tp[index[t]]`` over the negative points ``t``, per column, for whole weights
    (every sum exact): ``index`` is non-decreasing, so the negative weight of each run of equal
    index is a difference of the running sums ``fp``, then one product per run."""
    if index.size == 0:
        return np.zeros(tp.shape[0])
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    run_weight = fp[:, np.r_[starts[1:], index.size]] - fp[:, starts]
    return np.einsum("ck,ck->c", run_weight, tp[:, index[starts]])


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

    def undefined(self) -> list[Reason]:
        return [(pl.col("total_positive") == 0, NO_POSITIVE)]

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        # Over the points with a positive row: TP(t) and FP(t) at each; a point without positive
        # weight in a column adds no recall there (and its precision may be 0 / 0).
        tp = curves.tp[:, 1:]
        precision = tp / (tp + curves.fp[:, curves.fp_at_positive])
        terms = np.where(curves.positive > 0, curves.positive * precision, 0.0)
        return ascending_sums(terms) / curves.total_positive


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

    FP and TP grow down the points, so the best point within target is the last one: just above
    the first negative point whose FP exceeds the target (all points if none does). ``FP / W_neg``
    is an IEEE division, as scikit-learn's ``fps / fps[-1]`` (a product with the reciprocal can
    put a point exactly at the target, 147 / 4900 = 0.03, one ulp above it). Undefined (null,
    note "only one class in the slice") when the positive or negative weight is 0. Example:
    labels ``[1, 0, 1, 1, 0, 1]``, probs ``[0.9, 0.8, 0.7, 0.6, 0.3, 0.2]``, ``tpr@fpr=0.5`` →
    thresholds down to 0.6 have one false positive → ``3 / 4 = 0.75``.
    """

    fpr: float = param(doc="target false positive rate in (0, 1]", low=0, high=1, low_open=True)

    @property
    def name(self) -> str:
        return f"tpr@fpr={self.fpr!r}"

    def undefined(self) -> list[Reason]:
        return [_one_class()]

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        # k = #{negative points whose FP / W_neg <= target}: the best point is above negative point k.
        allowed = curves.points_within(self.fpr)
        tp_above = np.append(curves.tp_above_negative, curves.tp.shape[1] - 1)
        return curves.at(curves.tp, tp_above[allowed]) / curves.total_positive


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
