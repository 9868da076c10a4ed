"""Sorting: natural order of text keys (A.1, A.2, …, A.10), and large NumPy arrays on every core.

:func:`natural_key` / :func:`sort_naturally` are the one natural order every rendered table and
message uses. :func:`sort_split_in_place` sorts a large array with Polars' multi-threaded sort
(about half NumPy's CPU time on ten million 64-bit keys, spread over the cores); callers know
the array to be two blocks already apart (a partition around the median, or keys that come in
blocks) and pass the split point, so a small array sorts as two halves.
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
