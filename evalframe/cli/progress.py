"""Step progress on stderr for commands whose steps can take seconds (``evalframe run``).

Shown only when stderr is a terminal and ``--quiet`` is not given: one line per step,
rewritten in place, then closed with the step's time when the step took over a second.
Nothing is printed into a pipe or a log, so outputs and CI logs stay as they were.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def step(label: str, *, quiet: bool = False) -> Iterator[None]:
    """``with step("computing metrics"):`` shows ``… computing metrics`` while it runs."""
    stream = sys.stderr
    shown = not quiet and stream.isatty()
    start = time.perf_counter()
    if shown:
        stream.write(f"\r… {label}")
        stream.flush()
    try:
        yield
    finally:
        if shown:
            elapsed = time.perf_counter() - start
            stream.write(f"\r✓ {label} ({elapsed:.1f} s)\n" if elapsed >= 1 else "\r\033[K")
            stream.flush()
