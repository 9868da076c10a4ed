"""``conform_with``: a reader's own work on the cast frame runs beside the contract's checks, and
errors come as if each ran in turn (the contract's problems first, then the work's first error)."""

from __future__ import annotations

import threading

import polars as pl
import pytest

from evalframe import _threads
from evalframe.data import conform as conform_module
from evalframe.data.contracts import conform, conform_with, load_contract
from evalframe.errors import InputError

CONTRACT = load_contract("per_query")


def _frame(**changes) -> pl.DataFrame:
    rows = {
        "post_id": ["p1", "p1", "p2"], "criterion_id": ["A", "B", "A"], "fold": ["1", "1", "2"],
        "has_evidence_gold": ["1", "0", "0"], "p_has_evidence": ["0.9", "0.2", "0.1"],
        "gold_sent_uids": [["s1"], [], []], "ranked_sent_uids": [["s1", "s2"], ["s2"], ["t1"]],
    }
    lists = {name: pl.List(pl.String) for name in ("gold_sent_uids", "ranked_sent_uids")}
    return pl.DataFrame(rows | changes, schema_overrides=lists)


def _fails(message: str):
    def work(frame: pl.DataFrame):
        raise RuntimeError(message)
    return work


def test_the_work_gets_the_conformed_frame_and_its_results_come_in_order():
    frame, results = conform_with(_frame(), CONTRACT, [lambda f: f.schema["fold"], lambda f: f.height], source="x")
    assert results == [pl.Int64, 3]
    assert frame.schema["p_has_evidence"] == pl.Float64 and frame.get_column("config").to_list() == ["default"] * 3
    assert frame.equals(conform(_frame(), CONTRACT, source="x"))


def test_a_problem_of_the_contract_comes_before_the_works_error():
    # A post in two folds (a rule) and a gold list empty where has_evidence_gold is 1 (a rule):
    # both are the contract's, and they come in one error, before the work's.
    bad = _frame(fold=["1", "2", "2"], gold_sent_uids=[[], [], []])
    with pytest.raises(InputError) as raised:
        conform_with(bad, CONTRACT, [_fails("work")], source="x")
    assert "more than one fold" in str(raised.value) and "gold list is empty" in str(raised.value)
    with pytest.raises(InputError) as alone:
        conform(bad, CONTRACT, source="x")
    assert str(raised.value) == str(alone.value)


def test_with_the_contract_kept_the_first_failing_work_is_the_error():
    with pytest.raises(RuntimeError, match="second"):
        conform_with(_frame(), CONTRACT, [lambda f: 1, _fails("second"), _fails("third")], source="x")


def test_a_cast_problem_is_raised_before_any_work_begins():
    begun = []
    with pytest.raises(InputError, match="is not an integer"):
        conform_with(_frame(fold=["1", "x", "2"]), CONTRACT, [begun.append], source="x")
    assert begun == []


def test_the_checks_and_the_work_run_at_once(monkeypatch):
    # The rules wait for the work at a barrier: run one after the other, the barrier breaks.
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    meet = threading.Barrier(2, timeout=10)
    rules = conform_module._check_rules

    def rules_at_the_barrier(*args, **kwargs):
        meet.wait()
        return rules(*args, **kwargs)

    monkeypatch.setattr(conform_module, "_check_rules", rules_at_the_barrier)
    # The screen is the first task: the rules and the work are the two that meet.
    _, results = conform_with(_frame(), CONTRACT, [lambda f: meet.wait() is not None], source="x")
    assert results == [True]
