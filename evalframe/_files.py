"""Cache files that several writers may update, threads of one process or several processes: one
lock per path, atomic replace, reads through one open handle.

A cache file (embeddings, judge answers) is read, merged with new rows and written back. Two
threads of one run (the engine evaluates metric groups side by side), or two runs sharing a cache,
may do that for the same file at once. :func:`locked` is held across the read-merge-write, so
neither loses the other's rows: within the process, the path's one lock (:func:`path_lock`);
between processes, an OS lock (``fcntl.flock``) on a lock file beside the cache (``<name>.lock``,
removed by its holder when done; a process whose lock file was removed while it waited takes the
new one, so no two hold the lock at once). :func:`write_parquet_replacing` writes to a partial
file of its own (named by process and thread) and renames it over the cache, so a reader sees the
old file or the new one, never part of one; :func:`read_parquet_table` reads the file through one
open handle, so a replace between two opens (Polars opens a Parquet file for its footer and again
for its data) cannot mix two files, and a reader needs no lock.

Both read and write with pyarrow, never through Polars' thread pool: a cache is read and written
inside a metric's Polars function (``map_batches``), under its locks, and a Polars call there lets
the thread take up another queued Polars function (work stealing) that waits for the same lock,
held by the thread itself: a deadlock (seen with two metric groups of the embedding metric on two
threads and a cache file on disk).

The lock between processes holds on a local file system; on a network one (NFS) a removed lock
file may still be seen for a while, and two writers may then lose each other's rows (never corrupt
the file: the replace is atomic). Where the platform has no ``fcntl`` (Windows), :func:`locked`
holds the path's lock of this process only, and warns once: two processes writing one cache at
once may then lose rows; and since a file open for reading cannot be replaced there, a reader
holds the path's lock too.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_warned = threading.Event()


def path_lock(path: Path) -> threading.Lock:
    """The one lock of ``path`` (resolved) in this process."""
    key = str(Path(path).resolve())
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held across a read-merge-write of ``path``: no other thread of this process
    (:func:`path_lock`) nor, where ``fcntl`` exists, other process (an exclusive ``flock`` of
    ``<name>.lock`` beside ``path``; the folder is made when missing) holds it meanwhile."""
    path = Path(path)
    with path_lock(path):
        if fcntl is None:
            if not _warned.is_set():
                _warned.set()
                warnings.warn(f"evalframe: no OS file lock on this platform: {path} is locked within this process "
                              "only, and two processes writing it at once may lose each other's rows", RuntimeWarning,
                              stacklevel=3)
            yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = path.with_name(f"{path.name}.lock")
        while True:
            handle = open(lock_file, "ab")  # noqa: SIM115 (closed below; closing releases the lock)
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                if _same_file(handle, lock_file):
                    break  # else its holder removed it while this process waited: take the new one
            except BaseException:
                handle.close()
                raise
            handle.close()
        try:
            yield
        finally:
            try:
                lock_file.unlink(missing_ok=True)  # while held: a waiter then finds it gone and retries
            finally:
                handle.close()


def _same_file(handle: Any, path: Path) -> bool:
    """Whether the open ``handle`` is still the file at ``path`` (not removed, not replaced)."""
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def read_parquet_table(path: Path) -> Any:
    """The Parquet file ``path`` as a pyarrow Table, read through one open handle (one version of a
    file that a writer may replace meanwhile), off Polars' thread pool."""
    import pyarrow.parquet as pq

    if fcntl is None:  # Windows: a file open for reading cannot be replaced, so a reader waits for the writer
        with path_lock(Path(path)), open(path, "rb") as handle:
            return pq.read_table(handle)
    with open(path, "rb") as handle:
        return pq.read_table(handle)


def add_missing_rows(path: Path, new: Any, key: str, known: Callable[[Any], Any] | None = None) -> None:
    """Write to the cache file ``path`` its own rows, then those of ``new`` (a pyarrow Table of its
    columns) whose ``key`` it lacks — ``known(old)``: the file's keys that count (default: its
    whole ``key`` column) — all under :func:`locked`, so rows another writer added meanwhile stay;
    without the file, ``new`` as it is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    with locked(path):
        if path.exists():
            old = read_parquet_table(path).select(new.column_names)
            found = (old[key] if known is None else known(old)).combine_chunks()
            new = new.cast(old.schema)
            new = pa.concat_tables([old, new.filter(pc.invert(pc.is_in(new[key], value_set=found)))])
        write_parquet_replacing(new, path)


def write_parquet_replacing(table: Any, path: Path) -> None:
    """Write ``table`` to ``path`` through a partial file beside it (this process's and thread's
    own), renamed over ``path`` once complete; the folder is made when missing. ``table``: a
    pyarrow Table (``pyarrow.parquet.write_table``, off Polars' thread pool), or anything with a
    ``write_parquet`` method (a Polars frame)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    try:
        if hasattr(table, "write_parquet"):
            table.write_parquet(partial)
        else:
            import pyarrow.parquet as pq

            pq.write_table(table, partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
