"""The ROC family as one function of its dense state (``metrics/keyed_sums.py``, ``RocCurves``):
slices as columns give each slice's own bits, AUROC's exact branch gives the bits of the ascending
sum, and a Polars plan of the same formulas gives the same bits (the definition before it moved)."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.metrics.base import WEIGHT
from evalframe.metrics.curves import roc_points
from evalframe.metrics.keyed_sums import slice_columns
from evalframe.metrics.registry import resolve
from evalframe.metrics.roc import AUROC, RocCurves

FAMILY = ["auroc", "auprc", "tpr@fpr=0.1", "tpr@fpr=0.5", "detection_rate@fpr=0.2", "actual_fpr@fpr=0.2",
          "threshold_index@fpr=0.2", "min_cost(fp_cost=1,fn_cost=3)", "min_cost_threshold(fp_cost=2,fn_cost=1)"]


def _rows(draw, weights):
    n = draw(st.integers(0, 40))
    return pl.DataFrame({
        "slice": draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)),
        "label": draw(st.lists(st.sampled_from([0, 1, None]), min_size=n, max_size=n)),
        "prob": draw(st.lists(st.sampled_from([None, 0.0, 0.125, 0.25, 0.5, 0.75, 0.9, 1.0]), min_size=n, max_size=n)),
        WEIGHT: draw(st.lists(st.sampled_from(weights), min_size=n, max_size=n)),
    }, schema={"slice": pl.Int64, "label": pl.Int64, "prob": pl.Float64, WEIGHT: pl.Float64})


@given(data=st.data(), whole=st.booleans())
@settings(max_examples=10, deadline=None)
def test_slices_as_columns_give_each_slice_its_own_bits(data, whole):
    """Slices of many sizes share padded matrices in finalize; each slice's value equals the
    value of its rows alone (a padding row, zero in a column, changes no value of it)."""
    rows = _rows(data.draw, [0.0, 1.0, 2.0, 3.0] if whole else [0.0, 0.5, 1.0, 2.25, 1e-3])
    for name in FAMILY:
        metric = resolve(name)
        together = metric.compute(rows.lazy(), ["slice"]).collect()
        for key, value, note in together.select("slice", "value", "note").iter_rows():
            alone = metric.compute(rows.filter(pl.col("slice") == key).lazy(), []).collect()
            assert alone.get_column("value").to_list() == [value], (name, key)
            assert alone.get_column("note").to_list() == [note], (name, key)


@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_auroc_exact_branch_has_the_bits_of_the_ascending_sum(data):
    """With whole weights AUROC adds its terms per run of negatives, unsorted; the ascending sum of
    every term (the branch for other weights) gives the same bits."""
    rows = _rows(data.draw, [1.0, 2.0, 7.0, 1000.0])
    state = roc_points(rows.lazy(), ["slice"]).collect()
    for _, dense in slice_columns(state, ["slice"], ["prob"], ["n", "positive_weight", "negative_weight"]):
        exact = RocCurves.of_state(dense)
        assert exact.whole
        summed = RocCurves.of_state(dense)
        summed.whole = False
        with np.errstate(invalid="ignore", divide="ignore"):
            np.testing.assert_array_equal(AUROC().on_curves(exact), AUROC().on_curves(summed))


def _polars_definitions(state: pl.LazyFrame) -> pl.LazyFrame:
    """AUROC, AUPRC and TPR@FPR=0.5 of one slice as the Polars plans that defined them before
    the family became one NumPy function: points sorted highest first, running sums, and the
    terms of the areas sorted ascending and added in turn."""
    def points(column):
        return pl.col(column).sort_by("prob", descending=True, nulls_last=True)

    def ascending(values):
        return values.sort().cum_sum().last().fill_null(0.0)

    tp, fp = points("positive_weight").cum_sum(), points("negative_weight").cum_sum()
    total_positive, total_negative = tp.last().fill_null(0.0), fp.last().fill_null(0.0)
    trapezoids = points("negative_weight") * (tp.shift(1, fill_value=0.0) + tp) / 2
    precision_terms = (points("positive_weight") * (tp / (tp + fp))).filter(points("positive_weight") > 0)
    within = fp / (fp * 0.0 + total_negative) <= 0.5
    return state.select(
        auroc=ascending(trapezoids) / (total_positive * total_negative),
        auprc=ascending(precision_terms) / total_positive,
        tpr=tp.filter(within).max().fill_null(0.0) / total_positive,
    )


@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_the_function_keeps_the_bits_of_the_polars_definition(data):
    rows = _rows(data.draw, [0.0, 0.1, 0.5, 1.0, 2.25, 3.0]).with_columns(pl.lit(0).alias("slice"))
    state = roc_points(rows.lazy(), [])
    expected = _polars_definitions(state).collect().row(0)
    found = [resolve(name).compute(rows.lazy(), []).collect().get_column("value").item()
             for name in ("auroc", "auprc", "tpr@fpr=0.5")]
    for name, value, reference in zip(("auroc", "auprc", "tpr"), found, expected, strict=True):
        if value is not None:  # defined: the very bits
            assert value == reference, name
        else:  # undefined only where the slice lacks a class (the reference formula may give anything there)
            totals = state.select(pl.col("positive_weight").sum(), pl.col("negative_weight").sum()).collect().row(0)
            assert 0.0 in totals, name
