"""``run.json``: what was run, on what, with which versions, and what was left out.

Everything in it is derived from the inputs, so the same inputs give the same bytes (no
timestamps, no host names).
"""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from evalframe.compute import Tables
    from evalframe.pipeline import Pipeline

VERSIONED_PACKAGES = ("evalframe", "polars", "pandera", "pyarrow", "pyyaml")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def describe_run(
    pipeline: Pipeline,
    source,
    tables: Tables,
    n_rows: int,
    summary: pl.DataFrame,
    skipped: pl.DataFrame,
    *,
    sha256: str | None,
) -> dict:
    """The content of run.json (a plain, JSON-ready dict).

    ``skipped`` holds ``system, metric, skip_reason, count`` (see
    :class:`~evalframe.compute.MetricTables`); ``sha256`` is the input file's (None for an
    in-memory table).
    """
    if isinstance(source, (str, Path)):
        input_info = {"path": str(source), "sha256": sha256, "format": pipeline.input.format}
    else:
        input_info = {"path": None, "sha256": None, "format": "in-memory table"}
    queries = tables.queries
    per_system = queries.group_by("system", maintain_order=True).agg(
        queries=pl.len(), with_evidence=(pl.col("label") == 1).sum() if "label" in queries.columns else pl.lit(None)
    ).sort("system")
    undefined = summary.filter(pl.col("note").is_not_null() & pl.col("value").is_null()).select(
        "grouping", "system", "metric", "note"
    )
    return {
        "pipeline": {"name": pipeline.name, "source": pipeline.source, "description": pipeline.description},
        "input": {**input_info, "rows": n_rows, "columns": dict(pipeline.input.columns)},
        "parameters": {
            **{key: value for key, value in pipeline.parameters.items()},
            "relevance_threshold": pipeline.relevance_threshold,
            "std": "sample standard deviation (ddof = 1)",
            "quantiles": "linear interpolation (numpy/pandas default)",
        },
        "tables": {
            "queries": queries.height,
            "ranking": tables.n_ranking_rows,
            "judgments": tables.judgments.height,
            "systems": per_system.to_dicts(),
        },
        "slices": {name: list(keys) for name, keys in pipeline.slices.items()},
        "metrics": [
            {"name": m.name, "level": m.level.value, "target": m.target.value, "subset": group.subset.description}
            for group in pipeline.groups
            for m in group.metrics
        ],
        "skipped": skipped.rename({"skip_reason": "reason"}).to_dicts(),
        "undefined_values": undefined.height,
        "versions": package_versions(),
    }
