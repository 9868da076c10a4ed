"""`evalframe trec` on bad input and bad options: exit status 2, one message, no traceback.

Every failure prints ``evalframe: error: ...`` on stderr naming what is wrong (file, line or row,
column, value) and nothing at all on stdout: no partial output.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from evalframe.cli import main

GOOD_RUN = "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\nq2 Q0 d3 1 1.0 sys\n"
GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def good(tmp_path) -> dict[str, Path]:
    return {"run": write(tmp_path / "run.txt", GOOD_RUN), "qrels": write(tmp_path / "qrels.txt", GOOD_QRELS)}


def run_fails(capsys, args: list[str], *fragments: str) -> str:
    code = main(args)
    captured = capsys.readouterr()
    assert code == 2, (code, captured.err)
    assert captured.out == ""
    assert captured.err.startswith("evalframe: error:"), captured.err
    assert "Traceback" not in captured.err
    for fragment in fragments:
        assert fragment in captured.err, f"{fragment!r} not in:\n{captured.err}"
    return captured.err


def test_good_input_works(capsys, good):
    assert main(["trec", "-q", "-m", "P.1", "-m", "num_ret", str(good["qrels"]), str(good["run"])]) == 0
    captured = capsys.readouterr()
    lines = [line.split("\t") for line in captured.out.splitlines()]
    assert [(m.rstrip(), q, v) for m, q, v in lines] == [
        ("num_ret", "q1", "2"), ("P_1", "q1", "1.0000"),
        ("num_ret", "q2", "1"), ("P_1", "q2", "1.0000"),
        ("num_ret", "all", "3"), ("P_1", "all", "1.0000"),
    ]
    assert captured.err == ""


BAD_RUNS = {
    "non-numeric score": ("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 high sys\n", ["line 2", "`score`", "'high'"]),
    "duplicate doc": ("q1 Q0 d1 1 2.0 sys\nq1 Q0 d1 2 1.0 sys\n", ["line 2", "query_id='q1'", "doc_id='d1'"]),
    "empty file": ("", ["empty"]),
    "blank lines only": ("\n \n", ["empty"]),
    "too few fields": ("q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2\n", ["line 2", "expected 6 fields", "'q1 Q0 d2 2'"]),
}
BAD_QRELS = {
    "non-integer relevance": ("q1 0 d1 1\nq1 0 d2 1.5\n", ["line 2", "`relevance`", "'1.5'"]),
    "duplicate doc": ("q1 0 d1 1\nq1 0 d1 0\n", ["line 2", "query_id='q1'", "doc_id='d1'"]),
    "empty file": ("", ["empty"]),
    "too few fields": ("q1 0 d1\n", ["line 1", "expected 4 fields", "'q1 0 d1'"]),
}


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_trec_run(capsys, tmp_path, good, case):
    text, fragments = BAD_RUNS[case]
    path = write(tmp_path / "bad.run", text)
    run_fails(capsys, ["trec", "-q", str(good["qrels"]), str(path)], str(path), *fragments)


@pytest.mark.parametrize("case", list(BAD_QRELS))
def test_bad_trec_qrels(capsys, tmp_path, good, case):
    text, fragments = BAD_QRELS[case]
    path = write(tmp_path / "bad.qrels", text)
    run_fails(capsys, ["trec", "-q", str(path), str(good["run"])], str(path), *fragments)


def test_bad_parquet_relevance(capsys, tmp_path, good):
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [1.0, 1.5]}).write_parquet(path)
    run_fails(capsys, ["trec", str(path), str(good["run"])], str(path), "row 2", "`relevance`", "1.5")


def test_missing_column_in_csv_run(capsys, tmp_path, good):
    path = write(tmp_path / "run.csv", "query_id,docno,score\nq1,d1,1.0\n")
    run_fails(capsys, ["trec", str(good["qrels"]), str(path)], str(path), "`doc_id`", "missing")


def test_non_numeric_score_in_csv_run(capsys, tmp_path, good):
    path = write(tmp_path / "run.csv", "query_id,doc_id,score\nq1,d1,1.0\nq2,d3,n/a\n")
    run_fails(capsys, ["trec", str(good["qrels"]), str(path)], str(path), "line 3", "`score`", "'n/a'")


def test_missing_file(capsys, tmp_path, good):
    path = tmp_path / "absent.run"
    run_fails(capsys, ["trec", str(good["qrels"]), str(path)], str(path))


def test_judged_query_missing_from_run(capsys, tmp_path, good):
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 2.0 sys\n")
    run_fails(capsys, ["trec", "-q", str(good["qrels"]), str(path)], "'q2'", "-c")
    # with -c it is scored 0, and a note on stderr says so
    assert main(["trec", "-c", "-q", "-m", "num_ret", str(good["qrels"]), str(path)]) == 0
    captured = capsys.readouterr()
    assert "num_ret               \tq2\t0" in captured.out.splitlines()
    assert captured.err.startswith("evalframe: note:")


def test_unknown_measure_suggests_a_close_one(capsys, good):
    run_fails(capsys, ["trec", "-m", "ndgc_cut.10", str(good["qrels"]), str(good["run"])],
              "unknown trec measure `ndgc_cut`", "did you mean", "`ndcg_cut`")


@pytest.mark.parametrize("measure", ["bpref", "gm_map", "iprec_at_recall", "infAP", "relstring.20"])
def test_unsupported_trec_measure(capsys, good, measure):
    name = measure.split(".")[0]
    err = run_fails(capsys, ["trec", "-m", measure, str(good["qrels"]), str(good["run"])],
                    f"`{name}`", "not supported")
    assert "P" in err and "ndcg_cut" in err  # lists what is supported


@pytest.mark.parametrize(
    ("measure", "fragment"),
    [("P.x", "'x'"), ("P.0", ">= 1"), ("map.5", "takes no parameters")],
)
def test_bad_measure_parameters(capsys, good, measure, fragment):
    run_fails(capsys, ["trec", "-m", measure, str(good["qrels"]), str(good["run"])], f"`{measure}`", fragment)


def test_bad_measure_is_reported_before_reading_files(capsys, tmp_path):
    # a configuration error needs no input: the files do not even exist
    run_fails(capsys, ["trec", "-m", "bpref", str(tmp_path / "no.qrels"), str(tmp_path / "no.run")], "`bpref`")


def test_relevance_level_and_depth_options(capsys, good):
    args = ["trec", "-q", "-m", "num_rel", "-m", "num_ret", str(good["qrels"]), str(good["run"])]
    assert main([*args[:1], "-l", "2", "-M", "1", *args[1:]]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    values = {(m.rstrip(), q): v for m, q, v in lines}
    assert values[("num_rel", "q1")] == "0"  # d1 has grade 1 < 2
    assert values[("num_rel", "q2")] == "1"
    assert values[("num_ret", "q1")] == "1"  # cut at depth 1
    assert values[("num_ret", "all")] == "2"


def test_usage_errors_exit_with_status_two(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["trec", "--no-such-option", "a", "b"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error:" in captured.err
