"""Slice codes (:func:`evalframe.engine.slicing.slice_codes`): grouping the rows by an integer
code per grouping set of several keys gives the partials of grouping by the keys, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
import evalframe.engine.slicing as slicing
from evalframe.data.tables import Tables
from evalframe.engine.evaluation import make_plan
from evalframe.engine.partials import compute_partials
from evalframe.engine.slicing import slice_codes

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
NEVER = 1 << 62  # no frame has this many rows: no code


def _bits(frame: pl.DataFrame) -> list:
    """Every column's values, floats as their bits (so -0.0, NaN payloads and last bits count)."""
    found = []
    for column in frame.get_columns():
        if column.dtype in (pl.Float32, pl.Float64):
            width = np.uint64 if column.dtype == pl.Float64 else np.uint32
            found.append((column.is_null().to_list(), column.fill_null(0.0).to_numpy().view(width).tolist()))
        else:
            found.append(column.to_list())
    return found


def _same_partials(coded, plain) -> None:
    assert coded.sizes.keys() == plain.sizes.keys() and coded.moments.keys() == plain.moments.keys()
    for key, frame in plain.sizes.items():  # slices in order of first appearance: the same order
        assert coded.sizes[key].schema == frame.schema
        assert _bits(coded.sizes[key]) == _bits(frame), key
    for key, frame in plain.moments.items():  # a group-by's rows come in no particular order
        ordered = [*frame.columns[:frame.columns.index("metric") + 1]]
        assert coded.moments[key].schema == frame.schema
        assert _bits(coded.moments[key].sort(ordered, nulls_last=True)) == _bits(frame.sort(ordered, nulls_last=True)), key
    for key, frame in plain.values.items():
        assert coded.values[key].schema == frame.schema
        assert _bits(coded.values[key]) == _bits(frame), key
    for key, frame in plain.states.items():  # grouped by the keys either way, in no particular order
        assert _bits(coded.states[key].sort(pl.all(), nulls_last=True)) == _bits(frame.sort(pl.all(), nulls_last=True)), key


@pytest.fixture(scope="module")
def sample():
    return ef.read_per_query(SAMPLE)


def _plan(slices: dict) -> ef.Plan:
    return make_plan(
        metrics={"all_queries": ["brier", "n_queries", "positive_rate", "ece", "tp", "exact_match", "hamming_score"],
                 "has_evidence": ["recall@5", "ndcg@10", "mrr"]},
        subsets={"has_evidence": "label = 1"},
        slices=slices,
    )


def test_the_sample_coded_and_by_its_keys_gives_the_same_partials(sample, monkeypatch):
    plan = _plan({"overall": [], "fold": ["fold"], "criterion": ["criterion_id"], "state": ["state"],
                          "cell": ["fold", "label"]})
    assert sample.queries.height >= slicing.CODED_FROM_ROWS  # coded
    coded = compute_partials(sample, plan)
    monkeypatch.setattr(slicing, "CODED_FROM_ROWS", NEVER)
    plain = compute_partials(sample, plan)
    _same_partials(coded, plain)


KEY_VALUES = {"fold": st.sampled_from([1, 2, None]), "tier": st.sampled_from(["a", "b", "", None]),
              "flag": st.sampled_from([True, False, None])}


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["s", "t"]), KEY_VALUES["fold"], KEY_VALUES["tier"], KEY_VALUES["flag"],
                          st.integers(0, 1), st.floats(0, 1)), min_size=1, max_size=40))
def test_random_keys_with_nulls_coded_and_by_their_keys_give_the_same_partials(rows):
    systems, folds, tiers, flags, labels, probs = (list(column) for column in zip(*rows, strict=True))
    ids = [f"q{i}" for i in range(len(rows))]
    queries = pl.DataFrame({"system": systems, "query_id": ids, "fold": folds, "tier": tiers, "flag": flags,
                            "label": labels, "prob": probs},
                           schema_overrides={"fold": pl.Int64, "tier": pl.String, "flag": pl.Boolean})
    tables = Tables(queries=queries, judgments=pl.DataFrame({"query_id": ids, "doc_id": "d", "relevance": labels}),
                    ranked_lists=pl.DataFrame({"system": systems, "query_id": ids, "doc_id": [["d", "x"]] * len(ids)}),
                    n_rows=len(ids))
    plan = make_plan(metrics=["brier", "positive_rate", "recall@1", "ece"],
                        slices={"overall": [], "fold": ["fold"], "tier": ["tier"], "all": ["fold", "tier", "flag"]})
    original = slicing.CODED_FROM_ROWS
    try:  # (hypothesis runs the examples within one test: no monkeypatch fixture)
        slicing.CODED_FROM_ROWS = 0
        coded = compute_partials(tables, plan)
        slicing.CODED_FROM_ROWS = NEVER
        plain = compute_partials(tables, plan)
    finally:
        slicing.CODED_FROM_ROWS = original
    _same_partials(coded, plain)


def test_codes_stand_for_their_keys_and_put_them_back():
    rows = pl.DataFrame({"system": ["a", "b", "a", "a", "b"], "fold": [1, None, 1, None, None], "tags": [["x"]] * 5})
    coded, codes = slice_codes(rows, {"overall": ["system"], "fold": ["system", "fold"], "tag": ["system", "tags"]},
                               from_rows=0)
    assert list(codes.columns) == ["fold"]  # one key alone and list keys are grouped by their keys
    code = coded.get_column(codes.columns["fold"])
    assert code.to_list() == [0, 1, 0, 3, 1]  # the first row of each slice; a null key is a slice of its own
    sizes = coded.lazy().group_by(codes.group_keys("fold", ["system", "fold"]), maintain_order=True).agg(n=pl.len())
    assert codes.with_keys(sizes, "fold").collect().rows() == [("a", 1, 2), ("b", None, 2), ("a", None, 1)]
    assert slice_codes(rows, {"fold": ["system", "fold"]})[1].columns == {}  # few rows: not coded
    taken = rows.with_columns(pl.lit(1).alias("__slice_code_0"))  # a column of a code's name: not coded
    assert slice_codes(taken, {"fold": ["system", "fold"]}, from_rows=0)[1].columns == {}
