"""Power and sample size of a metric comparison (004 §21.5.1; issue 11, part 3).

With ``z = z_{1−α/2} + z_{power}`` (standard normal quantiles; two-sided test at level α):

- **two samples** (two independent groups of units, e.g. an A/B test on different traffic), the
  seed's formula: ``n per group = 2 z² σ² / δ²`` and, at ``n`` per group, ``MDE = z σ √(2/n)``;
- **paired** (both systems on the same units, as in an offline IR comparison):
  ``n = (z σ_d / δ)²`` and ``MDE = z σ_d / √n``, where ``σ_d`` is the standard deviation of the
  per-unit differences. Pairing removes the between-unit variance that both systems share, so
  σ_d is usually far smaller than σ √2, and so is the sample needed.

``δ`` is the absolute change to detect; a relative change ``r`` of a baseline value ``v`` is
``δ = r·v`` (the seed's ``minimum_detectable_effect`` divides by ``v`` to report it). Sample sizes
are rounded up. These are normal approximations (as the seed's); statsmodels'
``NormalIndPower`` and ``TTestPower`` (for large n) agree with them (tested).

The plain functions take σ directly (:func:`two_sample_size`, :func:`paired_sample_size`,
:func:`two_sample_mde`, :func:`paired_mde`, :func:`bernoulli_variance`; the seed's own two
functions are :func:`sample_size_for_metric_change` and :func:`relative_mde`). The result
functions read σ or σ_d from an evaluation's per-unit values (:func:`sample_size`,
:func:`minimum_detectable_effect`, :func:`power_table`); set metrics (AUROC, ECE, …) have no
per-unit values, hence no σ, and are refused with that reason.

>>> sample_size_for_metric_change(0.15, 0.01, bernoulli_variance(0.15))   # the seed's CTR example
889540
>>> round(relative_mde(1000, 0.15, bernoulli_variance(0.15)), 3)
0.298
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import special

from evalframe.errors import ConfigError

if TYPE_CHECKING:
    from evalframe.results.data import ResultData


def _check_levels(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"`alpha` must be in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ConfigError(f"`power` must be in (0, 1), got {power!r}")


def z_total(alpha: float = 0.05, power: float = 0.8) -> float:
    """``z_{1−α/2} + z_{power}`` (two-sided level α)."""
    _check_levels(alpha, power)
    return float(special.ndtri(1.0 - alpha / 2.0) + special.ndtri(power))


def _ceil(n):
    n = np.ceil(np.asarray(n, dtype=np.float64) - 1e-9)  # 35582.0000000001 is 35582 samples, not 35583
    return int(n) if n.ndim == 0 else n.astype(np.int64)


def two_sample_size(sigma, delta, *, alpha: float = 0.05, power: float = 0.8):
    """Units per group to detect an absolute change ``delta``: ``⌈2 z² σ² / δ²⌉`` (module docstring)."""
    z = z_total(alpha, power)
    return _ceil(2.0 * z**2 * np.square(sigma) / np.square(delta))


def paired_sample_size(sigma_d, delta, *, alpha: float = 0.05, power: float = 0.8):
    """Pairs to detect an absolute mean difference ``delta``: ``⌈(z σ_d / δ)²⌉``."""
    z = z_total(alpha, power)
    return _ceil(np.square(z * np.asarray(sigma_d, dtype=np.float64) / delta))


def two_sample_mde(sigma, n, *, alpha: float = 0.05, power: float = 0.8):
    """Smallest absolute change detectable with ``n`` units per group: ``z σ √(2/n)``."""
    return z_total(alpha, power) * np.asarray(sigma, dtype=np.float64) * np.sqrt(2.0 / np.asarray(n, dtype=np.float64))


def paired_mde(sigma_d, n, *, alpha: float = 0.05, power: float = 0.8):
    """Smallest absolute mean difference detectable with ``n`` pairs: ``z σ_d / √n``."""
    return z_total(alpha, power) * np.asarray(sigma_d, dtype=np.float64) / np.sqrt(np.asarray(n, dtype=np.float64))


def bernoulli_variance(p):
    """``p (1 − p)``: the variance of a 0/1 metric (a rate such as CTR or hit rate) with mean p."""
    p = np.asarray(p, dtype=np.float64)
    return p * (1.0 - p)


def sample_size_for_metric_change(baseline: float, relative_change: float, variance: float, *, alpha: float = 0.05,
                                  power: float = 0.8) -> int:
    """The seed's function: units per group to detect a relative change of ``baseline``."""
    return two_sample_size(np.sqrt(variance), baseline * relative_change, alpha=alpha, power=power)


def relative_mde(n: int, baseline: float, variance: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The seed's ``minimum_detectable_effect``: the detectable change at ``n`` per group, relative to ``baseline``."""
    return float(two_sample_mde(np.sqrt(variance), n, alpha=alpha, power=power) / baseline)


# --- from an evaluation's per-unit values --------------------------------------------------------


def result_data(source) -> ResultData:
    """:class:`~evalframe.results.data.ResultData` of an Evaluation, a result folder (its path or
    :class:`~evalframe.results.reader.ResultFolder`), or itself."""
    from evalframe.results.data import ResultData, from_evaluation
    from evalframe.results.reader import ResultFolder, read_result

    if isinstance(source, ResultData):
        return source
    if isinstance(source, (str, Path)):
        return read_result(source).data()
    if isinstance(source, ResultFolder):
        return source.data()
    return from_evaluation(source)


def metric_values(data: ResultData, metric: str, subset: str | None = None) -> pl.DataFrame:
    """The per-unit values of one metric: ``system``, the unit's keys, ``value`` (non-null)."""
    data.check_metric(metric)
    if data.levels.get(metric) == "set":
        raise ConfigError(
            f"`{metric}` is a set-level metric: it has no per-unit values, so no per-unit variance; power "
            "analysis needs a per-unit metric (a bootstrap standard error of a set metric is not a σ per unit)"
        )
    rows = data.values.filter(pl.col("metric") == metric)
    subsets = rows.get_column("subset").unique().drop_nulls().to_list() if "subset" in rows.columns else []
    if subset is not None:
        rows = rows.filter(pl.col("subset") == subset)
    elif len(subsets) > 1:
        raise ConfigError(f"`{metric}` is computed on several subsets ({', '.join(sorted(subsets))}); pass `subset=`")
    if rows.height == 0:
        raise ConfigError(f"the result has no per-unit values of `{metric}` (per_query.parquet / per_unit.parquet)")
    unit = rows.get_column("unit").first()
    keys = ["system", *data.unit_keys.get(unit, ("query_id",))]
    return rows.filter(pl.col("value").is_not_null() & pl.col("value").is_not_nan()).select(*keys, "value")


def _spreads(data: ResultData, metric: str, paired_with: str | None, system: str | None, subset: str | None) -> pl.DataFrame:
    """Per system: ``value`` (mean), ``sigma`` and ``n`` — of the values, or of the differences
    against ``paired_with`` (``baseline`` is then its mean, ``value`` the system's)."""
    values = metric_values(data, metric, subset)
    keys = [c for c in values.columns if c not in ("system", "value")]
    systems = [system] if system is not None else data.systems
    for name in systems:
        data.check_system(name)
    if paired_with is None:
        return (
            values.filter(pl.col("system").is_in(systems))
            .group_by("system").agg(baseline=pl.col("value").mean(), sigma=pl.col("value").std(), n=pl.len().cast(pl.Int64))
            .with_columns(paired_with=pl.lit(None, dtype=pl.String), design=pl.lit("two-sample"))
            .sort("system")
        )
    data.check_system(paired_with, "paired_with system")
    base = values.filter(pl.col("system") == paired_with).drop("system").rename({"value": "_base"})
    others = values.filter(pl.col("system").is_in([s for s in systems if s != paired_with]))
    if others.height == 0:
        raise ConfigError(f"no system to pair with `{paired_with}` (systems: {', '.join(data.systems)})")
    return (
        others.join(base, on=keys, how="inner")
        .group_by("system").agg(
            baseline=pl.col("_base").mean(), sigma=(pl.col("value") - pl.col("_base")).std(), n=pl.len().cast(pl.Int64)
        )
        .with_columns(paired_with=pl.lit(paired_with), design=pl.lit("paired"))
        .sort("system")
    )


def _absolute(mde: np.ndarray, baseline: np.ndarray, relative: bool) -> np.ndarray:
    return mde * np.abs(baseline) if relative else mde


def power_table(source, *, metric: str, mde: float | Sequence[float], paired_with: str | None = None,
                system: str | None = None, alpha: float = 0.05, power: float = 0.8, relative: bool = False,
                subset: str | None = None) -> pl.DataFrame:
    """Sample size for each ``mde`` and the MDE at the current n, per system (module docstring).

    One row per (system, mde): ``system, paired_with, design, metric, baseline`` (the mean the
    relative change refers to: the system's own mean, or ``paired_with``'s), ``sigma`` (σ, or σ_d
    of paired differences), ``n`` (units, or pairs, now), ``mde`` and ``mde_relative``,
    ``n_required`` (per group for two samples, pairs when paired), ``mde_at_n`` and
    ``mde_at_n_relative`` (what ``n`` units can detect), ``alpha``, ``power``.
    """
    _check_levels(alpha, power)
    data = result_data(source)
    spreads = _spreads(data, metric, paired_with, system, subset)
    mdes = np.atleast_1d(np.asarray(mde, dtype=np.float64))
    if np.any(mdes <= 0):
        raise ConfigError(f"`mde` must be > 0, got {mde!r}")
    table = spreads.join(pl.DataFrame({"_mde": mdes}), how="cross")
    baseline = table.get_column("baseline").to_numpy()
    sigma = table.get_column("sigma").fill_null(np.nan).to_numpy()
    n = table.get_column("n").to_numpy()
    paired = table.get_column("design").to_numpy() == "paired"
    delta = _absolute(table.get_column("_mde").to_numpy(), baseline, relative)
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = np.where(paired, np.square(z_total(alpha, power) * sigma / delta), 2.0 * z_total(alpha, power) ** 2 * np.square(sigma / delta))
        at_n = np.where(paired, paired_mde(sigma, n, alpha=alpha, power=power), two_sample_mde(sigma, n, alpha=alpha, power=power))
        relative_of = lambda x: np.where(baseline != 0, x / np.abs(baseline), np.nan)
        needed_int = np.where(np.isfinite(needed), np.ceil(needed - 1e-9), np.nan)
    return table.select(
        "system", "paired_with", "design", pl.lit(metric).alias("metric"), "baseline", "sigma", "n",
        pl.Series("mde", delta), pl.Series("mde_relative", relative_of(delta)).fill_nan(None),
        pl.Series("n_required", needed_int).fill_nan(None).cast(pl.Int64),
        pl.Series("mde_at_n", at_n).fill_nan(None), pl.Series("mde_at_n_relative", relative_of(at_n)).fill_nan(None),
        pl.lit(alpha).alias("alpha"), pl.lit(power).alias("power"),
    )


def sample_size(source, *, metric: str, mde: float | Sequence[float], paired_with: str | None = None,
                system: str | None = None, alpha: float = 0.05, power: float = 0.8, relative: bool = False,
                subset: str | None = None) -> pl.DataFrame:
    """Units needed to detect ``mde`` (absolute, or relative to the baseline with ``relative=True``)
    on ``metric``, per system: :func:`power_table`'s rows.

    ``source`` is an :class:`~evalframe.engine.result.Evaluation` or a result folder. Without
    ``paired_with`` the seed's two-sample formula with the system's per-unit σ; with it the
    paired formula with σ_d of the per-unit differences against that system.

    >>> ef.sample_size(ev, metric="recall@5", mde=0.03, paired_with="retriever_only")  # doctest: +SKIP
    """
    return power_table(source, metric=metric, mde=mde, paired_with=paired_with, system=system, alpha=alpha,
                       power=power, relative=relative, subset=subset)


def minimum_detectable_effect(source, *, metric: str, n: int | Sequence[int] | None = None, paired_with: str | None = None,
                              system: str | None = None, alpha: float = 0.05, power: float = 0.8,
                              subset: str | None = None) -> pl.DataFrame:
    """The smallest change of ``metric`` detectable with ``n`` units (default: the current n), per
    system: ``system, paired_with, design, metric, baseline, sigma, n, mde, mde_relative``."""
    _check_levels(alpha, power)
    data = result_data(source)
    spreads = _spreads(data, metric, paired_with, system, subset)
    if n is not None:
        sizes = np.atleast_1d(np.asarray(n, dtype=np.int64))
        if np.any(sizes < 1):
            raise ConfigError(f"`n` must be >= 1, got {n!r}")
        spreads = spreads.drop("n").join(pl.DataFrame({"n": sizes}), how="cross")
    sigma = spreads.get_column("sigma").fill_null(np.nan).to_numpy()
    sizes = spreads.get_column("n").to_numpy()
    paired = spreads.get_column("design").to_numpy() == "paired"
    mde = np.where(paired, paired_mde(sigma, sizes, alpha=alpha, power=power), two_sample_mde(sigma, sizes, alpha=alpha, power=power))
    baseline = spreads.get_column("baseline").to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(baseline != 0, mde / np.abs(baseline), np.nan)
    return spreads.select(
        "system", "paired_with", "design", pl.lit(metric).alias("metric"), "baseline", "sigma", "n",
        pl.Series("mde", mde).fill_nan(None), pl.Series("mde_relative", relative).fill_nan(None),
    )
