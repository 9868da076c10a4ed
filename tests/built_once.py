"""Expensive test inputs built once per test run, whatever the number of pytest-xdist workers,
and slow commands started in the background at the start of the run (issue 20: `make test` in
minutes)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
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
    root = _shared_root(tmp_path_factory, name)
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


#: The background commands this process started (:func:`start_once`), reaped by :func:`wait_started`.
_started: list[threading.Thread] = []


def _shared_root(tmp_path_factory, name: str) -> Path:
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"built-once-{name}"


def start_once(tmp_path_factory, name: str, command: Callable[[Path], list[str]], cwd: Path | None = None) -> None:
    """Start the process ``command(folder)`` in the background (in the folder ``cwd``, default
    this process's), once per test run whatever the number of pytest-xdist workers (the first to
    ask starts it; later calls do nothing), so that a slow command (the CLI on the bundled
    sample) runs while the workers run other tests, not in the setup of the first test that reads
    it. Its stdout, stderr and exit status land in the folder; :func:`started_result` waits for
    them. The starting process reaps it (:func:`wait_started`, at the end of its session)."""
    root = _shared_root(tmp_path_factory, name)
    with FileLock(f"{root}.lock"):
        if root.exists():
            return
        args = command(root)  # may fail the test (a missing executable) before anything is started
        root.mkdir()
        with open(root / "stdout", "w") as out, open(root / "stderr", "w") as err:
            try:
                process = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
            except OSError as error:  # said as the command's own failure: no reader waits for nothing
                err.write(f"could not start {args[0]}: {error}\n")
                (root / "status").write_text("127")
                return

    def reap() -> None:
        status = process.wait()
        (root / "status.partial").write_text(str(status))
        (root / "status.partial").rename(root / "status")

    thread = threading.Thread(target=reap, name=f"reap-{name}", daemon=True)
    thread.start()
    _started.append(thread)


def started_result(tmp_path_factory, name: str, timeout: float = 600) -> tuple[Path, tuple[int, str, str]]:
    """``(folder, (exit status, stdout, stderr))`` of the command :func:`start_once` started
    under ``name``, once it has ended (waits at most ``timeout`` seconds)."""
    root = _shared_root(tmp_path_factory, name)
    status, deadline = root / "status", time.monotonic() + timeout
    while not status.is_file():
        if not root.exists():
            raise RuntimeError(f"nothing was started under {name!r} (start_once first)")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name!r}: the background command did not end within {timeout} s")
        time.sleep(0.2)
    return root, (int(status.read_text()), (root / "stdout").read_text(), (root / "stderr").read_text())


def wait_started() -> None:
    """Wait for every command this process started (so that none outlives its session)."""
    for thread in _started:
        thread.join()


#: :func:`start_once`'s name of the CLI run of the bundled pipeline on the bundled sample.
BUNDLED_CLI_RUN = "bundled_sample_cli_run"
#: The `evalframe` console script of this environment.
EVALFRAME = Path(sys.executable).with_name("evalframe")


def bundled_cli_command(root: Path) -> list[str]:
    """``evalframe run pipelines/evidence_contract.yaml --input data_samples/per_query.csv`` (the
    paths as README.md's Python block gives them to ``ef.run_pipeline``, relative to the
    checkout: run.json records them as given) with every output in ``root/run/out`` (alone in its
    parent: test_cli_pipeline checks no staging folder is left), ``TEST_RESAMPLES`` bootstrap
    resamples; fails the test if the console script is missing. Run it in :data:`CHECKOUT`."""
    import pytest

    if not EVALFRAME.is_file():
        pytest.fail(f"the `evalframe` console script is not installed beside {sys.executable}")
    return [str(EVALFRAME), "run", "pipelines/evidence_contract.yaml", "--input", "data_samples/per_query.csv",
            "--out", str(root / "run" / "out"), "--set", f"bootstrap.resamples={TEST_RESAMPLES}"]


#: The checkout (the folder of pyproject.toml, pipelines/ and data_samples/).
CHECKOUT = Path(__file__).resolve().parents[1]


def start_bundled_cli_run(tmp_path_factory) -> None:
    """Start :func:`bundled_cli_command` in :data:`CHECKOUT` once per test run (:func:`start_once`)."""
    start_once(tmp_path_factory, BUNDLED_CLI_RUN, bundled_cli_command, cwd=CHECKOUT)
