"""The stages import one way and no folder's modules import each other in a circle.

The contracts are import-linter's, declared in pyproject.toml (``[tool.importlinter]``); this
test runs ``lint-imports`` so a plain ``pytest`` fails on an upward import as ``make test`` does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    completed = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "2 kept, 0 broken" in completed.stdout

