"""``curves.parquet``: the points every plot is drawn from, computed once from a result.

Saved beside the summary so that ``evalframe report`` redraws the plots without the input.
One long table, columns ``system, curve, group, x, y, lower, upper, count, weight``:

- ``roc``: per system, the TPR (``y``) at each FPR (``x``) of the fixed grid
  (:data:`~evalframe.metrics.curves.FPR_GRID_POINTS` points), with the pointwise 95% bootstrap
  band (``lower``, ``upper``: the 2.5th and 97.5th percentiles of the replicate curves,
  widened where needed to contain the estimate, as a percentile band may miss it at a step).
  The replicates are Poisson counts of the bootstrap unit (:func:`band_settings`), the same
  ones the engine's bootstrap draws.
- ``pr``: precision (``y``) against recall (``x``) at every distinct threshold;
  ``pr_baseline``: one row whose ``y`` is the positive rate (a random ranking's precision).
- ``reliability``: per bin of the ECE (the same bins: :func:`~evalframe.metrics.curves.calibration_bins`
  with the ECE metric's ``bins``), mean predicted probability (``x``), observed frequency
  (``y``), rows (``count``) and weight (``weight``); ``group`` is the bin index.
- ``selected_k``: how many queries (``count``) selected each K (``x``), overall (``group`` =
  ``all``) and per ``state``.

Rows used are those with both ``label`` and ``prob`` in the classification metrics' subset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalframe.metrics.base import WEIGHT
from evalframe.metrics.curves import FPR_GRID_POINTS, calibration_bins, is_scored, replicate_roc

#: Columns of the curves table, in order.
CURVE_SCHEMA = {
    "system": pl.String, "curve": pl.String, "group": pl.String, "x": pl.Float64, "y": pl.Float64,
    "lower": pl.Float64, "upper": pl.Float64, "count": pl.Int64, "weight": pl.Float64,
}


@dataclass(frozen=True)
class BandSettings:
    """Replicates of the ROC band: how many, the seed, the bootstrap unit's key columns."""

    resamples: int = 200
    seed: int = 0
    unit_keys: tuple[str, ...] = ("query_id",)
    level: float = 0.95


def band_settings(evaluation) -> BandSettings:
    """The engine's bootstrap settings when the plan has them (:class:`~evalframe.Bootstrap`:
    its resamples, seed, resampled unit's key columns and confidence), else 200 replicates of
    the query, seed 0 (enough for a picture; a pipeline's ``bootstrap:`` sets the engine's and
    the band's)."""
    query_keys = tuple(evaluation.units.key_columns("query"))
    bootstrap = evaluation.plan.bootstrap
    if bootstrap is None:
        return BandSettings(unit_keys=query_keys)
    return BandSettings(
        resamples=bootstrap.resamples,
        seed=bootstrap.seed,
        unit_keys=tuple(bootstrap.unit_columns or query_keys),
        level=bootstrap.confidence,
    )


def _scored_rows(evaluation) -> pl.DataFrame:
    """The queries of the classification metrics' subset with both label and prob."""
    queries = evaluation.queries
    if not {"label", "prob"} <= set(queries.columns):
        return queries.clear()
    condition = pl.lit(True)
    for group in evaluation.plan.groups:
        if any(m.name in ("auroc", "auprc") for m in group.metrics):
            condition = group.subset.condition()
            break
    if WEIGHT not in queries.columns:
        queries = queries.with_columns(pl.lit(1.0).alias(WEIGHT))
    return queries.filter(condition & is_scored())


def _ece_bins(evaluation) -> int:
    return next((m.bins for m in evaluation.metrics if type(m).__name__ == "ExpectedCalibrationError"), 10)


def _rows(system: str, curve: str, **columns) -> pl.DataFrame:
    height = max(len(v) for v in columns.values() if isinstance(v, (list, np.ndarray)))
    data = {name: (list(value) if isinstance(value, (list, np.ndarray)) else [value] * height) for name, value in columns.items()}
    data = {"system": [system] * height, "curve": [curve] * height, **data}
    return pl.DataFrame(data).with_columns([pl.lit(None, dtype).alias(c) for c, dtype in CURVE_SCHEMA.items() if c not in data]).select(
        [pl.col(c).cast(t) for c, t in CURVE_SCHEMA.items()])


def replicate_counts(scored: pl.DataFrame, settings: BandSettings) -> np.ndarray:
    """Poisson counts (rows × replicates) of every row's bootstrap unit, drawn once per distinct
    unit (systems share units, so they share counts: the comparison is paired)."""
    from evalframe.engine.replicates import poisson_counts

    keys = scored.select(list(settings.unit_keys))
    units = keys.unique(maintain_order=True).with_row_index("__unit")
    index = keys.join(units, on=list(settings.unit_keys), how="left", nulls_equal=True, maintain_order="left")
    counts = poisson_counts(units.drop("__unit"), settings.resamples, settings.seed)
    return counts[index.get_column("__unit").to_numpy()]


def roc_band(rows: pl.DataFrame, counts: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(fpr grid, tpr, lower, upper)`` of one system's rows with their replicate ``counts``:
    the estimate and the pointwise percentile band at ``level``."""
    prob = rows.get_column("prob").to_numpy()
    label = rows.get_column("label").to_numpy()
    weight = rows.get_column(WEIGHT).to_numpy().astype(np.float64)
    grid = np.linspace(0.0, 1.0, FPR_GRID_POINTS)
    estimate, _ = replicate_roc(prob, label, weight, grid)
    curves, _ = replicate_roc(prob, label, weight[:, None] * counts, grid)
    tail = (1 - level) / 2 * 100
    with np.errstate(all="ignore"):
        if np.isnan(curves).all():
            lower = upper = np.full(grid.size, np.nan)
        else:
            lower, upper = np.nanpercentile(curves, [tail, 100 - tail], axis=0)
    return grid, estimate[0], np.fmin(lower, estimate[0]), np.fmax(upper, estimate[0])


def curve_table(evaluation) -> pl.DataFrame:
    """The curves table of ``evaluation`` (module docstring); empty when it has no label/prob."""
    scored = _scored_rows(evaluation)
    settings = band_settings(evaluation)
    parts = [pl.DataFrame(schema=CURVE_SCHEMA)]
    systems = evaluation.queries.get_column("system").unique(maintain_order=True).to_list()
    counts = replicate_counts(scored, settings) if scored.height else None
    for system in systems:
        mask = (scored.get_column("system") == system).to_numpy()
        rows = scored.filter(mask)
        if rows.height == 0:
            continue
        grid, tpr, lower, upper = roc_band(rows, counts[mask], settings.level)
        parts.append(_rows(system, "roc", x=grid, y=tpr, lower=lower, upper=upper))
        # PR points: cumulative weighted positives / negatives at each distinct threshold.
        points = (
            rows.group_by("prob").agg(
                positive=pl.when(pl.col("label") == 1).then(pl.col(WEIGHT)).otherwise(0.0).sum(),
                negative=pl.when(pl.col("label") == 1).then(0.0).otherwise(pl.col(WEIGHT)).sum(),
            ).sort("prob", descending=True)
            .with_columns(tp=pl.col("positive").cum_sum(), fp=pl.col("negative").cum_sum())
        )
        total_positive = float(points.get_column("positive").sum())
        total = total_positive + float(points.get_column("negative").sum())
        if total_positive > 0:
            pr = points.select(recall=pl.col("tp") / total_positive, precision=pl.col("tp") / (pl.col("tp") + pl.col("fp")))
            parts.append(_rows(system, "pr", x=pr.get_column("recall").to_numpy(), y=pr.get_column("precision").to_numpy()))
        if total > 0:
            parts.append(_rows(system, "pr_baseline", x=[0.0], y=[total_positive / total]))
    if scored.height:
        bins = (
            calibration_bins(scored.lazy(), ["system"], _ece_bins(evaluation)).collect()
            .filter(pl.col("bin").is_not_null() & (pl.col("weight") > 0))
            .sort("system", "bin")
        )
        for system in systems:
            own = bins.filter(pl.col("system") == system)
            if own.height:
                parts.append(_rows(
                    system, "reliability",
                    group=[str(b) for b in own.get_column("bin").to_list()],
                    x=(own["weighted_prob"] / own["weight"]).to_numpy(),
                    y=(own["weighted_label"] / own["weight"]).to_numpy(),
                    count=own.get_column("n").to_numpy(), weight=own.get_column("weight").to_numpy(),
                ))
    queries = evaluation.queries
    if "selected_k" in queries.columns:
        by_state = ["state"] if "state" in queries.columns else []
        for system in systems:
            own = queries.filter((pl.col("system") == system) & pl.col("selected_k").is_not_null())
            if own.height == 0:
                continue
            overall = own.group_by("selected_k").len().sort("selected_k")
            parts.append(_rows(system, "selected_k", group="all", x=overall["selected_k"].cast(pl.Float64).to_numpy(),
                               count=overall["len"].to_numpy()))
            if by_state:
                states = own.filter(pl.col("state").is_not_null()).group_by("state", "selected_k").len().sort("state", "selected_k")
                if states.height:
                    parts.append(_rows(system, "selected_k", group=states["state"].cast(pl.String).to_numpy(),
                                       x=states["selected_k"].cast(pl.Float64).to_numpy(), count=states["len"].to_numpy()))
    return pl.concat(parts, how="vertical")
