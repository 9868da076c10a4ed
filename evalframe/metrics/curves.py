"""Curves (ROC points, bins): the mergeable states that set metrics of scored queries read.

A set metric's state (DESIGN §3, "Mergeable partials") is a table with one row per slice and
key whose other columns are sums, so that the state of disjoint parts of the data is their
states added up (:func:`evalframe.metrics.base.merge_states`). This module builds the two
states keyed by a value of ``prob``:

- :func:`roc_points`: one row per slice and distinct probability with the rows, the positive
  weight and the negative weight at that probability. The ROC family reads it as curves
  (:class:`~evalframe.metrics.roc.RocCurves`: the weight above each threshold, one running sum).
- :func:`calibration_bins`: one row per slice and equal-width bin of probability with the
  bin's weight, weighted probability and weighted label. ECE reads it.

Both use the rows with both ``label`` and ``prob`` (:func:`is_scored`), each weighted with its
unit's weight :data:`~evalframe.metrics.base.WEIGHT` as scikit-learn's ``sample_weight``. A
slice's unused rows become one row with a null key and zero sums, so that a slice none of whose
rows is used is still there (with ``n`` = 0). A state has the same bits whatever the order of
the rows: weighted counts and other weighted sums are added exactly in fixed point
(:func:`weighted_counts`, :func:`exact_sums`), with no sort.

>>> import polars as pl
>>> rows = pl.LazyFrame({"label": [1, 0, 1, 0], "prob": [0.9, 0.4, 0.4, 0.1],
...                      "_weight": [1.0, 2.0, 0.5, 1.0]})
>>> roc_points(rows, by=[]).sort("prob", descending=True).collect().rows()
[(0.9, 1, 1.0, 0.0), (0.4, 2, 0.5, 2.0), (0.1, 1, 0.0, 1.0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evalframe.metrics.base import weight, weights_are_one

#: State key of :func:`roc_points`: the threshold's probability.
PROB = "prob"
#: State key of :func:`calibration_bins`: the bin's index, 0 … bins − 1.
BIN = "bin"

# --- the rows used and order-independent sums ----------------------------------------------


def is_scored() -> pl.Expr:
    """Rows a classification or calibration metric uses: both ``label`` and ``prob`` present."""
    return pl.col("label").is_not_null() & pl.col("prob").is_not_null()


def weighted(where: pl.Expr, values: pl.Expr | None = None) -> pl.Expr:
    """Row-wise: weight · ``values`` where ``where`` holds (the weight without ``values``), else 0.0."""
    term = weight() if values is None else weight() * values
    return pl.when(where).then(term).otherwise(0.0)


def used_count() -> pl.Expr:
    """Rows used (a count of rows, not a weight), as Int64 so that merged counts do not overflow."""
    return is_scored().sum().cast(pl.Int64)


# --- sums added exactly ------------------------------------------------------------------------

#: The largest magnitude of a frame is 2^88 to 2^91 fixed-point units: Int128 holds the sum of
#: 2^36 rows of it, and every value down to about 2^-36 of the largest is a whole number of units.
WEIGHT_UNIT_BITS = 89


def units_for(largest: pl.Expr) -> pl.Expr:
    """Fixed-point units per unit of value when the largest magnitude is ``largest``, as the power
    of two ``k`` of units = 2^k: about 2^89 / largest (multiplying by a power of two is exact);
    0 (units of 1) when it is 0 or null. Subnormal values have units beyond Float64's range:
    :func:`in_units` and :func:`from_units` scale by 2^k in two exact steps."""
    return pl.when(largest > 0).then(WEIGHT_UNIT_BITS - largest.log(2).floor()).otherwise(0.0)


def weight_units() -> pl.Expr:
    """Fixed-point units of weight (:func:`units_for` the frame's largest weight)."""
    return units_for(weight().max())


def _halves(exponent: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """2^k as two finite powers of two whose product it is (k up to about 2 · 1023)."""
    first = (exponent / 2).floor()
    return pl.lit(2.0).pow(first), pl.lit(2.0).pow(exponent - first)


def in_units(values: pl.Expr, exponent: pl.Expr) -> pl.Expr:
    """``values`` as whole numbers of fixed-point units 2^``exponent`` (Int128): exact for every
    value down to about 2^-36 of the largest the units were made for; smaller ones are cut to the unit."""
    return _scaled(values, *_halves(exponent))


def _scaled(values: pl.Expr, first: pl.Expr, second: pl.Expr) -> pl.Expr:
    """``values`` times 2^k given as its two :func:`_halves`, cut to whole units (Int128)."""
    return _scaled_float(values, first, second).cast(pl.Int128)


def from_units(total: pl.Expr, exponent: pl.Expr) -> pl.Expr:
    """A sum of :func:`in_units` values back in Float64: the exact sum, rounded once (twice when
    it is subnormal)."""
    first, second = _halves(exponent)
    return total.cast(pl.Float64) / first / second


@dataclass(frozen=True)
class Exact:
    """A value expression to be summed exactly over a group by :func:`exact_sums`."""

    values: pl.Expr


def weight_where(condition: pl.Expr) -> pl.Expr | Exact:
    """The weight of the rows where ``condition`` holds, as a column of :func:`exact_sums`: their
    weights (0.0 elsewhere) added exactly; when every weight is 1 (:func:`~evalframe.metrics.base.weights_are_one`),
    the number of those rows as a Float64, a plain count: the same bits (a sum of ones is exact
    in any order), without the fixed-point units."""
    if weights_are_one():
        return condition.fill_null(False).sum().cast(pl.Float64)
    return Exact(pl.when(condition).then(weight()).otherwise(0.0))


def exact_sums(rows: pl.LazyFrame, keys: Sequence[str], columns: Mapping[str, pl.Expr | Exact], *,
               maintain_order: bool = False, units: Mapping[str, float] | None = None) -> pl.LazyFrame:
    """One group-by of ``rows`` by ``keys`` (one row without keys): columns ``*keys`` and ``columns``
    in order, each an aggregation, or :class:`Exact` values whose Float64 sum over the group is
    added exactly; groups in order of first appearance with ``maintain_order``.

    An exact sum has the same bits whatever the order of the rows, with no sort: each value
    becomes a whole number of fixed-point units made for the largest magnitude of that column in
    its group (:func:`units_for`: exact for every value down to 2^-36 of it, smaller ones cut to
    the unit, an error below 2^-89 of the largest), the numbers are added as Int128 (a plain
    group sum, Polars' fast path), and the total is rounded to Float64 once. Integer values give
    the exact integer, as a sum in any order does. A group of one row gives its value. A float sum
    in sorted order would sort every group instead: seconds over the bootstrap's millions of
    per-unit groups.

    ``units`` gives an :class:`Exact` column's units for every group at once (a power-of-two
    exponent, :func:`common_units`): valid when each of the column's values is a whole number of
    them, where it gives the same Float64 as the group's own units (the exact sum, rounded once)
    without the window that finds each group's largest value.
    """
    keys = list(keys)
    given = dict(units or {})
    exact = {name: column.values for name, column in columns.items() if isinstance(column, Exact) and name not in given}
    common = {name: column.values for name, column in columns.items() if isinstance(column, Exact) and name in given}
    value, units, total = "__value_{}".format, "__units_{}".format, "__total_{}".format
    first, second = "__first_{}".format, "__second_{}".format
    # The two powers of two of each group's units (:func:`in_units`), computed once per group in
    # one window for every column (not a window each and two powers per row): the same numbers.
    # The units themselves are the same expression again, in the group-by (no column per row).
    scales = {}
    for name in exact:
        scales |= dict(zip((first(name), second(name)), _halves(_units_of(value(name))), strict=True))
    prepared = rows
    if exact:  # (none: every column a plain aggregation, e.g. counts with every weight 1)
        per_group = pl.struct(**scales)
        prepared = (
            rows.with_columns(**{value(name): values.cast(pl.Float64) for name, values in exact.items()})
            .with_columns((per_group.over(keys) if keys else per_group).alias("__scales"))
            .unnest("__scales")
        )
    aggregations = [
        *(column.alias(name) for name, column in columns.items() if not isinstance(column, Exact)),
        *(_scaled(pl.col(value(name)), pl.col(first(name)), pl.col(second(name))).sum().alias(total(name)) for name in exact),
        *(_units_of(value(name)).alias(units(name)) for name in exact),
        *(_scaled(values.cast(pl.Float64), *_halves(pl.lit(given[name], dtype=pl.Float64))).sum().alias(total(name))
          for name, values in common.items()),
    ]
    table = prepared.group_by(keys, maintain_order=maintain_order).agg(aggregations) if keys else prepared.select(aggregations)
    return table.select(*keys, *(
        from_units(pl.col(total(name)), pl.col(units(name))).alias(name) if name in exact
        else from_units(pl.col(total(name)), pl.lit(given[name], dtype=pl.Float64)).alias(name) if name in common
        else pl.col(name) for name in columns
    ))


#: Exponents of :func:`common_units` at most this: the sums' Float64 stay normal numbers, where
#: dividing by the units' two powers of two rounds nothing (as it does with each group's own units).
_COMMON_UNITS_MAX = 900.0


def common_units(rows: pl.LazyFrame, values: pl.Expr) -> float | None:
    """One set of fixed-point units for every group of an exact sum of ``values`` over ``rows``
    (``units`` of :func:`exact_sums`), when there is one: the units of the largest magnitude of
    all the rows (:func:`units_for`), provided each value is a whole number of them. None
    otherwise (a value too small for them — also one that the scaling rounds to zero when the
    largest magnitude is huge and the units are coarser than 1 — NaN, an infinity, magnitudes
    below about 2^-800).

    Why the sums are the same bits: a group's own units are at least as fine (its largest value is
    at most the rows' largest), so no value is cut to either units, and either way the Int128
    total is the exact sum of the group's values times a power of two; the one rounding to
    Float64 (round to nearest) commutes with that power of two, and dividing by it is exact while
    the numbers stay normal (:data:`_COMMON_UNITS_MAX`). One pass over ``rows`` (collected here)
    with two reductions.
    """
    magnitude = values.cast(pl.Float64).abs()
    exponent = units_for(magnitude.max())
    scaled = _scaled_float(values.cast(pl.Float64), *_halves(exponent))
    facts = rows.select(
        exponent.alias("units"),
        # A nonzero value scaled to 0 (units coarser than 1: it underflowed) is no whole number of them.
        (scaled.is_finite() & (scaled == scaled.floor()) & ((scaled != 0) | (values == 0))).all().alias("whole"),
        magnitude.max().is_finite().fill_null(True).alias("finite"),
    ).collect(engine="in-memory").row(0, named=True)
    units = facts["units"]
    if units is None or not (facts["whole"] and facts["finite"]) or abs(units) > _COMMON_UNITS_MAX:
        return None
    return float(units)


def _scaled_float(values: pl.Expr, first: pl.Expr, second: pl.Expr) -> pl.Expr:
    """``values`` times 2^k given as its two :func:`_halves`, in Float64 (before :func:`_scaled`'s cut)."""
    return values * first * second


def _units_of(column: str) -> pl.Expr:
    """The units of a group's values in ``column`` (:func:`units_for` their largest magnitude)."""
    return units_for(pl.col(column).abs().max())


# --- weighted counts, added exactly ----------------------------------------------------------


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
    units are added as Int128, and the total is rounded to Float64 once (:func:`exact_sum`).
    That keeps the group-by on Polars' fast path: an ordered float sum sorts every group, which
    takes seconds for the ROC points of 300k distinct probabilities. With integer weights every
    count is the exact integer. When every weight is 1 (the engine's states without a ``weight``
    column, :func:`~evalframe.metrics.base.all_weights_one`) each count is the number of rows, a
    plain count with the same bits (:func:`weight_where`).
    """
    used_rows = is_scored() if used is None else used
    if weights_are_one():  # every weight 1: each weighted count is a count of rows (weight_where), the same bits
        counts = [used_rows.sum().cast(pl.Int64).alias("n"), *(weight_where(condition).alias(name) for name, condition in conditions.items())]
        return rows.group_by(list(keys)).agg(counts) if keys else rows.select(counts)
    units, used, weight_in_units = "__weight_units", "__used", "__weight_in_units"
    # Each row's weight in units once; a condition's sum takes it where the condition holds
    # (the same whole numbers as a weight-or-zero in units per condition).
    prepared = rows.with_columns(weight_units().alias(units)).with_columns(
        used_rows.alias(used), in_units(weight(), pl.col(units)).alias(weight_in_units)
    )
    nothing = pl.lit(0, dtype=pl.Int128)
    sums = [
        pl.col(used).sum().cast(pl.Int64).alias("n"),
        *(pl.when(condition).then(pl.col(weight_in_units)).otherwise(nothing).sum().alias(f"__{name}")
          for name, condition in conditions.items()),
        pl.col(units).first().fill_null(0.0),
    ]
    table = prepared.group_by(list(keys)).agg(sums) if keys else prepared.select(sums)
    counts = [from_units(pl.col(f"__{name}"), pl.col(units)).alias(name) for name in conditions]
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
    over the bin's used rows, added exactly (:func:`exact_sums`). A slice's unused rows give
    one row with a null ``bin`` and zero sums. One group-by; rows come out in no particular order.

    >>> rows = pl.LazyFrame({"label": [0, 1, 1], "prob": [0.25, 0.375, 0.75], "_weight": [1.0, 3.0, 2.0]})
    >>> calibration_bins(rows, by=[], bins=2).sort("bin").collect().rows()
    [(0, 2, 4.0, 1.375, 3.0), (1, 1, 2.0, 1.5, 2.0)]
    """
    scored = is_scored()
    # With every weight 1 the weight is a count of rows (weight_where), and Σ w·label of whole
    # labels (the contract's 0 and 1) their plain sum: the same bits as the exact sums.
    whole_labels = weights_are_one() and rows.collect_schema()["label"].is_integer()
    weighted_prob = weighted(scored, pl.col("prob").cast(pl.Float64))
    # Probabilities in [0, 1] (each bin's within a factor of two of its top but the first's) are
    # whole numbers of the rows' units nearly always: one set of units, no window per group.
    units = common_units(rows, weighted_prob)
    return exact_sums(rows.with_columns(bin_index(bins).alias(BIN)), [*by, BIN], {
        "n": used_count(),
        "weight": weight_where(scored),
        "weighted_prob": Exact(weighted_prob),
        "weighted_label": (pl.when(scored).then(pl.col("label")).otherwise(0).sum().cast(pl.Float64) if whole_labels
                           else Exact(weighted(scored, pl.col("label").cast(pl.Float64)))),
    }, units=None if units is None else {"weighted_prob": units})
