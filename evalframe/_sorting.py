"""Sorting: natural order of text keys (A.1, A.2, …, A.10), and large NumPy arrays on every core.

:func:`natural_key` / :func:`sort_naturally` are the one natural order every rendered table and
message uses. :func:`sort_split_in_place` sorts a large array with Polars' multi-threaded sort
(about half NumPy's CPU time on ten million 64-bit keys, spread over the cores); callers know
the array to be two blocks already apart (a partition around the median, or keys that come in
blocks) and pass the split point, so a small array sorts as two halves. :func:`sorted_codes`
encodes ids to their positions among the sorted distinct ids (integer ids for NumPy kernels).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import numpy as np


#: Below this many values, NumPy's sort in place is cheaper than a round trip through Polars.
MIN_SPLIT_LENGTH = 1 << 17


def sort_split_in_place(values: np.ndarray, middle: int) -> None:
    """Sort ``values[:middle]`` and ``values[middle:]`` in place.

    With no value before ``middle`` greater than a value from ``middle`` on, ``values`` ends
    up sorted. A long array is sorted whole by Polars (on every core: with the halves apart,
    the same result) and copied back; a short one by NumPy, half by half.
    """
    if len(values) < MIN_SPLIT_LENGTH:
        values[:middle].sort()
        values[middle:].sort()
        return
    values[:] = pl.Series(values).sort().to_numpy()


# --- natural order of text keys ----------------------------------------------------------------

_DIGITS = re.compile(r"(\d+)")


def sorted_codes(values: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The distinct ``values`` in Polars' sorted order (a null first), and each value's position
    among them (int64): ``distinct.search_sorted(values)``, computed by one categorical
    cast with categories of its own (a hash of each value; only the distinct values are sorted,
    not the millions of ids, and the process-wide categories are left alone).

    >>> distinct, position = sorted_codes(pl.Series(["b", "a", "b", "c"]))
    >>> distinct.to_list(), position.tolist()
    (['a', 'b', 'c'], [1, 0, 1, 2])
    >>> distinct, position = sorted_codes(pl.Series(["b", None, "b"]))
    >>> distinct.to_list(), position.tolist()
    ([None, 'b'], [1, 0, 1])
    """
    import numpy as np

    if values.len() == 0:
        return values.clear(), np.zeros(0, dtype=np.int64)
    physical = values.cast(pl.Categorical(pl.Categories.random())).to_physical()
    if physical.null_count():                               # a null is one more value
        physical = physical.fill_null(int(physical.max() or 0) + 1 if physical.null_count() < physical.len() else 0)
    codes = physical.to_numpy().astype(np.int64)
    count = int(codes.max()) + 1
    occurrence = np.zeros(count, dtype=np.int64)
    occurrence[codes] = np.arange(codes.size)              # where each code occurs (any occurrence)
    distinct = values.gather(occurrence)                   # in code order
    order = distinct.arg_sort().to_numpy()
    position = np.empty(count, dtype=np.int64)
    position[order] = np.arange(count)
    return distinct.gather(order), position[codes]


def natural_key(text: object) -> tuple:
    """Sort key of natural order: runs of digits compare as numbers, so ``A.2 < A.10``.

    Text splits into alternating text and digit runs; a digit run compares by its value, then by
    its spelling (``01`` before ``1``), so distinct texts never tie. ``None`` sorts last; numbers
    sort as numbers, before text.

    >>> sorted(["A.10", "A.2", "A.1", "B.1", "a.3"], key=natural_key)
    ['A.1', 'A.2', 'A.10', 'B.1', 'a.3']
    """
    if text is None:
        return (2,)
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return (0, text)
    parts = _DIGITS.split(str(text))
    return (1, tuple((int(part), part) if index % 2 else (part,) for index, part in enumerate(parts)))


def natural_sorted(values: Iterable[object]) -> list:
    """``values`` in natural order (:func:`natural_key`)."""
    return sorted(values, key=natural_key)


def sort_naturally(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``frame`` sorted by ``columns``, each text column in natural order (``A.2`` before ``A.10``).

    Stable: rows equal on ``columns`` keep their order. Only each column's distinct values are
    ordered in Python (a few per key column of a summary); the rows are sorted by Polars.
    """
    keys = []
    for name in columns:
        column = frame.get_column(name)
        if column.dtype in (pl.String, pl.Categorical, pl.Enum):
            order = natural_sorted(column.cast(pl.String).unique().to_list())
            ranks = pl.DataFrame({"_value": order, "_rank": range(len(order))}, schema={"_value": pl.String, "_rank": pl.Int64})
            keys.append(column.cast(pl.String).replace_strict(ranks.get_column("_value"), ranks.get_column("_rank")))
        else:
            keys.append(column)
    if not keys:
        return frame
    return frame.sort(keys, nulls_last=True, maintain_order=True)
