"""Gate semantics on hand-built run outputs: floor, regression, both, warnings, direction,
missing baseline, equality at the limit, noise-aware regressions, masking, and the sentences."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from gate_outputs import write_criteria, write_run
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.gates.check import check_gates
from evalframe.gates.outcome import RunOutputs
from evalframe.gates.comment import gate_sentence, render_comment, verdict_line
from evalframe.gates.criteria import (
    criteria_from_mapping,
    load_criteria,
    metric_from_name,
)

RECORD = """gates:
  - name: retrieval_recall_at_5
    threshold: 0.85        # absolute floor
    regression_max: 0.03   # may not drop more than 3pp from baseline
    severity: error        # blocks merge
  - name: retrieval_mrr
    threshold: 0.62
    regression_max: 0.05
    severity: warning      # PR comment, no block
"""


def _check(tmp_path, candidate, baseline, criteria=RECORD, *, no_baseline_ok=False, cand_kw=None, base_kw=None):
    cand = RunOutputs.load(write_run(tmp_path / "cand", candidate, system="cand", **(cand_kw or {})))
    base = None
    if baseline is not None:
        base = RunOutputs.load(write_run(tmp_path / "base", baseline, system="base", **(base_kw or {})))
    rules = criteria_from_mapping(yaml.safe_load(criteria))
    return check_gates(rules, cand, base, no_baseline_ok=no_baseline_ok)


def _sentences(report):
    return [gate_sentence(result) for result in report.results]


def test_record_file_is_read_as_written(tmp_path):
    criteria = load_criteria(write_criteria(tmp_path, RECORD))
    assert [(g.name, g.metric.name, g.threshold, g.regression_max, g.severity, g.noise_aware) for g in criteria.gates] == [
        ("retrieval_recall_at_5", "recall@5", 0.85, 0.03, "error", False),
        ("retrieval_mrr", "mrr", 0.62, 0.05, "warning", False),
    ]
    assert metric_from_name("retrieval_ndcg_at_10") == "ndcg@10"
    assert metric_from_name("retrieval_hit_rate_at_10") == "hit_rate@10"


def test_all_pass(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.91, "mrr": 0.70}, {"recall@5": 0.90, "mrr": 0.69})
    assert [r.status for r in report.results] == ["pass", "pass"]
    assert report.exit_code == 0
    assert verdict_line(report) == "✅ all checks passed"
    assert _sentences(report) == ["retrieval recall@5 is 91% (baseline 90%) — passes",
                                  "retrieval MRR is 0.70 (baseline 0.69) — passes"]


def test_regression_blocks(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.87 - 0.06, "mrr": 0.70}, {"recall@5": 0.87, "mrr": 0.70},
                    criteria=RECORD.replace("0.85", "0.80"))
    first = report.results[0]
    assert (first.floor_failed, first.regression_failed, first.status, first.blocks) == (False, True, "fail", True)
    assert report.exit_code == 1
    assert verdict_line(report) == "❌ 1 blocking check failed"
    assert _sentences(report)[0] == "retrieval recall@5 dropped from 87% to 81% (−6.0 points; the limit is −3.0) — blocks merge"


def test_floor_blocks_without_a_regression(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.84, "mrr": 0.70}, {"recall@5": 0.845, "mrr": 0.70})
    first = report.results[0]
    assert (first.floor_failed, first.regression_failed) == (True, False)
    assert _sentences(report)[0] == "retrieval recall@5 is 84% (baseline 85%), below its floor of 85% — blocks merge"


def test_floor_and_regression_both_fail(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.81, "mrr": 0.70}, {"recall@5": 0.90, "mrr": 0.70})
    first = report.results[0]
    assert (first.floor_failed, first.regression_failed) == (True, True)
    assert _sentences(report)[0] == ("retrieval recall@5 dropped from 90% to 81% (−9.0 points; the limit is −3.0) "
                                     "and is below its floor of 85% — blocks merge")


def test_warning_only_does_not_block(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.90, "mrr": 0.60}, {"recall@5": 0.90, "mrr": 0.61})
    assert [r.status for r in report.results] == ["pass", "fail"]
    assert report.exit_code == 0
    assert verdict_line(report) == "✅ all checks passed, 1 warning"
    assert _sentences(report)[1] == "retrieval MRR is 0.60 (baseline 0.61), below its floor of 0.62 — warning, does not block"


def test_a_drop_of_exactly_the_limit_passes_despite_float_error(tmp_path):
    assert 0.90 - 0.87 > 0.03  # the float subtraction lands above the limit ...
    report = _check(tmp_path, {"recall@5": 0.87, "mrr": 0.62}, {"recall@5": 0.90, "mrr": 0.67})
    # ... yet the drop of exactly 3 points (and MRR's 0.05, and MRR equal to its floor) passes.
    assert [r.status for r in report.results] == ["pass", "pass"]
    just_over = _check(tmp_path / "over", {"recall@5": 0.8699, "mrr": 0.70}, {"recall@5": 0.90, "mrr": 0.70})
    assert just_over.results[0].regression_failed
    # The printed numbers then differ from the limit: more decimals, never "−3.0; the limit is −3.0".
    assert gate_sentence(just_over.results[0]).startswith(
        "retrieval recall@5 dropped from 90% to 87% (−3.01 points; the limit is −3.00)")


def test_rounding_is_half_up_on_the_printed_decimal(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.8650, "mrr": 0.625}, {"recall@5": 0.8650, "mrr": 0.625})
    assert _sentences(report) == ["retrieval recall@5 is 87% (baseline 87%) — passes",
                                  "retrieval MRR is 0.63 (baseline 0.63) — passes"]


def test_value_just_below_its_floor_prints_more_decimals(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.8496, "mrr": 0.7}, {"recall@5": 0.8496, "mrr": 0.7})
    assert _sentences(report)[0] == "retrieval recall@5 is 84.96% (baseline 84.96%), below its floor of 85.00% — blocks merge"


LOWER = """gates:
  - name: calibration
    metric: brier
    threshold: 0.20
    regression_max: 0.03
"""


@pytest.mark.parametrize(("value", "baseline", "floor_failed", "regression_failed", "sentence"), [
    (0.15, 0.20, False, False, "calibration (brier) is 0.15 (baseline 0.20) — passes"),
    (0.21, 0.20, True, False, "calibration (brier) is 0.21 (baseline 0.20), above its ceiling of 0.20 — blocks merge"),
    (0.19, 0.15, False, True, "calibration (brier) rose from 0.15 to 0.19 (+0.04; the limit is +0.03) — blocks merge"),
    (0.20, 0.17, False, False, "calibration (brier) is 0.20 (baseline 0.17) — passes"),
])
def test_lower_is_better_metric_gates_with_a_ceiling(tmp_path, value, baseline, floor_failed, regression_failed, sentence):
    assert not ef.resolve_metric("brier").higher_is_better
    report = _check(tmp_path, {"brier": value}, {"brier": baseline}, LOWER)
    result = report.results[0]
    assert (result.floor_failed, result.regression_failed) == (floor_failed, regression_failed)
    assert gate_sentence(result) == sentence


def test_missing_baseline_is_an_error_unless_allowed(tmp_path):
    with pytest.raises(ef.ConfigError) as caught:
        _check(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None)
    assert "gates[0].regression_max: needs a baseline value" in str(caught.value)
    assert "gates[1].regression_max" in str(caught.value)
    report = _check(tmp_path, {"recall@5": 0.9, "mrr": 0.7}, None, no_baseline_ok=True)
    assert report.exit_code == 0
    assert _sentences(report)[0] == "retrieval recall@5 is 90% (no baseline; the regression limit was not checked) — passes"
    assert "regression not checked" in report.results[0].reason
    # A floor still applies without a baseline.
    failing = _check(tmp_path / "f", {"recall@5": 0.8, "mrr": 0.7}, None, no_baseline_ok=True)
    assert failing.exit_code == 1


def test_a_metric_the_results_do_not_have_names_the_key(tmp_path):
    with pytest.raises(ef.ConfigError) as caught:
        _check(tmp_path, {"recall@5": 0.9}, {"recall@5": 0.9})
    assert "gates[1].name: the results in" in str(caught.value)
    assert "have no metric `mrr`" in str(caught.value)


NOISY = """gates:
  - name: retrieval_recall_at_5
    regression_max: 0.03
    noise_aware: true
noise: {resamples: 2000, seed: 7}
"""


def test_noise_aware_regression_on_a_tiny_noisy_set(tmp_path):
    # 8 cases: the candidate loses one hit (a 12.5-point drop, above the limit) - within noise.
    base = {f"q{i}": 1.0 if i % 2 else 0.0 for i in range(8)}
    cand = {**base, "q1": 0.0}
    report = _check(tmp_path, {"recall@5": 0.375}, {"recall@5": 0.5}, NOISY,
                    cand_kw={"per_query": {"recall@5": cand}}, base_kw={"per_query": {"recall@5": base}})
    result = report.results[0]
    assert result.regression_exceeded and not result.regression_failed
    assert result.interval.low < 0 <= result.interval.high
    assert result.status == "pass"
    assert gate_sentence(result).startswith("retrieval recall@5 dropped from 50% to 38% (−12.5 points, 95% CI −")
    assert "but the change is within noise" in gate_sentence(result)
    # 200 cases that all lose the hit: the interval excludes 0 and the gate fails.
    base = {f"q{i}": 1.0 for i in range(200)}
    cand = {f"q{i}": 0.0 if i < 20 else 1.0 for i in range(200)}
    report = _check(tmp_path / "big", {"recall@5": 0.9}, {"recall@5": 1.0}, NOISY,
                    cand_kw={"per_query": {"recall@5": cand}}, base_kw={"per_query": {"recall@5": base}})
    result = report.results[0]
    assert result.regression_failed and result.interval.high < 0
    assert report.exit_code == 1


def test_noise_aware_needs_the_same_cases(tmp_path):
    with pytest.raises(ef.InputError, match="1 have a value in the baseline only, 0 in the candidate only"):
        _check(tmp_path, {"recall@5": 0.5}, {"recall@5": 0.5}, NOISY,
               cand_kw={"per_query": {"recall@5": {"a": 1.0}}},
               base_kw={"per_query": {"recall@5": {"a": 1.0, "b": 0.0}}})


def test_masking_note_when_a_tag_drops_more_than_the_limit(tmp_path):
    tags = {"recall@5": {"lookup": (0.95, 600), "multi_hop": (0.72, 271), "numeric": (0.86, 280)}}
    base_tags = {"recall@5": {"lookup": (0.90, 600), "multi_hop": (0.82, 271), "numeric": (0.87, 280)}}
    report = _check(tmp_path, {"recall@5": 0.87, "mrr": 0.7}, {"recall@5": 0.86, "mrr": 0.7},
                    cand_kw={"tags": tags}, base_kw={"tags": base_tags})
    assert report.exit_code == 0
    assert [c.label for c in report.breakdown["recall@5"]] == ["multi_hop", "numeric"]  # drops only, largest first
    comment = render_comment(report)
    assert "  - `multi_hop` (271 cases): dropped from 82% to 72% (−10.0 points)" in comment
    assert "  - `numeric` (280 cases): dropped from 87% to 86% (−1.0 points)" in comment
    assert ("⚠️ retrieval recall@5 passes overall, but on tag `multi_hop` (271 cases) it dropped by 10.0 points, "
            "more than the limit of 3.0 points: the overall number hides a per-task regression.") in comment
    assert "`numeric` (280 cases) it dropped" not in comment


def test_no_masking_note_when_the_overall_gate_already_fails(tmp_path):
    tags = {"recall@5": {"multi_hop": (0.60, 10)}}
    base_tags = {"recall@5": {"multi_hop": (0.90, 10)}}
    report = _check(tmp_path, {"recall@5": 0.86, "mrr": 0.7}, {"recall@5": 0.90, "mrr": 0.7},
                    cand_kw={"tags": tags}, base_kw={"tags": base_tags})
    assert report.results[0].regression_failed
    assert report.masked == ()
    assert "⚠️" not in render_comment(report)


def test_gate_on_a_slice(tmp_path):
    criteria = """gates:
  - name: retrieval_recall_at_5
    threshold: 0.8
    slice: {grouping: tag, keys: {tags: multi_hop}}
"""
    tags = {"recall@5": {"multi_hop": (0.72, 271)}}
    report = _check(tmp_path, {"recall@5": 0.9}, None, criteria, cand_kw={"tags": tags})
    assert report.results[0].value == 0.72 and report.results[0].floor_failed
    assert gate_sentence(report.results[0]) == "retrieval recall@5 on tags multi_hop is 72%, below its floor of 80% — blocks merge"
    with pytest.raises(ef.ConfigError, match=r"gates\[0\].slice: `tag` has 2 slices"):
        _check(tmp_path / "x", {"recall@5": 0.9}, None, criteria.replace(", keys: {tags: multi_hop}", ""),
               cand_kw={"tags": {"recall@5": {"a": (0.5, 1), "b": (0.5, 1)}}})


def test_gate_on_a_subset(tmp_path):
    """`subset:` picks the value of a metric computed on several subsets, as a pipeline names it."""
    folder = write_run(tmp_path / "cand", {"recall@5": 0.9}, system="cand")
    summary = pl.read_parquet(folder / "summary.parquet")
    pl.concat([summary, summary.with_columns(subset=pl.lit("hard queries"), value=pl.lit(0.6))]).write_parquet(
        folder / "summary.parquet")
    criteria = "gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.8\n    subset: hard queries\n"
    report = check_gates(criteria_from_mapping(yaml.safe_load(criteria)), RunOutputs.load(folder), None,
                         no_baseline_ok=True)
    assert report.results[0].value == 0.6 and report.results[0].floor_failed
    with pytest.raises(ef.ConfigError, match=r"gates\[0\].subset.*no such subset of `recall@5` \(they have: `all`, `hard queries`\)"):
        check_gates(criteria_from_mapping(yaml.safe_load(criteria.replace("hard queries", "easy"))),
                    RunOutputs.load(folder), None, no_baseline_ok=True)


def test_report_json_has_every_field(tmp_path):
    report = _check(tmp_path, {"recall@5": 0.81, "mrr": 0.7}, {"recall@5": 0.87, "mrr": 0.7})
    gate = report.to_json()["gates"][0]
    assert set(gate) >= {"metric", "slice", "value", "baseline", "delta", "threshold", "regression_max", "severity",
                         "status", "reason"}
    assert (gate["metric"], gate["status"], gate["severity"]) == ("recall@5", "fail", "error")
    assert gate["delta"] == pytest.approx(-0.06)
    assert report.to_json()["verdict"] == "fail"


@settings(max_examples=30, deadline=None)
@given(value=st.integers(0, 100), baseline=st.integers(0, 100), floor=st.integers(0, 100), limit=st.integers(0, 20),
       higher=st.booleans())
def test_rules_match_integer_hundredths(value, baseline, floor, limit, higher):
    """On values printed to two decimals the rules are integer comparisons: equality passes, always."""
    metric = "recall@5" if higher else "brier"
    summary = pl.DataFrame({"grouping": ["overall"], "system": ["s"], "metric": [metric], "n": [10]})
    cand = RunOutputs(Path("cand"), summary.with_columns(value=pl.lit(value / 100)), None, None)
    base = RunOutputs(Path("base"), summary.with_columns(value=pl.lit(baseline / 100)), None, None)
    rules = criteria_from_mapping({"gates": [{"name": "g", "metric": metric, "threshold": floor / 100,
                                              "regression_max": limit / 100}]})
    result = check_gates(rules, cand, base).results[0]
    assert result.floor_failed == (value < floor if higher else value > floor)
    assert result.regression_failed == ((baseline - value) > limit if higher else (value - baseline) > limit)
