"""What the per_query reader hands the engine besides its tables: its queries table already
conformed to the ``queries`` contract (derive checks it no more), and the knowledge that its
ranked lists hold one list per row of that table (derive's check for evaluated pairs without a
ranking needs no join). Either is dropped, never wrong, when the tables are changed."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import polars as pl
import pytest

import evalframe as ef
from evalframe.data import conform as conform_module
from evalframe.data.contracts import load_contract
from evalframe.engine.derive import _check_missing
from evalframe.io.per_query import read_per_query


def _frame(post_ids=("p1", "p1", "p2", "p2"), criteria=("A.1", "A.2", "A.1", "A.2")) -> pl.DataFrame:
    n = len(post_ids)
    return pl.DataFrame({
        "post_id": list(post_ids),
        "criterion_id": list(criteria),
        "fold": [0] * n,
        "has_evidence_gold": [1, 0] * (n // 2),
        "p_has_evidence": [0.9, 0.2] * (n // 2),
        "gold_sent_uids": ['["s1"]', "[]"] * (n // 2),
        "ranked_sent_uids": ['["s1","s2"]', '["s2","s1"]'] * (n // 2),
        "config": ["a", "b"] * (n // 2),
    })


def test_the_readers_queries_table_is_known_conformed_and_unchanged():
    tables = read_per_query(_frame())
    assert conform_module._already_conformed(tables.queries, load_contract("queries"))
    # derive's conform hands back the reader's own frame: nothing checked or copied again
    assert conform_module.conform(tables.queries, load_contract("queries"), source="queries table") is tables.queries
    assert tables.queries.columns[:4] == ["system", "query_id", "post_id", "criterion_id"]
    assert tables.queries.get_column("query_id").to_list() == ["p1|A.1", "p2|A.1", "p1|A.2", "p2|A.2"]


def test_a_queries_table_the_queries_contract_refuses_is_still_refused_by_derive_as_before():
    # ("a|b", "c") and ("a", "b|c") are two keys of per_query but one query id: the reader reads
    # them; the evaluation refuses them, with the queries contract's message
    frame = _frame(post_ids=("a|b", "x", "a", "x"), criteria=("c", "d", "b|c", "e")).with_columns(config=pl.lit("a"))
    tables = read_per_query(frame)
    assert not conform_module._already_conformed(tables.queries, load_contract("queries"))
    with pytest.raises(ef.InputError) as caught:
        ef.evaluate(tables, metrics=["recall@1"])
    assert "the same query is listed twice for one system" in str(caught.value)
    assert "queries table" in str(caught.value)


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
