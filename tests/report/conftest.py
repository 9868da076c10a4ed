"""A small evaluation of the bundled pipeline (the first 120 posts of the sample) shared by the
report tests, and hand-made variants of its summary with CI columns, a null value and further
result tables (the shapes that the bootstrap, comparison and checks stages add)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
import yaml

import evalframe as ef

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"


@pytest.fixture(scope="session")
def small_input(tmp_path_factory) -> Path:
    sample = pl.read_csv(SAMPLE, infer_schema_length=0)
    posts = sample.get_column("post_id").unique(maintain_order=True).head(120)
    path = tmp_path_factory.mktemp("report_input") / "per_query.csv"
    sample.filter(pl.col("post_id").is_in(posts.implode())).write_csv(path)
    return path


#: The metrics the report tests compute (a part of the bundled pipeline's, to keep them quick):
#: every kind of number (rates, scores, counts), the targets, the per-post unit.
METRICS = {
    "all_queries": ["auroc", "auprc", "tpr@fpr=0.01", "tp", "fp", "sensitivity", "precision", "mcc", "brier", "ece",
                    "exact_match", "micro_f1"],
    "has_evidence": ["recall@10", "ndcg@10", "mrr"],
}


@pytest.fixture(scope="session")
def small_pipeline(tmp_path_factory) -> Path:
    """The bundled pipeline with fewer metrics (same subsets, slices, units, targets)."""
    spec = yaml.safe_load(PIPELINE.read_text())
    groups = {}
    for group in spec["metrics"]:
        names = [n for n in group["names"] if n in METRICS[group["subset"]]]
        if names:
            groups.setdefault(group["subset"], []).extend(names)
    spec["metrics"] = [{"subset": subset, "names": names} for subset, names in groups.items()]
    path = tmp_path_factory.mktemp("report_pipeline") / "evidence_contract.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
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
