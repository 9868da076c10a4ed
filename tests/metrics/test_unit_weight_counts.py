"""States of rows whose every weight is 1 (``base.all_weights_one``): the weighted counts are plain
counts of rows, and the states have the bits of the exact fixed-point sums they replace, for
every set metric that counts weights (confusion, ROC points, calibration bins, the gate, the
multi-label F1s); the engine builds its states so when the plan has no ``weight``."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.metrics import curves
from evalframe.metrics.base import WEIGHT, SetMetric, all_weights_one, weights_are_one
from evalframe.metrics.registry import resolve

#: One metric of each state that counts weights (the others of a family share its state).
COUNTING = ["tp", "auroc", "ece", "neg_rate", "micro_f1"]
BY = ["system", "fold"]


def _metric(name: str) -> SetMetric:
    metric = resolve(name)
    if "unit_keys" in getattr(metric, "__dataclass_fields__", {}):  # the multi-label F1s count posts
        from dataclasses import replace

        metric = replace(metric, unit_keys=("post_id",))
    return metric


def _rows(draw) -> pl.DataFrame:
    n = draw(st.integers(0, 40))
    probability = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 0.5, 0.1, 0.3]), st.floats(0.0, 1.0))
    return pl.DataFrame({
        "system": draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n)),
        "fold": draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)),
        "post_id": draw(st.lists(st.sampled_from(["p1", "p2", "p3", "p4"]), min_size=n, max_size=n)),
        "criterion_id": draw(st.lists(st.sampled_from(["A.1", "A.2", "A.3"]), min_size=n, max_size=n)),
        "label": draw(st.lists(st.one_of(st.none(), st.sampled_from([0, 1])), min_size=n, max_size=n)),
        "prob": draw(st.lists(probability, min_size=n, max_size=n)),
        "state": draw(st.lists(st.one_of(st.none(), st.sampled_from(["NEG", "UNCERTAIN", "POS"])), min_size=n, max_size=n)),
    }, schema_overrides={"label": pl.Int64, "prob": pl.Float64, "state": pl.String}).with_columns(
        pl.lit(1.0, dtype=pl.Float64).alias(WEIGHT))


def _state(metric: SetMetric, rows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    state = metric.state(rows.lazy(), by).collect(engine="in-memory")
    return state.sort(state.columns, nulls_last=True)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_counted_states_have_the_bits_of_the_exact_sums(data):
    rows = _rows(data.draw)
    for name in COUNTING:
        metric = _metric(name)
        for by in ([], BY):
            exact = _state(metric, rows, by)
            with all_weights_one():
                counted = _state(metric, rows, by)
            assert counted.schema == exact.schema, name
            assert counted.equals(exact), name  # Float64 counts bit for bit (equals compares the bits of floats)


def test_the_counts_are_plain_only_inside_the_block():
    assert not weights_are_one()
    assert isinstance(curves.weight_where(pl.col("x")), curves.Exact)
    with all_weights_one():
        assert weights_are_one() and not isinstance(curves.weight_where(pl.col("x")), curves.Exact)
        with all_weights_one(False):  # a weighted evaluation inside: exact again
            assert isinstance(curves.weight_where(pl.col("x")), curves.Exact)
        assert weights_are_one()
    assert not weights_are_one()


@pytest.mark.parametrize("weight", [None, "w"])
def test_the_engine_counts_plainly_only_without_a_weight_column(monkeypatch, weight):
    seen = []
    real = curves.weight_where

    def spied(condition):
        seen.append(weights_are_one())
        return real(condition)

    monkeypatch.setattr(curves, "weight_where", spied)
    queries = pl.DataFrame({"system": "default", "query_id": ["q1", "q2", "q3", "q4"], "label": [1, 0, 1, 0],
                            "prob": [0.9, 0.4, 0.3, 0.2], "w": [1.0, 1.0, 1.0, 2.0]})
    empty = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    summary = ef.evaluate(ef.Tables(queries=queries, judgments=empty), metrics=["tp", "fp", "auroc", "ece"], weight=weight).summary
    assert seen and set(seen) == {weight is None}  # plain counts without weights, exact sums with them
    values = dict(summary.select("metric", "value").iter_rows())
    assert values["tp"] == 1.0 and values["fp"] == 0.0 and values["auroc"] == (5 / 6 if weight else 0.75)  # weighted pairs: 5 of 6 ordered right
