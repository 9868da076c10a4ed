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
    tables, pipeline = _input_tables(info, source)
    plan, queries, _units, _index, _notes = prepare(tables, pipeline.plan)
    return queries, plan


def input_replicates(info: Mapping[str, Any], source: str, groupings: list[str]) -> pl.DataFrame:
    """The run's bootstrap replicates of the summary rows of ``groupings`` (no across-folds rows),
    recomputed from its input: the replicate weights depend only on the unit keys and the seed,
    so they are the replicates the run drew (a folder written without ``replicates.parquet``)."""
    from dataclasses import replace

    from evalframe.engine.evaluation import run

    tables, pipeline = _input_tables(info, source)
    plan = pipeline.plan
    chosen = {name: keys for name, keys in plan.slices.items() if name in groupings} or {"overall": ()}
    return run(tables, replace(plan, slices=chosen, across_folds=None)).replicates


def _input_tables(info: Mapping[str, Any], source: str):
    """The input tables and the pipeline of the run, its overrides applied and adapted to the data
    as the run was (the same parts skipped)."""
    from evalframe.pipeline.preflight import preflight
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
    overrides = info.get("overrides") or {}
    try:
        pipeline = load_pipeline(pipeline_source, config=overrides.get("config") or (), set=overrides.get("set"),
                                 bootstrap=False if overrides.get("bootstrap") is False else None,
                                 outputs=overrides.get("outputs"), baseline=overrides.get("baseline"))
    except EvalframeError as error:
        raise unavailable(f"the pipeline `{pipeline_source}` no longer loads ({error})") from None
    tables = read_input(pipeline.input, recorded["path"])
    pipeline = preflight(pipeline, tables)  # the same parts skipped as in the run
    listed = [entry["name"] for entry in info.get("metrics", [])]
    if [m.name for g in pipeline.plan.groups for m in g.metrics] != listed:
        raise unavailable(f"the pipeline `{pipeline_source}` changed since the run (its metrics differ from run.json's)")
    return tables, pipeline
