"""The row facts shared by the key check and the ranking stage (``evalframe.data.layout``) and
the threads they run on (``evalframe._threads``): the same values as the plain computation, on
frames of many chunks and pieces, taken once per frame."""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe import _threads
from evalframe.data import layout


def _chunked(frame: pl.DataFrame, pieces: int) -> pl.DataFrame:
    """``frame`` stored as ``pieces`` chunks (as a Parquet file's row groups come)."""
    size = -(-frame.height // pieces)
    return pl.concat([frame.slice(start, size) for start in range(0, frame.height, size)], rechunk=False)


@settings(max_examples=25, deadline=None)
@given(
    docs=st.lists(st.text(max_size=4), min_size=1, max_size=60),
    pieces=st.integers(1, 5),
    piece_rows=st.integers(1, 7),
)
def test_pieces_give_the_values_of_one_select(docs, pieces, piece_rows):
    """Hashes and float32 casts made piece by piece, on one or several threads, equal the whole
    column's, whatever the chunks and pieces."""
    frame = _chunked(pl.DataFrame({"doc_id": docs, "score": np.linspace(-1, 1, len(docs))}), pieces)
    with mock.patch.object(layout, "PIECE_ROWS", piece_rows), mock.patch.object(_threads.os, "cpu_count", return_value=3):
        hashes = layout.column_in_pieces(frame, layout.value_hash("doc_id"), np.uint64)
        scores = layout.column_in_pieces(frame, pl.col("score").cast(pl.Float32), np.float32)
    assert hashes.tolist() == frame.select(layout.value_hash("doc_id")).to_series().to_list()
    assert scores.tobytes() == frame.get_column("score").cast(pl.Float32).to_numpy().tobytes()


@settings(max_examples=30, deadline=None)
@given(blocks=st.lists(st.lists(st.sampled_from("abcdef"), min_size=3, max_size=3), min_size=1, max_size=12))
def test_distinct_in_blocks_agrees_with_sets(blocks):
    """The per-block verdict (sorted slices on several threads) is a set comparison per block."""
    frame = pl.DataFrame({"doc_id": [doc for block in blocks for doc in block]})
    with mock.patch.object(layout, "_SORTED_CELLS", 6), mock.patch.object(_threads.os, "cpu_count", return_value=2):
        verdict = layout.distinct_in_blocks(frame, "doc_id", 3)
    assert verdict == all(len(set(block)) == 3 for block in blocks)


def test_stretch_starts_of_constant_and_varying_columns():
    frame = pl.DataFrame({"system": ["s"] * 5, "query_id": ["b", "b", "a", "a", "b"]})
    assert layout.stretch_starts(frame, "system").tolist() == [0]
    assert layout.stretch_starts(frame, "query_id").tolist() == [0, 2, 4]
    assert layout.stretch_starts(frame.clear(), "query_id").tolist() == []


def test_facts_are_taken_once_per_frame_read_only_and_dropped_with_it():
    frame = pl.DataFrame({"doc_id": ["a", "b", "c", "d"]})
    with mock.patch.object(layout, "column_in_pieces", wraps=layout.column_in_pieces) as made:
        first = layout.column_hashes(frame, "doc_id")
        assert layout.column_hashes(frame, "doc_id") is first
        assert layout.distinct_in_blocks(frame, "doc_id", 2)
        assert made.call_count == 1  # the verdict read the same hashes
        other = pl.DataFrame({"doc_id": ["a", "b", "c", "d"]})  # equal, but another frame
        assert layout.column_hashes(other, "doc_id") is not first
        assert made.call_count == 2
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 0
    key = id(frame)
    del frame, first, made  # the mock holds its calls' arguments
    gc.collect()
    assert key not in layout._FACTS


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 200), min_rows=st.integers(1, 50), cores=st.integers(1, 8))
def test_in_parts_covers_the_range_once_in_order(n, min_rows, cores):
    with mock.patch.object(_threads.os, "cpu_count", return_value=cores):
        parts = _threads.in_parts(n, lambda start, stop: list(range(start, stop)), min_rows=min_rows)
    assert [row for part in parts for row in part] == list(range(n))
    assert 1 <= len(parts) <= min(cores, _threads.MAX_PARTS)
