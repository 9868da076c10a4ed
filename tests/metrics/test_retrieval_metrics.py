"""Ranking metrics on small hand-built cases, with the expected values worked out by hand.

The main case (``q1``) — scores give the order, n_relevant = 3 (d2, d4 and the unretrieved d7):

    rank  doc  score  grade
    1     d1   0.9    unjudged
    2     d2   0.8    1
    3     d3   0.7    unjudged
    4     d4   0.6    2
    5     d5   0.5    0
    6     d6   0.4    -1   (judged, never relevant, gain 0)
    -     d7   -      1    (relevant, not retrieved)

``q2`` has judged items but none relevant (grades 0 and -1).
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import polars as pl
import pytest

import evalframe as ef

Q1_RUN = {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6, "d5": 0.5, "d6": 0.4}
Q1_QRELS = {"d2": 1, "d4": 2, "d7": 1, "d5": 0, "d6": -1}
Q2_RUN = {"e1": 1.0, "e2": 0.5}
Q2_QRELS = {"e1": 0, "e2": -1}

log2 = math.log2
# DCG / IDCG of q1. Relevant d2 (grade 1) at rank 2, d4 (grade 2) at rank 4; ideal grades [2, 1, 1].
DCG_EXP = (2**1 - 1) / log2(2 + 1) + (2**2 - 1) / log2(4 + 1)
IDCG_EXP = (2**2 - 1) / log2(1 + 1) + (2**1 - 1) / log2(2 + 1) + (2**1 - 1) / log2(3 + 1)
DCG_LIN = 1 / log2(2 + 1) + 2 / log2(4 + 1)
IDCG_LIN = 2 / log2(1 + 1) + 1 / log2(2 + 1) + 1 / log2(3 + 1)

Q1_EXPECTED = {
    # recall@k = relevant in top k / 3
    "recall@1": 0 / 3,
    "recall@2": 1 / 3,
    "recall@4": 2 / 3,
    "recall@10": 2 / 3,
    # precision@k = relevant in top k / k, even past the 6 retrieved
    "precision@1": 0 / 1,
    "precision@2": 1 / 2,
    "precision@4": 2 / 4,
    "precision@5": 2 / 5,
    "precision@10": 2 / 10,
    # denominator="retrieved": / min(k, 6)
    "precision@4(denominator=retrieved)": 2 / 4,
    "precision@10(denominator=retrieved)": 2 / 6,
    "hit_rate@1": 0.0,
    "hit_rate@2": 1.0,
    "hit_rate@10": 1.0,
    # first relevant at rank 2
    "mrr": 1 / 2,
    "mrr@1": 0.0,
    "mrr@2": 1 / 2,
    "mrr@10": 1 / 2,
    # AP = (P@2 + P@4) / n_relevant
    "map": (1 / 2 + 2 / 4) / 3,
    "map@1": 0 / 3,
    "map@2": (1 / 2) / 3,
    "map@4": (1 / 2 + 2 / 4) / 3,
    "map@100": (1 / 2 + 2 / 4) / 3,
    # denominator="retrieved": / relevant retrieved within k; 0 when none
    "map(denominator=retrieved)": (1 / 2 + 2 / 4) / 2,
    "map@2(denominator=retrieved)": (1 / 2) / 1,
    "map@1(denominator=retrieved)": 0.0,
    "ndcg": DCG_EXP / IDCG_EXP,
    "ndcg@4": DCG_EXP / IDCG_EXP,
    "ndcg@2": ((2**1 - 1) / log2(3)) / ((2**2 - 1) / log2(2) + (2**1 - 1) / log2(3)),
    "ndcg@1": 0.0 / ((2**2 - 1) / log2(2)),
    "ndcg(gain=linear)": DCG_LIN / IDCG_LIN,
    "ndcg@2(gain=linear)": (1 / log2(3)) / (2 / log2(2) + 1 / log2(3)),
    # R = 3: top 3 is d1, d2, d3 → one relevant
    "r_precision": 1 / 3,
    "num_ret": 6.0,
    "num_rel": 3.0,
    "num_rel_ret": 2.0,
}
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}
Q2_COUNTS = {"num_ret": 2.0, "num_rel": 0.0, "num_rel_ret": 0.0}


@pytest.fixture(scope="module")
def main_case(make_run, make_qrels):
    return make_run({"q1": Q1_RUN, "q2": Q2_RUN}), make_qrels({"q1": Q1_QRELS, "q2": Q2_QRELS})


@pytest.fixture(scope="module")
def skip_result(main_case):
    return ef.evaluate(*main_case, metrics=list(Q1_EXPECTED))


@pytest.fixture(scope="module")
def zero_result(main_case):
    return ef.evaluate(*main_case, metrics=list(Q1_EXPECTED), empty="zero")


def rows_of(result: ef.Result, query_id: str) -> dict[str, tuple[float | None, str | None]]:
    table = result.per_query.filter(pl.col("query_id") == query_id)
    triples = table.select("metric", "value", "skip_reason").iter_rows()
    return {metric: (value, reason) for metric, value, reason in triples}


@pytest.mark.parametrize("metric", list(Q1_EXPECTED))
def test_hand_computed_value(skip_result, zero_result, metric):
    for result in (skip_result, zero_result):
        value, reason = rows_of(result, "q1")[metric]
        assert value == pytest.approx(Q1_EXPECTED[metric], abs=1e-12)
        assert reason is None


@pytest.mark.parametrize(
    ("metric", "name", "expected"),
    [
        (ef.RecallAtK(4), "recall@4", 2 / 3),
        (ef.PrecisionAtK(10), "precision@10", 2 / 10),
        (ef.PrecisionAtK(10, denominator="retrieved"), "precision@10(denominator=retrieved)", 2 / 6),
        (ef.HitRateAtK(1), "hit_rate@1", 0.0),
        (ef.MRRAtK(), "mrr", 1 / 2),
        (ef.MRRAtK(1), "mrr@1", 0.0),
        (ef.MeanAveragePrecision(), "map", (1 / 2 + 2 / 4) / 3),
        (ef.MeanAveragePrecision(2, denominator="retrieved"), "map@2(denominator=retrieved)", 1 / 2),
        (ef.NDCGAtK(), "ndcg", DCG_EXP / IDCG_EXP),
        (ef.NDCGAtK(gain="linear"), "ndcg(gain=linear)", DCG_LIN / IDCG_LIN),
        (ef.RPrecision(), "r_precision", 1 / 3),
        (ef.NumRetrieved(), "num_ret", 6.0),
        (ef.NumRelevant(), "num_rel", 3.0),
        (ef.NumRelevantRetrieved(), "num_rel_ret", 2.0),
    ],
)
def test_metric_objects_match_their_names(main_case, metric, name, expected):
    assert metric.name == name
    assert ef.resolve_metric(name) == metric
    result = ef.evaluate(*main_case, metrics=[metric])
    assert result.per_query.get_column("metric").unique().to_list() == [name]
    assert rows_of(result, "q1")[name][0] == pytest.approx(expected, abs=1e-12)


def test_query_without_relevant_item_is_skipped_by_default(skip_result):
    q2 = rows_of(skip_result, "q2")
    assert set(q2) == set(Q1_EXPECTED)
    for metric, (value, reason) in q2.items():
        if metric in COUNTS:
            assert (value, reason) == (Q2_COUNTS[metric], None), metric
        else:
            assert value is None, metric
            assert reason == "no relevant item", metric


def test_query_without_relevant_item_scores_zero_on_request(zero_result):
    for metric, (value, reason) in rows_of(zero_result, "q2").items():
        expected = Q2_COUNTS.get(metric, 0.0)
        assert (value, reason) == (expected, None), metric


def test_skipped_queries_are_counted_in_the_summary(skip_result, zero_result):
    skip = {row["metric"]: row for row in skip_result.summary.iter_rows(named=True)}
    zero = {row["metric"]: row for row in zero_result.summary.iter_rows(named=True)}
    # recall@4: only q1 is in the subset
    assert (skip["recall@4"]["n"], skip["recall@4"]["n_skipped"]) == (1, 1)
    assert skip["recall@4"]["value"] == pytest.approx(2 / 3)
    # empty="zero": both queries count, q2 with 0
    assert (zero["recall@4"]["n"], zero["recall@4"]["n_skipped"]) == (2, 0)
    assert zero["recall@4"]["value"] == pytest.approx((2 / 3 + 0) / 2)
    # counts are defined for every query and summed over the slice
    assert (skip["num_ret"]["n"], skip["num_ret"]["n_skipped"], skip["num_ret"]["value"]) == (2, 0, 6 + 2)
    assert skip["num_rel"]["value"] == 3 + 0
    assert skip["num_rel_ret"]["value"] == 2 + 0
    assert skip["recall@4"]["subset"] == "queries with at least one relevant item"
    assert skip["num_ret"]["subset"] == "all queries"


# --- summary table ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mrr_case(make_run, make_qrels):
    """Five queries: first relevant at rank 1, 2, 4, never retrieved, and one with no relevant item."""
    run = make_run(
        {
            "a": ["a1", "a2"],
            "b": ["b1", "b2", "b3"],
            "c": ["c1", "c2", "c3", "c4"],
            "d": ["d1", "d2"],
            "e": ["e1"],
        }
    )
    qrels = make_qrels(
        {
            "a": {"a1": 1},
            "b": {"b2": 1, "b1": 0},
            "c": {"c4": 3},
            "d": {"d9": 1, "d1": 0},  # relevant d9 not retrieved: reciprocal rank 0
            "e": {"e1": 0},
        }
    )
    return run, qrels


def test_summary_columns_and_statistics(mrr_case):
    result = ef.evaluate(*mrr_case, metrics=["mrr", "num_ret"])
    summary = result.summary
    assert summary.columns == [
        "grouping", "system", "metric", "unit", "subset", "n", "n_skipped", "n_outside_subset", "value", "std",
        "median", "p25", "p75", "p90", "min", "max", "se", "ci_low", "ci_high", "note", "params", "target",
    ]
    assert summary.get_column("target").to_list() == ["retrieval_accuracy", "retrieval_relevance"]
    assert summary.schema["n"] == pl.Int64 and summary.schema["n_skipped"] == pl.Int64
    assert summary.schema["n_outside_subset"] == pl.Int64
    assert summary.get_column("metric").to_list() == ["mrr", "num_ret"]
    row = summary.row(0, named=True)
    assert (row["grouping"], row["system"], row["metric"]) == ("overall", "default", "mrr")
    # values 1, 1/2, 1/4, 0; query e skipped
    assert (row["n"], row["n_skipped"], row["n_outside_subset"]) == (4, 1, 1)  # e has no relevant item
    assert row["value"] == pytest.approx((1 + 0.5 + 0.25 + 0) / 4)  # 0.4375
    # sample std: squared deviations from 0.4375 sum to 0.546875, / (n - 1) = 3
    squared = (1 - 0.4375) ** 2 + (0.5 - 0.4375) ** 2 + (0.25 - 0.4375) ** 2 + (0 - 0.4375) ** 2
    assert squared == pytest.approx(0.546875)
    assert row["std"] == pytest.approx(math.sqrt(0.546875 / 3))
    assert row["std"] == pytest.approx(statistics.stdev([1, 0.5, 0.25, 0]))
    # sorted 0, 1/4, 1/2, 1; linear quantiles at positions q·(n-1)
    assert row["median"] == pytest.approx((0.25 + 0.5) / 2)  # position 1.5
    assert row["p25"] == pytest.approx(0 + 0.75 * (0.25 - 0))  # position 0.75
    assert row["p75"] == pytest.approx(0.5 + 0.25 * (1 - 0.5))  # position 2.25
    assert row["p90"] == pytest.approx(0.5 + 0.7 * (1 - 0.5))  # position 2.7
    assert row["p90"] == pytest.approx(float(np.percentile([1, 0.5, 0.25, 0], 90)))
    assert (row["min"], row["max"]) == (0.0, 1.0)
    counts = summary.row(1, named=True)
    assert (counts["n"], counts["n_skipped"], counts["value"]) == (5, 0, 2 + 3 + 4 + 2 + 1)


def test_summary_with_empty_zero(mrr_case):
    row = ef.evaluate(*mrr_case, metrics=["mrr"], empty="zero").summary.row(0, named=True)
    # values 1, 1/2, 1/4, 0, 0
    assert (row["n"], row["n_skipped"]) == (5, 0)
    assert row["value"] == pytest.approx(1.75 / 5)
    # deviations from 0.35: 0.65, 0.15, -0.1, -0.35, -0.35 → squares sum 0.7, / 4
    assert row["std"] == pytest.approx(math.sqrt(0.7 / 4))
    assert row["median"] == pytest.approx(0.25)
    assert row["p25"] == pytest.approx(0.0)  # position 1 of 0, 0, 1/4, 1/2, 1
    assert row["p75"] == pytest.approx(0.5)  # position 3


def test_single_value_has_null_std(make_run, make_qrels):
    result = ef.evaluate(make_run({"q": ["a"]}), make_qrels({"q": {"a": 1}}), metrics=["mrr"])
    row = result.summary.row(0, named=True)
    assert (row["n"], row["value"], row["std"], row["median"], row["p25"], row["p75"]) == (1, 1.0, None, 1.0, 1.0, 1.0)


def test_per_query_shape(mrr_case):
    metrics = ["P@5", "mrr", "ndcg@10(gain=linear)", "num_rel"]
    result = ef.evaluate(*mrr_case, metrics=metrics)
    assert result.per_query.schema == pl.Schema(
        {"system": pl.String, "query_id": pl.String, "metric": pl.String, "value": pl.Float64, "skip_reason": pl.String}
    )
    names = ["precision@5", "mrr", "ndcg@10(gain=linear)", "num_rel"]
    assert [m.name for m in result.metrics] == names
    assert result.per_query.height == 5 * len(names)  # one row per (system, query, metric)
    assert result.per_query.get_column("query_id").unique(maintain_order=True).to_list() == ["a", "b", "c", "d", "e"]
    assert result.per_query.filter(pl.col("query_id") == "a").get_column("metric").to_list() == names
    assert result.per_query.select("system", "query_id", "metric").is_duplicated().sum() == 0
    wide = result.wide()
    assert wide.shape == (5, 2 + len(names))
    assert wide.filter(pl.col("query_id") == "c").get_column("mrr").item() == pytest.approx(1 / 4)


def test_repeated_metric_names_are_evaluated_once(mrr_case):
    result = ef.evaluate(*mrr_case, metrics=["P@5", "precision@5", ef.PrecisionAtK(5)])
    assert [m.name for m in result.metrics] == ["precision@5"]
    assert result.per_query.height == 5


# --- ties, grades ------------------------------------------------------------------------------

# Equal scores are ordered by doc_id descending, byte-wise (UTF-8): é (0xC3...) > z > d9 > d10 > a > B.
TIED_ORDER = ["é", "z", "d9", "d10", "a", "B"]


@pytest.mark.parametrize(("relevant", "position"), [(doc, i + 1) for i, doc in enumerate(TIED_ORDER)])
def test_equal_scores_ordered_by_doc_id_descending_bytewise(make_run, make_qrels, metric_values, relevant, position):
    shuffled = ["a", "d10", "B", "z", "é", "d9"]
    run = make_run({"q": {doc: 1.0 for doc in shuffled}})
    result = ef.evaluate(run, make_qrels({"q": {relevant: 1}}), metrics=["mrr"])
    assert metric_values(result, "mrr") == {"q": pytest.approx(1 / position)}


def test_ties_are_broken_only_among_equal_scores(make_run, make_qrels, metric_values):
    # "a" sorts last by doc_id but has the highest score; "b" and "c" tie below it: c, then b.
    run = make_run({"q": {"b": 1.0, "c": 1.0, "a": 2.0}})
    for relevant, expected in [("a", 1.0), ("c", 1 / 2), ("b", 1 / 3)]:
        result = ef.evaluate(run, make_qrels({"q": {relevant: 1}}), metrics=["mrr"])
        assert metric_values(result, "mrr") == {"q": pytest.approx(expected)}


def test_graded_relevance_exponential_and_linear_gain(make_run, make_qrels, metric_values):
    # ranks: g1 (grade 1), g3 (grade 3), n (grade 0); ideal order g3, g1
    run = make_run({"q": ["g1", "g3", "n"]})
    qrels = make_qrels({"q": {"g1": 1, "g3": 3, "n": 0}})
    result = ef.evaluate(run, qrels, metrics=["ndcg", "ndcg(gain=linear)", "ndcg@1", "ndcg@1(gain=linear)"])
    expected = {
        "ndcg": ((2**1 - 1) / log2(2) + (2**3 - 1) / log2(3)) / ((2**3 - 1) / log2(2) + (2**1 - 1) / log2(3)),
        "ndcg(gain=linear)": (1 / log2(2) + 3 / log2(3)) / (3 / log2(2) + 1 / log2(3)),
        "ndcg@1": (2**1 - 1) / (2**3 - 1),
        "ndcg@1(gain=linear)": 1 / 3,
    }
    for metric, value in expected.items():
        assert metric_values(result, metric) == {"q": pytest.approx(value)}, metric
    # for binary relevance both gains agree: 2^1 - 1 = 1
    binary = ef.evaluate(run, make_qrels({"q": {"g1": 1, "g3": 1}}), metrics=["ndcg", "ndcg(gain=linear)"])
    assert metric_values(binary, "ndcg") == pytest.approx(metric_values(binary, "ndcg(gain=linear)"))


def test_minus_one_grade_is_never_relevant_and_gains_nothing(make_run, make_qrels, metric_values):
    run = make_run({"q": ["u", "r"], "only_unjudgeable": ["x"]})
    qrels = make_qrels({"q": {"u": -1, "r": 1}, "only_unjudgeable": {"x": -1}})
    metrics = ["mrr", "precision@1", "recall@1", "map", "ndcg", "ndcg(gain=linear)", "num_rel", "num_rel_ret"]
    result = ef.evaluate(run, qrels, metrics=metrics)
    expected = {
        "mrr": 1 / 2,
        "precision@1": 0.0,
        "recall@1": 0.0,
        "map": (1 / 2) / 1,
        "ndcg": (1 / log2(3)) / 1,  # u gains 0, not 2^-1 - 1
        "ndcg(gain=linear)": (1 / log2(3)) / 1,  # nor -1
        "num_rel": 1.0,
        "num_rel_ret": 1.0,
    }
    for metric, value in expected.items():
        assert metric_values(result, metric)["q"] == pytest.approx(value), metric
    assert metric_values(result, "mrr")["only_unjudgeable"] is None
    assert metric_values(result, "num_rel")["only_unjudgeable"] == 0.0


@pytest.mark.parametrize("n_relevant", range(1, 13))
def test_perfect_ranking_has_ndcg_one_never_above(make_run, make_qrels, metric_values, n_relevant):
    # DCG and IDCG of a perfect ranking are the same sum; their ratio must not drift past 1
    docs = [f"d{i:02d}" for i in range(n_relevant)]
    run = make_run({"q": [*docs, "other"]})
    qrels = make_qrels({"q": {doc: 1 for doc in docs}})
    metrics = ["ndcg", "ndcg@3", "ndcg@10", "ndcg@10(gain=linear)", "ndcg(gain=linear)"]
    result = ef.evaluate(run, qrels, metrics=metrics)
    for metric in metrics:
        value = metric_values(result, metric)["q"]
        assert value == pytest.approx(1.0, abs=1e-12), metric
        assert value <= 1.0, (metric, repr(value))


# --- missing queries, given ranks, depth, threshold -------------------------------------------


def test_judged_query_missing_from_run_is_an_error_naming_it(make_run, make_qrels):
    run = make_run({"q1": ["a"]})
    qrels = make_qrels({"q1": {"a": 1}, "q2": {"b": 1}})
    with pytest.raises(ef.InputError) as error:
        ef.evaluate(run, qrels, metrics=["mrr"])
    assert "'q2'" in str(error.value)
    assert "'q1'" not in str(error.value)
    assert 'missing="zero"' in str(error.value) and '`-c`' in str(error.value)


def test_judged_query_missing_from_run_scores_zero_on_request(make_run, make_qrels, metric_values):
    run = make_run({"q1": ["a"]})
    qrels = make_qrels({"q1": {"a": 1}, "q2": {"b": 1, "c": 2}})
    metrics = ["recall@5", "precision@5", "hit_rate@5", "mrr", "map", "ndcg", "r_precision", "num_ret", "num_rel",
               "num_rel_ret", "precision@5(denominator=retrieved)"]
    result = ef.evaluate(run, qrels, metrics=metrics, missing="zero")
    q2 = rows_of(result, "q2")
    for metric in metrics[:-1]:
        expected = 2.0 if metric == "num_rel" else 0.0
        assert q2[metric] == (expected, None), metric
    # min(k, retrieved) = 0: undefined, not a made-up number, and the reason says so
    value, reason = q2["precision@5(denominator=retrieved)"]
    assert value is None and reason.startswith("undefined")
    assert metric_values(result, "mrr")["q1"] == 1.0
    assert any("absent from the run" in note for note in result.notes)


def test_run_queries_without_judgments_are_ignored_and_noted(make_run, make_qrels):
    run = make_run({"q1": ["a"], "unjudged": ["x", "y"]})
    result = ef.evaluate(run, make_qrels({"q1": {"a": 1}}), metrics=["mrr"])
    assert result.per_query.get_column("query_id").to_list() == ["q1"]
    assert any("2 run rows of 1 queries without judgments" in note for note in result.notes)


def test_given_rank_overrides_score_order(metric_values, make_qrels):
    # by score the order would be a, c, b; the given ranks say b, c, a (gaps are fine)
    run = ef.read_run(
        pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "rank": [30, 10, 20], "score": [9.0, 1.0, 5.0]})
    )
    qrels = make_qrels({"q": {"b": 1, "a": 1}})
    result = ef.evaluate(run, qrels, metrics=["mrr", "precision@1", "map"])
    assert metric_values(result, "mrr") == {"q": 1.0}
    assert metric_values(result, "precision@1") == {"q": 1.0}
    assert metric_values(result, "map") == {"q": pytest.approx((1 / 1 + 2 / 3) / 2)}


def test_tied_given_ranks_are_an_error(make_qrels):
    frame = pl.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "c"], "rank": [1, 2, 2]})
    with pytest.raises(ef.InputError) as error:
        ef.evaluate(ef.read_run(frame), make_qrels({"q": {"a": 1}}), metrics=["mrr"])
    message = str(error.value)
    assert "`rank`" in message and "'q'" in message and "'b'" in message and "'c'" in message


def test_max_depth_cuts_each_ranking(main_case):
    result = ef.evaluate(*main_case, metrics=list(Q1_EXPECTED), max_depth=3)
    q1 = {metric: value for metric, (value, _) in rows_of(result, "q1").items()}
    # only d1, d2, d3 remain: one relevant (d2 at rank 2)
    assert q1["num_ret"] == 3
    assert q1["num_rel"] == 3
    assert q1["num_rel_ret"] == 1
    assert q1["recall@10"] == pytest.approx(1 / 3)
    assert q1["precision@10"] == pytest.approx(1 / 10)
    assert q1["precision@10(denominator=retrieved)"] == pytest.approx(1 / 3)
    assert q1["map"] == pytest.approx((1 / 2) / 3)
    assert q1["mrr"] == pytest.approx(1 / 2)
    assert q1["ndcg"] == pytest.approx(((2**1 - 1) / log2(3)) / IDCG_EXP)  # the ideal is not cut
    assert q1["r_precision"] == pytest.approx(1 / 3)
    assert rows_of(result, "q2")["num_ret"] == (2.0, None)


def test_relevance_threshold_two(main_case, make_run, make_qrels):
    run = pl.concat([main_case[0], make_run({"q3": ["f1"]})], how="diagonal_relaxed")
    qrels = pl.concat([main_case[1], make_qrels({"q3": {"f1": 1}})])
    metrics = ["recall@2", "recall@4", "precision@4", "hit_rate@2", "mrr", "map", "r_precision", "num_rel",
               "num_rel_ret", "ndcg"]
    result = ef.evaluate(run, qrels, metrics=metrics, relevance_threshold=2)
    q1 = {metric: value for metric, (value, _) in rows_of(result, "q1").items()}
    # only d4 (grade 2, rank 4) is relevant: n_relevant = 1
    expected = {
        "recall@2": 0 / 1,
        "recall@4": 1 / 1,
        "precision@4": 1 / 4,
        "hit_rate@2": 0.0,
        "mrr": 1 / 4,
        "map": (1 / 4) / 1,
        "r_precision": 0 / 1,  # top 1 is d1
        "num_rel": 1.0,
        "num_rel_ret": 1.0,
        # as in trec_eval, every positive grade still gains in nDCG whatever the threshold
        "ndcg": DCG_EXP / IDCG_EXP,
    }
    assert q1 == pytest.approx(expected)
    # q3's only judged item has grade 1: no relevant item at threshold 2
    q3 = rows_of(result, "q3")
    assert q3["mrr"] == (None, "no relevant item")
    assert q3["num_rel"] == (0.0, None)
    threshold_one = ef.evaluate(run, qrels, metrics=["mrr"])
    assert rows_of(threshold_one, "q3")["mrr"] == (1.0, None)


def test_several_systems_are_evaluated_separately(make_qrels, metric_values):
    run = ef.read_run(
        pl.DataFrame(
            {
                "system": ["A", "A", "B", "B"],
                "query_id": ["q"] * 4,
                "doc_id": ["r", "n", "r", "n"],
                "score": [2.0, 1.0, 1.0, 2.0],
            }
        )
    )
    result = ef.evaluate(run, make_qrels({"q": {"r": 1}}), metrics=["mrr"])
    assert metric_values(result, "mrr", system="A") == {"q": 1.0}
    assert metric_values(result, "mrr", system="B") == {"q": 0.5}
    assert result.summary.select("system", "value").rows() == [("A", 1.0), ("B", 0.5)]


def test_missing_query_error_names_the_system(make_qrels):
    run = ef.read_run(
        pl.DataFrame({"system": ["A", "B"], "query_id": ["q1", "q2"], "doc_id": ["a", "a"], "score": [1.0, 1.0]})
    )
    with pytest.raises(ef.InputError) as error:
        ef.evaluate(run, make_qrels({"q1": {"a": 1}, "q2": {"a": 1}}), metrics=["mrr"])
    message = str(error.value)
    assert "1 of 2 judged queries have no ranking from system 'A': 'q2'" in message
    assert "1 of 2 judged queries have no ranking from system 'B': 'q1'" in message


# --- configuration errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"relevance_threshold": 0},
        {"relevance_threshold": 1.5},
        {"empty": "ignore"},
        {"missing": "skip"},
        {"max_depth": 0},
    ],
)
def test_bad_options_are_config_errors(main_case, options):
    with pytest.raises(ef.ConfigError):
        ef.evaluate(*main_case, metrics=["mrr"], **options)


@pytest.mark.parametrize(
    "build",
    [
        lambda: ef.RecallAtK(0),
        lambda: ef.PrecisionAtK(-1),
        lambda: ef.HitRateAtK(True),
        lambda: ef.MRRAtK(0),
        lambda: ef.PrecisionAtK(5, denominator="all"),
        lambda: ef.MeanAveragePrecision(10, denominator="k"),
        lambda: ef.NDCGAtK(10, gain="cubic"),
    ],
)
def test_bad_metric_parameters_are_config_errors(build):
    with pytest.raises(ef.ConfigError):
        build()
