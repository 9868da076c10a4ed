"""The one atomic writer (evalframe.results.writer): a failed write leaves the earlier result
intact, only entries of the manifest are ever replaced, strangers are refused unless forced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalframe.errors import ConfigError
from evalframe.results.writer import MANIFEST, read_manifest, strangers, update_result, write_file, write_result


def text(content: str):
    return lambda path: path.write_text(content)


def listing(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}


def test_a_new_folder_gets_the_files_and_a_manifest(tmp_path):
    out = write_result(tmp_path / "out", {"a.csv": text("1"), "run.json": text("{}")})
    assert listing(out) == {"a.csv": "1", "run.json": "{}"}
    assert json.loads((out / MANIFEST).read_text()) == {"written_by": "evalframe", "entries": ["a.csv", "run.json"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left beside it


def test_a_rerun_replaces_the_earlier_result_entirely(tmp_path):
    out = tmp_path / "out"
    write_result(out, {"a.csv": text("1"), "stale.csv": text("old")})
    write_result(out, {"a.csv": text("2")})
    assert listing(out) == {"a.csv": "2"}  # the earlier run's stale.csv is evalframe's: it goes
    assert read_manifest(out) == {"a.csv"}


def test_a_failed_write_leaves_the_earlier_result_intact(tmp_path):
    out = tmp_path / "out"
    write_result(out, {"a.csv": text("1"), "b.csv": text("1")})

    def broken(path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_result(out, {"a.csv": text("2"), "b.csv": broken})
    assert listing(out) == {"a.csv": "1", "b.csv": "1"}
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "a.csv", "b.csv"]  # no temporary entry left


def test_a_failed_first_write_leaves_no_folder(tmp_path):
    with pytest.raises(RuntimeError):
        write_result(tmp_path / "out", {"a.csv": lambda path: (_ for _ in ()).throw(RuntimeError("no"))})
    assert list(tmp_path.iterdir()) == []


def test_a_stranger_is_refused_and_named(tmp_path):
    out = tmp_path / "out"
    write_result(out, {"a.csv": text("1")})
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"notes\.txt.*--force"):
        write_result(out, {"a.csv": text("2")})
    assert listing(out) == {"a.csv": "1", "notes.txt": "mine"}


def test_force_writes_beside_strangers_and_deletes_only_evalframes_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "my.csv").write_text("input")
    (out / "notes").mkdir()
    write_result(out, {"a.csv": text("1"), "b.csv": text("1")}, force=True)
    write_result(out, {"a.csv": text("2")}, force=True)
    assert listing(out) == {"a.csv": "2", "my.csv": "input"}
    assert (out / "notes").is_dir()
    assert strangers(out) == ["my.csv", "notes"]


def test_a_stranger_with_an_outputs_name_is_never_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.csv").write_text("my own summary")
    with pytest.raises(ConfigError, match=r"summary\.csv.*never deletes"):
        write_result(out, {"summary.csv": text("ours")}, force=True)
    assert (out / "summary.csv").read_text() == "my own summary"


def test_the_current_folder_follows_the_same_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "input.csv").write_text("x")
    with pytest.raises(ConfigError, match=r"--out \.: .*input\.csv"):
        write_result(".", {"a.csv": text("1")})
    write_result(".", {"a.csv": text("1")}, force=True)
    write_result(".", {"b.csv": text("1")}, force=True)
    assert listing(tmp_path) == {"b.csv": "1", "input.csv": "x"}


def test_a_folder_written_before_the_manifest_is_adopted_by_its_run_json(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"versions": {"evalframe": "0.1.0"}, "result_tables": ["ablation"]}))
    for name in ("summary.csv", "ablation.csv", "notes.txt"):
        (out / name).write_text("old")
    assert strangers(out) == ["notes.txt"]
    write_result(out, {"summary.csv": text("new"), "run.json": text("{}")}, force=True)
    assert listing(out) == {"notes.txt": "old", "run.json": "{}", "summary.csv": "new"}


def test_update_adds_entries_and_keeps_the_others(tmp_path):
    out = tmp_path / "out"
    write_result(out, {"summary.parquet": text("s"), "report.md": text("old")})
    (out / "notes.txt").write_text("mine")

    def gate_folder(path: Path) -> None:
        path.mkdir()
        (path / "gate.json").write_text("{}")

    update_result(out, {"report.md": text("new"), "gate": gate_folder})
    assert listing(out) == {"notes.txt": "mine", "report.md": "new", "summary.parquet": "s"}
    assert read_manifest(out) == {"gate", "report.md", "summary.parquet"}
    (out / "mine.md").write_text("mine")
    with pytest.raises(ConfigError, match=r"mine\.md"):
        update_result(out, {"mine.md": text("ours")})
    assert (out / "mine.md").read_text() == "mine"


def test_write_file_replaces_in_one_rename(tmp_path):
    path = tmp_path / "sub" / "out.json"
    write_file(path, text("1"))
    with pytest.raises(RuntimeError):
        write_file(path, lambda p: (p.write_text("half"), (_ for _ in ()).throw(RuntimeError("no"))))
    assert path.read_text() == "1"
    assert [p.name for p in path.parent.iterdir()] == ["out.json"]
