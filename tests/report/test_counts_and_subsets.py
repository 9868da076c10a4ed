"""Counts print as integers and units outside a metric's subset are not failures (issue 9, part 7).

One formatter (``format_value``) for every renderer; the summary's ``n_outside_subset`` tells the
units a subset leaves out from the values that are undefined inside it, and the terminal and
Markdown say "outside subset" where they said "skipped".
"""

from __future__ import annotations

import polars as pl
import pytest

import evalframe as ef
from evalframe.io.per_query import read_per_query
from evalframe.metrics.registry import resolve
from evalframe.report.formatting import format_value
from evalframe.report.markdown import render_markdown


def tables() -> ef.Tables:
    """Six queries, two folds; q5 and q6 have no evidence (outside `label = 1`)."""
    rows = [
        # post, fold, label, prob, gold, ranked
        ("p1", 0, 1, 0.9, ["a"], ["a", "b"]),
        ("p2", 0, 1, 0.4, ["b"], ["a", "b"]),
        ("p3", 1, 1, 0.8, ["a"], ["b", "a"]),
        ("p4", 1, 1, 0.7, ["a"], ["a"]),
        ("p5", 0, 0, 0.6, [], ["a"]),
        ("p6", 1, 0, 0.1, [], ["a"]),
    ]
    frame = pl.DataFrame(
        [{"post_id": p, "criterion_id": "A.1", "fold": f, "has_evidence_gold": y, "p_has_evidence": s,
          "gold_sent_uids": g, "ranked_sent_uids": r, "config": "sys"} for p, f, y, s, g, r in rows]
    )
    return read_per_query(frame)


@pytest.fixture(scope="module")
def ev() -> ef.Evaluation:
    return ef.evaluate(tables(), metrics={"all_queries": ["tp", "fn", "auroc", "num_ret"], "has_evidence": ["mrr"]},
                       subsets={"has_evidence": "label = 1"}, slices={"overall": [], "fold": ["fold"]}, across_folds="fold")


def test_format_value_is_the_one_number_format():
    tp = resolve("tp")
    assert format_value(13072.0, metric=tp) == "13,072"
    assert format_value(12.5, metric=tp) == "12.50"  # a weighted count keeps its fraction
    assert format_value(14770, kind="count") == "14,770"
    assert format_value(0.914481, metric=resolve("auroc")) == "0.9145"
    assert format_value(None) == format_value(float("nan")) == "—"
    assert format_value(3.0) == "3.0000"  # a mean value stays a mean


def test_outside_subset_is_counted_apart_from_undefined_values(ev):
    row = ev.select(grouping="overall", metric="mrr").row(0, named=True)
    assert (row["n"], row["n_skipped"], row["n_outside_subset"]) == (4, 2, 2)
    tp = ev.select(grouping="overall", metric="tp").row(0, named=True)
    assert (tp["n"], tp["n_skipped"], tp["n_outside_subset"]) == (6, 0, 0)
    fold = ev.select(fold=1, metric="mrr").row(0, named=True)
    assert (fold["n"], fold["n_outside_subset"]) == (2, 1)


def test_a_metric_own_subset_counts_as_outside_too():
    run = ef.read_run(pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "score": [1.0, 1.0]}))
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "b"], "relevance": [1, 0]}))
    row = ef.evaluate(run, qrels, ["mrr", "precision@1(denominator=retrieved)"]).summary.row(0, named=True)
    assert (row["n"], row["n_skipped"], row["n_outside_subset"]) == (1, 1, 1)  # q2: no relevant item


def test_terminal_prints_counts_as_integers_and_says_outside_subset(ev):
    text = ev.overview()
    assert "skipped" not in text
    tp = next(line for line in text.splitlines() if line.startswith("tp "))
    assert tp.split()[:3] == ["tp", "6", "3"]  # n and value: integers
    assert "1.50 ± 0.71" in tp  # mean ± std of the fold counts 1 and 2
    mrr = next(line for line in text.splitlines() if line.startswith("mrr"))
    assert mrr.split()[:2] == ["mrr", "4"]
    # The 2 queries the ranking metrics do not score are outside their subset, not failures.
    outside = [line for line in text.splitlines() if line.startswith("outside subset:")]
    assert outside and outside[0].startswith("outside subset: 2 queries not in") and "mrr" in outside[0]


def test_markdown_prints_counts_as_integers_and_says_outside_subset(ev):
    markdown = render_markdown(ev)
    assert "| metric | subset | n | outside subset | undefined | value |" in markdown
    assert "skipped" not in markdown
    tp = next(line for line in markdown.splitlines() if line.startswith("| `tp`"))
    assert "| 6 | 0 | 0 | 3 |" in tp
    num_ret = next(line for line in markdown.splitlines() if line.startswith("| `num_ret`"))
    cells = [cell.strip() for cell in num_ret.split("|")]
    assert cells[6] == "9"  # value: a count (sum of 2+2+2+1+1+1)
    assert cells[8] == "1.50"  # median of the per-query counts 1, 1, 1, 2, 2, 2: not whole, two decimals
    assert cells[9] == "[1, 2]"  # p25 and p75: whole counts print as integers
    by_fold = next(line for line in markdown.split("### By fold")[1].splitlines() if line.startswith("| `tp`"))
    assert by_fold == "| `tp` | 1 | 2 |"
