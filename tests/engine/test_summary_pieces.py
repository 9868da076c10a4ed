"""The summary's pieces (quantiles, set metrics' finalize) of a metric group are made as soon as
its partials are, beside the next groups' (``compute_partials``' ``on_group``, ``run``): the
result is the one ``finalize`` gives making them itself, and a failure there is raised by
``finalize``, after every group's partials, as before. The long per-unit values are made when
first read (``LongValues``), once for a result and its copies."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from tables_strategy import evidence_tables
from test_config_errors_first import FailsWhenComputed
from test_merge import _plan as merge_plan

import evalframe as ef
import evalframe.engine.evaluation as evaluation
from evalframe.engine.evaluation import finalize, run
from evalframe.engine.partials import compute_partials
from evalframe.engine.plan import Plan, build_groups
from evalframe.errors import ConfigError
from evalframe.metrics.confusion import TruePositives

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"

METRICS = {
    "all_queries": ["auroc", "tpr@fpr=0.3", "ece", "tp", "f1", "brier", "n_queries", "exact_match", "macro_f1"],
    "has_evidence": ["recall@3", "ndcg@5", "mrr", "tp"],
}


def _plan(weighted: bool) -> Plan:
    return merge_plan(weighted, METRICS)


@given(tables=evidence_tables(weights="integer"), weighted=st.booleans())
@settings(max_examples=10, deadline=None)
def test_pieces_made_beside_the_partials_give_finalizes_summary(tables, weighted):
    plan = _plan(weighted)
    begun = run(tables, plan)  # each group's pieces made on the thread that made its partials
    alone = finalize(compute_partials(tables, plan), tables=tables)  # finalize makes every piece
    assert_frame_equal(begun.summary, alone.summary, check_exact=True)
    assert_frame_equal(begun.skipped, alone.skipped, check_exact=True)


def test_run_hands_every_groups_pieces_to_finalize(tables, monkeypatch):
    """``run`` makes the pieces of every group while computing the partials; ``finalize`` then
    makes none (its own call of ``summary_pieces`` is the only one with ``threads=2``)."""
    calls = []
    made = evaluation.summary_pieces

    def counting(plan, applies, values, states, groups=None, *, threads=2):
        calls.append((tuple(groups) if groups is not None else None, threads))
        return made(plan, applies, values, states, groups, threads=threads)

    monkeypatch.setattr(evaluation, "summary_pieces", counting)
    plan = _plan(weighted=False)
    result = run(tables, plan)
    assert sorted(calls) == [((g,), 1) for g in range(len(plan.groups))]
    assert result.summary.height > 0


@dataclass(frozen=True)
class FailsWhenFinalized(TruePositives):
    """TP whose ``finalize`` fails (a misconfigured custom set metric)."""

    printed: ClassVar[str] = "fails_when_finalized"

    def finalize(self, state, by):
        raise ConfigError("`fails_when_finalized` cannot finalize")


@pytest.fixture(scope="module")
def tables():
    return ef.read_per_query(SAMPLE)


def test_a_failing_finalize_is_raised_by_finalize(tables):
    with pytest.raises(ConfigError, match="cannot finalize"):
        run(tables, Plan(groups=build_groups([FailsWhenFinalized(), "auroc"], None), slices={"overall": (), "fold": ("fold",)}))


def test_a_later_groups_collect_error_comes_before_an_earlier_groups_finalize_error(tables, monkeypatch):
    """The first group's pieces fail beside the second group's partials: the partials' error
    is raised, as when the summary began after every group's partials."""
    import evalframe._threads as threads

    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    plan = Plan(groups=build_groups({"all_queries": [FailsWhenFinalized()], "has_evidence": [FailsWhenComputed()]},
                                    {"has_evidence": "label = 1"}),
                slices={"overall": ()})
    with pytest.raises(Exception, match="a collect error"):
        run(tables, plan)


def test_a_metric_of_two_subsets_keeps_its_groups_order(tables):
    """Rows equal on grouping set, system, slice and metric (one metric computed on two subsets)
    come in the metric groups' order, as the summary's tasks run."""
    result = ef.evaluate(tables, metrics={"all_queries": ["mrr", "tp"], "has_evidence": ["mrr", "tp"]},
                         subsets={"has_evidence": "label = 1"}, slices={"overall": [], "fold": ["fold"]})
    summary = result.summary
    for metric in ("mrr", "tp"):
        in_group_order = [group.subset_text(next(m for m in group.metrics if m.name == metric)) for group in result.plan.groups]
        assert len(set(in_group_order)) == 2
        subsets = summary.filter(pl.col("metric") == metric).group_by(
            "grouping", "system", "fold", maintain_order=True).agg(pl.col("subset"))
        assert subsets.height > 0
        assert all(found == in_group_order for found in subsets.get_column("subset").to_list())


# --- the long per-unit values: made when first read, once for every copy ---------------------


def test_the_long_values_are_made_when_first_read_and_shared_by_copies(tables, monkeypatch):
    """A run that reads only the summary never makes the long per-unit values (units × metrics
    rows); the first read makes them (the frame the engine always gave: the skip counts agree
    with it), and copies of the result (``replace``) read the same frame, made once."""
    import pickle
    from dataclasses import replace

    from evalframe.engine.result import LongValues

    collected = []
    made = LongValues.frame

    def counting(self):
        collected.append(self._frame is None)
        return made(self)

    monkeypatch.setattr(LongValues, "frame", counting)
    result = ef.evaluate(tables, metrics={"all_queries": ["brier", "exact_match", "mrr"], "has_evidence": ["mrr"]},
                         subsets={"has_evidence": "label = 1"}, slices={"overall": [], "fold": ["fold"]})
    assert result.summary.height > 0 and result.skipped.height > 0
    assert collected == []  # nothing read them yet
    copy = replace(result, notes=("a copy",))
    first = copy.per_unit_frame
    assert result.per_unit_frame is first and collected == [True, False]  # made once, for both
    skipped = (first.filter(pl.col("skip_reason").is_not_null()).group_by("system", "unit", "metric", "skip_reason")
               .agg(count=pl.len().cast(pl.Int64)))
    counted = skipped.join(result.skipped, on=["system", "unit", "metric", "skip_reason"], how="left", suffix="_engine")
    assert counted.height > 0 and (counted.get_column("count") == counted.get_column("count_engine")).all()
    unpickled = pickle.loads(pickle.dumps(result.per_unit_source))
    assert_frame_equal(unpickled.frame(), first)
