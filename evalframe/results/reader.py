"""Reading a result folder written by ``evalframe run``: the one reader of saved results.

``evalframe compare``, ``power``, ``report`` and ``gate``, the notebook helper
:func:`evalframe.load` and :meth:`ReportData.from_directory <evalframe.report.tables.ReportData.from_directory>`
all read a folder through :func:`read_result`, so a folder is judged the same way everywhere:

- the folder must exist (else "<role> folder not found") and hold ``summary.parquet`` with the
  summary's key columns; ``run.json`` is required unless the caller reads the summary alone
  (``need_info=False``: the gate, whose reproduce line is the only use of ``run.json``);
- the other files (``per_query.parquet``, ``per_unit.parquet``, ``replicates.parquet``,
  ``curves.parquet``, ``<table>.csv``) are read on first use and are None when absent;
- a damaged file is an :class:`~evalframe.errors.InputError` naming it, never a Polars traceback.

A folder's input rows (set-metric randomization recomputes from them) are re-read by the
pipeline layer, which sits above this room: :func:`use_input_loader` is how it lends that job
(``import evalframe`` wires :func:`evalframe.pipeline.rerun.input_rows` in).

>>> import evalframe as ef
>>> result = ef.load("reports/evidence_contract")      # doctest: +SKIP
>>> result.summary; result.per_query; result.per_unit("post"); result.info["pipeline"]  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.errors import NO_VALUE, InputError, Problem, path_argument
from evalframe.results.data import ResultData

SUMMARY = "summary.parquet"
RUN_INFO = "run.json"
PER_QUERY = "per_query.parquet"
PER_UNIT = "per_unit.parquet"
REPLICATES = "replicates.parquet"
CURVES = "curves.parquet"
#: Summary columns every reader relies on.
SUMMARY_KEYS = ("grouping", "system", "metric", "n", "value")

#: ``(run.json's content, folder) → (derived queries table, plan)``; None until a layer that can
#: re-read a pipeline's input lends it (:func:`use_input_loader`).
_input_loader: Callable[[Mapping[str, Any], str], tuple[pl.DataFrame, Any]] | None = None


#: ``(run.json's content, folder, groupings) → replicates``, lent like the input loader.
_replicates_loader: Callable[[Mapping[str, Any], str, list[str]], pl.DataFrame] | None = None


def use_input_loader(loader: Callable[[Mapping[str, Any], str], tuple[pl.DataFrame, Any]] | None,
                     replicates: Callable[[Mapping[str, Any], str, list[str]], pl.DataFrame] | None = None) -> None:
    """Set how a result folder's input rows are re-read (:attr:`ResultData.rows`) and its bootstrap
    replicates recomputed (:attr:`ResultData.recompute_replicates`)."""
    global _input_loader, _replicates_loader
    _input_loader = loader
    _replicates_loader = replicates


def _problem(source: str, text: str) -> InputError:
    return InputError(source, Problem(None, None, NO_VALUE, text))


def _read_parquet(path: Path, source: str) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as error:  # a damaged or foreign file: name it
        raise _problem(source, f"cannot read {path.name}: {error}") from None


@dataclass(frozen=True)
class ResultFolder:
    """A folder written by ``evalframe run``, read through :func:`read_result` (module docstring)."""

    path: Path
    summary: pl.DataFrame
    #: ``run.json``'s content; None when the folder has none (only with ``need_info=False``).
    info: dict[str, Any] | None

    @property
    def source(self) -> str:
        return str(self.path)

    def file(self, name: str) -> Path | None:
        """The path of one of the folder's files, or None when it is absent."""
        path = self.path / name
        return path if path.exists() else None

    def _optional(self, name: str) -> pl.DataFrame | None:
        path = self.file(name)
        return _read_parquet(path, self.source) if path is not None else None

    @cached_property
    def per_query(self) -> pl.DataFrame | None:
        """``per_query.parquet`` (long per-query values), or None when the run did not write it."""
        return self._optional(PER_QUERY)

    @cached_property
    def replicates(self) -> pl.DataFrame | None:
        """``replicates.parquet`` (the bootstrap's replicate values), or None."""
        return self._optional(REPLICATES)

    @cached_property
    def curves(self) -> pl.DataFrame | None:
        """``curves.parquet`` (the plots' data), or None."""
        return self._optional(CURVES)

    @cached_property
    def per_unit_values(self) -> pl.DataFrame:
        """Long values of every unit (``per_query.parquet`` with ``unit = "query"`` and
        ``per_unit.parquet``); an empty table with ``system, unit, metric, value`` when neither is there."""
        parts = []
        if self.per_query is not None:
            parts.append(self.per_query.with_columns(unit=pl.lit("query")))
        coarse = self._optional(PER_UNIT)
        if coarse is not None:
            parts.append(coarse)
        if not parts:
            return pl.DataFrame(schema={"system": pl.String, "unit": pl.String, "metric": pl.String, "value": pl.Float64})
        return pl.concat(parts, how="diagonal_relaxed")

    def per_unit(self, unit: str = "query") -> pl.DataFrame:
        """Long values of one unit's metrics, as :meth:`Evaluation.per_unit
        <evalframe.engine.result.Evaluation.per_unit>` gives them (the key columns that unit's
        rows fill, ``metric``, ``value``, ``skip_reason``)."""
        rows = self.per_unit_values.filter(pl.col("unit") == unit)
        always = ("metric", "value", "skip_reason")
        return rows.select(c for c in rows.columns
                           if c != "unit" and (c in always or rows.get_column(c).null_count() < rows.height))

    @cached_property
    def tables(self) -> dict[str, pl.DataFrame]:
        """The further result tables ``run.json`` lists (``<name>.csv``), those present."""
        tables = {}
        for name in (self.info or {}).get("result_tables") or []:
            path = self.file(f"{name}.csv")
            if path is not None:
                tables[name] = pl.read_csv(path, infer_schema_length=None)
        return tables

    def data(self) -> ResultData:
        """The :class:`~evalframe.results.data.ResultData` the statistics read (compare, power)."""
        info = self.info or {}
        unit_keys = {name: tuple(keys) for name, keys in info.get("units", {"query": ["query_id"]}).items()}
        slices = {name: tuple(keys) for name, keys in info.get("slices", {"overall": []}).items()}
        levels = {entry["name"]: entry["level"] for entry in info.get("metrics", [])}
        values = _with_summary_subsets(self.per_unit_values, self.summary)
        return ResultData(
            summary=self.summary,
            values=values.drop("skip_reason", strict=False),
            unit_keys=unit_keys,
            slices=slices,
            levels=levels,
            weight=info.get("parameters", {}).get("weight"),
            replicates=self.replicates,
            rows=lambda: _input_rows(info, self.source),
            source=self.source,
            recompute_replicates=(lambda groupings: _replicates_loader(info, self.source, groupings))
            if info.get("bootstrap") and _replicates_loader is not None else None,
        )


def read_result(path: str | Path, *, role: str = "result", need_info: bool = True) -> ResultFolder:
    """Read the folder ``path`` written by ``evalframe run`` (module docstring); ``role`` names it
    in errors (``"baseline"``). Raises :class:`~evalframe.errors.InputError` naming the folder
    and what is missing."""
    folder = path_argument(path, f"the {role} folder")
    source = str(folder)
    if not folder.is_dir():
        raise _problem(source, f"{role} folder not found (no such directory); pass the --out folder of `evalframe run`")
    needed = (SUMMARY, RUN_INFO) if need_info else (SUMMARY,)
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise _problem(source, f"has no {' and no '.join(missing)}: not a result folder of `evalframe run` "
                               "(its outputs must include them)")
    summary = _read_parquet(folder / SUMMARY, source)
    absent = [column for column in SUMMARY_KEYS if column not in summary.columns]
    if absent:
        raise InputError(str(folder / SUMMARY), Problem(None, absent[0], NO_VALUE, "required column is missing"))
    info = None
    if (folder / RUN_INFO).is_file():
        try:
            info = json.loads((folder / RUN_INFO).read_text())
        except (OSError, ValueError) as error:
            if need_info:
                raise _problem(source, f"cannot read {RUN_INFO}: {error}") from None
    return ResultFolder(path=folder, summary=summary, info=info)


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


def _input_rows(info: Mapping[str, Any], source: str) -> tuple[pl.DataFrame, Any]:
    if _input_loader is None:
        raise _problem(source, "set-metric randomization needs the run's input rows: no input loader is set "
                               "(`import evalframe` sets the pipeline's)")
    return _input_loader(info, source)
