"""Re-reading a result folder's input: the rows set-metric randomization recomputes from.

A result folder keeps per-unit values, not the input rows a set metric (AUROC, F1, …) needs; its
``run.json`` names the pipeline and the input with the input's sha256. :func:`input_rows` loads
both again, refusing when either is gone or changed, and prepares the rows exactly as the run
did. ``run.json`` gives the paths as the run was given them, so a relative one is relative to the
directory the run started in (:func:`run_directory`). The results room reads folders but sits
below the pipeline, so ``import evalframe`` lends it this function (:func:`evalframe.results.reader.use_input_loader`).
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
        return InputError(source, Problem(None, None, NO_VALUE, f"the run's input rows cannot be re-read: {why}"))

    recorded = info.get("input") or {}
    if not recorded.get("path"):
        raise unavailable("run.json names no input")
    base = run_directory(recorded["path"], Path(source), recorded.get("sha256"))
    if base is None:
        raise unavailable(f"run.json's input `{recorded['path']}` is not found from the working directory "
                          "or from this folder and its parents")
    input_path = base / recorded["path"]
    pipeline_source = (info.get("pipeline") or {}).get("source")
    if not pipeline_source or not (base / pipeline_source).is_file():
        raise unavailable(f"run.json's pipeline `{pipeline_source}` is not found where its input is (`{base.resolve()}`)")
    if sha256_of(input_path) != recorded.get("sha256"):
        raise unavailable(f"the input `{input_path}` changed since the run (its sha256 differs from run.json's)")
    overrides = info.get("overrides") or {}
    configs = [base / config for config in overrides.get("config") or ()]
    try:
        pipeline = load_pipeline(base / pipeline_source, config=configs, set=overrides.get("set"),
                                 bootstrap=False if overrides.get("bootstrap") is False else None,
                                 outputs=overrides.get("outputs"), baseline=overrides.get("baseline"))
    except EvalframeError as error:
        raise unavailable(f"the pipeline `{pipeline_source}` no longer loads ({error})") from None
    tables = read_input(pipeline.input, input_path)
    pipeline = preflight(pipeline, tables)  # the same parts skipped as in the run
    listed = [entry["name"] for entry in info.get("metrics", [])]
    if [m.name for g in pipeline.plan.groups for m in g.metrics] != listed:
        raise unavailable(f"the pipeline `{pipeline_source}` changed since the run (its metrics differ from run.json's)")
    return tables, pipeline


def run_directory(input_path: str, folder: Path, sha256: str | None) -> Path | None:
    """The directory a run most likely started in, found from its input's path as ``run.json``
    gives it: among the working directory (the path as it is, absolute or relative), then the
    result ``folder`` and its parents, nearest first (a run writes its ``--out`` folder below where
    it ran, e.g. ``reports/<name>``), the first where the input is a file with the recorded
    ``sha256``; else the first where it is a file at all (the caller then reports it changed);
    None when it is found nowhere."""
    found = [directory for directory in (Path(), folder.resolve(), *folder.resolve().parents)
             if (directory / input_path).is_file()]
    same = (directory for directory in found if sha256_of(directory / input_path) == sha256)
    return next(same, found[0] if found else None)
