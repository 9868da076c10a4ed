"""`evalframe.io.early`: a read begun before it is asked for gives what the read gives, and errors
keep their place, text and exit status (issue 22, start-up)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import polars as pl
import pytest

from evalframe.cli import main
from evalframe.errors import InputError
from evalframe.io import early, read_qrels, read_run
from evalframe.io.readers import ROW_READERS

GOOD_RUN = "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\nq2 Q0 d3 1 1.0 sys\n"
GOOD_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n"


@pytest.fixture(autouse=True)
def nothing_left_begun():
    early.forget()
    yield
    early.forget()


class Counted:
    """A read that counts its calls and says which thread made each."""

    def __init__(self, read):
        self.read, self.threads = read, []
        self.__name__ = getattr(read, "__name__", "read")

    def __call__(self, *args, **kwargs):
        self.threads.append(threading.current_thread().name)
        return self.read(*args, **kwargs)


def test_take_without_begin_reads_here(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(GOOD_RUN)
    read = Counted(read_run)
    assert early.take(read, path).equals(read_run(path))
    assert read.threads == [threading.current_thread().name]


def test_a_begun_read_is_taken_once_and_equals_a_plain_read(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(GOOD_RUN)
    read = Counted(read_run)
    early.begin(read, path)
    assert early.pending() == 1
    taken = early.take(read, path)
    assert taken.equals(read_run(path))
    assert len(read.threads) == 1 and read.threads[0].startswith("evalframe-early-")
    assert early.pending() == 0
    early.take(read, path)  # a second take reads again: a begun result is given once
    assert len(read.threads) == 2 and read.threads[1] == threading.current_thread().name


def test_other_arguments_read_again_and_leave_the_begun_read_pending(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(GOOD_RUN)
    second.write_text("q9 Q0 d9 1 1.0 other\n")
    read = Counted(read_run)
    early.begin(read, first)
    taken = early.take(read, second)
    assert taken.get_column("query_id").to_list() == ["q9"]
    assert early.pending() == 1
    early.forget()
    assert early.pending() == 0


def test_a_file_changed_after_the_begin_is_read_again(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text(GOOD_RUN)
    read = Counted(read_run)
    early.begin(read, path)
    path.write_text("q7 Q0 d7 1 1.0 sys\nq7 Q0 d8 2 0.5 sys\n")
    os.utime(path, ns=(1, 1))  # a new modification time even on a coarse clock
    assert early.take(read, path).get_column("query_id").to_list() == ["q7", "q7"]
    assert len(read.threads) == 2


def test_a_failed_begun_read_raises_the_same_error_from_the_take(tmp_path):
    path = tmp_path / "bad.run"
    path.write_text("q1 Q0 d1 1 high sys\n")
    with pytest.raises(InputError) as plain:
        read_run(path)
    read = Counted(read_run)
    early.begin(read, path)
    with pytest.raises(InputError) as taken:
        early.take(read, path)
    assert str(taken.value) == str(plain.value)
    assert read.threads[-1] == threading.current_thread().name  # raised by the take's own call, in order


def trec_files(tmp_path: Path, run: str = GOOD_RUN, qrels: str = GOOD_QRELS) -> tuple[str, str]:
    (tmp_path / "run.txt").write_text(run)
    (tmp_path / "qrels.txt").write_text(qrels)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def test_trec_reads_each_file_once_on_early_threads(tmp_path, capsys, monkeypatch):
    qrels, run = trec_files(tmp_path)
    assert main(["trec", "-q", "-m", "P.1", qrels, run]) == 0
    expected = capsys.readouterr().out
    calls = []
    real = pl.read_csv

    def counted(*args, **kwargs):
        calls.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(pl, "read_csv", counted)
    assert main(["trec", "-q", "-m", "P.1", qrels, run]) == 0
    assert capsys.readouterr().out == expected
    assert len(calls) == 2 and all(name.startswith("evalframe-early-") for name in calls)
    assert early.pending() == 0


@pytest.mark.parametrize(
    ("measure", "run", "qrels", "named"),
    [
        ("bpref", "q1 Q0 d1 1 high sys\n", "q1 0 d1 x\n", "`bpref`"),  # the measure first
        ("P.1", "q1 Q0 d1 1 high sys\n", "q1 0 d1 x\n", "qrels.txt"),  # then the qrels
        ("P.1", "q1 Q0 d1 1 high sys\n", GOOD_QRELS, "run.txt"),  # then the run
    ],
)
def test_trec_errors_keep_their_order_with_both_files_begun(tmp_path, capsys, measure, run, qrels, named):
    qrels_path, run_path = trec_files(tmp_path, run, qrels)
    assert main(["trec", "-m", measure, qrels_path, run_path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("evalframe: error:") and named in captured.err.splitlines()[0]
    assert early.pending() == 0  # what the failed command began is dropped


TINY_PIPELINE = """
version: 1
name: tiny
input: {format: per_query}
metrics:
  - names: [ndcg@10]
slices: {overall: []}
outputs: [summary.csv]
"""


def tiny_run(tmp_path: Path, metric: str = "ndcg@10", rows: int = 60) -> list[str]:
    """`evalframe run` of a one-metric pipeline on the bundled sample's first rows."""
    sample = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
    (tmp_path / "in.csv").write_text("".join(sample.read_text().splitlines(keepends=True)[: rows + 1]))
    (tmp_path / "tiny.yaml").write_text(TINY_PIPELINE.replace("ndcg@10", metric))
    return ["run", str(tmp_path / "tiny.yaml"), "--input", str(tmp_path / "in.csv"), "--out", str(tmp_path / "out"), "-q"]


@pytest.fixture
def per_query_reads(monkeypatch) -> list[str]:
    """The threads the per_query reader is called on (the reader itself unchanged)."""
    from evalframe.io.readers import RowReader

    calls: list[str] = []
    reader = ROW_READERS["per_query"]

    def counted(source, spec):
        calls.append(threading.current_thread().name)
        return reader.read(source, spec)

    monkeypatch.setitem(ROW_READERS, "per_query", RowReader("per_query", counted, reader.query_columns, reader.system_column))
    return calls


def test_run_takes_the_input_read_begun_before_the_checks(tmp_path, per_query_reads):
    calls = per_query_reads
    assert main(tiny_run(tmp_path)) == 0
    assert len(calls) == 1 and calls[0].startswith("evalframe-early-")
    assert early.pending() == 0
    assert (tmp_path / "out" / "summary.csv").is_file()


def test_run_reports_a_bad_pipeline_before_the_begun_read_and_writes_nothing(tmp_path, capsys):
    args = tiny_run(tmp_path, metric="ndgc@10")
    (tmp_path / "in.csv").write_text("post_id,criterion_id\np1\n")  # a bad input too: the pipeline is reported first
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalframe: error:") and "unknown metric `ndgc`" in err and "in.csv" not in err
    assert not (tmp_path / "out").exists()
    assert early.pending() == 0


def test_run_reports_a_bad_input_read_early_as_it_always_did(tmp_path, capsys):
    args = tiny_run(tmp_path)
    text = (tmp_path / "in.csv").read_text().splitlines(keepends=True)
    (tmp_path / "in.csv").write_text("".join([*text[:3], text[3].replace(",1,", ",one,", 1), *text[4:]]))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalframe: error:") and "in.csv" in err and "line 4" in err
    assert not (tmp_path / "out").exists()


def test_run_pipeline_in_python_takes_its_begun_read_too(tmp_path, per_query_reads):
    import evalframe as ef

    args = tiny_run(tmp_path)
    calls = per_query_reads
    evaluation = ef.run_pipeline(args[1], input=args[3])
    assert evaluation.summary.height > 0
    assert len(calls) == 1 and calls[0].startswith("evalframe-early-")
    with pytest.raises(ef.ConfigError):
        ef.run_pipeline(args[1], input=args[3], set={"metrics[0].names": ["ndgc@10"]})
    assert early.pending() == 0
