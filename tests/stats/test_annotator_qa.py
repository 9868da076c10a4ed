"""Annotator QA: the chapter's AnnotationQualityMonitor reproduced, speed and position checks, qrels."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.stats.label_agreement import agreement
from evalframe.errors import ConfigError, InputError


class ChapterMonitor:
    """The chapter's ``AnnotationQualityMonitor`` (§21.3.2), as written (the plain-Python reference)."""

    def __init__(self, gold_standard_tasks):
        self.gold_standard = gold_standard_tasks
        self.annotator_performance = defaultdict(lambda: {"correct": 0, "total": 0})

    def check_annotation(self, annotator_id, task_id, rating):
        if task_id in self.gold_standard:
            self.annotator_performance[annotator_id]["total"] += 1
            if rating == self.gold_standard[task_id]:
                self.annotator_performance[annotator_id]["correct"] += 1

    def get_annotator_accuracy(self, annotator_id):
        perf = self.annotator_performance[annotator_id]
        return None if perf["total"] == 0 else perf["correct"] / perf["total"]

    def get_reliable_annotators(self, min_accuracy=0.7, min_tasks=10):
        return [a for a, p in self.annotator_performance.items()
                if p["total"] >= min_tasks and p["correct"] / p["total"] >= min_accuracy]

    def filter_annotations(self, annotations, require_agreement=True, min_annotator_accuracy=0.7):
        reliable = set(self.get_reliable_annotators(min_annotator_accuracy))
        quality = [a for a in annotations if a["annotator_id"] in reliable]
        if not require_agreement:
            return quality
        task_ratings = defaultdict(list)
        for a in quality:
            task_ratings[a["task_id"]].append(a)
        final = []
        for task_id, ratings in task_ratings.items():
            if len(ratings) < 2:
                continue
            values = [r["rating"] for r in ratings]
            if max(values) - min(values) <= 1:
                final.append({"task_id": task_id, "rating": int(np.median(values)),
                              "confidence": 1.0 - (max(values) - min(values)) / 4, "n_annotators": len(ratings)})
        return final


def test_the_chapters_example():
    gold = {"q0_c0": 3, "q1_c0": 1, "q2_c0": 4}
    rows = []
    for i, (task, expected) in enumerate(gold.items()):
        rows.append(("annotator_1", task, expected))
        rows.append(("annotator_2", task, expected if i % 2 == 0 else expected - 1))
    table = pl.DataFrame(rows, schema=["annotator_id", "task_id", "rating"], orient="row")
    ag = agreement(table, scale="0-4", gold=gold, bootstrap=None)
    accuracy = dict(ag.per_annotator.select("annotator_id", "gold_accuracy").iter_rows())
    assert f"{accuracy['annotator_1']:.0%}" == "100%"
    assert f"{accuracy['annotator_2']:.0%}" == "67%"
    assert ag.per_annotator.get_column("n_gold").to_list() == [3, 3]
    # With the chapter's default min_tasks=10, three gold tasks make nobody reliable.
    assert ag.reliable_annotators() == []
    assert ag.reliable_annotators(min_tasks=3) == ["annotator_1"]


@st.composite
def sessions(draw):
    n_tasks = draw(st.integers(2, 14))
    n_raters = draw(st.integers(1, 4))
    ratings = draw(st.lists(st.integers(0, 4), min_size=n_tasks * n_raters, max_size=n_tasks * n_raters))
    gold_tasks = draw(st.lists(st.integers(0, n_tasks - 1), unique=True, max_size=n_tasks))
    gold_values = draw(st.lists(st.integers(0, 4), min_size=len(gold_tasks), max_size=len(gold_tasks)))
    rows = [{"task_id": f"t{t}", "annotator_id": f"a{a}", "rating": ratings[t * n_raters + a]}
            for t in range(n_tasks) for a in range(n_raters)]
    return rows, {f"t{t}": v for t, v in zip(gold_tasks, gold_values, strict=True)}


@settings(max_examples=30, deadline=None)
@given(sessions(), st.sampled_from([0.0, 0.5, 0.7, 1.0]), st.integers(1, 4))
def test_qa_equals_the_chapters_monitor(session, min_accuracy, min_tasks):
    rows, gold = session
    monitor = ChapterMonitor(gold)
    for row in rows:
        monitor.check_annotation(row["annotator_id"], row["task_id"], row["rating"])
    ag = agreement(pl.DataFrame(rows), scale="0-4", gold=gold, bootstrap=None)
    for annotator, accuracy in ag.per_annotator.select("annotator_id", "gold_accuracy").iter_rows():
        assert accuracy == (pytest.approx(monitor.get_annotator_accuracy(annotator)) if accuracy is not None else None)
    assert ag.reliable_annotators(min_accuracy, min_tasks) == sorted(monitor.get_reliable_annotators(min_accuracy, min_tasks))
    ours = ag.filtered(min_accuracy, min_tasks=10).to_dicts()
    theirs = monitor.filter_annotations(rows, min_annotator_accuracy=min_accuracy)
    assert ours == [{**t, "confidence": pytest.approx(t["confidence"])} for t in theirs]
    loose = ag.filtered(min_accuracy, min_tasks=10, require_agreement=False)
    assert loose.select("task_id", "annotator_id", "rating").to_dicts() == [
        {k: r[k] for k in ("task_id", "annotator_id", "rating")} for r in monitor.filter_annotations(rows, False, min_accuracy)]


def test_median_is_truncated_and_confidence_uses_the_scale_width():
    gold = {f"g{i}": 2 for i in range(10)}
    rows = [(a, f"g{i}", 2) for a in ("a", "b") for i in range(10)]
    rows += [("a", "x", 1), ("b", "x", 2), ("a", "y", 0), ("b", "y", 3)]
    table = pl.DataFrame(rows, schema=["annotator_id", "task_id", "rating"], orient="row")
    kept = agreement(table, scale="0-4", gold=gold, bootstrap=None).filtered()
    x = kept.filter(task_id="x").to_dicts()[0]
    assert x == {"task_id": "x", "rating": 1, "confidence": 0.75, "n_annotators": 2}  # int(np.median([1, 2])) = 1
    assert kept.filter(task_id="y").height == 0  # spread 3 > 1
    wide = agreement(table, scale="0-8", gold=gold, bootstrap=None).filtered()
    assert wide.filter(task_id="x").get_column("confidence").item() == 1.0 - 1 / 8


def test_speed_and_position_bias_checks():
    rows = []
    for position in range(10):
        rows.append({"task_id": f"t{position}", "annotator_id": "hasty", "rating": 4 - position // 3,
                     "seconds": 3.0, "position": position})
        rows.append({"task_id": f"t{position}", "annotator_id": "careful", "rating": (position * 7) % 5,
                     "seconds": 25.0, "position": position})
    qa = agreement(pl.DataFrame(rows), scale="0-4", bootstrap=None).per_annotator
    hasty = qa.filter(annotator_id="hasty").to_dicts()[0]
    careful = qa.filter(annotator_id="careful").to_dicts()[0]
    assert hasty["median_seconds"] == 3.0 and hasty["share_fast"] == 1.0
    assert "fast" in hasty["flags"] and "position bias" in hasty["flags"]
    assert careful["flags"] is None or careful["flags"] == ""
    positions = np.arange(10)
    from scipy.stats import spearmanr
    assert hasty["position_rating_spearman"] == pytest.approx(spearmanr(positions, [4 - p // 3 for p in positions]).statistic)
    stamped = pl.DataFrame({"task_id": ["t1", "t2"], "annotator_id": ["a", "a"], "rating": [1, 2],
                            "started_at": ["2024-01-01 10:00:00", "2024-01-01 10:01:00"],
                            "submitted_at": ["2024-01-01 10:00:04", "2024-01-01 10:01:30"]})
    assert agreement(stamped, scale="0-4", bootstrap=None).per_annotator.get_column("median_seconds").item() == 17.0


def test_filtered_labels_become_qrels_that_feed_ranking_metrics():
    import evalframe as ef

    gold = {f"g{i}": 1 for i in range(10)}
    rows = [{"task_id": f"g{i}", "annotator_id": a, "rating": 1, "query_id": "gq", "doc_id": f"gd{i}"} for a in ("a", "b") for i in range(10)]
    rows += [{"task_id": "q1_d1", "annotator_id": a, "rating": r, "query_id": "q1", "doc_id": "d1"} for a, r in (("a", 3), ("b", 2))]
    rows += [{"task_id": "q1_d2", "annotator_id": a, "rating": 0, "query_id": "q1", "doc_id": "d2"} for a in ("a", "b")]
    ag = agreement(pl.DataFrame(rows), scale="0-4", gold=gold, bootstrap=None)
    qrels = ag.qrels()
    assert qrels.filter(query_id="q1").sort("doc_id").rows() == [("q1", "d1", 2), ("q1", "d2", 0)]
    run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d2", "d1"], "score": [2.0, 1.0]})
    ev = ef.evaluate(ef.read_run(run), ef.read_qrels(qrels.filter(query_id="q1")), ["mrr"])
    assert ev.summary.get_column("value").item() == 0.5
    without = agreement(pl.DataFrame([{"task_id": "t", "annotator_id": "a", "rating": 1}]), scale="0-4", gold={"t": 1}, bootstrap=None)
    with pytest.raises(ConfigError, match="query_id"):
        without.qrels()


def test_bad_gold_names_the_row():
    table = pl.DataFrame({"task_id": ["t"], "annotator_id": ["a"], "rating": [1]})
    with pytest.raises(InputError, match="row 2.*outside the rating scale"):
        agreement(table, scale="0-4", gold=pl.DataFrame({"task_id": ["t", "u"], "rating": ["1", "9"]}), bootstrap=None)
    with pytest.raises(ConfigError, match="gold"):
        agreement(table, scale="0-4", bootstrap=None).reliable_annotators()
