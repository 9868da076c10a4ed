"""`import evalframe` stays light (issue 22 part 6): the heavy libraries are imported where used."""

from __future__ import annotations

import subprocess
import sys

from evalframe._lazy import lazy_module

#: Modules `import evalframe` must not import (each costs tens of milliseconds or more).
HEAVY = ("numpy", "matplotlib", "great_tables", "pandera", "sklearn", "scipy", "pandas", "pyarrow", "urllib.request")


def test_import_evalframe_leaves_the_heavy_libraries_out():
    code = f"import sys, evalframe; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert imported == ""


def test_a_lazy_module_imports_on_first_use_and_then_is_the_module():
    import json

    stand_in = lazy_module("json")
    assert "dumps" not in vars(stand_in)
    assert stand_in.dumps([1, 2]) == "[1, 2]"
    assert vars(stand_in)["dumps"] is json.dumps  # later reads are plain attribute reads
    assert stand_in.JSONDecodeError is json.JSONDecodeError
