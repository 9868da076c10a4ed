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


def overall_rows(summary: pl.DataFrame, system: str, overall: str = "overall") -> list[dict]:
    """Rows of one system's ``overall`` grouping, joined with its across-fold mean ± std if present."""
    rows = summary.filter((pl.col("grouping") == overall) & (pl.col("system") == system))
    folds = summary.filter((pl.col("grouping") == "across_folds") & (pl.col("system") == system)).select(
        "metric", "subset", fold_mean="value", fold_std="std"
    )
    return rows.join(folds, on=["metric", "subset"], how="left", maintain_order="left", nulls_equal=True).to_dicts()


def metric_label(row: dict, repeated: set[str]) -> str:
    """The metric's name, with its subset when the metric is computed on several subsets."""
    return f"{row['metric']} [{row['subset']}]" if row["metric"] in repeated else row["metric"]


def repeated_metrics(summary: pl.DataFrame) -> set[str]:
    """Metrics that appear with more than one subset."""
    counts = summary.group_by("metric").agg(pl.col("subset").n_unique().alias("_n"))
    return set(counts.filter(pl.col("_n") > 1).get_column("metric").to_list())


def fold_cell(row: dict) -> str:
    if row.get("fold_mean") is None:
        return "–"
    return f"{row['fold_mean']:.4f} ± {number(row['fold_std'])}"


def parameters_line(plan) -> str:
    """Every parameter of a run in one line: the operating threshold, relevance threshold,
    policies and weight (so a table never hides them in run.json only)."""
    values = {**dict(plan.parameters), "relevance_threshold": plan.relevance_threshold, "empty": plan.empty,
              "missing": plan.missing, "weight": plan.weight or "none"}
    return "parameters: " + ", ".join(f"{name} = {value}" for name, value in values.items())


# --- report tables (issue 12): one formatter for every number a report prints -------------

#: What a missing value prints as; the reason goes in a footnote (:class:`Footnotes`).
NULL_MARK = "—"


def format_number(value: float | None, kind: str = "score", *, percent: bool = False, decimals: int = 4) -> str:
    """Every number of a report table: ``decimals`` decimals (4 by default); ``count`` values as
    integers when whole (a mean of counts keeps two decimals); ``rate`` values as percentages
    with ``decimals - 2`` decimals when ``percent``; a null or NaN as :data:`NULL_MARK`.

    >>> format_number(0.91448), format_number(708.0, "count"), format_number(141.6, "count")
    ('0.9145', '708', '141.60')
    >>> format_number(0.51341, "rate", percent=True), format_number(None)
    ('51.34%', '—')
    """
    if value is None or value != value:
        return NULL_MARK
    if kind == "count":
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"
    if kind == "rate" and percent:
        return f"{value * 100:.{max(decimals - 2, 0)}f}%"
    return f"{value:.{decimals}f}"


def mean_std_text(value: float | None, std: float | None, kind: str = "score", *, percent: bool = False) -> str:
    """``value ± std`` (``0.9145 ± 0.0046``); the value alone when there is no std."""
    shown = format_number(value, kind, percent=percent)
    if value is None or std is None or std != std:
        return shown
    return f"{shown} ± {format_number(std, kind, percent=percent)}"


def ci_text(low: float | None, high: float | None, kind: str = "score", *, percent: bool = False) -> str:
    """``[low, high]`` (``[0.8941, 0.9003]``); :data:`NULL_MARK` without a bound."""
    if low is None or high is None or low != low or high != high:
        return NULL_MARK
    return f"[{format_number(low, kind, percent=percent)}, {format_number(high, kind, percent=percent)}]"


class Footnotes:
    """Numbered reasons for missing values: equal reasons share one number, in order of first use."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def number(self, reason: str) -> int:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return self.reasons.index(reason) + 1


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(number: int) -> str:
    """``12`` → ``¹²`` (footnote marks in Markdown, HTML and the terminal)."""
    return str(number).translate(_SUPERSCRIPT)
