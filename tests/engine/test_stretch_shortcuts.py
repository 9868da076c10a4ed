"""The shortcuts that read a table's stretches of one query instead of every row give what the
row-by-row forms give: the run rows' pair codes (``RowCodes``), the judgments' pair codes
(``_with_pair_codes``) and the relevant counts (``relevant_counts``), on grouped and on
scattered rows."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evalframe.engine import ranking
from evalframe.engine.derive import relevant_counts


def _judgments(seed: int, *, scattered: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_queries = 1 + seed * 4
    sizes = rng.integers(1, 6, size=n_queries)
    frame = pl.DataFrame({
        "query_id": np.repeat([f"q{i}" for i in range(n_queries)], sizes),
        "doc_id": [f"d{j}" for j in range(int(sizes.sum()))],
        "relevance": rng.integers(0, 4, size=int(sizes.sum())),
    })
    return frame.sample(fraction=1.0, shuffle=True, seed=seed) if scattered else frame


@pytest.mark.parametrize("seed", range(6))
def test_row_codes_stand_for_the_code_of_every_row(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=2 + seed)
    codes = rng.permutation(len(lengths)).astype(np.uint32) if seed % 2 else np.arange(len(lengths), dtype=np.uint32)
    row_codes = ranking.RowCodes(starts=np.cumsum(lengths) - lengths, codes=codes, height=int(lengths.sum()))
    every = np.repeat(codes, lengths)
    assert row_codes.series.to_list() == every.tolist()
    assert row_codes.is_sorted() == bool((every[1:] >= every[:-1]).all())
    rows = rng.integers(0, len(every), size=7)
    assert row_codes.gather(rows).to_list() == every[rows].tolist()
    assert row_codes.gather(pl.Series(rows)).to_list() == every[rows].tolist()


@pytest.mark.parametrize("scattered", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_judgments_take_the_code_of_their_pair(seed, scattered):
    judgments = _judgments(seed, scattered=scattered)
    queries = judgments.get_column("query_id").unique(maintain_order=True)
    wanted = pl.DataFrame({"query_id": queries}).with_row_index("code").filter(pl.col("code") % 3 != 1)  # some not wanted
    joined = judgments.select("query_id", "doc_id", "relevance").join(
        wanted.select("code", "query_id"), on="query_id", how="inner", maintain_order="left")
    assert ranking._with_pair_codes(judgments, wanted).equals(joined)
    two_systems = pl.concat([wanted, wanted.with_columns(pl.col("code") + 1000)])  # a query of two pairs: every row joined
    joined = judgments.select("query_id", "doc_id", "relevance").join(
        two_systems.select("code", "query_id"), on="query_id", how="inner", maintain_order="left")
    assert ranking._with_pair_codes(judgments, two_systems).equals(joined)


@pytest.mark.parametrize("threshold", [1, 2])
@pytest.mark.parametrize("scattered", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_relevant_counts_are_those_of_the_group_by(seed, scattered, threshold):
    judgments = _judgments(seed, scattered=scattered)
    expected = dict(judgments.filter(pl.col("relevance") >= threshold).group_by("query_id").len().iter_rows())
    found = relevant_counts(judgments, threshold)
    assert found.schema == pl.Schema({"query_id": pl.String, "n_relevant": pl.Int64})
    assert {q: n for q, n in found.iter_rows() if n} == expected
    assert found.get_column("query_id").is_unique().all()
