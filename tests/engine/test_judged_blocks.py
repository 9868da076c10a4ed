"""``judged_ranks`` on runs whose queries all have the same number of rows (counted per block,
no sort) gives the ranks of the full ranking (``rank_items``), ties broken by doc_id descending;
so does its sorted fallback when a block holds many judged items."""

from __future__ import annotations

from unittest import mock

import numpy as np
import polars as pl
import pytest

from evalframe.data import layout
from evalframe.engine import ranking


def _run(seed: int, n_queries: int, length: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({
        "system": "s",
        "query_id": np.repeat([f"q{i}" for i in range(n_queries)], length),
        "doc_id": [f"d{rng.integers(0, 50)}_{j}" for j in range(n_queries * length)],
        "score": np.round(rng.normal(size=n_queries * length), 1),  # one decimal: many ties
    })


def _fast_and_full(run: pl.DataFrame, fraction: float, seed: int) -> tuple[list, list]:
    judged = run.sample(fraction=fraction, seed=seed).select("query_id", "doc_id", relevance=pl.lit(1))
    fast = ranking.judged_ranks(run, judged, run.select("system", "query_id").unique())
    assert fast is not None
    found = fast.judged.join(fast.pairs.select("code", "query_id"), on="code").select("query_id", "rank")
    full = ranking.judge_items(ranking.rank_items(run), judged).filter(pl.col("relevance").is_not_null())
    return sorted(found.rows()), sorted(full.select("query_id", "rank").rows())


@pytest.mark.parametrize("seed", range(12))
def test_block_counts_give_the_ranks_of_the_full_ranking(seed):
    run = _run(seed, n_queries=1 + seed * 3, length=1 + seed * 2)
    with mock.patch.object(ranking, "_sorted_keys", wraps=ranking._sorted_keys) as sorted_keys:
        fast, full = _fast_and_full(run, 0.3, seed)
    assert not sorted_keys.called  # counted in the blocks
    assert fast == full


@pytest.mark.parametrize("seed", range(4))
def test_many_judged_items_per_block_fall_back_to_the_sort(seed):
    run = _run(seed, n_queries=5, length=20)
    with mock.patch.object(ranking, "_sorted_keys", wraps=ranking._sorted_keys) as sorted_keys, \
            mock.patch.object(ranking, "_BLOCK_COMPARISONS_PER_ROW", 1):
        fast, full = _fast_and_full(run, 0.9, seed)
    assert sorted_keys.called  # 18 judged items × 20 rows per block > 1 × 20 rows: the sort
    assert fast == full


def test_blocks_of_unequal_length_are_sorted():
    codes = pl.Series([0, 0, 1], dtype=pl.UInt32)
    assert ranking._block_length(pl.DataFrame({"n_rows": [2, 1]}), codes) is None
    assert ranking._block_length(pl.DataFrame({"n_rows": [2, 2]}), pl.Series([0, 1, 0, 1], dtype=pl.UInt32)) is None


def _systems(run: pl.DataFrame) -> pl.DataFrame:
    """The run twice, as two systems (the second with its scores reversed)."""
    return pl.concat([run, run.with_columns(system=pl.lit("t"), score=-pl.col("score"))])


@pytest.mark.parametrize("seed", range(6))
def test_block_matching_finds_what_the_hash_join_finds(seed):
    run = _run(seed, n_queries=2 + seed * 3, length=3 + seed)
    run = _systems(run) if seed % 2 else run
    judged = pl.concat([
        run.sample(fraction=0.3, seed=seed).select("query_id", "doc_id").unique(),
        pl.DataFrame({"query_id": ["q0", "q_unranked"], "doc_id": ["never_retrieved", "d1_0"]}),
    ]).with_columns(relevance=pl.int_range(pl.len()) % 3)
    index = ranking.index_queries(run)
    length = ranking._block_length(index.pairs, index.codes)
    in_blocks = ranking._matches_in_blocks(run, judged, index.pairs, index.codes, length)
    assert sorted(in_blocks.rows()) == sorted(ranking._judged_matches(run, judged).rows())


@pytest.mark.parametrize("seed", range(3))
def test_block_matching_with_a_weak_hash_falls_back_to_the_join(seed):
    """A hash that many doc_ids share (their length): two equal hashes in a block, or a match
    that is not one, send the matching to the hash join; the ranks stay those of the full ranking."""
    run = _run(seed, n_queries=6, length=8)
    weak = pl.col("doc_id").str.len_bytes().cast(pl.UInt64)
    with mock.patch.object(layout, "value_hash", return_value=weak), \
            mock.patch.object(ranking, "_judged_matches", wraps=ranking._judged_matches) as joined:
        fast, full = _fast_and_full(run, 0.3, seed)
    assert joined.called
    assert fast == full


def test_a_judgment_listed_twice_leaves_the_shortcut():
    run = _run(0, n_queries=3, length=4)
    twice = pl.concat([run.head(1)] * 2).select("query_id", "doc_id", relevance=pl.lit(1))
    assert ranking.judged_ranks(run, twice, run.select("system", "query_id").unique()) is None


def test_a_hash_shared_with_another_id_is_checked_on_the_id():
    """Hashes that differ within every block (the key check's verdict) but that a judged id not
    retrieved shares with a retrieved one: the first equal hash is not taken on trust; the
    matching falls back to the join and the ranks stay those of the full ranking."""
    run = pl.DataFrame({"system": "s", "query_id": ["q1"] * 3 + ["q2"] * 3, "doc_id": ["a", "bb", "ccc"] * 2,
                        "score": [3.0, 2.0, 1.0, 1.0, 2.0, 3.0]})
    judged = pl.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["xx", "a", "ccc"], "relevance": [1, 1, 2]})
    weak = pl.col("doc_id").str.len_bytes().cast(pl.UInt64)  # "xx" hashes as "bb"
    with mock.patch.object(layout, "value_hash", return_value=weak), \
            mock.patch.object(ranking, "_judged_matches", wraps=ranking._judged_matches) as joined:
        assert layout.distinct_in_blocks(run, "doc_id", 3)
        fast = ranking.judged_ranks(run, judged, run.select("system", "query_id").unique())
    assert joined.called
    found = fast.judged.join(fast.pairs.select("code", "query_id"), on="code").select("query_id", "rank", "relevance")
    assert sorted(found.rows()) == [("q2", 1, 2), ("q2", 3, 1)]
