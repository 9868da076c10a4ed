"""Consistency checks (contract §9, Appendix A): all pass on the sample; each fails when broken on purpose."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest
import yaml

import evalframe as ef
from evalframe.checks import failed, run_checks
from evalframe.checks.table import COLUMNS
from evalframe.metrics.base import QueryMetric, TargetCategory

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"
EXPECT = {"n_queries": 5000, "n_positive": 466, "posts_per_fold": [100, 100, 100, 100, 100]}


@pytest.fixture(scope="module")
def sample():
    from evalframe.pipeline.overrides import merge

    spec = yaml.safe_load(PIPELINE.read_text())
    spec = merge(spec, yaml.safe_load((REPO_ROOT / "data_samples" / "evidence_contract.sample.yaml").read_text()))  # the sample's pins
    spec["tuning"] = {**spec["tuning"], "grid": 0.05}  # a coarser grid keeps the fixture quick
    spec.pop("bootstrap")  # no check reads an interval; the bootstrap would triple the fixture's time
    return ef.Pipeline.from_mapping(spec).run(SAMPLE)


def statuses(checks: pl.DataFrame, name: str) -> set[str]:
    return set(checks.filter(pl.col("check") == name).get_column("status"))


def test_every_check_passes_on_the_sample(sample):
    checks = sample.checks
    assert checks.columns == list(COLUMNS)
    assert set(checks.get_column("status")) == {"pass", "not_applicable"}
    # Only a slice with one class has no sensitivity or specificity to check (has_evidence = 1 or 0).
    not_applicable = checks.filter(pl.col("status") == "not_applicable")
    assert set(not_applicable.get_column("grouping")) == {"has_evidence"}
    expected = {"value_in_range", "confusion_total", "confusion_positives", "confusion_negatives",
                "confusion_sensitivity", "confusion_specificity", "expect_n_queries", "expect_n_positive",
                "expect_posts_per_fold", "across_folds_matches_folds", "overall_matches_folds",
                "ablation_matches_summary", "duplicate_rows_agree", "ranking_denominator", "folds_disjoint",
                "tuning_without_leakage", "fixed_and_dynamic_k_apart"}
    assert set(checks.get_column("check")) == expected
    # Confusion invariants on every slice of every system: overall + 5 folds + 10 criteria + 2
    # has_evidence values for 6 systems, and the gate states each system has (5 × NEG/POS, 1 × 3 states).
    assert checks.filter(pl.col("check") == "confusion_total").height == 6 * (1 + 5 + 10 + 2) + (5 * 2 + 3)


def edited(ev, metric: str, grouping: str, value: float, **where) -> ef.Evaluation:
    """A hand-edited summary: ``metric``'s value in ``grouping`` (first system, or ``where``) set to ``value``."""
    system = where.pop("system", "full_pipeline")
    condition = (pl.col("metric") == metric) & (pl.col("grouping") == grouping) & (pl.col("system") == system)
    for key, wanted in where.items():
        condition = condition & (pl.col(key) == wanted)
    summary = ev.summary.with_columns(value=pl.when(condition).then(pl.lit(value)).otherwise(pl.col("value")))
    assert summary.filter(condition).height >= 1
    return replace(ev, summary=summary)


def fails(ev, name: str, **kwargs) -> pl.DataFrame:
    checks = run_checks(ev, **kwargs)
    bad = checks.filter((pl.col("check") == name) & (pl.col("status") == "fail"))
    assert bad.height >= 1, checks.filter(pl.col("check") == name)
    return bad


def test_a_rate_outside_0_1_fails(sample):
    bad = fails(edited(sample, "auroc", "overall", 1.2), "value_in_range")
    assert bad["system"].to_list() == ["full_pipeline"] and "auroc = 1.2" in bad["observed"].item()


def test_mcc_may_be_negative_but_not_below_minus_one(sample):
    assert statuses(run_checks(edited(sample, "mcc", "overall", -0.5)), "value_in_range") == {"pass"}
    fails(edited(sample, "mcc", "overall", -1.5), "value_in_range")


def test_per_1000_rates_have_their_own_range(sample):
    assert statuses(run_checks(edited(sample, "alert_rate_per_1000", "overall", 999.0)), "value_in_range") == {"pass"}
    fails(edited(sample, "alert_rate_per_1000", "overall", 1000.5), "value_in_range")


def test_a_confusion_count_that_does_not_add_up_fails(sample):
    ev = edited(sample, "tp", "fold", 1.0, fold=3)
    for name in ("confusion_total", "confusion_positives", "confusion_sensitivity"):
        bad = fails(ev, name)
        assert bad["fold"].to_list() == ["3"] and bad["grouping"].to_list() == ["fold"]


def test_a_sensitivity_that_is_not_tp_over_positives_fails(sample):
    bad = fails(edited(sample, "sensitivity", "criterion", 0.5, criterion_id="A.4"), "confusion_sensitivity")
    assert bad["criterion_id"].to_list() == ["A.4"]
    fails(edited(sample, "specificity", "overall", 0.5), "confusion_specificity")


def test_declared_expectations(sample):
    bad = fails(sample, "expect_n_queries", expect={**EXPECT, "n_queries": 14000})
    assert bad.height == 6 and bad["observed"].to_list() == ["5000"] * 6
    fails(sample, "expect_posts_per_fold", expect={"posts_per_fold": [100, 100, 100, 99, 101]})
    with pytest.raises(ef.ConfigError, match="unknown keys"):
        run_checks(sample, expect={"n_querys": 1})


def test_an_across_folds_row_that_is_not_the_folds_mean_fails(sample):
    ev = edited(sample, "ndcg@10", "across_folds", 0.99)
    fails(ev, "across_folds_matches_folds")
    fails(ev, "ablation_matches_summary")  # the ablation table still says the true value


def test_an_ablation_cell_that_differs_from_the_summary_fails(sample):
    table = sample.tables["ablation"].with_columns(pl.col("auroc") + 0.01)
    bad = fails(sample.with_tables(ablation=table), "ablation_matches_summary")
    assert "auroc" in bad["observed"][0]


def test_an_overall_value_that_is_not_its_folds_combined_fails(sample):
    fails(edited(sample, "mrr", "overall", 0.1), "overall_matches_folds")
    fails(edited(sample, "fn", "overall", 3.0), "overall_matches_folds")


def test_a_metric_reported_twice_with_two_values_fails(sample):
    first = sample.summary.head(1)
    ev = replace(sample, summary=pl.concat([sample.summary, first.with_columns(pl.col("value") + 0.1)]))
    fails(ev, "duplicate_rows_agree")


def test_ranking_metrics_averaged_over_all_queries_fail_a1():
    tables = ef.read_per_query(SAMPLE)
    ev = ef.evaluate(tables, metrics=["recall@10", "mrr"], slices={"overall": [], "fold": ["fold"]}, empty="zero")
    bad = fails(ev, "ranking_denominator")
    assert "n = 5000" in bad.filter(pl.col("grouping") == "overall")["observed"][0]
    ok = ef.evaluate(tables, metrics={"has_evidence": ["recall@10", "mrr"]}, subsets={"has_evidence": "label = 1"})
    assert statuses(run_checks(ok), "ranking_denominator") == {"pass"}


def test_a_post_in_two_folds_fails_a4(sample):
    queries = sample.queries.with_columns(
        fold=pl.when((pl.col("post_id") == "p00001") & (pl.col("criterion_id") == "A.3")).then(4).otherwise(pl.col("fold")))
    bad = fails(replace(sample, queries=queries), "folds_disjoint")
    assert "p00001" in bad["observed"][0]


def test_tuning_on_its_own_test_fold_fails_a2(sample):
    tuning = sample.tables["tuning"].with_columns(
        tuned_on=pl.when(pl.col("fold") == 2).then(pl.lit("0, 1, 2, 3, 4")).otherwise(pl.col("tuned_on")))
    bad = fails(sample.with_tables(tuning=tuning), "tuning_without_leakage")
    assert set(bad["fold"]) == {"2"}


def test_a_leaking_tune_split_fails_a2():
    # Post p00002 has criteria in the tune split and in the test split: its test rows leak.
    frame = pl.read_csv(SAMPLE).filter(pl.col("config") == "full_pipeline")
    split = pl.when(pl.col("fold") == 0).then(pl.lit("tune")).otherwise(pl.lit("test"))
    leak = (pl.col("post_id") == pl.col("post_id").filter(pl.col("fold") == 1).first()) & (pl.col("criterion_id") == "A.1")
    frame = frame.with_columns(split=pl.when(leak).then(pl.lit("tune")).otherwise(split))
    ev = ef.evaluate(ef.read_per_query(frame), metrics=["auroc"], slices={"overall": [], "fold": ["fold"]}, across_folds="fold")
    ev = ef.tune_thresholds(ev, grid=0.1)
    tuning = ev.tables["tuning"].filter(pl.col("row") == "fold")
    assert set(tuning["tuned_on"]) == {"split = tune"} and tuning["fold"].to_list() == [1, 2, 3, 4]
    bad = fails(ev, "tuning_without_leakage")
    assert bad["fold"].to_list() == ["1"] and "1 posts shared" in bad["observed"][0]


@dataclass(frozen=True)
class DynamicRecallMisnamed(QueryMetric):
    """A dynamic-K metric named with a fixed cutoff (Appendix A.3's pitfall)."""

    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    required_columns: ClassVar = {"queries": ("selected_k",)}

    @property
    def name(self) -> str:
        return "evidence_recall@10"

    def expr(self) -> pl.Expr:
        return pl.col("selected_k").cast(pl.Float64)


def test_a_dynamic_k_metric_named_with_a_fixed_cutoff_fails_a3():
    ev = ef.evaluate(ef.read_per_query(SAMPLE), metrics=[DynamicRecallMisnamed(), "recall@10"])
    bad = fails(ev, "fixed_and_dynamic_k_apart")
    assert bad["observed"][0] == "evidence_recall@10 reads a dynamic K but is named with a fixed cutoff"


def test_failed_selects_must_failures(sample):
    assert failed(sample).height == 0
    ev = ef.check(edited(sample, "auroc", "overall", 1.5))
    assert failed(ev)["check"].to_list() == ["value_in_range"]
    assert ev.checks.filter(pl.col("status") == "fail").height == 1


@dataclass(frozen=True)
class NamedDynamicReadsNone(QueryMetric):
    """Named for a dynamic K but declaring no dynamic-K column: a `should` failure."""

    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    required_columns: ClassVar = {"queries": ("label",)}

    @property
    def name(self) -> str:
        return "hits@selected_k"

    def expr(self) -> pl.Expr:
        return pl.col("label").cast(pl.Float64)


def test_a_should_check_only_warns(capsys):
    from evalframe.cli.run import _checks_outcome
    from evalframe.errors import ExitCode

    ev = ef.check(ef.evaluate(ef.read_per_query(SAMPLE), metrics=[NamedDynamicReadsNone()]))
    should = failed(ev, "should")
    assert should["check"].to_list() == ["fixed_and_dynamic_k_apart"] and failed(ev).height == 0
    assert _checks_outcome(ev) == ExitCode.OK
    assert "warning: fixed_and_dynamic_k_apart" in capsys.readouterr().err
