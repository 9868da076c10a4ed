"""Cache files shared by writers of one process (the engine evaluates metric groups on two threads)."""

from __future__ import annotations

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
