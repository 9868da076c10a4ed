"""Hand-built run outputs (what `evalframe run` writes) for the gate tests."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

SUMMARY_SCHEMA = {"grouping": pl.String, "system": pl.String, "tags": pl.String, "tier": pl.String, "metric": pl.String,
                  "unit": pl.String, "subset": pl.String, "n": pl.Int64, "n_skipped": pl.Int64, "value": pl.Float64}


def write_run(folder: Path, values: dict, *, system: str = "sys", tags: dict | None = None, n: int = 100,
              per_query: dict | None = None) -> Path:
    """A run folder: ``values`` {metric: overall value}; ``tags`` {metric: {tag: (value, n)}};
    ``per_query`` {metric: {query_id: value}} (written as per_query.parquet)."""
    rows = [{"grouping": "overall", "system": system, "tags": None, "tier": None, "metric": m, "unit": "query",
             "subset": "all", "n": n, "n_skipped": 0, "value": v} for m, v in values.items()]
    for metric, by_tag in (tags or {}).items():
        rows += [{"grouping": "tag", "system": system, "tags": tag, "tier": None, "metric": metric, "unit": "query",
                  "subset": "all", "n": count, "n_skipped": 0, "value": value} for tag, (value, count) in by_tag.items()]
    folder.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=SUMMARY_SCHEMA).write_parquet(folder / "summary.parquet")
    if per_query is not None:
        long = [{"system": system, "query_id": q, "tags": ["t"], "metric": m, "value": v, "skip_reason": None}
                for m, by_query in per_query.items() for q, v in by_query.items()]
        pl.DataFrame(long, schema={"system": pl.String, "query_id": pl.String, "tags": pl.List(pl.String),
                                   "metric": pl.String, "value": pl.Float64, "skip_reason": pl.String}
                     ).write_parquet(folder / "per_query.parquet")
    (folder / "run.json").write_text(json.dumps({"pipeline": {"source": "pipelines/retrieval_gate.yaml"},
                                                 "input": {"path": f"gold/{folder.name}.jsonl"}}))
    return folder


def write_criteria(folder: Path, text: str) -> Path:
    path = folder / "ship-criteria.yaml"
    path.write_text(text)
    return path
