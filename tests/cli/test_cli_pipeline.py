"""``evalframe run`` / ``evalframe validate`` on the evidence-contract pipeline.

The bundled sample runs twice per test run: once through the installed executable and once
through ``ef.run_pipeline(...)`` and ``Evaluation.write`` in a test process (README.md's Python
block, run by tests/readme_blocks.py); the two output folders must be byte-identical. Error cases run through ``cli.main`` in-process (and two of them
through the executable) on small files.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from built_once import BUNDLED_CLI_RUN, start_bundled_cli_run, started_result
from pipeline_reference import BAD_FILES, GOOD_PER_QUERY_LINES, PER_QUERY_HEADER, RANKING_METRICS
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.cli import main
from evalframe.results.writer import MANIFEST, write_result

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"
SAMPLE = REPO_ROOT / "data_samples" / "per_query.csv"
EXECUTABLE = Path(sys.executable).with_name("evalframe")
#: The five declared outputs and the result tables of the stages after the engine (issue 10).
OUTPUT_FILES = ["ablation.csv", "checks.csv", "curves.parquet", "dynamic_k_sweep.csv", "per_query.parquet",
                "per_unit.parquet", "plots", "report.html", "report.md", "report.tex",
                "report_tables.csv", "run.json", "summary.csv", "summary.md", "summary.parquet", "threshold_tuning.csv",
                "tuning.csv"]
SUMMARY_COLUMNS = ["grouping", "system", "fold", "criterion_id", "state", "label", "metric", "unit", "subset", "n",
                   "n_skipped", "n_outside_subset", "value", "std", "median", "p25", "p75", "p90", "min", "max",
                   "se", "ci_low", "ci_high", "note", "params", "target"]
#: The sample's six configs (contract §8.1), as the summary sorts them.
SYSTEMS = ["full_pipeline", "plus_jina_reranker", "plus_p2_dynamic_k", "plus_p3_graph_reranker", "plus_p4_ne_gate",
           "retriever_only"]
#: Per config: queries, queries with evidence, posts (data_samples/README.md).
N_QUERIES, N_WITH_EVIDENCE, N_POSTS = 5000, 466, 500
#: Metrics of the bundled pipeline besides the §2 and §3 ones, on all queries and on queries with evidence.
EXTRACTION_ALL_QUERIES = ["selected_k", "n_extracted", "n_queries", "n_positive", "positive_rate"]
EXTRACTION_WITH_EVIDENCE = ["evidence_recall@selected_k", "evidence_precision@selected_k"]
OUTSIDE = "outside subset: queries with has_evidence_gold = 1"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def evalframe_command(*args: str) -> list[str]:
    if not EXECUTABLE.is_file():
        pytest.fail(f"the `evalframe` console script is not installed beside {sys.executable}")
    return [str(EXECUTABLE), *args]


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory, bundled_sample_run):
    """A CLI run (another process, started in the background at the start of the test run:
    tests/conftest.py) and an ``ef.run_pipeline`` run of the bundled pipeline written by
    ``Evaluation.write`` (the session's :func:`bundled_sample_run`: README.md's Python block,
    shared with test_cli_stats and tests/docs/test_readme.py), each once per test run, both with
    ``bootstrap.resamples`` set to ``TEST_RESAMPLES`` and the pipeline's and input's paths given
    alike (run.json records them as given)."""
    start_bundled_cli_run(tmp_path_factory)  # nothing if already started
    root, process = started_result(tmp_path_factory, BUNDLED_CLI_RUN)
    cli_out = root / "run" / "out"
    result, python_out = bundled_sample_run
    return {"cli": cli_out, "python": python_out, "result": result, "process": process}


# --- outputs of a good run ----------------------------------------------------------------------


def test_cli_run_succeeds_and_says_where_it_wrote(sample_runs):
    status, stdout, stderr = sample_runs["process"]
    assert status == 0, stderr
    # stderr holds notes only: the slices that do not group posts
    # one note per unit, said once per run, in lines of at most 100 columns
    assert " ".join(line.strip() for line in stderr.splitlines()) == (
        "evalframe: note: slices `criterion`, `state`, `has_evidence` do not apply to unit `post` "
        "(`criterion_id`, `state`, `label` vary within a post): no rows")
    assert max(len(line) for line in [*stderr.splitlines(), *stdout.splitlines()]) <= 100
    assert f"wrote {sample_runs['cli']}/" in stdout
    assert "system full_pipeline" in stdout and "system retriever_only" in stdout


def test_writes_exactly_the_listed_outputs_and_nothing_beside_them(sample_runs):
    for out in (sample_runs["cli"], sample_runs["python"]):
        assert sorted(p.name for p in out.iterdir()) == [MANIFEST, *OUTPUT_FILES]
        assert [p.name for p in out.parent.iterdir()] == [out.name]  # no staging folder left behind


def test_two_runs_give_byte_identical_files(sample_runs):
    """Two runs in two processes (CLI and Python API) write the same bytes, report files and
    every plot (PNG and SVG) included."""
    files = sorted(p.relative_to(sample_runs["cli"]) for p in sample_runs["cli"].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(sample_runs["python"]) for p in sample_runs["python"].rglob("*") if p.is_file())
    assert any(name.suffix == ".svg" for name in files) and any(name.suffix == ".png" for name in files)
    for name in files:
        assert sha256(sample_runs["cli"] / name) == sha256(sample_runs["python"] / name), name


def test_python_summary_equals_the_clis_summary_parquet(sample_runs):
    written = pl.read_parquet(sample_runs["cli"] / "summary.parquet")
    assert_frame_equal(sample_runs["result"].summary, written, check_exact=True)
    per_query = pl.read_parquet(sample_runs["cli"] / "per_query.parquet")
    assert_frame_equal(sample_runs["result"].per_query, per_query, check_exact=True)


def test_summary_table_shape(sample_runs):
    summary = pl.read_parquet(sample_runs["cli"] / "summary.parquet")
    assert summary.columns == SUMMARY_COLUMNS
    assert set(summary.get_column("grouping")) == {"overall", "fold", "criterion", "state", "has_evidence", "across_folds"}
    assert summary.get_column("system").null_count() == 0
    assert sorted(summary.get_column("system").unique()) == SYSTEMS
    counts = summary.group_by("grouping").len()
    # + 7 dynamic-K and count metrics, + 7 gate metrics; criterion, state, label do not slice posts
    n_query_metrics, n_post_metrics = 46 + 7 + 7, 7
    n_metrics = n_query_metrics + n_post_metrics
    n_systems = len(SYSTEMS)
    # Five configs gate NEG / POS, the full pipeline NEG / UNCERTAIN / POS.
    n_states = 5 * 2 + 3
    assert dict(counts.iter_rows()) == {
        "overall": n_systems * n_metrics, "fold": n_systems * 5 * n_metrics,
        "criterion": n_systems * 10 * n_query_metrics, "state": n_states * n_query_metrics,
        "has_evidence": n_systems * 2 * n_query_metrics, "across_folds": n_systems * n_metrics,
    }
    # No row mixes systems: each slice counts one system's units (5,000 queries, 500 posts).
    overall = summary.filter(pl.col("grouping") == "overall")
    totals = overall.group_by("unit").agg((pl.col("n") + pl.col("n_skipped")).unique())
    assert dict(totals.iter_rows()) == {"query": [N_QUERIES], "post": [N_POSTS]}
    folds = summary.filter(pl.col("grouping") == "fold", pl.col("metric") == "mrr")
    assert folds.select(pl.col("n") + pl.col("n_skipped")).to_series().sum() == n_systems * N_QUERIES
    # Every skipped query of a ranking metric on has_evidence is outside the subset, not undefined.
    mrr = overall.filter(pl.col("metric") == "mrr")
    assert mrr.select((pl.col("n_outside_subset") == pl.col("n_skipped")).all()).item()
    assert mrr.get_column("n_outside_subset").to_list() == [N_QUERIES - N_WITH_EVIDENCE] * n_systems
    assert summary.filter(pl.col("grouping") == "fold").get_column("fold").null_count() == 0
    assert summary.filter(pl.col("grouping") == "criterion").get_column("criterion_id").null_count() == 0


def test_summary_csv_matches_parquet(sample_runs):
    out = sample_runs["cli"]
    from_parquet = pl.read_parquet(out / "summary.parquet")
    from_csv = pl.read_csv(out / "summary.csv", schema=from_parquet.schema)
    assert (out / "summary.csv").read_text().splitlines()[0] == ",".join(SUMMARY_COLUMNS)
    assert_frame_equal(from_csv, from_parquet, check_exact=False, rel_tol=0, abs_tol=1e-9)


def test_per_query_output_is_tidy(sample_runs):
    per_query = pl.read_parquet(sample_runs["cli"] / "per_query.parquet")
    assert per_query.columns == [
        "system", "query_id", "post_id", "criterion_id", "fold", "state", "label", "metric", "value", "skip_reason"]
    # brier and the extraction counts on every query, the ranking and evidence metrics on the
    # queries with evidence only
    n_systems = len(SYSTEMS)
    assert per_query.height == (n_systems * N_QUERIES * (1 + len(EXTRACTION_ALL_QUERIES))
                                + n_systems * N_WITH_EVIDENCE * (len(RANKING_METRICS) + len(EXTRACTION_WITH_EVIDENCE)))
    assert per_query.filter(pl.col("skip_reason").str.starts_with("outside subset")).height == 0
    assert per_query.select(pl.struct("system", "query_id", "metric").is_unique().all()).item()


def test_run_json_describes_input_counts_and_skips(sample_runs):
    info = json.loads((sample_runs["cli"] / "run.json").read_text())
    assert info["pipeline"]["name"] == "evidence_contract"
    assert info["input"]["sha256"] == sha256(SAMPLE)
    assert info["input"]["rows"] == len(SYSTEMS) * N_QUERIES
    assert info["tables"]["queries"] == len(SYSTEMS) * N_QUERIES
    assert info["tables"]["systems"] == [
        {"system": system, "queries": N_QUERIES, "with_evidence": N_WITH_EVIDENCE} for system in SYSTEMS
    ]
    skipped = {(entry["system"], entry["metric"]): (entry["reason"], entry["count"]) for entry in info["skipped_units"]}
    assert skipped == {(system, metric): (OUTSIDE, N_QUERIES - N_WITH_EVIDENCE) for system in SYSTEMS
                       for metric in [*RANKING_METRICS, *EXTRACTION_WITH_EVIDENCE]}
    summary = pl.read_parquet(sample_runs["cli"] / "summary.parquet")
    assert info["undefined_values"] == summary.filter(pl.col("value").is_null()).height


def test_summary_markdown_has_both_systems(sample_runs):
    text = (sample_runs["cli"] / "summary.md").read_text()
    assert text.startswith("# evidence_contract\n")
    for system in SYSTEMS:
        assert f"system `{system}`" in text
    assert "0.9206" in text  # full_pipeline's overall AUROC (data_samples/README.md)
    assert "## Dynamic k sweep" in text  # the γ sweep table's section


# --- validate ------------------------------------------------------------------------------------


def test_validate_accepts_a_good_file(tmp_path, capsys):
    path = tmp_path / "good.csv"
    path.write_text("\n".join([PER_QUERY_HEADER, *GOOD_PER_QUERY_LINES]) + "\n")
    assert main(["validate", "--schema", "per_query", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith(f"{path}: ok: 4 rows, 4 queries in 1 config(s)")


# --- the declared error cases through the command line ------------------------------------------


def assert_clean_error(status: int, stdout: str, stderr: str, path: Path, location: str | None) -> None:
    assert status == 2
    assert stdout == ""
    assert stderr.startswith("evalframe: error:"), stderr
    assert "Traceback" not in stderr
    assert str(path) in stderr
    if location is not None:
        assert location in stderr


@pytest.mark.parametrize("bad", BAD_FILES, ids=lambda bad: bad.name)
def test_validate_reports_bad_input_with_status_2(bad, tmp_path, capsys):
    path = bad.write(tmp_path)
    status = main(["validate", "--schema", "per_query", str(path)])
    captured = capsys.readouterr()
    assert_clean_error(status, captured.out, captured.err, path, bad.location)
    if bad.value is not None:
        assert bad.value in captured.err


@pytest.mark.parametrize("bad", BAD_FILES, ids=lambda bad: bad.name)
def test_run_on_bad_input_writes_nothing(bad, tmp_path, capsys):
    path = bad.write(tmp_path)
    out = tmp_path / "results" / "out"
    status = main(["run", str(PIPELINE), "--input", str(path), "--out", str(out)])
    captured = capsys.readouterr()
    assert_clean_error(status, captured.out, captured.err, path, bad.location)
    assert not out.exists()
    assert not (tmp_path / "results").exists() or list((tmp_path / "results").iterdir()) == []


@pytest.mark.parametrize("bad", BAD_FILES, ids=lambda bad: bad.name)
def test_run_on_bad_input_leaves_an_existing_output_folder_untouched(bad, tmp_path, capsys):
    path = bad.write(tmp_path)
    out = tmp_path / "results" / "out"
    write_result(out, {"summary.csv": lambda file: file.write_text("previous results\n")})  # an earlier result
    (out / "notes.txt").write_text("kept\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    status = main(["run", str(PIPELINE), "--input", str(path), "--out", str(out), "--force"])
    captured = capsys.readouterr()
    assert_clean_error(status, captured.out, captured.err, path, bad.location)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in out.parent.iterdir()] == ["out"]


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_installed_executable_reports_bad_input_with_status_2(command, tmp_path):
    bad = next(b for b in BAD_FILES if b.name == "duplicate_key")
    path = bad.write(tmp_path)
    out = tmp_path / "out"
    args = ["validate", "--schema", "per_query", str(path)] if command == "validate" else [
        "run", str(PIPELINE), "--input", str(path), "--out", str(out)]
    finished = subprocess.run(evalframe_command(*args), capture_output=True, text=True, timeout=120)
    assert_clean_error(finished.returncode, finished.stdout, finished.stderr, path, bad.location)
    assert not out.exists()


# --- bad pipeline definitions ---------------------------------------------------------------------


def _bad_pipeline(tmp_path: Path, change) -> Path:
    spec = yaml.safe_load(PIPELINE.read_text())
    change(spec)
    path = tmp_path / "bad_pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


BAD_PIPELINES = {
    "unknown_key": (lambda spec: spec.update(slicez={"overall": []}), ["slicez"]),
    "unknown_metric": (lambda spec: spec["metrics"][0]["names"].append("aurocc"), ["aurocc", "did you mean `auroc`"]),
    "unknown_subset": (lambda spec: spec["metrics"][1].update(subset="with_gold"), ["with_gold"]),
}


@pytest.mark.parametrize("case", sorted(BAD_PIPELINES))
def test_bad_pipeline_exits_2_and_writes_nothing(case, tmp_path, capsys):
    change, expected = BAD_PIPELINES[case]
    path = _bad_pipeline(tmp_path, change)
    out = tmp_path / "out"
    status = main(["run", str(path), "--input", str(SAMPLE), "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    assert captured.err.startswith("evalframe: error:") and "Traceback" not in captured.err
    for text in expected:
        assert text in captured.err
    assert not out.exists()
    with pytest.raises(ef.ConfigError):
        ef.load_pipeline(path)


def test_unknown_pipeline_name_exits_2(tmp_path, capsys):
    status = main(["run", "no_such_pipeline", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 2
    assert "no_such_pipeline" in captured.err and "evidence_contract" in captured.err
    assert not (tmp_path / "out").exists()


def test_bundled_pipeline_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the name works from any folder
    pipeline = ef.load_pipeline("evidence_contract")
    assert pipeline.name == "evidence_contract"
    assert len(pipeline.metrics) == 46 + 7 + 7 + 7


def test_the_bundled_pipeline_finds_its_sample_from_any_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no data_samples/ here
    # the test reads run.json only: no bootstrap, no report
    assert main(["run", "evidence_contract", "--out", str(tmp_path / "out"), "--no-bootstrap", "--outputs", "run.json"]) == 0
    info = json.loads((tmp_path / "out" / "run.json").read_text())
    assert Path(info["input"]["path"]).name == "per_query.csv" and info["input"]["rows"] == len(SYSTEMS) * N_QUERIES


def test_a_missing_input_suggests_the_input_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text("version: 1\ninput: {path: nowhere.csv}\nmetrics: [{names: [mrr]}]\n")
    assert main(["run", "p.yaml", "--out", "out"]) == 2
    err = capsys.readouterr().err
    assert "nowhere.csv: 1 problem" in err and "file not found" in err and "--input FILE" in err
    assert not (tmp_path / "out").exists()
