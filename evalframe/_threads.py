"""Work shared by the machine's cores: a long range of rows (:func:`in_parts`), or a list of
independent tasks (:func:`in_order`).

NumPy's sorts, comparisons and gathers, and Polars' expressions, release the GIL while they
run: a loop over slices of ten million rows split into contiguous parts, each part on a thread
of its own, keeps every core busy (the Python between two calls is short). Each part writes
its own rows of an output array or returns its own result; nothing is shared but the inputs.

Each task runs in a copy of its caller's :mod:`contextvars` context, as it would on the
caller's thread: what the caller set there (:func:`evalframe._progress.quiet_here`: no progress
bars) holds for the tasks on the other threads too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
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
        others = [pool.submit(copy_context().run, work, bounds[part], bounds[part + 1]) for part in range(1, parts)]
        first = work(bounds[0], bounds[1])  # this thread takes the first part
        return [first, *(future.result() for future in others)]


def in_order(tasks: Sequence[Callable[[], T]], *, threads: int = 2) -> Iterator[T]:
    """Each task's result, in the tasks' order, the tasks run on up to ``threads`` threads at once
    (one when the machine has one core, or for one task). For independent pieces of work made
    of Polars plans and NumPy calls, which release the GIL while they run: each result is the
    one its task gives alone, whatever runs beside it, as long as the tasks change nothing they
    share, or change it under a lock (a memo, a cache file, a shared model's settings). When a
    task raises (or the caller stops reading), the tasks not yet begun are cancelled; those
    running finish before the error goes on.

    >>> list(in_order([lambda: 1, lambda: 2, lambda: 3]))
    [1, 2, 3]
    """
    workers = max(1, min(threads, os.cpu_count() or 1, len(tasks)))
    if workers == 1:
        yield from (task() for task in tasks)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        contexts = [copy_context() for _ in tasks]  # one each: a context runs on one thread at a time
        yield from pool.map(lambda task, context: context.run(task), tasks, contexts)  # stopped early, it cancels the tasks not begun
