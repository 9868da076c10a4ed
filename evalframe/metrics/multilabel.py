"""Per-post multi-label metrics of the evidence gate (contract §6): the first metrics of the unit ``post``.

A *post* is judged on all its criteria at once. The rows are those of the ``queries`` table, one
per (post, criterion) and system, with ``label`` (gold has-evidence, 0 or 1), ``prob`` (predicted
probability of evidence) and ``criterion_id``. A post's **label vector** is its ``label`` over its
criteria, its **prediction vector** ``prob >= threshold`` (default 0.5). Stacking the posts of a
slice gives the indicator matrices ``Y_true`` and ``Y_pred`` (posts as samples, criteria as
labels) on which every metric here equals scikit-learn, with ``sample_weight`` = the posts'
weights (:data:`~evalframe.metrics.base.WEIGHT`):

=================  =========  ========================================================
metric             level      scikit-learn
=================  =========  ========================================================
``exact_match``    per post   ``accuracy_score(Y_true, Y_pred)`` (subset accuracy)
``hamming_score``  per post   ``1 − hamming_loss(Y_true, Y_pred)``
``hamming_loss``   per post   ``hamming_loss(Y_true, Y_pred)`` (lower is better)
``macro_f1``       per post   ``f1_score(Y_true, Y_pred, average="samples")``
``micro_f1``       set        ``f1_score(..., average="micro")``
``weighted_f1``    set        ``f1_score(..., average="weighted")``
``label_macro_f1`` set        ``f1_score(..., average="macro")``
=================  =========  ========================================================

``macro_f1`` is the contract's "Macro F1 = average of per-post F1" (DESIGN §4), which
scikit-learn calls ``samples``; scikit-learn's ``macro`` (the mean over criteria) is
``label_macro_f1``.

The per-post metrics are query-level metrics of the unit ``post``: ``expr()`` aggregates one
post's rows and the engine takes the weighted mean of the per-post values over a slice. The
set metrics share one state per threshold: weighted true positives, false positives and false
negatives per slice and criterion, from which micro (pooled), weighted and label-macro F1 follow.

Rows whose ``label`` or ``prob`` is missing are not used (a post is judged on the criteria it
has both for); a post without any such row has no value (null, reason "no criterion with both
label and prob"). An F1 whose denominator ``2·TP + FP + FN`` is 0 (nothing true, nothing
predicted) is ``zero_division``: 0.0 by default as in scikit-learn, 1.0 on request, or null
(``zero_division=null``, scikit-learn's ``np.nan``: left out of the averages).

>>> import polars as pl
>>> queries = pl.LazyFrame({
...     "post_id": ["p1", "p1", "p1", "p2", "p2", "p2"],
...     "criterion_id": ["A.1", "A.2", "A.3"] * 2,
...     "label": [1, 0, 1, 0, 0, 0],
...     "prob": [0.9, 0.6, 0.2, 0.1, 0.3, 0.4],
... })
>>> per_post = queries.group_by("post_id").agg(
...     ExactMatch().expr().alias("exact_match"), HammingScore().expr().alias("hamming_score"),
...     MacroF1().expr().alias("macro_f1"))
>>> per_post.sort("post_id").collect()
shape: (2, 4)
┌─────────┬─────────────┬───────────────┬──────────┐
│ post_id ┆ exact_match ┆ hamming_score ┆ macro_f1 │
│ ---     ┆ ---         ┆ ---           ┆ ---      │
│ str     ┆ f64         ┆ f64           ┆ f64      │
╞═════════╪═════════════╪═══════════════╪══════════╡
│ p1      ┆ 0.0         ┆ 0.333333      ┆ 0.5      │
│ p2      ┆ 1.0         ┆ 1.0           ┆ 0.0      │
└─────────┴─────────────┴───────────────┴──────────┘
>>> MicroF1().compute(queries, by=[]).collect()
shape: (1, 3)
┌─────┬───────┬──────┐
│ n   ┆ value ┆ note │
│ --- ┆ ---   ┆ ---  │
│ i64 ┆ f64   ┆ str  │
╞═════╪═══════╪══════╡
│ 2   ┆ 0.5   ┆ null │
└─────┴───────┴──────┘
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import (
    QueryMetric,
    SetMetric,
    TargetCategory,
)
from evalframe.metrics.curves import Exact, exact_sums, is_scored, weight_where
from evalframe.metrics.params import param

#: The unit of every metric here: all criteria of one post (its key columns come from the pipeline).
POST_UNIT = "post"

#: Key column of the set metrics' state rows: the criterion. A private name, so that a slice
#: by ``criterion_id`` does not give the state two columns of one name.
CRITERION_KEY = "_criterion_id"
#: A working column of :meth:`CriterionF1Metric.state`: true on the row that counts its post.
POST_START = "_post_start"

# --- reasons for an undefined value ----------------------------------------------------------

NO_SCORED_CRITERION = "no criterion with both label and prob"
NO_POSITIVE_AT_ALL = "no true and no predicted positive"
NO_POST = "no post with a criterion with both label and prob in the slice"
NO_POSITIVE_IN_SLICE = "no true and no predicted positive in the slice"
NO_CRITERION_WITH_POSITIVE = "no criterion with a true or predicted positive in the slice"


# --- parameters ------------------------------------------------------------------------------


def _threshold() -> float:
    """The declaration of the decision threshold (a pipeline's ``parameters:`` may set it)."""
    return param(0.5, "a criterion is predicted positive when prob >= threshold", low=0, high=1, shared=True)


def _zero_division() -> float | None:
    """The declaration of ``zero_division`` (normalised first by :func:`_check_zero_division`)."""
    return param(0.0, "F1 where nothing is true or predicted (0/0): 0.0, 1.0, or null (written null or nan; left out)",
                 kind=float_or_null, choices=(0.0, 1.0, None))


def _check_zero_division(zero_division: object, metric: str) -> float | None:
    """0.0, 1.0 or None (null); NaN, scikit-learn's spelling of "no value", means None."""
    if zero_division is None:
        return None
    if isinstance(zero_division, int | float) and not isinstance(zero_division, bool):
        if math.isnan(zero_division):
            return None
        if zero_division in (0, 1):
            return float(zero_division)
    msg = f"`{metric}` needs zero_division 0.0, 1.0 or None (null), got {zero_division!r}"
    raise ConfigError(msg)


def float_or_null(text: str) -> float | None:
    """Parse a ``zero_division`` value of a metric string: ``null`` (or ``nan``, ``none``) or a number."""
    if text.strip().lower() in {"null", "nan", "none"}:
        return None
    return float(text)


def _printed(key: str, threshold: float, zero_division: float | None = 0.0) -> str:
    """``key`` with the parameters that differ from their defaults: ``micro_f1(threshold=0.3)``."""
    params = [] if threshold == 0.5 else [f"threshold={threshold!r}"]
    if zero_division != 0.0:
        params.append("zero_division=" + ("null" if zero_division is None else repr(zero_division)))
    return key + (f"({','.join(params)})" if params else "")


# --- the rows' truth and prediction ----------------------------------------------------------


def is_true() -> pl.Expr:
    """Gold has-evidence (``label == 1``); null where ``label`` is missing."""
    return pl.col("label") == 1


def is_predicted(threshold: float) -> pl.Expr:
    """Predicted has-evidence (``prob >= threshold``); null where ``prob`` is missing."""
    return pl.col("prob") >= threshold


# Over one post's rows (inside a group-by on the post's keys). A comparison with a missing label
# or prob is null, which ``sum`` skips: unscored rows add to no count.


def n_criteria() -> pl.Expr:
    """The post's criteria with both label and prob."""
    return is_scored().sum()


def count_where(condition: pl.Expr) -> pl.Expr:
    """How many of the post's rows satisfy ``condition`` (Float64, null conditions not counted)."""
    return condition.sum().cast(pl.Float64)


def post_confusion(threshold: float) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The post's true positives, false positives and false negatives over its criteria."""
    true, predicted = is_true(), is_predicted(threshold)
    return count_where(true & predicted), count_where(~true & predicted), count_where(true & ~predicted)


# --- per-post metrics ------------------------------------------------------------------------


@dataclass(frozen=True)
class PostMetric(QueryMetric):
    """Base of the per-post metrics: one value per post from its criteria at ``threshold``."""

    threshold: float = _threshold()
    unit: ClassVar[str] = POST_UNIT
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all posts"
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    #: Name in the registry.
    key: ClassVar[str]

    @property
    def name(self) -> str:
        return _printed(self.key, self.threshold)

    def n_wrong(self) -> pl.Expr:
        """The post's criteria whose prediction differs from the label."""
        return count_where(is_true() != is_predicted(self.threshold))

    def skip_reason(self) -> pl.Expr:
        return pl.when(n_criteria() == 0).then(pl.lit(NO_SCORED_CRITERION))


class ExactMatch(PostMetric):
    """Exact match: 1.0 when every criterion of the post is predicted right, else 0.0.

    Its (weighted) mean over a slice's posts is the exact match rate of contract §6.1,
    ``sklearn.metrics.accuracy_score(Y_true, Y_pred)`` on the multi-label matrices (subset
    accuracy). Null (reason "no criterion with both label and prob") for a post with no usable
    criterion. Example: labels ``[1, 0, 1]``, predictions ``[1, 0, 0]`` → 0.0; labels
    ``[0, 0]``, predictions ``[0, 0]`` → 1.0.
    """

    key = "exact_match"

    def expr(self) -> pl.Expr:
        return pl.when(n_criteria() > 0).then((self.n_wrong() == 0).cast(pl.Float64))


class HammingScore(PostMetric):
    """Hamming score: the fraction of the post's criteria predicted right.

    ``(criteria right) / (criteria)``; its mean over posts is contract §6.2's Hamming score,
    ``1 − sklearn.metrics.hamming_loss(Y_true, Y_pred)`` (the contract's heading calls it
    "subset accuracy"; scikit-learn's subset accuracy is ``exact_match``). Null for a post with
    no usable criterion. Example: labels ``[1, 0, 1]``, predictions ``[1, 0, 0]`` → 2/3.
    """

    key = "hamming_score"

    def expr(self) -> pl.Expr:
        n = n_criteria()
        return pl.when(n > 0).then((n - self.n_wrong()) / n)


class HammingLoss(PostMetric):
    """Hamming loss: the fraction of the post's criteria predicted wrong; lower is better.

    ``(criteria wrong) / (criteria)``; its mean over posts is contract §6.3's Hamming loss,
    ``sklearn.metrics.hamming_loss(Y_true, Y_pred)`` (``1 − hamming_score``). Null for a post
    with no usable criterion. Example: labels ``[1, 0, 1]``, predictions ``[1, 0, 0]`` → 1/3.
    """

    key = "hamming_loss"
    higher_is_better: ClassVar[bool] = False

    def expr(self) -> pl.Expr:
        n = n_criteria()
        return pl.when(n > 0).then(self.n_wrong() / n)


@dataclass(frozen=True)
class MacroF1(PostMetric):
    """Per-post F1 over the post's criteria; its mean is the contract's "Macro F1" (§6.4).

    ``F1 = 2·TP / (2·TP + FP + FN)`` with the counts over the post's criteria; the (weighted)
    mean over posts is ``sklearn.metrics.f1_score(Y_true, Y_pred, average="samples")``
    (DESIGN §4; scikit-learn's ``macro``, over criteria, is ``label_macro_f1``).

    A post with no true and no predicted positive has no F1 (0 / 0): it scores
    ``zero_division``, 0.0 by default as scikit-learn, or 1.0; how many posts did is counted in
    the summary's note (:meth:`note`). With ``zero_division=None`` (``null``) such a post is
    null with the reason "no true and no predicted positive" and left out of the mean, as
    scikit-learn's ``zero_division=np.nan``. A post with no usable criterion is null (reason
    "no criterion with both label and prob"). Example: labels ``[1, 0, 1]``, predictions
    ``[1, 1, 0]`` → TP 1, FP 1, FN 1 → 2 / 4 = 0.5; labels ``[0, 0]``, predictions ``[0, 0]``
    → 0.0 (``zero_division``).
    """

    zero_division: float | None = _zero_division()
    key = "macro_f1"

    def __post_init__(self) -> None:
        object.__setattr__(self, "zero_division", _check_zero_division(self.zero_division, self.key))
        super().__post_init__()

    @property
    def name(self) -> str:
        return _printed(self.key, self.threshold, self.zero_division)

    def _denominator(self) -> pl.Expr:
        tp, fp, fn = post_confusion(self.threshold)
        return 2 * tp + fp + fn

    def _no_positive_at_all(self) -> pl.Expr:
        return (n_criteria() > 0) & (self._denominator() == 0)

    def expr(self) -> pl.Expr:
        tp, _, _ = post_confusion(self.threshold)
        denominator = self._denominator()
        return (
            pl.when(n_criteria() == 0)
            .then(pl.lit(None, dtype=pl.Float64))
            .when(denominator == 0)
            .then(pl.lit(self.zero_division, dtype=pl.Float64))
            .otherwise(2 * tp / denominator)
        )

    def skip_reason(self) -> pl.Expr:
        return (
            pl.when(n_criteria() == 0)
            .then(pl.lit(NO_SCORED_CRITERION))
            .when(self._denominator() == 0)
            .then(pl.lit(NO_POSITIVE_AT_ALL))
        )

    def note(self) -> tuple[pl.Expr, str] | None:
        if self.zero_division is None:  # such posts are null and counted among the skipped
            return None
        return self._no_positive_at_all(), f"{{count}} posts with {NO_POSITIVE_AT_ALL} scored {self.zero_division!r}"


# --- set metrics over pooled counts ----------------------------------------------------------


@dataclass(frozen=True)
class CriterionF1Metric(SetMetric):
    """Base of the set-level multi-label F1 metrics: weighted confusion counts per criterion.

    The state has one row per slice of ``by`` and criterion (key ``_criterion_id``) with

    - ``tp``, ``fp``, ``fn``: the weighted true positives, false positives and false negatives
      of the criterion in the slice (each row adds its post's weight, as scikit-learn's
      ``sample_weight``; added in ascending order, so the bits do not depend on row order);
    - ``n_scored``: the rows with label and prob (a criterion with none is not in the slice);
    - ``n``: posts, each counted once on the row of its first criterion with label and prob
      (in row order), so that summing ``n`` over criteria counts the slice's posts whatever
      the order, and parts split by post merge by summation.

    Micro, weighted and label-macro F1 at one threshold share it (equal :attr:`state_id`);
    ``zero_division`` applies in :meth:`finalize` only. ``unit_keys`` names the columns of a
    post (``post_id`` unless the pipeline's ``units:`` says otherwise); the state needs them
    only to count posts. A slice without a usable post is null with the note "no post with a
    criterion with both label and prob in the slice".
    """

    threshold: float = _threshold()
    zero_division: float | None = _zero_division()
    unit_keys: tuple[str, ...] = field(default=("post_id",), compare=False, repr=False)
    unit: ClassVar[str] = POST_UNIT
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    subset: ClassVar[str] = "all posts"
    state_keys: ClassVar[tuple[str, ...]] = (CRITERION_KEY,)
    state_kinds: ClassVar[Mapping[str, str] | None] = {"tp": "sum", "fp": "sum", "fn": "sum", "n_scored": "count",
                                                       "n": "count"}
    key: ClassVar[str]

    def __post_init__(self) -> None:
        object.__setattr__(self, "zero_division", _check_zero_division(self.zero_division, self.key))
        super().__post_init__()
        if isinstance(self.unit_keys, str) or not self.unit_keys:
            msg = f"`{self.key}` needs the key columns of a post as a non-empty tuple, got {self.unit_keys!r}"
            raise ConfigError(msg)
        object.__setattr__(self, "unit_keys", tuple(self.unit_keys))

    @property
    def name(self) -> str:
        return _printed(self.key, self.threshold, self.zero_division)

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": ("label", "prob", "criterion_id", *self.unit_keys)}

    @property
    def state_id(self) -> object:
        return ("multilabel_criterion_counts", self.threshold, self.unit_keys)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        scored = is_scored()
        true, predicted = is_true(), is_predicted(self.threshold)
        # Each post is counted once, on its first scored row: the slice's count is the same in any
        # row order (which criterion row carries it may differ; finalize adds over criteria).
        is_post_start = scored & pl.when(scored).then(pl.struct(*by, *self.unit_keys)).is_first_distinct()

        # Sums added exactly (no sort per group: the bootstrap's per-unit states are millions of groups).
        keyed = rows.with_columns(is_post_start.alias(POST_START), pl.col("criterion_id").alias(CRITERION_KEY))
        return exact_sums(keyed, [*by, CRITERION_KEY], {
            "tp": weight_where(true & predicted),
            "fp": weight_where(~true & predicted),
            "fn": weight_where(true & ~predicted),
            "n_scored": scored.sum().cast(pl.Int64),
            "n": pl.col(POST_START).sum().cast(pl.Int64),
        }, maintain_order=True)

    def criterion_f1(self) -> pl.Expr:
        """Over state rows: the criterion's F1, ``zero_division`` where ``2·tp + fp + fn = 0``."""
        denominator = 2 * pl.col("tp") + pl.col("fp") + pl.col("fn")
        return pl.when(denominator > 0).then(2 * pl.col("tp") / denominator).otherwise(
            pl.lit(self.zero_division, dtype=pl.Float64)
        )

    def used(self) -> pl.Expr:
        """Over state rows: the criteria in the slice's mean (a usable row, a defined F1)."""
        return (pl.col("n_scored") > 0) & self.criterion_f1().is_not_null()

    def label_macro_sums(self) -> dict[str, pl.Expr | Exact]:
        """The slice sums of :meth:`label_macro`: the used criteria's F1 and their number."""
        return {"f1_sum": Exact(pl.when(self.used()).then(self.criterion_f1()).otherwise(0.0)),
                "criteria": self.used().sum()}

    def label_macro(self) -> pl.Expr:
        """Over a slice's sums: the mean F1 of its criteria, undefined ones left out."""
        return pl.when(pl.col("criteria") > 0).then(pl.col("f1_sum") / pl.col("criteria"))

    @abstractmethod
    def sums(self) -> dict[str, pl.Expr | Exact]:
        """Over one slice's state rows: the sums :meth:`value` reads (:class:`~evalframe.metrics.curves.Exact`:
        added exactly, in no order and with no sort; :func:`~evalframe.metrics.curves.exact_sums`)."""

    @abstractmethod
    def value(self) -> pl.Expr:
        """Over one slice's :meth:`sums`: the metric (null where undefined)."""

    #: The note of a slice with posts whose value is null (only with ``zero_division=None``).
    undefined_note: ClassVar[str] = NO_CRITERION_WITH_POSITIVE

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        sums = exact_sums(state, by, {"n": pl.col("n").sum().cast(pl.Int64), **self.sums()}, maintain_order=True)
        n = pl.col("n")
        value = pl.when(n > 0).then(self.value()).cast(pl.Float64)
        note = pl.when(n == 0).then(pl.lit(NO_POST)).when(value.is_null()).then(pl.lit(self.undefined_note))
        return sums.select(*by, n, value.alias("value"), note.cast(pl.String).alias("note"))


class MicroF1(CriterionF1Metric):
    """Micro F1: F1 of all (post, criterion) pairs of the slice pooled (contract §6.4).

    ``F1 = 2·TP / (2·TP + FP + FN)`` with TP, FP, FN the weighted counts summed over posts and
    criteria; equal to ``sklearn.metrics.f1_score(Y_true, Y_pred, average="micro",
    sample_weight=post weights)``. When the slice has no true and no predicted positive at all
    (or all its weight is 0), the value is ``zero_division`` (0.0 default, as scikit-learn), or
    null with the note "no true and no predicted positive in the slice" for
    ``zero_division=None``. A slice without a usable post is null (note "no post …").
    Example: posts ``[1, 0, 1]`` / ``[1, 1, 0]`` and ``[0, 1]`` / ``[0, 1]`` (labels /
    predictions) → TP 2, FP 1, FN 1 → 4 / 6 = 0.667.
    """

    key = "micro_f1"
    undefined_note = NO_POSITIVE_IN_SLICE

    def sums(self) -> dict[str, pl.Expr | Exact]:
        return {name: Exact(pl.col(name)) for name in ("tp", "fp", "fn")}

    def value(self) -> pl.Expr:
        tp, fp, fn = pl.col("tp"), pl.col("fp"), pl.col("fn")
        denominator = 2 * tp + fp + fn
        return pl.when(denominator > 0).then(2 * tp / denominator).otherwise(pl.lit(self.zero_division, dtype=pl.Float64))


class WeightedF1(CriterionF1Metric):
    """Weighted F1: per-criterion F1 averaged with the criteria's weighted support (contract §6.4).

    ``Σ_c support_c · F1_c / Σ_c support_c`` where ``support_c = TP_c + FN_c`` is the weighted
    number of posts with evidence for criterion ``c``: ``sklearn.metrics.f1_score(Y_true, Y_pred,
    average="weighted", sample_weight=post weights)``, the "sklearn default" of the contract's
    table. A criterion with no true and no predicted positive has F1 ``zero_division``, but its
    support is 0, so it never moves the value.

    When the slice has no true positive label at all (every support 0) the weights are
    undefined; scikit-learn (1.9) then falls back to the unweighted mean of the per-criterion
    F1, i.e. ``label_macro_f1``, and so does evalframe: 0.0 with the default
    ``zero_division=0.0`` (F1 is 0 for a criterion predicted positive somewhere, 0.0 for the
    others), the fraction of criteria never predicted with ``zero_division=1.0``, and with
    ``zero_division=None`` 0.0 if any criterion was predicted, else null (note "no criterion
    with a true or predicted positive in the slice"). Example: criterion A support 2, F1 0.5;
    criterion B support 1, F1 1.0 → (2·0.5 + 1·1.0) / 3 = 0.667.
    """

    key = "weighted_f1"

    def sums(self) -> dict[str, pl.Expr | Exact]:
        support = pl.when(self.used()).then(pl.col("tp") + pl.col("fn")).otherwise(0.0)
        return {"support": Exact(support), "weighted_f1_sum": Exact(pl.when(self.used()).then(support * self.criterion_f1()).otherwise(0.0)),
                **self.label_macro_sums()}

    def value(self) -> pl.Expr:
        total_support = pl.col("support")
        return pl.when(total_support > 0).then(pl.col("weighted_f1_sum") / total_support).otherwise(self.label_macro())


class LabelMacroF1(CriterionF1Metric):
    """Label-macro F1: the unweighted mean over the slice's criteria of each criterion's F1.

    ``mean_c 2·TP_c / (2·TP_c + FP_c + FN_c)`` with weighted counts per criterion:
    ``sklearn.metrics.f1_score(Y_true, Y_pred, average="macro", sample_weight=post weights)``.
    (Not the contract's "Macro F1", which averages over posts: that is ``macro_f1``.) A criterion
    with no true and no predicted positive in the slice scores ``zero_division`` (0.0 default,
    as scikit-learn); with ``zero_division=None`` it is left out of the mean (scikit-learn's
    ``np.nan``), and a slice where every criterion is left out is null (note "no criterion with
    a true or predicted positive in the slice"). The criteria are those with at least one usable
    row in the slice. Example: criterion A F1 0.5, criterion B F1 1.0, criterion C never true
    nor predicted → (0.5 + 1.0 + 0.0) / 3 = 0.5, or (0.5 + 1.0) / 2 = 0.75 with
    ``zero_division=None``.
    """

    key = "label_macro_f1"

    def sums(self) -> dict[str, pl.Expr | Exact]:
        return self.label_macro_sums()

    def value(self) -> pl.Expr:
        return self.label_macro()


PER_POST_METRICS: tuple[type[PostMetric], ...] = (ExactMatch, HammingScore, HammingLoss, MacroF1)
SET_METRICS: tuple[type[CriterionF1Metric], ...] = (MicroF1, WeightedF1, LabelMacroF1)


def _summary_line(metric: type) -> str:
    return (metric.__doc__ or "").strip().splitlines()[0]


def _specs():
    from evalframe.metrics.registry import MetricSpec

    aliases = {"macro_f1": ("samples_f1",)}
    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "exact_match": ("Share of posts whose every criterion is decided right.", "rate"),
        "hamming_score": ("Share of a post's criteria decided right, averaged over posts.", "rate"),
        "hamming_loss": ("Share of a post's criteria decided wrong, averaged over posts.", "rate"),
        "macro_f1": ("F1 of each post's flagged criteria, averaged over posts.", "score"),
        "micro_f1": ("F1 of all (post, criterion) decisions pooled.", "score"),
        "weighted_f1": ("F1 per criterion, averaged with each criterion's share of evidence.", "score"),
        "label_macro_f1": ("F1 per criterion, averaged with every criterion counting equally.", "score"),
    }
    return [
        MetricSpec(
            metric.key,
            metric,
            _summary_line(metric),
            aliases=aliases.get(metric.key, ()),
            meaning=meanings[metric.key][0], kind=meanings[metric.key][1],
        )
        for metric in (*PER_POST_METRICS, *SET_METRICS)
    ]


SPECS = _specs()
