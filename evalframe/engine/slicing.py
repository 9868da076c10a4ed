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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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


#: Queries at and above which the engine groups by slice codes (:func:`slice_codes`); below, the
#: few rows make the codes' window and joins cost more than the key hashing they spare.
CODED_FROM_ROWS = 1 << 14


@dataclass(frozen=True)
class SliceCodes:
    """Integer codes standing for the multi-column keys of grouping sets (:func:`slice_codes`).

    ``columns[grouping]``: the code column (UInt32) of a coded grouping set; ``keys[grouping]``:
    its key columns (``system`` and the slice keys); ``lookups[grouping]``: one row per slice,
    its code and its keys.
    """

    columns: Mapping[str, str] = field(default_factory=dict)
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    lookups: Mapping[str, pl.DataFrame] = field(default_factory=dict)

    def group_keys(self, grouping: str, by: Sequence[str]) -> list[str]:
        """What to group the rows of ``grouping`` by: its code column, else its keys ``by``."""
        return [self.columns[grouping]] if grouping in self.columns else list(by)

    def of(self, groupings: Sequence[str]) -> list[str]:
        """The code columns of those of ``groupings`` that are coded."""
        return [self.columns[grouping] for grouping in groupings if grouping in self.columns]

    def with_keys(self, frame: pl.LazyFrame, grouping: str) -> pl.LazyFrame:
        """``frame`` grouped by :meth:`group_keys` (whose first column is then the code, as a
        group-by's keys come first) with the slice's keys in place of the code: a join with the
        lookup, in ``frame``'s row order."""
        code = self.columns.get(grouping)
        if code is None:
            return frame
        keys = self.keys[grouping]
        joined = frame.join(self.lookups[grouping].lazy(), on=code, how="left", maintain_order="left")
        return joined.select(*keys, pl.exclude(code, *keys))


def slice_codes(rows: pl.DataFrame, by: Mapping[str, Sequence[str]], *,
                from_rows: int | None = None) -> tuple[pl.DataFrame, SliceCodes]:
    """``rows`` with one integer code column per grouping set of two or more keys, and the codes.

    A group-by on several columns (``system`` and ``criterion_id``) hashes and compares the
    values of every key in every row (strings, row-encoded), each time the rows are grouped: each
    metric group's moments, the slices' sizes. The code of a row is the position of the first row
    of its slice (one window over the keys, once), so grouping by it forms the same groups, each
    with the same rows in the same order: every aggregation gives the same values, bit for bit,
    at a fraction of the hashing. :meth:`SliceCodes.with_keys` puts the keys back. A null key is
    a value like any other (a slice of its own). (A set metric's state is the metric's own plan
    over the slice keys themselves: not coded.)

    Not coded: a grouping set of one key (``system`` alone hashes as fast as a code), one with a
    list key (exploded into one row per value, :func:`rows_of_slices`), and all of them when
    ``rows`` are fewer than ``from_rows`` (by default :data:`CODED_FROM_ROWS`) or have a column
    of a code's name. The codes carry no sorted flag, so a group-by forms its groups by hashing,
    as it does on the keys.

    >>> rows = pl.DataFrame({"system": ["a", "a", "b", "a"], "fold": [1, 2, 1, 1]})
    >>> coded, codes = slice_codes(rows, {"overall": ["system"], "fold": ["system", "fold"]}, from_rows=0)
    >>> coded.get_column(codes.columns["fold"]).to_list(), codes.lookups["fold"].rows()
    ([0, 1, 2, 0], [(0, 'a', 1), (1, 'a', 2), (2, 'b', 1)])
    """
    coded_keys = {grouping: tuple(keys) for grouping, keys in by.items()
                  if len(set(keys)) > 1 and not list_keys(rows.schema, keys)}
    names = {grouping: f"__slice_code_{position}" for position, grouping in enumerate(coded_keys)}
    row = "__slice_code_row"
    too_few = rows.height < (CODED_FROM_ROWS if from_rows is None else from_rows)
    if too_few or not coded_keys or {row, *names.values()} & set(rows.columns):  # (a column of that name: keep the keys)
        return rows, SliceCodes()
    codes = rows.select(list(dict.fromkeys(key for keys in coded_keys.values() for key in keys))).with_row_index(row).select(
        pl.col(row).first().over(list(keys)).alias(names[grouping]) for grouping, keys in coded_keys.items()
    )
    if any(flag for column in codes.get_columns() for flag in column.flags.values()):  # a sorted flag: keep the keys
        return rows, SliceCodes()
    first_rows = pl.int_range(pl.len(), dtype=codes.schema[next(iter(names.values()))])
    lookups = {
        grouping: rows.select(*keys).with_columns(codes.get_column(names[grouping]))
        .filter(pl.col(names[grouping]) == first_rows).select(names[grouping], *keys)
        for grouping, keys in coded_keys.items()
    }
    return rows.hstack(codes.get_columns()), SliceCodes(columns=names, keys=coded_keys, lookups=lookups)
