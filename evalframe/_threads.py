"""Work over a long range of rows shared by the machine's cores: :func:`in_parts`.

NumPy's sorts, comparisons and gathers, and Polars' expressions, release the GIL while they
run: a loop over slices of ten million rows split into contiguous parts, each part on a thread
of its own, keeps every core busy (the Python between two calls is short). Each part writes
its own rows of an output array or returns its own result; nothing is shared but the inputs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

#: At most this many parts (threads): past a few, the memory bandwidth is the limit.
MAX_PARTS = 4


def in_parts(n: int, work: Callable[[int, int], T], *, min_rows: int = 1 << 16) -> list[T]:
    """``work(start, stop)`` for contiguous parts of ``range(n)``, one part per core (at most
    :data:`MAX_PARTS`, each at least ``min_rows`` long), on threads at once; the results in the
    parts' order. One part (no thread) when ``n`` is short or the machine has one core.

    >>> in_parts(10, lambda start, stop: (start, stop), min_rows=4)[0][0]
    0
    """
    parts = max(1, min(os.cpu_count() or 1, MAX_PARTS, n // max(1, min_rows)))
    bounds = [n * part // parts for part in range(parts + 1)]
    if parts == 1:
        return [work(0, n)]
    with ThreadPoolExecutor(max_workers=parts - 1) as pool:
        others = [pool.submit(work, bounds[part], bounds[part + 1]) for part in range(1, parts)]
        first = work(bounds[0], bounds[1])  # this thread takes the first part
        return [first, *(future.result() for future in others)]
