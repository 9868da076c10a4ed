"""Calibration metrics of the evidence gate (contract §2.4): Brier score and ECE.

Both read the ``queries`` table's ``label`` (gold has-evidence, 0 or 1) and ``prob`` (predicted
probability of evidence) and are lower-is-better. The Brier score is query level (its slice mean
is the score; the engine weights that mean with the unit weights). ECE is a property of a whole
slice (set level): ``state()`` sums weight, weighted prob and weighted label per bin
(:func:`~evalframe.metrics.curves.calibration_bins`), ``finalize()`` combines the bins of each
slice of ``by``. Rows whose ``label`` or ``prob`` is missing are not used (``n`` counts the rows
used, not their weight).

>>> import polars as pl
>>> queries = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.2, 0.6, 0.4]})
>>> round(queries.select(Brier().expr().mean()).collect().item(), 6)
0.0925
>>> ExpectedCalibrationError(bins=2).compute(queries, by=[]).collect()
shape: (1, 3)
┌─────┬───────┬──────┐
│ n   ┆ value ┆ note │
│ --- ┆ ---   ┆ ---  │
│ i64 ┆ f64   ┆ str  │
╞═════╪═══════╪══════╡
│ 4   ┆ 0.275 ┆ null │
└─────┴───────┴──────┘
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evalframe.metrics.base import (
    QueryMetric,
    SetMetric,
    TargetCategory,
)
from evalframe.metrics.params import param
from evalframe.metrics.set_values import NO_SCORED_QUERY, NO_WEIGHT, finalized, per_slice
from evalframe.metrics.curves import BIN, Exact, bin_index, calibration_bins, exact_sums


@dataclass(frozen=True)
class Brier(QueryMetric):
    """Brier term of a query: ``(prob − label)²``; its mean over a slice is the Brier score.

    Equal to ``sklearn.metrics.brier_score_loss`` on the slice; lower is better (0 is perfect).
    Null (reason "no label" or "no prob") when either is missing. Example: prob 0.9, label 1 →
    ``0.01``; prob 0.4, label 0 → ``0.16``.
    """

    target: ClassVar[TargetCategory] = TargetCategory.CALIBRATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    @property
    def name(self) -> str:
        return "brier"

    def expr(self) -> pl.Expr:
        return (pl.col("prob").cast(pl.Float64) - pl.col("label")).pow(2)

    def skip_reason(self) -> pl.Expr:
        return (
            pl.when(pl.col("label").is_null())
            .then(pl.lit("no label"))
            .when(pl.col("prob").is_null())
            .then(pl.lit("no prob"))
        )


@dataclass(frozen=True)
class ExpectedCalibrationError(SetMetric):
    """Expected calibration error over ``bins`` equal-width bins of ``prob`` (default 10).

    Bin ``b`` holds the probabilities in ``[b/B, (b+1)/B)``, the last bin ``[(B−1)/B, 1]`` is
    closed (so 1.0 falls in it and 0.1 starts the second of ten bins). Over the non-empty bins,
    with each query's unit weight ``w`` (scikit-learn's ``sample_weight`` convention)::

        ECE = Σ_b (W_b / W) · |mean_w prob_b − mean_w label_b|  =  Σ_b |Σ_b w·prob − Σ_b w·label| / Σ w

    With unit weights ``W_b`` is the bin's size. The state (shared by ECE metrics with equal
    ``bins``) is :func:`~evalframe.metrics.curves.calibration_bins`: per bin ``n``, ``weight``,
    ``weighted_prob`` and ``weighted_label``. Lower is better (0 is perfect calibration).
    Undefined (null, with a note) on a slice with no query that has both label and prob, or
    whose used queries all weigh 0. Example with 2 bins: probs ``[0.2, 0.4]`` with labels
    ``[0, 0]`` and probs ``[0.6, 0.9]`` with labels ``[1, 1]`` → ``(|0.6 − 0| + |1.5 − 2|) / 4 = 0.275``.
    """

    bins: int = param(10, "number of equal-width bins on [0, 1]", low=1)
    target: ClassVar[TargetCategory] = TargetCategory.CALIBRATION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("label", "prob")}
    subset: ClassVar[str] = "all queries"
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    state_keys: ClassVar[tuple[str, ...]] = (BIN,)
    state_kinds: ClassVar[Mapping[str, str] | None] = {"n": "count", "weight": "sum", "weighted_prob": "sum",
                                                       "weighted_label": "sum"}

    @property
    def name(self) -> str:
        return "ece" if self.bins == 10 else f"ece(bins={self.bins})"

    @property
    def state_id(self) -> object:
        return ("calibration_bins", self.bins)

    def bin_index(self) -> pl.Expr:
        """Index of a row's bin (null for a row without label or prob): see :func:`~evalframe.metrics.curves.bin_index`."""
        return bin_index(self.bins)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return calibration_bins(rows, by, self.bins)

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        gaps = (pl.col("weighted_prob") - pl.col("weighted_label")).abs()
        table = exact_sums(state, by, {"n": pl.col("n").sum(), "weight": Exact(pl.col("weight")), "gap_sum": Exact(gaps)},
                           maintain_order=True)
        reasons = [(pl.col("n") == 0, NO_SCORED_QUERY), (pl.col("weight") == 0, NO_WEIGHT)]
        return finalized(table, by, pl.col("gap_sum") / pl.col("weight"), reasons)

def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("brier", Brier, aliases=("brier_score",),
                   meaning="Mean squared gap between the predicted probability and the outcome (0 = perfect).", kind="score"),
        MetricSpec(
            "ece",
            ExpectedCalibrationError,
                   meaning="Gap between predicted probabilities and observed frequencies, over {bins} bins (0 = calibrated).", kind="score"),
    ]


SPECS = _specs()
