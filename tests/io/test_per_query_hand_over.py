"""What the per_query reader hands the engine besides its tables: the knowledge that its ranked
lists hold one list per row of its queries table, so that derive's check for evaluated pairs
without a ranking needs no join. It is dropped, never wrong, when the tables are changed."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import polars as pl
import pytest

import evalframe as ef
from evalframe.engine.derive import _check_missing
from evalframe.io.per_query import read_per_query


def _frame() -> pl.DataFrame:
    return pl.DataFrame({
        "post_id": ["p1", "p1", "p2", "p2"],
        "criterion_id": ["A.1", "A.2", "A.1", "A.2"],
        "fold": [0] * 4,
        "has_evidence_gold": [1, 0] * 2,
        "p_has_evidence": [0.9, 0.2] * 2,
        "gold_sent_uids": ['["s1"]', "[]"] * 2,
        "ranked_sent_uids": ['["s1","s2"]', '["s2","s1"]'] * 2,
        "config": ["a", "b"] * 2,
    })


def test_the_reader_states_that_its_lists_cover_its_queries_and_a_copy_does_not():
    tables = read_per_query(_frame())
    assert tables.lists_of_queries and tables.ranks_every_pair_of(tables.queries)
    assert not tables.ranks_every_pair_of(tables.queries.reverse())  # other order: not known
    assert not tables.ranks_every_pair_of(tables.queries.head(3))
    fewer = dataclasses.replace(tables, ranked_lists=tables.ranked_lists.head(3))
    assert not fewer.lists_of_queries and not fewer.ranks_every_pair_of(fewer.queries)
    with pytest.raises(ef.ConfigError):
        ef.Tables(queries=None, judgments=tables.judgments, ranked_lists=tables.ranked_lists).with_lists_of_queries()


def test_the_missing_check_takes_the_readers_word_and_still_finds_a_pair_without_a_list():
    tables = read_per_query(_frame())
    plan = SimpleNamespace(missing="zero")  # the check reads the policy only
    assert _check_missing(plan, tables, tables.queries, None) == []
    # a list taken away in a copy of the tables: the join finds the pair again
    fewer = dataclasses.replace(tables, ranked_lists=tables.ranked_lists.filter(pl.col("query_id") != "p2|A.2"))
    assert _check_missing(plan, fewer, tables.queries, None) == [
        "1 judged (system, query) pairs absent from the run were scored as empty rankings"]


def test_the_missing_check_does_not_join_when_the_reader_vouches_for_the_pairs(monkeypatch):
    tables = read_per_query(_frame())
    joins = []
    original = pl.DataFrame.join

    def counting(self, *args, **kwargs):
        joins.append(kwargs.get("how"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "join", counting)
    _check_missing(SimpleNamespace(missing="error"), tables, tables.queries, None)
    assert joins == []
    _check_missing(SimpleNamespace(missing="error"), dataclasses.replace(tables), tables.queries, None)
    assert joins == ["anti"]


def test_evaluations_are_the_same_with_and_without_the_readers_word():
    tables = read_per_query(_frame())
    plain = dataclasses.replace(tables, queries=tables.queries.clone())
    assert not plain.lists_of_queries
    metrics = ["recall@1", "mrr", "auroc", "brier"]
    assert ef.evaluate(tables, metrics=metrics).summary.equals(ef.evaluate(plain, metrics=metrics).summary)
