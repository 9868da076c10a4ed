"""``curves.parquet``: the points every plot is drawn from, computed once from a result.

Saved beside the summary so that ``evalframe report`` redraws the plots without the input.
One long table, columns ``system, curve, group, x, y, lower, upper, count, weight``:

- ``roc``: per system, the TPR (``y``) at each FPR (``x``) of the fixed grid
  (:data:`FPR_GRID_POINTS` points), with the pointwise bootstrap band (``lower``, ``upper``)
  when the run has a bootstrap: the replicate curves are drawn under the engine's own replicate
  weights (the same resampled unit, user weights, seed, strata and replicates as the summary's
  CIs, :func:`evalframe.engine.uncertainty.replicate_unit_weights`) and the band at each grid
  point is the engine's interval rule (:func:`~evalframe.engine.bootstrap.intervals`, percentile
  at the run's confidence), widened where needed to contain the estimate (a percentile band may
  miss it at a step). Without a bootstrap there is no band (``lower``, ``upper`` null; the plot
  says so with :data:`NO_BAND`) and nothing is resampled.
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

import numpy as np
import polars as pl

from evalframe.engine.bootstrap import intervals
from evalframe.metrics.base import WEIGHT
from evalframe.metrics.curves import calibration_bins, is_scored

#: Columns of the curves table, in order.
CURVE_SCHEMA = {
    "system": pl.String, "curve": pl.String, "group": pl.String, "x": pl.Float64, "y": pl.Float64,
    "lower": pl.Float64, "upper": pl.Float64, "count": pl.Int64, "weight": pl.Float64,
}


#: The fixed false-positive-rate grid of ROC curves: 0, 0.001, …, 1.
FPR_GRID_POINTS = 1001
#: Why a ROC curve has no band (the plot prints it).
NO_BAND = "no band: the run has no bootstrap"


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


def tpr_on_grid(prob: np.ndarray, label: np.ndarray, weights: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """ROC curves of one set of rows under each column of ``weights`` (n × R), as TPR at each grid FPR: (R × G).

    The curves are the engine's: the ROC family's replicate state under the weight columns
    (:meth:`~evalframe.metrics.roc.AUROC.replicate_state`, the dense state of its ROC points),
    read as the operating points of every distinct threshold from the point (0, 0) (tied
    probabilities are one threshold): ``TPR_r(t) = TP_r(t) / W_pos,r``, ``FPR_r(t) = FP_r(t) / W_neg,r``
    (:meth:`~evalframe.metrics.roc.RocCurves.operating_points`). The TPR at each grid FPR is read
    by linear interpolation along the curve (at a vertical step, its top), as
    ``np.interp(grid, *roc_curve(sample_weight=w)[:2])``. A column without positive or without
    negative weight gives NaN. Vectorised: replicates are taken in blocks of 128 columns.
    """
    from evalframe.metrics.roc import AUROC

    frame = pl.DataFrame({"label": np.asarray(label), "prob": np.asarray(prob, dtype=np.float64)})
    replicates = weights.shape[1]
    curves = np.empty((replicates, grid.size))
    for start in range(0, replicates, _REPLICATE_BLOCK):
        fpr, tpr = AUROC().replicate_state(frame, weights[:, start: start + _REPLICATE_BLOCK]).operating_points()
        curves[start: start + fpr.shape[0]] = _interpolate_columns(fpr.T, tpr.T, grid)
    return curves


#: Replicate columns handled at once by :func:`tpr_on_grid` (bounds temporary memory).
_REPLICATE_BLOCK = 128


def _interpolate_columns(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``y`` at ``grid`` for every column of the non-decreasing ``x`` (P, C), linearly; (C, G).

    One search over all columns at once: column ``c`` is shifted by ``2c`` (x lies in [0, 1]),
    so the flattened columns form one sorted array. NaN columns give NaN.
    """
    points, columns = x.shape
    valid = ~np.isnan(x[-1]) & ~np.isnan(y[-1])
    x = np.where(valid, x, 0.0)
    y = np.where(valid, y, np.nan)
    shift = 2.0 * np.arange(columns)
    flat_x = (x + shift).T.ravel()
    flat_y = y.T.ravel()
    queries = (grid[None, :] + shift[:, None]).ravel()
    right = np.searchsorted(flat_x, queries, side="right")
    column_end = (np.repeat(np.arange(columns), grid.size) + 1) * points - 1
    at = np.maximum(right - 1, np.repeat(np.arange(columns), grid.size) * points)
    after = np.minimum(at + 1, column_end)
    x0, x1, y0, y1 = flat_x[at], flat_x[after], flat_y[at], flat_y[after]
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(x1 > x0, (queries - x0) / (x1 - x0), 0.0)
    return (y0 + step * (y1 - y0)).reshape(columns, grid.size)


def roc_band(rows: pl.DataFrame, weights: np.ndarray | None, confidence: float = 0.95) -> tuple:
    """``(fpr grid, tpr, lower, upper)`` of one system's rows; ``weights`` (rows × R) are the
    rows' replicate weights (user weight × the engine's unit weight), None without a bootstrap:
    then ``lower`` and ``upper`` are None (no band, nothing resampled)."""
    prob = rows.get_column("prob").cast(pl.Float64).to_numpy()
    label = rows.get_column("label").to_numpy()
    weight = rows.get_column(WEIGHT).to_numpy().astype(np.float64)
    grid = np.linspace(0.0, 1.0, FPR_GRID_POINTS)
    estimate = tpr_on_grid(prob, label, weight[:, None], grid)[0]
    if weights is None:
        return grid, estimate, None, None
    curves = tpr_on_grid(prob, label, weights, grid)
    band = intervals(np.ascontiguousarray(curves.T), estimate, confidence)
    return grid, estimate, np.fmin(band.low, estimate), np.fmax(band.high, estimate)


def _replicate_weights(evaluation, scored: pl.DataFrame) -> np.ndarray | None:
    """Each scored row's weight in every replicate of the engine's bootstrap (None: no bootstrap)."""
    from evalframe.engine.uncertainty import replicate_unit_weights

    settings = evaluation.plan.bootstrap
    if settings is None or scored.height == 0:
        return None
    unit_index, unit_weights = replicate_unit_weights(evaluation.queries, settings, scored, "query", evaluation.units)
    return unit_weights[unit_index] * scored.get_column(WEIGHT).cast(pl.Float64).to_numpy()[:, None]


def curve_table(evaluation) -> pl.DataFrame:
    """The curves table of ``evaluation`` (module docstring); empty when it has no label/prob."""
    scored = _scored_rows(evaluation)
    parts = [pl.DataFrame(schema=CURVE_SCHEMA)]
    systems = evaluation.queries.get_column("system").unique(maintain_order=True).to_list()
    weights = _replicate_weights(evaluation, scored)
    confidence = evaluation.plan.bootstrap.confidence if evaluation.plan.bootstrap is not None else 0.95
    for system in systems:
        mask = (scored.get_column("system") == system).to_numpy()
        rows = scored.filter(mask)
        if rows.height == 0:
            continue
        grid, tpr, lower, upper = roc_band(rows, weights[mask] if weights is not None else None, confidence)
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
