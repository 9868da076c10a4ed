"""``evalframe agreement``: outputs, the chapter's filter as qrels, and bad input exiting 2 with nothing written."""

from __future__ import annotations

import polars as pl
import pytest

from evalframe.cli import main


def write(path, rows, header="task_id,annotator_id,rating"):
    path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


@pytest.fixture
def labelled(tmp_path):
    rows = []
    for i in range(12):
        for annotator in ("a", "b", "c"):
            rating = (i % 5) if annotator != "c" else (i * 3) % 5
            rows.append((f"q{i}_d{i}", annotator, rating, f"q{i}", f"d{i}"))
    annotations = write(tmp_path / "annotations.csv", rows, "task_id,annotator_id,rating,query_id,doc_id")
    gold = write(tmp_path / "gold.csv", [(f"q{i}_d{i}", i % 5) for i in range(10)], "task_id,rating")
    return annotations, gold


def test_outputs_and_qrels(labelled, tmp_path, capsys):
    annotations, gold = labelled
    out = tmp_path / "labels"
    assert main(["agreement", str(annotations), "--gold", str(gold), "--scale", "0-4", "--resamples", "50", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fleiss_kappa" in text and "filtered labels: 12 tasks kept" in text
    for name in ("summary.csv", "pairwise_kappa.csv", "per_annotator.csv", "disagreements.csv", "filtered.csv", "qrels.txt", "report.md"):
        assert (out / name).is_file(), name
    per_annotator = pl.read_csv(out / "per_annotator.csv")
    assert dict(per_annotator.select("annotator_id", "gold_accuracy").iter_rows()) == {"a": 1.0, "b": 1.0, "c": 0.2}
    assert (out / "qrels.txt").read_text().splitlines()[0] == "q0 0 d0 0"
    assert "almost perfect" in (out / "report.md").read_text() or "substantial" in (out / "report.md").read_text()


@pytest.mark.parametrize(("rows", "expected"), [
    ([("t1", "a", 3), ("t1", "b", 9)], ["line 3", "column `rating`", "9", "outside the rating scale"]),
    ([("t1", "a", 3), ("t1", "a", 2)], ["line 3", "rates task 't1' a second time", "line 2"]),
])
def test_bad_input_exits_2_naming_file_line_value_and_writes_nothing(tmp_path, capsys, rows, expected):
    annotations = write(tmp_path / "bad.csv", rows)
    out = tmp_path / "never"
    assert main(["agreement", str(annotations), "--scale", "0-4", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert str(annotations) in error
    for part in expected:
        assert part in error
    assert not out.exists()
