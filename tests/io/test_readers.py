"""Readers: TREC run/qrels text, long Parquet/CSV tables with a column mapping, and bad input.

Every bad input raises :class:`evalframe.InputError` whose message names the file, the line or
row, the column and the offending value (where the problem has them).
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe import _sorting
from evalframe.data.conform import _all_distinct, _keys_distinct, _stretch_length


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def rows(frame: pl.DataFrame, *columns: str) -> list[tuple]:
    return frame.select(columns).rows()


# --- TREC text ---------------------------------------------------------------------------------


def test_trec_run_fields_separated_by_tabs_and_runs_of_spaces(tmp_path):
    path = write(
        tmp_path / "run.txt",
        "301\tQ0\tFR940202-2-00150\t104\t  2.129133\tSTANDARD\n"
        "301   Q0  doc#2    2   1.5     STANDARD\n"
        "  302 Q0 a#b#c 1 -0.25 STANDARD  \n",
    )
    run = ef.read_run(path)
    assert rows(run, "system", "query_id", "doc_id", "score") == [
        ("STANDARD", "301", "FR940202-2-00150", 2.129133),
        ("STANDARD", "301", "doc#2", 1.5),
        ("STANDARD", "302", "a#b#c", -0.25),
    ]
    assert run.schema["score"] == pl.Float64
    assert "rank" not in run.columns  # trec_eval ignores the file's rank field


def test_trec_run_ignores_blank_lines_and_extra_trailing_fields(tmp_path):
    path = write(
        tmp_path / "run.txt",
        "\n"
        "301 Q0 d1 1 2.0 tag more junk at\n"
        "   \n"
        "\t\n"
        "301 Q0 d2 2 1.0 tag end of lines.\n"
        "\n",
    )
    assert rows(ef.read_run(path), "query_id", "doc_id", "score", "system") == [
        ("301", "d1", 2.0, "tag"),
        ("301", "d2", 1.0, "tag"),
    ]


def test_trec_run_rank_field_is_ignored_for_ordering(tmp_path, make_qrels, metric_values):
    # file ranks say d1 first; scores say d2 first (trec_eval orders by score)
    path = write(tmp_path / "run.txt", "q Q0 d1 1 1.0 r\nq Q0 d2 2 5.0 r\n")
    result = ef.evaluate(ef.read_run(path), make_qrels({"q": {"d2": 1}}), metrics=["mrr"])
    assert metric_values(result, "mrr") == {"q": 1.0}


def test_trec_qrels(tmp_path):
    path = write(
        tmp_path / "qrels.txt",
        "301 0 CR93E-10279 0\n"
        "\n"
        "301\t0\tdoc#1\t2\n"
        "301  1   FR-1   -1   extra fields\n"
        "007 0 d 1\n",
    )
    qrels = ef.read_qrels(path)
    assert rows(qrels, "query_id", "doc_id", "relevance") == [
        ("301", "CR93E-10279", 0),
        ("301", "doc#1", 2),
        ("301", "FR-1", -1),
        ("007", "d", 1),
    ]
    assert qrels.schema["relevance"] == pl.Int64


def test_trec_identifiers_keep_their_spelling(tmp_path):
    run = ef.read_run(write(tmp_path / "run", "007 Q0 0042 1 1 tag\n1e3 Q0 1.0 2 0.5 tag\n"))
    assert rows(run, "query_id", "doc_id") == [("007", "0042"), ("1e3", "1.0")]


def test_trec_format_is_chosen_by_suffix_or_explicitly(tmp_path):
    path = write(tmp_path / "run.csv", "q Q0 d 1 1.0 tag\n")  # TREC text despite the suffix
    assert rows(ef.read_run(path, format="trec"), "doc_id") == [("d",)]


# --- long tables ------------------------------------------------------------------------------


def test_parquet_with_column_mapping(tmp_path):
    path = tmp_path / "run.parquet"
    frame = pl.DataFrame({"qid": ["q1", "q1"], "docno": ["a", "b"], "sim": [0.5, 0.25], "tag": ["bm25", "bm25"]})
    frame.write_parquet(path)
    run = ef.read_run(path, columns={"query_id": "qid", "doc_id": "docno", "score": "sim", "system": "tag"})
    assert rows(run, "system", "query_id", "doc_id", "score") == [("bm25", "q1", "a", 0.5), ("bm25", "q1", "b", 0.25)]


def test_parquet_qrels_with_integer_ids(tmp_path):
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"qid": [301, 302], "docno": ["a", "b"], "rel": [1, 0]}).write_parquet(path)
    qrels = ef.read_qrels(path, columns={"query_id": "qid", "doc_id": "docno", "relevance": "rel"})
    assert rows(qrels, "query_id", "doc_id", "relevance") == [("301", "a", 1), ("302", "b", 0)]
    assert qrels.schema["query_id"] == pl.String


def test_parquet_relevance_stored_as_whole_floats_is_accepted(tmp_path):
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [2.0]}).write_parquet(path)
    assert rows(ef.read_qrels(path), "relevance") == [(2,)]


def test_csv_with_column_mapping_keeps_identifier_spelling(tmp_path):
    path = write(tmp_path / "run.csv", "qid,docno,sim\n007,0042,1.5\n7,42,0.5\n007,1e3,0.25\n")
    run = ef.read_run(path, columns={"query_id": "qid", "doc_id": "docno", "score": "sim"})
    assert rows(run, "query_id", "doc_id", "score") == [("007", "0042", 1.5), ("7", "42", 0.5), ("007", "1e3", 0.25)]
    assert run.get_column("system").unique().to_list() == ["default"]


def test_csv_qrels_and_tsv(tmp_path):
    qrels = ef.read_qrels(write(tmp_path / "qrels.csv", "query_id,doc_id,relevance\n007,a,2\n007,b,-1\n"))
    assert rows(qrels, "query_id", "doc_id", "relevance") == [("007", "a", 2), ("007", "b", -1)]
    run = ef.read_run(write(tmp_path / "run.tsv", "query_id\tdoc_id\trank\n007\ta\t1\n007\tb\t2\n"))
    assert rows(run, "query_id", "doc_id", "rank") == [("007", "a", 1), ("007", "b", 2)]


def test_dataframe_with_column_mapping():
    frame = pl.DataFrame({"q": ["1"], "d": ["x"], "s": [3.0]})
    run = ef.read_run(frame, columns={"query_id": "q", "doc_id": "d", "score": "s"})
    assert rows(run, "query_id", "doc_id", "score", "system") == [("1", "x", 3.0, "default")]
    assert frame.columns == ["q", "d", "s"]  # the caller's frame is not modified


# --- bad input --------------------------------------------------------------------------------


def error_of(read, *args, **kwargs) -> ef.InputError:
    with pytest.raises(ef.InputError) as caught:
        read(*args, **kwargs)
    return caught.value


def assert_names(error: ef.InputError, *fragments: str) -> None:
    message = str(error)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in message:\n{message}"


def test_trec_run_non_numeric_score(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 1.0 r\nq Q0 d2 2 abc r\n")
    error = error_of(ef.read_run, path)
    assert_names(error, str(path), "line 2", "`score`", "'abc'", "not a number")
    assert error.source == str(path)
    [problem] = error.problems
    assert (problem.location, problem.column, problem.value) == ("line 2", "score", "abc")


def test_trec_run_non_finite_score(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 inf r\n")
    assert_names(error_of(ef.read_run, path), str(path), "line 1", "`score`", "finite")


def test_nan_score_in_parquet_is_reported_once_as_not_finite(tmp_path):
    path = tmp_path / "run.parquet"
    pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, float("nan")]}).write_parquet(path)
    error = error_of(ef.read_run, path)
    assert_names(error, str(path), "row 2", "`score`", "(value: nan)")
    assert "NaN" in str(error) or "finite" in str(error)
    # NaN is a value, not an empty cell: one problem, not also "is empty"
    assert "is empty" not in str(error)
    assert len(error.problems) == 1, str(error)


def test_trec_qrels_non_integer_relevance(tmp_path):
    path = write(tmp_path / "qrels.txt", "q 0 d1 1\n\nq 0 d2 1.5\n")
    error = error_of(ef.read_qrels, path)
    # blank line 2 still counts: the bad value is on line 3 of the file
    assert_names(error, str(path), "line 3", "`relevance`", "'1.5'", "not an integer")


def test_trec_qrels_relevance_below_minus_one(tmp_path):
    path = write(tmp_path / "qrels.txt", "q 0 d1 -2\n")
    assert_names(error_of(ef.read_qrels, path), str(path), "line 1", "`relevance`", "-2")


def test_parquet_non_integer_relevance(tmp_path):
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"qid": ["q", "q"], "docno": ["a", "b"], "rel": [1.0, 1.5]}).write_parquet(path)
    error = error_of(ef.read_qrels, path, columns={"query_id": "qid", "doc_id": "docno", "relevance": "rel"})
    assert_names(error, str(path), "row 2", "`rel`", "1.5", "not an integer")


def test_csv_non_integer_relevance(tmp_path):
    path = write(tmp_path / "qrels.csv", "query_id,doc_id,relevance\nq,a,1\nq,b,1.5\n")
    assert_names(error_of(ef.read_qrels, path), str(path), "line 3", "`relevance`", "'1.5'")


def test_csv_non_numeric_score_named_by_the_users_column(tmp_path):
    path = write(tmp_path / "run.csv", "qid,docno,sim\nq,a,1.0\nq,b,x\n")
    error = error_of(ef.read_run, path, columns={"query_id": "qid", "doc_id": "docno", "score": "sim"})
    assert_names(error, str(path), "line 3", "`sim`", "'x'")


def test_every_bad_value_is_reported_at_once(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 one r\nq Q0 d2 2 1.0 r\nq Q0 d3 3 three r\n")
    error = error_of(ef.read_run, path)
    assert_names(error, "2 problems", "line 1", "'one'", "line 3", "'three'")
    assert [p.location for p in error.problems] == ["line 1", "line 3"]


def test_missing_column(tmp_path):
    path = write(tmp_path / "run.csv", "query_id,score\nq,1.0\n")
    assert_names(error_of(ef.read_run, path), str(path), "`doc_id`", "missing", "found: `query_id`, `score`")


def test_run_without_rank_or_score(tmp_path):
    path = write(tmp_path / "run.csv", "query_id,doc_id\nq,a\n")
    assert_names(error_of(ef.read_run, path), str(path), "`rank`", "`score`")


def test_mapped_column_missing(tmp_path):
    path = write(tmp_path / "run.csv", "qid,docno,score\nq,a,1.0\n")
    error = error_of(ef.read_run, path, columns={"query_id": "qid", "doc_id": "docno", "score": "sim"})
    assert_names(error, str(path), "`sim`", "missing", "found: `qid`, `docno`, `score`")


def test_missing_relevance_column_in_parquet(tmp_path):
    path = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q"], "doc_id": ["a"]}).write_parquet(path)
    assert_names(error_of(ef.read_qrels, path), str(path), "`relevance`", "missing")


def test_duplicate_doc_in_trec_run(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 2.0 r\nq Q0 d2 2 1.5 r\nq Q0 d1 3 1.0 r\n")
    error = error_of(ef.read_run, path)
    assert_names(error, str(path), "line 3", "first at line 1", "query_id='q'", "doc_id='d1'", "listed twice")


def test_same_doc_for_two_systems_is_not_a_duplicate(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 2.0 A\nq Q0 d1 1 2.0 B\n")
    assert rows(ef.read_run(path), "system", "doc_id") == [("A", "d1"), ("B", "d1")]


def test_duplicate_doc_in_trec_qrels(tmp_path):
    path = write(tmp_path / "qrels.txt", "q 0 d1 1\nq 0 d2 0\nq 1 d1 0\n")
    error = error_of(ef.read_qrels, path)
    assert_names(error, str(path), "line 3", "first at line 1", "query_id='q'", "doc_id='d1'", "judged twice")


def test_duplicate_doc_in_csv_and_parquet(tmp_path):
    csv = write(tmp_path / "run.csv", "qid,doc_id,score\n7,a,1\n7,b,2\n7,a,3\n")
    assert_names(error_of(ef.read_run, csv, columns={"query_id": "qid"}), str(csv), "line 4", "first at line 2",
                 "qid='7'", "doc_id='a'")
    parquet = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 0]}).write_parquet(parquet)
    assert_names(error_of(ef.read_qrels, parquet), str(parquet), "row 2", "first at row 1", "doc_id='a'")


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.integers(min_value=0, max_value=2**64 - 1) | st.sampled_from([0, 1, 2**63, 2**64 - 1]), max_size=60),
    split_sorts=st.booleans(),
)
def test_screen_key_check_finds_every_repeated_value(values, split_sorts):
    """The screen's distinctness test (sorted in two halves on two threads) agrees with a set."""
    array = np.array(values, dtype=np.uint64)
    # Only large arrays are split for real; `split_sorts` splits these small ones too.
    with mock.patch.object(_sorting, "MIN_SPLIT_LENGTH", 0 if split_sorts else _sorting.MIN_SPLIT_LENGTH):
        assert _all_distinct(array) == (len(set(values)) == len(values))
    assert array.tolist() == values  # the caller's array is left as it was


def _stretches(rows: list[tuple]) -> int | None:
    """Plain reference of `_stretch_length`: the one length of the stretches of equal rows, when
    no row value comes back after its stretch and the stretches average two rows or more; else
    None."""
    starts = [i for i in range(len(rows)) if i == 0 or rows[i] != rows[i - 1]]
    lengths = {b - a for a, b in zip(starts, [*starts[1:], len(rows)], strict=True)}
    if 2 * len(starts) > len(rows) or len(lengths) != 1 or len({rows[i] for i in starts}) != len(starts):
        return None
    return lengths.pop()


@settings(max_examples=30, deadline=None)
@given(
    systems=st.lists(st.sampled_from(["A", "B"]), min_size=1, max_size=6),
    queries=st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=1, max_size=6),
    docs=st.lists(st.sampled_from(["d1", "d2", "d3"]), min_size=1, max_size=4),
)
def test_screen_stretches_and_key_check_agree_with_plain_python(systems, queries, docs):
    """The key screen's stretches (the union of each column's run starts) and its verdict agree
    with a plain reference, on runs grouped by (system, query) or not, with repeats or not."""
    rows = [(s, q, d) for s, q in zip(systems, queries, strict=False) for d in docs]
    frame = pl.DataFrame(rows, schema=["system", "query_id", "doc_id"], orient="row")
    assert _stretch_length(frame, ["system", "query_id"]) == _stretches([r[:2] for r in rows])
    assert _keys_distinct(frame, ["system", "query_id", "doc_id"]) == (len(set(rows)) == len(rows))


@pytest.mark.parametrize(("lengths", "begun", "kept"), [
    ([3, 3, 3, 3], True, True),  # one length: begun, read by the verdict (and by the ranking), kept
    ([2, 3, 2, 3], False, False),  # lengths vary from the first rows: not begun
    ([3, 3, 3, 2], True, False),  # they vary later: begun, then dropped, nothing reads them
])
def test_the_key_check_begins_doc_id_hashes_only_where_its_verdict_reads_them(monkeypatch, lengths, begun, kept):
    from evalframe.data import conform, layout

    monkeypatch.setattr(conform, "_HASHES_BEGUN_FROM", 0)  # as on a table of millions of rows
    monkeypatch.setattr(conform, "_HEAD_ROWS", 7)  # the first rows: two whole stretches and a cut one
    rows = [("A", f"q{q}", f"d{d}") for q, n in enumerate(lengths) for d in range(n)]
    frame = pl.DataFrame(rows, schema=["system", "query_id", "doc_id"], orient="row")
    calls = []
    real_begin = layout.begin
    monkeypatch.setattr(layout, "begin", lambda *args: (calls.append(args[1:3]), real_begin(*args))[1])
    assert _keys_distinct(frame, ["system", "query_id", "doc_id"])
    assert calls == ([("hashes", "doc_id")] if begun else [])
    facts = layout._FACTS.get(id(frame))
    assert (facts is not None and ("hashes", "doc_id") in facts[1]) == kept


@pytest.mark.parametrize("text", ["", "\n\n", "  \n\t\n"])
@pytest.mark.parametrize("read", [ef.read_run, ef.read_qrels], ids=["run", "qrels"])
def test_empty_trec_file(tmp_path, read, text):
    path = write(tmp_path / "input.txt", text)
    assert_names(error_of(read, path), str(path), "empty")


def test_empty_tables(tmp_path):
    header_only = write(tmp_path / "run.csv", "query_id,doc_id,score\n")
    assert_names(error_of(ef.read_run, header_only), str(header_only), "no rows")
    nothing = write(tmp_path / "qrels.csv", "")
    assert_names(error_of(ef.read_qrels, nothing), str(nothing), "the file is empty")  # issue 9, part 2
    parquet = tmp_path / "qrels.parquet"
    pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}).write_parquet(parquet)
    assert_names(error_of(ef.read_qrels, parquet), str(parquet), "no rows")


def test_trec_run_line_with_too_few_fields(tmp_path):
    path = write(tmp_path / "run.txt", "q Q0 d1 1 2.0 r\nq Q0 d2 2 1.0\n")
    error = error_of(ef.read_run, path)
    assert_names(error, str(path), "line 2", "expected 6 fields", "found 5", "'q Q0 d2 2 1.0'", "score", "system")


def test_trec_qrels_line_with_too_few_fields(tmp_path):
    path = write(tmp_path / "qrels.txt", "q 0 d1\n")
    assert_names(error_of(ef.read_qrels, path), str(path), "line 1", "expected 4 fields", "found 3", "'q 0 d1'",
                 "relevance")


def test_missing_file(tmp_path):
    for read, name in [(ef.read_run, "nope.txt"), (ef.read_qrels, "nope.parquet"), (ef.read_run, "nope.csv")]:
        path = tmp_path / name
        assert_names(error_of(read, path), str(path))


def test_unknown_suffix_is_read_as_trec_text(tmp_path):
    path = write(tmp_path / "run.json", "{}")
    # without a known table suffix the file is read as TREC text, and this one is not
    assert_names(error_of(ef.read_run, path), str(path), "line 1", "expected 6 fields")
