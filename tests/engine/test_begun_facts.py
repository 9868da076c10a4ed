"""The trec path's shortcuts: facts begun on a thread of their own (`layout.begin`, the run's
score lateness begun in the derive stage: the later request waits for the begun computation, a
failed one is made again where it is asked for), and the run's own pairs taken as they are
(no join) where the evaluated pairs or the judgments' queries are them, each checked against
the general path."""

from __future__ import annotations

import threading
from unittest import mock

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.data import layout
from evalframe.engine import ranking
from evalframe.errors import InputError


def test_a_begun_fact_is_computed_once_on_its_thread_and_waited_for():
    frame = pl.DataFrame({"x": [1, 2, 3]})
    release, calls = threading.Event(), []

    def compute():
        calls.append(threading.current_thread().name)
        release.wait(5)
        return np.arange(3)

    layout.begin(frame, "slow", "x", compute)
    layout.begin(frame, "slow", "x", compute)  # begun already: not twice
    threading.Timer(0.05, release.set).start()
    value = layout.fact(frame, "slow", "x", compute)  # waits for the begun one
    assert value.tolist() == [0, 1, 2] and not value.flags.writeable
    assert layout.fact(frame, "slow", "x", compute) is value
    assert calls == ["evalframe-fact-slow"]


def test_a_begun_fact_that_failed_is_made_again_where_it_is_asked_for():
    frame = pl.DataFrame({"x": [1]})
    calls = []

    def compute():
        calls.append(threading.current_thread().name)
        raise ValueError(f"failed on {threading.current_thread().name}")

    layout.begin(frame, "bad", "x", compute)
    with pytest.raises(ValueError, match=f"failed on {threading.current_thread().name}"):
        layout.fact(frame, "bad", "x", compute)
    assert calls == ["evalframe-fact-bad", threading.current_thread().name]


@pytest.mark.parametrize("single_precision", [False, True])
def test_the_score_lateness_orders_as_the_scores_reversed(single_precision):
    scores = [2.5, -0.0, 0.0, -1.0, np.inf, -np.inf, 1e-40, 20.401000001, 20.401, -3e38]
    run = pl.DataFrame({"score": scores})
    lateness = ranking.score_lateness(run, single_precision=single_precision)
    dtype = np.float32 if single_precision else np.float64
    values = np.array(scores, dtype=dtype) + dtype(0.0)
    for i in range(len(scores)):
        for j in range(len(scores)):
            assert (lateness[i] < lateness[j]) == (values[i] > values[j])
    assert ranking._has_infinite(lateness)
    assert not ranking._has_infinite(ranking.score_lateness(pl.DataFrame({"score": scores[:4]}),
                                                            single_precision=single_precision))


def test_a_score_beyond_float32_is_refused_with_the_lateness_begun(tmp_path):
    run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, 1e39]})
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    run, qrels = ef.read_run(run), ef.read_qrels(qrels)
    with pytest.raises(InputError, match="beyond the range of a 32-bit float"):
        ef.evaluate(run, qrels, ["mrr"], score_precision="float32")
    assert ef.evaluate(run, qrels, ["mrr"]).summary.item(0, "value") == 0.5  # 64 bits: 1e39 is a score


def _spied_lateness(monkeypatch) -> tuple[list, list]:
    """(made, read): every score lateness made (the thread that made it, the array), and every
    lateness the ranking's keys were built from."""
    made, read = [], []
    real_lateness, real_reader = ranking._lateness_of, ranking._lateness_reader

    def lateness_of(*args):
        made.append((threading.current_thread().name, value := real_lateness(*args)))
        return value

    def reader(*args):
        inner = real_reader(*args)

        def reading():
            read.append(value := inner())
            return value

        return reading

    monkeypatch.setattr(ranking, "_lateness_of", lateness_of)
    monkeypatch.setattr(ranking, "_lateness_reader", reader)
    return made, read


def _no_lateness_on(frame: pl.DataFrame) -> bool:
    facts = layout._FACTS.get(id(frame))
    return facts is None or facts[0]() is not frame or not any(fact == "score lateness" for fact, _ in facts[1])


def test_the_derive_stage_begins_the_lateness_the_ranking_reads(monkeypatch):
    run = ef.read_run(pl.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "doc_id": list("abcabc"),
                                    "score": [0.3, 0.2, 0.1, 0.1, 0.3, 0.2]}))
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "b"], "relevance": [1, 1]}))
    made, read = _spied_lateness(monkeypatch)
    values = ef.evaluate(run, qrels, ["mrr"], score_precision="float32").per_query.get_column("value").to_list()
    assert values == [0.5, 1.0]
    assert [thread for thread, _ in made] == ["evalframe-score-lateness"]  # begun early, made once, on its thread
    assert len(read) == 1 and read[0] is made[0][1]  # the very array the ranking's keys were built from
    assert _no_lateness_on(run)  # kept with the evaluation's index: the caller's run keeps no copy


def test_a_slice_of_the_run_reads_the_rows_of_the_begun_lateness(monkeypatch):
    # q3 has no judgment: the ranking evaluates the rows of q1 and q2 only (a slice of the run)
    run = ef.read_run(pl.DataFrame({"query_id": ["q1"] * 3 + ["q3"] * 2 + ["q2"] * 3, "doc_id": list("abcxyabc"),
                                    "score": [0.3, 0.2, 0.1, 0.9, 0.8, 0.1, 0.3, 0.2]}))
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 1]}))
    made, read = _spied_lateness(monkeypatch)
    result = ef.evaluate(run, qrels, ["mrr"])
    assert result.per_query.get_column("value").to_list() == [0.5, 0.5]
    assert [thread for thread, _ in made] == ["evalframe-score-lateness"]  # the whole run's, once: none of the slice
    kept = [0, 1, 2, 5, 6, 7]
    assert len(read) == 1 and read[0].tolist() == made[0][1][kept].tolist()
    assert _no_lateness_on(run)


def test_a_failed_evaluation_leaves_no_lateness_on_the_run():
    run = ef.read_run(pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, 1e39]}))
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]}))
    with pytest.raises(InputError, match="beyond the range of a 32-bit float"):
        ef.evaluate(run, qrels, ["mrr"], score_precision="float32")
    assert _no_lateness_on(run)


def test_judged_ranks_take_the_run_pairs_as_they_are_when_the_universe_is_them():
    run = ef.read_run(pl.DataFrame({"query_id": ["q2"] * 3 + ["q1"] * 3, "doc_id": list("abcabc"),
                                    "score": [0.3, 0.2, 0.1, 0.1, 0.3, 0.2]}))
    judgments = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 2]})
    same = run.select("system", "query_id").unique(maintain_order=True)
    shuffled, fewer = same.reverse(), same.tail(1)
    with mock.patch.object(pl.DataFrame, "join", autospec=True, side_effect=pl.DataFrame.join) as joined:
        fast = ranking.judged_ranks(run, judgments, same)
    assert not any(call.kwargs.get("how") == "semi" for call in joined.call_args_list)  # no semi join
    slow = ranking.judged_ranks(run, judgments, shuffled)
    assert fast.pairs.equals(slow.pairs) and fast.judged.equals(slow.judged)
    assert fast.judged.rows() == [(0, 3, 2), (1, 1, 1)]
    assert ranking.judged_ranks(run, judgments, fewer).judged.rows() == [(1, 1, 1)]


def test_pair_codes_of_judgments_in_the_pairs_order_equal_the_joined_ones():
    judgments = pl.DataFrame({"query_id": ["q1", "q1", "q2", "q3", "q3"], "doc_id": list("abcde"),
                              "relevance": [1, 0, 2, 1, 1]})
    wanted = pl.DataFrame({"query_id": ["q1", "q2", "q3"]}).with_row_index("code")
    with mock.patch.object(pl.DataFrame, "join", autospec=True, side_effect=pl.DataFrame.join) as joined:
        fast = ranking._with_pair_codes(judgments, wanted)
    assert not joined.called
    assert fast.get_column("code").to_list() == [0, 0, 1, 2, 2]
    for other in (wanted.reverse(), wanted.head(2), pl.concat([wanted, wanted.with_columns(code=pl.col("code") + 3)])):
        slow = ranking._with_pair_codes(judgments, other)  # joined: another order, fewer pairs, two systems
        expected = judgments.join(other.select("code", "query_id"), on="query_id", how="inner", maintain_order="left")
        assert slow.equals(expected.with_columns(pl.col("code").cast(pl.UInt32)))
    assert fast.equals(ranking._with_pair_codes(judgments, wanted.reverse()).sort("code", maintain_order=True))


@pytest.mark.parametrize("query_ids", [["q2", "q2", "q1", "q3"], ["q2", "q1", "q2", "q3"]])  # grouped, scattered
def test_judged_queries_are_the_unique_ids_in_order_of_first_appearance(query_ids):
    from evalframe.engine.derive import _judged_queries

    judgments = pl.DataFrame({"query_id": query_ids, "doc_id": list("abcd"), "relevance": [1, 0, 1, 2]})
    assert _judged_queries(judgments).get_column("query_id").to_list() == ["q2", "q1", "q3"]


def test_the_run_own_pairs_skip_the_missing_and_ignored_checks_and_others_do_not():
    from types import SimpleNamespace

    from evalframe.engine.derive import _check_missing, _ignored_run_rows, _same_pairs

    run = ef.read_run(pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": list("abc"), "score": [1.0, 0.5, 1.0]}))
    index = ranking.index_queries(run)
    own = index.pairs.select("system", "query_id")
    assert _same_pairs(own, index) and not _same_pairs(own.reverse(), index)
    assert _ignored_run_rows(own, index) == [] and _ignored_run_rows(own.head(1), index) == [
        "1 run rows of 1 queries without judgments were ignored"]
    tables = ef.Tables.from_run(run, ef.read_qrels(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})))
    plan = SimpleNamespace(missing="zero")  # the check reads the policy only
    more = pl.concat([own, pl.DataFrame({"system": ["default"], "query_id": ["q3"]})])
    assert _check_missing(plan, tables, own, index) == []
    assert _check_missing(plan, tables, more, index) == ["1 judged (system, query) pairs absent from the run were scored as empty rankings"]


def test_the_begun_lateness_is_let_go_once_every_group_has_ranked(monkeypatch):
    # the evaluation's index keeps the lateness only while the metric groups rank (8 bytes a run
    # row): the bootstrap's sums and the summary run without it
    from evalframe.engine import partials

    indexes = []
    real_prepare = partials.prepare

    def prepare(*args, **kwargs):
        found = real_prepare(*args, **kwargs)
        indexes.append(found[3])
        return found

    monkeypatch.setattr(partials, "prepare", prepare)
    run = ef.read_run(pl.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "doc_id": list("abcabc"),
                                    "score": [0.3, 0.2, 0.1, 0.1, 0.3, 0.2]}))
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "b"], "relevance": [1, 1]}))
    made, _ = _spied_lateness(monkeypatch)
    assert ef.evaluate(run, qrels, ["mrr", "ndcg@3"]).per_query.height == 4
    assert len(made) == 1 and len(indexes) == 1 and indexes[0] is not None
    assert indexes[0].begun == {}
