"""The tag breakdown of a gate check.

For every gated metric of the overall slice with a baseline, the slices of
the breakdown grouping (default: the one over ``tags``) are compared with the baseline's; the
largest drops are listed, and a slice whose drop exceeds the gate's ``regression_max`` while
the overall gate's regression rule passes is reported as *masked* (the decision record's
warning: a single global threshold can mask per-task regressions). Masking is reported, it
does not change the exit status.
"""

from __future__ import annotations

import polars as pl

from evalframe.errors import ConfigError, Problem
from evalframe.gates.criteria import DEFAULT_BREAKDOWN_COLUMN, Criteria
from evalframe.gates.outcome import GateResult, RunOutputs, SliceChange


def breakdown_grouping(criteria: Criteria, candidate: RunOutputs) -> str | None:
    """The grouping the comment breaks down: the criteria's, else the one over ``tags``."""
    summary = candidate.summary
    if criteria.breakdown_grouping is not None:
        if criteria.breakdown_grouping not in summary.get_column("grouping"):
            groupings = summary.get_column("grouping").unique(maintain_order=True).to_list()
            raise ConfigError.of([Problem("breakdown.grouping", None, criteria.breakdown_grouping,
                                          f"the results in {candidate.path} have no such grouping (they have: {groupings})")],
                                 source=criteria.source)
        return criteria.breakdown_grouping
    if DEFAULT_BREAKDOWN_COLUMN not in summary.columns:
        return None
    found = summary.filter(pl.col(DEFAULT_BREAKDOWN_COLUMN).is_not_null()).get_column("grouping").unique(maintain_order=True)
    return found[0] if found.len() else None


def _slice_keys(summary: pl.DataFrame, grouping: str) -> list[str]:
    """The key columns of ``grouping``: the columns between ``system`` and ``metric`` it fills."""
    columns = summary.columns
    candidates = columns[columns.index("system") + 1: columns.index("metric")]
    rows = summary.filter(pl.col("grouping") == grouping)
    return [c for c in candidates if rows.get_column(c).null_count() < rows.height]


def slice_changes(result: GateResult, grouping: str, candidate: RunOutputs, baseline: RunOutputs) -> list[SliceChange]:
    """Every slice of ``grouping`` with a value on both sides, largest drop first."""
    metric = result.gate.metric.name
    keys = _slice_keys(candidate.summary, grouping)
    if not keys:
        return []

    def side(outputs: RunOutputs, system: str) -> pl.DataFrame:
        rows = outputs.summary.filter((pl.col("grouping") == grouping) & (pl.col("metric") == metric)
                                      & (pl.col("system") == system) & pl.col("value").is_not_null())
        return rows.select(*(pl.col(k).cast(pl.String) for k in keys if k in rows.columns), "value", "n")

    cand, base = side(candidate, result.system), side(baseline, result.baseline_system)
    if any(k not in base.columns for k in keys):
        return []
    joined = cand.join(base, on=keys, how="inner", nulls_equal=True, suffix="_baseline")
    sign = -1.0 if result.gate.higher_is_better else 1.0
    joined = joined.with_columns(drop=sign * (pl.col("value") - pl.col("value_baseline"))).sort(
        ["drop", *keys], descending=[True, *([False] * len(keys))], nulls_last=True)
    return [
        SliceChange(metric=metric, label=", ".join(str(row[k]) if row[k] is not None else "(none)" for k in keys),
                    keys={k: row[k] for k in keys}, value=row["value"], baseline=row["value_baseline"], n=row["n"],
                    baseline_n=row["n_baseline"], drop=row["drop"], gate=result.gate)
        for row in joined.iter_rows(named=True)
    ]
