"""README.md: its markdown passes the linter, and every code block marked runnable runs.

A block is marked runnable by an HTML comment on the line before its fence (a blank line may
separate them):

    <!-- runnable -->
    ```python
    ev = ef.evaluate(...)
    ```

Python blocks run in order in one namespace (a later block may use an earlier block's names),
shell blocks line by line with ``.venv/bin`` first on the PATH; both in a scratch folder that
has the checkout's ``data_samples/`` and ``pipelines/``, so paths read as in the README
(``ef.run_pipeline`` runs each pipeline once, with ``TEST_RESAMPLES`` bootstrap resamples: see
the ``scratch`` fixture). Mark a block runnable when it works on the bundled sample as written;
leave output samples (``$`` prompts, messages) and placeholders (``my_per_query.csv``) unmarked.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from built_once import TEST_RESAMPLES

import evalframe as ef

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MARKER = "<!-- runnable -->"


def runnable_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number of the fence, language, code) of every block marked :data:`MARKER`."""
    lines = text.splitlines()
    blocks, index = [], 0
    while index < len(lines):
        if lines[index].strip() == MARKER:
            start = index + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            fence = re.match(r"^(`{3,})\s*(\w*)", lines[start]) if start < len(lines) else None
            assert fence, f"README.md:{index + 1}: `{MARKER}` must come right before a fenced code block"
            end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(fence.group(1)))
            blocks.append((start + 1, fence.group(2) or "sh", "\n".join(lines[start + 1:end])))
            index = end
        index += 1
    return blocks


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


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    for name in ("data_samples", "pipelines"):
        (tmp_path / name).symlink_to(REPO / name)
    monkeypatch.chdir(tmp_path)
    # The same pipeline on the same input gives the same result: compute it once for every block,
    # with TEST_RESAMPLES bootstrap resamples instead of the bundled pipeline's 1,000 (what the
    # blocks show does not depend on the number; the code that runs is the same).
    run_pipeline = ef.run_pipeline

    @functools.cache
    def run_once(pipeline, **options):
        return run_pipeline(pipeline, **options, set={"bootstrap.resamples": TEST_RESAMPLES})

    monkeypatch.setattr(ef, "run_pipeline", run_once)
    return tmp_path


def test_every_runnable_readme_block_runs_on_the_sample(scratch):
    blocks = runnable_blocks(README.read_text())
    assert {language for _, language, _ in blocks} == {"python", "sh"}
    namespace: dict = {"__name__": "readme"}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for line, language, code in blocks:
        if language == "python":
            try:
                exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102 (the README's own code)
            except Exception as error:
                pytest.fail(f"README.md:{line}: the runnable python block fails: {type(error).__name__}: {error}")
            continue
        for command in code.splitlines():
            command = command.split("  #")[0].strip()
            if command:
                done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=False)
                assert done.returncode == 0, f"README.md:{line}: `{command}` exits {done.returncode}:\n{done.stderr}"
    assert (scratch / "my_pipeline.yaml").read_text() == (REPO / "pipelines" / "evidence_contract.yaml").read_text()
