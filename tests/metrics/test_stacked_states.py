"""Stacked states of many slices at once (``values_under_grouped``, ``stacked_states``): every
slice's replicate values have the bits that the slice alone gives (``SetMetric.values_under``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest

from evalframe.metrics.base import WEIGHT, RowWeights, SetMetric, TargetCategory, values_under_all, values_under_grouped
from evalframe.metrics.registry import available, resolve


@dataclass(frozen=True)
class SquaredWeightShare(SetMetric):
    """A toy set metric whose state is not linear in the weights (Σ w² / Σ w): the slow path."""

    target = TargetCategory.CLASSIFICATION
    required_columns = {"queries": ("label",)}

    @property
    def name(self) -> str:
        return "squared_weight_share"

    def state(self, rows, by):
        aggregations = [pl.len().cast(pl.Int64).alias("n"), (pl.col(WEIGHT) ** 2).sum().alias("squares"),
                        pl.col(WEIGHT).sum().alias("weight")]
        return rows.group_by(by).agg(aggregations) if by else rows.select(aggregations)

    def finalize(self, state, by):
        aggregations = [pl.col("n").sum().cast(pl.Int64), (pl.col("squares").sum() / pl.col("weight").sum()).alias("value"),
                        pl.lit(None, dtype=pl.String).alias("note")]
        return state.group_by(by).agg(aggregations) if by else state.select(aggregations)


METRICS = ["auroc", "tpr@fpr=0.3", "ece", "ece(bins=3)", "f1", "mcc", "tp", "micro_f1", "label_macro_f1", "weighted_f1"]


def _frame(seed: int) -> pl.DataFrame:
    """Posts of 1–4 criteria in 3 folds; a few rows without prob; ties in prob."""
    rng = np.random.default_rng(seed)
    posts = int(rng.integers(5, 40))
    criteria = rng.integers(1, 5, posts)
    post = np.repeat(np.arange(posts), criteria)
    criterion = np.concatenate([np.arange(c) for c in criteria])
    prob = np.round(rng.random(post.size), 1)
    prob = np.where(rng.random(post.size) < 0.05, np.nan, prob)
    return pl.DataFrame({
        "post_id": [f"p{p}" for p in post], "criterion_id": [f"c{c}" for c in criterion],
        "fold": rng.integers(0, 3, posts)[post], "label": rng.integers(0, 2, post.size),
        "prob": prob,
    }).with_columns(pl.col("prob").fill_nan(None))


@pytest.mark.parametrize("seed", range(6))
def test_every_slice_has_the_bits_it_has_alone(seed):
    frame = _frame(seed)
    rng = np.random.default_rng(100 + seed)
    post = frame.get_column("post_id").rank("dense").cast(pl.Int64).to_numpy() - 1
    # Unit weights (a post's resample counts, some units never drawn) and user weights (some 0).
    units = rng.poisson(1.0, (post.max() + 3, 7)).astype(np.float64)
    user = np.where(rng.random(frame.height) < 0.1, 0.0, rng.integers(1, 4, frame.height).astype(np.float64))
    weights = RowWeights(units, post, user)
    by = ["fold"] if seed % 2 else ["fold", "criterion_id"]
    slices = [np.asarray(rows, dtype=np.int64) for rows in
              frame.with_row_index("_row").group_by(by, maintain_order=True).agg("_row").get_column("_row").to_list()]
    metrics = [resolve(name) for name in METRICS] + [SquaredWeightShare()]
    grouped = values_under_grouped(metrics, frame, slices, weights)
    alone = [{m.name: m.values_under(frame[rows], weights.take(rows)) for m in metrics} for rows in slices]
    assert values_under_all(metrics, frame[slices[0]], weights.take(slices[0])).keys() == alone[0].keys()
    assert len(grouped) == len(alone) == len(slices)
    for together, by_itself in zip(grouped, alone, strict=True):
        for metric in metrics:
            np.testing.assert_array_equal(together[metric.name], by_itself[metric.name], err_msg=metric.name)


#: One metric of each family that declares its state's kinds (``SetMetric.state_kinds``).
DECLARING = ["auroc", "ece", "ece(bins=3)", "tp", "micro_f1", "neg_rate", "neg_rate(tau_neg=0.3,tau_pos=0.7)"]


def test_every_declaring_family_is_checked():
    """Every class that declares ``state_kinds`` (its own, not inherited) has a metric in :data:`DECLARING`."""
    owners = {next(c for c in spec.build.__mro__ if "state_kinds" in vars(c)) for spec in available()
              if isinstance(spec.build, type) and issubclass(spec.build, SetMetric) and spec.build.state_kinds is not None}
    assert len(owners) >= 5
    assert [owner.__name__ for owner in owners if not any(isinstance(resolve(name), owner) for name in DECLARING)] == []


@pytest.mark.parametrize("name", DECLARING)
@pytest.mark.parametrize("seed", range(3))
def test_declared_state_kinds_are_what_the_probe_finds(name, seed):
    """The kinds a metric declares equal those the probe finds (its state under the weights and
    under them doubled, slice by slice), on whole and fractional weights: declaring them only
    spares the probe."""
    metric = resolve(name)
    frame = _frame(seed).with_columns(
        pl.when(pl.col("prob") < 0.3).then(pl.lit("NEG")).when(pl.col("prob") < 0.7).then(pl.lit("UNCERTAIN"))
        .when(pl.col("prob").is_not_null()).then(pl.lit("POS")).alias("state"))
    rng = np.random.default_rng(200 + seed)
    weight = np.where(rng.random(frame.height) < 0.5, rng.integers(0, 4, frame.height), rng.random(frame.height) * 3)
    rows = frame.with_columns(pl.Series(WEIGHT, weight, dtype=pl.Float64)).lazy()
    keys = [*metric.state_keys]
    once = metric.state(rows, ["fold"]).sort(["fold", *keys], nulls_last=True).collect()
    twice = metric.state(rows.with_columns(pl.col(WEIGHT) * 2.0), ["fold"]).sort(["fold", *keys], nulls_last=True).collect()
    columns = [c for c in once.columns if c not in ("fold", *keys)]
    assert sorted(columns) == sorted(metric.state_kinds)
    for column in columns:
        single, double = (t.get_column(column).cast(pl.Float64).to_numpy() for t in (once, twice))
        kind = metric.state_kinds[column]
        np.testing.assert_array_equal(double, 2 * single if kind == "sum" else single, err_msg=f"{name}: {column} is not a {kind}")
        if kind == "sum":  # a true sum: it changes when the weights do (not a count that happens to double)
            assert not np.array_equal(double, single) or not single.any(), f"{name}: {column}"


@pytest.mark.parametrize("seed", range(3))
def test_the_products_of_many_slices_give_each_slice_its_own_table(seed):
    """``long_tables`` (one product for many slices) gives each slice the table that its own
    products give, row for row and bit for bit: fractional weights, units never drawn, a slice
    without rows, a state with keys (ECE's bins) and one without (the confusion counts)."""
    from evalframe.metrics.base import REPLICATE
    from evalframe.metrics.stacked import dense_states, long_tables

    frame = _frame(seed)
    rng = np.random.default_rng(300 + seed)
    post = frame.get_column("post_id").rank("dense").cast(pl.Int64).to_numpy() - 1
    units = rng.poisson(1.0, (post.max() + 2, 5)).astype(np.float64) * rng.choice([1.0, 0.5, 1.25], post.max() + 2)[:, None]
    user = rng.integers(0, 3, frame.height).astype(np.float64)
    weights = RowWeights(units, post, user)
    slices = [np.asarray(rows, dtype=np.int64) for rows in
              frame.with_row_index("_row").group_by("fold", maintain_order=True).agg("_row").get_column("_row").to_list()]
    slices.append(np.zeros(0, np.int64))
    for name in ["ece(bins=3)", "tp", "micro_f1"]:
        metric = resolve(name)
        denses = list(dense_states(metric, frame, slices, weights, weight=WEIGHT))
        together = list(long_tables(denses, REPLICATE))
        assert len(together) == len(slices)
        for dense, table in zip(denses, together, strict=True):
            alone = dense.long_table(REPLICATE)
            assert table.equals(alone), name
            assert table.schema == alone.schema


@pytest.mark.parametrize("seed", range(4))
def test_a_dense_product_of_whole_numbers_has_the_sparse_products_bits(seed, monkeypatch):
    """Whole numbers are multiplied dense (any order of adding is exact) and give the bits of the
    sparse product, which adds each cell's units in order: negative values and zero weights (-0.0
    terms), several parts; a sum that could reach 2^53 takes the sparse product."""
    from evalframe.metrics import stacked

    rng = np.random.default_rng(400 + seed)
    units, replicates = int(rng.integers(1, 50)), 7
    against = rng.poisson(1.0, (units, replicates)).astype(np.float64)
    parts = []
    for _ in range(int(rng.integers(1, 4))):
        n_keys = int(rng.integers(1, 4))
        pairs = np.sort(rng.choice(n_keys * units, size=int(rng.integers(1, n_keys * units + 1)), replace=False))
        columns = [rng.integers(-5, 6, pairs.size).astype(np.float64) for _ in range(int(rng.integers(1, 3)))]
        parts.append((columns, pairs // units, pairs % units, n_keys))
    if seed == 3:
        parts[0][0][0][0] = 2.0**53
    # A cell whose only term is -3 · 0 (a unit not drawn): the sparse product gives 0.0, not -0.0.
    against[0] = 0.0
    parts.append(([np.array([-3.0, 2.0])], np.array([0, 1]), np.array([0, min(1, units - 1)]), 2))
    made = []
    dense_product = stacked._dense_product
    monkeypatch.setattr(stacked, "_dense_product", lambda *args: made.append(dense_product(*args)) or made[-1])
    dense_way = stacked._products_of_many(parts, against, whole=True)
    assert (made[0] is None) == (seed == 3)  # dense, but for the sum that could round
    sparse_way = stacked._products_of_many(parts, against, whole=False)
    assert len(made) == 1  # not tried when the weights are not whole
    for one, two in zip(sparse_way, dense_way, strict=True):
        assert one.shape == two.shape
        np.testing.assert_array_equal(one.view(np.uint64), two.view(np.uint64))
