"""Progress on stderr, only when stderr is a terminal and neither :func:`set_quiet` (for every
thread of the process; :func:`quiet_while` for one block, the CLI's ``-q``) nor :func:`quiet_here`
(for the work of one caller, worker threads of :mod:`evalframe._threads` included) has silenced
it, so pipes, logs and CI output stay as they were:

- :class:`Progress`, a bar for long stages (the bootstrap), shown once the work has taken more
  than a second;
- :func:`step`, one line per step of a command, rewritten in place and closed with the step's
  time when it took over a second.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_QUIET = False
#: Per caller (:func:`quiet_here`): a context variable, so the worker threads of
#: :mod:`evalframe._threads`, which run each task in a copy of the caller's context, inherit it.
_QUIET_HERE: ContextVar[bool] = ContextVar("evalframe_quiet_here", default=False)
#: Seconds of work before the bar appears.
DELAY = 1.0


def set_quiet(quiet: bool) -> None:
    """Silence (or allow) every progress bar and step line of this process."""
    global _QUIET
    _QUIET = quiet


@contextmanager
def quiet_while(quiet: bool) -> Iterator[None]:
    """Every thread of the process silenced for the block when ``quiet`` (one command's ``-q``),
    then the setting it found: a caller that ran ``evalframe run -q`` in its own process sees its
    later progress again, and one that silenced its process (:func:`set_quiet`) stays silenced,
    ``-q`` or not. The setting is the process's: two commands running at once on two threads of
    one process share it (the first to end restores what it found)."""
    global _QUIET
    found = _QUIET
    _QUIET = quiet or found
    try:
        yield
    finally:
        _QUIET = found


@contextmanager
def quiet_here() -> Iterator[None]:
    """No progress shown by this thread inside the block (a helper thread whose work runs beside
    the main thread's bar), nor by the tasks it hands to :mod:`evalframe._threads`."""
    token = _QUIET_HERE.set(True)
    try:
        yield
    finally:
        _QUIET_HERE.reset(token)


def _shown(quiet: bool = False) -> bool:
    return not (quiet or _QUIET or _QUIET_HERE.get()) and sys.stderr.isatty()


@contextmanager
def step(label: str, *, quiet: bool = False) -> Iterator[None]:
    """``with step("computing metrics"):`` shows ``… computing metrics`` while it runs."""
    stream = sys.stderr
    shown = _shown(quiet)
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


class Progress:
    """``with Progress(total, "bootstrap") as progress: ... progress.advance()``; ``detail`` adds
    live text after the count (the judge's calls, cache hits and failures)."""

    def __init__(self, total: int, label: str, *, detail: Callable[[], str] | None = None):
        self.total, self.label, self.done = max(1, total), label, 0
        self.detail = detail
        self.started = time.monotonic()
        self.shown = False
        self.enabled = _shown()

    def __enter__(self) -> Progress:
        return self

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        if self.enabled and time.monotonic() - self.started > DELAY:
            self._draw()

    def _draw(self) -> None:
        width = 30
        filled = int(width * min(1.0, self.done / self.total))
        extra = f" ({self.detail()})" if self.detail is not None else ""
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}{extra}")
        sys.stderr.flush()
        self.shown = True

    def __exit__(self, *exc) -> None:
        if self.shown:
            self._draw()
            sys.stderr.write("\n")
            sys.stderr.flush()
