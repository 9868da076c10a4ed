"""``run.json``: what was run, on what, with which versions, and what was left out.

Everything in it is derived from the inputs, so the same inputs give the same bytes (no
timestamps, no host names).
"""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from evalframe._sorting import sort_naturally


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


def systems_overview(evaluation) -> list[dict[str, Any]]:
    """Per system: its queries and, where labels exist, how many have evidence (label = 1)."""
    queries = evaluation.queries
    with_evidence = (pl.col("label") == 1).sum() if "label" in queries.columns else pl.lit(None)
    counts = queries.group_by("system").agg(queries=pl.len(), with_evidence=with_evidence)
    return sort_naturally(counts, ["system"]).to_dicts()


def describe_run(evaluation) -> dict[str, Any]:
    """The content of run.json (a plain, JSON-ready dict)."""
    plan, tables = evaluation.plan, evaluation.inputs
    about = dict(plan.about)
    undefined = evaluation.summary.filter(pl.col("note").is_not_null() & pl.col("value").is_null())
    return {
        "pipeline": {"name": about.get("name"), "source": about.get("source"), "description": about.get("description", ""),
                     "targets": dict(about.get("targets") or {}),
                     **({"report": dict(about["report"])} if about.get("report") else {})},
        "input": dict(evaluation.source),
        "parameters": {
            **dict(plan.parameters),
            **(dict(zip(("tau_neg", "tau_pos"), plan.state_thresholds, strict=True)) if plan.state_thresholds else {}),
            "relevance_threshold": plan.relevance_threshold,
            "empty": plan.empty,
            "missing": plan.missing,
            "weight": plan.weight,
            "std": "sample standard deviation (ddof = 1; frequency weights)",
            "quantiles": "linear interpolation (numpy/pandas default); weighted: repeated-sample rule for whole weights, else inverted CDF",
        },
        "tables": {
            "queries": evaluation.queries.height,
            "ranking": tables.n_ranking_rows if tables is not None else evaluation.input_rows.get("ranking"),
            "judgments": tables.judgments.height if tables is not None else evaluation.input_rows.get("judgments"),
            "systems": systems_overview(evaluation),
        },
        "units": {name: list(keys) for name, keys in evaluation.units.keys.items()},
        "slices": {name: list(keys) for name, keys in plan.slices.items()},
        "analyses": dict(about.get("analyses", {})),
        "bootstrap": plan.bootstrap.describe() if plan.bootstrap is not None else None,
        "across_folds": plan.across_folds,
        "result_tables": list(evaluation.tables),
        "metrics": [
            {"name": m.name, "level": m.level.value, "unit": m.unit, "target": m.target.value, "subset": group.subset.description}
            for group in plan.groups
            for m in group.metrics
        ],
        # Parts of the pipeline the data could not run (`requires:`), and the overrides of the run.
        "skipped": list(about.get("skipped") or []),
        "overrides": dict(about.get("overrides") or {}),
        "skipped_units": evaluation.skipped.rename({"skip_reason": "reason"}).to_dicts(),
        # The LLM judge's calls, cache hits, retries and failures by kind (judge metrics only).
        **({"judge": dict(about["judge"])} if about.get("judge") else {}),
        "undefined_values": undefined.height,
        "notes": list(evaluation.notes),
        "versions": package_versions(),
    }
