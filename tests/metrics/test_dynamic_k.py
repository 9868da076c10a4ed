"""Dynamic-K metrics (contract §4), query counts (§7.1) and the γ sweep (§8.2) against the
plain-Python reference of ``tests/dynamic_k_reference.py``: per system and slice (overall,
fold, criterion, state, label), on a hand-made table whose edge cases are listed below and on
the bundled sample; then invariances (row order, column names) and the input checks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import yaml
from dynamic_k_reference import mass_policy_k, reference_rows, sweep_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.cli import main

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"
PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
#: Slices in per_query names (the reference) and in evalframe's queries-table names.
SLICES = {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"], "state": ["state"],
          "has_evidence": ["has_evidence_gold"]}
ENGINE_SLICES = {name: ["label" if key == "has_evidence_gold" else key for key in keys] for name, keys in SLICES.items()}
ALL_QUERIES = ["selected_k", "n_extracted", "n_queries", "n_positive", "positive_rate"]
WITH_EVIDENCE = ["evidence_recall@selected_k", "evidence_precision@selected_k"]
STATS = ("value", "std", "median", "p25", "p75", "p90", "min", "max")

# --- a hand-made per_query table ---------------------------------------------------------------
#
# Two configs, 3 posts × 3 criteria in 2 folds. Edge cases:
# - criterion C3 has no positive (the evidence metrics have no value there: n = 0, a note);
# - config `b` has no POS state and a positive query in NEG with selected_k = 0 (an empty
#   extraction: precision 0.0, recall 0.0);
# - selected_k larger than the ranking (p2 C1 in `a`); an extraction that holds no gold;
# - several gold sentences, some never ranked high.

_ROWS = [
    # post, crit, fold, label, gold, ranked, scores, (k_a, state_a), (k_b, state_b)
    ("p1", "C1", 0, 1, ["s2", "s4"], ["s2", "s1", "s4", "s3"], [0.9, 0.5, 0.4, 0.1], (2, "POS"), (0, "NEG")),
    ("p1", "C2", 0, 0, [], ["s1", "s2", "s3", "s4"], [0.5, 0.5, 0.2, 0.0], (1, "NEG"), (1, "UNCERTAIN")),
    ("p1", "C3", 0, 0, [], ["s3", "s1", "s2", "s4"], [0.3, 0.2, 0.2, 0.1], (3, "UNCERTAIN"), (2, "NEG")),
    ("p2", "C1", 0, 1, ["t3"], ["t3", "t1", "t2"], [2.0, 1.0, 1.0], (5, "POS"), (1, "UNCERTAIN")),
    ("p2", "C2", 0, 1, ["t1", "t2"], ["t3", "t1", "t2"], [1.0, 0.5, 0.25], (1, "UNCERTAIN"), (2, "UNCERTAIN")),
    ("p2", "C3", 0, 0, [], ["t2", "t3", "t1"], [0.0, 0.0, 0.0], (0, "NEG"), (0, "NEG")),
    ("p3", "C1", 1, 0, [], ["u1", "u2"], [0.6, 0.4], (1, "NEG"), (2, "UNCERTAIN")),
    ("p3", "C2", 1, 1, ["u2"], ["u1", "u2"], [0.7, 0.3], (2, "POS"), (1, "UNCERTAIN")),
    ("p3", "C3", 1, 0, [], ["u2", "u1"], [0.8, 0.2], (1, "UNCERTAIN"), (1, "NEG")),
]


def handmade_rows(*, with_extracted: bool = True) -> list[dict]:
    rows = []
    for config in ("a", "b"):
        for post, criterion, fold, label, gold, ranked, scores, side_a, side_b in _ROWS:
            k, state = side_a if config == "a" else side_b
            row = {
                "post_id": post, "criterion_id": criterion, "fold": str(fold), "has_evidence_gold": str(label),
                "p_has_evidence": "0.5", "gold_sent_uids": json.dumps(gold), "ranked_sent_uids": ";".join(ranked),
                "ranked_scores": json.dumps(scores), "selected_k": str(k), "state": state, "config": config,
            }
            if with_extracted:
                row["extracted_sent_uids"] = json.dumps(ranked[:k])
            rows.append(row)
    return rows


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={key: pl.String for key in rows[0]})


def evaluate(data, **options) -> ef.Evaluation:
    tables = ef.read_per_query(data, **options) if not isinstance(data, ef.Tables) else data
    return ef.evaluate(tables, metrics={"all_queries": ALL_QUERIES, "has_evidence": WITH_EVIDENCE},
                       subsets={"has_evidence": "label = 1"}, slices=ENGINE_SLICES)


def engine_rows(summary: pl.DataFrame) -> dict[tuple, dict]:
    rows = {}
    for row in summary.iter_rows(named=True):
        keys = ENGINE_SLICES[row["grouping"]]
        rows[(row["grouping"], row["system"], *(str(row[key]) for key in keys), row["metric"])] = row
    return rows


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def differences(summary: pl.DataFrame, reference: dict) -> list[str]:
    ours = engine_rows(summary)
    problems = [f"missing: {key}" for key in reference if key not in ours]
    problems += [f"not in the reference: {key}" for key in ours if key not in reference]
    for key, expected in reference.items():
        row = ours.get(key)
        if row is None:
            continue
        for name in ("n", "n_skipped"):
            if row[name] != expected[name]:
                problems.append(f"{key}: {name} {row[name]} != {expected[name]}")
        for name in STATS:
            if not close(row[name], expected[name]):
                problems.append(f"{key}: {name} {row[name]!r} != {expected[name]!r}")
    return problems


@pytest.mark.parametrize("with_extracted", [True, False], ids=["extracted_list", "top_selected_k"])
def test_handmade_matches_the_reference(with_extracted):
    rows = handmade_rows(with_extracted=with_extracted)
    summary = evaluate(frame(rows)).summary
    problems = differences(summary, reference_rows(rows, SLICES))
    assert not problems, "\n".join(problems[:20])


def test_handmade_edge_cases_by_hand():
    rows = engine_rows(evaluate(frame(handmade_rows())).summary)
    # b, p1 C1: NEG with selected_k 0 -> empty extraction: recall 0, precision 0.0 (contract code)
    ev = evaluate(frame(handmade_rows()))
    values = ev.per_query.filter(pl.col("system") == "b", pl.col("query_id") == "p1|C1")
    assert dict(values.select("metric", "value").iter_rows()) == {
        "selected_k": 0.0, "n_extracted": 0.0, "n_queries": 1.0, "n_positive": 1.0, "positive_rate": 1.0,
        "evidence_recall@selected_k": 0.0, "evidence_precision@selected_k": 0.0}
    # a criterion without positives: no evidence value, a note; the counts say so
    c3 = rows["criterion", "a", "C3", "evidence_recall@selected_k"]
    assert (c3["n"], c3["n_skipped"], c3["value"]) == (0, 3, None) and c3["note"]
    assert rows["criterion", "a", "C3", "n_positive"]["value"] == 0.0
    assert rows["criterion", "a", "C3", "positive_rate"]["value"] == 0.0
    assert rows["criterion", "a", "C1", "n_queries"]["value"] == 3.0
    # config b has no POS state: no row for it (slices come from the data)
    assert ("state", "b", "POS", "selected_k") not in rows
    # a, p2 C1: selected_k 5 beyond a 3-item ranking: K is 5, the whole ranking is extracted
    a = ev.per_query.filter(pl.col("system") == "a", pl.col("query_id") == "p2|C1")
    assert dict(a.select("metric", "value").iter_rows())["selected_k"] == 5.0
    assert dict(a.select("metric", "value").iter_rows())["n_extracted"] == 3.0
    # the §4.1 distribution: mean, median, p90, min, max of selected K over all 9 queries of a
    overall = rows["overall", "a", "selected_k"]
    ks = [2, 1, 3, 5, 1, 0, 1, 2, 1]
    assert overall["value"] == pytest.approx(sum(ks) / 9)
    assert (overall["min"], overall["max"], overall["median"]) == (0.0, 5.0, 1.0)
    assert overall["p90"] == pytest.approx(3.4)  # sorted 0,1,1,1,1,2,2,3,5: position 7.2


def test_names_keep_fixed_and_dynamic_k_apart():
    assert ef.resolve_metric("evidence_recall@selected_k").name == "evidence_recall@selected_k"
    with pytest.raises(ef.ConfigError, match="selected_k"):
        ef.resolve_metric("evidence_recall@10")
    with pytest.raises(ef.ConfigError, match="needs a cutoff"):
        ef.resolve_metric("evidence_precision")
    ev = ef.evaluate(ef.read_per_query(frame(handmade_rows())), metrics=["recall@2", "evidence_recall@selected_k"])
    assert set(ev.summary.get_column("metric")) == {"recall@2", "evidence_recall@selected_k"}


def test_a_metric_without_extraction_columns_is_a_config_error():
    rows = [{k: v for k, v in row.items() if k not in ("selected_k", "extracted_sent_uids")} for row in handmade_rows()]
    with pytest.raises(ef.ConfigError, match="selected_k"):
        evaluate(frame(rows))


def test_a_long_ranking_with_an_extracted_flag():
    """Tables built by hand: the ranking's `extracted` rows are the extracted set."""
    run = pl.DataFrame({
        "system": "s", "query_id": ["q1", "q1", "q1", "q2", "q2"], "doc_id": ["a", "b", "c", "d", "e"],
        "rank": [1, 2, 3, 1, 2], "extracted": [True, False, True, False, False],
    })
    qrels = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["b", "c", "e"], "relevance": [1, 1, 1]})
    queries = pl.DataFrame({"system": ["s", "s"], "query_id": ["q1", "q2"]})
    ev = ef.evaluate(run, qrels, ["selected_k", "evidence_recall@selected_k", "evidence_precision@selected_k"],
                     queries=queries)
    values = {(r["query_id"], r["metric"]): r["value"] for r in ev.per_query.iter_rows(named=True)}
    assert values == {("q1", "selected_k"): 2.0, ("q2", "selected_k"): 0.0,
                      ("q1", "evidence_recall@selected_k"): 0.5, ("q2", "evidence_recall@selected_k"): 0.0,
                      ("q1", "evidence_precision@selected_k"): 0.5, ("q2", "evidence_precision@selected_k"): 0.0}


def test_extracted_outside_candidates_allowed_counts_them():
    rows = handmade_rows()
    rows[0]["extracted_sent_uids"] = json.dumps(["s2", "s4", "s9"])  # s9 is not ranked; s4 is gold
    with pytest.raises(ef.InputError, match="not among the query's candidates"):
        ef.read_per_query(frame(rows))
    ev = evaluate(frame(rows), extracted_outside_candidates="allow")
    values = ev.per_query.filter(pl.col("system") == "a", pl.col("query_id") == "p1|C1")
    got = dict(values.select("metric", "value").iter_rows())
    assert got["n_extracted"] == 3.0 and got["evidence_recall@selected_k"] == 1.0
    assert got["evidence_precision@selected_k"] == pytest.approx(2 / 3)
    assert not differences(ev.summary, reference_rows(rows, SLICES))


# --- the bundled sample ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_rows() -> list[dict]:
    return pl.read_csv(SAMPLE, infer_schema=False).to_dicts()


def test_sample_matches_the_reference(sample_rows):
    summary = evaluate(SAMPLE).summary
    problems = differences(summary, reference_rows(sample_rows, SLICES))
    assert not problems, "\n".join(problems[:20])


@pytest.fixture(scope="module")
def bundled() -> ef.Evaluation:
    # its tests read values, tables and run.json, no intervals: no bootstrap
    return ef.run_pipeline(PIPELINE, bootstrap=False)


def test_bundled_pipeline_has_the_breakdowns_and_the_sweep(bundled):
    ev = bundled
    summary = ev.summary
    for grouping in ("state", "has_evidence"):
        assert summary.filter(grouping=grouping, metric="selected_k").height > 0
    full = summary.filter(grouping="state", system="full_pipeline", metric="selected_k")
    assert sorted(full.get_column("state")) == ["NEG", "POS", "UNCERTAIN"]
    assert full.filter(state="NEG").get_column("max").item() == 0.0  # the clinical gate skips NEG
    sweep = ev.tables["dynamic_k_sweep"]
    assert sweep.get_column("gamma").unique().sort().to_list() == [0.7, 0.8, 0.9, 0.95]
    assert set(sweep.get_column("grouping")) == {"overall", "fold"}


# --- the γ sweep -------------------------------------------------------------------------------

SWEEP_STATS = ("n_queries", "mean_k", "n_with_evidence", "evidence_recall", "evidence_precision",
               "sentences_extracted", "sentences_per_1000_queries")


def sweep_differences(table: pl.DataFrame, reference: dict, slices: dict) -> list[str]:
    ours = {}
    for row in table.iter_rows(named=True):
        keys = ["label" if k == "has_evidence_gold" else k for k in slices[row["grouping"]]]
        ours[(row["gamma"], row["grouping"], row["system"], *(str(row[k]) for k in keys))] = row
    problems = [f"missing: {key}" for key in reference if key not in ours]
    problems += [f"not in the reference: {key}" for key in ours if key not in reference]
    for key, expected in reference.items():
        if key in ours:
            problems += [f"{key}: {name} {ours[key][name]!r} != {expected[name]!r}"
                         for name in SWEEP_STATS if not close(ours[key][name], expected[name])]
    return problems


@pytest.mark.parametrize("normalize", [None, "softmax"])
def test_sweep_matches_the_reference(normalize):
    rows = handmade_rows()
    gammas, slices = [0.5, 0.7, 0.9, 1.0], {"overall": [], "fold": ["fold"], "state": ["state"]}
    table = ef.dynamic_k_sweep(ef.read_per_query(frame(rows)), gammas=gammas, k_min=1, k_max=3, normalize=normalize,
                               slices={name: ENGINE_SLICES.get(name, keys) for name, keys in slices.items()})
    reference = sweep_rows(rows, gammas, k_min=1, k_max=3, normalize=normalize, slices=slices)
    problems = sweep_differences(table, reference, slices)
    assert not problems, "\n".join(problems[:20])


def test_sweep_on_the_sample_matches_the_reference(sample_rows):
    slices = {"overall": [], "fold": ["fold"]}
    table = ef.dynamic_k_sweep(ef.read_per_query(SAMPLE))
    reference = sweep_rows(sample_rows, [0.7, 0.8, 0.9, 0.95], k_min=1, k_max=20, slices=slices)
    problems = sweep_differences(table, reference, slices)
    assert not problems, "\n".join(problems[:20])


def test_mass_policy_by_hand():
    # scores 0.5, 0.3, 0.2: γ 0.5 → 1; γ 0.8 → 2 (0.8 ≥ 0.8); γ 0.81 → 3
    assert [mass_policy_k([0.5, 0.3, 0.2], g, 0, 10, None) for g in (0.5, 0.8, 0.81)] == [1, 2, 3]
    rows = handmade_rows()
    table = ef.dynamic_k_sweep(ef.read_per_query(frame(rows)), gammas=[0.5], k_min=0, k_max=10, slices={"overall": []})
    # a, γ·total per query: 0.95 → 2 (0.9 < 0.95), 0.6 → 2, 0.4 → 2, 2.0 → 1, 0.875 → 1,
    # 0 (all scores 0) → 1, 0.5 → 1, 0.5 → 1, 0.5 → 1: mean 12/9
    assert table.filter(system="a").get_column("mean_k").item() == pytest.approx(12 / 9)


def test_sweep_parameters_and_negative_scores_are_config_errors():
    tables = ef.read_per_query(frame(handmade_rows()))
    with pytest.raises(ef.ConfigError, match=r"gammas\[0\]"):
        ef.dynamic_k_sweep(tables, gammas=[1.5])
    with pytest.raises(ef.ConfigError, match="k_min"):
        ef.dynamic_k_sweep(tables, k_min=5, k_max=2)
    rows = handmade_rows()
    for row in rows:
        row["ranked_scores"] = json.dumps([s - 1.0 for s in json.loads(row["ranked_scores"])])
    negative = ef.read_per_query(frame(rows))
    with pytest.raises(ef.ConfigError, match="normalize: softmax"):
        ef.dynamic_k_sweep(negative)
    shifted = ef.dynamic_k_sweep(negative, normalize="softmax")  # softmax ignores a shift
    assert shifted.equals(ef.dynamic_k_sweep(tables, normalize="softmax"))


def test_sweep_block_is_checked_with_key_paths(tmp_path):
    spec = {"version": 1, "metrics": [{"names": ["selected_k"]}], "slices": {"overall": []},
            "dynamic_k_sweep": {"gammas": [0.5, 2], "k_min": 3, "k_max": 1, "normalize": "l1", "slices": ["folds"]}}
    with pytest.raises(ef.ConfigError) as caught:
        ef.Pipeline.from_mapping(spec)
    message = str(caught.value)
    assert "dynamic_k_sweep.normalize" in message and "dynamic_k_sweep.slices[0]" in message


# --- invariances (hypothesis) ------------------------------------------------------------------


@st.composite
def per_query_rows(draw) -> list[dict]:
    n_posts = draw(st.integers(1, 4))
    criteria = [f"A.{i}" for i in range(1, draw(st.integers(1, 3)) + 1)]
    configs = draw(st.sampled_from([["solo"], ["base", "cand"]]))
    rows = []
    for post in range(n_posts):
        sentences = [f"p{post}_s{i}" for i in range(1, draw(st.integers(1, 6)) + 1)]
        for criterion in criteria:
            label = draw(st.integers(0, 1))
            gold = draw(st.lists(st.sampled_from(sentences), min_size=1, unique=True)) if label else []
            for config in configs:
                ranked = draw(st.permutations(sentences))
                scores = sorted(draw(st.lists(st.floats(0, 5, allow_nan=False), min_size=len(ranked),
                                              max_size=len(ranked))), reverse=True)
                k = draw(st.integers(0, len(ranked) + 2))
                rows.append({
                    "post_id": f"p{post}", "criterion_id": criterion, "fold": str(post % 2),
                    "has_evidence_gold": str(label), "p_has_evidence": "0.5", "gold_sent_uids": json.dumps(gold),
                    "ranked_sent_uids": json.dumps(list(ranked)), "ranked_scores": json.dumps(scores),
                    "selected_k": str(k), "extracted_sent_uids": json.dumps(list(ranked[:k])),
                    "state": draw(st.sampled_from(["NEG", "UNCERTAIN", "POS"])), "config": config,
                })
    return rows


SORT = ["grouping", "system", "fold", "criterion_id", "state", "label", "metric"]


@settings(max_examples=15, deadline=None)
@given(rows=per_query_rows(), seed=st.randoms(use_true_random=False))
def test_row_order_and_column_names_change_nothing(rows, seed):
    baseline = evaluate(frame(rows)).summary.sort(SORT, nulls_last=True)
    assert not differences(baseline, reference_rows(rows, SLICES))
    shuffled = list(rows)
    seed.shuffle(shuffled)
    renames = {"selected_k": "k_chosen", "extracted_sent_uids": "picked", "ranked_scores": "scores",
               "state": "gate_state", "config": "system_name"}
    renamed = frame(shuffled).rename(renames)
    other = evaluate(renamed, columns={name: mine for name, mine in renames.items()}).summary
    assert other.sort(SORT, nulls_last=True).equals(baseline)
    sweep = ef.dynamic_k_sweep(ef.read_per_query(frame(rows)), gammas=[0.8], k_max=3)
    sweep_renamed = ef.dynamic_k_sweep(ef.read_per_query(renamed, columns=renames), gammas=[0.8], k_max=3)
    assert sweep_renamed.sort("grouping", "system", "fold").equals(sweep.sort("grouping", "system", "fold"))


# --- bad values: exit 2, nothing written -------------------------------------------------------

HEADER = ("post_id,criterion_id,fold,has_evidence_gold,p_has_evidence,gold_sent_uids,ranked_sent_uids,"
          "ranked_scores,selected_k,extracted_sent_uids,state,config")
GOOD = (
    'a,X,0,1,0.9,a1,a2;a1,0.9;0.1,1,a2,POS,s1',
    'a,Y,0,0,0.2,,a1;a2,"[0.5, 0.5]",0,,NEG,s1',
    'b,X,1,1,0.6,b2,b1;b2,0.7;0.2,2,b1;b2,UNCERTAIN,s1',
)
BAD_VALUES = {
    "state_outside_three": ('a,Y,0,0,0.2,,a1;a2,"[0.5, 0.5]",0,,MAYBE,s1', "state", "MAYBE"),
    "negative_selected_k": ('a,Y,0,0,0.2,,a1;a2,"[0.5, 0.5]",-1,,NEG,s1', "selected_k", "-1"),
    "fractional_selected_k": ('a,Y,0,0,0.2,,a1;a2,"[0.5, 0.5]",1.5,,NEG,s1', "selected_k", "1.5"),
    "scores_of_another_length": ('a,Y,0,0,0.2,,a1;a2,"[0.5]",0,,NEG,s1', "ranked_scores", "[0.5]"),
    "scores_increasing": ('a,Y,0,0,0.2,,a1;a2,"[0.1, 0.5]",0,,NEG,s1', "ranked_scores", "[0.1, 0.5]"),
    "scores_not_numbers": ('a,Y,0,0,0.2,,a1;a2,0.5;high,0,,NEG,s1', "ranked_scores", "0.5;high"),
    "extracted_outside_candidates": ('a,Y,0,0,0.2,,a1;a2,"[0.5, 0.5]",1,zz,NEG,s1', "extracted_sent_uids", "zz"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_values_exit_2_naming_line_column_value(case, tmp_path, capsys):
    line, column, value = BAD_VALUES[case]
    path = tmp_path / "bad.csv"
    path.write_text("\n".join([HEADER, GOOD[0], line, GOOD[2]]) + "\n")
    out = tmp_path / "out"
    assert main(["run", str(PIPELINE), "--input", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}" in err and "line 3" in err and f"column `{column}`" in err and value in err, err
    assert not out.exists()


def _without_sample_stages(text: str) -> str:
    """The bundled pipeline without the blocks that name the sample's configs and counts
    (ablation order, declared expectations) or need several folds (tuning)."""
    spec = yaml.safe_load(text)
    for key in ("ablation", "tuning", "checks"):
        spec.pop(key)
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


def test_good_file_runs_and_allow_accepts_outside_candidates(tmp_path, capsys):
    path = tmp_path / "good.csv"
    path.write_text("\n".join([HEADER, *GOOD]) + "\n")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(_without_sample_stages(PIPELINE.read_text()))
    assert main(["run", str(pipeline), "--input", str(path), "--out", str(tmp_path / "ok")]) == 0
    assert (tmp_path / "ok" / "dynamic_k_sweep.csv").is_file()
    path.write_text("\n".join([HEADER, GOOD[0], BAD_VALUES["extracted_outside_candidates"][0], GOOD[2]]) + "\n")
    allowing = tmp_path / "allow.yaml"
    allowing.write_text(pipeline.read_text().replace("extracted_outside_candidates: error",
                                                     "extracted_outside_candidates: allow"))
    # every output but the plots and report.html, which draws them (the run above draws them on a file like this one)
    outputs = [name for name in yaml.safe_load(allowing.read_text())["outputs"] if name not in ("plots", "report.html")]
    assert main(["run", str(allowing), "--input", str(path), "--out", str(tmp_path / "allowed"),
                 "--outputs", ",".join(outputs)]) == 0
    assert {p.name for p in (tmp_path / "allowed").iterdir()} >= set(outputs)


def test_run_json_records_the_sweep_parameters(bundled):
    assert bundled.info["analyses"] == {"dynamic_k_sweep": {
        "gammas": [0.7, 0.8, 0.9, 0.95], "k_min": 1, "k_max": 20, "normalize": "none", "slices": ["overall", "fold"]}}


def test_ranked_scores_spellings_and_list_columns_read_alike(tmp_path):
    rows = handmade_rows()
    as_text = ef.read_per_query(frame(rows))
    semicolons = [{**row, "ranked_scores": ";".join(str(x) for x in json.loads(row["ranked_scores"]))} for row in rows]
    assert ef.read_per_query(frame(semicolons)).ranking.equals(as_text.ranking)
    lists = frame(rows).with_columns(pl.col("ranked_scores").str.json_decode(pl.List(pl.Float64)))
    path = tmp_path / "per_query.parquet"
    lists.write_parquet(path)
    from_parquet = ef.read_per_query(path)
    assert from_parquet.ranking.equals(as_text.ranking)
    assert as_text.ranking.columns == ["system", "query_id", "doc_id", "score", "rank"]
    first = as_text.ranking.filter(pl.col("query_id") == "p1|C1", pl.col("system") == "a")
    assert first.select("doc_id", "score", "rank").rows() == [("s2", 0.9, 1), ("s1", 0.5, 2), ("s4", 0.4, 3), ("s3", 0.1, 4)]


def test_one_engine_pass_equals_each_gamma_evaluated_on_its_own():
    """The sweep evaluates every γ in one pass (systems renamed per γ); each γ's rows are those
    of γ's own evaluation, in its order, whatever the system names (a prefix of another, numbers)."""
    from dataclasses import replace

    from evalframe.analyses.dynamic_k_sweep import SWEEP_METRICS, _sweep_rows
    from evalframe.analyses.dynamic_k_sweep import mass_policy_k as policy_of
    from evalframe.engine.extraction import EXTRACTION_COLUMNS, top_k_counts

    names = {"a": "cfg 10", "b": "cfg 2"}
    rows = [row | {"config": names[row["config"]]} for row in handmade_rows()]
    rows += [row | {"config": "cfg"} for row in handmade_rows() if row["config"] == "a"]
    tables = ef.read_per_query(frame(rows))
    gammas, slices = [0.5, 0.9, 1.0], {"overall": (), "fold": ("fold",), "state": ("state",)}
    table = ef.dynamic_k_sweep(tables, gammas=gammas, k_min=0, k_max=3, slices=slices)

    policy = policy_of(tables.ranking, gammas, k_min=0, k_max=3)
    expected = []
    for i, gamma in enumerate(gammas):
        queries = tables.queries.drop("selected_k", *EXTRACTION_COLUMNS, strict=False).join(
            policy.select("system", "query_id", pl.col(f"k_{i}").alias("selected_k")), on=["system", "query_id"],
            how="left", maintain_order="left").with_columns(pl.col("selected_k").fill_null(0))
        counts = top_k_counts(tables.ranking, tables.judgments, queries).rename(
            {f"{name}__selected_k": name for name in EXTRACTION_COLUMNS})
        queries = queries.join(counts, on=["system", "query_id"], how="left", maintain_order="left")
        own = ef.evaluate(replace(tables, queries=queries), metrics=list(SWEEP_METRICS), slices=slices)
        expected.append(_sweep_rows(own.summary, gamma, ["fold", "state"]))
    assert table.equals(pl.concat(expected, how="vertical_relaxed"))
    assert table.get_column("system").unique(maintain_order=True).to_list() == ["cfg", "cfg 2", "cfg 10"]


def test_mass_policy_of_a_long_ranking_in_any_row_order():
    """Rows in any order (sorted by query and rank first) give the K of the rows in rank order."""
    from evalframe.analyses.dynamic_k_sweep import mass_policy_k as policy_of

    ranking = ef.read_per_query(frame(handmade_rows())).ranking
    key = ["system", "query_id"]
    in_order = policy_of(ranking, [0.5, 0.8], k_min=1, k_max=3, in_rank_order=True).sort(key)
    shuffled = ranking.sample(fraction=1.0, shuffle=True, seed=7)
    assert policy_of(shuffled, [0.5, 0.8], k_min=1, k_max=3).sort(key).equals(in_order)
