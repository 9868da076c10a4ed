"""README.md: its markdown passes the linter, and every code block marked runnable runs.

The blocks and how they run: tests/readme_blocks.py. They run once per test run, and the folder
the README's Python block writes is also the Python side of the CLI byte comparison
(tests/cli/test_cli_pipeline.py). Mark a block runnable when it works on the bundled sample as
written; leave output samples (``$`` prompts, messages) and placeholders (``my_per_query.csv``)
unmarked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import MARKER, README, readme_run, runnable_blocks

REPO = Path(__file__).resolve().parents[2]


def test_readme_passes_the_markdown_linter():
    """Rules: pymarkdown's defaults less line length and fence languages (pyproject's [tool.pymarkdown])."""
    process = subprocess.run([sys.executable, "-m", "pymarkdown", "scan", str(README)], cwd=REPO,
                             capture_output=True, text=True, check=False)
    problems = (process.stdout + process.stderr).replace(str(REPO) + os.sep, "").strip()
    assert process.returncode == 0, (
        f"README.md breaks {len(problems.splitlines())} markdown rule(s); see them with "
        f"`.venv/bin/pymarkdown scan README.md` (the usual fixes: a blank line before and after a "
        f"heading, a fence or a list; no trailing spaces beyond a line break):\n{problems}")


def test_the_runnable_marker_finds_blocks():
    text = f"x\n\n{MARKER}\n\n```python\na = 1\n```\n\n```\nnot marked\n```\n{MARKER}\n```\nevalframe --help\n```\n"
    assert runnable_blocks(text) == [(5, "python", "a = 1"), (13, "sh", "evalframe --help")]


def test_every_runnable_readme_block_runs_on_the_sample(tmp_path_factory):
    blocks = runnable_blocks(README.read_text())
    assert {language for _, language, _ in blocks} == {"python", "sh"}
    run = readme_run(tmp_path_factory)
    if run.failure is not None:
        pytest.fail(run.failure)
    assert (run.root / "my_pipeline.yaml").read_text() == (REPO / "pipelines" / "evidence_contract.yaml").read_text()
