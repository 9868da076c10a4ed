"""Helpers of the partition tests (:mod:`test_kernel`, :mod:`test_buckets`): RAG answers for
the random evidence tables, and the comparison of an evaluation of parts with the whole's."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import strategies as st

import evalframe as ef

#: Every metric family: ranking (item), classification and calibration set metrics (confusion,
#: ROC, ECE), a query-level score, per-post multi-label metrics, RAG lexical metrics.
METRICS = {
    "all_queries": ["auroc", "auprc", "ece", "f1", "mcc", "tp", "brier", "exact_match", "macro_f1", "micro_f1",
                    "token_f1", "answer_exact_match"],
    "has_evidence": ["recall@3", "ndcg@5", "mrr", "map", "num_ret"],
}
SUBSETS = {"has_evidence": "label = 1"}
SLICES = {"overall": (), "fold": ("fold",), "criterion": ("criterion_id",)}
COUNTS = ("n", "n_skipped", "n_outside_subset")
#: Statistics read off the per-unit values (order statistics) or the replicate values: identical
#: (except on the ``across_folds`` rows, whose quantiles are over the folds' means, i.e. sums).
EXACT = ("median", "p25", "p75", "p90", "min", "max", "ci_low", "ci_high")
#: Statistics from sums that merge (moments): within 1e-12 relative.
SUMS = ("value", "std", "se")
WORDS = ["the", "cat", "sat", "a", "mat", "dog", "ran", "Cat!"]


def with_answers(tables: ef.Tables, data) -> ef.Tables:
    """The tables with a RAG reference and response per query (a few words each, often equal)."""
    n = tables.queries.height
    words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)
    references = data.draw(st.lists(words, min_size=n, max_size=n))
    responses = [data.draw(st.sampled_from([ref, ref.upper()]) | words) for ref in references]
    queries = tables.queries.with_columns(pl.Series("reference", references), pl.Series("response", responses))
    return ef.Tables(queries=queries, judgments=tables.judgments, ranked_lists=tables.ranked_lists)


def _close(x: pl.Series | np.ndarray, y: pl.Series | np.ndarray, tolerance: float) -> bool:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return bool(np.allclose(x, y, rtol=tolerance, atol=tolerance, equal_nan=True))


def assert_same_evaluation(ours: ef.Evaluation, whole: ef.Evaluation) -> None:
    """Counts, keys, skip reasons, notes, per-unit values, quantiles, intervals and replicate
    values identical; the statistics from merged sums (mean, std, se) within 1e-12 relative
    (rows in any order)."""
    columns = whole.per_unit_values.columns
    order = [c for c in columns if c != "value"]
    ours_values = ours.per_unit_values.select(columns).sort(order, nulls_last=True)
    whole_values = whole.per_unit_values.sort(order, nulls_last=True)
    assert ours_values.select(order).equals(whole_values.select(order))
    assert ours_values.get_column("value").equals(whole_values.get_column("value"))
    assert ours.skipped.equals(whole.skipped)
    keys = ["grouping", "system", *whole.plan.slice_keys, "metric", "subset"]
    a, b = ours.summary.sort(keys, nulls_last=True), whole.summary.sort(keys, nulls_last=True)
    assert a.select(keys).equals(b.select(keys))
    for stat in (*COUNTS, "note"):
        assert a.get_column(stat).equals(b.get_column(stat)), stat
    of_units = pl.col("grouping") != "across_folds"
    for stat in EXACT:
        assert a.filter(of_units).get_column(stat).equals(b.filter(of_units).get_column(stat)), stat
    for stat in (*SUMS, *EXACT):
        assert _close(a.get_column(stat).fill_null(np.nan), b.get_column(stat).fill_null(np.nan), 1e-12), stat
    assert ours.notes == whole.notes, (ours.notes, whole.notes)
    if whole.replicates is not None:
        rows = [c for c in whole.replicates.columns if c != "values"]
        ours_r, whole_r = ours.replicates.sort(rows, nulls_last=True), whole.replicates.sort(rows, nulls_last=True)
        assert ours_r.select(rows).equals(whole_r.select(rows))
        assert ours_r.get_column("values").equals(whole_r.get_column("values"))


