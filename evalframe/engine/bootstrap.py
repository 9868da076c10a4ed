"""Bootstrap confidence intervals (DESIGN §3 "uncertainty"): settings, replicate weights, intervals.

A **replicate** is a weight vector over the resampled units (DESIGN §2), never a copy of the
table: unit ``u`` is drawn ``c(u, r)`` times in replicate ``r``, a Poisson(1) count from
:func:`evalframe.engine.replicates.poisson_counts`, keyed by ``(seed, u's key values, r)``. So
the counts do not depend on row order, on how the data is split into parts, nor on the
system: two systems evaluated on the same units share their replicates, and the paired
difference of their replicate values is a paired bootstrap.

- **Which unit is resampled** (``unit``): by default each metric's own unit (a query for a
  query metric, a post for a post metric). With ``unit="post_id"`` (or a list of columns) every
  row is given the count of its ``post_id``: a cluster bootstrap, right when the queries of a
  post share one text and are not independent. A row's weight in a replicate is its count
  times its user weight (the plan's ``weight`` column).
- **Strata** (``strata="fold"``): each stratum keeps its size. Within stratum ``h`` with
  ``n_h`` resampled units (distinct unit keys found in the data), replicate ``r``'s counts are
  rescaled to ``w(u, r) = c(u, r) · n_h / Σ_{v ∈ h} c(v, r)`` so that every stratum's total
  weight is ``n_h`` in every replicate (a stratum none of whose units is drawn keeps weight 0
  and the replicate is counted as undefined where that matters). The stratum column must
  have one value per resampled unit.
- **Intervals.** ``percentile``: the ``(1 − confidence)/2`` and ``(1 + confidence)/2``
  quantiles of the defined replicate values (linear interpolation, NumPy's default, as
  ``scipy.stats.bootstrap``). ``bca`` (bias-corrected and accelerated, Efron 1987) for per-unit
  means: bias ``z0 = Φ⁻¹(#{θ*_r < θ̂} / R)``, acceleration
  ``a = Σ (θ̄ − θ_(i))³ / (6 (Σ (θ̄ − θ_(i))²)^{3/2})`` from the jackknife over the resampled
  units (``θ_(i)``: the slice's mean without unit ``i``), and the quantiles
  ``Φ(z0 + (z0 + z_α) / (1 − a (z0 + z_α)))``; set metrics keep the percentile interval.
  ``se`` is the standard deviation (ddof = 1) of the defined replicate values.
- **Undefined replicates** (a slice with no unit drawn, one class for AUROC, …) are left out
  of the interval and counted in the summary's ``note``; an interval needs at least two
  defined replicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.errors import ConfigError

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light

Method = Literal["percentile", "bca"]


@dataclass(frozen=True)
class Bootstrap:
    """Settings of the bootstrap stage (module docstring).

    ``resamples`` replicates (default 1000) at ``confidence`` (default 0.95), drawn from
    ``seed``; ``unit`` the column(s) whose values are resampled (None: each metric's own unit);
    ``method`` ``"percentile"`` or ``"bca"`` (per-unit means; set metrics stay percentile);
    ``strata`` a column whose strata keep their size in every replicate.

    >>> Bootstrap(resamples=2000, unit="post_id").unit_columns
    ('post_id',)
    """

    resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    unit: str | Sequence[str] | None = None
    method: Method = "percentile"
    strata: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int) or self.resamples < 2:
            raise ConfigError(f"bootstrap `resamples` must be a whole number >= 2, got {self.resamples!r}")
        confidence = self.confidence
        if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
            raise ConfigError(f"bootstrap `confidence` must be a number in (0, 1), got {confidence!r}")
        object.__setattr__(self, "confidence", float(confidence))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**64:
            raise ConfigError(f"bootstrap `seed` must be a whole number in [0, 2^64), got {self.seed!r}")
        if self.method not in ("percentile", "bca"):
            raise ConfigError(f"bootstrap `method` must be 'percentile' or 'bca', got {self.method!r}")
        unit = self.unit
        if unit is not None:
            columns = (unit,) if isinstance(unit, str) else tuple(unit)
            if not columns or not all(isinstance(c, str) and c for c in columns):
                raise ConfigError(f"bootstrap `unit` must be a column name or a non-empty list of them, got {unit!r}")
            object.__setattr__(self, "unit", columns[0] if len(columns) == 1 else columns)
        if self.strata is not None and (not isinstance(self.strata, str) or not self.strata):
            raise ConfigError(f"bootstrap `strata` must be a column name, got {self.strata!r}")

    @property
    def unit_columns(self) -> tuple[str, ...] | None:
        """The resampled unit's key columns, or None (each metric's own unit)."""
        if self.unit is None:
            return None
        return (self.unit,) if isinstance(self.unit, str) else tuple(self.unit)

    def describe(self) -> dict:
        """The settings as plain data (``run.json``)."""
        return {"resamples": self.resamples, "confidence": self.confidence, "seed": self.seed,
                "unit": list(self.unit_columns) if self.unit_columns else None, "method": self.method,
                "strata": self.strata}


def unit_weight_matrix(units: pl.DataFrame, settings: Bootstrap, strata: np.ndarray | None = None) -> np.ndarray:
    """Replicate weights of distinct units (rows of ``units``): ``(n_units, resamples)`` float64.

    The Poisson counts of :func:`~evalframe.engine.replicates.poisson_counts`; with ``strata``
    (one stratum code per unit) rescaled so that each stratum's total weight is its unit count
    in every replicate (module docstring).
    """
    from evalframe.engine.replicates import poisson_counts

    counts = poisson_counts(units, settings.resamples, settings.seed).astype(np.float64)
    if strata is None:
        return counts
    codes = np.unique(strata, return_inverse=True)[1].reshape(-1)
    sizes = np.bincount(codes).astype(np.float64)
    totals = np.zeros((sizes.size, counts.shape[1]))
    np.add.at(totals, codes, counts)
    scale = np.divide(sizes[:, None], totals, out=np.zeros_like(totals), where=totals > 0)
    return counts * scale[codes]


def stratum_scale(units: pl.DataFrame, codes: np.ndarray, settings: Bootstrap, block_cells: int) -> np.ndarray:
    """Per stratum and replicate, ``n_h / Σ_{v ∈ h} c(v, r)`` (0 where no unit of the stratum is
    drawn): the factor :func:`unit_weight_matrix` multiplies a unit's counts by, with the counts
    summed block by block of units (never the whole units × R matrix at once)."""
    from evalframe.engine.replicates import poisson_counts

    sizes = np.bincount(codes).astype(np.float64)
    totals = np.zeros((sizes.size, settings.resamples))
    block = max(1, block_cells // max(1, settings.resamples))
    for start in range(0, units.height, block):
        stop = min(units.height, start + block)
        np.add.at(totals, codes[start:stop], poisson_counts(units[start:stop], settings.resamples, settings.seed).astype(np.float64))
    return np.divide(sizes[:, None], totals, out=np.zeros_like(totals), where=totals > 0)


def weighted_means(numerators: np.ndarray, denominators: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-unit metrics under replicate weights: ``(Σ_i W[i, r] · s_i) / (Σ_i W[i, r] · d_i)``.

    ``numerators`` (units × metrics) holds each unit's ``weight · value`` (0 where the value is
    null), ``denominators`` its ``weight`` where the value is present (else 0), ``weights``
    (units × R) the replicate weights. Returns (metrics × R); nan where a replicate gives the
    slice no weight. Two matrix products, no loop over replicates.
    """
    return weighted_sums_and_means(numerators, denominators, weights)[1]


def weighted_sums_and_means(numerators: np.ndarray, denominators: np.ndarray,
                            weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Σ_i W[i, r] · s_i`` (the replicate totals, metrics × R) and :func:`weighted_means`,
    from the same two products (a count metric's replicates are its totals)."""
    num = numerators.T @ weights
    den = denominators.T @ weights
    return num, np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def jackknife_acceleration(numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """BCa's acceleration per metric from the leave-one-unit-out means (units × metrics in).

    ``θ_(i) = (N − s_i) / (D − d_i)`` with ``N, D`` the slice's totals; units whose removal
    leaves no weight are left out. ``a = Σ (θ̄ − θ_(i))³ / (6 (Σ (θ̄ − θ_(i))²)^{3/2})``; 0 when
    every ``θ_(i)`` is equal (no skew to correct).
    """
    total_num, total_den = numerators.sum(axis=0), denominators.sum(axis=0)
    rest = total_den[None, :] - denominators
    leave_out = np.divide(total_num[None, :] - numerators, rest, out=np.full(rest.shape, np.nan), where=rest > 0)
    defined = ~np.isnan(leave_out)
    count = defined.sum(axis=0)
    total = np.where(defined, leave_out, 0.0).sum(axis=0)
    mean = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    deviation = mean[None, :] - leave_out
    cubed = np.nansum(deviation**3, axis=0)
    squared = np.nansum(deviation**2, axis=0)
    return np.divide(cubed, 6.0 * squared**1.5, out=np.zeros_like(cubed), where=squared > 0)


@dataclass(frozen=True)
class Intervals:
    """Per summary row: ``se``, ``ci_low``, ``ci_high`` and the defined replicates ``n_valid``."""

    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_valid: np.ndarray


def _sorted_quantile(ordered: np.ndarray, n_valid: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolation quantile ``q`` (per row) of each row's first ``n_valid`` sorted values."""
    position = q * (n_valid - 1)
    lower = np.clip(np.floor(position).astype(np.int64), 0, np.maximum(n_valid - 1, 0))
    upper = np.clip(np.ceil(position).astype(np.int64), 0, np.maximum(n_valid - 1, 0))
    rows = np.arange(ordered.shape[0])
    at_lower, at_upper = ordered[rows, lower], ordered[rows, upper]
    return at_lower + (position - lower) * (at_upper - at_lower)


def intervals(replicates: np.ndarray, estimates: np.ndarray, confidence: float,
              acceleration: np.ndarray | None = None) -> Intervals:
    """Percentile (or, where ``acceleration`` is finite, BCa) intervals of each row of ``replicates``.

    ``replicates`` (rows × R) with nan for undefined replicates; ``estimates`` each row's
    value on the data (nan: no interval). Rows with fewer than two defined replicates get nan.
    Vectorised over rows: one sort, then per-row positions.
    """
    rows = replicates.shape[0]
    valid = ~np.isnan(replicates)
    n_valid = valid.sum(axis=1)
    alpha = (1.0 - confidence) / 2.0
    q_low, q_high = np.full(rows, alpha), np.full(rows, 1.0 - alpha)
    if acceleration is not None:
        from scipy.special import ndtr, ndtri  # imported where used

        bca = np.isfinite(acceleration) & (n_valid > 0) & np.isfinite(estimates)
        below = np.where(valid, replicates < estimates[:, None], False).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z0 = ndtri(below / np.maximum(n_valid, 1))
            for q, target in ((q_low, alpha), (q_high, 1.0 - alpha)):
                z = ndtri(target)
                adjusted = ndtr(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
                q[bca] = adjusted[bca]
        # z0 = ±inf (every replicate on one side) gives 0 or 1: the extreme replicate, as scipy.
        q_low[bca & np.isnan(q_low)] = alpha
        q_high[bca & np.isnan(q_high)] = 1.0 - alpha
    ordered = np.sort(replicates, axis=1)  # nan sorts last
    low = _sorted_quantile(ordered, n_valid, q_low)
    high = _sorted_quantile(ordered, n_valid, q_high)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(np.where(valid, replicates, 0.0), axis=1) / np.maximum(n_valid, 1)
        squares = np.where(valid, (replicates - mean[:, None]) ** 2, 0.0).sum(axis=1)
        se = np.sqrt(squares / (n_valid - 1))
    undefined = (n_valid < 2) | np.isnan(estimates)
    for array in (low, high, se):
        array[undefined] = np.nan
    return Intervals(se=se, low=low, high=high, n_valid=n_valid)
