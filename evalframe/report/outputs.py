"""Writing a pipeline's outputs atomically.

Files are written into a temporary folder beside the target, then the folder is moved into
place in one rename: a failed run leaves no partial output, and a previous output folder is
replaced only once the new one is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from evalframe.report.markdown import render_markdown

if TYPE_CHECKING:
    from evalframe.pipeline import PipelineResult


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_outputs(result: PipelineResult, out_dir: Path) -> Path:
    """Write the outputs the pipeline names into ``out_dir``; return ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    staging.chmod(0o777 & ~_current_umask())  # mkdtemp makes it private; outputs are ordinary files
    try:
        writers = {
            "per_query.parquet": lambda path: result.per_query.write_parquet(path, statistics=False),
            "summary.parquet": lambda path: result.summary.write_parquet(path, statistics=False),
            "summary.csv": lambda path: result.summary.write_csv(path, float_precision=10),
            "summary.md": lambda path: path.write_text(render_markdown(result)),
            "run.json": lambda path: path.write_text(json.dumps(result.info, indent=2, sort_keys=False) + "\n"),
        }
        for name in result.pipeline.outputs:
            writers[name](staging / name)
        if out_dir.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=out_dir.parent))
            out_dir.rename(retired / out_dir.name)
            staging.rename(out_dir)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            staging.rename(out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir
