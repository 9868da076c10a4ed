"""Expensive test inputs built once per test run, whatever the number of pytest-xdist workers
(issue 20: `make test` in minutes)."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from filelock import FileLock

T = TypeVar("T")

#: Bootstrap resamples of the test runs of the bundled pipeline on the bundled sample whose
#: checks do not depend on the number (file sets, bytes, shapes, counts, values, texts): the same
#: code paths as its 1,000 at a fraction of the cost (`evalframe run ... --set bootstrap.resamples=100`).
TEST_RESAMPLES = 100


def build_once(tmp_path_factory, name: str, build: Callable[[Path], T]) -> T:
    """``build(folder)``'s value, computed once per test run and shared by every pytest-xdist
    worker: the first worker to ask builds it under a file lock in a folder of the run's base
    temporary directory and pickles it there; the others wait for the lock and unpickle it.
    Build only what no test changes (each worker gets its own copy of the value, but the folder
    is shared)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"built-once-{name}"
    with FileLock(f"{root}.lock"):
        done = root / "value.pickle"
        if done.is_file():
            return pickle.loads(done.read_bytes())
        root.mkdir(exist_ok=True)
        value = build(root)
        partial = done.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(value))
        partial.rename(done)
        return value
