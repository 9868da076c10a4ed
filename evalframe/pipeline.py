"""Declarative pipelines: read → validate → derive → metrics → slices → across folds → report.

A pipeline is a YAML file in ``pipelines/`` (or a :class:`Pipeline` built in Python) that
names the input and its column mapping, parameters (operating threshold, relevance
threshold), subsets of queries (Polars SQL conditions, never Python), metric groups bound to
subsets, slices (grouping sets), the fold key for across-fold rows, and the outputs.

>>> import evalframe as ef
>>> res = ef.run_pipeline("pipelines/evidence_contract.yaml", input="data_samples/per_query.csv")  # doctest: +SKIP
>>> res.summary.filter(grouping="fold", metric="ndcg@10")                                          # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from evalframe._preload import preload
from evalframe._resources import bundled_dir
from evalframe.compute import MetricGroup, Subset, Tables, across_folds, compute_metrics
from evalframe.contracts import load_yaml
from evalframe.errors import ConfigError
from evalframe.metrics.registry import resolve_all
from evalframe.run_info import sha256_of

INPUT_FORMATS = ("per_query",)
OUTPUT_FILES = ("per_query.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json")
#: Query columns carried into the per-query output for traceability when present.
TRACE_KEYS = ("post_id", "criterion_id", "fold")

_TOP_KEYS = {"version", "name", "description", "input", "parameters", "subsets", "metrics", "slices",
             "across_folds", "outputs"}


@dataclass(frozen=True)
class InputSpec:
    """Where the per-query data comes from and how its columns are named."""

    path: str | None = None
    format: str = "per_query"
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Pipeline:
    """A declarative evaluation pipeline (see the module docstring)."""

    name: str
    groups: tuple[MetricGroup, ...]
    input: InputSpec = InputSpec()
    slices: Mapping[str, Sequence[str]] = field(default_factory=lambda: {"overall": []})
    across_folds: str | None = None
    relevance_threshold: int = 1
    parameters: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = OUTPUT_FILES
    description: str = ""
    source: str | None = None

    @classmethod
    def from_yaml(cls, path: str | Path) -> Pipeline:
        path = Path(path)
        try:
            spec = load_yaml(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ConfigError(f"{path}: cannot read the pipeline: {error}") from None
        return cls.from_mapping(spec, origin=str(path))

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any], *, origin: str = "pipeline") -> Pipeline:
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{origin}: a pipeline is a mapping of keys, got {type(spec).__name__}")
        unknown = sorted(set(spec) - _TOP_KEYS)
        if unknown:
            raise ConfigError(f"{origin}: unknown keys {unknown} (known: {sorted(_TOP_KEYS)})")
        if spec.get("version") != 1:
            raise ConfigError(f"{origin}: unsupported pipeline version {spec.get('version')!r} (expected 1)")
        input_spec = InputSpec(**(spec.get("input") or {}))
        if input_spec.format not in INPUT_FORMATS:
            raise ConfigError(f"{origin}: input format {input_spec.format!r} is not one of {list(INPUT_FORMATS)}")
        parameters = dict(spec.get("parameters") or {})
        relevance_threshold = parameters.pop("relevance_threshold", 1)
        subsets = {
            name: Subset(name, (body or {}).get("description", name), (body or {}).get("where"))
            for name, body in (spec.get("subsets") or {}).items()
        }
        subsets.setdefault("all_queries", Subset("all_queries", "all queries"))
        groups = []
        for position, group in enumerate(spec.get("metrics") or []):
            subset_name = group.get("subset", "all_queries")
            if subset_name not in subsets:
                raise ConfigError(f"{origin}: metric group {position + 1} names unknown subset `{subset_name}` (known: {sorted(subsets)})")
            try:
                metrics = tuple(resolve_all(group.get("names") or [], defaults=parameters))
            except ConfigError as error:
                raise ConfigError(f"{origin}: metric group {position + 1}: {error}") from None
            groups.append(MetricGroup(subsets[subset_name], metrics))
        if not groups:
            raise ConfigError(f"{origin}: the pipeline lists no metrics")
        outputs = tuple(spec.get("outputs") or OUTPUT_FILES)
        unknown_outputs = sorted(set(outputs) - set(OUTPUT_FILES))
        if unknown_outputs:
            raise ConfigError(f"{origin}: unknown outputs {unknown_outputs} (known: {list(OUTPUT_FILES)})")
        slices = {name: list(keys or []) for name, keys in (spec.get("slices") or {"overall": []}).items()}
        fold_key = spec.get("across_folds")
        if fold_key is not None and [fold_key] not in slices.values():
            raise ConfigError(f"{origin}: across_folds `{fold_key}` needs a slice that groups by [{fold_key}] alone")
        return cls(
            name=spec.get("name") or Path(origin).stem,
            groups=tuple(groups),
            input=input_spec,
            slices=slices,
            across_folds=fold_key,
            relevance_threshold=relevance_threshold,
            parameters=parameters,
            outputs=outputs,
            description=" ".join(str(spec.get("description", "")).split()),
            source=origin,
        )

    @property
    def metrics(self) -> list:
        return [metric for group in self.groups for metric in group.metrics]

    def run(self, input: str | Path | pl.DataFrame | None = None) -> PipelineResult:
        """Run the pipeline on ``input`` (default: the pipeline's own input path)."""
        from evalframe.run_info import describe_run

        source = input if input is not None else self.input.path
        if source is None:
            raise ConfigError(f"pipeline `{self.name}` names no input; pass one")
        preload()  # modules the metric stage imports on first use, while the input is read
        with ThreadPoolExecutor(max_workers=1) as background:
            # The input's sha256 (run.json) is computed beside the reading; hashlib releases the GIL.
            digest = background.submit(sha256_of, Path(source)) if isinstance(source, (str, Path)) else None
            tables, n_rows = read_input(self.input, source)
            query_keys = [k for k in TRACE_KEYS if k in tables.queries.columns]
            computed = compute_metrics(
                tables, self.groups, self.slices, query_keys=query_keys, relevance_threshold=self.relevance_threshold
            )
            summary = computed.summary
            if self.across_folds is not None:
                fold_grouping = next(name for name, keys in self.slices.items() if list(keys) == [self.across_folds])
                slice_keys = list(dict.fromkeys(k for keys in self.slices.values() for k in keys))
                summary = pl.concat([summary, across_folds(summary, fold_grouping, slice_keys)])
            sha256 = digest.result() if digest is not None else None
        info = describe_run(self, source, tables, n_rows, summary, computed.skipped, sha256=sha256)
        return PipelineResult(pipeline=self, per_query=computed.per_query, summary=summary, info=info, tables=tables)


@dataclass(frozen=True)
class PipelineResult:
    """What a pipeline run returns: tidy per-query values, the summary and the run description."""

    pipeline: Pipeline
    per_query: pl.DataFrame
    summary: pl.DataFrame
    info: dict
    tables: Tables

    def write(self, out_dir: str | Path) -> Path:
        """Write the pipeline's outputs under ``out_dir`` atomically; return the folder."""
        from evalframe.report.outputs import write_outputs

        return write_outputs(self, Path(out_dir))

    def overview(self) -> str:
        """The compact terminal table of overall results."""
        from evalframe.report.terminal import render_overview

        return render_overview(self)


def read_input(spec: InputSpec, source: str | Path | pl.DataFrame) -> tuple[Tables, int]:
    """Read the pipeline input into the long tables; return them and the input's row count."""
    from evalframe.io.per_query import read_per_query

    tables = read_per_query(source, columns=spec.columns)
    return tables, tables.n_rows


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
) -> PipelineResult:
    """Load and run a pipeline; write its outputs when ``out`` is given."""
    result = load_pipeline(pipeline).run(input)
    if out is not None:
        result.write(out)
    return result


def with_input(pipeline: Pipeline, path: str | Path) -> Pipeline:
    """A copy of ``pipeline`` reading from ``path``."""
    return replace(pipeline, input=replace(pipeline.input, path=str(path)))
