"""A small evaluation (the first 120 posts of the bundled sample, every system) shared by the
report tests, the same on two systems for the tests that draw every plot of a report, and hand-made variants of its summary with CI columns, a null value and further
result tables (the shapes that the bootstrap, comparison and checks stages add)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml

import evalframe as ef

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"


@pytest.fixture(scope="session")
def small_input(tmp_path_factory) -> Path:
    sample = pl.read_csv(SAMPLE, infer_schema_length=0)
    posts = sample.get_column("post_id").unique(maintain_order=True).head(120)
    path = tmp_path_factory.mktemp("report_input") / "per_query.csv"
    sample.filter(pl.col("post_id").is_in(posts.implode())).write_csv(path)
    return path


#: The pipeline of the report tests: the evidence contract's shape (subsets, post unit, fold and
#: criterion slices, across-fold rows) with a few metrics of every kind (rates, scores, counts,
#: per post), and targets of which one always holds and one never does. Self-contained, so the
#: tests do not move when the bundled pipeline grows.
SPEC = {
    "version": 1,
    "name": "report_test",
    "description": "Report tests: the evidence contract's shape, fewer metrics.",
    "input": {"format": "per_query"},
    "units": {"post": ["post_id"]},
    "subsets": {"all_queries": {"description": "all queries"},
                "has_evidence": {"description": "queries with has_evidence_gold = 1", "where": "label = 1"}},
    "metrics": [
        {"subset": "all_queries", "names": ["auroc", "auprc", "tpr@fpr=0.01", "tp", "fp", "sensitivity", "precision",
                                            "mcc", "brier", "ece"]},
        {"subset": "has_evidence", "names": ["recall@10", "ndcg@10", "mrr"]},
        {"subset": "all_queries", "names": ["exact_match", "micro_f1"]},
    ],
    "slices": {"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]},
    "across_folds": "fold",
    "targets": {"auroc": ">= 0.5", "brier": "< 0.0001", "ece": "< 0.05"},
}


@pytest.fixture(scope="session")
def small_pipeline(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report_pipeline") / "report_test.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def evaluation(small_pipeline, small_input):
    return ef.run_pipeline(str(small_pipeline), input=str(small_input))


def with_ci_and_extras(evaluation):
    """The evaluation with hand-made CI columns (value ± 0.01), mcc made null with a reason,
    and comparison and checks tables."""
    summary = evaluation.summary.with_columns(
        se=pl.col("value") * 0 + 0.005,
        ci_low=pl.col("value") - 0.01,
        ci_high=pl.col("value") + 0.01,
    ).with_columns(
        value=pl.when(pl.col("metric") == "mcc").then(None).otherwise(pl.col("value")),
        note=pl.when(pl.col("metric") == "mcc").then(pl.lit("no positive prediction")).otherwise(pl.col("note")),
    )
    comparison = pl.DataFrame({
        "metric": ["auroc", "ndcg@10"], "baseline": ["retriever_only"] * 2, "candidate": ["full_pipeline"] * 2,
        "delta": [0.08, 0.07], "ci_low": [0.05, 0.03], "ci_high": [0.11, 0.10], "p_value": [0.001, None],
    })
    checks = pl.DataFrame({"check": ["range auroc", "confusion total"], "passed": [True, False],
                           "detail": ["in [0, 1]", "tp + tn + fp + fn = 14769, expected 14770"]})
    return replace(evaluation, summary=summary).with_tables(comparison=comparison, checks=checks)


@pytest.fixture(scope="session")
def evaluation_with_ci(evaluation):
    return with_ci_and_extras(evaluation)


#: The systems of :func:`with_ci_and_extras`'s comparison table.
TWO_SYSTEMS = ["retriever_only", "full_pipeline"]


@pytest.fixture(scope="session")
def two_systems_evaluation(small_pipeline, small_input, tmp_path_factory):
    """:func:`evaluation` on the rows of :data:`TWO_SYSTEMS` only: for the tests that draw or
    write every plot of a report (byte-identical reruns, the self-contained page, the plot pool),
    whose checks hold for any number of systems; a third of the six systems' per-system plots."""
    rows = pl.read_csv(small_input, infer_schema_length=0).filter(pl.col("config").is_in(TWO_SYSTEMS))
    path = tmp_path_factory.mktemp("report_input_two_systems") / "per_query.csv"
    rows.write_csv(path)
    return ef.run_pipeline(str(small_pipeline), input=str(path))


@pytest.fixture(scope="session")
def two_systems_evaluation_with_ci(two_systems_evaluation):
    return with_ci_and_extras(two_systems_evaluation)
