"""Threshold tuning without leakage (contract §8.2, Appendix A.2): the gate's (τ_neg, τ_pos) and §2.3's τ.

**Where the tuning data comes from.** For each test fold ``f`` the thresholds are chosen on
tuning data only, then applied to fold ``f``:

- nested cross-validation (default): tune on the queries of every other fold;
- when the queries have a ``split`` column: tune on the rows whose split is ``tune``, test on
  the rows of fold ``f`` whose split is not ``tune``.

Each row of the result records what the tuning saw (``tuned_on``: the folds, or the split;
``n_tune``; ``shared_posts``: posts present both in the tuning rows and in the test rows), so
the checks stage can verify that no test fold leaked into its own tuning (A.2).

**The grid.** ``grid`` is a step (``0.01``: τ ∈ {0, 0.01, …, 1}) or ``"distinct"`` (the distinct
probabilities of the data, with 0 and 1). The gate searches every pair τ_neg ≤ τ_pos of the
grid; §2.3's single threshold every grid value.

**Choice rule of the gate** (declared; these defaults): among grid points whose tuning data
reach ``screening_sensitivity >= min_screening_sensitivity`` (0.995) and ``alert_precision >=
min_alert_precision`` (0.90), the lowest review workload ``1 − neg_rate``; ties go to the higher
alert precision, then the lower τ_pos, then the lower τ_neg. When no point qualifies the fold's
row has status ``no_qualifying_point`` and no thresholds.

**Choice rule of the single threshold** (predicted positive when ``prob >= τ``): ``max_f1``,
``max_balanced_accuracy`` (ties to the higher τ: fewer alerts), or ``target_sensitivity``: the
highest τ whose tuning sensitivity reaches the target.

**Speed.** The rows are sorted by probability once; cumulative (weighted) counts per fold give,
for every threshold, the positive and negative weight below it (one ``searchsorted``), so the
counts of every grid point of every fold are array arithmetic: no loop over grid points or rows.
The metrics of every grid point are then computed by the metrics' own ``finalize`` over a table
of counts (one row per fold and grid point): the same definition as the summary's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from evalframe.data.units import SYSTEM
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT
from evalframe.metrics.confusion import BalancedAccuracy, F1Score, PositivePredictiveValue, Sensitivity, Specificity
from evalframe.metrics.gate import COUNTS, GATE_METRICS

Objective = Literal["max_f1", "max_balanced_accuracy", "target_sensitivity"]
OBJECTIVES = ("max_f1", "max_balanced_accuracy", "target_sensitivity")
SPLIT_COLUMN = "split"
TUNE = "tune"
GATE_NAMES = tuple(metric.key for metric in GATE_METRICS)
THRESHOLD_METRICS = (Sensitivity(), Specificity(), PositivePredictiveValue(), F1Score(), BalancedAccuracy())
CHOSEN, NONE_QUALIFIES = "chosen", "no_qualifying_point"


@dataclass(frozen=True)
class GateRule:
    """The gate's choice rule (module docstring)."""

    min_screening_sensitivity: float = 0.995
    min_alert_precision: float = 0.90


@dataclass(frozen=True)
class ThresholdRule:
    """The single operating threshold's objective (module docstring)."""

    objective: Objective = "max_f1"
    target_sensitivity: float = 0.95


def grid_values(grid: float | str, probs: np.ndarray) -> np.ndarray:
    """The thresholds of ``grid``: a step in (0, 1] or ``"distinct"`` (sorted, in [0, 1])."""
    if grid == "distinct":
        return np.unique(np.concatenate([probs[~np.isnan(probs)], [0.0, 1.0]]))
    if isinstance(grid, bool) or not isinstance(grid, int | float) or not 0 < grid <= 1:
        raise ConfigError(f"tuning.grid must be a step in (0, 1] or `distinct`, got {grid!r}")
    steps = round(1 / grid)
    if not math.isclose(steps * grid, 1.0, rel_tol=1e-9):
        raise ConfigError(f"tuning.grid: 1 must be a whole number of steps, got {grid!r}")
    return np.round(np.linspace(0.0, 1.0, steps + 1), 12)


def gate_pairs(thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)`` of every grid point τ_neg = t[i] <= τ_pos = t[j]."""
    return np.triu_indices(len(thresholds))


@dataclass(frozen=True)
class Below:
    """Per group (a fold) and threshold t: rows, positive and negative weight with ``prob < t``,
    and the group's totals. Arrays of shape (groups, thresholds) and (groups,)."""

    rows: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    rows_total: np.ndarray
    positive_total: np.ndarray
    negative_total: np.ndarray

    def minus(self, other: Below) -> Below:
        return Below(*(a - b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[np.ndarray, ...]:
        return (self.rows, self.positive, self.negative, self.rows_total, self.positive_total, self.negative_total)


def counts_below(prob: np.ndarray, label: np.ndarray, weight: np.ndarray, group: np.ndarray, n_groups: int,
                 thresholds: np.ndarray) -> Below:
    """:class:`Below` of every group at every threshold: one sort, cumulative sums, one searchsorted."""
    order = np.argsort(prob, kind="stable")
    sorted_prob = prob[order]
    one_hot = np.zeros((len(prob), n_groups))
    one_hot[np.arange(len(prob)), group[order]] = 1.0
    w = weight[order][:, None] * one_hot
    positive = (label[order] == 1)[:, None]

    def cumulative(values: np.ndarray) -> np.ndarray:
        return np.vstack([np.zeros((1, n_groups)), np.cumsum(values, axis=0)])

    rows_cum, pos_cum, neg_cum = cumulative(one_hot), cumulative(w * positive), cumulative(w * ~positive)
    index = np.searchsorted(sorted_prob, thresholds, side="left")  # rows with prob < t
    return Below(rows_cum[index].T, pos_cum[index].T, neg_cum[index].T,
                 rows_cum[-1], pos_cum[-1], neg_cum[-1])


def gate_counts_table(below: Below, i: np.ndarray, j: np.ndarray) -> pl.DataFrame:
    """The gate's state (``n`` and :data:`~evalframe.metrics.gate.COUNTS`) of every (group, grid point)."""
    n_groups = below.positive.shape[0]
    pos_total, neg_total = below.positive_total[:, None], below.negative_total[:, None]
    cells = {
        "neg_pos": below.positive[:, i], "neg_neg": below.negative[:, i],
        "unc_pos": below.positive[:, j] - below.positive[:, i], "unc_neg": below.negative[:, j] - below.negative[:, i],
        "pos_pos": pos_total - below.positive[:, j], "pos_neg": neg_total - below.negative[:, j],
    }
    return pl.DataFrame({
        "_group": np.repeat(np.arange(n_groups), len(i)),
        "_point": np.tile(np.arange(len(i)), n_groups),
        "n": np.repeat(below.rows_total, len(i)).astype(np.int64),
        **{name: np.clip(cells[name], 0.0, None).ravel() for name in COUNTS},
    })


def confusion_counts_table(below: Below) -> pl.DataFrame:
    """Confusion counts (predicted positive when ``prob >= t``) of every (group, threshold)."""
    n_groups, n_points = below.positive.shape
    return pl.DataFrame({
        "_group": np.repeat(np.arange(n_groups), n_points),
        "_point": np.tile(np.arange(n_points), n_groups),
        "n": np.repeat(below.rows_total, n_points).astype(np.int64),
        "tp": np.clip(below.positive_total[:, None] - below.positive, 0.0, None).ravel(),
        "fn": below.positive.ravel(),
        "fp": np.clip(below.negative_total[:, None] - below.negative, 0.0, None).ravel(),
        "tn": below.negative.ravel(),
    })


def metric_columns(counts: pl.DataFrame, metrics: Mapping[str, Any]) -> pl.DataFrame:
    """``_group``, ``_point`` and one column per metric, from each metric's own ``finalize``."""
    by = ["_group", "_point"]
    frames = [counts.select(by)]
    for name, metric in metrics.items():
        frames.append(metric.finalize(counts.lazy(), by).collect().select(pl.col("value").alias(name)))
    return pl.concat(frames, how="horizontal")


def at_points(table: pl.DataFrame, points: Sequence[int]) -> pl.DataFrame:
    """The rows of ``table`` at each group's chosen point (group ``g`` at ``points[g]``), by group."""
    wanted = pl.DataFrame({"_group": list(range(len(points))), "_point": list(points)},
                          schema={"_group": table.schema["_group"], "_point": table.schema["_point"]})
    return wanted.join(table, on=["_group", "_point"], how="left", maintain_order="left")


def choose_gate(metrics: pl.DataFrame, taus: tuple[np.ndarray, np.ndarray], rule: GateRule, n_groups: int) -> list[int | None]:
    """Per group the chosen grid point (an index), or None when none qualifies (choice rule)."""
    tau_neg, tau_pos = taus
    chosen: list[int | None] = []
    for group in range(n_groups):
        rows = metrics.filter(pl.col("_group") == group)
        sens = rows.get_column("screening_sensitivity").to_numpy()
        precision = rows.get_column("alert_precision").to_numpy()
        workload = 1.0 - rows.get_column("neg_rate").to_numpy()
        qualifies = (np.nan_to_num(sens, nan=-1) >= rule.min_screening_sensitivity) & (
            np.nan_to_num(precision, nan=-1) >= rule.min_alert_precision)
        if not qualifies.any():
            chosen.append(None)
            continue
        candidates = np.flatnonzero(qualifies)
        # np.lexsort: the last key is the primary one.
        best = np.lexsort((tau_neg[candidates], tau_pos[candidates], -precision[candidates], workload[candidates]))[0]
        chosen.append(int(candidates[best]))
    return chosen


def choose_threshold(metrics: pl.DataFrame, thresholds: np.ndarray, rule: ThresholdRule, n_groups: int) -> list[int | None]:
    """Per group the chosen threshold index, or None when none qualifies (target not reached)."""
    chosen: list[int | None] = []
    for group in range(n_groups):
        rows = metrics.filter(pl.col("_group") == group)
        if rule.objective == "target_sensitivity":
            sens = np.nan_to_num(rows.get_column("sensitivity").to_numpy(), nan=-1)
            reach = np.flatnonzero(sens >= rule.target_sensitivity)
            chosen.append(int(reach.max()) if reach.size else None)
            continue
        column = "f1" if rule.objective == "max_f1" else "balanced_accuracy"
        score = rows.get_column(column).to_numpy()
        if np.all(np.isnan(score)):
            chosen.append(None)
            continue
        best = np.nanmax(score)
        chosen.append(int(np.flatnonzero(score == best).max()))  # ties: the higher threshold
    return chosen


# --- the tuning and test data of each fold ---------------------------------------------------


@dataclass(frozen=True)
class Folds:
    """The tuning and test rows of one system: their counts below every threshold and provenance."""

    folds: list[Any]
    tune: Below
    test: Below
    tuned_on: list[str]
    n_tune: list[int]
    n_test: list[int]
    shared_posts: list[int]


def _folds(rows: pl.DataFrame, fold: str, split: str | None, unit: str, thresholds: np.ndarray) -> Folds:
    folds = sorted(rows.get_column(fold).unique().drop_nulls().to_list())
    in_tune_split = (rows.get_column(split) == TUNE).fill_null(False).to_numpy() if split else None
    test_rows = rows.filter(~pl.Series(in_tune_split)) if split else rows
    test_folds = sorted(test_rows.get_column(fold).unique().drop_nulls().to_list()) if split else folds
    position = {value: i for i, value in enumerate(test_folds)}

    def arrays(frame: pl.DataFrame):
        return (frame.get_column("prob").to_numpy().astype(float), frame.get_column("label").to_numpy(),
                frame.get_column(WEIGHT).to_numpy().astype(float))

    scored = pl.col("prob").is_not_null() & pl.col("label").is_not_null()
    test_scored = test_rows.filter(scored & pl.col(fold).is_in(test_folds))
    group = test_scored.get_column(fold).replace_strict(position, return_dtype=pl.Int64).to_numpy()
    test = counts_below(*arrays(test_scored), group, len(test_folds), thresholds)
    units_of = {value: set(test_rows.filter(pl.col(fold) == value).get_column(unit).to_list()) for value in test_folds}
    if split:
        tune_rows = rows.filter(pl.Series(in_tune_split)).filter(scored)
        one = counts_below(*arrays(tune_rows), np.zeros(tune_rows.height, dtype=np.int64), 1, thresholds)
        # The same tuning data for every test fold: the one group repeated (leading axis = groups).
        tune = Below(*(np.repeat(a, len(test_folds), axis=0) for a in one.astuple()))
        tune_units = set(tune_rows.get_column(unit).to_list())
        tuned_on = [f"{split} = {TUNE}"] * len(test_folds)
        n_tune = [tune_rows.height] * len(test_folds)
        shared = [len(tune_units & units_of[value]) for value in test_folds]
    else:
        # Nested CV: the tuning data of fold f is every fold but f (totals minus fold f).
        whole = Below(*(np.broadcast_to(a.sum(axis=0), a.shape).copy() for a in test.astuple()))
        tune = whole.minus(test)
        tuned_on = [", ".join(str(other) for other in test_folds if other != value) for value in test_folds]
        n_tune = [int(x) for x in tune.rows_total]
        every_unit = {value: units_of[value] for value in test_folds}
        shared = [len(units_of[value] & set().union(*(every_unit[o] for o in test_folds if o != value)))
                  for value in test_folds]
    return Folds(test_folds, tune, test, tuned_on, n_tune, [int(x) for x in test.rows_total], shared)


def where_chosen(values, chosen: Sequence[bool]) -> list[float | None]:
    """``values`` (array or Series, null where undefined) as floats where a point was chosen, else null."""
    return [None if value is None or not keep else float(value) for value, keep in zip(list(values), chosen, strict=True)]


#: Value columns of the tuning tables (Float64 even when every value is null).
FLOAT_COLUMNS = {name: pl.Float64 for name in (
    "tau_neg", "tau_pos", "threshold", "tune_screening_sensitivity", "tune_alert_precision", "tune_workload",
    *GATE_NAMES, "workload", *(metric.name for metric in THRESHOLD_METRICS))}


def _summary_rows(table: pl.DataFrame, numeric: Sequence[str]) -> pl.DataFrame:
    """Per system, ``mean`` and ``std`` rows over the folds with a chosen point."""
    chosen = table.filter(pl.col("status") == CHOSEN)
    stats = []
    for kind, agg in (("mean", lambda c: pl.col(c).mean()), ("std", lambda c: pl.col(c).std(ddof=1))):
        stats.append(chosen.group_by(SYSTEM, maintain_order=True).agg(
            pl.lit(kind).alias("row"), pl.len().cast(pl.Int64).alias("n_folds"), *(agg(c).alias(c) for c in numeric)))
    return pl.concat(stats, how="diagonal_relaxed")


def _check_columns(queries: pl.DataFrame, fold: str) -> None:
    missing = [c for c in ("label", "prob", fold) if c not in queries.columns]
    if missing:
        raise ConfigError(f"tuning needs the columns {missing} in the queries table (it has {queries.columns})")
    if queries.height == 0:
        raise ConfigError("tuning: the queries table is empty")


def tune_gate(queries: pl.DataFrame, *, grid: float | str = 0.01, rule: GateRule = GateRule(), fold: str = "fold",
              split: str | None = SPLIT_COLUMN, unit: str = "post_id") -> pl.DataFrame:
    """The ``tuning`` table: per system and test fold the chosen (τ_neg, τ_pos), what the tuning saw,
    the tuning values at that point and the gate metrics on the test fold; then mean and std rows."""
    _check_columns(queries, fold)
    split = split if split and split in queries.columns else None
    unit = unit if unit in queries.columns else "query_id"
    queries = queries if WEIGHT in queries.columns else queries.with_columns(pl.lit(1.0).alias(WEIGHT))
    thresholds = grid_values(grid, queries.get_column("prob").drop_nulls().to_numpy().astype(float))
    i, j = gate_pairs(thresholds)
    tau_neg, tau_pos = thresholds[i], thresholds[j]
    gate = {metric.key: metric(tau_neg=0.0, tau_pos=0.0) for metric in GATE_METRICS}  # finalize reads counts only
    parts = []
    for system in queries.get_column(SYSTEM).unique(maintain_order=True).to_list():
        rows = queries.filter(pl.col(SYSTEM) == system)
        found = _folds(rows, fold, split, unit, thresholds)
        tuned = metric_columns(gate_counts_table(found.tune, i, j), gate)
        choice = choose_gate(tuned, (tau_neg, tau_pos), rule, len(found.folds))
        points = np.array([c if c is not None else 0 for c in choice], dtype=np.int64)
        test_counts = gate_counts_table(found.test, i[points], j[points]).filter(pl.col("_group") == pl.col("_point"))
        tested = metric_columns(test_counts, gate).sort("_group")
        tuned_at = at_points(tuned, points)
        ok = [c is not None for c in choice]
        parts.append(pl.DataFrame({
            SYSTEM: [system] * len(found.folds),
            "row": ["fold"] * len(found.folds),
            fold: found.folds,
            "status": [CHOSEN if keep else NONE_QUALIFIES for keep in ok],
            "tau_neg": where_chosen(tau_neg[points], ok),
            "tau_pos": where_chosen(tau_pos[points], ok),
            "tuned_on": found.tuned_on,
            "n_tune": found.n_tune,
            "n_test": found.n_test,
            "shared_posts": found.shared_posts,
            "tune_screening_sensitivity": where_chosen(tuned_at.get_column("screening_sensitivity"), ok),
            "tune_alert_precision": where_chosen(tuned_at.get_column("alert_precision"), ok),
            "tune_workload": where_chosen(1.0 - tuned_at.get_column("neg_rate"), ok),
            **{name: where_chosen(tested.get_column(name), ok) for name in GATE_NAMES},
            "workload": where_chosen(1.0 - tested.get_column("neg_rate"), ok),
        }, schema_overrides=FLOAT_COLUMNS))
    table = pl.concat(parts, how="vertical_relaxed")
    numeric = ["tau_neg", "tau_pos", *GATE_NAMES, "workload"]
    return pl.concat([table.with_columns(pl.lit(None, pl.Int64).alias("n_folds")), _summary_rows(table, numeric)],
                     how="diagonal_relaxed")


def tune_threshold(queries: pl.DataFrame, *, grid: float | str = 0.01, rule: ThresholdRule = ThresholdRule(),
                   fold: str = "fold", split: str | None = SPLIT_COLUMN, unit: str = "post_id") -> pl.DataFrame:
    """The ``threshold_tuning`` table: §2.3's operating threshold per test fold, chosen on tuning data."""
    _check_columns(queries, fold)
    if rule.objective not in OBJECTIVES:
        raise ConfigError(f"tuning.threshold.objective must be one of {list(OBJECTIVES)}, got {rule.objective!r}")
    split = split if split and split in queries.columns else None
    unit = unit if unit in queries.columns else "query_id"
    queries = queries if WEIGHT in queries.columns else queries.with_columns(pl.lit(1.0).alias(WEIGHT))
    thresholds = grid_values(grid, queries.get_column("prob").drop_nulls().to_numpy().astype(float))
    metrics = {m.name: m for m in THRESHOLD_METRICS}
    names = list(metrics)
    parts = []
    for system in queries.get_column(SYSTEM).unique(maintain_order=True).to_list():
        found = _folds(queries.filter(pl.col(SYSTEM) == system), fold, split, unit, thresholds)
        tuned = metric_columns(confusion_counts_table(found.tune), metrics)
        choice = choose_threshold(tuned, thresholds, rule, len(found.folds))
        points = [c if c is not None else 0 for c in choice]
        tested = at_points(metric_columns(confusion_counts_table(found.test), metrics), points)
        ok = [c is not None for c in choice]
        parts.append(pl.DataFrame({
            SYSTEM: [system] * len(found.folds),
            "row": ["fold"] * len(found.folds),
            fold: found.folds,
            "status": [CHOSEN if keep else NONE_QUALIFIES for keep in ok],
            "objective": [rule.objective] * len(found.folds),
            "threshold": where_chosen(thresholds[points], ok),
            "tuned_on": found.tuned_on,
            "n_tune": found.n_tune,
            "n_test": found.n_test,
            "shared_posts": found.shared_posts,
            **{name: where_chosen(tested.get_column(name), ok) for name in names},
        }, schema_overrides=FLOAT_COLUMNS))
    table = pl.concat(parts, how="vertical_relaxed")
    return pl.concat([table.with_columns(pl.lit(None, pl.Int64).alias("n_folds")), _summary_rows(table, ["threshold", *names])],
                     how="diagonal_relaxed")


def tune_thresholds(evaluation, *, grid: float | str = 0.01, min_screening_sensitivity: float = 0.995,
                    min_alert_precision: float = 0.90, threshold: Mapping[str, Any] | None = None,
                    fold: str | None = None, split: str | None = SPLIT_COLUMN):
    """``evaluation`` with ``tables["tuning"]`` (the gate's τs) and, when ``threshold`` is given
    (``{"objective": "max_f1"}``), ``tables["threshold_tuning"]`` (§2.3's τ); see the module docstring.

    ``fold`` defaults to the evaluation's ``across_folds`` key, else ``fold``.
    """
    fold = fold or evaluation.plan.across_folds or "fold"
    for name, value in (("min_screening_sensitivity", min_screening_sensitivity), ("min_alert_precision", min_alert_precision)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(f"tuning.{name} must be a number in [0, 1], got {value!r}")
    queries = evaluation.queries
    tables = {"tuning": tune_gate(queries, grid=grid, rule=GateRule(min_screening_sensitivity, min_alert_precision),
                                  fold=fold, split=split)}
    if threshold is not None:
        unknown = sorted(set(threshold) - {"objective", "target_sensitivity"})
        if unknown:
            raise ConfigError(f"tuning.threshold: unknown keys {unknown} (known: objective, target_sensitivity)")
        rule = ThresholdRule(**threshold)
        tables["threshold_tuning"] = tune_threshold(queries, grid=grid, rule=rule, fold=fold, split=split)
    return evaluation.with_tables(**tables)
