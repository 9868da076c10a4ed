"""README.md's runnable code blocks, and one run of them per test run (issue 20: `make test` in
minutes).

A block is marked runnable by an HTML comment on the line before its fence (a blank line may
separate them)::

    <!-- runnable -->
    ```python
    ev = ef.evaluate(...)
    ```

Python blocks run in order in one namespace (a later block may use an earlier block's names),
shell blocks line by line with ``.venv/bin`` first on the PATH; both in a scratch folder that
has the checkout's ``data_samples/`` and ``pipelines/``, so paths read as in the README.
``ef.run_pipeline`` runs each pipeline once, with ``TEST_RESAMPLES`` bootstrap resamples instead
of the bundled pipeline's 1,000 (what the blocks show does not depend on the number; the code
that runs is the same).

:func:`readme_run` runs the blocks once per test run, whatever the number of pytest-xdist
workers (:func:`built_once.build_once`). tests/docs/test_readme.py asserts that every block ran;
the folder the README's Python block writes (``ev.write("reports/exp42")`` of
``ef.run_pipeline("pipelines/evidence_contract.yaml", input="data_samples/per_query.csv")``) is
the Python side of the byte comparison with the CLI's run of the same pipeline on the same input
(tests/cli/test_cli_pipeline.py, tests/cli/test_cli_stats.py): one run of the bundled pipeline
with every output serves both, instead of one each.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from built_once import TEST_RESAMPLES, build_once

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MARKER = "<!-- runnable -->"
#: The folder README.md's Python block writes the bundled pipeline's outputs into (relative to the scratch folder).
WRITTEN = Path("reports") / "exp42"


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


@dataclass(frozen=True)
class ReadmeRun:
    """What running README.md's runnable blocks left: ``failure`` (None when every block ran,
    else the first failing block's line and error), the scratch folder ``root``, and the
    ``summary`` and ``per_query`` tables of the Python blocks' last ``ev`` (None without one)."""

    failure: str | None
    root: Path
    summary: pl.DataFrame | None
    per_query: pl.DataFrame | None


def run_blocks(root: Path) -> ReadmeRun:
    """Run README.md's runnable blocks in the folder ``root`` (see the module's docstring); the
    working directory and ``ef.run_pipeline`` are put back afterwards."""
    import evalframe as ef

    for name in ("data_samples", "pipelines"):
        if not (root / name).is_symlink():  # (a build that failed before may have made them)
            (root / name).symlink_to(REPO / name)
    run_pipeline = ef.run_pipeline

    @functools.cache
    def run_once(pipeline, **options):  # the same pipeline on the same input gives the same result
        return run_pipeline(pipeline, **options, set={"bootstrap.resamples": TEST_RESAMPLES})

    namespace: dict = {"__name__": "readme"}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    before = Path.cwd()
    failure = None
    os.chdir(root)
    ef.run_pipeline = run_once
    try:
        failure = _run(runnable_blocks(README.read_text()), namespace, env)
    finally:
        ef.run_pipeline = run_pipeline
        os.chdir(before)
    ev = namespace.get("ev")
    return ReadmeRun(failure, root, getattr(ev, "summary", None), getattr(ev, "per_query", None))


def _run(blocks, namespace: dict, env: dict) -> str | None:
    """The first failing block's line and error, or None."""
    for line, language, code in blocks:
        if language == "python":
            try:
                exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102 (the README's own code)
            except Exception as error:
                return f"README.md:{line}: the runnable python block fails: {type(error).__name__}: {error}"
            continue
        for command in code.splitlines():
            command = command.split("  #")[0].strip()
            if command:
                done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    return f"README.md:{line}: `{command}` exits {done.returncode}:\n{done.stderr}"
    return None


def readme_run(tmp_path_factory) -> ReadmeRun:
    """:func:`run_blocks` once per test run (:func:`built_once.build_once`)."""
    return build_once(tmp_path_factory, "readme_blocks", run_blocks)
