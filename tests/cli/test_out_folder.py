"""`evalframe run --out DIR` never deletes a user's file (issue 19 part 9): an input file inside
--out, a stranger file, `--out .`, a rerun over an earlier result."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalframe.cli import main
from evalframe.results.writer import MANIFEST

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
PIPELINE = """version: 1
name: tiny
input: {path: in.csv, format: per_query}
metrics:
  - names: [mrr, auroc]
outputs: [summary.parquet, summary.csv, run.json]
"""
OUTPUTS = {MANIFEST, "summary.parquet", "summary.csv", "run.json"}


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A folder with a 40-query per_query.csv (`in.csv`) and a pipeline (`p.yaml`), the current directory."""
    lines = SAMPLE.read_text().splitlines(keepends=True)[:41]
    (tmp_path / "in.csv").write_text("".join(lines))
    (tmp_path / "p.yaml").write_text(PIPELINE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def names(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()}


def test_an_input_file_inside_out_is_refused_then_kept_with_force(folder, capsys):
    exp = folder / "exp"
    exp.mkdir()
    (exp / "my.csv").write_text((folder / "in.csv").read_text())
    (exp / "my.yaml").write_text(PIPELINE)
    assert main(["run", "exp/my.yaml", "--input", "exp/my.csv", "--out", "exp", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--out exp" in err and "my.csv" in err and "my.yaml" in err and "--force" in err
    assert names(exp) == {"my.csv", "my.yaml"}  # nothing written
    assert main(["run", "exp/my.yaml", "--input", "exp/my.csv", "--out", "exp", "-q", "--force"]) == 0
    assert names(exp) == {"my.csv", "my.yaml"} | OUTPUTS
    assert (exp / "my.csv").read_text() == (folder / "in.csv").read_text()


def test_a_stranger_file_in_an_earlier_result_is_refused_and_survives_force(folder, capsys):
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 0
    (folder / "out" / "notes.txt").write_text("my notes")
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert main(["run", "p.yaml", "--out", "out", "-q", "--force"]) == 0
    assert names(folder / "out") == OUTPUTS | {"notes.txt"}
    assert (folder / "out" / "notes.txt").read_text() == "my notes"


def test_out_dot_works_under_the_same_rule(folder, capsys):
    assert main(["run", "p.yaml", "--out", ".", "-q"]) == 2
    assert "in.csv" in capsys.readouterr().err
    assert names(folder) == {"in.csv", "p.yaml"}
    assert main(["run", "p.yaml", "--out", ".", "-q", "--force"]) == 0
    assert names(folder) == {"in.csv", "p.yaml"} | OUTPUTS  # no `..old.*` folder left behind
    assert main(["run", "p.yaml", "--out", ".", "-q", "--force"]) == 0
    assert names(folder) == {"in.csv", "p.yaml"} | OUTPUTS


def test_a_rerun_over_an_earlier_result_replaces_only_its_files(folder):
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 0
    first = (folder / "out" / "summary.csv").read_bytes()
    (folder / "p.yaml").write_text(PIPELINE.replace("summary.csv, ", ""))
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 0  # the folder holds only evalframe's files
    assert names(folder / "out") == OUTPUTS - {"summary.csv"}  # the earlier run's summary.csv went with it
    (folder / "p.yaml").write_text(PIPELINE)
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 0
    assert (folder / "out" / "summary.csv").read_bytes() == first


def test_a_failed_run_leaves_the_earlier_result_intact(folder, capsys):
    assert main(["run", "p.yaml", "--out", "out", "-q"]) == 0
    before = {p.name: p.read_bytes() for p in (folder / "out").iterdir()}
    (folder / "bad.csv").write_text((folder / "in.csv").read_text().replace("0.570705", "1.7", 1))
    assert main(["run", "p.yaml", "--input", "bad.csv", "--out", "out", "-q"]) == 2
    assert {p.name: p.read_bytes() for p in (folder / "out").iterdir()} == before
