"""Paired significance tests of two systems on the same units (issue 11, part 2).

Every test here reads the per-unit differences ``d_u = x_u − y_u`` (system minus baseline) of
the units both systems have a value for, and is two-sided:

- **paired randomization test** (sign flips, Fisher's): under the null hypothesis each unit's
  two values are exchangeable, so ``d_u`` is as likely as ``−d_u``. The statistic is
  ``T = Σ_u d_u`` (the mean difference times n); the p-value is the share of sign vectors
  ``s ∈ {−1, +1}^n`` with ``|Σ s_u d_u| ≥ |T|``. When ``2^n ≤ permutations`` every sign vector
  is enumerated (an exact p-value, the identity included); otherwise ``permutations`` random
  sign vectors give ``p = (1 + #{|T*| ≥ |T|}) / (1 + permutations)`` (never 0; Phipson &
  Smyth 2010). The signs are counter-based: the sign of unit ``u`` in permutation ``b`` is bit
  ``b mod 64`` of ``SplitMix64(h(u) ⊕ seed' + (⌊b/64⌋ + 1)·φ)`` with the unit-key hash ``h`` of
  :mod:`evalframe.engine.replicates`, so they depend only on (seed, unit key, permutation), not
  on row order (:func:`permutation_bits`). The statistic of a block of permutations is one matrix product (signs ×
  differences, all metrics of a slice at once); no Python loop runs over permutations.
  Differences closer to ``|T|`` than 1e-9 relative count as ties (≥), so float noise cannot
  make a tie look extreme; and a ``|T|`` within the rounding error of its sum
  (``|T| ≤ n·ε·Σ_u |d_u|``, ε the float64 epsilon) is 0, so its p-value is 1 whatever order the
  sum was taken in.
- **paired t-test**: ``t = mean(d) / (sd(d)/√n)`` (``sd`` with ddof = 1), ``n − 1`` degrees of
  freedom, ``p = 2·P(T_{n−1} ≥ |t|)`` — ``scipy.stats.ttest_rel``. Null when ``n < 2`` or every
  difference is 0.
- **Wilcoxon signed-rank test**: zero differences are dropped (``zero_method="wilcox"``),
  ``|d|`` ranked with ties averaged, ``W+ = Σ_{d>0} rank``; for more than 50 pairs the normal
  approximation with the tie correction ``z = (W+ − n'(n'+1)/4) / √((n'(n'+1)(2n'+1) − Σ(t³−t)/2)/24)``
  without continuity correction — ``scipy.stats.wilcoxon``'s default, computed here for all
  slices at once in Polars; for 50 pairs or fewer ``scipy.stats.wilcoxon`` itself (its exact
  distribution, or its permutation rule when ties or zeros occur), so small slices agree with
  it exactly. The statistic reported is ``min(W+, W−)`` (scipy's two-sided statistic).
- **effect size**: ``mean(d) / sd(d)`` (Cohen's d_z of paired differences; null when sd = 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl
from scipy import special

from evalframe.engine.replicates import _splitmix64, unit_hashes

#: Larger slices use the normal approximation of the Wilcoxon test (scipy's ``method="auto"`` rule).
WILCOXON_EXACT_MAX = 50
#: At most this many unit × permutation cells are drawn at once (bounds temporary memory).
_BLOCK_CELLS = 1 << 21
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Separates the sign stream from the bootstrap's Poisson stream at the same seed.
_SIGN_STREAM = np.uint64(0x5349474E464C4950)
#: |T*| ≥ |T| (1 − this) counts as at least as extreme.
_RELATIVE_TIE = 1e-9


def permutation_bits(hashes: np.ndarray, seed: int, first: int, count: int) -> np.ndarray:
    """Bits (``bool``, shape ``(len(hashes), count)``) of permutations ``first … first+count−1``:
    True keeps a unit's pair as it is, False swaps its two systems (flips the sign of ``d_u``).

    A pure function of (seed, unit hash, permutation number): permutation ``b`` of a unit is bit
    ``b mod 64`` of the word ``SplitMix64(h(u) ⊕ seed' + (⌊b/64⌋ + 1)·φ)`` (one word gives 64
    permutations, read least significant bit first).
    """
    if count <= 0:
        return np.zeros((hashes.size, 0), dtype=bool)
    first_word, end_word = first // 64, (first + count - 1) // 64 + 1
    with np.errstate(over="ignore"):
        seeded = hashes ^ _splitmix64(np.array([seed], dtype=np.uint64) ^ _SIGN_STREAM)
        numbers = np.arange(first_word + 1, end_word + 1, dtype=np.uint64) * _GOLDEN
        words = _splitmix64(seeded[:, None] + numbers[None, :])
    octets = np.ascontiguousarray(words.astype("<u8")).view(np.uint8).reshape(hashes.size, -1)
    bits = np.unpackbits(octets, axis=1, bitorder="little")
    offset = first - first_word * 64
    return bits[:, offset:offset + count].astype(bool)


def _enumerable(n, permutations: int):
    """Whether 2^n ≤ permutations (without overflowing for large n)."""
    n = np.asarray(n)
    return (n < 62) & (np.left_shift(1, np.minimum(n, 61).astype(np.int64)) <= permutations)


def enumeration_bits(n: int) -> np.ndarray:
    """Every one of the ``2^n`` keep/swap patterns of ``n`` units, shape ``(n, 2^n)``."""
    patterns = np.arange(2**n, dtype=np.uint64)
    return ((patterns[None, :] >> np.arange(n, dtype=np.uint64)[:, None]) & np.uint64(1)).astype(bool)


def _as_extreme(statistics: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Whether each |T*| is at least |T| (with the relative tie tolerance), per column."""
    threshold = np.abs(observed) * (1.0 - _RELATIVE_TIE) - 1e-300
    return np.abs(statistics) >= threshold


def _observed(filled: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``filled`` (units × columns, 0 where a unit has no pair): the statistic
    ``T = Σ_u d_u``, set to 0 when it is within the sum's rounding error ``n·ε·Σ_u |d_u|`` (a
    difference that is 0 in exact arithmetic, e.g. −1/3 + 1/3 in another order), and the pair
    count ``n``."""
    observed, counts = filled.sum(axis=0), present.sum(axis=0)
    rounding = counts * np.finfo(np.float64).eps * np.abs(filled).sum(axis=0)
    return np.where(np.abs(observed) <= rounding, 0.0, observed), counts


def sign_flip_pvalues(
    differences: np.ndarray, hashes: np.ndarray, *, permutations: int = 10_000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided sign-flip p-values of the columns of ``differences`` (units × metrics; NaN
    where a unit has no pair for that metric), and whether each was exact (module docstring).

    ``hashes`` are the units' key hashes (:func:`evalframe.engine.replicates.unit_hashes`).
    Returns ``(p, exact)``, each of length ``metrics``; a column without any pair has p NaN.
    """
    differences = np.asarray(differences, dtype=np.float64)
    if differences.ndim == 1:
        differences = differences[:, None]
    present = ~np.isnan(differences)
    filled = np.where(present, differences, 0.0)
    observed, counts = _observed(filled, present)
    p = np.full(differences.shape[1], np.nan)
    exact = _enumerable(counts, permutations)
    for column in np.nonzero(exact & (counts > 0))[0]:  # a loop over metrics of tiny slices, never permutations
        values = filled[present[:, column], column]
        signs = np.where(enumeration_bits(values.size), 1.0, -1.0)
        p[column] = _as_extreme(values @ signs, observed[column]).mean()
    sampled = np.nonzero(~exact & (counts > 0))[0]
    if sampled.size:
        matrix = filled[:, sampled]
        extreme = np.zeros(sampled.size, dtype=np.int64)
        block = max(1, _BLOCK_CELLS // max(1, matrix.shape[0]))
        transposed = np.ascontiguousarray(matrix.T)
        for start in range(0, permutations, block):
            count = min(block, permutations - start)
            kept = permutation_bits(hashes, seed, start, count).astype(np.float64)
            # Σ s_u d_u with s = ±1 is 2·Σ_{kept} d_u − Σ d_u: one matrix product, metrics × permutations
            statistics = 2.0 * (transposed @ kept) - observed[sampled][:, None]
            extreme += _as_extreme(statistics.T, observed[sampled]).sum(axis=0)
        p[sampled] = (1.0 + extreme) / (1.0 + permutations)
    return p, exact & (counts > 0)


def shared_sign_flip_pvalues(
    hashes: np.ndarray, blocks: Sequence[tuple[np.ndarray, np.ndarray]], *, permutations: int = 10_000, seed: int = 0,
    progress=None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`sign_flip_pvalues` of many slices that share their units' sign-flip matrix.

    ``hashes``: every unit's key hash; ``blocks``: per slice ``(rows, differences)``, ``rows`` the
    positions of the slice's units in ``hashes`` and ``differences`` their units × metrics matrix
    (NaN: no pair). The signs of a block of permutations are drawn once for all units and every
    slice reads its rows of them: one matrix product per slice and block of permutations, the
    same p-values as :func:`sign_flip_pvalues` slice by slice (the signs depend only on the unit
    key, the seed and the permutation), no loop over permutations or metrics.
    """
    prepared = []
    for rows, differences in blocks:
        differences = np.asarray(differences, dtype=np.float64).reshape(len(rows), -1)
        present = ~np.isnan(differences)
        filled = np.where(present, differences, 0.0)
        observed, counts = _observed(filled, present)
        p = np.full(differences.shape[1], np.nan)
        exact = _enumerable(counts, permutations) & (counts > 0)
        for column in np.nonzero(exact)[0]:  # tiny slices: every sign vector
            values = filled[present[:, column], column]
            p[column] = _as_extreme(values @ np.where(enumeration_bits(values.size), 1.0, -1.0), observed[column]).mean()
        sampled = np.nonzero(~exact & (counts > 0))[0]
        products, inverse = _products(np.asarray(rows), filled[:, sampled], present[:, sampled], observed[sampled])
        prepared.append((products, inverse, sampled, p, exact))
    if any(entry[2].size for entry in prepared):
        from threadpoolctl import threadpool_limits  # imported where used

        block = max(1, _BLOCK_CELLS // max(1, hashes.size))
        # One BLAS thread: the products are small and many; threads that wait for a busy core
        # cost more than they save (the bootstrap's rule too, engine/uncertainty.py).
        with threadpool_limits(limits=1, user_api="blas"):
            _count_extreme(hashes, [product for entry in prepared for product in entry[0]], permutations, block, seed, progress)
    results = []
    for products, inverse, sampled, p, exact in prepared:
        extreme = np.zeros(int(inverse.max()) + 1 if inverse.size else 0, dtype=np.int64)
        for product in products:
            extreme[product.columns] = product.extreme
        p[sampled] = (1.0 + extreme[inverse]) / (1.0 + permutations)
        results.append((p, exact))
    return results


@dataclass
class _Product:
    """One matrix product of the sign-flip test: ``transposed`` (distinct columns × units) over
    the units at ``rows`` of the shared sign matrix; ``extreme`` counts per distinct column."""

    rows: np.ndarray
    transposed: np.ndarray
    observed: np.ndarray
    columns: np.ndarray
    extreme: np.ndarray


def _products(rows: np.ndarray, filled: np.ndarray, present: np.ndarray, observed: np.ndarray) -> tuple[list[_Product], np.ndarray]:
    """The products that give the statistics ``Σ_u s_u d_u`` of the columns of ``filled``
    (units × columns, 0 where a unit has no pair), without the work that adds nothing:

    - columns equal up to their sign have the same ``|T*|`` and ``|T|``: one is computed (the
      distinct column ``inverse[j]`` stands for column ``j``);
    - a unit whose differences are all 0 adds nothing to a sum: columns with the same pairs (a
      metric subset) share one product over the units where one of them is not 0.

    Each statistic is the same sum of the same nonzero terms, so it differs from the full product
    by float rounding at most, far inside the test's relative tie tolerance.
    """
    if filled.shape[1] == 0:
        return [], np.zeros(0, dtype=np.int64)
    first = np.argmax(filled != 0, axis=0)
    sign = np.where(filled[first, np.arange(filled.shape[1])] < 0, -1.0, 1.0)
    canonical = np.ascontiguousarray((filled * sign).T) + 0.0  # -0.0 → 0.0: equal columns, equal bytes
    distinct_of: dict[bytes, int] = {}
    inverse = np.array([distinct_of.setdefault(column.tobytes(), len(distinct_of)) for column in canonical], dtype=np.int64)
    representative = np.unique(inverse, return_index=True)[1]
    distinct = canonical[representative]
    distinct_observed = (observed * sign)[representative]
    patterns = np.packbits(present[:, representative], axis=0).T
    pattern_of: dict[bytes, int] = {}
    group = np.array([pattern_of.setdefault(pattern.tobytes(), len(pattern_of)) for pattern in patterns], dtype=np.int64)
    products = []
    for g in range(len(pattern_of)):
        columns = np.flatnonzero(group == g)
        part = distinct[columns]
        used = (part != 0).any(axis=0)
        products.append(_Product(rows[used], np.ascontiguousarray(part[:, used]), distinct_observed[columns], columns,
                                 np.zeros(columns.size, dtype=np.int64)))
    return products, inverse


def _count_extreme(hashes: np.ndarray, products: list[_Product], permutations: int, block: int, seed: int, progress) -> None:
    """Add to each product's ``extreme`` counts, ``block`` permutations at a time."""
    for start in range(0, permutations, block):
        count = min(block, permutations - start)
        kept = permutation_bits(hashes, seed, start, count).astype(np.float64)
        for product in products:
            statistics = 2.0 * (product.transposed @ kept[product.rows]) - product.observed[:, None]
            product.extreme += _as_extreme(statistics.T, product.observed).sum(axis=0)
        if progress is not None:
            progress.advance(count)


def randomization_test(
    x: Sequence[float], y: Sequence[float], *, permutations: int = 10_000, seed: int = 0, keys: Sequence[str] | None = None
) -> float:
    """Two-sided paired randomization p-value of ``x`` against ``y`` (one pair per position).

    ``keys`` name the units (their hashes seed the signs); default ``"0", "1", …``.

    >>> randomization_test([0.9, 0.8, 0.7], [0.5, 0.4, 0.6])   # 2^3 ≤ 10,000: exact, 2 of 8 as extreme
    0.25
    """
    d = np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    names = [str(i) for i in range(d.size)] if keys is None else list(keys)
    hashes = unit_hashes(pl.DataFrame({"unit": names}, schema={"unit": pl.String}))
    return float(sign_flip_pvalues(d, hashes, permutations=permutations, seed=seed)[0][0])


def paired_statistics(differences: pl.DataFrame, by: Sequence[str], d: str = "d") -> pl.DataFrame:
    """Per group of ``by``: ``n_pairs``, ``mean_difference``, ``sd_difference``, ``effect_size``,
    the t-test (``t``, ``p_t``) and the Wilcoxon test (``wilcoxon``, ``p_wilcoxon``) of column
    ``d`` (module docstring). Rows with a null or NaN ``d`` are not pairs. One row per group
    that has a pair, in order of first appearance.
    """
    keys = list(by) or ["_all"]
    rows = differences.with_columns(_all=pl.lit(0)) if not by else differences
    rows = rows.filter(pl.col(d).is_not_null() & pl.col(d).is_not_nan()).select(*keys, pl.col(d).cast(pl.Float64).alias("_d"))
    moments = rows.group_by(keys, maintain_order=True).agg(
        n_pairs=pl.len().cast(pl.Int64), mean_difference=pl.col("_d").mean(), sd_difference=pl.col("_d").std(),
    )
    n = moments.get_column("n_pairs").to_numpy().astype(np.float64)
    mean = moments.get_column("mean_difference").to_numpy()
    sd = moments.get_column("sd_difference").fill_null(np.nan).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(n >= 2, mean / (sd / np.sqrt(n)), np.nan)
        p_t = 2.0 * special.stdtr(n - 1.0, -np.abs(t))
        effect = np.where(sd > 0, mean / sd, np.nan)
    result = moments.with_columns(
        effect_size=pl.Series(effect).fill_nan(None), t=pl.Series(t).fill_nan(None), p_t=pl.Series(p_t).fill_nan(None),
    ).join(_wilcoxon(rows, keys), on=keys, how="left", maintain_order="left", nulls_equal=True)
    return result if by else result.drop("_all")


def _wilcoxon(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """``wilcoxon`` (min(W+, W−)) and ``p_wilcoxon`` per group (module docstring)."""
    magnitude = pl.col("_d").abs()
    nonzero = rows.filter(pl.col("_d") != 0).with_columns(_rank=magnitude.rank("average").over(keys), _magnitude=magnitude)
    ties = (
        nonzero.group_by([*keys, "_magnitude"]).agg(_t=pl.len().cast(pl.Float64))
        .group_by(keys).agg(_ties=(pl.col("_t") ** 3 - pl.col("_t")).sum())
    )
    totals = (
        nonzero.group_by(keys).agg(
            _count=pl.len().cast(pl.Float64),
            _r_plus=pl.when(pl.col("_d") > 0).then(pl.col("_rank")).otherwise(0.0).sum(),
            _r_minus=pl.when(pl.col("_d") < 0).then(pl.col("_rank")).otherwise(0.0).sum(),
        )
        .join(ties, on=keys, how="left", nulls_equal=True)
    )
    groups = rows.group_by(keys, maintain_order=True).agg(_size=pl.len())
    totals = groups.join(totals, on=keys, how="left", nulls_equal=True, maintain_order="left")
    count = totals.get_column("_count").fill_null(0.0).to_numpy()
    r_plus = totals.get_column("_r_plus").fill_null(0.0).to_numpy()
    r_minus = totals.get_column("_r_minus").fill_null(0.0).to_numpy()
    tie_sum = totals.get_column("_ties").fill_null(0.0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((count * (count + 1.0) * (2.0 * count + 1.0) - tie_sum / 2.0) / 24.0)
        z = (r_plus - count * (count + 1.0) / 4.0) / se
        p = np.where(count > 0, 2.0 * special.ndtr(-np.abs(z)), np.nan)
    statistic = np.where(count > 0, np.minimum(r_plus, r_minus), np.nan)
    result = totals.select(*keys, "_size", "_count", "_r_plus", "_ties").with_columns(
        wilcoxon=pl.Series(statistic, dtype=pl.Float64).fill_nan(None), p_wilcoxon=pl.Series(p, dtype=pl.Float64).fill_nan(None)
    )
    if result.filter(pl.col("_size") <= WILCOXON_EXACT_MAX).height:
        result = _small_wilcoxon(rows, keys, result)
    return result.drop("_size", "_count", "_r_plus", "_ties")


def _small_wilcoxon(rows: pl.DataFrame, keys: list[str], result: pl.DataFrame) -> pl.DataFrame:
    """Groups of at most :data:`WILCOXON_EXACT_MAX` pairs, by ``scipy.stats.wilcoxon``'s rule
    (``method="auto"``), to the bit and without importing ``scipy.stats``:

    - no zero and no tied magnitude: the exact null distribution of ``W+``
      (:func:`_exact_wilcoxon_pvalue`);
    - a zero or a tie and at most :data:`WILCOXON_ENUMERATED_MAX` pairs: every sign vector
      (:func:`_enumerated_wilcoxon`; a loop over these tiny groups only);
    - a zero or a tie and more pairs: the normal approximation already in ``result``.
    """
    small = result.filter(pl.col("_size") <= WILCOXON_EXACT_MAX)
    size = small.get_column("_size").to_numpy()
    count = small.get_column("_count").fill_null(0.0).to_numpy()
    r_plus = small.get_column("_r_plus").fill_null(0.0).to_numpy()
    tied = small.get_column("_ties").fill_null(0.0).to_numpy() > 0
    statistic = small.get_column("wilcoxon").to_numpy().astype(np.float64)
    p = small.get_column("p_wilcoxon").fill_null(np.nan).to_numpy().astype(np.float64)
    exact = (count > 0) & (count == size) & ~tied
    for i in np.nonzero(exact)[0]:  # a loop over small groups, reading a cached distribution each
        p[i] = _exact_wilcoxon_pvalue(int(count[i]), float(r_plus[i]))
    enumerated = (count > 0) & ~exact & (size <= WILCOXON_ENUMERATED_MAX)
    if enumerated.any():
        chosen = small.select(keys).filter(pl.Series(enumerated))
        grouped = rows.join(chosen, on=keys, how="semi", nulls_equal=True).group_by(keys, maintain_order=True).agg(pl.col("_d"))
        found = {}
        for row in grouped.iter_rows():
            found[row[:-1]] = _enumerated_wilcoxon(np.asarray(row[-1], dtype=np.float64))
        for i, key in zip(np.nonzero(enumerated)[0], small.select(keys).filter(pl.Series(enumerated)).iter_rows(), strict=True):
            statistic[i], p[i] = found[key]
    found = small.select(keys).with_columns(_w=pl.Series(statistic, dtype=pl.Float64).fill_nan(None),
                                           _pw=pl.Series(p, dtype=pl.Float64).fill_nan(None))
    small_group = pl.col("_size") <= WILCOXON_EXACT_MAX
    return result.join(found, on=keys, how="left", nulls_equal=True, maintain_order="left").with_columns(
        wilcoxon=pl.when(small_group).then(pl.col("_w")).otherwise(pl.col("wilcoxon")),
        p_wilcoxon=pl.when(small_group).then(pl.col("_pw")).otherwise(pl.col("p_wilcoxon")),
    ).drop("_w", "_pw")


@lru_cache(maxsize=WILCOXON_EXACT_MAX + 1)
def _signed_rank_distribution(n: int) -> np.ndarray:
    """``P(W+ = w)`` for ``w = 0 … n(n+1)/2`` under the null (n pairs, no zero, no tie): adding
    pair ``k`` gives each earlier sum ``w`` a half chance of staying and a half chance of becoming
    ``w + k``, so ``P_k(w) = ½·P_{k−1}(w) + ½·P_{k−1}(w − k)``. Every term is a multiple of
    ``2^−n``, so the recursion is exact in float64 up to n = 50."""
    probabilities = np.ones(1)
    for k in range(1, n + 1):
        half = probabilities * 0.5
        grown = np.zeros(probabilities.size + k)
        grown[:half.size] += half
        grown[k:] += half
        probabilities = grown
    probabilities.flags.writeable = False
    return probabilities


def _exact_wilcoxon_pvalue(n: int, r_plus: float) -> float:
    """Two-sided exact p-value of ``W+ = r_plus`` with ``n`` pairs, as ``scipy.stats.wilcoxon``
    gives it (``method="exact"``): ``2·min(P(W+ ≥ ⌊r⌋), P(W+ ≤ ⌈r⌉))`` capped at 1, each tail
    summed directly below the mean ``n(n+1)/4`` and as 1 − the other tail above it."""
    pmf = _signed_rank_distribution(n)
    mean = n * (n + 1) / 4
    low, high = int(np.floor(r_plus)), int(np.ceil(r_plus))
    upper = pmf[low:].sum() if low <= mean else 1 - pmf[:low].sum()
    lower = pmf[:high + 1].sum() if high <= mean else 1 - pmf[high + 1:].sum()
    return float(np.clip(2 * min(upper, lower), 0.0, 1.0))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1 … n of ``values``, ties given the mean of the ranks they span (multiples of ½)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    ranks = np.empty(values.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)
    return ranks


#: scipy.stats.wilcoxon enumerates every sign vector (its permutation rule) up to this many pairs
#: when zeros or ties occur (2^13 ≤ its 9,999 resamples).
WILCOXON_ENUMERATED_MAX = 13


def _enumerated_wilcoxon(d: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.wilcoxon(d)``'s statistic and p-value when it enumerates sign vectors
    (at most :data:`WILCOXON_ENUMERATED_MAX` pairs with a zero or tied magnitudes), for all ``2^n``
    vectors in one matrix product.

    Zero differences are dropped from the ranks (``zero_method="wilcox"``), the others ranked by
    magnitude with ties averaged. ``W+(s) = Σ rank_u [s_u d_u > 0]`` over every sign vector ``s``
    is the null distribution; with scipy's tolerance ``γ = 100·eps·W+``,
    ``p = 2·min(#{W+(s) ≤ W+ + γ}, #{W+(s) ≥ W+ − γ}) / 2^n`` (at most 1). Ranks are multiples of
    ½, so every sum is exact and the p-value is scipy's to the bit.
    """
    nonzero = d != 0
    ranks = np.zeros(d.size)
    ranks[nonzero] = _average_ranks(np.abs(d[nonzero]))
    r_plus, r_minus = ranks[d > 0].sum(), ranks[d < 0].sum()
    keep = enumeration_bits(d.size)                           # units × 2^n: True keeps the sign
    positive = np.where(keep, (d > 0)[:, None], (d < 0)[:, None])
    null = ranks @ positive
    gamma = abs(np.finfo(np.float64).eps * 100 * r_plus)
    total = 2**d.size
    less = np.count_nonzero(null <= r_plus + gamma) / total
    greater = np.count_nonzero(null >= r_plus - gamma) / total
    return min(r_plus, r_minus), float(np.clip(min(less, greater) * 2, 0.0, 1.0))


def paired_t_test(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """``(t, p)`` of the paired t-test of ``x`` against ``y`` (``scipy.stats.ttest_rel``)."""
    row = paired_statistics(pl.DataFrame({"d": np.asarray(x, float) - np.asarray(y, float)}), []).row(0, named=True)
    return _float(row["t"]), _float(row["p_t"])


def wilcoxon_test(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """``(statistic, p)`` of the Wilcoxon signed-rank test of ``x`` against ``y`` (``scipy.stats.wilcoxon``)."""
    row = paired_statistics(pl.DataFrame({"d": np.asarray(x, float) - np.asarray(y, float)}), []).row(0, named=True)
    return _float(row["wilcoxon"]), _float(row["p_wilcoxon"])


def _float(value) -> float:
    return float("nan") if value is None else float(value)
