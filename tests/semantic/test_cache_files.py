"""Cache files shared by writers: threads of one process (the engine evaluates metric groups on
two threads), and processes (two runs sharing a cache)."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
import pytest

from evalframe._files import path_lock, write_parquet_replacing
from evalframe.semantic.encoding import encoder_for


def _embed(texts: list[str]) -> np.ndarray:
    return np.array([[len(text), text.count("a") + 1.0] for text in texts], dtype=np.float32)


_embed.model_id = "test-lengths"


def test_threads_asking_for_the_same_encoder_get_one(tmp_path):
    cache = tmp_path / "embedding_cache.parquet"
    start = threading.Barrier(8)

    def ask(_):
        start.wait()
        return encoder_for(embed_fn=_embed, cache=cache, batch_size=4)

    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(ask, range(8)))
    assert all(encoder is found[0] for encoder in found)


def test_two_encoders_writing_one_cache_from_two_threads_keep_every_row(tmp_path):
    """Two encoders (different batch sizes) of one cache file, each encoding its own texts in
    many small calls on its own thread: no writer fails on the other's partial file, and the
    file ends with every text once."""
    cache = tmp_path / "embedding_cache.parquet"
    encoders = [encoder_for(embed_fn=_embed, cache=cache, batch_size=size) for size in (2, 3)]
    assert encoders[0] is not encoders[1]
    texts = [[f"text {side} {i}" for i in range(60)] for side in range(2)]

    def encode(side: int) -> None:
        for i in range(0, 60, 3):
            encoders[side].vectors(texts[side][i:i + 3])

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(encode, range(2)))
    written = pl.read_parquet(cache)
    assert written.height == 120 and written.get_column("text_sha256").n_unique() == 120
    assert not list(tmp_path.glob("*.partial"))


def test_write_parquet_replacing_leaves_the_old_file_when_the_write_fails(tmp_path):
    path = tmp_path / "cache.parquet"
    write_parquet_replacing(pl.DataFrame({"a": [1]}), path)

    class Broken:
        def write_parquet(self, target):
            target.write_bytes(b"half")
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_parquet_replacing(Broken(), path)
    assert pl.read_parquet(path).get_column("a").to_list() == [1]
    assert not list(tmp_path.glob("*.partial"))
    assert path_lock(path) is path_lock(tmp_path / "." / "cache.parquet")


#: One writer process: after both are ready, it adds its texts to the embedding cache and its answers
#: to the judge cache one at a time, each a read-merge-write of the shared file.
_WRITER = """
import os, sys, time
from pathlib import Path

import numpy as np

from evalframe.semantic.encoding import Encoder
from evalframe.semantic.judge_cache import Entry, JudgeCache

side, folder, n = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
encoder = Encoder(lambda texts: np.ones((len(texts), 2), dtype=np.float32), "test-ones", folder / "embedding_cache.parquet")
(folder / f"ready-{side}").touch()
while not all((folder / f"ready-{other}").exists() for other in (0, 1)):
    time.sleep(0.001)
for i in range(n):
    encoder.vectors([f"text {side} {i}"])
    judge = JudgeCache(folder / "judge_cache.parquet")
    judge.put(f"key {side} {i}", Entry("yes", 1.0, None), provider="p", model="m", template_sha256="t", parameters="{}",
              prompt=f"prompt {side} {i}")
    judge.flush()
# Leave by os._exit once the work is flushed (the CLI too ends by os._exit, after the atexit
# handlers, of which evalframe registers none): a process that has used the caches can abort at
# exit, after its work, with "terminate called without an active exception" (a native thread torn
# down at exit; ~1 exit in 40-60 on a busy machine, an open problem of its own), which is not what
# this test is about.
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)
"""


def test_two_processes_writing_one_cache_keep_every_row(tmp_path):
    """Two runs sharing the embedding and judge caches (two real processes, each adding 25 rows
    to each file in 25 writes at the same time): both end well and every row of both is kept.
    With a lock of the process only, rows were lost (or a reader met a file being replaced)."""
    import subprocess
    import sys

    n = 25
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, str(side), str(tmp_path), str(n)], stderr=subprocess.PIPE,
                                text=True) for side in (0, 1)]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], errors
    expected = {"embedding_cache": {hashlib.sha256(f"text {side} {i}".encode()).hexdigest() for side in (0, 1) for i in range(n)},
                "judge_cache": {f"key {side} {i}" for side in (0, 1) for i in range(n)}}
    for name, column in (("embedding_cache", "text_sha256"), ("judge_cache", "key")):
        found = pl.read_parquet(tmp_path / f"{name}.parquet").get_column(column)
        assert found.is_unique().all() and not expected[name] - set(found), f"{name}: {len(expected[name] - set(found))} of {2 * n} rows lost"
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob("*.lock"))  # the lock files removed


def test_without_os_file_locks_the_lock_holds_within_the_process_and_says_so(tmp_path, monkeypatch):
    """Where ``fcntl`` is missing (Windows), ``locked`` is the path's lock of this process, and
    the first use warns that two processes may lose each other's rows."""
    import warnings

    from evalframe import _files

    monkeypatch.setattr(_files, "fcntl", None)
    monkeypatch.setattr(_files, "_warned", threading.Event())
    path = tmp_path / "cache.parquet"
    with pytest.warns(RuntimeWarning, match="within this process only.*two processes writing it at once may lose"), \
            _files.locked(path):
        assert path_lock(path).locked()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _files.locked(path):  # once per process
            assert path_lock(path).locked()
    assert not path_lock(path).locked() and not list(tmp_path.iterdir())


#: Eight Polars functions of one query at once (a thread pool of two), each asking one encoder for
#: texts of its own while the cache file exists, so each looks them up on disk under the encoder's lock.
_ASKING_INSIDE_POLARS = """
import sys
from pathlib import Path

import numpy as np
import polars as pl

from evalframe.semantic.encoding import Encoder

cache = Path(sys.argv[1])
encoder = Encoder(lambda texts: np.ones((len(texts), 2), dtype=np.float32), "test-ones", cache)
encoder.vectors(["a text on disk"])


def first(i):
    return lambda texts: pl.Series(encoder.vectors(texts.to_list())[:, 0])


for round_ in range(4):
    frame = pl.DataFrame({f"c{i}": [f"text {round_} {i} {j}" for j in range(3)] for i in range(8)})
    frame.select(pl.col(f"c{i}").map_batches(first(i), return_dtype=pl.Float32) for i in range(8))
"""


def test_the_cache_read_and_written_inside_polars_functions_under_the_lock_does_not_deadlock(tmp_path):
    """The cache is read and written by a metric's Polars function under the encoder's lock; a
    Polars call there let the thread take up another queued Polars function that waited for the
    same lock: the process hung (every run with the cache read by Polars; two metric groups of
    the embedding metric on two threads, sharing a cache on disk, hung the same way)."""
    import os
    import subprocess
    import sys

    cache = tmp_path / "embedding_cache.parquet"
    try:
        subprocess.run([sys.executable, "-c", _ASKING_INSIDE_POLARS, str(cache)], check=True, timeout=60,
                       env={**os.environ, "POLARS_MAX_THREADS": "2"})
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: the process hung (killed after 60 s)")
    assert pl.read_parquet(cache).height == 1 + 4 * 8 * 3
