"""Number formatting shared by every renderer (terminal, Markdown, HTML, LaTeX, the PR comment).

:func:`format_number` is the one formatter of report numbers (:func:`format_value` is its
shortcut for a metric's value or a count): renderers pass a number and what it is, never a
format string of their own, so a count prints the same way everywhere. The plain-language
helpers (:func:`percent`, :func:`points`, …) round half up for sentences of the gate's PR comment.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

import polars as pl

from evalframe.metrics.base import Metric

#: What a number is: a metric's ``value`` (or a statistic of its values: std, quantiles, fold
#: mean), or a ``count`` of units (``n``, ``n_skipped``, ``n_outside_subset``, queries).
Kind = Literal["value", "count"]
#: Shown for a missing value (null or NaN); a report adds the reason in a footnote.
NULL_MARK = "—"
MISSING = NULL_MARK


def format_value(value: float | int | None, *, metric: Metric | None = None, kind: Kind = "value") -> str:
    """The text of one number in a rendered table.

    - missing (``None``, NaN): an en dash;
    - ``kind="count"``, or the value of a count metric (``metric.summary == "sum"``: ``tp``,
      ``fn``, ``num_ret``, …): an integer with thousands separators (``13,072``); a count that
      is not whole (weighted counts, a mean of fold counts) keeps two decimals (``141.60``);
    - anything else: 4 decimals (``0.9145``).

    >>> format_value(13072.0, kind="count"), format_value(0.91448), format_value(None)
    ('13,072', '0.9145', '—')
    """
    counted = kind == "count" or (metric is not None and metric.summary == "sum")
    return format_number(value, "count" if counted else "score")


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


def fold_cell(row: dict, metric: Metric | None = None) -> str:
    """``mean ± std`` of the per-fold values (``–`` without folds)."""
    if row.get("fold_mean") is None:
        return MISSING
    return f"{format_value(row['fold_mean'], metric=metric)} ± {format_value(row['fold_std'], metric=metric)}"


def outside_cell(row: dict) -> str:
    """Units of the slice outside the metric's subset (not failures: the subset leaves them out)."""
    return format_value(row.get("n_outside_subset") or 0, kind="count")


def undefined_cell(row: dict) -> str:
    """Units inside the subset whose value is undefined (e.g. a zero denominator)."""
    return format_value(row["n_skipped"] - (row.get("n_outside_subset") or 0), kind="count")


def parameters_line(plan) -> str:
    """Every parameter of a run in one line: the operating threshold, relevance threshold,
    policies and weight (so a table never hides them in run.json only)."""
    values = {**dict(plan.parameters), "relevance_threshold": plan.relevance_threshold, "empty": plan.empty,
              "missing": plan.missing, "weight": plan.weight or "none"}
    return "parameters: " + ", ".join(f"{name} = {value}" for name, value in values.items())


# --- plain-language numbers (the PR comment of `evalframe gate`) -----------------------------

#: The minus sign of signed numbers in plain-language text (U+2212, not a hyphen).
MINUS = "\u2212"


def _exact(value: float) -> Decimal:
    """The shortest decimal spelling of ``value`` (``0.865``, not the binary 0.86499999…)."""
    return Decimal(repr(float(value)))


def _half_up(number: Decimal, places: int) -> Decimal:
    """``number`` rounded half up at ``places`` decimals.

    Rounding the shortest spelling half up is what a reader expects of a printed number:
    0.8650 → 87%, 0.125 → 0.13 (binary rounding would give 86% and 0.12).
    """
    return number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def percent(value: float | None, places: int = 0) -> str:
    """A rate as a percentage, rounded half up: ``percent(0.865) == "87%"``; :data:`NULL_MARK` for None."""
    if value is None:
        return NULL_MARK
    return f"{_half_up(_exact(value) * 100, places)}%"


def decimal(value: float | None, places: int = 2) -> str:
    """A value with ``places`` decimals, rounded half up: ``decimal(0.6049) == "0.60"``."""
    if value is None:
        return NULL_MARK
    return f"{_half_up(_exact(value), places)}"


def points(delta: float | None, places: int = 1) -> str:
    """A change of a rate in percentage points, signed with a true minus: ``points(-0.06) == "−6.0"``."""
    if delta is None:
        return NULL_MARK
    return _signed(_half_up(_exact(delta) * 100, places))


def signed_decimal(delta: float | None, places: int = 2) -> str:
    """A signed change with ``places`` decimals: ``signed_decimal(-0.05) == "−0.05"``."""
    if delta is None:
        return NULL_MARK
    return _signed(_half_up(_exact(delta), places))


def _signed(rounded: Decimal) -> str:
    """``+1.0``, ``−6.0``; zero has no sign."""
    text = f"{abs(rounded)}"
    if rounded == 0:
        return text
    return ("+" if rounded > 0 else MINUS) + text


# --- report tables (issue 12): one formatter for every number a report prints -------------

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


def ci_text(low: float | None, high: float | None, kind: str = "score", *, percent: bool = False,
            value: float | None = None) -> str:
    """``[low, high]`` (``[0.8941, 0.9003]``); :data:`NULL_MARK` without a bound.

    A count whose ``value`` is whole (a confusion count, an unweighted sum) gets an integer
    interval, rounded outward (``[194.98, 271]`` → ``[194, 271]``): the percentile interval
    interpolates between replicates, but a count takes whole values only.

    >>> ci_text(194.98, 271.0, "count", value=232.0), ci_text(0.81234, 0.9, "score")
    ('[194, 271]', '[0.8123, 0.9000]')
    """
    if low is None or high is None or low != low or high != high:
        return NULL_MARK
    if kind == "count" and value is not None and value == value and float(value).is_integer():
        low, high = float(math.floor(low)), float(math.ceil(high))
    return f"[{format_number(low, kind, percent=percent)}, {format_number(high, kind, percent=percent)}]"


def interval_text(row: dict, metric: Metric | None = None) -> str:
    """A summary row's ``[ci_low, ci_high]``, printed as :func:`format_value` prints its value."""
    kind = "count" if metric is not None and metric.summary == "sum" else "score"
    return ci_text(row.get("ci_low"), row.get("ci_high"), kind, value=row.get("value"))


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
