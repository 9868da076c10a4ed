"""Every check of a pipeline against its data, before the engine computes anything.

:func:`preflight` runs once the input is read and before :func:`evalframe.engine.evaluation.run`:

1. it adapts the pipeline to the data: parts whose ``requires:`` the data does not meet are
   skipped, each with one note (:mod:`evalframe.pipeline.requires`);
2. it checks what is left against the data and reports every problem at once (a
   :class:`~evalframe.errors.ConfigError`, exit 2, nothing written): columns named by slices,
   subsets, units, the weight and the metrics (derived columns included: ``n_relevant``, the
   extracted set, the ``state`` of ``tau_neg``/``tau_pos``); the bootstrap unit (a column, one
   value per metric unit); the ablation's and the comparison's system names and ``--baseline``;
   the γ sweep's ranked scores; tuning's columns; the installed packages of the chosen outputs.

It reads column names and, for the bootstrap unit and the system names, one group-by of the
queries table: it takes well under a second on 147,700 queries. ``evalframe check-pipeline
PIPELINE --input FILE`` runs exactly this.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.data.units import QUERY, SYSTEM, Units
from evalframe.engine.derive import column_problems
from evalframe.engine.extraction import EXTRACTION_COLUMNS
from evalframe.errors import NO_VALUE, ConfigError, Problem
from evalframe.metrics.recommendation import RECOMMENDED
from evalframe.pipeline.requires import adapt, has_requires

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.pipeline.spec import PipelineSpec

#: Report files, drawn with the report packages (great-tables, matplotlib).
REPORT_FILES = ("report.md", "report.html", "report.tex", "report_tables.csv", "plots")


def require_report_extra() -> None:
    """Report files need great-tables and matplotlib (core dependencies; a trimmed install may
    lack them): say so before anything is computed or written."""
    from importlib.util import find_spec

    missing = [name for name, module in (("great-tables", "great_tables"), ("matplotlib", "matplotlib")) if find_spec(module) is None]
    if missing:
        raise ConfigError(f"report outputs need {' and '.join(missing)}: pip install 'evalframe[report]' "
                          "(or leave report files out of the pipeline's `outputs`)")


def systems_of(tables: Tables) -> list[str]:
    """The input's systems (configs), in order of first appearance (a per_query file's ranked
    lists keep the file's row order; its queries table is sorted)."""
    if tables.ranked_lists is not None:
        return tables.ranked_lists.get_column(SYSTEM).unique(maintain_order=True).to_list()
    if tables.queries is not None:
        return tables.queries.get_column(SYSTEM).unique(maintain_order=True).to_list()
    return tables.ranked_pairs().get_column(SYSTEM).unique(maintain_order=True).to_list()


def available_columns(tables: Tables, state_derived: bool) -> set[str]:
    """Columns a pipeline part may name: the input's own (contract names), the queries table's,
    and those the derive stage adds (``n_relevant``, the extracted set, the derived ``state``,
    the recommended items of a ranking, the catalog's parts), without the columns the reader
    added only as nulls (:mod:`evalframe.pipeline.requires`)."""
    queries = tables.queries.columns if tables.queries is not None else [SYSTEM, "query_id"]
    found = {*tables.source_columns, *queries, "n_relevant"} - set(tables.absent_columns)
    ranking = tables.ranking_rows.columns if tables.ranking_rows is not None else (
        tables.ranked_lists.columns if tables.ranked_lists is not None else [])
    if "selected_k" in found or "n_extracted" in found or "extracted" in ranking:
        found |= {*EXTRACTION_COLUMNS, "selected_k"}
    if "score" in ranking:
        found.add("ranked_scores")
    if state_derived:
        found.add("state")
    if tables.has_ranking:
        found.add(RECOMMENDED)  # each user's recommended items, derived from the ranking (engine/recommended.py)
    if tables.catalog is not None:
        found |= tables.catalog.parts()
    return found


def preflight(pipeline: PipelineSpec, tables: Tables, *, systems: list[str] | None = None) -> PipelineSpec:
    """``pipeline`` adapted to ``tables`` (skipped parts recorded), or a ConfigError listing every
    problem of the pipeline against the data (module docstring).

    ``systems``: the input's systems in order of first appearance when ``tables`` hold a part of
    it (the out-of-core path checks the head of its input, :mod:`evalframe.pipeline.scanned`);
    default: :func:`systems_of` ``tables``."""
    systems = systems if systems is not None else systems_of(tables)
    available = available_columns(tables, pipeline.plan.state_thresholds is not None)
    if pipeline.raw is not None:
        adapted, skipped = adapt(pipeline.raw, available, len(systems))
        if skipped:
            if not adapted["metrics"]:
                raise ConfigError.of([Problem("metrics", None, NO_VALUE, "every metric group was skipped:"),
                                      *(Problem(s.part, None, NO_VALUE, s.note()) for s in skipped)], source=pipeline.source or "pipeline")
            rebuilt = type(pipeline).from_mapping(adapted, origin=pipeline.source or "pipeline")
            pipeline = replace(rebuilt, raw=pipeline.raw, skipped=tuple(skipped), overrides=pipeline.overrides)
    problems = _problems(pipeline, tables, available, systems)
    if problems:
        raise ConfigError.of(problems, source=_where(pipeline))
    pipeline = _with_ablation_order(pipeline, systems)
    about = {**pipeline.plan.about, "skipped": [s.describe() for s in pipeline.skipped],
             "overrides": dict(pipeline.overrides or {})}
    return replace(pipeline, plan=replace(pipeline.plan, about=about))


def check_part(pipeline: PipelineSpec, tables: Tables) -> None:
    """The checks of :func:`preflight` that read rows, for ``tables`` holding whole units of the
    input (a bucket): the bootstrap unit has one value within every unit of a metric; a
    ConfigError as :func:`preflight` raises."""
    plan = pipeline.plan
    available = available_columns(tables, plan.state_thresholds is not None)
    units = Units.resolve(plan.units, sorted((available - {"ranked_scores"}) | {"n_relevant"}))
    problems = _bootstrap_problems(plan, tables, units, available)
    if problems:
        raise ConfigError.of(problems, source=_where(pipeline))


def _where(pipeline: PipelineSpec) -> str:
    return f"pipeline `{pipeline.name}` against its input"


def _problems(pipeline: PipelineSpec, tables: Tables, available: set[str], systems: list[str]) -> list[Problem]:
    plan = pipeline.plan
    queries_columns = sorted((available - {"ranked_scores"}) | {"n_relevant"})
    units = Units.resolve(plan.units, queries_columns)
    problems = [p for p in column_problems(plan, queries_columns, units) if not _is_extraction(p)]
    needs_extraction = [m.name for m in plan.metrics if set(m.required_columns.get("queries", ())) & {*EXTRACTION_COLUMNS, "selected_k"}]
    if needs_extraction and "selected_k" not in available:
        problems.append(Problem("metrics", None, NO_VALUE,
                                f"{', '.join(f'`{n}`' for n in needs_extraction[:4])}{' …' if len(needs_extraction) > 4 else ''} "
                                "need the extracted set: a `selected_k` or `extracted_sent_uids` column (or mark the metric "
                                "group `requires: {any_of: [selected_k, extracted_sent_uids]}`)"))
    if pipeline.plan.across_folds is not None and pipeline.plan.across_folds not in available:
        problems.append(Problem("across_folds", None, pipeline.plan.across_folds, "is not a column of the input"))
    problems += _bootstrap_problems(plan, tables, units, available)
    baseline = (pipeline.overrides or {}).get("baseline")
    if baseline is not None and baseline not in systems:
        problems.append(Problem("--baseline", None, baseline, f"is not a system of the input (systems: {_listing(systems)})"))
    if pipeline.compare and pipeline.compare.get("baseline") not in systems and baseline is None:
        problems.append(Problem("compare.baseline", None, pipeline.compare.get("baseline"),
                                f"is not a system of the input (systems: {_listing(systems)})"))
    if pipeline.ablation is not None:
        order = pipeline.ablation.get("order") or []
        unknown = [name for name in order if name not in systems]
        if unknown and not has_requires(pipeline.raw or {}, "ablation"):
            problems.append(Problem("ablation.order", None, unknown, f"names systems the input does not have (systems: {_listing(systems)})"))
    if pipeline.dynamic_k_sweep is not None and "ranked_scores" not in available:
        problems.append(Problem("dynamic_k_sweep", None, NO_VALUE, "needs the ranked scores: a `ranked_scores` column "
                                "(or mark the block `requires: [ranked_scores]` to skip it without them)"))
    if pipeline.tuning is not None:
        fold = plan.across_folds or "fold"
        missing = [c for c in ("label", "prob", fold) if c not in available]
        if missing:
            problems.append(Problem("tuning", None, NO_VALUE, f"needs the columns {_listing(missing)}"))
    if any(name in REPORT_FILES for name in pipeline.outputs):
        try:
            require_report_extra()
        except ConfigError as error:
            problems.append(Problem("outputs", None, NO_VALUE, str(error)))
    return problems


def _is_extraction(problem: Problem) -> bool:
    """Missing extracted-set columns are reported once, by their own problem."""
    return any(f"`{name}`" in problem.message for name in (*EXTRACTION_COLUMNS, "selected_k")) and "names column" in problem.message


def _bootstrap_problems(plan, tables: Tables, units: Units, available: set[str]) -> list[Problem]:
    """The bootstrap unit's columns exist and have one value within every unit of a metric."""
    settings = plan.bootstrap
    if settings is None or settings.unit_columns is None:
        return []
    columns = list(settings.unit_columns)
    missing = [c for c in columns if c not in available]
    if missing:
        return [Problem("bootstrap.unit", None, missing, f"names columns the queries table does not have (columns: {_listing(sorted(available))})")]
    problems = []
    queries = tables.queries
    if queries is None:
        return problems
    present = [c for c in columns if c in queries.columns]
    for unit in dict.fromkeys(m.unit for m in plan.metrics):
        keys = [k for k in units.keys.get(unit, ()) if k in queries.columns]
        if unit == QUERY or not keys or not present or set(present) <= set(keys):
            continue
        spread = queries.group_by([SYSTEM, *keys]).agg(pl.col(c).n_unique() for c in present)
        for column in present:
            varying = spread.filter(pl.col(column) > 1)
            if varying.height:
                example = ", ".join(f"{k}={v!r}" for k, v in zip(keys, varying.select(keys).row(0), strict=True))
                problems.append(Problem("bootstrap.unit", None, columns,
                                        f"`{column}` varies within a `{unit}` (e.g. {example}), so `{unit}` metrics cannot be "
                                        f"resampled by it; resample `{unit}`s or a coarser unit"))
    return problems


def _with_ablation_order(pipeline: PipelineSpec, systems: list[str]) -> PipelineSpec:
    """The ablation's order: as given (names not in the data dropped when the block has
    ``requires:``), else the systems in order of first appearance; ``--baseline`` first."""
    if pipeline.ablation is None:
        return pipeline
    order = [name for name in pipeline.ablation.get("order") or [] if name in systems] or list(systems)
    baseline = (pipeline.overrides or {}).get("baseline")
    if baseline is not None:
        order = [baseline, *(name for name in order if name != baseline)]
    return replace(pipeline, ablation={**pipeline.ablation, "order": order})


def _listing(values: Any) -> str:
    return ", ".join(f"`{v}`" for v in values)
