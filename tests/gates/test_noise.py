"""The paired bootstrap interval of a change (gates/noise.py) against a plain-Python reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.gates.noise import paired_delta_ci
from evalframe.engine.replicates import poisson_counts


def _reference(base: dict, cand: dict, resamples: int, seed: int, confidence: float):
    """Loop over replicates and cases: Σ w (cand − base) / Σ w, percentile interval."""
    ids = sorted(base)
    counts = poisson_counts(pl.DataFrame({"query_id": ids}), resamples, seed)
    replicates = []
    for r in range(resamples):
        total = sum(int(counts[i, r]) for i in range(len(ids)))
        if total == 0:
            continue
        replicates.append(sum(int(counts[i, r]) * (cand[q] - base[q]) for i, q in enumerate(ids)) / total)
    alpha = 1 - confidence
    low, high = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    return sum(cand[q] - base[q] for q in ids) / len(ids), low, high


def _frame(values: dict) -> pl.DataFrame:
    return pl.DataFrame({"query_id": list(values), "value": list(values.values())})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=30), st.integers(0, 2**32))
def test_matches_the_reference(pairs, seed):
    base = {f"q{i}": b for i, (b, _) in enumerate(pairs)}
    cand = {f"q{i}": c for i, (_, c) in enumerate(pairs)}
    found = paired_delta_ci(_frame(base), _frame(cand), resamples=200, seed=seed)
    delta, low, high = _reference(base, cand, 200, seed, 0.95)
    assert (found.delta, found.low, found.high) == (pytest.approx(delta), pytest.approx(low), pytest.approx(high))


def test_row_order_does_not_matter_and_the_seed_repeats():
    base = {f"q{i}": float(i % 3 == 0) for i in range(50)}
    cand = {f"q{i}": float(i % 4 == 0) for i in range(50)}
    one = paired_delta_ci(_frame(base), _frame(cand), seed=3)
    shuffled = paired_delta_ci(_frame(base).reverse(), _frame(cand).sample(fraction=1.0, shuffle=True, seed=1), seed=3)
    assert one == shuffled
    assert paired_delta_ci(_frame(base), _frame(cand), seed=4) != one


def test_cases_null_on_both_sides_are_left_out_one_side_is_an_error():
    base = pl.DataFrame({"query_id": ["a", "b", "c"], "value": [1.0, None, 0.0]})
    cand = pl.DataFrame({"query_id": ["a", "b", "c"], "value": [1.0, None, 1.0]})
    assert paired_delta_ci(base, cand, resamples=100).n == 2
    with pytest.raises(ef.InputError, match="0 have a value in the baseline only, 1 in the candidate only"):
        paired_delta_ci(base, cand.with_columns(pl.lit(1.0).alias("value")), resamples=100)


def test_a_coarser_unit_resamples_clusters_of_cases():
    """With ``unit`` (the run's ``bootstrap.unit``), a replicate weighs each case by its unit's
    Poisson count: the plain-Python cluster reference."""
    rng = np.random.default_rng(4)
    ids = [f"p{i // 3}|c{i % 3}" for i in range(30)]
    posts = [q.split("|")[0] for q in ids]
    base = dict(zip(ids, rng.random(30).tolist(), strict=True))
    cand = dict(zip(ids, rng.random(30).tolist(), strict=True))
    found = paired_delta_ci(_frame(base), _frame(cand).with_columns(post_id=pl.Series(posts)), resamples=300, seed=7,
                            unit=("post_id",))
    units = sorted(set(posts))
    counts = poisson_counts(pl.DataFrame({"post_id": units}), 300, 7)
    replicates = []
    for r in range(300):
        weights = [int(counts[units.index(p), r]) for p in posts]
        if sum(weights):
            replicates.append(sum(w * (cand[q] - base[q]) for w, q in zip(weights, ids, strict=True)) / sum(weights))
    low, high = np.quantile(replicates, [0.025, 0.975])
    assert found.low == pytest.approx(low, abs=1e-12) and found.high == pytest.approx(high, abs=1e-12)


# --- the gate's interval from the two runs' own bootstrap replicates (issue 21: one bootstrap) ---

REPO = Path(__file__).resolve().parents[2]
NOISE_AWARE = """gates:
  - name: retrieval_recall_at_5
    regression_max: 0.0
    noise_aware: true
"""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Baseline and candidate runs of the sample gold set's first 120 cases, bootstrapped (200
    replicates), one keeping replicates.parquet and one pair without it."""
    from evalframe.cli import main

    folder = tmp_path_factory.mktemp("noise_runs")
    runs = {}
    for system in ("baseline", "candidate"):
        lines = (REPO / "data_samples/gold_set" / f"{system}.jsonl").read_text().splitlines()[:120]
        source = folder / f"{system}.jsonl"
        source.write_text("\n".join(lines) + "\n")
        for kept in (True, False):
            out = folder / f"{system}_{'kept' if kept else 'recomputed'}"
            outputs = "per_query.parquet,summary.parquet,run.json" + (",replicates.parquet" if kept else "")
            assert main(["run", str(REPO / "pipelines/retrieval_gate.yaml"), "--input", str(source), "--out", str(out),
                         "--set", "bootstrap={resamples: 200, seed: 3}", "--set", "slices={overall: []}",
                         "--outputs", outputs]) == 0
            runs[(system, kept)] = out
    return runs


def _no_second_bootstrap(*args, **kwargs):
    raise AssertionError("the gate resampled per-query values instead of reading the runs' replicates")


def _gate_interval(tmp_path, candidate, baseline):
    from evalframe.gates.check import check_gates
    from evalframe.gates.criteria import load_criteria
    from evalframe.gates.outcome import RunOutputs

    path = tmp_path / "criteria.yaml"
    path.write_text(NOISE_AWARE)
    report = check_gates(load_criteria(path), RunOutputs.load(candidate), RunOutputs.load(baseline, "baseline"))
    return report.results[0].interval


def test_the_gate_reads_the_runs_replicates_and_they_are_the_paired_bootstrap(two_runs, tmp_path, monkeypatch):
    from evalframe.engine.bootstrap import intervals

    monkeypatch.setattr("evalframe.gates.check.paired_delta_ci", _no_second_bootstrap)
    interval = _gate_interval(tmp_path, two_runs[("candidate", True)], two_runs[("baseline", True)])
    replicates = {system: pl.read_parquet(two_runs[(system, True)] / "replicates.parquet").filter(
        pl.col("metric") == "recall@5").get_column("values").arr.to_list()[0] for system in ("baseline", "candidate")}
    deltas = np.array(replicates["candidate"]) - np.array(replicates["baseline"])
    expected = intervals(deltas[None, :], np.array([interval.delta]), 0.95)
    assert (interval.low, interval.high, interval.resamples) == (expected.low[0], expected.high[0], 200)
    # The same cases on both sides and unit weights: the difference of the runs' replicates is the
    # paired bootstrap of the per-case differences under the engine's draw (unit query_id).
    values = {system: pl.read_parquet(two_runs[(system, True)] / "per_query.parquet").filter(pl.col("metric") == "recall@5")
              for system in ("baseline", "candidate")}
    paired = paired_delta_ci(values["baseline"], values["candidate"], resamples=200, seed=3)
    assert (interval.low, interval.high) == (pytest.approx(paired.low, abs=1e-12), pytest.approx(paired.high, abs=1e-12))
    assert interval.delta == pytest.approx(paired.delta, abs=1e-12)


def test_a_folder_without_replicates_gets_them_recomputed_by_the_engine(two_runs, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr("evalframe.gates.check.paired_delta_ci", _no_second_bootstrap)
    kept = _gate_interval(tmp_path, two_runs[("candidate", True)], two_runs[("baseline", True)])
    recomputed = _gate_interval(tmp_path, two_runs[("candidate", False)], two_runs[("baseline", False)])
    assert (recomputed.low, recomputed.high, recomputed.delta) == (kept.low, kept.high, kept.delta)


@pytest.fixture(scope="module")
def weighted_runs(tmp_path_factory):
    """Baseline and candidate runs of the sample gold set's first 80 cases with a weight column
    (`w`, 0.5–3), bootstrapped with one draw (200 replicates, seed 3)."""
    import json

    from evalframe.cli import main

    folder = tmp_path_factory.mktemp("weighted_noise_runs")
    runs = {}
    for system in ("baseline", "candidate"):
        records = [json.loads(line) for line in (REPO / "data_samples/gold_set" / f"{system}.jsonl").read_text().splitlines()[:80]]
        source = folder / f"{system}.jsonl"
        source.write_text("".join(json.dumps({**record, "w": 0.5 + (i * 7 % 11) / 4}) + "\n" for i, record in enumerate(records)))
        runs[system] = folder / system
        assert main(["run", str(REPO / "pipelines/retrieval_gate.yaml"), "--input", str(source), "--out", str(runs[system]),
                     "--set", "bootstrap={resamples: 200, seed: 3}", "--set", "slices={overall: []}", "--set", "weight=w",
                     "--outputs", "per_query.parquet,summary.parquet,run.json"]) == 0
    return runs


def test_the_fallback_weighs_cases_as_the_engine(weighted_runs, tmp_path, monkeypatch):
    """Without the runs' replicates, the per-query fallback weighs each case by its unit's weight
    (the run's weight column) under the engine's draw: it gives the runs' own replicate interval
    and the summary's weighted delta; unweighted it would not."""
    monkeypatch.chdir(REPO)
    from_replicates = _gate_interval(tmp_path, weighted_runs["candidate"], weighted_runs["baseline"])
    monkeypatch.setattr("evalframe.gates.check._run_replicates", lambda *args: None)
    fallback = _gate_interval(tmp_path, weighted_runs["candidate"], weighted_runs["baseline"])
    assert fallback.delta == pytest.approx(from_replicates.delta, abs=1e-12)
    assert (fallback.low, fallback.high) == (pytest.approx(from_replicates.low, abs=1e-12),
                                             pytest.approx(from_replicates.high, abs=1e-12))
    values = {system: pl.read_parquet(weighted_runs[system] / "per_query.parquet").filter(pl.col("metric") == "recall@5")
              for system in ("baseline", "candidate")}
    unweighted = paired_delta_ci(values["baseline"], values["candidate"], resamples=200, seed=3)
    assert unweighted.delta != pytest.approx(fallback.delta, abs=1e-6)


def test_a_weighted_run_whose_input_is_gone_is_an_error_not_an_unweighted_interval(weighted_runs, tmp_path, monkeypatch):
    monkeypatch.setattr("evalframe.gates.check._run_replicates", lambda *args: None)
    source = weighted_runs["candidate"].parent / "candidate.jsonl"
    source.rename(source.with_suffix(".gone"))
    try:
        with pytest.raises(ef.InputError, match="weighs cases as the run did"):
            _gate_interval(tmp_path, weighted_runs["candidate"], weighted_runs["baseline"])
    finally:
        source.with_suffix(".gone").rename(source)
