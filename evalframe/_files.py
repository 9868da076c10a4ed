"""Cache files that several writers of one process may update: one lock per path, atomic replace.

A cache file (embeddings, judge answers) is read, merged with new rows and written back. Two
threads of one run (the engine evaluates metric groups side by side) may do that for the same
file at once: :func:`path_lock` gives both the same lock, held across the read-merge-write (and by
a reader: Polars may open a Parquet file twice, for its footer and then its data), so neither
loses the other's rows; :func:`write_parquet_replacing` writes to a partial file of its
own (named by process and thread) and renames it over the cache, so a reader sees the old file
or the new one, never part of one.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def path_lock(path: Path) -> threading.Lock:
    """The one lock of ``path`` (resolved) in this process."""
    key = str(Path(path).resolve())
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def write_parquet_replacing(frame: Any, path: Path) -> None:
    """Write the Polars ``frame`` to ``path`` through a partial file beside it (this process's and
    thread's own), renamed over ``path`` once complete; the folder is made when missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    try:
        frame.write_parquet(partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
