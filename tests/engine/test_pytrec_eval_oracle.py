"""evalframe against pytrec_eval (trec_eval's C code behind a Python binding) as an oracle.

Random runs with tied and near-tied scores (equal only in single precision) and graded judgments
(-1, 0 and positive grades, queries without relevant items), relevance levels 1 and 2. evalframe
runs with trec_eval's conventions: linear nDCG gain, ``empty="zero"`` (trec_eval scores a query
without relevant items 0) and ``score_precision="float32"`` (trec_eval keeps scores as floats). pytrec_eval
evaluates only queries present in both the run and the qrels, so every judged query is in the run;
run-only queries are generated too and must be ignored by both.

Every generated query has at least one judgment with grade >= 0. trec_eval has no defined result
for a query whose judgments are all -1: its per-query setup (``form_res_rels``) then finds a
highest grade of -1, leaves the number of relevance levels unset, and pytrec_eval reports
``num_ret`` 0 for retrieved items or never returns from ``ndcg`` (pytrec-eval-terrier 0.5.x).
evalframe's handling of such queries is pinned in test_retrieval_metrics.py and by the reference
implementation in test_ranking_properties.py.
"""

from __future__ import annotations

import math
import random
import re

import polars as pl
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef

CUTOFFS = (1, 2, 3, 5, 10, 20)

#: pytrec_eval measure → evalframe metric, for every per-query value pytrec_eval prints.
MEASURES = {
    "map": "map",
    "ndcg": "ndcg(gain=linear)",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    **{f"map_cut_{k}": f"map@{k}" for k in CUTOFFS},
    **{f"P_{k}": f"precision@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}(gain=linear)" for k in CUTOFFS},
    **{f"success_{k}": f"hit_rate@{k}" for k in CUTOFFS},
}
CUTS = ",".join(map(str, CUTOFFS))
PYTREC_MEASURES = {"map", "ndcg", "recip_rank", "Rprec", "num_ret", "num_rel", "num_rel_ret",
                   f"map_cut.{CUTS}", f"P.{CUTS}", f"recall.{CUTS}", f"ndcg_cut.{CUTS}", f"success.{CUTS}"}


def evalframe_values(run: dict, qrels: dict, level: int) -> dict[tuple[str, str], float]:
    run_frame = pl.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()],
        schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64},
        orient="row",
    )
    qrels_frame = pl.DataFrame(
        [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()],
        schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64},
        orient="row",
    )
    result = ef.evaluate(
        ef.read_run(run_frame),
        ef.read_qrels(qrels_frame),
        metrics=list(MEASURES.values()),
        empty="zero",
        relevance_threshold=level,
        score_precision="float32",  # trec_eval compares scores as 32-bit floats
    )
    return {(q, m): v for q, m, v in result.per_query.select("query_id", "metric", "value").iter_rows()}


def oracle_values(run: dict, qrels: dict, level: int) -> dict[tuple[str, str], float]:
    """pytrec_eval's per-query values, keyed by evalframe metric name."""
    assert all(max(grades.values()) >= 0 for grades in qrels.values()), "see the module docstring"
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=level)
    return {
        (query_id, MEASURES[measure]): value
        for query_id, by_measure in evaluator.evaluate(run).items()
        for measure, value in by_measure.items()
    }


def assert_agree(run: dict, qrels: dict, level: int) -> None:
    ours = evalframe_values(run, qrels, level)
    theirs = oracle_values(run, qrels, level)
    judged_in_run = set(qrels) & set(run)
    assert {q for q, _ in theirs} == judged_in_run  # the oracle saw what we think it saw
    assert set(ours) == set(theirs)
    mismatches = [
        (key, ours[key], value)
        for key, value in sorted(theirs.items())
        if ours[key] is None or not math.isclose(ours[key], value, rel_tol=0, abs_tol=1e-9)
    ]
    assert not mismatches, mismatches[:10]


# --- random cases ------------------------------------------------------------------------------

DOC_IDS = ["a", "B", "b", "c", "d9", "d10", "e", "f", "g", "h", "i", "j", "k", "x#1", "Z", "z"]
SCORES = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, -3.0]),  # ties
    # near-ties: equal as trec_eval's 32-bit floats, different in 64 bits
    st.sampled_from([20.401, 20.401000001, 1.0 + 1e-9, 2.0 - 1e-10]),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False),
)
GRADES = st.sampled_from([-1, 0, 0, 1, 1, 2, 3, 4])


@st.composite
def runs_and_qrels(draw) -> tuple[dict, dict]:
    run, qrels = {}, {}
    for position in range(draw(st.integers(1, 5))):
        query_id = f"{position + 300}"
        # min_size=1 on both: every judged query is in the run (pytrec_eval drops the others)
        grades = draw(st.dictionaries(st.sampled_from(DOC_IDS), GRADES, min_size=1, max_size=10))
        if max(grades.values()) < 0:  # see the module docstring
            grades[draw(st.sampled_from(DOC_IDS))] = 0
        qrels[query_id] = grades
        run[query_id] = draw(st.dictionaries(st.sampled_from(DOC_IDS), SCORES, min_size=1, max_size=16))
    if draw(st.booleans()):
        run["999"] = draw(st.dictionaries(st.sampled_from(DOC_IDS), SCORES, min_size=1, max_size=4))
    return run, qrels


@settings(max_examples=30)
@given(case=runs_and_qrels(), level=st.sampled_from([1, 2]))
def test_agrees_with_pytrec_eval_on_random_cases(case, level):
    run, qrels = case
    assert_agree(run, qrels, level)


@pytest.mark.parametrize("level", [1, 2])
@pytest.mark.parametrize("seed", [7, 2024])
def test_agrees_with_pytrec_eval_on_larger_random_cases(seed, level):
    """40 queries × up to 120 retrieved documents, coarse scores (many ties)."""
    rng = random.Random(seed)
    pool = [f"DOC-{i:04d}" for i in range(300)] + [f"doc{i}" for i in range(50)]
    run, qrels = {}, {}
    for position in range(40):
        query_id = f"q{position}"
        judged = rng.sample(pool, rng.randint(1, 60))
        qrels[query_id] = {doc: rng.choice([-1, 0, 0, 0, 1, 1, 2, 3]) for doc in judged}
        if position % 10 == 0:  # some queries without any relevant item
            qrels[query_id] = {doc: rng.choice([-1, 0]) for doc in judged}
        qrels[query_id][judged[0]] = max(qrels[query_id][judged[0]], 0)  # see the module docstring
        retrieved = rng.sample(pool, rng.randint(1, 120))
        run[query_id] = {doc: round(rng.uniform(0, 5), 1) for doc in retrieved}
    assert_agree(run, qrels, level)


def test_oracle_covers_the_requested_measures_on_a_known_case():
    families = {re.sub(r"_\d+$", "", measure) for measure in MEASURES}
    assert families == {"map", "map_cut", "P", "recall", "ndcg", "ndcg_cut", "recip_rank", "Rprec", "success",
                        "num_ret", "num_rel", "num_rel_ret"}
    assert len(set(MEASURES.values())) == len(MEASURES)
    # ties (c before b), -1 and 0 grades; order c, b, a, e; relevant a (rank 3) and unretrieved d
    run = {"1": {"a": 1.0, "b": 2.0, "c": 2.0, "e": 0.5}}
    qrels = {"1": {"a": 2, "b": 0, "c": -1, "d": 1}}
    theirs = oracle_values(run, qrels, 1)
    assert theirs[("1", "mrr")] == pytest.approx(1 / 3)
    assert theirs[("1", "map")] == pytest.approx((1 / 3) / 2)
    assert theirs[("1", "ndcg(gain=linear)")] == pytest.approx((2 / math.log2(4)) / (2 + 1 / math.log2(3)))
    assert theirs[("1", "num_ret")] == 4
    assert_agree(run, qrels, 1)
