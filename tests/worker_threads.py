"""The thread pools of a pytest-xdist worker: the workers together use as many threads as there
are cores (issue 20: `make test` in minutes).

`make test` runs one xdist worker per core, and each worker's Polars and OpenBLAS would start a
pool of one thread per core: on 2 cores, 4 threads for 2 cores. The extra threads buy no speed
(the other worker keeps the other core busy) and cost CPU in hand-offs and idle spinning between
the many small queries of the tests: the same tests took about 11 % fewer CPU seconds with one
Polars thread per worker (tests/metrics, -n 0: 68.0 → 60.4 CPU-s), and far less wall time on a
busy machine, where a Polars thread that waits for the GIL held by a preempted one stalls.

So each worker's pools get ``cores // workers`` threads (at least one). The setting is made
before Polars and NumPy are imported and taken out of the environment again once the pools
exist: the processes the tests start (the CLI runs, plot and Spark workers) keep the default
pools. Then the byte-identical comparisons between a CLI process's outputs and the same run in
a worker (tests/cli/test_cli_pipeline.py) also check that no value depends on the number of
threads.
"""

from __future__ import annotations

import os

#: The environment variables that size the pools: Polars (rayon) and OpenBLAS (NumPy, SciPy).
POOL_SIZES = ("POLARS_MAX_THREADS", "OPENBLAS_NUM_THREADS")


def threads_per_worker(cores: int, workers: int) -> int:
    """Threads per worker pool so that all workers together use ``cores`` threads (at least 1)."""
    return max(1, cores // max(1, workers))


def share_the_cores_between_workers() -> None:
    """In a pytest-xdist worker, size the Polars and OpenBLAS pools to ``threads_per_worker``
    unless the environment already sizes them; outside xdist (``-n 0``) change nothing."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = str(threads_per_worker(cores, int(workers)))
    ours = [name for name in POOL_SIZES if name not in os.environ]
    for name in ours:
        os.environ[name] = threads
    import numpy  # noqa: F401  (OpenBLAS reads its variable when it is loaded)
    import polars

    polars.thread_pool_size()  # the pool exists from here on, with its size
    for name in ours:  # child processes get the default pools
        del os.environ[name]
