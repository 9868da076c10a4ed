"""Sorting large NumPy arrays on both cores.

NumPy sorts without holding the GIL, so two halves of an array sort at once on two threads.
That is only a sort of the whole when every value of the first half is at most every value
of the second; callers establish it (a partition around the median, or keys that already come
in blocks) and pass the split point.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


#: Below this many values, one thread sorts faster than two.
MIN_SPLIT_LENGTH = 1 << 17


def sort_split_in_place(values: np.ndarray, middle: int) -> None:
    """Sort ``values[:middle]`` and ``values[middle:]`` in place, on two threads.

    With no value before ``middle`` greater than a value from ``middle`` on, ``values`` ends
    up sorted. Short arrays are sorted whole: a thread costs more than it saves.
    """
    if len(values) < MIN_SPLIT_LENGTH:
        values.sort()
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        upper = pool.submit(values[middle:].sort)
        values[:middle].sort()
        upper.result()
