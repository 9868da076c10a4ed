"""Reading an input before it is asked for: :func:`begin`, then :func:`take` where the read was.

A command knows its input files long before it reaches the reader: ``evalframe trec`` once its
arguments are parsed, ``evalframe run`` once its pipeline's ``input:`` block is read. What comes
between (importing the engine, the metric registry and NumPy, checking the measures or the
pipeline) is Python on one core, while a read is mostly Polars decoding and checking without
the GIL. :func:`begin` starts ``read(*args, **kwargs)`` on a thread of its own; the code that
would have read calls :func:`take` with the same function and arguments instead, and gets the
begun read's result (waiting for it if needed), so the two run side by side on the two cores.

The rule that keeps errors where and as they were: :func:`take` uses a begun read only when it
succeeded, was begun with equal arguments (``==``), and every file among the arguments is still
the one it read (same inode, size and modification time). Otherwise — nothing begun, other
arguments, a changed file, or the begun read raised — :func:`take` calls ``read`` itself, here
and now: a bad file's error is raised by the same call, in the same order after the errors that
come before it (a bad measure, a bad pipeline), with the same text and exit status. Readers
write nothing, so a read begun early changes no file and leaves nothing behind.

A begun read nobody takes (the command failed first) is dropped by :func:`forget`; its thread
ends on its own, and the process exits only after it (a failed `run` waits for its input's read).
This module imports nothing heavy, so a command can begin its read right after parsing its
arguments, before the engine's imports.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class _Begun:
    """One read begun: the call, the files it reads as they were then, its future result."""

    read: Callable[..., Any]
    args: tuple
    kwargs: dict
    files: tuple
    result: Future = field(default_factory=Future)
    thread: threading.Thread | None = None

    def matches(self, read: Callable[..., Any], args: tuple, kwargs: dict) -> bool:
        try:
            return self.read is read and self.args == args and self.kwargs == kwargs
        except Exception:  # an argument whose == fails (a frame compared with a frame): not the same call
            return False


_begun: list[_Begun] = []
_lock = threading.Lock()


def _identity(args: tuple, kwargs: dict) -> tuple:
    """Which file each path argument names, and its size and modification time (None for a
    path that is not a file): a file replaced or written since is not the one read."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, (str, Path)):
            try:
                stat = os.stat(value)
            except (OSError, ValueError):
                found.append(None)
            else:
                found.append((stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def begin(read: Callable[..., T], *args: Any, **kwargs: Any) -> None:
    """Start ``read(*args, **kwargs)`` on a thread of its own; :func:`take` with the same
    function and arguments gives its result. Nothing it raises is seen here (see :func:`take`)."""
    begun = _Begun(read, args, kwargs, _identity(args, kwargs))

    def work() -> None:
        try:
            begun.result.set_result(read(*args, **kwargs))
        except BaseException as error:  # kept for take(), which then reads again to raise it in order
            begun.result.set_exception(error)

    begun.thread = threading.Thread(target=work, name=f"evalframe-early-{getattr(read, '__name__', 'read')}")
    begun.thread.start()  # before it is listed: a take() on another thread may join it at once
    with _lock:
        _begun.append(begun)


def take(read: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``read(*args, **kwargs)``: the result of the read :func:`begin` started with the same
    function and arguments when it succeeded and its files are unchanged, else a call of
    ``read`` now (module docstring)."""
    with _lock:
        begun = next((one for one in _begun if one.matches(read, args, kwargs)), None)
        if begun is not None:
            _begun.remove(begun)
    if begun is not None:
        begun.thread.join()  # ended once its result is set: joined, the command's exit finds no other thread
    if begun is not None and begun.result.exception() is None and begun.files == _identity(args, kwargs):
        return begun.result.result()
    return read(*args, **kwargs)


def forget() -> None:
    """Drop every begun read nobody has taken (their threads finish on their own)."""
    with _lock:
        _begun.clear()


def pending() -> int:
    """How many begun reads nobody has taken yet (tests)."""
    with _lock:
        return len(_begun)
