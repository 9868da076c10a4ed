"""The shared last step of the set metrics of scored queries: one row per slice with n, value, note.

Every metric of a slice of scored queries (``label``, ``prob``, weight
:data:`~evalframe.metrics.base.WEIGHT`) is set level and reports one row per slice with

- ``n``: the queries used (rows whose ``label`` and ``prob`` are both present; a count of
  rows, not a weight);
- ``value``: the metric, null where it is undefined on that slice;
- ``note``: why ``value`` is null ("only one class in the slice", "no predicted positive", …),
  null where the value is defined.

An undefined value is never replaced by 0 or 1 (unlike scikit-learn's ``zero_division``): a
:data:`Reason` (a condition over a slice's partials and its text) makes it null and names why.
The ROC family (:mod:`evalframe.metrics.roc`), the confusion family
(:mod:`evalframe.metrics.confusion`), calibration and the gate share these steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

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



def no_scored_query() -> Reason:
    """A slice without a used row has no value."""
    return pl.col("n") == 0, NO_SCORED_QUERY
