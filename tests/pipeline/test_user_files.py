"""The bundled evidence_contract pipeline on users' own per_query.csv files (issue 19).

Every file here is built by the test (never the sample): only the required columns, one's own
config names, one config, with `state`, with tau parameters, with `ranked_scores`, with an extra
column used through `--set`. Each run exits 0 with the expected notes and metrics. Every
config-against-data error exits 2 before the engine computes anything, and nothing is written.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main

REQUIRED = ["post_id", "has_evidence_gold", "p_has_evidence", "gold_sent_uids", "ranked_sent_uids"]
CLASSIFICATION = {"auroc", "auprc", "f1", "mcc", "brier", "ece", "tp", "fn"}
RANKING = {"recall@10", "ndcg@10", "mrr", "map@5"}
GATE = {"neg_rate", "uncertain_rate", "pos_rate", "alert_rate_per_1000", "screening_sensitivity",
        "screening_fn_per_1000", "alert_precision"}
EXTRACTION = {"selected_k", "n_extracted", "evidence_recall@selected_k", "evidence_precision@selected_k"}
MULTILABEL = {"exact_match", "hamming_loss", "macro_f1"}
QUICK = ["--set", "bootstrap.resamples=20", "--outputs", "summary.csv,run.json"]


def user_file(path, *, posts=24, criteria=("c1", "c2", "c3"), configs=("bm25", "dense"), folds=3, state=False,
              scores=False, selected=False, extra=False, drop=()):
    """A per_query.csv of one's own: gold facts per (post, criterion), one row per config."""
    rng = np.random.default_rng(19)
    truth = {}
    for p in range(posts):
        for c in criteria:
            label = int(rng.random() < 0.35)
            sentences = [f"p{p}_s{i}" for i in range(8)]
            gold = [str(s) for s in rng.choice(sentences, size=2, replace=False)] if label else []
            truth[(p, c)] = (label, sentences, gold)
    rows = []
    for position, config in enumerate(configs):
        for p in range(posts):
            for c in criteria:
                label, sentences, gold = truth[(p, c)]
                prob = float(np.clip(rng.normal(0.3 + 0.4 * label + 0.05 * position, 0.2), 0, 1))
                order = [str(s) for s in rng.permutation(sentences)]
                row = {"post_id": f"p{p}", "criterion_id": c, "fold": p % folds, "has_evidence_gold": label,
                       "p_has_evidence": round(prob, 4), "gold_sent_uids": json.dumps(gold),
                       "ranked_sent_uids": json.dumps(order), "config": config}
                if scores:
                    row["ranked_scores"] = json.dumps(sorted((round(float(x), 3) for x in rng.random(8)), reverse=True))
                if state:
                    row["state"] = "NEG" if prob < 0.2 else ("POS" if prob > 0.6 else "UNCERTAIN")
                if selected:
                    row["selected_k"] = int(rng.integers(1, 5))
                if extra:
                    row["domain"] = ["news", "forum"][p % 2]
                rows.append(row)
    frame = pl.DataFrame(rows).drop([c for c in drop if c != "config"])
    if "config" in drop:
        frame = frame.drop("config")
    frame.write_csv(path)
    return path


def run(tmp_path, capsys, *args):
    out = tmp_path / "out"
    status = main(["run", "evidence_contract", "--out", str(out), "-q", *args])
    captured = capsys.readouterr()
    return status, out, captured.err


def metrics_of(out) -> set[str]:
    return set(pl.read_csv(out / "summary.csv").get_column("metric").unique().to_list())


def skipped_parts(out) -> list[str]:
    return [part["part"] for part in json.loads((out / "run.json").read_text())["skipped"]]


def test_only_the_required_columns(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", criteria=("c1",), configs=("only",), drop=("fold", "criterion_id", "config"))
    assert pl.read_csv(path).columns == REQUIRED
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--set", "bootstrap.resamples=20",
                           "--outputs", "summary.csv,run.json,report.md")
    assert status == 0, err
    metrics = metrics_of(out)
    assert CLASSIFICATION | RANKING | {"n_queries", "n_positive"} <= metrics
    assert not metrics & (GATE | EXTRACTION | MULTILABEL)
    assert skipped_parts(out) == ["metrics[2]", "metrics[4]", "metrics[5]", "metrics[6]", "slices.fold", "slices.criterion",
                                  "slices.state", "dynamic_k_sweep", "ablation", "tuning"]
    assert "§5 three-state gate metrics" in err and "no `state` column" in err and "parameters.tau_neg" in err
    assert "dynamic-K γ sweep (`dynamic_k_sweep`) skipped: no `ranked_scores` column" in err
    assert "1 config (needs 2 or more)" in err
    info = json.loads((out / "run.json").read_text())
    assert all({"part", "what", "missing", "enable"} <= set(part) for part in info["skipped"])
    assert "Skipped: slice `state`" in (out / "report.md").read_text()


def test_own_config_names_keep_their_order_and_baseline_goes_first(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", configs=("zeta", "alpha", "mid"))
    status, out, err = run(tmp_path, capsys, "--input", str(path), *QUICK, "--baseline", "alpha")
    assert status == 0, err
    ablation = pl.read_csv(out / "ablation.csv")
    assert ablation.get_column("system").to_list() == ["alpha", "zeta", "mid"]
    assert "alert_precision" not in ablation.columns  # its metric group was skipped (no state)
    assert MULTILABEL <= metrics_of(out)
    assert json.loads((out / "run.json").read_text())["overrides"]["baseline"] == "alpha"


def test_one_config(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", configs=("only",), drop=("config",))
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--no-bootstrap", "--outputs", "summary.csv,run.json")
    assert status == 0, err
    assert "ablation" in skipped_parts(out) and not (out / "ablation.csv").exists()
    assert "tuning" not in skipped_parts(out)  # tuning needs folds, not configs
    assert json.loads((out / "run.json").read_text())["bootstrap"] is None


def test_with_state(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", state=True)
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--no-bootstrap", "--outputs", "summary.csv,run.json")
    assert status == 0, err
    assert GATE <= metrics_of(out)
    summary = pl.read_csv(out / "summary.csv")
    assert set(summary.filter(pl.col("grouping") == "state").get_column("state").drop_nulls()) <= {"NEG", "UNCERTAIN", "POS"}
    assert summary.filter(pl.col("metric") == "neg_rate").get_column("params").is_null().all()


def test_with_tau_parameters_the_state_is_a_column_and_names_stay_plain(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv")
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--no-bootstrap", "--outputs", "summary.csv,run.json",
                           "--set", "parameters.tau_neg=0.2", "--set", "parameters.tau_pos=0.7")
    assert status == 0, err
    summary = pl.read_csv(out / "summary.csv")
    assert GATE <= set(summary.get_column("metric"))
    assert not summary.filter(pl.col("metric").str.contains(r"\(")).height  # no parameterised name
    gate = summary.filter(pl.col("metric") == "neg_rate")
    assert set(gate.get_column("params")) == {"tau_neg=0.2,tau_pos=0.7"}
    # the derived state slices like a given one, and agrees with the contract's rule
    frame = pl.read_csv(path)
    by_state = summary.filter((pl.col("grouping") == "state") & (pl.col("metric") == "n_queries") & (pl.col("system") == "bm25"))
    expected = frame.filter(pl.col("config") == "bm25").select(
        pl.when(pl.col("p_has_evidence") < 0.2).then(pl.lit("NEG")).when(pl.col("p_has_evidence") < 0.7)
        .then(pl.lit("UNCERTAIN")).otherwise(pl.lit("POS")).alias("state")).group_by("state").len()
    assert dict(by_state.select("state", "value").iter_rows()) == {s: float(n) for s, n in expected.iter_rows()}
    info = json.loads((out / "run.json").read_text())
    assert info["parameters"]["tau_neg"] == 0.2 and info["overrides"]["set"]["parameters.tau_pos"] == 0.7


def test_with_ranked_scores_and_selected_k(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", scores=True, selected=True)
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--no-bootstrap", "--outputs", "summary.csv,run.json")
    assert status == 0, err
    assert (out / "dynamic_k_sweep.csv").exists()
    assert EXTRACTION <= metrics_of(out)
    assert skipped_parts(out) == ["metrics[2]", "slices.state"]


def test_an_extra_column_as_a_slice_through_set(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", extra=True)
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--no-bootstrap", "--set", "slices.domain=[domain]",
                           "--outputs", "summary.csv,run.json")
    assert status == 0, err
    summary = pl.read_csv(out / "summary.csv")
    assert set(summary.filter(pl.col("grouping") == "domain").get_column("domain")) == {"news", "forum"}
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == sorted(
        ["summary.csv", "run.json", "ablation.csv", "tuning.csv", "threshold_tuning.csv", "checks.csv"])


def test_python_api_takes_the_same_overrides(tmp_path):
    path = user_file(tmp_path / "mine.csv", extra=True)
    ev = ef.run_pipeline("evidence_contract", input=path, set={"slices.domain": ["domain"], "parameters.tau_neg": 0.1,
                                                               "parameters.tau_pos": 0.6},
                         bootstrap=False, outputs=["summary.csv"], baseline="dense")
    assert "domain" in ev.plan.slices and ev.plan.bootstrap is None
    assert ev.plan.about["overrides"]["baseline"] == "dense"
    assert "neg_rate" in set(ev.summary.get_column("metric"))


@pytest.mark.parametrize("unit", ["post_id", "[post_id]", "query", "[query_id]"])
def test_bootstrap_units_as_users_write_them(tmp_path, capsys, unit):
    path = user_file(tmp_path / "mine.csv", criteria=("c1",), configs=("only",), drop=("criterion_id",))
    status, out, err = run(tmp_path, capsys, "--input", str(path), "--set", f"bootstrap.unit={unit}",
                           "--set", "bootstrap.resamples=20", "--outputs", "summary.csv,run.json")
    assert status == 0, err
    expected = ["query_id"] if "query" in unit else ["post_id"]
    assert json.loads((out / "run.json").read_text())["bootstrap"]["unit"] == expected
    assert pl.read_csv(out / "summary.csv").get_column("ci_low").drop_nulls().len() > 0


# --- config errors: exit 2 before the engine, nothing written --------------------------------

STRICT = """
version: 1
name: strict
input: {format: per_query}
metrics:
  - names: [auroc, ndcg@10]
slices: {overall: [], fold: [fold]}
across_folds: fold
outputs: [summary.csv, run.json]
"""


def strict_pipeline(tmp_path, extra=""):
    path = tmp_path / "strict.yaml"
    path.write_text(STRICT + extra)
    return path


ERRORS = {
    "slice column": (["--set", "slices.x=[nope]"], "slices.x: names column `nope`"),
    "metric column": (["--set", "metrics[0].names=[neg_rate]"], "metric `neg_rate`: names column `state`"),
    "unit key": (["--set", "units.post=[nope]"], "units.post: names column `nope`"),
    "ablation names": (["--set", "ablation.order=[bm25, nope]"], "ablation.order: names systems the input does not have"),
    "compare baseline": (["--set", "compare.baseline=nope"], "compare.baseline: is not a system of the input"),
    "--baseline": (["--baseline", "nope"], "--baseline: is not a system of the input"),
    "sweep": (["--set", "dynamic_k_sweep.k_max=10"], "dynamic_k_sweep: needs the ranked scores"),
    "tuning": (["--set", "across_folds=null", "--set", "slices.fold=[label]", "--set", "tuning.grid=0.1"],
               "tuning: needs the columns `fold`"),
    "output name": (["--outputs", "summary.cvs"], "outputs[0]: is not one of"),
    "bootstrap unit": (["--set", "bootstrap.unit=criterion_id", "--set", "metrics[0].names=[exact_match]"],
                       "bootstrap.unit"),
    "unknown key": (["--set", "slicez.x=[fold]"], "slicez: unknown key; did you mean `slices`?"),
    "extracted set": (["--set", "metrics[0].names=[evidence_recall@selected_k]"], "need the extracted set"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_config_errors_exit_2_before_computing_and_write_nothing(tmp_path, capsys, monkeypatch, case):
    import evalframe.pipeline.run as pipeline_run

    def never(*args, **kwargs):
        raise AssertionError("the engine ran on a bad config")

    monkeypatch.setattr(pipeline_run, "run", never)  # the engine's compute entry point
    args, expected = ERRORS[case]
    path = user_file(tmp_path / "mine.csv", drop=("fold",) if case == "tuning" else ())
    out = tmp_path / "out"
    status = main(["run", str(strict_pipeline(tmp_path)), "--input", str(path), "--out", str(out), "-q", *args])
    err = capsys.readouterr().err
    assert status == 2, err
    assert not out.exists()
    assert expected in err, err
    # check-pipeline runs exactly these checks
    assert main(["check-pipeline", str(strict_pipeline(tmp_path)), "--input", str(path), *args]) == 2


def test_several_errors_are_reported_together(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv")
    status = main(["run", str(strict_pipeline(tmp_path)), "--input", str(path), "--out", str(tmp_path / "out"), "-q",
                   "--set", "slices.x=[nope]", "--set", "ablation.order=[nope]", "--set", "dynamic_k_sweep.k_max=10"])
    err = capsys.readouterr().err
    assert status == 2 and "3 problems" in err


def test_report_outputs_without_their_packages_fail_before_computing(tmp_path, capsys, monkeypatch):
    import importlib.util

    import evalframe.pipeline.run as pipeline_run

    monkeypatch.setattr(pipeline_run, "run", lambda *a, **k: pytest.fail("the engine ran"))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "great_tables" else real(name, *a))
    path = user_file(tmp_path / "mine.csv")
    status = main(["run", str(strict_pipeline(tmp_path)), "--input", str(path), "--out", str(tmp_path / "out"), "-q",
                   "--outputs", "summary.csv,report.html"])
    assert status == 2 and "pip install" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_user_pipeline_without_requires_stays_strict(tmp_path, capsys):
    path = user_file(tmp_path / "mine.csv", drop=("fold",))
    status = main(["run", str(strict_pipeline(tmp_path)), "--input", str(path), "--out", str(tmp_path / "out"), "-q"])
    assert status == 2 and "slices.fold: names column `fold`" in capsys.readouterr().err
