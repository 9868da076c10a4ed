"""What the engine builds once for a whole run (issue 22): a set-metric state shared by several
metrics is one plan per grouping set."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
import evalframe.metrics.confusion as confusion

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"


@pytest.fixture(scope="module")
def tables():
    return ef.read_per_query(SAMPLE)


def test_a_shared_state_is_built_once_per_grouping_set(tables, monkeypatch):
    calls = []
    counted = confusion.confusion_counts

    def counting(rows, by, threshold):
        calls.append(tuple(by))
        return counted(rows, by, threshold)

    monkeypatch.setattr(confusion, "confusion_counts", counting)
    result = ef.evaluate(tables, metrics=["tp", "fp", "sensitivity", "f1", "mcc"], slices={"overall": [], "fold": ["fold"]})
    # five metrics read one state (equal threshold): one plan for each of the two grouping sets
    assert sorted(calls) == [("system",), ("system", "fold")]
    assert result.summary.filter(pl.col("metric") == "tp").height > 0


def test_metric_groups_as_tasks_on_two_threads_give_the_serial_result(tables, monkeypatch):
    """The engine computes each metric group's partials and summary rows as one task, two at a
    time (``_threads.in_order``): the result, rows and their order included, is the one the
    tasks give one after another (one core). Two cores are claimed whatever the runner has, and
    the first two tasks of every ``in_order`` call meet at a barrier: the threaded run is proved
    to run two tasks at once (on a one-core runner too), not serially."""
    import threading
    from functools import partial

    import evalframe._threads as threads
    import evalframe.engine.evaluation as evaluation
    import evalframe.engine.partials as partials

    def evaluated():
        return ef.evaluate(
            tables,
            metrics={"all_queries": ["auroc", "ece", "tp", "f1", "brier", "n_queries"],
                     "has_evidence": ["recall@5", "ndcg@10", "mrr"]},
            subsets={"has_evidence": "label = 1"},
            slices={"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]},
            across_folds="fold",
        )

    at_once = []  # per in_order call of the threaded run: its module, the threads its first two tasks met on

    def meeting_in_order(tasks, *, caller, **options):
        if len(tasks) < 2:
            return threads.in_order(tasks, **options)
        both, met = threading.Barrier(2, timeout=60), set()
        at_once.append((caller, met))

        def meeting(task):
            def run():
                both.wait()  # raises BrokenBarrierError when the tasks run one after another
                met.add(threading.get_ident())
                return task()
            return run

        return threads.in_order([meeting(task) for task in tasks[:2]] + list(tasks[2:]), **options)

    with monkeypatch.context() as threaded:
        threaded.setattr(threads.os, "cpu_count", lambda: 2)
        for module in (partials, evaluation):
            threaded.setattr(module, "in_order", partial(meeting_in_order, caller=module.__name__))
        two = evaluated()
    assert {caller for caller, _ in at_once} == {partials.__name__, evaluation.__name__}
    assert all(len(met) == 2 for _, met in at_once)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 1)
    one = evaluated()
    assert two.summary.height > 0
    assert two.summary.equals(one.summary)
    assert two.per_query.equals(one.per_query)
    assert two.skipped.equals(one.skipped)


def test_in_order_cancels_the_tasks_not_begun_when_one_raises(monkeypatch):
    """A failing task stops the rest: the tasks still queued never run (those running finish)."""
    import time

    import pytest

    from evalframe import _threads

    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    begun = []

    def slow(i):
        def run():
            begun.append(i)
            time.sleep(0.05)
            return i
        return run

    def fails():
        raise ValueError("first")

    with pytest.raises(ValueError, match="first"):
        list(_threads.in_order([fails, *(slow(i) for i in range(1, 12))]))
    assert 1 in begun and len(begun) <= 4  # of 11: only those a thread had taken before the error was seen
    assert list(_threads.in_order([slow(1), slow(2), slow(3)])) == [1, 2, 3]
