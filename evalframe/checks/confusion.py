"""Confusion-matrix invariants (contract §9.2) on every slice, against counts made afresh from the queries.

For each threshold of the confusion family and each slice of the query unit, with the slice's
(weighted) rows that have a label and a probability: ``tp + tn + fp + fn = n``,
``tp + fn = n_positive``, ``tn + fp = n_negative``, ``sensitivity = tp / (tp + fn)``,
``specificity = tn / (tn + fp)``. ``n``, ``n_positive`` and ``n_negative`` are counted here
from ``evaluation.queries``, not read from the summary, so a summary that disagrees with its
own input fails.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl

from evalframe.checks.table import FAIL, MUST, NOT_APPLICABLE, PASS, row, same
from evalframe.data.units import QUERY, SYSTEM
from evalframe.metrics.base import WEIGHT
from evalframe.metrics.confusion import ConfusionMetric

NAMES = ("confusion_total", "confusion_positives", "confusion_negatives", "confusion_sensitivity", "confusion_specificity")


def confusion_checks(evaluation) -> list[dict]:
    by_threshold: dict[float, dict[str, str]] = defaultdict(dict)
    for metric in evaluation.plan.metrics:
        if isinstance(metric, ConfusionMetric) and metric.unit == QUERY:
            by_threshold[metric.threshold][metric.key] = metric.name
    if not by_threshold:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="no confusion metric computed") for name in NAMES]
    queries = evaluation.queries
    weight = pl.col(WEIGHT) if WEIGHT in queries.columns else pl.lit(1.0)
    used = pl.col("label").is_not_null() & pl.col("prob").is_not_null()
    summary = evaluation.summary
    rows = []
    for grouping, keys in evaluation.plan.slices.items():
        keys = [SYSTEM, *keys]
        counted = queries.group_by(keys).agg(
            pl.when(used).then(weight).otherwise(0.0).sum().alias("_n"),
            pl.when(used & (pl.col("label") == 1)).then(weight).otherwise(0.0).sum().alias("_positive"),
            pl.when(used & (pl.col("label") != 1)).then(weight).otherwise(0.0).sum().alias("_negative"),
        )
        for threshold, names in by_threshold.items():
            here = summary.filter((pl.col("grouping") == grouping) & pl.col("metric").is_in(list(names.values())))
            if here.height == 0:
                continue
            wide = here.pivot(on="metric", index=keys, values="value").join(counted, on=keys, how="left", nulls_equal=True, maintain_order="left").sort(keys, nulls_last=True)
            for values in wide.iter_rows(named=True):
                scope = {"grouping": grouping, **{k: values[k] for k in keys}}
                rows += _invariants(values, names, threshold, scope)
    return rows


def _invariants(values: dict, names: dict[str, str], threshold: float, scope: dict) -> list[dict]:
    get = {key: values.get(name) for key, name in names.items()}
    at = f" at threshold {threshold!r}"
    found = []

    def add(check: str, observed, expected, message: str) -> None:
        if observed is None and expected is None:
            status = NOT_APPLICABLE
        else:
            status = PASS if same(observed, expected) else FAIL
        found.append(row(check, severity=MUST, status=status, scope=scope, observed=observed, expected=expected,
                         message=message + at))

    tp, tn, fp, fn = (get.get(k) for k in ("tp", "tn", "fp", "fn"))
    if None not in (tp, tn, fp, fn):
        add("confusion_total", tp + tn + fp + fn, values["_n"], "tp + tn + fp + fn = queries with label and prob")
    if None not in (tp, fn):
        add("confusion_positives", tp + fn, values["_positive"], "tp + fn = queries with evidence")
    if None not in (tn, fp):
        add("confusion_negatives", tn + fp, values["_negative"], "tn + fp = queries without evidence")
    if "sensitivity" in names and None not in (tp, fn):
        expected = tp / (tp + fn) if tp + fn else None
        add("confusion_sensitivity", get["sensitivity"], expected, "sensitivity = tp / (tp + fn)")
    if "specificity" in names and None not in (tn, fp):
        expected = tn / (tn + fp) if tn + fp else None
        add("confusion_specificity", get["specificity"], expected, "specificity = tn / (tn + fp)")
    return found
