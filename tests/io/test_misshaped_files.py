"""Mis-shaped files get evalframe's errors in the user's terms, never Polars' (issue 9, part 2).

A semicolon-separated Excel export with decimal commas, an empty file, a line with the wrong
number of fields, a TREC file that is really a CSV, and long problem lists summed up by kind.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main as cli_main
from evalframe.errors import MAX_LISTED_PROBLEMS, InputError, Problem, render_problems

EXCEL_PER_QUERY = (
    "post_id;criterion_id;fold;has_evidence_gold;p_has_evidence;gold_sent_uids;ranked_sent_uids;config\n"
    'p1;A.1;1;1;0,85;"[""s1""]";"[""s1"",""s2""]";full\n'
    'p1;A.2;1;0;0,20;[];"[""s2"",""s1""]";full\n'
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def message_of(call) -> str:
    with pytest.raises(InputError) as caught:
        call()
    text = str(caught.value)
    assert "Consider setting" not in text and "Schema" not in text  # never Polars' wording
    return text


def test_semicolon_excel_export_names_line_fields_and_how_to_declare_the_separator(tmp_path):
    path = write(tmp_path / "per_query.csv", EXCEL_PER_QUERY)
    text = message_of(lambda: ef.read_per_query(path))
    assert re.search(r"line 2: has \d fields, the header \(line 1\) has 1 \(value: .p1;A.1;", text)
    assert "looks semicolon-separated" in text
    assert 'separator=";"' in text and "`input:` block" in text
    assert "decimal_comma=True" in text


def test_declared_separator_and_decimal_comma_read_the_excel_export(tmp_path):
    path = write(tmp_path / "per_query.csv", EXCEL_PER_QUERY)
    tables = ef.read_per_query(path, separator=";", decimal_comma=True)
    assert tables.queries.sort("query_id").get_column("prob").to_list() == [0.85, 0.20]


def test_declared_separator_without_decimal_comma_hints_at_it(tmp_path):
    path = write(tmp_path / "per_query.csv", EXCEL_PER_QUERY)
    text = message_of(lambda: ef.read_per_query(path, separator=";"))
    assert "line 2, column `p_has_evidence`: is not a number (value: '0,85')" in text
    assert "decimal_comma=True" in text and "decimal_comma: true" in text


def test_semicolon_header_without_decimal_commas_is_caught_at_the_header(tmp_path):
    path = write(tmp_path / "run.csv", "query_id;doc_id;score\nq1;d1;1\nq1;d2;2\n")
    text = message_of(lambda: ef.read_run(path))
    assert "line 1: has 1 field separated by `,`, but 3 by `;`" in text
    assert "looks semicolon-separated" in text
    assert [row[:3] for row in ef.read_run(path, separator=";").sort("doc_id").rows()] == [("q1", "d1", 1.0), ("q1", "d2", 2.0)]


def test_qrels_table_reads_with_a_declared_separator(tmp_path):
    path = write(tmp_path / "qrels.csv", "query_id\tdoc_id\trelevance\nq1\td1\t1\n")
    assert ef.read_qrels(path, separator="\t").rows() == [("q1", "d1", 1)]


def test_a_separator_is_one_character(tmp_path):
    path = write(tmp_path / "run.csv", "query_id,doc_id,score\nq1,d1,1\n")
    with pytest.raises(ef.ConfigError, match="one character"):
        ef.read_run(path, separator=";;")


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
@pytest.mark.parametrize("name", ["run.csv", "run.parquet"])
def test_an_empty_table_file_says_the_file_is_empty(tmp_path, text, name):
    path = write(tmp_path / name, text)
    text = message_of(lambda: ef.read_run(path))
    assert text.endswith("1 problem\n  the file is empty")
    assert "the file is empty" in message_of(lambda: ef.read_per_query(write(tmp_path / "pq.csv", "")))
    assert "the file is empty" in message_of(lambda: ef.read_qrels(write(tmp_path / "q.csv", "")))


def test_ragged_lines_are_counted_by_number_of_fields(tmp_path):
    body = "".join("q1,d%d,1,extra\n" % i for i in range(60)) + "q1,only\n"
    path = write(tmp_path / "run.csv", "query_id,doc_id,score\n" + body)
    text = message_of(lambda: ef.read_run(path))
    assert "run.csv: 61 problems" in text
    # identical problems on many lines are said once, with their count and first line numbers
    assert "lines 2, 3, 4, 5, 6, … (60 lines): has 4 fields, the header (line 1) has 3 (first value: 'q1,d0,1,extra')" in text
    assert "1 line: has 2 fields, the header (line 1) has 3; the first at line 62" in text
    assert "more" not in text


def test_truncated_problems_give_the_total_of_each_kind(tmp_path):
    body = "".join(f"q{i},d,x{i}\n" for i in range(50_000))
    path = write(tmp_path / "run.csv", "query_id,doc_id,score\n" + body)
    text = message_of(lambda: ef.read_run(path))
    assert text.startswith(f"{path}: 50,000 problems")
    assert text.splitlines()[1:] == ["  lines 2, 3, 4, 5, 6, … (50,000 lines), column `score`: is not a number (first value: 'x0')"]
    assert MAX_LISTED_PROBLEMS == 20
    assert "and 49" not in text


def test_render_problems_sums_each_kind_across_listed_and_unlisted():
    problems = [Problem(f"line {i}", "score", "x", "is not a number") for i in range(2, 32)]
    problems += [Problem(f"line {i}", "relevance", "y", "is not an integer") for i in (40, 41)]
    problems += [Problem.unlisted("score", "is not a number", 100)]
    text = render_problems("f.csv", problems)
    assert text.splitlines()[0] == "f.csv: 132 problems"
    assert text.splitlines()[1:] == [
        "  lines 2, 3, 4, 5, 6, … (130 lines), column `score`: is not a number (first value: 'x')",
        "  line 40, column `relevance`: is not an integer (value: 'y')",
        "  line 41, column `relevance`: is not an integer (value: 'y')",
    ]
    assert render_problems("f.csv", problems[:3]).count("\n") == 3  # fewer than four alike: one line each


def test_trec_run_that_is_a_csv_gets_a_hint(tmp_path):
    path = write(tmp_path / "run.txt", "q1,Q0,d1,1,1.0,r\n")
    text = message_of(lambda: ef.read_run(path))
    assert "expected 6 fields" in text and "found 1" in text
    assert "looks comma-separated" in text and 'format="csv"' in text


def test_trec_lines_with_too_few_fields_are_counted_past_the_listed_ones(tmp_path):
    path = write(tmp_path / "qrels.txt", "".join(f"q{i} 0 d{i}\n" for i in range(70)))
    text = message_of(lambda: ef.read_qrels(path))
    assert "70 problems" in text
    assert "lines 1, 2, 3, 4, 5, … (70 lines): expected 4 fields (query_id iteration doc_id relevance), found 3" in text


def test_pipeline_input_block_declares_separator_and_decimal_comma(tmp_path):
    path = write(tmp_path / "per_query.csv", EXCEL_PER_QUERY)
    spec = {"version": 1, "name": "mini", "input": {"path": str(path), "separator": ";", "decimal_comma": True},
            "metrics": [{"subset": "all_queries", "names": ["brier"]}], "slices": {"overall": []}}
    ev = ef.Pipeline.from_mapping(spec).run()
    brier = ev.summary.filter(pl.col("metric") == "brier").get_column("value").item()
    assert brier == pytest.approx(((1 - 0.85) ** 2 + 0.20**2) / 2)


def test_cli_excel_export_exits_2_with_the_hint(tmp_path, capsys):
    """The refusal in-process (validate's exit 2 in a child process: tests/cli/test_cli_pipeline.py),
    the accepted rerun through the installed module in a child process."""
    path = write(tmp_path / "per_query.csv", EXCEL_PER_QUERY)
    status = cli_main(["validate", "--schema", "per_query", str(path)])
    stderr = capsys.readouterr().err
    assert status == 2 and "Traceback" not in stderr
    assert "looks semicolon-separated" in stderr
    done = subprocess.run([sys.executable, "-m", "evalframe.cli", "validate", "--schema", "per_query", str(path),
                           "--separator", ";", "--decimal-comma"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_pipeline_separator_is_checked_with_its_key_path():
    spec = {"version": 1, "name": "mini", "input": {"separator": ";;"},
            "metrics": [{"subset": "all_queries", "names": ["brier"]}]}
    with pytest.raises(ef.ConfigError, match=r"input\.separator: is not one of"):
        ef.Pipeline.from_mapping(spec)
