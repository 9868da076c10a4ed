"""The shortcuts of the beyond-accuracy path at scale give the tables of the general path.

- the recommendations reader's users from the runs of equal keys = the hash ``unique``;
- each user's list lined up with the queries row by row = the join;
- the item counts grouped by the streaming engine (whole weights) = the in-memory engine's
  (fractional weights take that one), value for value;
- the item counts of slices whose columns hold one value each (grouped by the item alone, the
  slice columns added as constants) = the group-by over the slice columns and the item;
- the item-count replicate state (integer item ids, one sparse product) = the generic stacked
  state of :mod:`evalframe.metrics.stacked` table for table, and its values = ``finalize`` of
  that state, on random lists (null lists and items, repeats, empty lists) and weights (zero,
  fractional, several users per unit, units out of order).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.engine.recommended import with_recommended
from evalframe.io.recommendations import _users
from evalframe.metrics.base import REPLICATE, WEIGHT, RowWeights, finalized_values
from evalframe.metrics.recommendation import RECOMMENDED, Gini, PopularityBias, UniqueItems
from evalframe.metrics.stacked import stacked_state
from evalframe.data.catalog import catalog

ROWS = [("u1", "a", 1), ("u1", "b", 2), ("u2", "c", 1), ("u2", "a", 2), ("u3", "b", 1), ("u4", "a", 1)]
LISTS = {"u1": ["a", "b"], "u2": ["c", "a"], "u3": ["b"], "u4": ["a"]}
EQUAL_ROWS = [("u1", "a", 1), ("u1", "b", 2), ("u2", "c", 1), ("u2", "a", 2), ("u3", "b", 1), ("u3", "d", 3)]
EQUAL_LISTS = {"u1": ["a", "b"], "u2": ["c", "a"], "u3": ["b", "d"]}


@pytest.mark.parametrize("order", [(0, 1, 2, 3, 4, 5), (0, 2, 1, 3, 4, 5), (5, 4, 3, 2, 1, 0)])
@pytest.mark.parametrize(("rows", "expected"), [(ROWS, LISTS), (EQUAL_ROWS, EQUAL_LISTS)], ids=["lengths vary", "k each"])
def test_users_and_lists_equal_the_general_path(order, rows, expected):
    frame = pl.DataFrame([rows[i] for i in order], schema=["query_id", "doc_id", "rank"], orient="row")
    tables = ef.read_recommendations(frame)
    run = tables.ranking
    assert _users(run).equals(run.select("system", "query_id").unique(maintain_order=True))
    lists = with_recommended(tables, tables.queries)
    joined = with_recommended(tables, tables.queries.reverse()).reverse()  # not lined up: the join
    assert lists.equals(joined)
    assert dict(lists.select("query_id", RECOMMENDED).iter_rows()) == expected


@pytest.mark.parametrize("weights", [[1.0, 2.0, 0.0, 3.0], [0.5, 1.25, 0.0, 3.0]])
def test_item_counts_equal_whichever_engine_groups_them(weights):
    items = pl.DataFrame({"item_id": ["a", "b", "c", "d"], "popularity": [10.5, 3.0, 1.0, 7.0]})
    rows = pl.LazyFrame({RECOMMENDED: [["a", "b"], ["c", "a"], ["b"], ["a", "d"]], WEIGHT: weights})
    bound = catalog(items)
    for metric in (Gini(k=2), UniqueItems(k=2), PopularityBias(k=2, catalog=bound)):
        got = metric.compute(rows, by=[]).collect().get_column("value").item()
        counts = {}
        for recs, w in zip([["a", "b"], ["c", "a"], ["b"], ["a", "d"]], weights):
            for item in recs[:2]:
                counts[item] = counts.get(item, 0.0) + w
        present = {i: c for i, c in counts.items() if c > 0}
        total = sum(present.values())
        if isinstance(metric, UniqueItems):
            expected = len(present)
        elif isinstance(metric, PopularityBias):
            pop = dict(zip(items["item_id"], items["popularity"]))
            expected = sum(c * pop[i] for i, c in present.items()) / total / (sum(pop.values()) / len(pop))
        else:
            ordered = sorted(present.values())
            n = len(ordered)
            expected = (2 * sum((j + 1) * c for j, c in enumerate(ordered)) - (n + 1) * total) / (n * total)
        assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("fold", [["f1"] * 4, ["f1", "f2", "f1", "f2"], [None] * 4], ids=["one value", "two values", "null"])
@pytest.mark.parametrize("weights", [[1.0, 2.0, 0.0, 3.0], [0.5, 1.25, 0.0, 3.0]], ids=["whole", "fractional"])
def test_item_counts_of_one_valued_slices_equal_the_group_by(fold, weights):
    rows = pl.LazyFrame({"system": ["s"] * 4, "fold": pl.Series(fold, dtype=pl.String),
                         RECOMMENDED: [["a", "b"], ["c", "a"], ["b"], ["a", "d"]], WEIGHT: weights})
    by = ["system", "fold"]
    state = UniqueItems(k=2).state(rows, by).collect().filter(pl.col("item_id").is_not_null())
    expected = (
        rows.select(*by, WEIGHT, pl.col(RECOMMENDED).alias("item_id")).explode("item_id")
        .group_by([*by, "item_id"]).agg(pl.lit(0, dtype=pl.Int64).alias("n"), pl.col(WEIGHT).sum().alias("count"))
        .collect()
    )
    assert state.schema == expected.schema
    assert state.sort(by + ["item_id"], nulls_last=True).equals(expected.sort(by + ["item_id"], nulls_last=True))


ITEM_IDS = st.sampled_from(["a", "b", "c", "d", "e", None])
USER_LISTS = st.lists(st.one_of(st.none(), st.lists(ITEM_IDS, max_size=5)), min_size=1, max_size=9)
CATALOG = catalog(pl.DataFrame({"item_id": ["a", "b", "c", "d"], "popularity": [3.0, 1.5, 7.0, 0.0],
                                "category": ["x", "y", "x", None]}))


@settings(max_examples=30, deadline=None)
@given(lists=USER_LISTS, seed=st.integers(0, 2**16), own_units=st.booleans(),
       scales=st.sampled_from([(1.0,), (0.0, 1.0, 2.0), (0.0, 0.5, 1.0, 1 / 3)]))
def test_item_count_replicate_state_is_the_generic_stacked_state(lists, seed, own_units, scales):
    rng = np.random.default_rng(seed)
    frame = pl.DataFrame({RECOMMENDED: pl.Series(lists, dtype=pl.List(pl.String))})
    n_units = len(lists) if own_units else int(rng.integers(1, len(lists) + 1))
    index = np.arange(len(lists)) if own_units else rng.integers(0, n_units, len(lists))
    scale = rng.choice(scales, len(lists))
    weights = RowWeights(rng.poisson(1.0, (n_units, 6)).astype(np.float64), index, scale)
    for metric in (Gini(k=3), PopularityBias(k=3, catalog=CATALOG)):
        mine = metric.replicate_state(frame, weights)
        generic = stacked_state(metric, frame, weights, weight=WEIGHT, replicate=REPLICATE)
        if own_units or np.all(scale == np.floor(scale)):  # each unit's weights add in one order: the same bits
            assert mine.table.equals(generic)
        else:  # several users of a unit with fractional weights: their sum's order may differ
            assert mine.table.drop("count").equals(generic.drop("count"))
            np.testing.assert_allclose(mine.table.get_column("count"), generic.get_column("count"), rtol=1e-14)
        expected = finalized_values(metric.finalize(generic.lazy(), [REPLICATE]).collect(), 6)
        np.testing.assert_allclose(metric.values_from_replicate_state(mine), expected, rtol=1e-12)


def test_the_bootstrap_takes_the_item_count_replicate_state(monkeypatch):
    # The engine's bootstrap builds the item counts under its replicate weights through
    # ItemCountMetric.replicate_state (integer ids, one sparse product), not the generic per-unit
    # state (a group-by of every (user, item) row per block of replicates).
    from evalframe.metrics import recommendation
    from evalframe.metrics import stacked

    calls = []
    original = recommendation.ItemCountMetric.replicate_state
    monkeypatch.setattr(recommendation.ItemCountMetric, "replicate_state",
                        lambda self, frame, weights: calls.append(frame.height) or original(self, frame, weights))
    monkeypatch.setattr(stacked, "stacked_states", lambda *args, **kwargs: pytest.fail("the generic stacked state was used"))
    frame = pl.DataFrame([r for r in ROWS], schema=["query_id", "doc_id", "rank"], orient="row")
    ev = ef.evaluate(ef.read_recommendations(frame), metrics=["gini@2", "unique_items@2"], bootstrap=ef.Bootstrap(resamples=20))
    assert calls == [4]  # one slice (all 4 users), one block, one state shared by both metrics
    assert ev.summary.get_column("ci_low").is_not_null().all()
