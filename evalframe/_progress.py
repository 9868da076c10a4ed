"""A progress bar on stderr for long stages: shown only when the work has taken more than a
second and stderr is a terminal; silent otherwise, and always when :func:`set_quiet` says so
(the CLI's ``-q``)."""

from __future__ import annotations

import sys
import time

_QUIET = False
#: Seconds of work before the bar appears.
DELAY = 1.0


def set_quiet(quiet: bool) -> None:
    """Silence (or allow) every progress bar of this process."""
    global _QUIET
    _QUIET = quiet


class Progress:
    """``with Progress(total, "bootstrap") as progress: ... progress.advance()``."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.done = max(1, total), label, 0
        self.started = time.monotonic()
        self.shown = False
        self.enabled = not _QUIET and sys.stderr.isatty()

    def __enter__(self) -> Progress:
        return self

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        if self.enabled and time.monotonic() - self.started > DELAY:
            self._draw()

    def _draw(self) -> None:
        width = 30
        filled = int(width * min(1.0, self.done / self.total))
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
        sys.stderr.flush()
        self.shown = True

    def __exit__(self, *exc) -> None:
        if self.shown:
            self._draw()
            sys.stderr.write("\n")
            sys.stderr.flush()
