"""The evidence-contract pipeline against an independent reference (``pipeline_reference.py``).

Every metric of ``pipelines/evidence_contract.yaml`` is recomputed with scikit-learn, numpy and
the contract's own Python snippets, per system and slice (overall, fold, criterion, and the
fold × criterion cells, some of which have no positive), and compared with evalframe's
``summary``: counts exactly, values to 1e-9, undefined values null with a note. Then the
invariances: row order, column names (through the input mapping) and list spelling (JSON or
``a;b``) change nothing.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import polars as pl
import pytest
import yaml
from built_once import build_once
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from pipeline_reference import (
    ALL_SLICES,
    CLASSIFICATION_METRICS,
    RANKING_METRICS,
    compare_with_summary,
    confusion_values,
    load_queries,
    reference_summary,
    sklearn_confusion_values,
    summary_rows,
)

import evalframe as ef

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACT_PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"
HAS_EVIDENCE = "queries with has_evidence_gold = 1"
OUTSIDE_HAS_EVIDENCE = f"outside subset: {HAS_EVIDENCE}"


#: Metrics and slices of the bundled pipeline that this file's reference does not cover: the
#: three-state gate (its own plain-Python reference is in tests/metrics/test_gate_metrics.py), the
#: dynamic-K metrics and query counts (contract §4, §7.1) with their state / label slices and the
#: γ sweep (tests/metrics/test_dynamic_k.py), and the stages after the engine (tests/analyses,
#: tests/checks).
ELSEWHERE_METRICS = {"selected_k", "n_extracted", "n_queries", "n_positive", "positive_rate",
                     "evidence_recall@selected_k", "evidence_precision@selected_k",
                     "neg_rate", "uncertain_rate", "pos_rate", "alert_rate_per_1000", "screening_sensitivity",
                     "screening_fn_per_1000", "alert_precision"}
REFERENCE_SLICES = ("overall", "fold", "criterion")
AFTER_ENGINE = ("dynamic_k_sweep", "ablation", "tuning", "checks")


def contract_spec(**changes) -> dict:
    """The bundled pipeline's mapping restricted to what the reference covers (contract §2, §3,
    §6; slices overall, fold, criterion), with the fold × criterion cells added as a slice."""
    spec = yaml.safe_load(CONTRACT_PIPELINE.read_text())
    spec["metrics"] = [group for group in spec["metrics"] if not set(group["names"]) & ELSEWHERE_METRICS]
    slices = {name: keys for name, keys in spec["slices"].items() if name in REFERENCE_SLICES}
    spec["slices"] = {**slices, "fold_x_criterion": ["fold", "criterion_id"]}
    for key in AFTER_ENGINE:
        spec.pop(key, None)
    spec.update(changes)
    return spec


def assert_no_differences(problems: list[str]) -> None:
    assert not problems, f"{len(problems)} differences, first ones:\n" + "\n".join(problems[:25])


# --- a hand-made per_query table ---------------------------------------------------------------
#
# 6 posts × 3 criteria, folds {p1, p2} → 0, {p3, p4} → 1, {p5, p6} → 2, two configs. Built so
# that every undefined case and edge occurs:
# - criterion C3 has no positive (AUROC, TPR@FPR, sensitivity, … and every ranking metric are
#   undefined there); the cells fold 2 × C1 and fold 0 × C3 have no positive either;
# - config `b` predicts nothing positive in fold 2 (precision, f1, mcc undefined);
# - ties of probabilities across labels (a: 0.3 × 5, 0.7 × 3), probabilities on the threshold
#   (0.5) and on ECE bin edges (0.0, 0.1, 0.3, 0.7, 1.0);
# - rankings shorter than K, a ranking that misses the gold sentence (b, p3 C2), several golds.

_HANDMADE = [
    # post, criterion, fold, label, gold, (prob a, ranking a), (prob b, ranking b)
    ("p1", "C1", 0, 1, ["p1_s2", "p1_s4"], (0.9, "p1_s2 p1_s1 p1_s4 p1_s3 p1_s5"),
     (0.5, "p1_s1 p1_s3 p1_s5 p1_s2 p1_s4")),
    ("p1", "C2", 0, 0, [], (0.1, "p1_s1 p1_s2 p1_s3 p1_s4 p1_s5"), (0.45, "p1_s5 p1_s4 p1_s3 p1_s2 p1_s1")),
    ("p1", "C3", 0, 0, [], (0.5, "p1_s3 p1_s1 p1_s2 p1_s4 p1_s5"), (0.3, "p1_s1 p1_s2 p1_s3 p1_s4 p1_s5")),
    ("p2", "C1", 0, 0, [], (0.5, "p2_s1 p2_s2 p2_s3"), (0.2, "p2_s3 p2_s2 p2_s1")),
    ("p2", "C2", 0, 1, ["p2_s3"], (0.7, "p2_s3 p2_s1 p2_s2"), (0.3, "p2_s1 p2_s2 p2_s3")),
    ("p2", "C3", 0, 0, [], (0.0, "p2_s2 p2_s1 p2_s3"), (0.1, "p2_s1 p2_s3 p2_s2")),
    ("p3", "C1", 1, 1, ["p3_s1", "p3_s5", "p3_s8"], (0.3, "p3_s5 p3_s2 p3_s8 p3_s3 p3_s4 p3_s6 p3_s7 p3_s1"),
     (0.7, "p3_s2 p3_s3 p3_s4 p3_s6 p3_s7 p3_s1 p3_s5 p3_s8")),
    ("p3", "C2", 1, 1, ["p3_s6"], (0.7, "p3_s1 p3_s2 p3_s3 p3_s4 p3_s5 p3_s7 p3_s8 p3_s6"), (0.7, "p3_s1 p3_s2 p3_s3")),
    ("p3", "C3", 1, 0, [], (0.3, "p3_s8 p3_s7 p3_s6 p3_s5 p3_s4 p3_s3 p3_s2 p3_s1"), (1.0, "p3_s1 p3_s2")),
    ("p4", "C1", 1, 0, [], (0.25, "p4_s1 p4_s2"), (0.05, "p4_s2 p4_s1")),
    ("p4", "C2", 1, 1, ["p4_s2"], (1.0, "p4_s1 p4_s2"), (0.4, "p4_s2 p4_s1")),
    ("p4", "C3", 1, 0, [], (0.7, "p4_s2 p4_s1"), (0.2, "p4_s1 p4_s2")),
    ("p5", "C1", 2, 0, [], (0.6, "p5_s1 p5_s2 p5_s3 p5_s4 p5_s5 p5_s6"), (0.35, "p5_s6 p5_s5 p5_s4 p5_s3 p5_s2 p5_s1")),
    ("p5", "C2", 2, 0, [], (0.2, "p5_s2 p5_s1 p5_s3 p5_s4 p5_s5 p5_s6"), (0.3, "p5_s1 p5_s2 p5_s3 p5_s4 p5_s5 p5_s6")),
    ("p5", "C3", 2, 0, [], (0.95, "p5_s3 p5_s2 p5_s1 p5_s4 p5_s5 p5_s6"), (0.1, "p5_s1 p5_s2 p5_s3 p5_s4 p5_s5 p5_s6")),
    ("p6", "C1", 2, 0, [], (0.3, "p6_s1 p6_s2 p6_s3 p6_s4"), (0.3, "p6_s4 p6_s3 p6_s2 p6_s1")),
    ("p6", "C2", 2, 1, ["p6_s4", "p6_s1"], (0.3, "p6_s4 p6_s3 p6_s2 p6_s1"), (0.49, "p6_s3 p6_s2 p6_s1 p6_s4")),
    ("p6", "C3", 2, 0, [], (0.05, "p6_s1 p6_s2 p6_s3 p6_s4"), (0.3, "p6_s2 p6_s1 p6_s3 p6_s4")),
]


def handmade_frame() -> pl.DataFrame:
    rows = []
    for config in ("a", "b"):
        for post, criterion, fold, label, gold, side_a, side_b in _HANDMADE:
            prob, ranking = side_a if config == "a" else side_b
            rows.append({
                "post_id": post, "criterion_id": criterion, "fold": fold, "has_evidence_gold": label,
                "p_has_evidence": prob, "gold_sent_uids": json.dumps(gold),
                "ranked_sent_uids": ranking.replace(" ", ";"), "config": config,
            })
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def handmade():
    frame = handmade_frame()
    result = ef.Pipeline.from_mapping(contract_spec()).run(frame)
    return frame, result, reference_summary(frame.to_pandas(), ALL_SLICES)


def test_handmade_summary_matches_reference(handmade):
    _, result, reference = handmade
    assert_no_differences(compare_with_summary(result.summary, reference, check_notes=False))


def test_comparison_notices_a_changed_value_count_or_row(handmade):
    """The oracle can fail: a 1e-6 change, a miscount and a missing row are each reported."""
    _, result, reference = handmade
    is_target = (pl.col("grouping") == "fold") & (pl.col("fold") == 1) & (pl.col("system") == "a")
    tampered = result.summary.with_columns(
        value=pl.when(is_target & (pl.col("metric") == "ndcg@5")).then(pl.col("value") + 1e-6).otherwise("value"),
        n=pl.when(is_target & (pl.col("metric") == "auroc")).then(pl.col("n") + 1).otherwise("n"),
    ).filter(~(is_target & (pl.col("metric") == "ece")))
    problems = compare_with_summary(tampered, reference, check_notes=False)
    assert len(problems) == 3, problems
    assert any("1, None, 'ndcg@5'): value = " in p for p in problems)
    assert any("1, None, 'auroc'): n = 7, reference 6" in p for p in problems)
    assert any(p.startswith("missing from evalframe's summary") and "1, None, 'ece')" in p for p in problems)


def test_handmade_frame_has_the_intended_edge_cases(handmade):
    # Guards the fixture: the undefined cases below must really occur in the reference.
    _, _, reference = handmade
    assert reference["criterion", "a", None, "C3", "auroc"].value is None
    assert reference["criterion", "a", None, "C3", "recall@5"].n == 0
    assert reference["fold", "b", 2, None, "precision"].value is None
    assert reference["fold", "b", 2, None, "npv"].value is not None
    assert reference["fold_x_criterion", "a", 2, "C1", "sensitivity"].value is None
    assert reference["overall", "a", None, None, "f1"].value is not None


def test_handmade_set_metrics_without_a_value_are_null_with_a_note(handmade):
    _, result, reference = handmade
    rows = summary_rows(result.summary)
    undefined = [key for key, row in reference.items() if row.value is None and key[-1] not in RANKING_METRICS]
    assert len(undefined) > 20
    for key in undefined:
        assert rows[key]["value"] is None, key
        assert rows[key]["note"], key
    # The notes say why.
    assert rows["criterion", "a", None, "C3", "auroc"]["note"] == "only one class in the slice"
    assert "positive" in rows["criterion", "a", None, "C3", "sensitivity"]["note"]
    assert "predicted positive" in rows["fold", "b", 2, None, "precision"]["note"]


def test_ranking_slice_without_positive_is_null_with_a_note(handmade):
    """Criterion C3 has no query with evidence: n = 0, every query skipped, value null + why."""
    _, result, _ = handmade
    rows = summary_rows(result.summary)
    for metric in RANKING_METRICS:
        row = rows["criterion", "a", None, "C3", metric]
        assert (row["n"], row["n_skipped"], row["value"]) == (0, 6, None), metric
        assert row["note"], f"{metric}: a slice with n = 0 has a null value but no note saying why"


def test_reference_confusion_family_matches_sklearn(handmade):
    frame, _, _ = handmade
    queries = load_queries(frame.to_pandas())
    checked = 0
    for _, cell in queries.groupby(["system", "fold"]):
        y_true = cell["label"].to_numpy()
        y_pred = (cell["prob"].to_numpy() >= 0.5).astype(int)
        plain, sklearn_values = confusion_values(y_true, y_pred), sklearn_confusion_values(y_true, y_pred)
        for name, value in plain.items():
            if value is None:
                assert sklearn_values[name] is None
            else:
                assert sklearn_values[name] == pytest.approx(value, abs=1e-12), name
                checked += 1
    assert checked > 50


def test_ranking_values_by_hand(handmade):
    """A few per-query values worked out on paper, so that the reference itself is pinned."""
    _, result, _ = handmade
    per_query = result.per_query.filter(pl.col("system") == "a", pl.col("query_id") == "p1|C1")
    values = dict(per_query.select("metric", "value").iter_rows())
    # ranking p1_s2 p1_s1 p1_s4 p1_s3 p1_s5, gold {p1_s2, p1_s4}
    assert values["recall@1"] == 0.5 and values["precision@3"] == pytest.approx(2 / 3)
    assert values["map@3"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert values["ndcg@3"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert values["mrr"] == 1.0 and values["hit_rate@1"] == 1.0
    assert values["brier"] == pytest.approx(0.01)
    # b, p3 C2: the gold sentence is not ranked at all → 0, not skipped.
    missing = result.per_query.filter(pl.col("system") == "b", pl.col("query_id") == "p3|C2", pl.col("metric") == "mrr")
    assert missing.select("value", "skip_reason").row(0) == (0.0, None)


def test_across_folds_rows_are_mean_and_std_of_fold_values(handmade):
    _, result, reference = handmade
    summary = result.summary
    folds = summary.filter(pl.col("grouping") == "fold", pl.col("system") == "a", pl.col("metric") == "auroc")
    across = summary.filter(pl.col("grouping") == "across_folds", pl.col("system") == "a", pl.col("metric") == "auroc")
    values = folds.get_column("value").to_numpy()
    assert across.height == 1
    assert across.get_column("value").item() == pytest.approx(np.mean(values), abs=1e-12)
    assert across.get_column("std").item() == pytest.approx(np.std(values, ddof=1), abs=1e-12)
    assert across.get_column("n").item() == 3
    assert across.select(pl.col("fold").is_null() & pl.col("criterion_id").is_null()).item()
    # A metric undefined in some fold: n counts the folds with a value, n_skipped the others.
    precision_b = reference["across_folds", "b", None, None, "precision"]
    assert (precision_b.n, precision_b.n_skipped) == (2, 1)
    row = summary_rows(summary)["across_folds", "b", None, None, "precision"]
    assert (row["n"], row["n_skipped"]) == (2, 1)
    assert row["note"]


def test_subset_column_and_skip_reasons(handmade):
    _, result, _ = handmade
    subsets = dict(result.summary.select("metric", "subset").unique().iter_rows())
    assert all(subsets[m] == "all queries" for m in CLASSIFICATION_METRICS)
    assert all(subsets[m] == HAS_EVIDENCE for m in RANKING_METRICS)
    labels = result.inputs.queries.select("system", "query_id", "label")
    ranking = result.per_query.filter(pl.col("metric").is_in(RANKING_METRICS)).join(labels, on=["system", "query_id"])
    # The per-query table holds the subset's queries only; the others are counted, not listed.
    assert ranking.get_column("label").unique().to_list() == [1]
    n_positive = labels.filter(pl.col("label") == 1).height
    assert ranking.height == n_positive * len(RANKING_METRICS)
    assert ranking.get_column("value").null_count() == 0
    assert ranking.get_column("skip_reason").null_count() == ranking.height
    outside = labels.filter(pl.col("label") == 0).group_by("system").len().sort("system").rows()
    for system, count in outside:
        for metric in RANKING_METRICS:
            assert result.info["skipped_units"].count(
                {"system": system, "unit": "query", "metric": metric, "reason": OUTSIDE_HAS_EVIDENCE, "count": count}) == 1
        overall = result.summary.filter(grouping="overall", system=system, metric="mrr")
        assert overall.select("n_skipped").item() == count


# --- the bundled sample ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """The pipeline's result (its summary, per_query and info) and the reference on the bundled
    sample, once per test run; without the bootstrap (no check here reads an interval; the
    bundled runs in tests/cli and tests/docs keep it, and tests/engine/test_uncertainty holds
    values equal with and without it)."""
    def build(_folder):
        spec = contract_spec()
        del spec["bootstrap"]
        result = ef.Pipeline.from_mapping(spec).run(SAMPLE)
        kept = SimpleNamespace(summary=result.summary, per_query=result.per_query, info=result.info)
        return kept, reference_summary(SAMPLE, ALL_SLICES)

    return build_once(tmp_path_factory, "pipeline_sample_and_reference", build)


def test_reference_reproduces_the_samples_documented_figures(sample):
    """data_samples/README.md lists figures from its own script: pin the reference to them."""
    _, reference = sample
    documented = {
        "retriever_only": {"auroc": 0.8312, "ece": 0.0431, "recall@5": 0.4548, "ndcg@10": 0.4486},
        "plus_jina_reranker": {"auroc": 0.8553, "ece": 0.0358, "recall@5": 0.5529, "ndcg@10": 0.5239},
        "plus_p3_graph_reranker": {"auroc": 0.8674, "ece": 0.0316, "recall@5": 0.5780, "ndcg@10": 0.5638},
        "plus_p2_dynamic_k": {"auroc": 0.8674, "ece": 0.0316, "recall@5": 0.5780, "ndcg@10": 0.5638},
        "plus_p4_ne_gate": {"auroc": 0.9206, "ece": 0.0347, "recall@5": 0.5780, "ndcg@10": 0.5638},
        "full_pipeline": {"auroc": 0.9206, "ece": 0.0347, "recall@5": 0.5780, "ndcg@10": 0.5638},
    }
    for system, figures in documented.items():
        for metric, figure in figures.items():
            assert round(reference["overall", system, None, None, metric].value, 4) == figure, (system, metric)
        assert reference["overall", system, None, None, "recall@5"].n == 466


def test_sample_summary_matches_reference(sample):
    result, reference = sample
    assert_no_differences(compare_with_summary(result.summary, reference, check_notes=False))
    groupings = set(result.summary.get_column("grouping"))
    assert groupings == {"overall", "fold", "criterion", "fold_x_criterion", "across_folds"}


def test_sample_counts_per_slice(sample):
    result, _ = sample
    rows = summary_rows(result.summary)
    for system in ("full_pipeline", "retriever_only"):
        auroc, mrr = rows["overall", system, None, None, "auroc"], rows["overall", system, None, None, "mrr"]
        assert (auroc["n"], auroc["n_skipped"]) == (5000, 0)
        assert (mrr["n"], mrr["n_skipped"]) == (466, 4534)
        assert rows["criterion", system, None, "A.10", "ndcg@10"]["n"] == 8
        assert rows["across_folds", system, None, None, "auroc"]["n"] == 5


def test_sample_fold_2_criterion_a10_has_no_positive(sample):
    """The sample's rare criterion has no positive in fold 2: AUROC and sensitivity undefined."""
    result, reference = sample
    rows = summary_rows(result.summary)
    for system in ("full_pipeline", "retriever_only"):
        for metric in ("auroc", "auprc", "tpr@fpr=0.01", "sensitivity", "balanced_accuracy", "mcc"):
            key = ("fold_x_criterion", system, 2, "A.10", metric)
            assert reference[key].value is None
            assert rows[key]["value"] is None and rows[key]["note"], (key, rows[key])
        specificity = ("fold_x_criterion", system, 2, "A.10", "specificity")
        assert rows[specificity]["value"] == pytest.approx(reference[specificity].value, abs=1e-12)


def test_sample_ranking_cell_without_positive_is_null_with_a_note(sample):
    result, _ = sample
    rows = summary_rows(result.summary)
    for metric in ("recall@5", "ndcg@10", "mrr"):
        row = rows["fold_x_criterion", "full_pipeline", 2, "A.10", metric]
        assert (row["n"], row["n_skipped"], row["value"]) == (0, 100, None)  # fold 2 has 100 posts
        assert row["note"], f"{metric}: fold 2 × A.10 has n = 0 and a null value but no note saying why"


def test_sample_per_query_skip_reasons(sample):
    result, _ = sample
    skipped = (
        result.per_query.filter(pl.col("metric") == "ndcg@10")
        .group_by("system", "skip_reason").len()
        .sort("system", "skip_reason", nulls_last=True)
    )
    systems = sorted(set(result.summary.get_column("system")))
    assert len(systems) == 6
    assert skipped.rows() == [(system, None, 466) for system in systems]
    # Queries outside the subset have no per-query row; run.json counts them with their reason.
    outside = [entry for entry in result.info["skipped_units"] if entry["metric"] == "ndcg@10"]
    assert outside == [
        {"system": system, "unit": "query", "metric": "ndcg@10", "reason": OUTSIDE_HAS_EVIDENCE, "count": 4534}
        for system in systems
    ]


# --- building pipelines in Python, bad definitions ----------------------------------------------


def test_pipeline_from_mapping_in_python_runs(handmade):
    frame, _, reference = handmade
    pipeline = ef.Pipeline.from_mapping({
        "version": 1,
        "name": "mini",
        "subsets": {"with_evidence": {"description": "has evidence", "where": "label = 1"}},
        "metrics": [
            {"names": ["auroc", "precision", "ece"]},
            {"subset": "with_evidence", "names": ["ndcg@3", "mrr"]},
        ],
        "slices": {"overall": [], "fold": ["fold"]},
        "across_folds": "fold",
    })
    result = pipeline.run(frame)
    summary = result.summary
    assert set(summary.get_column("metric")) == {"auroc", "precision", "ece", "ndcg@3", "mrr"}
    assert set(summary.get_column("grouping")) == {"overall", "fold", "across_folds"}
    metrics = {"auroc", "precision", "ece", "ndcg@3", "mrr"}
    wanted = {key: row for key, row in reference.items()
              if key[0] in {"overall", "fold", "across_folds"} and key[-1] in metrics}
    assert_no_differences(compare_with_summary(summary, wanted))
    assert set(summary.filter(pl.col("metric") == "mrr").get_column("subset")) == {"has evidence"}


def _write_yaml(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


BAD_PIPELINES = {
    "unknown_key": (lambda spec: spec.update(metricz=spec["metrics"]), ["metricz"]),
    "unknown_metric": (lambda spec: spec["metrics"][1]["names"].append("ndgc@10"), ["ndgc", "did you mean", "`ndcg`"]),
    "unknown_subset": (
        lambda spec: spec["metrics"][0].update(subset="positives_only"), ["positives_only", "has_evidence"]
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_PIPELINES))
def test_bad_pipeline_yaml_is_a_config_error(case, tmp_path):
    spec = copy.deepcopy(contract_spec())
    change, expected = BAD_PIPELINES[case]
    change(spec)
    path = _write_yaml(tmp_path, spec)
    with pytest.raises(ef.ConfigError) as caught:
        ef.Pipeline.from_yaml(path)
    message = str(caught.value)
    for text in expected:
        assert text in message, message
    assert str(path) in message, f"the error should name the pipeline file: {message}"


def test_unparseable_subset_condition_is_a_config_error():
    # Found when the spec is read, before any input: the key path names the condition.
    with pytest.raises(ef.ConfigError, match=r"subsets\.odd\.where: subset `odd`: cannot parse"):
        ef.Pipeline.from_mapping({
            "version": 1, "subsets": {"odd": {"where": "label = = 1"}}, "metrics": [{"subset": "odd", "names": ["mrr"]}],
        })


# --- invariances (hypothesis) ------------------------------------------------------------------

PROPERTY_SPEC = {
    "version": 1,
    "name": "properties",
    "subsets": {"has_evidence": {"description": HAS_EVIDENCE, "where": "label = 1"}},
    "metrics": [
        {"names": ["auroc", "auprc", "tpr@fpr=0.1", "tp", "fn", "sensitivity", "precision", "f1", "mcc",
                   "brier", "ece"]},
        {"subset": "has_evidence", "names": ["recall@3", "precision@3", "hit_rate@1", "map@5", "ndcg@3", "mrr"]},
    ],
    "slices": {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]},
    "across_folds": "fold",
}
SORT_KEYS = ["grouping", "system", "fold", "criterion_id", "metric"]
PROBABILITIES = st.one_of(
    st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 1.0]),
    st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 6)),
)


@st.composite
def per_query_rows(draw) -> list[dict]:
    """A few posts × criteria in 2 folds, one or two configs; lists as Python lists."""
    n_posts = draw(st.integers(2, 4))
    criteria = [f"A.{i}" for i in range(1, draw(st.integers(1, 3)) + 1)]
    configs = draw(st.sampled_from([["solo"], ["base", "cand"]]))
    rows = []
    for post in range(n_posts):
        sentences = [f"p{post}_s{i}" for i in range(1, draw(st.integers(1, 6)) + 1)]
        for criterion in criteria:
            label = draw(st.integers(0, 1))
            gold = draw(st.lists(st.sampled_from(sentences), min_size=1, unique=True)) if label else []
            for config in configs:
                ranking = draw(st.permutations(sentences))
                ranking = ranking[: draw(st.integers(0, len(ranking)))]
                rows.append({
                    "post_id": f"p{post}", "criterion_id": criterion, "fold": post % 2, "has_evidence_gold": label,
                    "p_has_evidence": draw(PROBABILITIES), "gold_sent_uids": gold, "ranked_sent_uids": ranking,
                    "config": config,
                })
    return rows


def _as_json(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{**row, "gold_sent_uids": json.dumps(row["gold_sent_uids"]),
                          "ranked_sent_uids": json.dumps(row["ranked_sent_uids"])} for row in rows])


def _as_semicolons(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame([{**row, "gold_sent_uids": ";".join(row["gold_sent_uids"]),
                          "ranked_sent_uids": ";".join(row["ranked_sent_uids"])} for row in rows])


def _summary(source, columns: dict | None = None) -> pl.DataFrame:
    spec = dict(PROPERTY_SPEC, input={"columns": columns or {}})
    return ef.Pipeline.from_mapping(spec).run(source).summary.sort(SORT_KEYS, nulls_last=True)


def _assert_same_summary(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert_frame_equal(left, right, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=10)
@given(rows=per_query_rows(), seed=st.integers(0, 2**32 - 1))
def test_shuffling_rows_changes_nothing(rows, seed):
    frame = _as_json(rows)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    _assert_same_summary(_summary(frame), _summary(shuffled))


@settings(max_examples=8)
@given(rows=per_query_rows())
def test_renamed_columns_with_a_mapping_change_nothing(rows):
    mapping = {"p_has_evidence": "prob_x", "post_id": "pid", "has_evidence_gold": "gold flag",
               "gold_sent_uids": "gold"}
    frame = _as_json(rows)
    with tempfile.TemporaryDirectory() as folder:
        plain, renamed = Path(folder) / "plain.csv", Path(folder) / "renamed.csv"
        frame.write_csv(plain)
        user_frame = frame.rename(mapping)
        user_frame.select(reversed(user_frame.columns)).write_csv(renamed)  # renamed, columns reordered
        _assert_same_summary(_summary(plain), _summary(renamed, columns=mapping))


@settings(max_examples=8)
@given(rows=per_query_rows())
def test_json_and_semicolon_lists_give_the_same_result(rows):
    with tempfile.TemporaryDirectory() as folder:
        as_json, as_semicolons = Path(folder) / "json.csv", Path(folder) / "semicolons.csv"
        _as_json(rows).write_csv(as_json)
        _as_semicolons(rows).write_csv(as_semicolons)
        _assert_same_summary(_summary(as_json), _summary(as_semicolons))


@settings(max_examples=6)
@given(rows=per_query_rows())
def test_generated_tables_match_the_reference(rows):
    frame = _as_json(rows)
    summary = ef.Pipeline.from_mapping(PROPERTY_SPEC).run(frame).summary
    metrics = {name for group in PROPERTY_SPEC["metrics"] for name in group["names"]}
    reference = reference_summary(frame.to_pandas(), PROPERTY_SPEC["slices"])
    wanted = {key: row for key, row in reference.items() if key[-1] in metrics}
    assert_no_differences(compare_with_summary(summary, wanted, check_notes=False))


def test_reference_reads_lists_like_evalframe():
    frame = pd.DataFrame({
        "post_id": ["p"], "criterion_id": ["c"], "fold": ["0"], "has_evidence_gold": ["1"], "p_has_evidence": ["0.5"],
        "gold_sent_uids": ['["s1", 2]'], "ranked_sent_uids": [" s2 ; s1 ;"],
    })
    queries = load_queries(frame)
    assert queries.loc[0, "gold"] == ["s1", "2"] and queries.loc[0, "ranked"] == ["s2", "s1"]
    assert queries.loc[0, "system"] == "default"
