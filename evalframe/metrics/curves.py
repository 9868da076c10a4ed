"""Curves (ROC points, bins): the mergeable states that set metrics of scored queries read.

A set metric's state (DESIGN §3, "Mergeable partials") is a table with one row per slice and
key whose other columns are sums, so that the state of disjoint parts of the data is their
states added up (:func:`evalframe.metrics.base.merge_states`). This module builds the two
states keyed by a value of ``prob``:

- :func:`roc_points`: one row per slice and distinct probability with the rows, the positive
  weight and the negative weight at that probability. AUROC, AUPRC and TPR@FPR read it through
  :func:`points_tp` and :func:`points_fp`, the weight above each threshold.
- :func:`calibration_bins`: one row per slice and equal-width bin of probability with the
  bin's weight, weighted probability and weighted label. ECE reads it.

Both use the rows with both ``label`` and ``prob`` (:func:`is_scored`), each weighted with its
unit's weight :data:`~evalframe.metrics.base.WEIGHT` as scikit-learn's ``sample_weight``. A
slice's unused rows become one row with a null key and zero sums, so that a slice none of whose
rows is used is still there (with ``n`` = 0). A state has the same bits whatever the order of
the rows: weighted counts are added exactly (:func:`weighted_counts`), other float sums in
ascending order (:func:`ordered_sum`).

>>> import polars as pl
>>> rows = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1],
...                      "_weight": [1.0, 2.0, 0.5, 1.0]})
>>> roc_points(rows, by=[]).sort("prob", descending=True).collect().rows()
[(0.9, 1, 1.0, 0.0), (0.4, 2, 0.5, 2.0), (0.1, 1, 0.0, 1.0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalframe.metrics.base import weight

#: State key of :func:`roc_points`: the threshold's probability.
PROB = "prob"
#: State key of :func:`calibration_bins`: the bin's index, 0 … bins − 1.
BIN = "bin"

# --- the rows used and order-independent sums ----------------------------------------------


def is_scored() -> pl.Expr:
    """Rows a classification or calibration metric uses: both ``label`` and ``prob`` present."""
    return pl.col("label").is_not_null() & pl.col("prob").is_not_null()


def ordered_sum(values: pl.Expr) -> pl.Expr:
    """Sum of floats added in ascending order: the same bits whatever the order of the rows.

    A plain ``sum`` adds in row order (and the optimiser drops a ``sort`` placed before it),
    so the last bit of a value would depend on how the input file happens to be ordered.
    """
    return values.sort().cum_sum().last().fill_null(0.0)


def weighted_sum(where: pl.Expr, values: pl.Expr | None = None) -> pl.Expr:
    """Σ weight · ``values`` over the rows where ``where`` holds (Σ weight without ``values``).

    Added with :func:`ordered_sum`. The rows left out count as 0.0, which sorts before every
    non-negative term and adds nothing, so the sum has the bits of the one over the rows kept.
    An aggregation: it sorts each group, so keep it to group-bys with few groups.
    """
    term = weight() if values is None else weight() * values
    return ordered_sum(pl.when(where).then(term).otherwise(0.0))


def used_count() -> pl.Expr:
    """Rows used (a count of rows, not a weight), as Int64 so that merged counts do not overflow."""
    return is_scored().sum().cast(pl.Int64)


# --- weighted counts, added exactly ----------------------------------------------------------

#: The largest weight of a frame is 2^88 to 2^91 fixed-point units: Int128 holds the sum of
#: 2^36 rows of it, and every weight down to about 2^-36 of the largest is a whole number of units.
WEIGHT_UNIT_BITS = 89


def weight_units() -> pl.Expr:
    """Fixed-point units per unit of weight: about 2^89 / (the frame's largest weight).

    A power of two, so that multiplying a weight by it is exact; 1 when every weight is 0.
    """
    largest = weight().max()
    return pl.when(largest > 0).then(pl.lit(2.0).pow(WEIGHT_UNIT_BITS - largest.log(2).floor())).otherwise(1.0)


def weighted_counts(
    rows: pl.LazyFrame, keys: Sequence[str], conditions: Mapping[str, pl.Expr], *, used: pl.Expr | None = None
) -> pl.LazyFrame:
    """One group-by: per value of ``keys`` (one row when there are none) the rows used and weighted counts.

    Columns ``*keys``, ``n`` (Int64: rows used, ``used``, by default :func:`is_scored`) and, for
    each named condition, the weight of the rows where it holds (Float64; a condition should
    imply ``used``), i.e. scikit-learn's weighted count with ``sample_weight``.

    The weights are added exactly, so a count has the same bits whatever the order of the rows:
    each weight becomes a whole number of fixed-point units (:func:`weight_units`; exact for
    every weight down to 2^-36 of the frame's largest, smaller ones are cut to the unit), the
    units are added as Int128, and the total is rounded to Float64 once. That keeps the group-by
    on Polars' fast path: an ordered float sum (:func:`ordered_sum`) sorts every group, which
    takes seconds for the ROC points of 300k distinct probabilities. With integer weights every
    count is the exact integer.
    """
    used_rows = is_scored() if used is None else used
    units, used = "__weight_units", "__used"
    in_units = {
        f"__{name}": (pl.when(condition).then(weight()).otherwise(0.0) * pl.col(units)).cast(pl.Int128)
        for name, condition in conditions.items()
    }
    prepared = rows.with_columns(weight_units().alias(units)).with_columns(used_rows.alias(used), **in_units)
    sums = [
        pl.col(used).sum().cast(pl.Int64).alias("n"),
        *(pl.col(column).sum() for column in in_units),
        pl.col(units).first().fill_null(1.0),
    ]
    table = prepared.group_by(list(keys)).agg(sums) if keys else prepared.select(sums)
    counts = [(pl.col(f"__{name}").cast(pl.Float64) / pl.col(units)).alias(name) for name in conditions]
    return table.select(*keys, "n", *counts)


# --- ROC points ------------------------------------------------------------------------------


def roc_points(rows: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    """State of the ROC family: one row per slice of ``by`` and distinct probability.

    Columns ``*by``, ``prob`` (the threshold: "predicted positive when ``prob >= t``"; tied
    probabilities are one point, never split), ``n`` (Int64: rows used at ``t``),
    ``positive_weight`` and ``negative_weight`` (Float64: Σ weight of the rows at ``t`` whose
    ``label`` is 1, and of the others). A slice's unused rows give one row with a null ``prob``
    and zero sums. One group-by (:func:`weighted_counts`); rows come out in no particular order.

    >>> rows = pl.LazyFrame({"label": [1, 0, 1, None], "prob": [0.7, 0.7, 0.2, 0.5]})
    >>> from evalframe.metrics.base import with_unit_weights
    >>> roc_points(with_unit_weights(rows), by=[]).sort("prob", nulls_last=True).collect().rows()
    [(0.2, 1, 1.0, 0.0), (0.7, 2, 1.0, 1.0), (None, 0, 0.0, 0.0)]
    """
    scored = is_scored()
    positive = pl.col("label") == 1
    # An unused row's prob becomes null: the slice's unused rows are one point, of zero weight.
    keyed = rows.with_columns(pl.when(scored).then(pl.col("prob")).alias(PROB))
    conditions = {"positive_weight": scored & positive, "negative_weight": scored & ~positive}
    return weighted_counts(keyed, [*by, PROB], conditions)


def points(column: str) -> pl.Expr:
    """``column`` of one slice's :func:`roc_points`, highest probability first.

    Sorted here, whatever the order of the state's rows (probabilities are distinct within a
    slice, so the order is total). The row of unused rows (null ``prob``, zero weights) comes
    last, where it adds nothing to the running sums below.
    """
    return pl.col(column).sort_by(PROB, descending=True, nulls_last=True)


def points_tp() -> pl.Expr:
    """At each point ``t``, the positive weight with ``prob >= t`` (weighted true positives)."""
    return points("positive_weight").cum_sum()


def points_fp() -> pl.Expr:
    """At each point ``t``, the negative weight with ``prob >= t`` (weighted false positives)."""
    return points("negative_weight").cum_sum()


def total_positive_weight() -> pl.Expr:
    """The slice's positive weight: the true positives of the lowest threshold (``tps[-1]``)."""
    return points_tp().last().fill_null(0.0)


def total_negative_weight() -> pl.Expr:
    """The slice's negative weight: the false positives of the lowest threshold (``fps[-1]``)."""
    return points_fp().last().fill_null(0.0)


# --- calibration bins ------------------------------------------------------------------------


def bin_index(bins: int) -> pl.Expr:
    """Index of a used row's bin of ``bins`` equal-width bins: how many inner edges ``b/B`` are <= ``prob``.

    Bin ``b`` holds ``[b/B, (b+1)/B)``; the last bin is closed, so 1.0 stays in it. The edges
    are computed as ``b / B`` exactly as the definition reads, so a probability equal to an
    edge lands in the bin that starts there. Null for a row that is not used.
    """
    inner_edges = pl.Series([b / bins for b in range(1, bins)], dtype=pl.Float64)
    return pl.when(is_scored()).then(pl.lit(inner_edges).search_sorted(pl.col("prob"), side="right"))


def calibration_bins(rows: pl.LazyFrame, by: Sequence[str], bins: int) -> pl.LazyFrame:
    """State of ECE: one row per slice of ``by`` and non-empty bin of :func:`bin_index`.

    Columns ``*by``, ``bin`` (the bin's index), ``n`` (Int64: rows used in the bin), ``weight``
    (Σ w), ``weighted_prob`` (Σ w·prob) and ``weighted_label`` (Σ w·label), all Float64 sums
    over the bin's used rows. A slice's unused rows give one row with a null ``bin`` and zero
    sums. One group-by; rows come out in no particular order.

    >>> rows = pl.LazyFrame({"label": [0, 1, 1], "prob": [0.25, 0.375, 0.75], "_weight": [1.0, 3.0, 2.0]})
    >>> calibration_bins(rows, by=[], bins=2).sort("bin").collect().rows()
    [(0, 2, 4.0, 1.375, 3.0), (1, 1, 2.0, 1.5, 2.0)]
    """
    scored = is_scored()
    return (
        rows.with_columns(bin_index(bins).alias(BIN))
        .group_by([*by, BIN])
        .agg(
            n=used_count(),
            weight=weighted_sum(scored),
            weighted_prob=weighted_sum(scored, pl.col("prob").cast(pl.Float64)),
            weighted_label=weighted_sum(scored, pl.col("label").cast(pl.Float64)),
        )
    )


# --- ROC curves under many weight vectors (bootstrap replicates) ---------------------------

#: The fixed false-positive-rate grid of ROC bands: 0, 0.001, …, 1.
FPR_GRID_POINTS = 1001
#: Replicate columns handled at once by :func:`replicate_roc` (bounds temporary memory).
_REPLICATE_BLOCK = 128


def replicate_roc(prob, label, weights, fpr_grid=None):
    """ROC curves of one slice under each column of ``weights``, on a fixed FPR grid, and their AUROC.

    ``prob`` (n,), ``label`` (n,, 1 positive, anything else negative) and ``weights`` (n, R):
    column ``r`` is a weight vector (a bootstrap replicate: unit weight × Poisson count, from
    :func:`evalframe.engine.replicates.poisson_counts`, so the replicates are the ones the
    engine's AUROC CIs use). Rows must have both label and prob (:func:`is_scored`).

    One sort of ``prob`` (descending, ties kept together as one threshold, as
    :func:`roc_points`), then per column the cumulative weighted positives and negatives at
    each distinct threshold (``TP_r(t)``, ``FP_r(t)``), from the point (0, 0)::

        TPR_r(t) = TP_r(t) / TP_r(min t)        FPR_r(t) = FP_r(t) / FP_r(min t)
        AUROC_r  = Σ_t (FPR_r(t) − FPR_r(t−1)) · (TPR_r(t) + TPR_r(t−1)) / 2   (trapezoids, ties as diagonals)

    and ``TPR_r`` at each grid FPR by linear interpolation along the curve (at a vertical step,
    the top of the step). A column without positive or without negative weight gives NaN.
    Vectorised over rows and replicates: no Python loop over either (replicates are taken in
    blocks of 128 columns to bound memory). Returns ``(tpr_on_grid (R, G), auroc (R,))``.
    """
    import numpy as np

    prob = np.asarray(prob, dtype=np.float64)
    positive = np.asarray(label) == 1
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 1:
        weights = weights[:, None]
    grid = np.linspace(0.0, 1.0, FPR_GRID_POINTS) if fpr_grid is None else np.asarray(fpr_grid, dtype=np.float64)
    order = np.argsort(-prob, kind="stable")
    sorted_prob = prob[order]
    last_of_threshold = np.append(sorted_prob[1:] != sorted_prob[:-1], True) if prob.size else np.zeros(0, bool)
    is_positive = positive[order][:, None]
    replicates = weights.shape[1]
    tpr_grid = np.empty((replicates, grid.size))
    auroc = np.empty(replicates)
    for start in range(0, replicates, _REPLICATE_BLOCK):
        block = weights[order, start: start + _REPLICATE_BLOCK]
        width = block.shape[1]
        zero = np.zeros((1, width))
        cumulative = np.cumsum(block, axis=0)[last_of_threshold]
        tp = np.vstack([zero, np.cumsum(block * is_positive, axis=0)[last_of_threshold]])
        fp = np.vstack([zero, cumulative]) - tp
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr = tp / tp[-1]
            fpr = fp / fp[-1]
        auroc[start: start + width] = (np.diff(fpr, axis=0) * (tpr[1:] + tpr[:-1]) / 2).sum(axis=0)
        tpr_grid[start: start + width] = _interpolate_columns(fpr, tpr, grid)
    return tpr_grid, auroc


def _interpolate_columns(x, y, grid):
    """``y`` at ``grid`` for every column of the non-decreasing ``x`` (P, C), linearly; (C, G).

    One search over all columns at once: column ``c`` is shifted by ``2c`` (x lies in [0, 1]),
    so the flattened columns form one sorted array. NaN columns give NaN.
    """
    import numpy as np

    points, columns = x.shape
    valid = ~np.isnan(x[-1]) & ~np.isnan(y[-1])
    x = np.where(valid, x, 0.0)
    y = np.where(valid, y, np.nan)
    shift = 2.0 * np.arange(columns)
    flat_x = (x + shift).T.ravel()
    flat_y = y.T.ravel()
    queries = (grid[None, :] + shift[:, None]).ravel()
    right = np.searchsorted(flat_x, queries, side="right")
    column_end = (np.repeat(np.arange(columns), grid.size) + 1) * points - 1
    at = np.maximum(right - 1, np.repeat(np.arange(columns), grid.size) * points)
    after = np.minimum(at + 1, column_end)
    x0, x1, y0, y1 = flat_x[at], flat_x[after], flat_y[at], flat_y[after]
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(x1 > x0, (queries - x0) / (x1 - x0), 0.0)
    return (y0 + step * (y1 - y0)).reshape(columns, grid.size)
