"""Slice aggregation (DESIGN §3): per-unit values → one tidy summary, through mergeable partials.

A grouping set is a name and the slice keys it groups by (``overall`` → none, ``fold`` →
``[fold]``); ``system`` is always a key, so numbers never mix systems. For every (grouping set,
key values, metric) the summary gives ``n`` (units with a value), ``n_skipped`` (units of the
slice without a value), ``n_outside_subset`` (the part of ``n_skipped`` outside the metric's
subset: the group's ``where:`` condition or the metric's own, e.g. no relevant item; the rest of
``n_skipped`` is undefined inside the subset, e.g. a zero denominator), ``value``, ``std``,
``median``, ``p25``, ``p75`` and ``note``.

**Partials that merge.** A per-unit metric's slice is summarised from its *moments*:

- ``n`` units with a value, ``w = Σ weight``, ``wx = Σ weight·value``, ``flagged`` (units its
  note counts) — these add up;
- ``m2 = Σ weight·(value − mean)²`` with ``mean = wx / w``; parts merge by the parallel-axis rule
  (Chan et al.): ``m2 = Σ_i m2_i + Σ_i w_i (mean_i − mean)²``.

Then ``value = wx / w`` (``wx`` for count metrics, whose ``summary`` is ``"sum"``) and
``std = √(m2 / (w − 1))``: frequency weights, the sample standard deviation (ddof = 1) of the
sample with each unit repeated ``weight`` times; null when ``w ≤ 1``. A set metric merges its
own state (:func:`evalframe.metrics.base.merge_states`).

**Quantiles** come from the per-unit values themselves (concatenated when parts merge):

- when every weight of the slice is a whole number (always, without weights): the quantile of
  the sample with each unit repeated ``weight`` times, interpolating linearly (numpy's default):
  ``h = q·(W − 1)``, ``x(⌊h⌋) + (h − ⌊h⌋)·(x(⌈h⌉) − x(⌊h⌋))`` where ``x(j)`` is the value at
  0-based position ``j`` of the repeated, sorted sample;
- otherwise the weighted inverted CDF: the smallest value whose cumulative weight reaches
  ``q·W`` (numpy's ``quantile(method="inverted_cdf", weights=…)``).

``min`` and ``max`` are the smallest and largest value of a unit with a positive weight (the
extremes of the repeated sample); like the quantiles they are recomputed from the concatenated
per-unit values when parts merge, so they merge exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from evalframe._sorting import sort_naturally
from evalframe.metrics.base import WEIGHT, Metric

SUMMARY_STATS = ["n", "n_skipped", "n_outside_subset", "value", "std", "median", "p25", "p75", "p90", "min", "max"]
QUANTILES = {"median": 0.5, "p25": 0.25, "p75": 0.75, "p90": 0.9}
#: Order statistics of a slice's per-unit values besides the quantiles.
EXTREMES = ("min", "max")
#: Every statistic of the values' distribution (null for set metrics, which have one value).
DISTRIBUTION_STATS = (*QUANTILES, *EXTREMES)
NO_UNIT_IN_SUBSET = "no query in the subset"
#: The summary's own helper columns (a task's position, a metric's sum rule and note template):
#: names no slice key takes.
TASK, SUMMED, TEMPLATE = "__summary_task", "__summary_summed", "__summary_note_template"
#: The interval columns of every summary, before ``note`` (null without a bootstrap;
#: :mod:`evalframe.engine.uncertainty` adds them).
CI_COLUMNS = ("se", "ci_low", "ci_high")
#: The summary's last columns: each metric's shared parameters and its target category
#: (:func:`evalframe.engine.evaluation.finalize`).
LABEL_COLUMNS = ("params", "target")
#: Columns the summary and its partials make beside the slice keys: a slice key of one of these
#: names would meet them in a join or be overwritten (:func:`evalframe.engine.plan.slice_keys_problem`
#: refuses it).
ENGINE_COLUMNS = ("grouping", "metric", "unit", "subset", "note", *SUMMARY_STATS, *CI_COLUMNS, *LABEL_COLUMNS, "n_units",
                  "n_rows", "n_outside_own", "w", "wx", "m2", "flagged")


def _moments_of(value: pl.Expr, weight: pl.Expr | None, flag: pl.Expr | None, outside: pl.Expr | None = None) -> pl.Expr:
    present = value.is_not_null()
    w = (weight if weight is not None else pl.lit(1.0)).filter(present)
    x = value.filter(present)
    # Without weights Σ w is the count, exactly (one pass fewer); the products keep w (their sums
    # take Polars' path for them, whose last bits the summaries have always had).
    total = w.sum() if weight is not None else present.sum().cast(pl.Float64)
    weighted_sum = (w * x).sum()
    mean = weighted_sum / total
    return pl.struct(
        n=present.sum().cast(pl.Int64),
        n_rows=value.len().cast(pl.Int64),
        n_outside_own=(outside.fill_null(False).sum() if outside is not None else pl.lit(0)).cast(pl.Int64),
        w=total.cast(pl.Float64),
        wx=weighted_sum.cast(pl.Float64),
        m2=pl.when(total > 0).then((w * (x - mean).pow(2)).sum()).otherwise(0.0).cast(pl.Float64),
        flagged=(flag.fill_null(False).sum() if flag is not None else pl.lit(0)).cast(pl.Int64),
    )


def moments(wide: pl.DataFrame | pl.LazyFrame, metrics: Sequence[Metric], by: Sequence[str], *, weighted: bool,
            aggregations: Sequence[pl.Expr] | None = None):
    """Rows ``by, metric, n, n_rows, n_outside_own, w, wx, m2, flagged`` of per-unit values held
    one column per metric: ``n_rows`` counts the units of the metric group's subset,
    ``n_outside_own`` those of them outside the metric's own subset (its ``outside_reason``).
    ``aggregations`` are :func:`moment_aggregations` of these values, when built already (they
    do not depend on ``by``). Lazy in, lazy out (to be collected with other plans)."""
    names = [metric.name for metric in metrics]
    if aggregations is None:
        columns = wide.collect_schema().names() if isinstance(wide, pl.LazyFrame) else wide.columns
        aggregations = moment_aggregations(columns, metrics, weighted=weighted)
    grouped = wide.group_by(list(by)).agg(aggregations) if by else wide.select(aggregations)
    return grouped.unpivot(on=names, index=list(by), variable_name="metric", value_name="_m").unnest("_m")


def moment_aggregations(columns: Sequence[str], metrics: Sequence[Metric], *, weighted: bool) -> list[pl.Expr]:
    """The aggregations of :func:`moments` (one struct per metric) over per-unit values with
    ``columns``: built once for every grouping set of the same values."""
    weight = pl.col(WEIGHT) if weighted else None
    flags = {metric.name: pl.col(metric.name + "__flag") for metric in metrics if metric.name + "__flag" in columns}
    outside = {
        metric.name: pl.col(metric.name + "__skip") == metric.outside_reason
        for metric in metrics if metric.name + "__skip" in columns
    }
    return [_moments_of(pl.col(metric.name), weight, flags.get(metric.name), outside.get(metric.name)).alias(metric.name)
            for metric in metrics]


def merge_moments(parts: Sequence[pl.DataFrame], keys: Sequence[str]) -> pl.DataFrame:
    """The moments of the union of disjoint parts (module docstring): counts and sums add, ``m2``
    by the parallel-axis rule."""
    stacked = pl.concat(parts, how="vertical_relaxed")
    mean_of_part = pl.when(pl.col("w") > 0).then(pl.col("wx") / pl.col("w"))
    merged_mean = pl.col("wx").sum() / pl.col("w").sum()
    spread = (pl.col("w") * (mean_of_part - merged_mean).pow(2)).fill_null(0.0).sum()
    return stacked.group_by(list(keys), maintain_order=True).agg(
        n=pl.col("n").sum(),
        n_rows=pl.col("n_rows").sum(),
        n_outside_own=pl.col("n_outside_own").sum(),
        w=pl.col("w").sum(),
        wx=pl.col("wx").sum(),
        m2=pl.col("m2").sum() + pl.when(pl.col("w").sum() > 0).then(spread).otherwise(0.0),
        flagged=pl.col("flagged").sum(),
    )


def _weighted_quantile(value: pl.Expr, weight: pl.Expr, q: float) -> pl.Expr:
    present = value.is_not_null()
    x = value.filter(present)
    w = weight.filter(present)
    # Sorted by value, then weight: the running sums depend on the (value, weight) pairs only,
    # never on the rows' order (so parts merged in any order give the whole's quantiles).
    x_sorted = x.sort_by(x, w)
    cumulative = w.sort_by(x, w).cum_sum()
    total = cumulative.last()
    # Whole weights: linear interpolation in the sample with each unit repeated `weight` times.
    position = q * (total - 1)
    lower, upper = position.floor(), position.ceil()
    at_lower = x_sorted.filter(cumulative > lower).first()
    at_upper = x_sorted.filter(cumulative > upper).first()
    repeated = at_lower + (position - lower) * (at_upper - at_lower)
    # Other weights: the weighted inverted CDF.
    inverted_cdf = x_sorted.filter(cumulative >= q * total).first()
    whole = (w == w.floor()).all()
    return pl.when(total > 0).then(pl.when(whole).then(repeated).otherwise(inverted_cdf))


def quantiles(wide: pl.DataFrame | pl.LazyFrame, metrics: Sequence[Metric], by: Sequence[str], *, weighted: bool,
              aggregations: Sequence[pl.Expr] | None = None):
    """Rows ``by, metric, median, p25, p75, p90, min, max`` (module docstring for the rule with
    weights); ``aggregations`` are :func:`quantile_aggregations` of ``metrics``, when built
    already (they do not depend on ``by``). Lazy in, lazy out."""
    names = [metric.name for metric in metrics]
    if aggregations is None:
        aggregations = quantile_aggregations(metrics, weighted=weighted)
    grouped = wide.group_by(list(by)).agg(aggregations) if by else wide.select(aggregations)
    return grouped.unpivot(on=names, index=list(by), variable_name="metric", value_name="_q").unnest("_q")


def quantile_aggregations(metrics: Sequence[Metric], *, weighted: bool) -> list[pl.Expr]:
    """The aggregations of :func:`quantiles`, one struct per metric (in order): built once for
    every grouping set of the same values."""

    def stats(name: str) -> pl.Expr:
        value = pl.col(name)
        if weighted:
            fields = {label: _weighted_quantile(value, pl.col(WEIGHT), q) for label, q in QUANTILES.items()}
        else:
            fields = {label: value.median() if q == 0.5 else value.quantile(q, interpolation="linear")
                      for label, q in QUANTILES.items()}
        # A unit of weight 0 is not in the repeated sample.
        counted = value.filter(pl.col(WEIGHT) > 0) if weighted else value
        fields |= {"min": counted.min(), "max": counted.max()}
        return pl.struct(**{label: expr.cast(pl.Float64) for label, expr in fields.items()}).alias(name)

    return [stats(metric.name) for metric in metrics]


def finalize_moments(merged: pl.LazyFrame, is_sum: pl.Expr) -> pl.LazyFrame:
    """``value`` and ``std`` from moments (module docstring; ``value`` is ``wx`` where ``is_sum``,
    count metrics); drops ``w``, ``wx``, ``m2``."""
    mean = pl.when(pl.col("w") > 0).then(pl.col("wx") / pl.col("w"))
    return merged.with_columns(
        value=pl.when(is_sum).then(pl.col("wx")).otherwise(mean),
        std=pl.when(pl.col("w") > 1).then((pl.col("m2") / (pl.col("w") - 1)).sqrt()),
    ).drop("w", "wx", "m2")


def unit_metrics(metrics: Sequence[Metric], subsets: Mapping[str, str]) -> pl.LazyFrame:
    """The per-unit ``metrics`` of a summary task as :func:`unit_summary` reads them: ``metric``,
    its ``subset`` text (``subsets``), whether its slices sum their values (:data:`SUMMED`, count
    metrics) and its note template for flagged units (:data:`TEMPLATE`, with ``{count}``)."""
    notes = {metric.name: note[1] for metric in metrics if (note := metric.note()) is not None}
    return pl.LazyFrame(
        {"metric": [m.name for m in metrics], "subset": [subsets.get(m.name) for m in metrics],
         SUMMED: [m.summary == "sum" for m in metrics], TEMPLATE: [notes.get(m.name) for m in metrics]},
        schema={"metric": pl.String, "subset": pl.String, SUMMED: pl.Boolean, TEMPLATE: pl.String},
    )


def unit_summary(sizes: pl.LazyFrame, metrics: pl.LazyFrame, merged_moments: pl.LazyFrame, quantile_rows: pl.LazyFrame, *,
                 by: Sequence[str]) -> pl.LazyFrame:
    """Summary rows of per-unit metrics: every slice of ``sizes`` (its keys ``by`` and
    ``n_units``) × every metric of its task (``metrics``, :func:`unit_metrics` beside the task's
    key, ``by[0]``), with the finalized moments and the quantiles (keyed ``by`` and ``metric``).

    A slice without any value has ``n = 0`` and no value (a sum of nothing, 0, for count
    metrics); a metric's note counts its flagged units (its :data:`TEMPLATE`).
    """
    keys = [*by, "metric"]
    rows = finalize_moments(
        sizes.join(metrics, on=by[0])
        .join(merged_moments, on=keys, how="left", nulls_equal=True)
        .join(quantile_rows, on=keys, how="left", nulls_equal=True),
        pl.col(SUMMED),
    )
    template = pl.col(TEMPLATE)
    counted = pl.when((pl.col("flagged") > 0) & template.is_not_null()).then(
        template.str.replace("{count}", pl.col("flagged").cast(pl.String), literal=True)
    )
    return rows.with_columns(
        n=pl.col("n").fill_null(0),
        value=pl.when(pl.col(SUMMED)).then(pl.col("value").fill_null(0.0)).otherwise(pl.col("value")),
    ).with_columns(
        n_skipped=pl.col("n_units") - pl.col("n"),
        n_outside_subset=pl.col("n_units") - pl.col("n_rows").fill_null(0) + pl.col("n_outside_own").fill_null(0),
        note=pl.when(pl.col("n") == 0).then(pl.lit(NO_UNIT_IN_SUBSET)).otherwise(counted),
    )


def set_summary(sizes: pl.LazyFrame, metrics: pl.LazyFrame, values: pl.LazyFrame, *, by: Sequence[str]) -> pl.LazyFrame:
    """Summary rows of set metrics: every slice of ``sizes`` (its keys ``by`` and ``n_units``) ×
    every metric of its task with a finalized row (``metrics``: ``metric`` beside the task's key,
    ``by[0]``; a set metric whose state finalizes to no row, e.g. on an empty subset, has none and
    gets no summary rows), with the metrics' ``finalize`` (``values``: ``by, metric, n, value,
    note``)."""
    rows = sizes.join(metrics, on=by[0]).join(values, on=[*by, "metric"], how="left", nulls_equal=True)
    return rows.with_columns(
        n=pl.col("n").fill_null(0).cast(pl.Int64),
        value=pl.col("value").cast(pl.Float64),
        note=pl.col("note").fill_null(pl.when(pl.col("value").is_null()).then(pl.lit(NO_UNIT_IN_SUBSET))),
        # A set metric has one value per slice: no spread, no quantiles.
        **{name: pl.lit(None, dtype=pl.Float64) for name in ("std", *DISTRIBUTION_STATS)},
    ).with_columns(n_skipped=pl.col("n_units") - pl.col("n"), n_outside_subset=pl.col("n_units") - pl.col("n"))


def order_summary(
    summary: pl.DataFrame, metric_names: Sequence[str], grouping_sets: Mapping[str, Sequence[str]], slice_keys: Sequence[str],
    *, then: Sequence[str] = (),
) -> pl.DataFrame:
    """Rows by grouping set (declared order), system, slice keys, metric (declared order), then
    the columns ``then``; systems and text slice keys in natural order (``A.2`` before ``A.10``)."""
    metric_order = {name: i for i, name in enumerate(metric_names)}
    grouping_order = {name: i for i, name in enumerate(grouping_sets)}
    keyed = summary.with_columns(
        _g=pl.col("grouping").replace_strict(grouping_order, default=len(grouping_order)),
        _m=pl.col("metric").replace_strict(metric_order, default=len(metric_order)),
    )
    return sort_naturally(keyed, ["_g", "system", *slice_keys, "_m", *then]).drop("_g", "_m")


def across_folds(summary: pl.DataFrame, fold_grouping: str, slice_keys: Sequence[str]) -> pl.DataFrame:
    """Rows ``grouping = across_folds``: per system and metric, mean and std (ddof=1) of fold values.

    ``n`` is the number of folds with a value, ``n_skipped`` the folds without one;
    ``median``, ``p25``, ``p75``, ``p90``, ``min`` and ``max`` are over the fold values too (each
    fold counts once).
    """
    folds = summary.filter(pl.col("grouping") == fold_grouping)
    value = pl.col("value")
    rows = folds.group_by("system", "metric", "unit", "subset", maintain_order=True).agg(
        n=value.is_not_null().sum().cast(pl.Int64),
        n_skipped=value.is_null().sum().cast(pl.Int64),
        n_outside_subset=pl.lit(0, dtype=pl.Int64),
        std=value.std(ddof=1),
        median=value.median(),
        p25=value.quantile(0.25, interpolation="linear"),
        p75=value.quantile(0.75, interpolation="linear"),
        p90=value.quantile(0.9, interpolation="linear"),
        min=value.min(),
        max=value.max(),
        value=value.mean(),
    )
    rows = rows.with_columns(
        grouping=pl.lit("across_folds"),
        note=pl.format("mean ± std of {} fold values", pl.col("n")),
        *(pl.lit(None, dtype=summary.schema[k]).alias(k) for k in slice_keys),
    )
    return rows.select(summary.columns)
