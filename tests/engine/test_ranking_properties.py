"""Properties of the ranking metrics on random runs (with tied scores) and graded judgments.

Beside the fast Polars code sits a slow, obviously correct reference: plain Python written from
the formulas of the metrics contract (seed 001 §3) and trec_eval's definitions, one function per
metric. Random inputs must give the same values, and the invariances every ranking metric owes
its users must hold: ratios in [0, 1], recall non-decreasing in k, a perfect ranking scores 1,
and neither row order nor query names change anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from unittest import mock

import polars as pl
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe import _sorting

# Doc ids chosen so that byte-wise order matters: upper < lower case, "d10" < "d9", "é" > "z", "#".
DOC_IDS = ["a", "b", "B", "c", "d9", "d10", "x#1", "z", "é", "doc-7", "k", "m"]
SCORES = [-1.5, 0.0, 0.5, 1.0, 1.0, 2.0, 3.25]  # few values: many ties
GRADES = [-1, 0, 0, 1, 1, 2, 3]
CUTOFFS = (1, 2, 3, 5, 10)

COUNT_METRICS = ("num_ret", "num_rel", "num_rel_ret")
RATIO_METRICS = [
    *(f"{family}@{k}" for k in CUTOFFS for family in (
        "recall", "precision", "hit_rate", "mrr", "map", "ndcg")),
    *(f"precision@{k}(denominator=retrieved)" for k in CUTOFFS),
    *(f"map@{k}(denominator=retrieved)" for k in CUTOFFS),
    *(f"ndcg@{k}(gain=linear)" for k in CUTOFFS),
    "mrr", "map", "map(denominator=retrieved)", "ndcg", "ndcg(gain=linear)", "r_precision",
]
ALL_METRICS = [*RATIO_METRICS, *COUNT_METRICS]


# --- random cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A run (query → doc → score, optionally given ranks) and judgments (query → doc → grade)."""

    run: dict[str, dict[str, float]]
    qrels: dict[str, dict[str, int]]
    ranks: dict[str, dict[str, int]] | None = None

    def run_frame(self) -> pl.DataFrame:
        rows = [(q, d, s) for q, docs in self.run.items() for d, s in docs.items()]
        frame = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64},
                             orient="row")
        if self.ranks is not None:
            frame = frame.with_columns(
                rank=pl.Series([self.ranks[q][d] for q, docs in self.run.items() for d in docs], dtype=pl.Int64)
            )
        return frame

    def qrels_frame(self) -> pl.DataFrame:
        rows = [(q, d, g) for q, docs in self.qrels.items() for d, g in docs.items()]
        return pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64},
                            orient="row")


def judgments(*, max_size: int) -> st.SearchStrategy[dict[str, int]]:
    return st.dictionaries(st.sampled_from(DOC_IDS), st.sampled_from(GRADES), min_size=1, max_size=max_size)


@st.composite
def cases(draw, *, allow_missing: bool = True, allow_given_ranks: bool = True) -> Case:
    n_queries = draw(st.integers(1, 4))
    qrels, run = {}, {}
    for position in range(n_queries):
        query_id = f"q{position}"
        qrels[query_id] = draw(judgments(max_size=8))
        # a judged query may be missing from the run (scored as an empty ranking), but not all of them
        may_be_missing = allow_missing and position > 0
        docs = draw(st.dictionaries(st.sampled_from(DOC_IDS), st.sampled_from(SCORES),
                                    min_size=0 if may_be_missing else 1, max_size=10))
        if docs:
            run[query_id] = docs
    if draw(st.booleans()):  # a query nobody judged: must be ignored
        run["unjudged"] = draw(st.dictionaries(st.sampled_from(DOC_IDS), st.sampled_from(SCORES),
                                               min_size=1, max_size=3))
    ranks = None
    if allow_given_ranks and draw(st.booleans()):
        ranks = {}
        for query_id, docs in run.items():
            order = draw(st.permutations(list(docs)))
            ranks[query_id] = {doc: 3 * position + 1 for position, doc in enumerate(order)}  # gaps are allowed
    return Case(run, qrels, ranks)


def evaluate_case(case: Case, metrics, **options) -> ef.Result:
    options.setdefault("missing", "zero")
    return ef.evaluate(ef.read_run(case.run_frame()), ef.read_qrels(case.qrels_frame()), metrics=metrics, **options)


def values_by_query(result: ef.Result) -> dict[tuple[str, str], float | None]:
    return {(q, m): v for q, m, v in result.per_query.select("query_id", "metric", "value").iter_rows()}


# --- the reference: plain Python, one metric at a time ----------------------------------------


def reference_ranking(case: Case, query_id: str, max_depth: int | None) -> list[str]:
    """trec_eval's order: score descending, then doc_id descending (Python compares code points,
    which is UTF-8 byte order); or the given ranks when there are any."""
    docs = case.run.get(query_id, {})
    if case.ranks is not None:
        ranked = sorted(docs, key=lambda doc: case.ranks[query_id][doc])
    else:
        ranked = [doc for doc, _ in sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)]
    return ranked if max_depth is None else ranked[:max_depth]


def gain(grade: int, scheme: str) -> float:
    grade = max(grade, 0)  # -1 (judged, unjudgeable) gains nothing
    return 2.0**grade - 1.0 if scheme == "exponential" else float(grade)


def reference_value(metric: str, ranked: list[str], grades: dict[str, int], threshold: int) -> float | None:
    """The metric's value for one query, None where undefined."""
    relevant = {doc for doc, grade in grades.items() if grade >= threshold}
    n_relevant = len(relevant)
    is_relevant = [doc in relevant for doc in ranked]

    def hits(k: int | None) -> int:
        return sum(is_relevant if k is None else is_relevant[:k])

    name, _, rest = metric.partition("@")
    if "(" in name:
        name, rest = name.split("(")[0], "(" + name.split("(", 1)[1]
    k_text, _, params = rest.partition("(")
    k = int(k_text) if k_text else None
    option = params.rstrip(")").partition("=")[2]

    if name == "num_ret":
        return float(len(ranked))
    if name == "num_rel":
        return float(n_relevant)
    if name == "num_rel_ret":
        return float(hits(None))
    if name == "recall":
        return hits(k) / n_relevant if n_relevant else None
    if name == "precision":
        if option == "retrieved":
            denominator = min(k, len(ranked))
            return hits(k) / denominator if denominator else None
        return hits(k) / k
    if name == "hit_rate":
        return 1.0 if hits(k) > 0 else 0.0
    if name == "mrr":
        for rank, relevant_here in enumerate(is_relevant[:k] if k else is_relevant, start=1):
            if relevant_here:
                return 1.0 / rank
        return 0.0
    if name == "map":
        precision_sum, found = 0.0, 0
        for rank, relevant_here in enumerate(is_relevant[:k] if k else is_relevant, start=1):
            if relevant_here:
                found += 1
                precision_sum += found / rank
        if option == "retrieved":
            return precision_sum / found if found else 0.0
        return precision_sum / n_relevant if n_relevant else None
    if name == "ndcg":
        scheme = option or "exponential"
        top = ranked[:k] if k else ranked
        dcg = sum(gain(grades.get(doc, 0), scheme) / math.log2(rank + 1) for rank, doc in enumerate(top, start=1))
        ideal = sorted((grade for grade in grades.values() if grade > 0), reverse=True)
        ideal = ideal[:k] if k else ideal
        idcg = sum(gain(grade, scheme) / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
        return dcg / idcg if idcg > 0 else None
    if name == "r_precision":
        return hits(n_relevant) / n_relevant if n_relevant else None
    raise AssertionError(f"no reference for {metric}")


def reference_result(case: Case, metrics, *, threshold=1, empty="skip", max_depth=None):
    expected = {}
    for query_id, grades in case.qrels.items():
        ranked = reference_ranking(case, query_id, max_depth)
        n_relevant = sum(grade >= threshold for grade in grades.values())
        for metric in metrics:
            value = reference_value(metric, ranked, grades, threshold)
            if metric not in COUNT_METRICS and empty == "skip" and n_relevant == 0:
                value = None  # outside the subset: queries with at least one relevant item
            if value is None and empty == "zero":
                value = 0.0
            expected[(query_id, ef.resolve_metric(metric).name)] = value
    return expected


def assert_same_values(actual: dict, expected: dict) -> None:
    assert set(actual) == set(expected)
    for key, value in expected.items():
        if value is None:
            assert actual[key] is None, (key, actual[key])
        else:
            assert actual[key] is not None, key
            assert math.isclose(actual[key], value, rel_tol=1e-12, abs_tol=1e-12), (key, actual[key], value)


def test_reference_on_the_documented_example():
    """The reference itself, on the docstring example of evaluate()."""
    case = Case(run={"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}, qrels={"q1": {"b": 1}, "q2": {"x": 1}})
    expected = reference_result(case, ["mrr", "recall@1"])
    assert expected == {("q1", "mrr"): 0.5, ("q1", "recall@1"): 0.0, ("q2", "mrr"): 0.0, ("q2", "recall@1"): 0.0}


# --- evalframe against the reference ---------------------------------------------------------


@settings(max_examples=15)
@given(
    case=cases(),
    threshold=st.sampled_from([1, 1, 2]),
    empty=st.sampled_from(["skip", "zero"]),
    max_depth=st.sampled_from([None, None, 1, 3, 6]),
)
def test_matches_the_reference(case, threshold, empty, max_depth):
    result = evaluate_case(case, ALL_METRICS, relevance_threshold=threshold, empty=empty, max_depth=max_depth)
    expected = reference_result(case, ALL_METRICS, threshold=threshold, empty=empty, max_depth=max_depth)
    assert_same_values(values_by_query(result), expected)


# --- invariances -------------------------------------------------------------------------------


# No shrinking here: a failure is reported as drawn. Shrinking a 54-metric evaluation takes
# minutes, and test_retrieval_metrics.py pins the smallest known case (nDCG of a perfect ranking).
@settings(max_examples=15, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(case=cases(), empty=st.sampled_from(["skip", "zero"]), threshold=st.sampled_from([1, 2]))
def test_ratio_metrics_lie_in_the_unit_interval(case, empty, threshold):
    result = evaluate_case(case, ALL_METRICS, empty=empty, relevance_threshold=threshold)
    ratios = result.per_query.filter(~pl.col("metric").is_in(COUNT_METRICS))
    defined = ratios.drop_nulls("value")
    outside = defined.filter((pl.col("value") < 0) | (pl.col("value") > 1))
    assert outside.height == 0, outside
    assert defined.get_column("value").is_nan().sum() == 0
    counts = result.per_query.filter(pl.col("metric").is_in(COUNT_METRICS))
    assert counts.get_column("value").null_count() == 0
    assert (counts.get_column("value") >= 0).all()
    if empty == "zero":
        assert ratios.get_column("value").null_count() == 0
    else:  # every null says why
        assert ratios.filter(pl.col("value").is_null() & pl.col("skip_reason").is_null()).height == 0


@settings(max_examples=30)
@given(case=cases())
def test_recall_is_non_decreasing_in_k(case):
    ks = list(range(1, 12))
    result = evaluate_case(case, [f"recall@{k}" for k in ks], empty="zero")
    values = values_by_query(result)
    for query_id in case.qrels:
        curve = [values[(query_id, f"recall@{k}")] for k in ks]
        assert curve == sorted(curve), (query_id, curve)


@st.composite
def perfect_cases(draw) -> tuple[Case, dict[str, int]]:
    """Judgments with at least one relevant item per query, and a run that ranks the relevant
    items first in grade order (strictly decreasing scores), then some others."""
    qrels, run, n_relevant = {}, {}, {}
    for position in range(draw(st.integers(1, 4))):
        query_id = f"q{position}"
        grades = draw(judgments(max_size=8))
        if not any(grade >= 1 for grade in grades.values()):
            grades[draw(st.sampled_from(DOC_IDS))] = draw(st.integers(1, 3))
        relevant = sorted((doc for doc, grade in grades.items() if grade >= 1), key=lambda doc: -grades[doc])
        others = draw(st.lists(st.sampled_from([d for d in DOC_IDS if d not in relevant]), unique=True, max_size=4))
        order = relevant + others
        run[query_id] = {doc: float(len(order) - rank) for rank, doc in enumerate(order)}
        qrels[query_id] = grades
        n_relevant[query_id] = len(relevant)
    return Case(run, qrels), n_relevant


@settings(max_examples=30)
@given(perfect=perfect_cases())
def test_a_perfect_ranking_scores_one(perfect):
    case, n_relevant = perfect
    recall_metrics = sorted({f"recall@{n}" for n in n_relevant.values()})
    ones = ["ndcg", "ndcg(gain=linear)", "ndcg@1", "ndcg@3(gain=linear)", "map", "mrr", "r_precision",
            "hit_rate@1", "precision@1"]
    values = values_by_query(evaluate_case(case, [*recall_metrics, *ones]))
    for query_id, n in n_relevant.items():
        assert values[(query_id, f"recall@{n}")] == 1.0
        for metric in ones:
            assert values[(query_id, ef.resolve_metric(metric).name)] == pytest.approx(1.0, abs=1e-12), metric


@settings(max_examples=15)
@given(case=cases(), data=st.data())
def test_row_order_changes_nothing(case, data):
    run, qrels = case.run_frame(), case.qrels_frame()
    run_order = data.draw(st.permutations(range(run.height)))
    qrels_order = data.draw(st.permutations(range(qrels.height)))
    metrics = ["ndcg@5", "map", "mrr@3", "P@2", "recall@3", "r_precision", "num_rel_ret"]
    before = ef.evaluate(ef.read_run(run), ef.read_qrels(qrels), metrics=metrics, missing="zero")
    after = ef.evaluate(
        ef.read_run(run[list(run_order)]), ef.read_qrels(qrels[list(qrels_order)]), metrics=metrics, missing="zero"
    )
    assert_frame_equal(after.per_query, before.per_query, check_exact=True)
    assert_frame_equal(after.summary, before.summary, check_exact=True)


@settings(max_examples=15)
@given(case=cases())
def test_renaming_queries_changes_nothing(case):
    # the new names sort in the opposite order of the old ones
    names = sorted({*case.qrels, *case.run})
    renamed = {old: f"topic-{len(names) - position:03d}" for position, old in enumerate(names)}
    renamed_case = Case(
        run={renamed[q]: docs for q, docs in case.run.items()},
        qrels={renamed[q]: docs for q, docs in case.qrels.items()},
        ranks=None if case.ranks is None else {renamed[q]: ranks for q, ranks in case.ranks.items()},
    )
    metrics = ["ndcg@5", "map", "mrr", "P@2", "recall@3", "r_precision", "num_ret"]
    before = evaluate_case(case, metrics)
    after = evaluate_case(renamed_case, metrics)
    back = {new: old for old, new in renamed.items()}
    restored = after.per_query.with_columns(pl.col("query_id").replace_strict(back)).sort("query_id", "metric")
    assert_frame_equal(restored, before.per_query.sort("query_id", "metric"), check_exact=True)
    columns = ["metric", "n", "n_skipped", "value", "std", "median", "p25", "p75"]
    assert_frame_equal(after.summary.select(columns), before.summary.select(columns), check_exact=False, rel_tol=1e-12)


# --- scores that differ only in their last bits -----------------------------------------------

#: Run-only queries that evalframe must ignore; they make the run hold thousands of
#: (system, query) pairs, as real runs do, which changes how many bits of a score a packed sort
#: key can keep: neighbouring scores must still be ordered exactly.
PADDING = pl.DataFrame(
    {
        "query_id": [f"unjudged-{i:05d}" for i in range(5000)],
        "doc_id": ["x"] * 5000,
        "score": [float(i) for i in range(5000)],
    }
)


def near(base: float, ulps: int) -> float:
    step = math.inf if ulps > 0 else -math.inf
    for _ in range(abs(ulps)):
        base = math.nextafter(base, step)
    return base


NEAR_SCORES = st.builds(
    near,
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e300, -1e-300, 5e-324, 123.456]),
    st.integers(-3, 3),
)


@st.composite
def close_score_cases(draw) -> Case:
    qrels, run = {}, {}
    for position in range(draw(st.integers(1, 3))):
        query_id = f"q{position}"
        qrels[query_id] = draw(judgments(max_size=8))
        run[query_id] = draw(st.dictionaries(st.sampled_from(DOC_IDS), NEAR_SCORES, min_size=1, max_size=10))
    return Case(run, qrels)


@settings(max_examples=30)
@given(case=close_score_cases(), padded=st.booleans())
def test_scores_one_ulp_apart_are_ordered_exactly(case, padded):
    run = case.run_frame()
    if padded:
        run = pl.concat([run, PADDING])
    metrics = ["mrr", "map", "ndcg", "precision@3", "recall@2", "r_precision", "num_rel_ret"]
    result = ef.evaluate(ef.read_run(run), ef.read_qrels(case.qrels_frame()), metrics=metrics, empty="zero")
    expected = reference_result(case, metrics, empty="zero")
    assert_same_values(values_by_query(result), expected)


def test_neighbouring_scores_in_a_large_run():
    """A fixed case: the relevant item's score is one ulp above its rival's; -0.0 ties 0.0."""
    case = Case(
        run={"q": {"a": 1.0, "b": math.nextafter(1.0, 2.0), "c": 0.0, "d": -0.0}},
        qrels={"q": {"b": 1, "c": 1}},
    )
    run = pl.concat([case.run_frame(), PADDING])
    result = ef.evaluate(ef.read_run(run), ef.read_qrels(case.qrels_frame()), metrics=["mrr", "map"])
    # order b (1 + ulp), a (1.0), then the tie 0.0 / -0.0 by doc_id descending: d, c
    assert values_by_query(result) == {("q", "mrr"): 1.0, ("q", "map"): pytest.approx((1 / 1 + 2 / 4) / 2)}
    assert any("5000 run rows" in note for note in result.notes)


# --- the same input gives the same numbers, bit for bit ---------------------------------------


@pytest.mark.parametrize("size", ["tiny", "larger"])
def test_repeated_evaluations_agree_bit_for_bit(size):
    """Float sums must not depend on thread scheduling: Polars' streaming engine adds partial
    sums in an order that varies from run to run (seen on a 4-judgment query's ideal DCG);
    evalframe collects in memory."""
    import random

    if size == "tiny":
        run_rows = [("q0", "a", -1.5), ("q1", "a", -1.5)]
        qrels_rows = [("q0", "a", -1), ("q1", "a", 1), ("q1", "b", 1), ("q1", "B", 1), ("q1", "c", 1)]
    else:
        rng = random.Random(7)
        run_rows, qrels_rows = [], []
        for q in range(400):
            docs = rng.sample(range(1000), 30)
            run_rows += [(f"q{q}", f"d{d}", round(rng.gauss(0, 1), 1)) for d in docs]
            qrels_rows += [(f"q{q}", f"d{d}", rng.choice([-1, 0, 1, 2, 3])) for d in [*rng.sample(docs, 6), 1000 + q]]
    run = ef.read_run(pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row"))
    qrels = ef.read_qrels(pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "relevance"], orient="row"))
    metrics = ["ndcg@5", "ndcg", "map", "map@10", "mrr", "recall@10", "precision@5", "r_precision"]
    first = ef.evaluate(run, qrels, metrics)
    for _ in range(40):
        again = ef.evaluate(run, qrels, metrics)
        assert_frame_equal(again.per_query, first.per_query, check_exact=True)
        assert_frame_equal(again.summary, first.summary, check_exact=True)


# --- judged items only vs every ranked item ----------------------------------------------------


class _ReadsEveryItem(ef.NumRetrieved):
    """A count that claims to read unjudged items: its presence sends the evaluation down the
    path that ranks and aggregates every item of the run."""

    name = "num_ret_every_item"  # type: ignore[assignment]
    reads_unjudged_items = True


@settings(max_examples=15)
@given(
    case=cases(),
    threshold=st.sampled_from([1, 2]),
    empty=st.sampled_from(["skip", "zero"]),
    max_depth=st.sampled_from([None, None, 2, 5]),
    split_sorts=st.booleans(),
)
def test_judged_items_only_give_the_values_of_every_item(case, threshold, empty, max_depth, split_sorts):
    options = {"relevance_threshold": threshold, "empty": empty, "max_depth": max_depth}
    # Large runs sort their keys in two halves on two threads; `split_sorts` does so here too.
    with mock.patch.object(_sorting, "MIN_SPLIT_LENGTH", 0 if split_sorts else _sorting.MIN_SPLIT_LENGTH):
        fast = values_by_query(evaluate_case(case, ALL_METRICS, **options))
    full = values_by_query(evaluate_case(case, [*ALL_METRICS, _ReadsEveryItem()], **options))
    assert fast.keys() == {key for key in full if key[1] != "num_ret_every_item"}
    for key, value in fast.items():
        other = full[key]
        assert (value is None) == (other is None), key
        assert value is None or abs(value - other) <= 1e-12, (key, value, other)
