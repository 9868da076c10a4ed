"""Number formatting shared by the terminal and Markdown renderers."""

from __future__ import annotations

import polars as pl

from evalframe.metrics.base import Metric


def number(value: float | None, *, count: bool = False) -> str:
    """4 decimals, integers for counts, an en dash for a missing value."""
    if value is None:
        return "–"
    return f"{value:,.0f}" if count else f"{value:.4f}"


def meaning(metric: Metric) -> str:
    """First line of the metric's docstring: what it measures."""
    return (type(metric).__doc__ or "").strip().splitlines()[0]


def overall_rows(summary: pl.DataFrame, system: str) -> list[dict]:
    """Overall summary rows of one system, joined with its across-fold mean ± std if present."""
    overall = summary.filter((pl.col("grouping") == "overall") & (pl.col("system") == system))
    folds = summary.filter((pl.col("grouping") == "across_folds") & (pl.col("system") == system)).select(
        "metric", fold_mean="value", fold_std="std"
    )
    return overall.join(folds, on="metric", how="left", maintain_order="left").to_dicts()


def fold_cell(row: dict) -> str:
    if row.get("fold_mean") is None:
        return "–"
    return f"{row['fold_mean']:.4f} ± {number(row['fold_std'])}"
