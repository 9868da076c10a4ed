"""Re-reading a result folder's input: the rows set-metric randomization recomputes from.

A result folder keeps per-unit values, not the input rows a set metric (AUROC, F1, …) needs; its
``run.json`` names the pipeline and the input with the input's sha256. :func:`input_rows` loads
both again, refusing when either is gone or changed, and prepares the rows exactly as the run
did. The results room reads folders but sits below the pipeline, so ``import evalframe`` lends
it this function (:func:`evalframe.results.reader.use_input_loader`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.engine.derive import prepare
from evalframe.errors import NO_VALUE, EvalframeError, InputError, Problem
from evalframe.results.run_info import sha256_of


def input_rows(info: Mapping[str, Any], source: str) -> tuple[pl.DataFrame, Any]:
    """The derived queries table and plan of the run ``info`` (``run.json``) describes. Raises an
    :class:`~evalframe.errors.InputError` on ``source`` saying what is unavailable and why."""
    from evalframe.pipeline.run import load_pipeline, read_input

    def unavailable(why: str) -> InputError:
        return InputError(source, Problem(None, None, NO_VALUE, f"set-metric randomization needs the run's input rows: {why}"))

    pipeline_source = (info.get("pipeline") or {}).get("source")
    recorded = info.get("input") or {}
    if not pipeline_source or not Path(pipeline_source).is_file():
        raise unavailable(f"run.json's pipeline `{pipeline_source}` is not found from this folder")
    if not recorded.get("path") or not Path(recorded["path"]).is_file():
        raise unavailable(f"run.json's input `{recorded.get('path')}` is not found from this folder")
    if sha256_of(Path(recorded["path"])) != recorded.get("sha256"):
        raise unavailable(f"the input `{recorded['path']}` changed since the run (its sha256 differs from run.json's)")
    try:
        pipeline = load_pipeline(pipeline_source)
    except EvalframeError as error:
        raise unavailable(f"the pipeline `{pipeline_source}` no longer loads ({error})") from None
    listed = [entry["name"] for entry in info.get("metrics", [])]
    if [m.name for g in pipeline.plan.groups for m in g.metrics] != listed:
        raise unavailable(f"the pipeline `{pipeline_source}` changed since the run (its metrics differ from run.json's)")
    tables = read_input(pipeline.input, recorded["path"])
    plan, queries, _units, _index, _notes = prepare(tables, pipeline.plan)
    return queries, plan
