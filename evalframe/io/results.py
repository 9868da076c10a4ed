"""What the statistics commands read: an evaluation's results, from memory or from a result folder.

:class:`ResultData` holds the parts of a result that paired comparisons and power analysis
need, whichever door they come through:

- ``summary``: the tidy summary (``grouping, system, <slice keys>, metric, unit, subset, n, value, …``);
- ``values``: long per-unit values of every per-unit metric: ``system``, ``unit`` (its name),
  the unit's key columns, the slice keys the unit carries, ``metric``, ``subset`` (the
  summary's subset text, so rows join the summary) and ``value`` (null where undefined);
- ``unit_keys`` (unit name → key columns, without ``system``), ``slices`` (grouping → keys),
  ``levels`` (metric → ``item``/``query``/``set``), ``weight`` (the weight column or None);
- ``replicates``: the bootstrap replicates (``replicates.parquet``, or
  ``Evaluation.replicates``) when the result has them, else None;
- ``rows``: for set metrics, a callable giving ``(queries, plan)`` (the derived queries table
  with ``_weight``, and the plan) or raising :class:`~evalframe.errors.InputError` saying why
  they are unavailable; from a folder the input is re-read (its sha256 must still match
  ``run.json``).

:func:`from_evaluation` wraps an :class:`~evalframe.engine.result.Evaluation`;
:func:`read_result_dir` reads a folder written by ``evalframe run``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.errors import NO_VALUE, EvalframeError, InputError, Problem

#: Columns of the long per-unit files that are not keys.
_VALUE_COLUMNS = ("metric", "value", "skip_reason", "unit", "subset")


@dataclass(frozen=True)
class ResultData:
    """An evaluation's results as the statistics read them (module docstring)."""

    summary: pl.DataFrame
    values: pl.DataFrame
    unit_keys: Mapping[str, tuple[str, ...]]
    slices: Mapping[str, tuple[str, ...]]
    levels: Mapping[str, str]
    weight: str | None = None
    replicates: pl.DataFrame | None = None
    rows: Callable[[], tuple[pl.DataFrame, Any]] | None = None
    source: str = "evaluation"
    #: The run's bootstrap replicates recomputed for some groupings (a folder written without
    #: replicates.parquet): the replicate weights depend only on the unit keys and the seed, so
    #: re-running the bootstrap on the run's input gives the run's replicates exactly. None: no
    #: bootstrap ran.
    recompute_replicates: Callable[[list[str]], pl.DataFrame] | None = None

    @property
    def systems(self) -> list[str]:
        return sorted(self.summary.get_column("system").unique().to_list())

    @property
    def slice_keys(self) -> list[str]:
        return list(dict.fromkeys(key for keys in self.slices.values() for key in keys))

    def unit_of(self, metric: str) -> str:
        units = self.summary.filter(pl.col("metric") == metric).get_column("unit").unique().to_list()
        return units[0] if units else "query"

    def check_system(self, system: str, role: str = "system") -> None:
        if system not in self.systems:
            known = ", ".join(f"`{s}`" for s in self.systems)
            raise InputError(self.source, Problem(None, "system", system, f"unknown {role} `{system}` (systems: {known})"))

    def check_metric(self, metric: str) -> None:
        known = self.summary.get_column("metric").unique(maintain_order=True).to_list()
        if metric not in known:
            import difflib

            close = difflib.get_close_matches(metric, known, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else f" (metrics: {', '.join(known)})"
            raise InputError(self.source, Problem(None, "metric", metric, f"unknown metric `{metric}`{hint}"))


def _subset_texts(plan) -> dict[tuple[str, str], str]:
    """(group subset name, metric) → the subset text the summary shows (engine's rule)."""
    return {
        (group.subset.name, metric.name): group.subset.description if group.subset.where else metric.subset
        for group in plan.groups
        for metric in group.metrics
    }


def from_evaluation(evaluation) -> ResultData:
    """The :class:`ResultData` of an in-memory :class:`~evalframe.engine.result.Evaluation`."""
    plan = evaluation.plan
    texts = _subset_texts(plan)
    mapping = pl.DataFrame(
        [{"subset": name, "metric": metric, "_text": text} for (name, metric), text in texts.items()],
        schema={"subset": pl.String, "metric": pl.String, "_text": pl.String},
    )
    values = (
        evaluation.per_unit_values.join(mapping, on=["subset", "metric"], how="left")
        .with_columns(subset=pl.col("_text")).drop("_text", "skip_reason")
    )
    queries, the_plan = evaluation.queries, plan
    return ResultData(
        summary=evaluation.summary,
        values=values,
        unit_keys={name: tuple(keys) for name, keys in evaluation.units.keys.items()},
        slices={name: tuple(keys) for name, keys in plan.slices.items()},
        levels={m.name: m.level.value for m in plan.metrics},
        weight=plan.weight,
        replicates=getattr(evaluation, "replicates", None),
        rows=lambda: (queries, the_plan),
        source="evaluation",
    )


def _read_parquet(path: Path, source: str) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as error:  # a damaged or foreign file: name it
        raise InputError(source, Problem(None, None, NO_VALUE, f"cannot read {path.name}: {error}")) from None


def read_result_dir(path: str | Path) -> ResultData:
    """The :class:`ResultData` of a folder written by ``evalframe run`` (``summary.parquet``,
    ``run.json``, ``per_query.parquet`` and/or ``per_unit.parquet``, ``replicates.parquet`` when
    present). Raises :class:`~evalframe.errors.InputError` naming the folder and what is missing."""
    folder = Path(path)
    source = str(folder)
    if not folder.is_dir():
        raise InputError(source, Problem(None, None, NO_VALUE, "not a result folder (no such directory); pass the --out folder of `evalframe run`"))
    missing = [name for name in ("summary.parquet", "run.json") if not (folder / name).is_file()]
    if missing:
        raise InputError(source, Problem(None, None, NO_VALUE, f"not a result folder of `evalframe run`: {', '.join(missing)} missing"))
    try:
        info = json.loads((folder / "run.json").read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(source, Problem(None, None, NO_VALUE, f"cannot read run.json: {error}")) from None
    summary = _read_parquet(folder / "summary.parquet", source)
    unit_keys = {name: tuple(keys) for name, keys in info.get("units", {"query": ["query_id"]}).items()}
    slices = {name: tuple(keys) for name, keys in info.get("slices", {"overall": []}).items()}
    levels = {entry["name"]: entry["level"] for entry in info.get("metrics", [])}
    parts = []
    if (folder / "per_query.parquet").is_file():
        parts.append(_read_parquet(folder / "per_query.parquet", source).with_columns(unit=pl.lit("query")))
    if (folder / "per_unit.parquet").is_file():
        parts.append(_read_parquet(folder / "per_unit.parquet", source))
    values = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame(
        schema={"system": pl.String, "unit": pl.String, "metric": pl.String, "value": pl.Float64}
    )
    values = _with_summary_subsets(values, summary)
    replicates = _read_parquet(folder / "replicates.parquet", source) if (folder / "replicates.parquet").is_file() else None
    return ResultData(
        summary=summary,
        values=values.drop("skip_reason", strict=False),
        unit_keys=unit_keys,
        slices=slices,
        levels=levels,
        weight=info.get("parameters", {}).get("weight"),
        replicates=replicates,
        rows=lambda: _reread_input(info, source),
        source=source,
        recompute_replicates=(lambda groupings: _recomputed_replicates(info, source, groupings)) if info.get("bootstrap") else None,
    )


def _with_summary_subsets(values: pl.DataFrame, summary: pl.DataFrame) -> pl.DataFrame:
    """Give the per-unit rows the summary's subset text. A metric computed on one subset takes
    that subset's text; one computed on several keeps the subset name written in the file's
    ``subset`` column (its rows then join the summary only where the name is the summary's text:
    a known limit of reading a folder; an Evaluation maps names exactly)."""
    subsets = summary.select("metric", "subset").unique()
    single = subsets.group_by("metric").agg(pl.col("subset").first(), pl.len().alias("_count")).filter(pl.col("_count") == 1)
    if "subset" not in values.columns:
        return values.join(single.select("metric", "subset"), on="metric", how="left")
    named = values.rename({"subset": "_name"}).join(single.select("metric", "subset"), on="metric", how="left")
    return named.with_columns(subset=pl.coalesce("subset", "_name")).drop("_name")


def _reread_input(info: Mapping[str, Any], source: str) -> tuple[pl.DataFrame, Any]:
    """The derived queries table and plan of a result folder's run, from its pipeline and input
    (set metrics need the rows, which the folder does not keep). Raises an InputError saying
    what is unavailable and why."""
    from evalframe.engine.derive import prepare

    tables, pipeline = _reread_tables(info, source)
    plan, queries, _units, _index, _notes = prepare(tables, pipeline.plan)
    return queries, plan


def _recomputed_replicates(info: Mapping[str, Any], source: str, groupings: list[str]) -> pl.DataFrame:
    """The run's replicates of the summary rows of ``groupings`` (no across-folds rows), from its input."""
    from dataclasses import replace

    from evalframe.engine.evaluation import run

    tables, pipeline = _reread_tables(info, source)
    plan = pipeline.plan
    chosen = {name: keys for name, keys in plan.slices.items() if name in groupings} or {"overall": ()}
    plan = replace(plan, slices=chosen, across_folds=None)
    return run(tables, plan).replicates


def _reread_tables(info: Mapping[str, Any], source: str):
    """The input tables and the adapted pipeline of a result folder's run (:func:`_reread_input`)."""
    from evalframe.pipeline import load_pipeline
    from evalframe.pipeline.run import read_input
    from evalframe.report.run_info import sha256_of

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
    from evalframe.pipeline.preflight import preflight

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
