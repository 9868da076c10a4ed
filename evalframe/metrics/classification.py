"""Classification metrics of the evidence gate (contract §2.1–2.3): AUROC, AUPRC, TPR@FPR, confusion.

The input is the ``queries`` table: one row per (system, query) with ``label`` (the gold
has-evidence flag, 0 or 1) and ``prob`` (the predicted probability of evidence). Every metric
here is set level: it is a property of a whole slice of queries (a fold, a criterion, …), computed
by one group-by over the slice keys ``by``, and it returns one row per slice with

- ``n``: the queries used (rows whose ``label`` and ``prob`` are both present);
- ``value``: the metric, null where it is undefined on that slice;
- ``note``: why ``value`` is null ("only one class in the slice", "no predicted positive", …),
  null where the value is defined.

An undefined value is never replaced by 0 or 1 (unlike scikit-learn's ``zero_division``).

The threshold-free metrics (AUROC, AUPRC, TPR@FPR) read a slice through its operating points
(:func:`roc_points`: one row per distinct probability with the counts above it), which
:func:`compute_slice_metrics` builds once per slice for all of them; the confusion family reads
the rows. Either way each metric is one documented expression over its slice.

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
from typing import ClassVar

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import SetMetric, TargetCategory, safe_divide

# --- reasons for an undefined value ----------------------------------------------------------

NO_SCORED_QUERY = "no query with both label and prob in the slice"
ONE_CLASS = "only one class in the slice"
NO_POSITIVE = "no positive in the slice"
NO_NEGATIVE = "no negative in the slice"
NO_PREDICTED_POSITIVE = "no predicted positive"
NO_PREDICTED_NEGATIVE = "no predicted negative"

#: A reason a value is undefined: where the condition (over a slice's partials) holds, the value
#: is null and the note is the text. The first condition that holds gives the note.
Reason = tuple[pl.Expr, str]

# --- the rows a metric uses ------------------------------------------------------------------


def is_scored() -> pl.Expr:
    """Rows a classification or calibration metric uses: both ``label`` and ``prob`` present."""
    return pl.col("label").is_not_null() & pl.col("prob").is_not_null()


def scored_prob() -> pl.Expr:
    """``prob`` of the used rows (inside an aggregation: the slice's scored queries)."""
    return pl.col("prob").filter(is_scored())


def scored_is_positive() -> pl.Expr:
    """``label == 1`` of the used rows, aligned with :func:`scored_prob`."""
    return (pl.col("label") == 1).filter(is_scored())


def per_slice(queries: pl.LazyFrame, by: Sequence[str], aggregations: Mapping[str, pl.Expr]) -> pl.LazyFrame:
    """One row per group of ``by`` (in order of first appearance), or one row when ``by`` is empty."""
    named = [expr.alias(name) for name, expr in aggregations.items()]
    if by:
        return queries.group_by(list(by), maintain_order=True).agg(named)
    return queries.select(named)


def ordered_sum(values: pl.Expr) -> pl.Expr:
    """Sum of floats added in ascending order: the same bits whatever the order of the rows.

    A plain ``sum`` adds in row order (and the optimiser drops a ``sort`` placed before it),
    so the last bit of a value would depend on how the input file happens to be ordered.
    """
    return values.sort().cum_sum().last().fill_null(0.0)


def undefined_where(value: pl.Expr, reasons: Sequence[Reason]) -> tuple[pl.Expr, pl.Expr]:
    """``(value, note)``: the value where no reason holds, else null and the first reason's text."""
    note = pl.lit(None, dtype=pl.String)
    for condition, text in reversed(reasons):
        note = pl.when(condition).then(pl.lit(text)).otherwise(note)
    return pl.when(note.is_null()).then(value).cast(pl.Float64), note.cast(pl.String)


class SliceMetric(SetMetric):
    """A set metric computed with one group-by over the slice keys: partials, then a value.

    ``partials()`` are aggregations over one slice's rows (use :func:`scored_prob` and
    :func:`scored_is_positive` to see only the used rows); every slice also gets ``n``,
    ``n_positive`` and ``n_negative``. ``value()`` combines partials into the metric and
    ``undefined()`` lists when it has no value. A slice without any used row has no value
    unless ``defined_when_empty`` (counts are 0 there).
    """

    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    defined_when_empty: ClassVar[bool] = False

    @abstractmethod
    def partials(self) -> dict[str, pl.Expr]:
        """Named aggregations over one slice's rows."""

    @abstractmethod
    def value(self) -> pl.Expr:
        """The metric from the partials (and ``n``, ``n_positive``, ``n_negative``)."""

    def undefined(self) -> list[Reason]:
        """When the value is undefined, and why; none by default."""
        return []

    def compute(self, queries: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return compute_slice_metrics([self], queries, by).drop("metric")


class CurveMetric(SliceMetric):
    """A slice metric whose partials aggregate the slice's operating points, not its rows.

    ``partials()`` are aggregations over one slice's rows of :func:`roc_points`, highest
    probability first; :func:`points_tp`, :func:`points_fp` and
    :func:`points_predicted_positive` give the counts at each point. ``n``, ``n_positive``
    and ``n_negative`` still count the slice's rows.
    """


def roc_points(queries: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    """Operating points of each slice: one row per slice and distinct probability, highest first.

    "Predicted positive when ``prob >= t``" for each distinct probability ``t`` of the slice's
    scored rows (tied probabilities are one point, never split); ``n_at`` and
    ``n_positive_at`` count the rows (and positives) whose probability is exactly ``t``.
    Rows are ordered by probability, descending, so that within a slice the running sums
    from the top (:func:`points_tp`, …) are the counts at each threshold.

    >>> points = roc_points(pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1]}), by=[])
    >>> points.select("prob", "n_at", points_tp(), points_fp()).collect().rows()
    [(0.9, 1, 1, 0), (0.4, 2, 2, 1), (0.1, 1, 2, 2)]
    """
    return (
        queries.filter(is_scored())
        .group_by([*by, "prob"])
        .agg(n_at=pl.len(), n_positive_at=(pl.col("label") == 1).sum())
        .sort("prob", descending=True)
    )


def points_predicted_positive() -> pl.Expr:
    """Over one slice's :func:`roc_points`: rows with ``prob >= t`` at each point ``t``."""
    return pl.col("n_at").cum_sum().alias("predicted_positive")


def points_tp() -> pl.Expr:
    """Over one slice's :func:`roc_points`: positives with ``prob >= t`` (true positives)."""
    return pl.col("n_positive_at").cum_sum().alias("tp")


def points_fp() -> pl.Expr:
    """Over one slice's :func:`roc_points`: non-positives with ``prob >= t`` (false positives)."""
    return (points_predicted_positive() - points_tp()).alias("fp")


def compute_slice_metrics(metrics: Sequence[SliceMetric], queries: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    """Several slice metrics at once: one row per (slice of ``by``, metric) with ``n``, ``value``, ``note``.

    One group-by over the rows computes the partials of every row-level metric (a partial
    several metrics share, such as the confusion counts, is computed once) and one over
    :func:`roc_points` those of every :class:`CurveMetric`; each metric then combines its own
    partials exactly as its ``compute`` does alone. Metrics whose partials share names are
    combined in one pass; a partial name two metrics define differently (the same metric
    at two thresholds) puts them in separate passes.
    """
    by = list(by)
    is_positive = scored_is_positive()
    counts = {"n": is_positive.len(), "n_positive": is_positive.sum(), "n_negative": (~is_positive).sum()}
    row_partials: dict[str, pl.Expr] = dict(counts)
    point_partials: dict[str, pl.Expr] = {}
    # Passes: metrics whose partials agree name by name, with the column holding each partial.
    passes: list[tuple[list[SliceMetric], dict[str, str]]] = []
    for metric in metrics:
        found = point_partials if isinstance(metric, CurveMetric) else row_partials
        columns = {}
        for name, expr in metric.partials().items():
            column = next((known for known, other in found.items() if other.meta.eq(expr)), None)
            if column is None:
                column = name if name not in row_partials and name not in point_partials else f"{metric.name}/{name}"
                found[column] = expr
            columns[name] = column
        for members, names in passes:
            if all(names.get(name, column) == column for name, column in columns.items()):
                members.append(metric)
                names.update(columns)
                break
        else:
            passes.append(([metric], dict(columns)))
    table = per_slice(queries, by, row_partials)
    if point_partials:
        curves = per_slice(roc_points(queries, by), by, point_partials)
        if by:
            table = table.join(curves, on=by, how="left", nulls_equal=True, maintain_order="left")
        else:
            table = pl.concat([table, curves], how="horizontal")
    if len(passes) > 1:
        table = table.cache()
    rows = []
    for members, names in passes:
        renamed = table.select(*by, *counts, *(pl.col(column).alias(name) for name, column in names.items() if name not in counts))
        results = []
        for metric in members:
            reasons = [] if metric.defined_when_empty else [(pl.col("n") == 0, NO_SCORED_QUERY)]
            value, note = undefined_where(metric.value(), [*reasons, *metric.undefined()])
            results.append(pl.struct(value.alias("value"), note.alias("note")).alias(metric.name))
        rows.append(
            renamed.select(*by, pl.col("n").cast(pl.Int64), *results)
            .unpivot(on=[m.name for m in members], index=[*by, "n"], variable_name="metric", value_name="_result")
            .unnest("_result")
        )
    return pl.concat(rows).select(*by, "metric", "n", "value", "note")


def _one_class() -> Reason:
    return (pl.col("n_positive") == 0) | (pl.col("n_negative") == 0), ONE_CLASS


# --- threshold-free metrics ------------------------------------------------------------------


@dataclass(frozen=True)
class AUROC(CurveMetric):
    """Area under the ROC curve: the chance that a random positive outranks a random negative.

    Computed as the Mann–Whitney statistic with average ranks for tied probabilities (a tie
    counts one half), equal to ``sklearn.metrics.roc_auc_score``::

        AUROC = (Σ_{positives} rank(prob) − n_pos (n_pos + 1) / 2) / (n_pos · n_neg)

    The average rank of the rows tied at an operating point ``t`` is the number of rows below it
    plus ``(n_at + 1) / 2``; the rank sum adds it once per positive at ``t`` (every term is a
    multiple of 1/2, so the float sum is exact). Undefined (null, note "only one class in the
    slice") when the slice has no positive or no negative. Example: labels ``[1, 0, 1, 0]``,
    probs ``[0.9, 0.4, 0.4, 0.1]`` → ``3.5 / 4 = 0.875``.
    """

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION

    @property
    def name(self) -> str:
        return "auroc"

    def partials(self) -> dict[str, pl.Expr]:
        rows_below = pl.col("n_at").sum() - points_predicted_positive()
        average_rank = rows_below + (pl.col("n_at") + 1) / 2
        positive_rank_sum = (pl.col("n_positive_at") * average_rank).sum()
        return {"positive_rank_sum": positive_rank_sum.cast(pl.Float64)}

    def value(self) -> pl.Expr:
        n_positive = pl.col("n_positive").cast(pl.Float64)
        n_negative = pl.col("n_negative").cast(pl.Float64)
        mann_whitney_u = pl.col("positive_rank_sum") - n_positive * (n_positive + 1) / 2
        return mann_whitney_u / (n_positive * n_negative)

    def undefined(self) -> list[Reason]:
        return [_one_class()]


@dataclass(frozen=True)
class AUPRC(CurveMetric):
    """Area under the precision–recall curve as average precision (``average_precision_score``).

    Step-wise over the distinct probabilities ``t`` taken as thresholds (predicted positive when
    ``prob >= t``; tied probabilities form one threshold)::

        AP = Σ_t (R(t) − R(previous t)) · P(t)  =  mean over positives i of P(prob_i)

    where ``P(t)`` and ``R(t)`` are precision and recall at threshold ``t``: each positive
    contributes the precision at its own probability, ``tp / predicted_positive`` of its
    operating point (the sum adds these terms in ascending order). Undefined (null, note "no
    positive in the slice") without positives; 1.0 when every query is positive. Example:
    labels ``[1, 0, 0, 1]``, probs ``[0.9, 0.6, 0.5, 0.2]`` → ``(1/1 + 2/4) / 2 = 0.75``.
    """

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION

    @property
    def name(self) -> str:
        return "auprc"

    def partials(self) -> dict[str, pl.Expr]:
        has_positive = pl.col("n_positive_at") > 0
        precision_here = (points_tp() / points_predicted_positive()).filter(has_positive)
        per_positive = precision_here.repeat_by(pl.col("n_positive_at").filter(has_positive)).explode()
        return {"precision_sum": ordered_sum(per_positive).cast(pl.Float64)}

    def value(self) -> pl.Expr:
        return pl.col("precision_sum") / pl.col("n_positive")

    def undefined(self) -> list[Reason]:
        return [(pl.col("n_positive") == 0, NO_POSITIVE)]


@dataclass(frozen=True)
class TPRAtFPR(CurveMetric):
    """Highest true positive rate among operating points whose false positive rate is <= ``fpr``.

    The operating points are "predicted positive when ``prob >= t``" for every distinct
    probability ``t`` of the slice, plus the point that predicts nothing positive (TPR = FPR = 0),
    i.e. ``sklearn.metrics.roc_curve(drop_intermediate=False)``; a tie of probabilities is one
    point (never split). ``TPR = TP / n_pos``, ``FPR = FP / n_neg`` (contract §2.1).

    Undefined (null, note "only one class in the slice") without positives or negatives.
    Example: labels ``[1, 0, 1, 1, 0, 1]``, probs ``[0.9, 0.8, 0.7, 0.6, 0.3, 0.2]``,
    ``tpr@fpr=0.5`` → thresholds down to 0.6 have one false positive → ``3 / 4 = 0.75``.
    """

    fpr: float
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION

    def __post_init__(self) -> None:
        valid = isinstance(self.fpr, int | float) and not isinstance(self.fpr, bool) and 0 < self.fpr <= 1
        if not valid:
            msg = f"`tpr@fpr` needs a target false positive rate in (0, 1], got {self.fpr!r}"
            raise ConfigError(msg)
        object.__setattr__(self, "fpr", float(self.fpr))

    @property
    def name(self) -> str:
        return f"tpr@fpr={self.fpr!r}"

    def partials(self) -> dict[str, pl.Expr]:
        n_negative = (pl.col("n_at") - pl.col("n_positive_at")).sum()
        within_target = points_fp() / n_negative <= self.fpr
        # The point predicting nothing positive is always within target: 0 true positives.
        best = points_tp().filter(within_target).max().fill_null(0)
        return {self._partial: best.cast(pl.Float64)}

    @property
    def _partial(self) -> str:
        return f"true_positives_at_fpr={self.fpr!r}"

    def value(self) -> pl.Expr:
        return pl.col(self._partial) / pl.col("n_positive")

    def undefined(self) -> list[Reason]:
        return [_one_class()]


# --- the confusion family at a threshold -----------------------------------------------------


@dataclass(frozen=True)
class ConfusionMetric(SliceMetric):
    """Base of the metrics of the confusion matrix at ``threshold`` (contract §2.3).

    A query is predicted positive when ``prob >= threshold`` (default 0.5). The slice's counts
    ``tp``, ``fp``, ``tn``, ``fn`` are computed first; each metric divides them once. A ratio
    whose denominator is 0 is null with a note naming why, never scikit-learn's
    ``zero_division`` value.
    """

    threshold: float = 0.5
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
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

    def partials(self) -> dict[str, pl.Expr]:
        is_positive = scored_is_positive()
        predicted_positive = scored_prob() >= self.threshold
        return {
            "tp": (predicted_positive & is_positive).sum(),
            "fp": (predicted_positive & ~is_positive).sum(),
            "tn": (~predicted_positive & ~is_positive).sum(),
            "fn": (~predicted_positive & is_positive).sum(),
        }


def _count(name: str) -> pl.Expr:
    """A confusion count as Float64 (products of counts overflow 64-bit integers quickly)."""
    return pl.col(name).cast(pl.Float64)


_NO_POSITIVE: Reason = (pl.col("tp") + pl.col("fn") == 0, NO_POSITIVE)
_NO_NEGATIVE: Reason = (pl.col("tn") + pl.col("fp") == 0, NO_NEGATIVE)
_NO_PREDICTED_POSITIVE: Reason = (pl.col("tp") + pl.col("fp") == 0, NO_PREDICTED_POSITIVE)
_NO_PREDICTED_NEGATIVE: Reason = (pl.col("tn") + pl.col("fn") == 0, NO_PREDICTED_NEGATIVE)


class _ConfusionCount(ConfusionMetric):
    """A count: defined on every slice (0 when empty) and summed, not averaged."""

    summary = "sum"
    defined_when_empty = True

    def value(self) -> pl.Expr:
        return _count(self.key)


class TruePositives(_ConfusionCount):
    """TP: positives predicted positive (``label = 1`` and ``prob >= threshold``)."""

    key = printed = "tp"


class TrueNegatives(_ConfusionCount):
    """TN: negatives predicted negative (``label = 0`` and ``prob < threshold``)."""

    key = printed = "tn"


class FalsePositives(_ConfusionCount):
    """FP: negatives predicted positive (false alarms); lower is better."""

    key = printed = "fp"
    higher_is_better = False


class FalseNegatives(_ConfusionCount):
    """FN: positives predicted negative (missed evidence); lower is better."""

    key = printed = "fn"
    higher_is_better = False


class Sensitivity(ConfusionMetric):
    """Sensitivity (TPR, recall): ``TP / (TP + FN)``, the fraction of positives detected.

    Null with note "no positive in the slice" when ``TP + FN = 0``. Example: TP 3, FN 1 → 0.75.
    """

    key = printed = "sensitivity"

    def value(self) -> pl.Expr:
        return safe_divide(_count("tp"), _count("tp") + _count("fn"))

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE]


class Specificity(ConfusionMetric):
    """Specificity (TNR): ``TN / (TN + FP)``, the fraction of negatives correctly rejected.

    Null with note "no negative in the slice" when ``TN + FP = 0``. Example: TN 9, FP 1 → 0.9.
    """

    key = printed = "specificity"

    def value(self) -> pl.Expr:
        return safe_divide(_count("tn"), _count("tn") + _count("fp"))

    def undefined(self) -> list[Reason]:
        return [_NO_NEGATIVE]


class FalsePositiveRate(ConfusionMetric):
    """False positive rate (false alarm rate): ``FP / (TN + FP)``; lower is better.

    Null with note "no negative in the slice" when ``TN + FP = 0``. Example: TN 9, FP 1 → 0.1.
    """

    key = printed = "fpr"
    higher_is_better = False

    def value(self) -> pl.Expr:
        return safe_divide(_count("fp"), _count("tn") + _count("fp"))

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
        return safe_divide(_count("tp"), _count("tp") + _count("fp"))

    def undefined(self) -> list[Reason]:
        return [_NO_PREDICTED_POSITIVE]


class NegativePredictiveValue(ConfusionMetric):
    """NPV: ``TN / (TN + FN)``, the fraction of negative predictions that are right.

    Null with note "no predicted negative" when ``TN + FN = 0``. Example: TN 8, FN 2 → 0.8.
    """

    key = printed = "npv"

    def value(self) -> pl.Expr:
        return safe_divide(_count("tn"), _count("tn") + _count("fn"))

    def undefined(self) -> list[Reason]:
        return [_NO_PREDICTED_NEGATIVE]


class F1Score(ConfusionMetric):
    """F1: harmonic mean of precision and recall, ``2·P·R / (P + R) = 2 TP / (2 TP + FP + FN)``.

    Null when precision or recall is undefined (note "no positive in the slice" or "no predicted
    positive"); 0 when both are defined and TP = 0. Example: TP 3, FP 1, FN 1 → 6 / 8 = 0.75.
    """

    key = printed = "f1"

    def value(self) -> pl.Expr:
        return safe_divide(2 * _count("tp"), 2 * _count("tp") + _count("fp") + _count("fn"))

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE, _NO_PREDICTED_POSITIVE]


class MatthewsCorrelation(ConfusionMetric):
    """MCC: ``(TP·TN − FP·FN) / √((TP+FP)(TP+FN)(TN+FP)(TN+FN))``, in [−1, 1].

    Null when any factor of the denominator is 0, with a note naming the first empty one ("no
    positive in the slice", "no negative in the slice", "no predicted positive", "no predicted
    negative"). Example: TP 1, TN 1, FP 1, FN 1 → 0.
    """

    key = printed = "mcc"

    def value(self) -> pl.Expr:
        tp, tn, fp, fn = (_count(name) for name in ("tp", "tn", "fp", "fn"))
        denominator = ((tp + fp) * (tp + fn)).sqrt() * ((tn + fp) * (tn + fn)).sqrt()
        return safe_divide(tp * tn - fp * fn, denominator)

    def undefined(self) -> list[Reason]:
        return [_NO_POSITIVE, _NO_NEGATIVE, _NO_PREDICTED_POSITIVE, _NO_PREDICTED_NEGATIVE]


class BalancedAccuracy(ConfusionMetric):
    """Balanced accuracy: ``(sensitivity + specificity) / 2``.

    Null when either is undefined (note "no positive in the slice" or "no negative in the
    slice"). Example: sensitivity 0.75, specificity 0.9 → 0.825.
    """

    key = printed = "balanced_accuracy"

    def value(self) -> pl.Expr:
        sensitivity = safe_divide(_count("tp"), _count("tp") + _count("fn"))
        specificity = safe_divide(_count("tn"), _count("tn") + _count("fp"))
        return (sensitivity + specificity) / 2

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
