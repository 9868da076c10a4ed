"""Paired comparison of systems against a baseline (issue 11, part 2).

:func:`compare` gives one tidy row per (system, grouping, slice, metric, subset) for every system
other than the baseline, evaluated on the same units:

- ``baseline_value``, ``value`` (the summary's values) and ``delta = value − baseline_value``;
  ``higher_is_better`` says which sign is an improvement;
- ``delta_ci_low``, ``delta_ci_high``: the paired bootstrap interval of the delta, the
  percentile interval of ``replicate_sys − replicate_base`` over the bootstrap replicates
  (``Evaluation.replicates`` / ``replicates.parquet``; the replicates are keyed by unit, so both
  systems get the same ones): null when the result has no replicates;
- ``n_pairs`` (units with a value for both systems; for set metrics the units of the slice),
  ``effect_size`` (mean paired difference / its std, per-unit metrics);
- p-values (two-sided; :mod:`evalframe.stats.paired_tests`): ``p_randomization`` (sign flips of
  per-unit differences; for set metrics each unit's rows of the two systems are swapped and
  the metric recomputed, :func:`set_metric_pvalues`), ``p_t`` and ``p_wilcoxon`` (per-unit
  metrics); ``randomization_exact`` says whether every permutation was enumerated;
- ``p_<test>_adjusted``: adjusted over the declared family by ``correction``
  (:mod:`evalframe.stats.corrections`); the default family is one comparison (one system
  against the baseline): all its metrics × slices;
- ``test`` and ``significant``: the first of ``tests`` that applies to the row (set metrics
  have only the randomization test), and whether its adjusted p-value is below ``alpha``;
- ``note``: what was left out (unpaired units dropped, a slice key that differs between the
  systems, a set metric whose permutation count was capped, …).

With a weight column the summary's values and delta are weighted, set metrics are recomputed
with the weights, and the per-unit tests weigh every pair 1 (said in ``note``).

Unpaired units (a unit with a value row for one system only) are an error naming the counts
and examples, or, with ``unpaired="drop"``, are left out and counted in ``note``. The
across-folds rows are not slices of units and get no comparison.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, ConfigError, EvalframeError, InputError, Problem
from evalframe.engine.bootstrap import intervals
from evalframe.stats.corrections import adjust_in_families, check_correction
from evalframe.stats.paired_tests import (
    _as_extreme,
    _enumerable,
    enumeration_bits,
    paired_statistics,
    permutation_bits,
    shared_sign_flip_pvalues,
)
from evalframe.engine.replicates import unit_hashes

TESTS = ("randomization", "t", "wilcoxon")
#: Columns of p-values: the tests, and the bootstrap test of set metrics (from the replicates).
P_TESTS = (*TESTS, "bootstrap")
#: Named families: the columns whose values define one family of tests. ``slice`` (the default)
#: is one metric on one slice across the systems compared with the baseline: the question a
#: reader of one row asks ("is this system better than the baseline here?"), corrected for the
#: several systems; the wider families are opt-in.
SLICE_FAMILY = "slice"
FAMILIES = {
    SLICE_FAMILY: ("grouping", "<slice keys>", "metric", "subset"),
    "comparison": ("system",),
    "metric": ("system", "metric", "subset"),
    "grouping": ("system", "grouping"),
    "all": (),
}
#: Rows × permutations stacked at once by the fallback (bounds memory).
_STACK_CELLS = 1 << 22
_SYSTEM_SEPARATOR = "\x1f"


def _names(value, key: str, *, optional: bool = False) -> None:
    """A ConfigError unless ``value`` is a string or a list of strings (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, str) or (isinstance(value, Sequence) and all(isinstance(v, str) for v in value)):
        return
    raise ConfigError(f"`{key}` must be a name or a list of names, got {value!r}")


def _number(value, key: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"`{key}` must be a number, got {value!r}")


def _check_types(evaluation, baseline, metrics, groupings, tests, correction, alpha, set_permutations, seed, family,
                 confidence) -> None:
    """Wrong argument types give a ConfigError naming the argument, never a TypeError or AttributeError."""
    from evalframe.engine.result import Evaluation
    from evalframe.results.data import ResultData
    from evalframe.results.reader import ResultFolder

    if not isinstance(evaluation, Evaluation | ResultData | ResultFolder | str | Path):
        raise ConfigError(f"`evaluation` must be an Evaluation or a result folder, got {type(evaluation).__name__} {evaluation!r}")
    if baseline is None:
        raise ConfigError("`baseline`: name the system the others are compared with")
    if not isinstance(baseline, str):
        raise ConfigError(f"`baseline` must be a system name, got {baseline!r}")
    for value, key in ((metrics, "metrics"), (groupings, "groupings")):
        _names(value, key, optional=True)
    for value, key in ((tests, "tests"), (correction, "correction"), (family, "family")):
        _names(value, key)
    for value, key in ((alpha, "alpha"), (confidence, "confidence")):
        _number(value, key)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"`seed` must be a whole number, got {seed!r}")
    if set_permutations is not None and (isinstance(set_permutations, bool) or not isinstance(set_permutations, int)
                                         or set_permutations < 1):
        raise ConfigError(f"`set_permutations` must be a whole number >= 1, got {set_permutations!r}")


def _options(tests, correction, alpha, permutations, unpaired, family, confidence) -> tuple[list[str], tuple[str, ...]]:
    tests = [tests] if isinstance(tests, str) else list(tests)
    unknown = [t for t in tests if t not in TESTS]
    if unknown or not tests:
        raise ConfigError(f"unknown tests {unknown} (known: {', '.join(TESTS)})" if unknown else "`tests` lists no test")
    check_correction(correction)
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"`alpha` must be in (0, 1), got {alpha!r}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"`confidence` must be in (0, 1), got {confidence!r}")
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise ConfigError(f"`permutations` must be a whole number >= 1, got {permutations!r}")
    if unpaired not in ("error", "drop"):
        raise ConfigError(f"`unpaired` must be 'error' or 'drop', got {unpaired!r}")
    if isinstance(family, str):
        if family not in FAMILIES:
            raise ConfigError(f"unknown family `{family}` (known: {', '.join(FAMILIES)}, or a list of columns)")
        columns = FAMILIES[family]  # `slice`: its <slice keys> are filled in by compare()
    else:
        columns = tuple(family)
    return tests, columns


def compare(
    evaluation,
    baseline: str | None = None,
    *,
    metrics: Sequence[str] | None = None,
    groupings: Sequence[str] | None = None,
    tests: Sequence[str] = TESTS,
    correction: str = "holm",
    alpha: float = 0.05,
    permutations: int = 10_000,
    set_permutations: int | None = None,
    seed: int = 0,
    family: str | Sequence[str] = SLICE_FAMILY,
    confidence: float = 0.95,
    unpaired: Literal["error", "drop"] = "error",
) -> pl.DataFrame:
    """Compare every system with ``baseline`` on the same units (module docstring).

    ``evaluation``: an :class:`~evalframe.engine.result.Evaluation`, a result folder, or
    :class:`~evalframe.results.data.ResultData`. ``metrics`` / ``groupings`` restrict the rows
    (default: all; the across-folds rows never). ``family``: ``"slice"`` (default: one metric
    on one slice across the systems compared with the baseline), ``"comparison"`` (all metrics ×
    slices of one system against the baseline), ``"metric"``, ``"grouping"``, ``"all"``, or a
    list of columns whose values define a family. Set metrics (AUROC, F1, …) are tested on the
    run's bootstrap replicates (``p_bootstrap``: twice the smaller share of replicate deltas on
    either side of 0, never below 1/(R+1)); ``set_permutations=N`` runs the randomization test
    on them instead (recomputed per permutation: slow, :func:`set_metric_pvalues`).

    >>> cmp = ef.compare(ev, baseline="retriever_only", correction="holm")   # doctest: +SKIP
    >>> cmp.filter(grouping="overall").select("system", "metric", "delta", "p_randomization_adjusted", "significant")  # doctest: +SKIP
    """
    from evalframe.stats.power import result_data

    _check_types(evaluation, baseline, metrics, groupings, tests, correction, alpha, set_permutations, seed, family, confidence)
    metrics = [metrics] if isinstance(metrics, str) else metrics
    groupings = [groupings] if isinstance(groupings, str) else groupings
    tests, family_columns = _options(tests, correction, alpha, permutations, unpaired, family, confidence)
    data = result_data(evaluation)
    if "<slice keys>" in family_columns:
        family_columns = tuple(c for k in family_columns for c in (data.slice_keys if k == "<slice keys>" else [k]))
    data.check_system(baseline, "baseline")
    systems = [s for s in data.systems if s != baseline]
    if not systems:
        raise ConfigError(f"nothing to compare: `{baseline}` is the only system")
    metrics = [_canonical(name, data) for name in metrics] if metrics else None
    for metric in metrics or ():
        data.check_metric(metric)
    if groupings is not None:
        unknown = [g for g in groupings if g not in data.slices]
        if unknown:
            raise ConfigError(f"unknown groupings {unknown} (groupings: {', '.join(data.slices)})")
    chosen_groupings = list(groupings or data.slices)  # unknown groupings were refused above
    slice_keys = data.slice_keys

    rows = _summary_pairs(data, baseline, systems, metrics, chosen_groupings)
    per_unit_metrics = [m for m in rows.get_column("metric").unique(maintain_order=True).to_list() if data.levels.get(m) != "set"]
    # A folder without replicates.parquet has its replicates recomputed from the input (a
    # bootstrap of the run): on its own thread while the per-unit tests run (both release the GIL
    # in Polars and NumPy).
    with ThreadPoolExecutor(max_workers=1) as background:
        replicates_found = background.submit(_quietly, _replicates, data, chosen_groupings)
        statistics, notes = _per_unit_tests(data, baseline, systems, per_unit_metrics, chosen_groupings, tests,
                                            permutations, seed, unpaired)
        replicates, replicates_unavailable = replicates_found.result()
    # Each row's replicate deltas, once: the set metrics' p-values and every row's interval read them.
    deltas = _replicate_deltas(rows, replicates, baseline, slice_keys) if _width(replicates) is not None else None
    if data.weight is not None and statistics is not None:
        notes.append(f"the per-unit tests weigh every pair 1 (the weight column `{data.weight}` is not used by them)")
    set_metrics = [m for m in rows.get_column("metric").unique(maintain_order=True).to_list() if data.levels.get(m) == "set"]
    keys = ["system", "grouping", *slice_keys, "metric", "subset"]
    if statistics is not None:
        rows = rows.join(statistics, on=keys, how="left", nulls_equal=True, maintain_order="left")
    if set_metrics and "randomization" in tests and set_permutations is None:
        rows = _bootstrap_pvalues(rows, data, baseline, replicates, set_metrics, keys, deltas,
                                  unavailable=replicates_unavailable)
    elif set_metrics and "randomization" in tests:
        found = set_metric_pvalues(data, baseline, systems, set_metrics, chosen_groupings,
                                   permutations=permutations, set_permutations=set_permutations, seed=seed)
        if found is not None:
            rows = rows.join(found, on=keys, how="left", nulls_equal=True, maintain_order="left", suffix="_set")
            rows = rows.with_columns(
                *(pl.coalesce(name, f"{name}_set").alias(name) for name in ("p_randomization", "randomization_exact", "note_tests") if f"{name}_set" in rows.columns)
            ).drop([c for c in rows.columns if c.endswith("_set")])
    for column, dtype in (("n_pairs", pl.Int64), ("effect_size", pl.Float64), ("p_randomization", pl.Float64),
                          ("randomization_exact", pl.Boolean), ("p_t", pl.Float64), ("p_wilcoxon", pl.Float64),
                          ("note_tests", pl.String)):
        if column not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype=dtype).alias(column))
    if "p_bootstrap" not in rows.columns:
        rows = rows.with_columns(p_bootstrap=pl.lit(None, dtype=pl.Float64))
    missing_values = (
        pl.col("metric").is_in(per_unit_metrics) & pl.col("n_pairs").is_null() & pl.col("note_tests").is_null()
    )
    without = sorted(set(rows.filter(missing_values).get_column("metric").to_list()))
    if without:
        notes.append(f"no paired per-unit values of {', '.join(without[:8])}{' …' if len(without) > 8 else ''} in the result "
                     "(a result folder keeps them in per_query.parquet, and per_unit.parquet when the pipeline lists it in "
                     "outputs:): no per-unit test of them")
    rows = rows.with_columns(pl.coalesce("n_pairs", "n").alias("n_pairs"))
    rows = _delta_intervals(rows, data, baseline, confidence, keys, replicates, deltas)
    for test in P_TESTS:
        column = f"p_{test}"
        if test not in tests and test != "bootstrap":
            rows = rows.with_columns(pl.lit(None, dtype=pl.Float64).alias(column))
        rows = rows.with_columns(adjust_in_families(rows, column, correction, over=family_columns).alias(f"{column}_adjusted"))
    chosen_tests = [*tests, "bootstrap"]
    primary = pl.coalesce([pl.when(pl.col(f"p_{t}").is_not_null()).then(pl.lit(t)) for t in chosen_tests])
    decided = pl.coalesce([pl.col(f"p_{t}_adjusted") for t in chosen_tests])
    floor = 1.0 / (permutations + 1.0)
    limited = rows.filter(
        (pl.col("p_randomization") <= floor * (1 + 1e-9)) & (pl.col("p_randomization_adjusted") >= alpha)
        & ~pl.col("randomization_exact").fill_null(False)
    ) if "randomization" in tests else rows.clear()
    if limited.height:
        needed = 10 ** int(np.ceil(np.log10(alpha and (limited.height / alpha) * 10)))
        notes.append(f"{limited.height} randomization p-values are at the test's floor 1/(B+1) = {floor:.1e} and their corrected "
                     f"value does not reach α: rerun with --permutations {max(needed, permutations * 10):,} to resolve them")
    note = pl.concat_str([pl.col("note_tests"), pl.lit("; ".join(notes) or None, dtype=pl.String)], separator="; ", ignore_nulls=True)
    rows = rows.with_columns(test=primary, significant=decided < alpha, note=pl.when(note != "").then(note))
    return rows.select(
        "system", pl.lit(baseline).alias("baseline"), "grouping", *slice_keys, "metric", "unit", "subset", "higher_is_better",
        "n_pairs", "baseline_value", "value", "delta", "delta_ci_low", "delta_ci_high", "effect_size",
        *(c for t in P_TESTS for c in (f"p_{t}", f"p_{t}_adjusted")), "randomization_exact", "test", "significant", "note",
    ).with_columns(pl.lit(correction).alias("correction"), pl.lit(alpha).alias("alpha"),
                   pl.lit(permutations).alias("permutations"), pl.lit(_width(replicates), dtype=pl.Int64).alias("resamples"))


def _canonical(name: str, data) -> str:
    """A metric name as the summary prints it (``P@5`` → ``precision@5``); unknown names unchanged."""
    from evalframe.metrics.registry import canonical_name

    if name in data.levels or data.summary.filter(pl.col("metric") == name).height:
        return name
    return canonical_name(name)


def _higher_is_better(names: list[str]) -> dict[str, bool | None]:
    from evalframe.metrics.registry import resolve

    found = {}
    for name in names:
        try:
            found[name] = bool(resolve(name).higher_is_better)
        except ConfigError:  # a metric the registry cannot parse (a user's own): direction unknown
            found[name] = None
    return found


def _summary_pairs(data, baseline: str, systems: list[str], metrics, groupings: list[str]) -> pl.DataFrame:
    """The summary rows of each system joined with the baseline's: values and delta."""
    slice_keys = data.slice_keys
    summary = data.summary.filter(pl.col("grouping").is_in(groupings))
    if metrics:
        summary = summary.filter(pl.col("metric").is_in(list(metrics)))
    keys = ["grouping", *slice_keys, "metric", "unit", "subset"]
    base = summary.filter(pl.col("system") == baseline).select(*keys, baseline_value="value")
    rows = summary.filter(pl.col("system").is_in(systems)).select("system", *keys, "n", "value")
    rows = rows.join(base, on=keys, how="left", nulls_equal=True, maintain_order="left")
    direction = _higher_is_better(rows.get_column("metric").unique(maintain_order=True).to_list())
    return rows.with_columns(
        delta=pl.col("value") - pl.col("baseline_value"),
        higher_is_better=pl.col("metric").replace_strict(direction, default=None, return_dtype=pl.Boolean),
    )


def _unpaired_problem(source: str, system: str, baseline: str, unit: str, only_system: pl.DataFrame, only_base: pl.DataFrame,
                      keys: list[str]) -> InputError:
    def examples(table: pl.DataFrame) -> str:
        shown = [", ".join(f"{k}={v!r}" for k, v in zip(keys, row, strict=True)) for row in table.select(keys).unique(maintain_order=True).head(3).iter_rows()]
        return "; ".join(shown) or "none"

    message = (
        f"units present for one system only ({unit} unit): {only_system.select(keys).n_unique()} of `{system}` have no "
        f"`{baseline}` row (e.g. {examples(only_system)}), {only_base.select(keys).n_unique()} of `{baseline}` have no "
        f"`{system}` row (e.g. {examples(only_base)}); a paired comparison needs both systems on the same units "
        "(pass unpaired='drop' / `unpaired: drop` to leave them out, counted)"
    )
    return InputError(source, Problem(None, None, NO_VALUE, message))


def _per_unit_differences(data, baseline: str, systems: list[str], metrics: list[str], unpaired: str) -> tuple[pl.DataFrame, list[str]]:
    """Long per-unit differences ``d`` (system − baseline) with the baseline's slice keys, and notes."""
    values = data.values.filter(pl.col("metric").is_in(metrics))
    notes: list[str] = []
    parts = []
    slice_keys = data.slice_keys
    for unit in values.get_column("unit").unique(maintain_order=True).to_list():
        unit_keys = list(data.unit_keys.get(unit, ("query_id",)))
        of_unit = values.filter(pl.col("unit") == unit)
        carried = [k for k in slice_keys if k in of_unit.columns and k not in unit_keys]
        pair_keys = [*unit_keys, "metric", "subset"]
        base = of_unit.filter(pl.col("system") == baseline).select(*pair_keys, *carried, _base="value")
        for system in systems:
            own = of_unit.filter(pl.col("system") == system).select(*pair_keys, *carried, "value")
            only_system = own.join(base, on=pair_keys, how="anti", nulls_equal=True)
            only_base = base.join(own, on=pair_keys, how="anti", nulls_equal=True)
            if only_system.height or only_base.height:
                if unpaired == "error":
                    raise _unpaired_problem(data.source, system, baseline, unit, only_system, only_base, unit_keys)
                notes.append(f"{only_system.select(unit_keys).n_unique()} {unit} units of `{system}` and "
                             f"{only_base.select(unit_keys).n_unique()} of `{baseline}` without a pair dropped")
            joined = own.join(base, on=pair_keys, how="inner", nulls_equal=True, suffix="_baseline")
            differs = [k for k in carried if joined.filter(pl.col(k).ne_missing(pl.col(f"{k}_baseline"))).height]
            parts.append(joined.select(
                pl.lit(system).alias("system"), pl.lit(unit).alias("unit"), *unit_keys, "metric", "subset",
                *(pl.col(f"{k}_baseline").alias(k) for k in carried),
                d=pl.col("value") - pl.col("_base"),
            ).with_columns(_differs=pl.lit(",".join(differs))))
    if not parts:
        return pl.DataFrame(), notes
    return pl.concat(parts, how="diagonal_relaxed"), notes


def _per_unit_tests(data, baseline, systems, metrics, groupings, tests, permutations, seed, unpaired):
    """Per (system, grouping, slice, metric, subset): n_pairs, effect size, and the p-values of
    the per-unit tests; and notes."""
    if not metrics:
        return None, []
    differences, notes = _per_unit_differences(data, baseline, systems, metrics, unpaired)
    if differences.height == 0:
        return None, notes
    slice_keys = data.slice_keys
    results = []
    for grouping in groupings:
        keys = list(data.slices[grouping])
        usable = differences.filter(pl.all_horizontal([pl.col(k).is_not_null() for k in keys]) if keys else pl.lit(True))
        if any(k not in differences.columns for k in keys):
            continue
        differing = [k for k in keys if usable.filter(pl.col("_differs").str.contains(k, literal=True)).height]
        by = ["system", *keys, "metric", "subset"]
        stats = paired_statistics(usable, by)
        if "randomization" in tests:
            stats = stats.join(_randomization(usable, data, by, keys, permutations, seed), on=by, how="left", nulls_equal=True, maintain_order="left")
        why = f"slice key {', '.join(differing)} differs between the systems for some units: no test" if differing else None
        stats = stats.with_columns(
            *(pl.lit(None, dtype=data.summary.schema.get(k, pl.String)).alias(k) for k in slice_keys if k not in keys),
            grouping=pl.lit(grouping),
            note_tests=pl.lit(why, dtype=pl.String),
        )
        if differing:
            stats = stats.with_columns(*(pl.lit(None, dtype=pl.Float64).alias(c) for c in ("p_t", "p_wilcoxon", "p_randomization")))
        results.append(stats)
    if not results:
        return None, notes
    table = pl.concat(results, how="diagonal_relaxed")
    for test in ("t", "wilcoxon"):
        if test not in tests:
            table = table.with_columns(pl.lit(None, dtype=pl.Float64).alias(f"p_{test}"))
    columns = ["system", "grouping", *slice_keys, "metric", "subset", "n_pairs", "effect_size", "p_t", "p_wilcoxon", "note_tests"]
    if "randomization" in tests:
        columns += ["p_randomization", "randomization_exact"]
    return table.select(columns), notes


def _randomization(usable: pl.DataFrame, data, by: list[str], keys: list[str], permutations: int, seed: int) -> pl.DataFrame:
    """Sign-flip p-values of every (system, slice, metric, subset) of one grouping: per unit kind,
    one sign-flip matrix shared by every system, slice and metric
    (:func:`~evalframe.stats.paired_tests.shared_sign_flip_pvalues`)."""
    from evalframe._progress import Progress

    out = []
    unit_kinds = usable.get_column("unit").unique(maintain_order=True).to_list()
    with Progress(permutations * len(unit_kinds), "permutations") as progress:
        for unit in unit_kinds:
            part = usable.filter(pl.col("unit") == unit)
            unit_keys = list(data.unit_keys.get(unit, ("query_id",)))
            hashes, index = np.unique(unit_hashes(part.select(unit_keys)), return_inverse=True)
            columns = part.select("system", *keys, "metric", "subset").unique(maintain_order=True).with_row_index("_column")
            part = part.join(columns, on=["system", *keys, "metric", "subset"], how="left", nulls_equal=True, maintain_order="left")
            part = part.with_columns(_unit=pl.Series(index, dtype=pl.Int64))
            slice_of = columns.select(*keys).unique(maintain_order=True).with_row_index("_slice") if keys else None
            if slice_of is not None:
                part = part.join(slice_of, on=keys, how="left", nulls_equal=True, maintain_order="left")
                columns = columns.join(slice_of, on=keys, how="left", nulls_equal=True, maintain_order="left")
            else:
                part, columns = part.with_columns(_slice=pl.lit(0, dtype=pl.UInt32)), columns.with_columns(_slice=pl.lit(0, dtype=pl.UInt32))
            blocks, placed = [], []
            for (_slice,), rows in part.group_by(["_slice"], maintain_order=True):
                units, local = np.unique(rows.get_column("_unit").to_numpy(), return_inverse=True)
                ids, position = np.unique(rows.get_column("_column").to_numpy(), return_inverse=True)
                matrix = np.full((units.size, ids.size), np.nan)
                matrix[local, position] = rows.get_column("d").cast(pl.Float64).fill_null(np.nan).to_numpy()
                blocks.append((units, matrix))
                placed.append(ids)
            found = shared_sign_flip_pvalues(hashes, blocks, permutations=permutations, seed=seed, progress=progress)
            p = np.full(columns.height, np.nan)
            exact = np.zeros(columns.height, dtype=bool)
            for ids, (values, is_exact) in zip(placed, found, strict=True):
                p[ids], exact[ids] = values, is_exact
            out.append(columns.sort("_column").with_columns(
                p_randomization=pl.Series(p).fill_nan(None), randomization_exact=pl.Series(exact)))
    if not out:
        return pl.DataFrame(schema={**{c: usable.schema[c] for c in by}, "p_randomization": pl.Float64, "randomization_exact": pl.Boolean})
    table = pl.concat(out, how="vertical_relaxed")
    return table.select(*by, "p_randomization", "randomization_exact")


# --- set metrics ---------------------------------------------------------------------------------


def values_under(metric, frame: pl.DataFrame, weights: np.ndarray) -> np.ndarray:
    """The metric's value on ``frame`` under each weight column of ``weights`` (rows × R).

    Uses the metric's own vectorised ``values_under`` when it has one; otherwise recomputes the
    metric through its mergeable state on R stacked copies of the rows, the replicate number
    as a slice key (one state computation, no Python loop over replicates).
    """
    if hasattr(metric, "values_under"):
        return np.asarray(metric.values_under(frame, weights), dtype=np.float64)
    return stacked_values([metric], frame, weights)[metric.name]


def stacked_values(metrics: list, frame: pl.DataFrame, weights: np.ndarray, by: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Values of metrics sharing one state on ``frame`` under every weight column, per slice of ``by``:
    ``{name: array (R,)}`` without ``by``, else ``{name: array (slices, R)}`` in sorted slice order."""
    rows, replicates = weights.shape
    index = np.tile(np.arange(rows), replicates)
    replicate = np.repeat(np.arange(replicates), rows)
    needed = {c for m in metrics for c in m.required_columns.get("queries", ())} | set(by) | set(getattr(metrics[0], "unit_keys", ()))
    frame = frame.select([c for c in frame.columns if c in needed])
    stacked = frame[index].with_columns(
        _weight=pl.Series(weights.T.reshape(-1), dtype=pl.Float64), _rep=pl.Series(replicate, dtype=pl.Int64)
    )
    keys = [*by, "_rep"]
    state = metrics[0].state(stacked.lazy(), keys).collect(engine="in-memory").lazy()
    found = {}
    for metric in metrics:
        result = metric.finalize(state, keys).collect(engine="in-memory").sort(keys, nulls_last=True)
        values = result.get_column("value").cast(pl.Float64).fill_null(np.nan).to_numpy()
        found[metric.name] = values.reshape(-1, replicates) if by else values
    return found


def set_metric_pvalues(data, baseline: str, systems: list[str], metrics: list[str], groupings: list[str], *,
                       permutations: int, set_permutations: int | None, seed: int) -> pl.DataFrame | None:
    """Randomization p-values of set metrics: each unit's rows of the two systems are swapped
    with probability 1/2 (the same counter-based bits as the sign flips), the metric recomputed
    on both sides, ``T* = value(side 1) − value(side 2)`` against the observed delta. Exact
    enumeration when ``2^n ≤ permutations`` (n: units of the slice).

    A metric with a vectorised ``values_under(frame, weights)`` runs ``set_permutations``
    (default ``permutations``) permutations. One without it is recomputed through its state
    on stacked copies of the rows (:func:`stacked_values`), which costs a state computation
    over rows × permutations: only when ``set_permutations`` is given; otherwise its p-value is
    null and the note says why.
    """
    folder = data.source != "evaluation"
    if folder and set_permutations is None and not any(_has_values_under(name) for name in metrics):
        return _skipped_rows(data, systems, metrics, groupings)  # nothing to run: do not re-read the input
    try:
        queries, plan = data.rows()
    except InputError as error:
        return _skipped_rows(data, systems, metrics, groupings, str(error).splitlines()[-1].strip())
    objects = {m.name: m for g in plan.groups for m in g.metrics}
    skipped = [name for name in metrics if not hasattr(objects.get(name), "values_under")] if set_permutations is None else []
    metrics = [name for name in metrics if name not in skipped]
    out = [_skipped_rows(data, systems, skipped, groupings)] if skipped else []
    if not metrics:
        return pl.concat(out, how="diagonal_relaxed")
    permutations = set_permutations or permutations
    groups = [(group, [m for m in group.metrics if m.name in metrics]) for group in plan.groups]
    unit_keys_of = {name: list(keys) for name, keys in data.unit_keys.items()}
    for group, chosen in groups:
        if not chosen:
            continue
        inside = queries.filter(group.subset.condition())
        subset_text = group.subset.description if group.subset.where else None
        by_state: dict[object, list] = {}
        for metric in chosen:
            by_state.setdefault(metric.state_id, []).append(metric)
        for shared in by_state.values():
            unit_keys = unit_keys_of.get(shared[0].unit, ["query_id"])
            for system in systems:
                frame = _two_system_frame(inside, system, baseline, unit_keys)
                for grouping in groupings:
                    keys = list(plan.slices[grouping])
                    if shared[0].unit != "query" and any(k not in _constant_keys(frame, unit_keys, keys) for k in keys):
                        continue  # the slice does not group whole units of this metric (the summary has no row either)
                    out.extend(_set_slices(shared, frame, unit_keys, keys, grouping, system, subset_text, permutations, seed))
    if not out:
        return None
    table = pl.concat(out, how="diagonal_relaxed")
    return table.with_columns(
        pl.col(k).cast(data.summary.schema[k]) if k in table.columns else pl.lit(None, dtype=data.summary.schema[k]).alias(k)
        for k in data.slice_keys
    )


NO_VALUES_UNDER = (
    "no randomization test: this set metric has no vectorised values_under; pass set_permutations=N "
    "(`set_permutations:`) to recompute it per permutation (slow)"
)


def _has_values_under(name: str) -> bool:
    """Whether the registered metric ``name`` may compute its values under many weight vectors at
    once (a user's own metric class that the registry cannot parse: maybe, look at the plan)."""
    from evalframe.metrics.registry import resolve

    try:
        return hasattr(resolve(name), "values_under")
    except ConfigError:
        return True


def _skipped_rows(data, systems: list[str], metrics: list[str], groupings: list[str], reason: str = NO_VALUES_UNDER) -> pl.DataFrame:
    """Rows of set metrics without a randomization p-value, with the reason in the note."""
    rows = data.summary.filter(pl.col("metric").is_in(metrics) & pl.col("system").is_in(systems) & pl.col("grouping").is_in(groupings))
    return rows.select("system", "grouping", *data.slice_keys, "metric", "subset").with_columns(
        p_randomization=pl.lit(None, dtype=pl.Float64), randomization_exact=pl.lit(None, dtype=pl.Boolean),
        note_tests=pl.lit(reason, dtype=pl.String),
    )


def _constant_keys(frame: pl.DataFrame, unit_keys: list[str], keys: list[str]) -> list[str]:
    if not keys:
        return []
    spread = frame.group_by(["_unit"]).agg(pl.col(k).n_unique() for k in keys)
    return [k for k in keys if spread.get_column(k).max() <= 1]


def _two_system_frame(inside: pl.DataFrame, system: str, baseline: str, unit_keys: list[str]) -> pl.DataFrame:
    """Rows of both systems; ``_side`` True for the system's rows; ``_unit`` the unit's key
    hash (system-free, so both systems' rows of a unit share it); unit key columns made
    system-distinct so that metrics that count units count each system's unit apart."""
    frame = inside.filter(pl.col("system").is_in([system, baseline])).with_columns(_side=pl.col("system") == system)
    hashes = unit_hashes(frame.select(unit_keys))
    frame = frame.with_columns(_unit=pl.Series(hashes, dtype=pl.UInt64))
    return frame.with_columns(
        pl.concat_str([pl.col(k).cast(pl.String), pl.col("system")], separator=_SYSTEM_SEPARATOR).alias(k) for k in unit_keys if k != "query_id"
    )


def _set_slices(metrics, frame, unit_keys, keys, grouping, system, subset_text, permutations, seed) -> list[pl.DataFrame]:
    """Observed deltas and permutation p-values of metrics sharing a state, per slice of ``keys``."""
    results = []
    cap = permutations
    slices = frame.group_by(keys, maintain_order=True) if keys else [((), frame)]
    for slice_values, rows in slices:
        units, unit_index = np.unique(rows.get_column("_unit").to_numpy(), return_inverse=True)
        side = rows.get_column("_side").to_numpy()
        user = rows.get_column("_weight").to_numpy() if "_weight" in rows.columns else np.ones(rows.height)
        n = units.size
        exact = bool(_enumerable(n, cap))
        observed = _side_values(metrics, rows, np.ones((n, 1), dtype=bool), unit_index, side, user)
        extreme = {m.name: 0 for m in metrics}
        total = 2**n if exact else cap
        block = max(1, _STACK_CELLS // max(1, 2 * rows.height))
        for start in range(0, total, block):
            count = min(block, total - start)
            bits = enumeration_bits(n)[:, start:start + count] if exact else permutation_bits(units, seed, start, count)
            values = _side_values(metrics, rows, bits, unit_index, side, user)
            for m in metrics:
                extreme[m.name] += int(_as_extreme(values[m.name], observed[m.name][0]).sum())
        note = None if hasattr(metrics[0], "values_under") else f"set metric recomputed on stacked rows, {cap:,} permutations"
        for m in metrics:
            delta = observed[m.name][0]
            p = np.nan if np.isnan(delta) else (extreme[m.name] / total if exact else (1 + extreme[m.name]) / (1 + total))
            results.append(pl.DataFrame({
                "system": [system], "grouping": [grouping], "metric": [m.name], "subset": [subset_text or m.subset],
                "p_randomization": [None if np.isnan(p) else float(p)], "randomization_exact": [bool(exact)],
                "note_tests": [note],
            }, schema={"system": pl.String, "grouping": pl.String, "metric": pl.String, "subset": pl.String,
                       "p_randomization": pl.Float64, "randomization_exact": pl.Boolean, "note_tests": pl.String}).with_columns(
                *(pl.lit(v, dtype=rows.schema[k]).alias(k) for k, v in zip(keys, slice_values, strict=True))
            ))
    return results


def _side_values(metrics, rows: pl.DataFrame, bits: np.ndarray, unit_index: np.ndarray, side: np.ndarray, user: np.ndarray) -> dict[str, np.ndarray]:
    """``value(side 1) − value(side 2)`` per permutation: bit True keeps the unit's rows where
    they are (system rows on side 1), False swaps them."""
    keep = bits[unit_index]                                   # rows × R
    on_first = np.where(side[:, None], keep, ~keep)           # the row is on side 1
    first = on_first * user[:, None]
    second = (~on_first) * user[:, None]
    if hasattr(metrics[0], "values_under"):
        # the user's weights are already in the matrices: the frame's own weight column is 1
        plain = rows.with_columns(pl.lit(1.0, dtype=pl.Float64).alias("_weight"))
        return {m.name: values_under(m, plain, first) - values_under(m, plain, second) for m in metrics}
    both = np.concatenate([first, second], axis=1)
    values = stacked_values(metrics, rows, both.astype(np.float64))
    replicates = first.shape[1]
    return {name: v[:replicates] - v[replicates:] for name, v in values.items()}


# --- the delta's paired bootstrap interval ------------------------------------------------------------


def _width(replicates) -> int | None:
    """The number of bootstrap replicates R (None without replicates)."""
    if replicates is None or "values" not in replicates.columns or replicates.height == 0:
        return None
    values = replicates.get_column("values")
    return values.dtype.size if values.dtype.base_type() is pl.Array else int(values.list.len().max() or 0)


def _quietly(function, *args):
    """``function(*args)`` without progress bars (it runs on a helper thread beside the main one's)."""
    from evalframe._progress import quiet_here

    with quiet_here():
        return function(*args)


def _replicates(data, groupings: list[str]) -> tuple[pl.DataFrame | None, str | None]:
    """The run's bootstrap replicates: kept (``replicates.parquet``, ``Evaluation.replicates``), or
    recomputed for ``groupings`` from the run's input when the folder does not keep them (the
    weights depend only on the unit keys and the seed, so they are the run's own); None when no
    bootstrap ran or the input cannot be re-read or run again, with the reason in the second place
    (the error's text: a missing input, or a pipeline part that needs what this process lacks)."""
    if data.replicates is not None:
        return data.replicates, None
    recompute = getattr(data, "recompute_replicates", None)
    if recompute is None:
        return None, None
    try:
        return recompute(list(groupings)), None
    except EvalframeError as error:  # a note on the set metrics, as before they could be re-run
        problems = getattr(error, "problems", None) or []
        return None, "; ".join(problem.message for problem in problems) or str(error).splitlines()[-1].strip()


def _bootstrap_pvalues(rows: pl.DataFrame, data, baseline: str, replicates, metrics: list[str], keys: list[str],
                       deltas: tuple[np.ndarray, np.ndarray] | None = None, *, unavailable: str | None = None) -> pl.DataFrame:
    """``p_bootstrap`` of the set metrics' rows: with ``δ*`` the paired replicate deltas (system −
    baseline, same unit counts), ``p = min(1, 2·min(1 + #{δ* ≤ 0}, 1 + #{δ* ≥ 0}) / (R + 1))``
    over the R defined replicates (the percentile interval inverted; never below 2/(R+1)). Without
    replicates the rows' note says why: ``unavailable`` (the replicates could not be recomputed
    from the run's input) or the result has none."""
    is_set = pl.col("metric").is_in(metrics)
    if replicates is None or "values" not in replicates.columns:
        why = (f"no bootstrap replicates ({unavailable}): no test" if unavailable else
               "no bootstrap replicates in the result (run without --no-bootstrap, or keep replicates.parquet): no test")
        return rows.with_columns(p_bootstrap=pl.lit(None, dtype=pl.Float64),
                                 note_tests=pl.when(is_set).then(pl.lit(why)).otherwise(pl.col("note_tests")) if "note_tests" in rows.columns
                                 else pl.when(is_set).then(pl.lit(why)))
    deltas, present = _deltas_of(rows, replicates, baseline, data.slice_keys, deltas)
    p = np.full(rows.height, np.nan)
    chosen = present & rows.select(is_set).to_series().to_numpy()
    if chosen.any():
        d = deltas[chosen]
        defined = ~np.isnan(d)
        count = defined.sum(axis=1)
        below = (np.where(defined, d, 1.0) <= 0).sum(axis=1)
        above = (np.where(defined, d, -1.0) >= 0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            found = np.minimum(1.0, 2.0 * np.minimum(1 + below, 1 + above) / (count + 1.0))
        p[chosen] = np.where(count > 0, found, np.nan)
    return rows.with_columns(p_bootstrap=pl.Series(p).fill_nan(None))


def _deltas_of(rows: pl.DataFrame, replicates: pl.DataFrame, baseline: str, slice_keys: list[str],
               found: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
    """``found`` (the deltas of the same rows, computed once) when it has a row per row, else
    :func:`_replicate_deltas`."""
    if found is not None and found[1].size == rows.height:
        return found
    return _replicate_deltas(rows, replicates, baseline, slice_keys)


def _replicate_deltas(rows: pl.DataFrame, replicates: pl.DataFrame, baseline: str, slice_keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``rows``: its replicate values minus the baseline's (rows × R), and whether both exist."""
    join = [k for k in ["grouping", *slice_keys, "metric", "unit", "subset"] if k in replicates.columns and k in rows.columns]
    base = replicates.filter(pl.col("system") == baseline).select(*join, _base=pl.col("values"))
    own = rows.select("system", *join).with_row_index("_row").join(
        replicates.select("system", *join, "values"), on=["system", *join], how="left", nulls_equal=True
    ).join(base, on=join, how="left", nulls_equal=True).unique("_row", keep="first").sort("_row")
    present = own.select(pl.col("values").is_not_null() & pl.col("_base").is_not_null()).to_series().to_numpy()
    values = replicates.get_column("values")
    width = values.dtype.size if values.dtype.base_type() is pl.Array else int(values.list.len().max() or 0)
    deltas = np.full((rows.height, width), np.nan)
    if present.any():
        chosen = own.filter(pl.Series(present))
        deltas[present] = _matrix(chosen.get_column("values"), width) - _matrix(chosen.get_column("_base"), width)
    return deltas, present


def _delta_intervals(rows: pl.DataFrame, data, baseline: str, confidence: float, keys: list[str], replicates=None,
                     deltas: tuple[np.ndarray, np.ndarray] | None = None) -> pl.DataFrame:
    """``delta_ci_low``/``delta_ci_high`` from the bootstrap replicates (Interface: a ``values``
    column of R replicate values per summary row), null without replicates."""
    if replicates is None or "values" not in replicates.columns:
        return rows.with_columns(delta_ci_low=pl.lit(None, dtype=pl.Float64), delta_ci_high=pl.lit(None, dtype=pl.Float64))
    deltas, present = _deltas_of(rows, replicates, baseline, data.slice_keys, deltas)
    low = np.full(rows.height, np.nan)
    high = np.full(rows.height, np.nan)
    if present.any():
        # The engine's own interval rule (percentile, linear interpolation, defined replicates only).
        delta = rows.get_column("delta").cast(pl.Float64).fill_null(np.nan).to_numpy()[present]
        found = intervals(deltas[present], delta, confidence)
        low[present], high[present] = found.low, found.high
    return rows.with_columns(delta_ci_low=pl.Series(low).fill_nan(None), delta_ci_high=pl.Series(high).fill_nan(None))


def _matrix(values: pl.Series, width: int) -> np.ndarray:
    """A list (or array) column of equal-length replicate values as a float matrix (nulls NaN)."""
    if values.dtype.base_type() is pl.Array:
        values = values.arr.to_list()
    flat = values.explode().cast(pl.Float64).fill_null(np.nan).to_numpy()
    return flat.reshape(-1, width)
