"""Exit codes (README): 0 success, 1 a check or gate failed, 2 bad input or configuration,
3 an internal error with a short message and the saved traceback, never a raw traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalframe.cli import main
from evalframe.errors import ExitCode


def test_exit_code_values():
    assert [int(code) for code in ExitCode] == [0, 1, 2, 3]


def test_internal_error_exits_3_with_a_saved_traceback(monkeypatch, capsys):
    import evalframe.cli.metrics as command

    def broken(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(command, "main", broken)
    monkeypatch.delenv("EVALFRAME_DEBUG", raising=False)
    assert main(["metrics"]) == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: a bug" in err and "Traceback" not in err
    saved = Path(re.search(r"the traceback is in (\S+)", err).group(1))
    try:
        assert "Traceback" in saved.read_text() and "a bug" in saved.read_text()
    finally:
        saved.unlink()


def test_bad_configuration_exits_2(capsys):
    assert main(["run", "no_such_pipeline"]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["metrics"], ["check-pipeline", "evidence_contract"]])
def test_success_exits_0(command, capsys):
    assert main(command) == 0


def test_the_command_flushes_its_output_and_keeps_its_status_when_it_skips_the_teardown(tmp_path, capsys):
    """``evalframe`` (``python -m evalframe.cli``) ends with ``os._exit`` after a command: every
    line printed reaches the pipe, and the exit status is the command's."""
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", "evalframe.cli", "metrics"], capture_output=True, text=True, cwd=tmp_path)
    assert listed.returncode == 0
    assert main(["metrics"]) == ExitCode.OK
    assert listed.stdout == capsys.readouterr().out and len(listed.stdout) > 10_000  # all of it, the last line too
    refused = subprocess.run([sys.executable, "-m", "evalframe.cli", "run", str(tmp_path / "missing.yaml")],
                             capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode == ExitCode.BAD_INPUT
    assert refused.stderr.startswith("evalframe: error: pipeline") and refused.stdout == ""


def test_the_command_shortens_the_blas_threads_spin_unless_numpy_is_imported_or_the_user_set_it(monkeypatch):
    """``console`` sets OpenBLAS's thread timeout before NumPy's import (its threads would spin
    ~0.1 s on a core beside the input's read); never over the user's own setting, and not once
    NumPy is imported (its BLAS has read the environment then)."""
    import os
    import sys

    from evalframe import cli

    name, value = cli.BLAS_THREAD_TIMEOUT
    monkeypatch.delenv(name, raising=False)
    monkeypatch.setitem(sys.modules, "numpy", sys.modules.get("numpy", object()))
    cli._short_blas_spin()
    assert name not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")
    cli._short_blas_spin()
    assert os.environ[name] == value == "4"
    monkeypatch.setenv(name, "20")
    cli._short_blas_spin()
    assert os.environ[name] == "20"


def test_run_q_silences_only_its_own_command(tmp_path, monkeypatch):
    """``main(["run", …, "-q"])`` in a caller's process: the process's quiet setting is as it
    was afterwards, after a finished run and after a refused one (before, ``-q`` stayed on, and
    every later progress bar of the caller's own work was silent)."""
    import contextlib

    from evalframe import _progress

    sample = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
    (tmp_path / "mine.csv").write_text("".join(sample.read_text().splitlines(keepends=True)[:41]))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("version: 1\nname: mine\ninput: {path: mine.csv}\nmetrics: [{names: [brier, mrr]}]\n"
                        "outputs: [summary.csv]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_progress, "_QUIET", False)
    seen = []  # the process's quiet setting at each step of the command

    def recording_step(*args, **kwargs):
        seen.append(_progress._QUIET)
        return contextlib.nullcontext()

    monkeypatch.setattr(_progress, "step", recording_step)
    assert main(["run", str(pipeline), "--out", str(tmp_path / "out"), "-q"]) == ExitCode.OK
    assert seen and all(seen)  # quiet while it ran
    assert _progress._QUIET is False and (tmp_path / "out" / "summary.csv").is_file()
    assert main(["run", str(tmp_path / "missing.yaml"), "-q"]) == ExitCode.BAD_INPUT
    assert _progress._QUIET is False
    monkeypatch.setattr(_progress, "_QUIET", True)  # a caller that silenced its process stays silenced
    assert main(["run", str(pipeline), "--out", str(tmp_path / "out2")]) == ExitCode.OK
    assert _progress._QUIET is True and seen[-1] is True
