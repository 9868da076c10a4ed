"""`evalframe trec` against trec_eval's own expected outputs (tests/fixtures/trec_eval).

For each fixture, the lines of the measures evalframe supports must come out exactly as trec_eval
printed them (same measure, topic and value text, same order), and evalframe must print no line
the fixture lacks. The commands are those of the fixture folder's README.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from evalframe.cli import main

#: Measures evalframe computes, as trec_eval prints them.
SUPPORTED_PLAIN = {"runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "ndcg"}
SUPPORTED_CUT = re.compile(r"^(P|recall|ndcg_cut|map_cut|success)_\d+$")

#: fixture → `evalframe trec` arguments (trec_eval's command from the README).
COMMANDS = {
    "out.test": ["qrels.test", "results.test"],
    "out.test.a": ["-m", "all_trec", "qrels.test", "results.test"],
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aql": ["-m", "all_trec", "-q", "-l", "2", "qrels.rel_level", "results.test"],
}
MEAS_PARAMS = ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20",
               "qrels.test", "results.test"]


def is_supported(measure: str) -> bool:
    return measure in SUPPORTED_PLAIN or SUPPORTED_CUT.match(measure) is not None


def parse_lines(text: str) -> list[tuple[str, str, str]]:
    """``measure<TAB>topic<TAB>value`` lines → (measure without padding, topic, value text)."""
    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        assert len(fields) == 3, f"not a trec_eval line: {line!r}"
        rows.append((fields[0].rstrip(), fields[1], fields[2]))
    return rows


def expected_lines(trec_dir: Path, fixture: str, keep=is_supported) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Supported lines of a fixture, parsed and raw."""
    raw = [line for line in (trec_dir / fixture).read_text().splitlines() if keep(line.split("\t")[0].rstrip())]
    return parse_lines("\n".join(raw)), raw


def run_cli(capsys, trec_dir: Path, args: list[str]) -> tuple[str, str]:
    paths = {name: str(trec_dir / name) for name in ("qrels.test", "qrels.rel_level", "results.test", "results.trunc")}
    code = main(["trec", *(paths.get(arg, arg) for arg in args)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, captured.err


def assert_matches(actual_text: str, expected: list[tuple[str, str, str]], raw: list[str]) -> None:
    actual = parse_lines(actual_text)
    extra = [line for line in actual if line not in expected]
    missing = [line for line in expected if line not in actual]
    assert not extra, f"evalframe printed lines trec_eval did not: {extra[:10]}"
    assert not missing, f"lines trec_eval printed and evalframe did not: {missing[:10]}"
    assert actual == expected  # same values, same order
    assert actual_text.splitlines() == raw  # and the same padding and separators


@pytest.mark.parametrize("fixture", list(COMMANDS))
def test_matches_trec_eval_output(capsys, trec_dir, fixture):
    expected, raw = expected_lines(trec_dir, fixture)
    assert len(expected) >= 17  # the fixture really holds supported lines
    out, _ = run_cli(capsys, trec_dir, COMMANDS[fixture])
    assert_matches(out, expected, raw)


def test_matches_trec_eval_measure_parameters(capsys, trec_dir):
    def requested(measure: str) -> bool:
        return re.match(r"^(P|recall|success|ndcg_cut)_\d+$", measure) is not None

    expected, raw = expected_lines(trec_dir, "out.test.meas_params", keep=requested)
    # P_3, P_5, P_7, recall_20, recall_2000, ndcg_cut_10, _20, _23 (23.4 read as 23), success_2, _5, _20
    assert len(expected) == 4 * 11
    assert [m for m, topic, _ in expected if topic == "all"] == [
        "P_3", "P_5", "P_7", "recall_20", "recall_2000", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
        "success_2", "success_5", "success_20",
    ]
    out, _ = run_cli(capsys, trec_dir, MEAS_PARAMS)
    assert_matches(out, expected, raw)


def test_per_topic_lines_come_first(capsys, trec_dir):
    out, _ = run_cli(capsys, trec_dir, COMMANDS["out.test.aq"])
    topics = [topic for _, topic, _ in parse_lines(out)]
    first_all = topics.index("all")
    assert set(topics[:first_all]) == {"301", "302", "303"}
    assert set(topics[first_all:]) == {"all"}
    assert parse_lines(out)[first_all][0] == "runid"


def test_complete_flag_scores_the_missing_topic_and_says_so(capsys, trec_dir):
    out, err = run_cli(capsys, trec_dir, COMMANDS["out.test.aqc"])
    values = {(m, t): v for m, t, v in parse_lines(out)}
    assert values[("num_ret", "302")] == "0"
    assert values[("map", "302")] == "0.0000"
    assert values[("num_q", "all")] == "3"
    assert "absent from the run" in err


def test_missing_topic_without_complete_flag_is_an_error(capsys, trec_dir):
    code = main(["trec", "-q", str(trec_dir / "qrels.test"), str(trec_dir / "results.trunc")])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("evalframe: error:")
    assert "'302'" in captured.err and "-c" in captured.err


def test_command_line_program(trec_dir):
    """The installed entry point, in a child process, prints the same as `main`."""
    command = [sys.executable, "-m", "evalframe.cli", "trec", "-m", "all_trec", "-q",
               str(trec_dir / "qrels.test"), str(trec_dir / "results.test")]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    expected, raw = expected_lines(trec_dir, "out.test.aq")
    assert_matches(completed.stdout, expected, raw)
    assert completed.stdout.endswith("\n")


# --- the same run as Parquet / CSV tables -----------------------------------------------------


def _trec_to_tables(trec_dir: Path, folder: Path) -> dict[str, Path]:
    """Write results.test and qrels.test as long Parquet and CSV tables (parsed here, independently)."""
    run_rows = [line.split() for line in (trec_dir / "results.test").read_text().splitlines() if line.strip()]
    run = pl.DataFrame(
        {
            "query_id": [row[0] for row in run_rows],
            "doc_id": [row[2] for row in run_rows],
            "score": [float(row[4]) for row in run_rows],
            "system": [row[5] for row in run_rows],
        }
    )
    qrels_rows = [line.split() for line in (trec_dir / "qrels.test").read_text().splitlines() if line.strip()]
    qrels = pl.DataFrame(
        {
            "query_id": [row[0] for row in qrels_rows],
            "doc_id": [row[2] for row in qrels_rows],
            "relevance": [int(row[3]) for row in qrels_rows],
        }
    )
    paths = {
        "run.parquet": folder / "run.parquet",
        "qrels.parquet": folder / "qrels.parquet",
        "run.csv": folder / "run.csv",
        "qrels.csv": folder / "qrels.csv",
    }
    run.write_parquet(paths["run.parquet"])
    qrels.write_parquet(paths["qrels.parquet"])
    run.write_csv(paths["run.csv"])
    qrels.write_csv(paths["qrels.csv"])
    return paths


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_tables_give_identical_output(capsys, trec_dir, tmp_path, kind):
    paths = _trec_to_tables(trec_dir, tmp_path)
    text_out, _ = run_cli(capsys, trec_dir, COMMANDS["out.test.aq"])
    code = main(["trec", "-m", "all_trec", "-q", str(paths[f"qrels.{kind}"]), str(paths[f"run.{kind}"])])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out == text_out
    expected, raw = expected_lines(trec_dir, "out.test.aq")
    assert_matches(captured.out, expected, raw)
