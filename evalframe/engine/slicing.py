"""Slices over list columns: a unit with several values of a slice key counts in each slice.

A slice key is usually a column with one value per unit (``fold``, ``tier``). A key may also be a
list column (``tags``: a gold-set case tagged ``[multi_hop, numeric]``): then the grouping
set over it has one slice per value, and a unit counts in the slice of every value it lists —
a case with two tags is one of the ``n`` of each tag's slice. This is done by exploding the
list keys of a grouping just before its group-by (:func:`rows_of_slices`), never in the
queries table itself, so groupings without that key (``overall``) count every unit once.

Edge rules: a value listed twice in one unit counts once (the list is made unique first); a
unit with an empty (or null) list falls in the slice whose key is null, so it is still counted
(as "no value"), never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

DataFrameOrLazy = pl.DataFrame | pl.LazyFrame


def list_keys(schema: pl.Schema | dict, keys: Sequence[str]) -> list[str]:
    """The keys among ``keys`` whose column in ``schema`` is a list."""
    return [key for key in keys if key in schema and isinstance(schema[key], pl.List)]


def rows_of_slices(frame: DataFrameOrLazy, keys: Sequence[str]) -> DataFrameOrLazy:
    """``frame`` with its list-typed slice ``keys`` exploded: one row per (unit, key value).

    Frames without a list key among ``keys`` are returned unchanged (no copy).

    >>> frame = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "tags": [["a", "b", "a"], ["b"], []]})
    >>> rows_of_slices(frame, ["tags"]).sort("query_id").rows()
    [('q1', 'a'), ('q1', 'b'), ('q2', 'b'), ('q3', None)]
    """
    schema = frame.collect_schema() if isinstance(frame, pl.LazyFrame) else frame.schema
    exploded = list_keys(schema, keys)
    if not exploded:
        return frame
    return frame.with_columns(pl.col(key).list.unique(maintain_order=True) for key in exploded).explode(
        exploded, empty_as_null=True, keep_nulls=True
    )


def slice_dtype(dtype: pl.DataType) -> pl.DataType:
    """The dtype of a slice key's values in the summary (a list key's item type)."""
    return dtype.inner if isinstance(dtype, pl.List) else dtype
