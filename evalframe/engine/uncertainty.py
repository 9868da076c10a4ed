"""The uncertainty stage (DESIGN §3): bootstrap replicates of every summary row, and their CIs.

Runs after the summary, on the same partials (so merged partials give the whole's intervals).
For every (metric group, unit, grouping set, slice) it computes the metric under ``R``
replicate weight vectors at once (:mod:`evalframe.engine.bootstrap` for the settings and the
interval rule):

- **per-unit metrics**: each row's replicate weight is its resampled unit's count times its
  user weight; a slice's replicate mean is ``Σ c·w·v / Σ c·w`` (over rows with a value; the
  total alone for count metrics). The two sums are computed where the per-unit values are, per
  part of the data, exactly (:func:`part_replicate_sums`, :mod:`~evalframe.engine.replicate_sums`:
  integer digit totals from matrix products over blocks of rows), and merged parts add: the bucket
  path accumulates them bucket by bucket and never holds all units' values, and every partition
  gives the in-memory run's replicate values bit for bit. BCa's jackknife alone reads the values;
- **set metrics**: :func:`~evalframe.metrics.base.values_under_grouped` on all slices of a
  grouping at once with the weight matrix: each ``state_id``'s per-unit state is computed once
  for every slice (one Polars plan) and turned into the replicate states by matrix products
  (:mod:`evalframe.metrics.stacked`), in blocks of replicate columns that bound memory;
- **across folds**: per replicate, the mean of the fold values (the folds with a value on the
  data); a replicate where one of them is undefined is undefined.

The result is the summary with ``se``, ``ci_low``, ``ci_high`` (a note counts undefined
replicates) and the replicate values themselves (:func:`replicates_table`). No copy of a table
per replicate and no Python loop over replicates or rows; the loops run over slices, metrics
and blocks of replicate columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import polars as pl

from evalframe._lazy import lazy_module
from evalframe._progress import Progress
from evalframe._threads import in_order
from evalframe.data.units import SYSTEM
from evalframe.engine import replicate_sums
from evalframe.engine.aggregate import CI_COLUMNS
from evalframe.engine.partials import Partials
from evalframe.engine.resampled import ResampledUnits, resampled_columns
from evalframe.metrics.base import WEIGHT, SetMetric, values_under_grouped
from evalframe.engine.bootstrap import Bootstrap, intervals, jackknife_acceleration

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light


def without_intervals(summary: pl.DataFrame) -> pl.DataFrame:
    """The summary with null ``se``, ``ci_low``, ``ci_high`` (no bootstrap ran), before ``note``."""
    columns = [c for c in summary.columns if c != "note"]
    return summary.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in CI_COLUMNS).select(*columns, *CI_COLUMNS, "note")


def replicate_unit_weights(queries: pl.DataFrame, settings: Bootstrap, frame: pl.DataFrame, unit: str,
                           units) -> tuple[np.ndarray, np.ndarray]:
    """The engine's replicate draw for the rows of ``frame`` (metrics of ``unit``): each row's
    resampled-unit index and the units' weight matrix (units × R), exactly as the summary's CIs
    draw them (same unit columns, seed and strata), for stages after the engine (the ROC band)."""
    columns = settings.unit_columns or tuple(k for k in units.key_columns(unit) if k != SYSTEM)
    return ResampledUnits(queries, settings).rows(frame, columns)


def _slices(frame: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """One row per slice of ``by``: its key values and ``_rows`` (the frame's row positions)."""
    return frame.with_row_index("_row").group_by(list(by), maintain_order=True).agg(pl.col("_row"))


def _per_unit_rows(partials, units, settings, g, unit, metrics, by) -> tuple[list[dict], int]:
    """Replicate values of the per-unit metrics from the merged exact sums (no per-unit values
    read, but for BCa's jackknife), and the number of slices visited."""
    scale_of = None
    if settings.strata:
        columns = resampled_columns(settings, partials.units, unit, partials.values[(g, unit)].lazy().collect_schema().names())
        names, scale = units.strata(columns)
        scale_of = {name: scale[code] for code, name in enumerate(names)}
    summed = np.array([m.summary == "sum" for m in metrics])
    out, visited = [], 0
    for grouping, keys in by.items():
        if not partials.applies[(unit, grouping)]:
            continue
        slices, totals, weight_totals = replicate_sums.replicate_totals(
            partials.replicate_sums[(g, unit, grouping)], len(metrics), settings.resamples, scale_of)
        means = np.divide(totals, weight_totals, out=np.full(totals.shape, np.nan), where=weight_totals > 0)
        replicate_values = np.where(summed[None, :, None], totals, means)
        if settings.method == "bca":
            accelerations = _accelerations(partials, units, settings, g, unit, metrics, keys, slices)
        else:
            accelerations = np.full((slices.height, len(metrics)), np.nan)
        for position, slice_row in enumerate(slices.iter_rows(named=True)):
            for m, metric in enumerate(metrics):
                out.append({"grouping": grouping, **slice_row, "metric": metric.name, "unit": unit, "_g": g,
                            "_values": replicate_values[position, m], "_acceleration": accelerations[position, m]})
            visited += 1
    return out, visited


def _accelerations(partials, units, settings, g, unit, metrics, keys, slices: pl.DataFrame) -> np.ndarray:
    """BCa's jackknife acceleration (slices × metrics; nan for count metrics), from the per-unit
    values summed per resampled unit (BCa alone reads every per-unit value into memory)."""
    # Units in key order, whatever order the parts were merged in: the sums then add in one order.
    wide = partials.values[(g, unit)].lazy().sort(partials.units.key_columns(unit), nulls_last=True).collect()
    columns = resampled_columns(settings, partials.units, unit, wide.columns)
    unit_index = units.index(wide, columns)
    values = wide.select(pl.col(m.name).cast(pl.Float64) for m in metrics).to_numpy()
    present = ~np.isnan(values)
    user = wide.get_column(WEIGHT).to_numpy() if partials.plan.weight is not None else np.ones(wide.height)
    numerators = np.where(present, values * user[:, None], 0.0)
    denominators = np.where(present, user[:, None], 0.0)
    summed = np.array([m.summary == "sum" for m in metrics])
    found = _slices(wide, keys)
    position_of = {tuple(row[:-1]): i for i, row in enumerate(found.iter_rows())}
    out = np.full((slices.height, len(metrics)), np.nan)
    for position, slice_row in enumerate(slices.iter_rows()):
        rows = np.asarray(found.get_column("_row")[position_of[tuple(slice_row)]], dtype=np.int64)
        drawn, inverse = np.unique(unit_index[rows], return_inverse=True)
        s = np.zeros((drawn.size, len(metrics)))
        d = np.zeros((drawn.size, len(metrics)))
        np.add.at(s, inverse.reshape(-1), numerators[rows])
        np.add.at(d, inverse.reshape(-1), denominators[rows])
        out[position] = np.where(summed, np.nan, jackknife_acceleration(s, d))
    return out


def _set_rows(partials, units, settings, g, unit, metrics, grouping, keys, rows_frame) -> tuple[list[dict], int]:
    """Replicate values of the set metrics on every slice of one grouping set, and the number of slices."""
    columns = resampled_columns(settings, partials.units, unit, rows_frame.columns)
    unit_index = units.index(rows_frame, columns)
    user = rows_frame.get_column(WEIGHT).to_numpy()
    read = sorted({c for m in metrics for c in m.required_columns.get("queries", ())} & set(rows_frame.columns))
    columns_read = rows_frame.select(read)
    out = []
    # Every slice of the grouping at once, in blocks of replicate columns: each state is
    # computed once per slice and block (values_under_grouped), never per replicate.
    found = _slices(rows_frame, keys)
    slice_rows = [np.asarray(rows, dtype=np.int64) for rows in found.get_column("_row").to_list()]
    values = [{m.name: np.empty(settings.resamples) for m in metrics} for _ in slice_rows]
    largest = max((rows.size for rows in slice_rows), default=1)
    for start, stop, weights in units.blocks(columns, unit_index, user, largest):
        computed = values_under_grouped(metrics, columns_read, slice_rows, weights)
        for position, slice_values in enumerate(computed):
            for name, array in slice_values.items():
                values[position][name][start:stop] = array
    for slice_row, slice_values in zip(found.drop("_row").iter_rows(named=True), values, strict=True):
        for metric in metrics:
            out.append({"grouping": grouping, **slice_row, "metric": metric.name, "unit": unit,
                        "_g": g, "_values": slice_values[metric.name], "_acceleration": np.nan})
    return out, len(slice_rows)


#: Threads that compute the replicate values of several (group, unit, grouping set) at once
#: (:func:`~evalframe._threads.in_order`): Polars' plans and NumPy's products, gathers and
#: running sums release the GIL while they run, so two tasks keep two cores busy.
THREADS = 2


def _work(partials: Partials) -> int:
    """Slices × (group, unit, kind) to visit, for the progress bar."""
    plan = partials.plan
    total = 0
    for (unit, grouping), sizes in partials.sizes.items():
        kinds = sum(
            any(m.unit == unit and isinstance(m, SetMetric) == kind for m in group.metrics)
            for group in plan.groups for kind in (False, True)
        )
        total += sizes.height * kinds
    return total


def replicate_values(partials: Partials) -> pl.DataFrame:
    """Rows ``grouping, system, *slice keys, metric, unit, _g`` with each summary row's ``R``
    replicate values (``_values``, nan where undefined) and BCa acceleration (``_acceleration``,
    nan for set metrics and counts); across-folds rows are added by :func:`attach`."""
    plan = partials.plan
    settings = plan.bootstrap
    units = ResampledUnits(partials.queries, settings)
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    # One task per (group, unit) for the per-unit metrics and per (group, unit, grouping set) for
    # the set metrics; their rows are put together in this order, whatever order they finish in.
    tasks = []
    for g, group in enumerate(plan.groups):
        inside = None
        for unit in dict.fromkeys(m.unit for m in group.metrics):
            per_unit = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
            set_metrics = [m for m in group.metrics if m.unit == unit and isinstance(m, SetMetric)]
            if per_unit:
                tasks.append(partial(_per_unit_rows, partials, units, settings, g, unit, per_unit, by))
            if set_metrics:
                if inside is None:  # in key order, whatever order the parts were merged in
                    inside = partials.queries.filter(group.subset.condition()).sort(SYSTEM, "query_id", nulls_last=True)
                tasks += [partial(_set_rows, partials, units, settings, g, unit, set_metrics, grouping, keys, inside)
                          for grouping, keys in by.items() if partials.applies[(unit, grouping)]]
    rows: list[dict] = []
    from threadpoolctl import threadpool_limits  # imported where used

    # One BLAS thread: the products here are thin (few metrics or groups × units × R), where
    # BLAS threads cost far more than they give, and one thread sums in one fixed order.
    with Progress(_work(partials), "bootstrap") as progress, threadpool_limits(limits=1, user_api="blas"):
        for found, visited in in_order(tasks, threads=THREADS):
            rows += found
            progress.advance(visited)
    slice_keys = plan.slice_keys
    schema = {"grouping": pl.String, SYSTEM: partials.queries.schema[SYSTEM],
              **{k: partials.queries.schema[k] for k in slice_keys}, "metric": pl.String, "unit": pl.String,
              "_g": pl.Int64, "_acceleration": pl.Float64}
    table = pl.DataFrame([{k: row.get(k) for k in schema} for row in rows], schema=schema)
    matrix = np.vstack([row["_values"] for row in rows]) if rows else np.zeros((0, settings.resamples))
    return table.with_columns(pl.Series("_values", matrix, dtype=pl.Array(pl.Float64, settings.resamples)))


def _across_folds(replicates: pl.DataFrame, summary: pl.DataFrame, fold_grouping: str, slice_keys: Sequence[str]) -> pl.DataFrame:
    """Across-folds replicate values: per replicate, the mean of the folds with a value on the data."""
    keys = [SYSTEM, *slice_keys, "metric", "unit", "subset"]
    folds = replicates.filter(pl.col("grouping") == fold_grouping).join(
        summary.filter(pl.col("grouping") == fold_grouping).select(*keys, "value"), on=keys, how="left", nulls_equal=True
    ).filter(pl.col("value").is_not_null())
    if folds.is_empty():
        return replicates.clear()
    grouped = folds.with_row_index("_row").group_by(SYSTEM, "metric", "unit", "subset", maintain_order=True).agg(pl.col("_row"), pl.col("_g").first())
    matrix = folds.get_column("_values").to_numpy()
    means = np.vstack([matrix[np.asarray(rows)].mean(axis=0) for rows in grouped.get_column("_row").to_list()])
    resamples = matrix.shape[1]
    return grouped.drop("_row").with_columns(
        grouping=pl.lit("across_folds"),
        _acceleration=pl.lit(np.nan),
        _values=pl.Series(means, dtype=pl.Array(pl.Float64, resamples)),
        *(pl.lit(None, dtype=replicates.schema[k]).alias(k) for k in slice_keys),
    ).select(replicates.columns)


def attach(summary: pl.DataFrame, partials: Partials, labels: dict[tuple[int, str], str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The summary with ``se``, ``ci_low``, ``ci_high`` and the replicates table (:func:`replicates_table`).

    ``labels`` maps (group position, metric name) to the summary's ``subset`` text.
    """
    plan = partials.plan
    settings = plan.bootstrap
    slice_keys = plan.slice_keys
    replicates = replicate_values(partials)
    label_table = pl.DataFrame(
        [{"_g": g, "metric": name, "subset": text} for (g, name), text in labels.items()],
        schema={"_g": pl.Int64, "metric": pl.String, "subset": pl.String},
    )
    replicates = replicates.join(label_table, on=["_g", "metric"], how="left", maintain_order="left")
    if plan.across_folds is not None:
        replicates = pl.concat([replicates, _across_folds(replicates, summary, plan.fold_grouping, slice_keys)])
    keys = ["grouping", SYSTEM, *slice_keys, "metric", "unit", "subset"]
    joined = summary.with_row_index("_summary_row").join(
        replicates, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    resamples = settings.resamples
    matrix = joined.get_column("_values").fill_null(pl.lit([np.nan] * resamples, dtype=pl.Array(pl.Float64, resamples))).to_numpy()
    matrix = np.asarray(matrix, dtype=np.float64).reshape(joined.height, resamples)
    estimates = joined.get_column("value").cast(pl.Float64).fill_null(np.nan).to_numpy()
    acceleration = joined.get_column("_acceleration").fill_null(np.nan).to_numpy() if settings.method == "bca" else None
    result = intervals(matrix, estimates, settings.confidence, acceleration)
    undefined = resamples - result.n_valid
    method = np.where(np.isfinite(acceleration), "BCa", "percentile") if acceleration is not None else np.full(joined.height, "percentile")
    counted = [
        (f"CI ({kind}) from {valid} of {resamples} replicates ({missing} undefined: no unit drawn, too few units or one class)"
         if missing and np.isfinite(estimate) else None)
        for valid, missing, estimate, kind in zip(result.n_valid.tolist(), undefined.tolist(), estimates.tolist(), method.tolist(), strict=True)
    ]
    extra = pl.Series("_ci_note", counted, dtype=pl.String)
    with_ci = joined.select(summary.columns).with_columns(
        se=pl.Series(result.se).fill_nan(None),
        ci_low=pl.Series(result.low).fill_nan(None),
        ci_high=pl.Series(result.high).fill_nan(None),
        note=pl.when(pl.col("note").is_null()).then(extra).when(extra.is_null()).then(pl.col("note"))
        .otherwise(pl.concat_str(pl.col("note"), pl.lit("; "), extra)),
    )
    columns = [c for c in summary.columns if c != "note"]
    with_ci = _without_design_intervals(with_ci.select(*columns, *CI_COLUMNS, "note"), plan)
    table = replicates_table(joined.filter(pl.col("_values").is_not_null()), keys)
    return with_ci, table


def _without_design_intervals(summary: pl.DataFrame, plan) -> pl.DataFrame:
    """No interval for a design count (``n_queries``, ``n_positive``: a metric with
    ``design_count = True``): how many queries a data set has is fixed by its design, and a
    resample's count is not an estimate of anything."""
    design = [m.name for m in plan.metrics if getattr(m, "design_count", False)]
    if not design:
        return summary
    fixed = pl.col("metric").is_in(design)
    return summary.with_columns(pl.when(fixed).then(None).otherwise(pl.col(c)).alias(c) for c in CI_COLUMNS)


def replicates_table(replicates: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """Interface for paired comparisons: the summary's key columns and ``values``, an
    ``Array(Float64, R)`` of the row's ``R`` replicate values (nan where a replicate is undefined).

    Replicate ``r`` of every row is computed under the same unit counts (they depend only on the
    seed, the unit's key values and ``r``), so for two systems on the same units
    ``values_system − values_baseline`` is the paired bootstrap distribution of the difference.
    """
    return replicates.select(*keys, pl.col("_values").alias("values"))
