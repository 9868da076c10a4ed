"""Anomaly and fraud detection (seed 004 §21.4.3): detection at a false-positive budget, costs, delays.

Rows are scored cases of the ``queries`` table: ``label`` (1 anomaly or fraud, 0 normal) and
``prob`` (the detector's score, higher is more suspicious), each with its unit weight.

**Detection at a false-positive rate, the chapter's rule** (``detection_rate@fpr=0.01``,
``actual_fpr@fpr=…``, ``threshold_index@fpr=…``; they share the ROC family's state). Walk down
the scores, highest first; stop at the first negative at which the false positives reach
``max_fp = ⌊target · W_neg⌋`` (the chapter's ``int(target_fpr * n_negatives)``; with
``max_fp = 0`` the first negative stops the walk). Then ``detection_rate = TP / W_pos`` and
``actual_fpr = FP / W_neg`` at the stop, and ``threshold_index = TP + FP − 1`` (with unit weights
the 0-based position of the stopping row). When no negative stops the walk every case is taken
(``TP = W_pos``, ``FP = W_neg``) and ``threshold_index`` is 0, as the chapter's code leaves it.
Tied scores are one point, taken whole (the chapter's order inside a tie is NumPy's unstable
``argsort``, so it is not reproducible anyway; with distinct scores both agree exactly). A slice
without a positive or a negative has no value (the chapter returns 0 or 1: made-up numbers).

*How it differs from* ``tpr@fpr=t`` (:class:`~evalframe.metrics.roc.TPRAtFPR`): that
one is the best ROC operating point whose FPR is at most ``t``: it takes every case down to just
above the negative that would break the budget, i.e. with ``⌊t · W_neg⌋`` false positives *and*
the positives ranked after the last of them. The chapter's walk stops *at* the negative that
reaches the budget, so those positives are not counted: ``detection_rate@fpr <= tpr@fpr``, equal
when no positive is ranked between the budget-reaching negative and the next one (as in the
chapter's example, 24.2% both). With ``⌊t · W_neg⌋ = 0`` the walk still spends one false
positive (``actual_fpr = 1 / W_neg``, above the target). Example, scores descending with labels
``[1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]`` (10 negatives) at ``t = 0.1``: the walk stops at the
first negative, ``detection_rate = 1/2``; ``tpr@fpr=0.1 = 2/2``.

**Costs** at a threshold (``prob >= threshold`` is flagged, the engine's confusion rule; the
chapter writes ``scores > 0.5``, the same unless a score equals the threshold), with declared
``fp_cost`` (cost of investigating a false alarm) and ``fn_cost`` (cost of a missed fraud; both
default to 1, when the total cost is the number of errors):
``total_cost = FP · fp_cost + FN · fn_cost``, ``cost_per_prediction = total_cost / W`` and
``cost_reduction_vs_baseline = 1 − total_cost / (W_pos · fn_cost)`` against flagging nothing
(undefined, with a note, when that baseline costs 0). ``min_cost`` is the least total cost over
every threshold (each distinct score, and flagging nothing), ``min_cost_threshold`` the score
reaching it (the highest such; null when flagging nothing is cheapest): one sort, cumulative
sums (:func:`cost_curve` gives the whole curve for plots). Both get bootstrap intervals from the
ROC family's replicate curves, which keep each point's score; a point without weight in a
replicate is not a threshold of it (the resampled data do not have that score).

**Time to detection** (query level, one row per anomaly with ``onset`` and ``detected_at``,
numbers or datetimes): ``time_to_detection`` = ``detected_at − onset`` (seconds for datetimes),
null with the reason "not detected" when ``detected_at`` is missing; its slice summary gives the
mean and median, and ``detected`` (1 or 0) averages to the chapter's detection rate. The
chapter's p95 is :func:`time_to_detection_summary`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import QueryMetric, TargetCategory, safe_divide
from evalframe.metrics.confusion import FN, FP, TN, TP, ConfusionMetric
from evalframe.metrics.params import param
from evalframe.metrics.roc import RocCurves, RocMetric
from evalframe.metrics.set_values import Reason

NO_POSITIVE = "no positive in the slice"
NO_NEGATIVE = "no negative in the slice: no false-positive rate"


def _cost(what: str) -> float:
    """The declaration of a cost parameter (a field of the cost metrics; pipelines may set it)."""
    return param(1.0, f"cost of a {what}; default 1", low=0, shared=True)


def _check_cost(key: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"`{key}`: `{name}` must be a number >= 0, got {value!r}")
    return float(value)


# --- the chapter's walk to a false-positive budget ----------------------------------------------


@dataclass(frozen=True)
class _FprWalk(RocMetric):
    """Base of the three outputs of the chapter's walk (module docstring)."""

    fpr: float = param(doc="the false-positive budget, a rate in (0, 1]", low=0, high=1, low_open=True)
    key: ClassVar[str]

    @property
    def name(self) -> str:
        return f"{self.key}@fpr={self.fpr!r}"

    def undefined(self) -> list[Reason]:
        return [(pl.col("total_positive") <= 0, NO_POSITIVE), (pl.col("total_negative") <= 0, NO_NEGATIVE)]

    def _walk(self, curves: RocCurves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """TP and FP at the stop, and whether the walk stopped, per column: the stop is the first
        negative point (one with negative weight in the column) whose FP reaches the budget."""
        fp = curves.fp[:, 1:]
        budget = np.floor(self.fpr * curves.total_negative)
        stop = (curves.negative > 0) & (fp >= budget[:, None])
        stopped = stop.any(axis=1)
        first = np.argmax(stop, axis=1) if stop.shape[1] else np.zeros(stop.shape[0], np.int64)
        tp_index = curves.tp_at_negative[first] if curves.tp_at_negative.size else np.zeros_like(first)
        tp = np.where(stopped, curves.at(curves.tp, tp_index), curves.total_positive)
        fp_at = np.where(stopped, curves.at(fp, first) if fp.shape[1] else 0.0, curves.total_negative)
        return tp, fp_at, stopped


class DetectionRateAtFPR(_FprWalk):
    """Detection rate (recall) where the chapter's walk down the scores reaches the FP budget ⌊fpr·W_neg⌋."""

    key = "detection_rate"

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        tp, _, _ = self._walk(curves)
        return tp / curves.total_positive


class ActualFPRAtFPR(_FprWalk):
    """False-positive rate actually reached by the chapter's walk to the FP budget (at or under the target)."""

    key = "actual_fpr"
    higher_is_better = False

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        _, fp, _ = self._walk(curves)
        return fp / curves.total_negative


class ThresholdIndexAtFPR(_FprWalk):
    """Position (0-based, highest score first) of the row where the chapter's walk stops; 0 if it never does."""

    key = "threshold_index"
    value_range = (0.0, math.inf)

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        tp, fp, stopped = self._walk(curves)
        return np.where(stopped, (tp + fp) - 1.0, 0.0)


# --- costs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CostAtThreshold(ConfusionMetric):
    """Base of the costs at ``threshold`` with declared ``fp_cost`` and ``fn_cost``."""

    fp_cost: float = _cost("false positive (e.g. an investigation)")
    fn_cost: float = _cost("false negative (e.g. a missed fraud)")
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, math.inf)

    @property
    def name(self) -> str:
        threshold = "" if self.threshold == 0.5 else f",threshold={self.threshold!r}"
        return f"{self.key}(fp_cost={self.fp_cost:g},fn_cost={self.fn_cost:g}{threshold})"

    def total(self) -> pl.Expr:
        return FP * self.fp_cost + FN * self.fn_cost


class TotalCost(_CostAtThreshold):
    """Total cost at a threshold: FP · fp_cost + FN · fn_cost."""

    key = printed = "total_cost"

    def value(self) -> pl.Expr:
        return self.total()


class CostPerPrediction(_CostAtThreshold):
    """Total cost at a threshold per scored case."""

    key = printed = "cost_per_prediction"

    def value(self) -> pl.Expr:
        return safe_divide(self.total(), TP + FP + TN + FN)


class CostReductionVsBaseline(_CostAtThreshold):
    """1 − total cost / the cost of flagging nothing (W_pos · fn_cost)."""

    key = printed = "cost_reduction_vs_baseline"
    higher_is_better = True
    value_range = (-math.inf, 1.0)

    def value(self) -> pl.Expr:
        return 1.0 - safe_divide(self.total(), (TP + FN) * self.fn_cost)

    def undefined(self) -> list[Reason]:
        return [((TP + FN) * self.fn_cost == 0, "the baseline (flag nothing) costs 0: no positive, or fn_cost 0")]


@dataclass(frozen=True)
class _CostCurveMetric(RocMetric):
    fp_cost: float = _cost("false positive (e.g. an investigation)")
    fn_cost: float = _cost("false negative (e.g. a missed fraud)")
    key: ClassVar[str]
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, math.inf)

    @property
    def name(self) -> str:
        return f"{self.key}(fp_cost={self.fp_cost:g},fn_cost={self.fn_cost:g})"

    def curve_costs(self, curves: RocCurves) -> np.ndarray:
        """Total cost ``FP · fp_cost + (W_pos − TP) · fn_cost`` of flagging everything above each
        negative point, and of flagging everything: C × (N + 1), the candidates for the minimum (a
        lower point without a negative only lowers the cost, so the least cost over every point
        and flagging nothing is among them, with the same bits)."""
        total_positive = curves.total_positive[:, None]
        tp_before = curves.tp[:, curves.tp_above_negative]
        before = curves.fp[:, :-1] * self.fp_cost + (total_positive - tp_before) * self.fn_cost
        everything = curves.fp[:, -1:] * self.fp_cost + (total_positive - curves.tp[:, -1:]) * self.fn_cost
        return np.hstack([before, everything])

    def nothing(self, curves: RocCurves) -> np.ndarray:
        """The cost of flagging nothing: W_pos · fn_cost."""
        return curves.total_positive * self.fn_cost


class MinimumCost(_CostCurveMetric):
    """Least total cost over every threshold (each distinct score, and flagging nothing)."""

    key = "min_cost"

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        return np.fmin(self.curve_costs(curves).min(axis=1), self.nothing(curves))


class MinimumCostThreshold(_CostCurveMetric):
    """The score whose threshold (flag prob >= it) costs least (the highest such); null if flagging nothing does."""

    key = "min_cost_threshold"
    value_range = (-math.inf, math.inf)

    def on_curves(self, curves: RocCurves) -> np.ndarray:
        # The first candidate of :meth:`curve_costs` at the least cost (before negative point k, or
        # everything), and its threshold: the lowest point above it that holds positive weight in
        # the column (a point of no weight costs what the point above it costs, so the highest
        # point at the least cost always holds some); flagging nothing wins ties.
        costs = self.curve_costs(curves)
        columns = curves.columns
        best = np.argmin(costs, axis=1)
        positives = curves.positive.shape[1]
        holding = np.where(curves.positive > 0, np.arange(positives), -1)
        lowest_so_far = np.maximum.accumulate(holding, axis=1) if positives else np.full((costs.shape[0], 1), -1)
        above = np.r_[curves.tp_above_negative, positives][best] - 1  # last positive point above the candidate
        point = np.where(above >= 0, lowest_so_far[columns, np.maximum(above, 0)], -1)
        cheaper = (costs[columns, best] < self.nothing(curves)) & (point >= 0)
        prob = curves.positive_prob if positives else np.zeros((1, 1))
        chosen = prob[columns if prob.shape[0] > 1 else 0, np.maximum(point, 0)]
        return np.where(cheaper, chosen, np.nan)


def declared_costs(metric) -> tuple[float, float] | None:
    """``(fp_cost, fn_cost)`` of a cost metric, None for any other metric."""
    if isinstance(metric, _CostAtThreshold | _CostCurveMetric):
        return metric.fp_cost, metric.fn_cost
    return None


def cost_curve(label: np.ndarray, score: np.ndarray, fp_cost: float, fn_cost: float,
               weight: np.ndarray | None = None) -> pl.DataFrame:
    """Total cost at every threshold: one row per distinct score, highest first, plus the first
    row "flag nothing" (threshold null), with ``tp``, ``fp`` and ``cost`` (one sort, cumulative sums)."""
    _check_cost("cost_curve", "fp_cost", fp_cost)
    _check_cost("cost_curve", "fn_cost", fn_cost)
    label = np.asarray(label) == 1
    score = np.asarray(score, dtype=np.float64)
    weight = np.ones(score.shape) if weight is None else np.asarray(weight, dtype=np.float64)
    order = np.argsort(-score, kind="stable")
    score, label, weight = score[order], label[order], weight[order]
    last_of_tie = np.r_[score[1:] != score[:-1], True] if score.size else np.zeros(0, bool)
    tp = np.cumsum(weight * label)[last_of_tie]
    fp = np.cumsum(weight * ~label)[last_of_tie]
    total_positive = float((weight * label).sum())
    threshold = np.r_[np.nan, score[last_of_tie]]
    tp, fp = np.r_[0.0, tp], np.r_[0.0, fp]
    return pl.DataFrame({"threshold": threshold, "tp": tp, "fp": fp,
                         "cost": fp * fp_cost + (total_positive - tp) * fn_cost}).with_columns(pl.col("threshold").fill_nan(None))


# --- time to detection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeToDetection(QueryMetric):
    """Delay from an anomaly's onset to its detection (seconds for datetimes); null when not detected."""

    target: ClassVar[TargetCategory] = TargetCategory.LATENCY
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("onset", "detected_at")}
    subset: ClassVar[str] = "all anomalies"
    higher_is_better: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return "time_to_detection"

    def expr(self) -> pl.Expr:
        return delay_seconds(pl.col("onset"), pl.col("detected_at"))

    def skip_reason(self) -> pl.Expr:
        return pl.when(pl.col("detected_at").is_null()).then(pl.lit("not detected")).otherwise(pl.lit("no onset"))


@dataclass(frozen=True)
class Detected(QueryMetric):
    """1 when the anomaly was detected (``detected_at`` given), else 0: its mean is the detection rate."""

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("detected_at",)}
    subset: ClassVar[str] = "all anomalies"
    is_rate: ClassVar[bool] = True
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    @property
    def name(self) -> str:
        return "detected"

    def expr(self) -> pl.Expr:
        return pl.col("detected_at").is_not_null().cast(pl.Float64)


def seconds(column: pl.Expr) -> pl.Expr:
    """A time as Float64: a number as it is, a datetime (or its text) as seconds since the epoch."""
    text = column.cast(pl.String)
    return pl.coalesce(text.cast(pl.Float64, strict=False),
                       text.str.to_datetime(strict=False, time_unit="us").dt.epoch("us").cast(pl.Float64) / 1e6)


def delay_seconds(onset: pl.Expr, detected: pl.Expr) -> pl.Expr:
    """``detected − onset`` in the unit of numbers, or seconds between datetimes (:func:`seconds`)."""
    return seconds(detected) - seconds(onset)


def time_to_detection_summary(onset, detected) -> dict:
    """The chapter's ``time_to_detection``: mean, median and p95 (linear interpolation) of the delays
    of detected anomalies, the detection rate, and the undetected count (``detected`` None or nan)."""
    onset = np.asarray(onset, dtype=np.float64)
    detected = np.asarray([np.nan if d is None else d for d in detected], dtype=np.float64)
    found = ~np.isnan(detected)
    delays = detected[found] - onset[found]
    if delays.size == 0:
        return {"mean_ttd": None, "median_ttd": None, "p95_ttd": None, "detection_rate": 0.0,
                "n_undetected": int((~found).sum())}
    return {"mean_ttd": float(delays.mean()), "median_ttd": float(np.median(delays)),
            "p95_ttd": float(np.percentile(delays, 95)), "detection_rate": float(found.mean()),
            "n_undetected": int((~found).sum())}


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "detection_rate": ("Share of anomalies caught at the target false-positive rate (the chapter's walk down the scores).", "rate"),
        "actual_fpr": ("False-positive rate actually reached by the detection-rate walk.", "rate"),
        "threshold_index": ("Position in the score order where the detection-rate walk stopped.", "count"),
        "total_cost": ("Cost of the errors at the threshold: false positives × fp_cost + false negatives × fn_cost.", "count"),
        "cost_per_prediction": ("Cost of the errors per scored case at the threshold.", "score"),
        "cost_reduction_vs_baseline": ("Share of the flag-nothing baseline's cost saved by the detector.", "rate"),
        "min_cost": ("Lowest cost over every threshold (the cost-minimising operating point).", "count"),
        "min_cost_threshold": ("Score threshold with the lowest cost.", "score"),
    }
    specs = [MetricSpec(m.key, m, (m.__doc__ or "").strip().splitlines()[0], at="fpr", at_required=True,
                         meaning=meanings[m.key][0], kind=meanings[m.key][1])
             for m in (DetectionRateAtFPR, ActualFPRAtFPR, ThresholdIndexAtFPR)]
    specs += [MetricSpec(m.key, m, (m.__doc__ or "").strip().splitlines()[0],
                         meaning=meanings[m.key][0], kind=meanings[m.key][1])
              for m in (TotalCost, CostPerPrediction, CostReductionVsBaseline)]
    specs += [MetricSpec(m.key, m, (m.__doc__ or "").strip().splitlines()[0],
                         meaning=meanings[m.key][0], kind=meanings[m.key][1])
              for m in (MinimumCost, MinimumCostThreshold)]
    specs += [MetricSpec("time_to_detection", TimeToDetection, "Delay from an anomaly's onset to its detection",
               meaning="Time from an anomaly's onset to its first detection.", kind="score"),
              MetricSpec("detected", Detected, "1 when the anomaly was detected, else 0 (mean: detection rate)",
                         meaning="Share of anomalies detected at all.", kind="rate")]
    return specs


SPECS = _specs()
