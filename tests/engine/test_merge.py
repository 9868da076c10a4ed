"""Mergeable partials (DESIGN §3): parts of the data, evaluated apart and merged, give the summary
of the whole — exactly for counts and set metrics, to 1e-12 for floats; quantiles come from the
concatenated per-unit values."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from tables_strategy import evidence_tables, restrict

from evalframe.engine.evaluation import finalize, run
from evalframe.engine.partials import compute_partials
from evalframe.engine.plan import Plan, build_groups

METRICS = {
    "all_queries": ["auroc", "auprc", "tpr@fpr=0.3", "ece", "tp", "fn", "f1", "mcc", "brier",
                    "exact_match", "hamming_loss", "macro_f1", "micro_f1", "weighted_f1", "label_macro_f1"],
    "has_evidence": ["recall@3", "ndcg@5", "mrr", "num_ret"],
}
COUNTS = {"n", "n_skipped", "n_outside_subset"}


def _plan(weighted: bool) -> Plan:
    return Plan(
        groups=build_groups(METRICS, {"has_evidence": "label = 1"}),
        slices={"overall": (), "fold": ("fold",), "criterion": ("criterion_id",)},
        weight="w" if weighted else None,
        across_folds="fold",
    )


def _rows(summary: pl.DataFrame) -> dict:
    keys = ["grouping", "system", "fold", "criterion_id", "metric", "subset"]
    return {tuple(row[k] for k in keys): row for row in summary.iter_rows(named=True)}


@given(tables=evidence_tables(weights="integer", min_posts=2), weighted=st.booleans(), data=st.data())
@settings(max_examples=60)
def test_parts_merge_into_the_whole(tables, weighted, data):
    posts = tables.queries.get_column("post_id").unique().sort().to_list()
    n_parts = data.draw(st.integers(1, min(8, len(posts))))
    order = data.draw(st.permutations(posts))
    parts = [restrict(tables, list(order[i::n_parts])) for i in range(n_parts)]
    plan = _plan(weighted)
    whole = run(tables, plan)
    partials = [compute_partials(part, plan) for part in parts]
    merged = finalize(partials[0].merge(*partials[1:]))

    ours, theirs = _rows(merged.summary), _rows(whole.summary)
    assert ours.keys() == theirs.keys()
    for key, row in ours.items():
        other = theirs[key]
        for stat in ("n", "n_skipped", "n_outside_subset", "value", "std", "median", "p25", "p75", "p90", "min", "max", "note"):
            a, b = row[stat], other[stat]
            if stat in COUNTS or isinstance(a, str) or a is None or b is None:
                assert a == b, (key, stat, a, b)
            else:
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (key, stat, a, b)
    # per-unit values: the same rows, in any order (floats to 1e-12: a part's group-by may add in
    # another order than the whole's)
    keys = [c for c in merged.per_unit_values.columns if c != "value"]
    ours_values = merged.per_unit_values.sort(keys, nulls_last=True)
    whole_values = whole.per_unit_values.select(ours_values.columns).sort(keys, nulls_last=True)
    assert ours_values.select(keys).equals(whole_values.select(keys))
    a, b = ours_values.get_column("value"), whole_values.get_column("value")
    assert (a.is_null() == b.is_null()).all()
    assert ((a - b).abs().fill_null(0.0) <= 1e-12).all()
