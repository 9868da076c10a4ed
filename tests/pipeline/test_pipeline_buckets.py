"""A pipeline's input read out of core (``execution: {buckets: …}``, ``--buckets``;
:mod:`evalframe.pipeline.scanned`): the same results as the in-memory pipeline, on inputs given
as CSV, Parquet, NDJSON, folders and globs; errors naming the file, line, column and value;
temporary buckets removed."""

from __future__ import annotations

import csv
import io
import json
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.cli import main as cli_main
from evalframe.errors import ConfigError, InputError
from evalframe.pipeline.scanned import scans_input
from evalframe.results.run_info import describe_run

SAMPLE = "data_samples/per_query.csv"
#: Exactly equal between the paths: keys, counts, notes, statistics read off sorted per-unit values.
KEYS = ("grouping", "system", "fold", "state", "metric", "subset", "n", "n_skipped", "n_outside_subset", "note")
STATISTICS = ("median", "p25", "p75", "p90", "min", "max", "ci_low", "ci_high")
#: Sums added in another order (DESIGN §3): within 1e-12 relative; so are the statistics of the
#: across-folds rows, which are read off per-fold means.
SUMS = ("value", "std", "se")


@pytest.fixture(scope="module")
def per_query(tmp_path_factory):
    """Twenty-five posts of the sample (every criterion and config), a weight per post, rows shuffled:
    the CSV, and the same rows as Parquet, NDJSON and a folder of three CSV files."""
    folder = tmp_path_factory.mktemp("per_query")
    frame = pl.read_csv(SAMPLE, infer_schema=False)
    posts = frame.get_column("post_id").unique().sort().head(25)
    frame = frame.filter(pl.col("post_id").is_in(posts.implode()))
    rng = np.random.default_rng(27)
    weights = pl.DataFrame({"post_id": posts, "w": rng.integers(1, 4, posts.len()).astype(str)})
    frame = frame.join(weights, on="post_id", how="left").sample(fraction=1.0, shuffle=True, seed=27)
    frame.write_csv(folder / "per_query.csv")
    (folder / "parts").mkdir()
    third = frame.height // 3 + 1
    for index in range(3):  # in the file's order (systems are ordered by first appearance)
        frame.slice(index * third, third).write_csv(folder / "parts" / f"part{index}.csv")
    typed = pl.read_csv(folder / "per_query.csv")
    typed.write_parquet(folder / "per_query.parquet")
    return folder


#: Every metric family of the evidence pipeline, fewer of each (the whole list takes seconds).
_METRICS = [
    {"subset": "all_queries", "names": ["auroc", "auprc", "tpr@fpr=0.1", "f1", "brier", "ece", "neg_rate", "alert_precision",
                                        "n_queries", "selected_k"]},
    {"subset": "has_evidence", "names": ["recall@5", "recall@10", "ndcg@10", "mrr", "map@10", "evidence_precision@selected_k"]},
    {"subset": "all_queries", "names": ["macro_f1", "hamming_score"]},
]
_SLICES = {"overall": [], "fold": ["fold"], "state": ["state"]}
#: The γ sweep is not run with buckets (test_the_sweep_is_skipped_with_a_note); a coarser tuning grid.
_SETTINGS = {"weight": "w", "bootstrap.resamples": 20, "metrics": _METRICS, "slices": _SLICES, "dynamic_k_sweep": None,
             "tuning.grid": 0.05}
_OUTPUTS = ["summary.csv", "run.json"]


def _run(source, buckets=None, bootstrap=None, **settings):
    extra = {"execution.buckets": buckets} if buckets is not None else {}
    return ef.run_pipeline("evidence_contract", input=str(source), set={**_SETTINGS, **settings, **extra}, outputs=_OUTPUTS,
                           bootstrap=bootstrap)


@pytest.fixture(scope="module")
def in_memory(per_query):
    return _run(per_query / "per_query.csv")


@pytest.fixture(scope="module")
def in_memory_without_intervals(per_query):
    return _run(per_query / "per_query.csv", bootstrap=False)


def assert_same_summary(left: pl.DataFrame, right: pl.DataFrame) -> None:
    assert left.height == right.height > 0
    keys = [c for c in KEYS if c in left.columns]
    assert left.select(keys).equals(right.select(keys))
    per_unit = pl.col("grouping") != "across_folds"
    assert left.filter(per_unit).select(STATISTICS).equals(right.filter(per_unit).select(STATISTICS))
    for column in (*SUMS, *STATISTICS):
        close = np.isclose(left.get_column(column).to_numpy(), right.get_column(column).to_numpy(), rtol=1e-12, atol=0,
                           equal_nan=True)
        assert close.all(), (column, left.filter(~pl.Series(close)).head(3))


def test_buckets_equal_the_in_memory_pipeline(per_query, in_memory):
    """Every metric family of the evidence pipeline (ranking, gate and calibration set metrics,
    per-post multi-label, extraction), weights, slices and the post bootstrap: the summary is
    the in-memory one (intervals identical), per-unit values bit for bit, and so are the
    analyses on the result (ablation, tuning, checks)."""
    bucketed = _run(per_query / "per_query.csv", 5)
    assert_same_summary(in_memory.summary, bucketed.summary)
    key = ["system", "unit", "query_id", "post_id", "metric", "subset"]
    assert bucketed.per_unit_values.sort(key).equals(in_memory.per_unit_values.sort(key))
    for name in ("ablation", "tuning", "checks"):  # ablation rows are means across folds: their last bits may differ
        assert_frame_equal(bucketed.tables[name], in_memory.tables[name], check_exact=False, rel_tol=1e-12, abs_tol=0)
    assert bucketed.source["rows"] == in_memory.source["rows"]
    assert describe_run(bucketed)["tables"] == describe_run(in_memory)["tables"]


def test_parquet_in_buckets(per_query, in_memory_without_intervals):
    """Parquet (no bootstrap: the intervals are checked above). The other forms: a glob of CSV
    files (the CLI test), NDJSON (retrieval results), a folder (the bad cell)."""
    assert_same_summary(in_memory_without_intervals.summary, _run(per_query / "per_query.parquet", 3, bootstrap=False).summary)


def test_the_sweep_in_buckets_is_the_in_memory_sweep(per_query):
    """The dynamic-K γ sweep bucket by bucket (weights, softmax, the fold slice by default; γ = 1
    among the γs): the in-memory table — counts and quantiles (median_k, p90_k) exactly, means
    within 1e-12 — and run.json's record of it; nothing skipped."""
    settings = {**_SETTINGS, "metrics": [{"names": ["n_queries"]}], "targets": {}, "ablation": None, "tuning": None, "checks": None}
    for sweep in [{"gammas": [0.5, 0.9, 1.0], "k_max": 8, "normalize": "softmax"}]:
        results = [ef.run_pipeline("evidence_contract", input=str(per_query / "per_query.csv"), bootstrap=False,
                                   set={**settings, "dynamic_k_sweep": sweep, **extra}, outputs=_OUTPUTS)
                   for extra in ({}, {"execution.buckets": 4})]
        whole, bucketed = (result.tables["dynamic_k_sweep"] for result in results)
        assert set(whole.get_column("grouping")) == {"overall", "fold"} and whole.get_column("n_queries").sum() > 0
        exact = ["gamma", "grouping", "system", "n_queries", "median_k", "p90_k", "n_with_evidence", "sentences_extracted"]
        assert bucketed.select(exact).equals(whole.select(exact))
        assert_frame_equal(bucketed, whole, check_exact=False, rel_tol=1e-12, abs_tol=0)
        about = [describe_run(result) for result in results]
        assert about[1]["analyses"]["dynamic_k_sweep"] == about[0]["analyses"]["dynamic_k_sweep"]
        assert about[1]["skipped"] == about[0]["skipped"] and about[1]["notes"] == about[0]["notes"]


def test_retrieval_results_in_buckets(tmp_path):
    """Another row reader (JSON Lines of retrieval results, a column mapping, two systems)."""
    rng = np.random.default_rng(5)
    docs = [f"d{i}" for i in range(30)]
    rows = [{"case": f"q{q:03d}", "system": system, "retrieved_ids": list(rng.permutation(docs)[:8]),
             "gold_ids": [docs[q % 30], docs[(q + 1) % 30]], "tier": "AB"[q % 2]}
            for q in range(80) for system in ("bm25", "dense")]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    settings = {"input.columns": {"query_id": "case"}}
    whole = ef.run_pipeline("retrieval_gate", input=str(path), set=settings, outputs=["summary.csv"])
    bucketed = ef.run_pipeline("retrieval_gate", input=str(path), set={**settings, "execution.buckets": 4}, outputs=["summary.csv"])
    assert_same_summary(whole.summary, bucketed.summary)


def test_run_json_counts_the_tables_bucket_by_bucket(tmp_path):
    """run.json of a bucket run gives the in-memory run's row counts (input rows, ranking rows,
    judgments, queries, systems), added up while the buckets are read: generated retrieval
    results with lists of random lengths (some empty), queries one system lacks, and gold lists
    of zero to three ids."""
    rng = np.random.default_rng(27)
    docs = [f"d{i}" for i in range(40)]
    rows = [{"case": f"q{q:03d}", "system": system, "retrieved_ids": list(rng.permutation(docs)[:rng.integers(0, 12)]),
             "gold_ids": [docs[(q * 7 + i) % 40] for i in range(q % 4)], "tier": "AB"[q % 2]}
            for q in range(120) for system in ("bm25", "dense", "hybrid") if system != "hybrid" or q % 5]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    settings = {"input.columns": {"query_id": "case"}}
    written = {}
    for name, extra in (("whole", {}), ("bucketed", {"execution.buckets": 7})):
        ef.run_pipeline("retrieval_gate", input=str(path), set={**settings, **extra}, outputs=["run.json"], bootstrap=False,
                        out=tmp_path / name)
        written[name] = json.loads((tmp_path / name / "run.json").read_text())
    whole, bucketed = written["whole"], written["bucketed"]
    assert whole["input"]["rows"] == len(rows)
    assert whole["tables"]["ranking"] == sum(len(row["retrieved_ids"]) for row in rows) > 0
    assert whole["tables"]["judgments"] > 0
    assert bucketed["tables"] == whole["tables"]
    assert bucketed["input"]["rows"] == whole["input"]["rows"]


def _with_bad_cell(text: str, line: int, column: str, value: str) -> str:
    """A CSV text (of plain cells in ``column``) with ``column`` of line ``line`` (1-based) set to ``value``."""
    lines = text.splitlines(keepends=True)
    index = lines[0].rstrip("\n").split(",").index(column)
    cells = next(csv.reader([lines[line - 1]]))
    cells[index] = value
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    lines[line - 1] = buffer.getvalue()
    return "".join(lines)


@pytest.mark.parametrize("pipeline", ["detection", "retrieval_gate"])
def test_bundled_pipelines_of_other_row_formats_on_their_samples(pipeline):
    """``scores`` (detection, its cost curve) and ``retrieval_results`` (list-valued tag slices)."""
    whole = ef.run_pipeline(pipeline, bootstrap=False)
    bucketed = ef.run_pipeline(pipeline, bootstrap=False, set={"execution.buckets": 3})
    assert_frame_equal(bucketed.summary, whole.summary, check_exact=False, rel_tol=1e-12, abs_tol=0)
    for name, table in whole.tables.items():
        assert_frame_equal(bucketed.tables[name], table, check_exact=False, rel_tol=1e-12, abs_tol=0)


def test_a_bad_cell_names_the_file_line_column_and_value(per_query, tmp_path):
    """A bad value in the second file of a folder: the file and its own line, not the bucket's row."""
    folder = tmp_path / "parts"
    folder.mkdir()
    for path in sorted((per_query / "parts").glob("*.csv")):
        text = path.read_text()
        folder.joinpath(path.name).write_text(_with_bad_cell(text, 8, "p_has_evidence", "high") if path.name == "part1.csv" else text)
    with pytest.raises(InputError) as raised:
        _run(folder, 3, bootstrap=False)
    message = str(raised.value)
    assert f"{folder / 'part1.csv'} line 8" in message and "p_has_evidence" in message and "high" in message


@pytest.mark.parametrize("failure", ["bad cell", "ctrl-c"])
def test_a_failure_in_a_bucket_stops_the_run_and_removes_the_buckets(per_query, tmp_path, monkeypatch, failure):
    """Past the rows read before the split: a bad cell found when its bucket is read names the
    file's line (exit 2 from the CLI, nothing written), and Ctrl-C in the kernel leaves no
    bucket file behind."""
    monkeypatch.setattr("evalframe.pipeline.scanned.HEAD_ROWS", 5)
    scratch = tmp_path / "scratch"
    source = per_query / "per_query.csv"
    if failure == "bad cell":
        source = tmp_path / "bad.csv"
        source.write_text(_with_bad_cell((per_query / "per_query.csv").read_text(), 400, "p_has_evidence", "high"))
    else:
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr("evalframe.pipeline.scanned.evaluate_part", interrupted)
    with pytest.raises(InputError if failure == "bad cell" else KeyboardInterrupt) as raised:
        _run(source, 4, bootstrap=False, **{"execution.bucket_dir": str(scratch)})
    if failure == "bad cell":
        assert "line 400, column `p_has_evidence`" in str(raised.value) and "'high'" in str(raised.value)
    assert list(scratch.iterdir()) == []


def test_checks_spanning_rows_name_the_input_lines(per_query, tmp_path):
    """A duplicated (config, post, criterion) row and a gold list that differs between configs
    are found inside the query's bucket, and the error is the in-memory read's, word for word
    (the file's own lines)."""
    frame = pl.read_csv(per_query / "per_query.csv", infer_schema=False)
    query = frame.row(3, named=True)
    other = frame.with_row_index().filter((pl.col("post_id") == query["post_id"]) & (pl.col("criterion_id") == query["criterion_id"])
                                          & (pl.col("config") != query["config"])).get_column("index")[0]
    broken = {
        "duplicated": pl.concat([frame, frame.slice(10, 1)]),
        "gold": frame.with_columns(pl.when(pl.int_range(pl.len()) == other).then(pl.lit('["nowhere"]'))
                                   .otherwise(pl.col("gold_sent_uids")).alias("gold_sent_uids")),
    }
    for name, table in broken.items():
        path = tmp_path / f"{name}.csv"
        table.write_csv(path)
        with pytest.raises(InputError) as whole:
            _run(path, bootstrap=False)
        with pytest.raises(InputError) as bucketed:
            _run(path, 4, bootstrap=False)
        assert str(bucketed.value) == str(whole.value)
        assert "line" in str(whole.value)


def test_the_pipeline_is_checked_before_anything_is_split(per_query, tmp_path, monkeypatch):
    """A slice naming a column the input lacks: the preflight's error (exit 2), from the
    input's head, before a bucket file is written."""

    def never(*args, **kwargs):
        raise AssertionError("split before the preflight")

    monkeypatch.setattr("evalframe.pipeline.scanned.sink_buckets", never)
    with pytest.raises(ConfigError, match="domain"):
        _run(per_query / "per_query.csv", 3, **{"slices.domain": ["domain"]})


def test_cli_run_with_buckets_writes_what_the_in_memory_run_writes_and_cleans_up(per_query, in_memory_without_intervals,
                                                                                 tmp_path, capsys):
    """``evalframe run … --buckets auto`` on a glob: the in-memory run's summary.csv, byte for byte;
    on a bad input exit 2, nothing written, and the bucket folder removed."""
    scratch = tmp_path / "scratch"
    common = ["run", "evidence_contract", "--no-bootstrap", "--outputs", "summary.csv", "-q",
              *(part for key, value in _SETTINGS.items() for part in ("--set", f"{key}={json.dumps(value)}"))]
    in_memory_without_intervals.write(tmp_path / "a")
    assert cli_main([*common, "--input", str(per_query / "parts" / "*.csv"), "--out", str(tmp_path / "b"),
                     "--buckets", "auto", "--bucket-dir", str(scratch)]) == 0
    assert (tmp_path / "a" / "summary.csv").read_bytes() == (tmp_path / "b" / "summary.csv").read_bytes()
    assert list(scratch.iterdir()) == []
    bad = tmp_path / "bad.csv"
    bad.write_text(_with_bad_cell((per_query / "per_query.csv").read_text(), 6, "has_evidence_gold", "2"))
    capsys.readouterr()
    assert cli_main([*common, "--input", str(bad), "--out", str(tmp_path / "c"), "--buckets", "2",
                     "--bucket-dir", str(scratch)]) == 2
    assert "line 6" in capsys.readouterr().err
    assert not (tmp_path / "c").exists() and list(scratch.iterdir()) == []


def test_which_inputs_are_read_out_of_core(per_query):
    """Formats read row by row, given as paths, with buckets set; the rest is read whole."""
    pipeline = ef.load_pipeline("evidence_contract", set={"execution.buckets": 2})
    assert scans_input(pipeline, str(per_query / "per_query.csv"))
    assert not scans_input(pipeline, pl.DataFrame())
    assert not scans_input(ef.load_pipeline("evidence_contract"), str(per_query / "per_query.csv"))
    assert not scans_input(ef.load_pipeline("rag", set={"execution.buckets": 2}), "outputs.jsonl")
    judged = ef.load_pipeline("retrieval_gate", set={"execution.buckets": 2, "metrics": [{"names": ["llm_faithfulness"]}]})
    assert not scans_input(judged, "results.jsonl")  # the judge is asked about the whole input at once


def test_check_pipeline_with_buckets_scans_the_input(per_query, capsys):
    """``evalframe check-pipeline … --buckets`` checks a glob as ``run`` would, splitting nothing."""
    assert cli_main(["check-pipeline", "evidence_contract", "--input", str(per_query / "parts" / "*.csv"), "--buckets", "2"]) == 0
    assert "before splitting it into buckets" in capsys.readouterr().out
    assert cli_main(["check-pipeline", "evidence_contract", "--input", str(per_query / "parts" / "*.csv"), "--buckets", "2",
                     "--set", "slices.domain=[domain]"]) == 2
    assert "domain" in capsys.readouterr().err


def test_a_semicolon_file_gets_the_eager_readers_hint(per_query, tmp_path):
    """A CSV whose header splits only with `;`: the in-memory read's hint (its lines of other
    shapes are not read: the header says it all)."""
    path = tmp_path / "excel.csv"
    pl.read_csv(per_query / "per_query.csv", infer_schema=False).head(30).write_csv(path, separator=";")
    with pytest.raises(InputError) as whole:
        _run(path, bootstrap=False)
    with pytest.raises(InputError) as bucketed:
        _run(path, 2, bootstrap=False)
    assert bucketed.value.hint == whole.value.hint and "semicolon-separated" in whole.value.hint
    assert bucketed.value.problems[0].location == "line 1"


def test_rows_are_located_as_the_eager_readers_locate_them(tmp_path):
    """CSV: line = row + 2 (the header); NDJSON: blank lines counted; Parquet: row N; several
    files: the file's path first."""
    from evalframe.io.scan import scan_rows

    (tmp_path / "a.jsonl").write_text('{"x": 1}\n\n{"x": 2}\n')
    pl.DataFrame({"x": [1, 2]}).write_parquet(tmp_path / "t.parquet")
    (tmp_path / "csv").mkdir()
    for name in ("a", "b"):
        (tmp_path / "csv" / f"{name}.csv").write_text("x\n1\n2\n")
    assert scan_rows(tmp_path / "a.jsonl").locate(0, 1) == "line 3"
    assert scan_rows(tmp_path / "t.parquet").locate(0, 1) == "row 2"
    folder = scan_rows(tmp_path / "csv")
    assert folder.locate(1, 0) == f"{tmp_path / 'csv' / 'b.csv'} line 2"
    assert folder.frame.collect().height == 4
