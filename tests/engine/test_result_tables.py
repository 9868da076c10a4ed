"""Further result tables (ablation, checks, …) ride on the result and are written and rendered."""

from __future__ import annotations

import polars as pl

import evalframe as ef


def _evaluation():
    run = pl.DataFrame({"system": "bm25", "query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 1]})
    return ef.evaluate(run, qrels, metrics=["mrr"])


def test_tables_are_added_written_as_csv_and_rendered(tmp_path):
    ev = _evaluation()
    assert dict(ev.tables) == {} and ev.checks is None
    checks = pl.DataFrame({"check": ["rates_in_unit_interval"], "status": ["pass"], "observed": [0.75]})
    with_checks = ev.with_tables(checks=checks)
    assert with_checks.checks.equals(checks) and dict(ev.tables) == {}
    out = with_checks.write(tmp_path / "out", outputs=("summary.csv", "summary.md"))
    assert pl.read_csv(out / "checks.csv").equals(checks)
    markdown = (out / "summary.md").read_text()
    assert "## Checks" in markdown and "| rates_in_unit_interval | pass | 0.7500 |" in markdown


def test_hand_built_frames_meet_the_contracts_through_evaluate():
    """A DataFrame run gets our error (not a raw Polars one) and the contract's defaults."""
    import pytest

    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(ef.InputError, match="needs a `rank` column .* or a `score` column"):
        ef.evaluate(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"]}), qrels, metrics=["mrr"])
    with pytest.raises(ef.InputError, match=r"row 1, column `score`: is NaN"):
        ef.evaluate(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [float("nan")]}), qrels, metrics=["mrr"])
    ev = ef.evaluate(pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [1.0]}), qrels, metrics=["mrr"])
    assert ev.summary.select("system", "value").rows() == [("default", 1.0)]
