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
