"""Running a pipeline: find it, read its input, run its plan through the engine.

The stages themselves are the engine's (:mod:`evalframe.engine.evaluation`); a pipeline adds
only where the input comes from and which outputs are written.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import polars as pl

from evalframe._preload import preload
from evalframe._resources import bundled_dir
from evalframe.engine.evaluation import run
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem
from evalframe.pipeline.spec import InputSpec, PipelineSpec
from evalframe.report.run_info import sha256_of
from evalframe.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.result import Evaluation


def read_input(spec: InputSpec, source: str | Path | pl.DataFrame) -> Tables:
    """Read the pipeline input into the long tables."""
    from evalframe.io.per_query import read_per_query

    return read_per_query(source, columns=spec.columns)


class Pipeline(PipelineSpec):
    """A validated pipeline (:class:`~evalframe.pipeline.spec.PipelineSpec`) that runs."""

    def run(self, input: str | Path | pl.DataFrame | None = None) -> Evaluation:
        """Run the pipeline on ``input`` (default: the pipeline's own input path)."""
        return run_loaded(self, input)


def default_input(pipeline: PipelineSpec) -> Path | None:
    """The pipeline's own input path: relative to the current folder, or, for a bundled pipeline
    whose input is not found there, to the bundle (so `evalframe run evidence_contract` finds its
    sample from any folder)."""
    if pipeline.input.path is None:
        return None
    path = Path(pipeline.input.path)
    if path.is_absolute() or path.exists() or pipeline.source is None:
        return path
    bundle = bundled_dir("pipelines")
    if Path(pipeline.source).resolve().parent == bundle.resolve():
        bundled = bundle.parent / path
        if bundled.exists():
            return bundled
    return path


def run_loaded(pipeline: PipelineSpec, input: str | Path | pl.DataFrame | None = None) -> Evaluation:
    """Run ``pipeline`` on ``input`` (default: the pipeline's own input path, :func:`default_input`)."""
    source = input if input is not None else default_input(pipeline)
    if source is None:
        raise ConfigError(f"pipeline `{pipeline.name}` names no input; pass one (`--input FILE`, or `input=` in Python)")
    if isinstance(source, (str, Path)) and not Path(source).exists():
        hint = "" if input is not None else " (the pipeline's `input.path`; pass another with `--input FILE`, or `input=` in Python)"
        raise InputError(str(source), Problem(None, None, NO_VALUE, f"file not found{hint}"))
    preload()  # modules the metric stage imports on first use, while the input is read
    with ThreadPoolExecutor(max_workers=1) as background:
        # The input's sha256 (run.json) is computed beside the reading; hashlib releases the GIL.
        digest = background.submit(sha256_of, Path(source)) if isinstance(source, (str, Path)) else None
        tables = read_input(pipeline.input, source)
        evaluation = run(tables, replace(pipeline.plan, about={**pipeline.plan.about, "outputs": pipeline.outputs}))
        sha256 = digest.result() if digest is not None else None
    if isinstance(source, (str, Path)):
        described = {"path": str(source), "sha256": sha256, "format": pipeline.input.format}
    else:
        described = {"path": None, "sha256": None, "format": "in-memory table"}
    described |= {"rows": tables.n_rows, "columns": dict(pipeline.input.columns)}
    return replace(evaluation, source=described)


def load_pipeline(pipeline: str | Path | Pipeline) -> Pipeline:
    """A pipeline from a YAML path, or by the name of a bundled pipeline (``evidence_contract``)."""
    if isinstance(pipeline, Pipeline):
        return pipeline
    path = Path(pipeline)
    if path.is_file():
        return Pipeline.from_yaml(path)
    bundled = bundled_dir("pipelines") / f"{path.stem}.yaml"
    if path.suffix in ("", ".yaml", ".yml") and bundled.is_file() and path.parent == Path("."):
        return Pipeline.from_yaml(bundled)
    names = sorted(p.stem for p in bundled_dir("pipelines").glob("*.yaml"))
    raise ConfigError(f"pipeline `{pipeline}` not found (bundled pipelines: {', '.join(names)})")


def run_pipeline(
    pipeline: str | Path | Pipeline,
    *,
    input: str | Path | pl.DataFrame | None = None,
    out: str | Path | None = None,
    bootstrap: Bootstrap | None | Literal[False] = None,
) -> Evaluation:
    """Load and run a pipeline; write its outputs when ``out`` is given.

    ``bootstrap`` replaces the pipeline's ``bootstrap:`` settings (:class:`~evalframe.Bootstrap`;
    ``False`` turns intervals off; None keeps the pipeline's).
    """
    loaded = load_pipeline(pipeline)
    if bootstrap is not None:
        loaded = with_bootstrap(loaded, bootstrap or None)
    evaluation = loaded.run(input)
    if out is not None:
        evaluation.write(out)
    return evaluation


def with_bootstrap(pipeline: Pipeline, bootstrap: Bootstrap | None) -> Pipeline:
    """A copy of ``pipeline`` with other bootstrap settings (None: no intervals)."""
    return replace(pipeline, plan=replace(pipeline.plan, bootstrap=bootstrap))


def with_input(pipeline: Pipeline, path: str | Path) -> Pipeline:
    """A copy of ``pipeline`` reading from ``path``."""
    return replace(pipeline, input=replace(pipeline.input, path=str(path)))
