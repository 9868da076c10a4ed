"""Exact sums of float64 values times small whole counts, in any order (the bootstrap's
per-unit replicate sums, :mod:`evalframe.engine.uncertainty`).

A replicate total ``T_r = Σ_i c_ir · x_i`` (``x_i`` a float64, ``c_ir`` a whole count ≤ 20)
summed in floating point depends on the order of the additions, so parts of the data (buckets,
Spark partitions) summed apart and then added would differ in the last bits from one sum over
the whole. Here the sum is exact, hence the same for any order and any partition of the terms:

- every finite ``x`` is cut into three **limbs** on one global grid of 27-bit digits:
  ``x = ±(D₀ · 2^(27k) + D₁ · 2^(27(k+1)) + D₂ · 2^(27(k+2)))``, ``0 ≤ D_j < 2^27`` whole, ``k``
  fixed by ``x``'s exponent (the 53-bit mantissa shifted onto the grid spans at most 80 bits);
- ``Σ_i D_ij · c_ir`` over a block of at most :data:`BLOCK_ROWS` terms is below 2^53, so a
  float64 matrix product computes it exactly (any BLAS, any order); blocks add in int64
  (:class:`Accumulator`: one row per grid position, up to 2^31 terms of 20 each);
- non-finite values are counted apart (``Σ c`` of the +inf, −inf and nan terms, whole numbers):
  the total is nan when a nan or both infinities are drawn, else the drawn infinity;
- :func:`to_float` turns the integer digits into a float64 by one fixed rule (carries
  normalised to ``[0, 2^27)`` digits, the magnitude added from the highest digit down), so equal
  exact sums give equal floats: within one unit in the last place of the exact sum.

Merging two parts' accumulators adds their integer rows (exact, associative, commutative).
"""

from __future__ import annotations

from evalframe._lazy import lazy_module

np = lazy_module("numpy")

#: Bits of one digit of the grid.
LIMB_BITS = 27
#: Digits a float64's mantissa covers on the grid.
LIMBS = 3
#: Terms per exact float64 product: 2^27 · 20 · 2^21 < 2^53.
BLOCK_ROWS = 1 << 21
#: Grid positions of the non-finite counts (+inf, −inf, nan): beyond any float's digits.
POS_INF, NEG_INF, NAN = 1 << 20, (1 << 20) + 1, (1 << 20) + 2
NONFINITE = (POS_INF, NEG_INF, NAN)
_MASK = (1 << LIMB_BITS) - 1


def digits(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(position, limbs)`` of every value: ``position`` (int64, same shape as ``x``) the grid
    index ``k`` of the lowest limb, ``limbs`` (float64, shape ``x.shape + (3,)``) the signed digits
    ``±D_j`` such that ``x = Σ_j limbs[..., j] · 2^(27(k + j))`` exactly. Zero and non-finite
    values get zero digits at position 0 (non-finite ones are counted by :func:`nonfinite`)."""
    x = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(x) & (x != 0)
    mantissa, exponent = np.frexp(np.where(finite, x, 1.0))
    whole = np.abs(np.ldexp(mantissa, 53)).astype(np.int64)  # |x| = whole · 2^(exponent − 53), whole < 2^53
    lowest = exponent.astype(np.int64) - 53
    position = np.floor_divide(lowest, LIMB_BITS)
    shift = lowest - position * LIMB_BITS  # 0 … 26
    low = (whole & ((np.int64(1) << (LIMB_BITS - shift)) - 1)) << shift
    rest = whole >> (LIMB_BITS - shift)  # < 2^(26 + shift) ≤ 2^52
    limbs = np.stack([low, rest & _MASK, rest >> LIMB_BITS], axis=-1).astype(np.float64)
    limbs *= np.where(np.signbit(x), -1.0, 1.0)[..., None]
    limbs[~finite] = 0.0
    return np.where(finite, position, 0), limbs


def nonfinite(x: np.ndarray) -> np.ndarray:
    """Indicators (float64, ``x.shape + (3,)``) of +inf, −inf and nan, in :data:`NONFINITE` order."""
    x = np.asarray(x, dtype=np.float64)
    return np.stack([x == np.inf, x == -np.inf, np.isnan(x)], axis=-1).astype(np.float64)


def to_float(positions: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """The float64 of exact sums: ``sums`` (int64, ``(..., P, R)``) holds the digit totals at the
    grid ``positions`` (sorted, ``P`` of them; the non-finite counts at :data:`NONFINITE`). One
    fixed rule (module docstring), so equal sums give equal floats, whatever their order."""
    positions = np.asarray(positions, dtype=np.int64)
    special = np.isin(positions, NONFINITE)
    counts = {code: sums[..., list(positions).index(code), :] if code in positions else None for code in NONFINITE}
    finite_positions = positions[~special]
    result = _digits_to_float(finite_positions, sums[..., ~special, :]) if finite_positions.size else np.zeros(
        sums.shape[:-2] + sums.shape[-1:])
    if counts[POS_INF] is not None:
        result = np.where(counts[POS_INF] > 0, np.inf, result)
    if counts[NEG_INF] is not None:
        result = np.where(counts[NEG_INF] > 0, np.where(np.isposinf(result), np.nan, -np.inf), result)
    if counts[NAN] is not None:
        result = np.where(counts[NAN] > 0, np.nan, result)
    return result


def _normalised(positions: np.ndarray, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digits on the contiguous grid ``positions[0] … positions[-1] + 3`` with carries moved up:
    every digit in ``[0, 2^27)`` but the top one, which keeps the sign (a unique form)."""
    first = int(positions[0])
    size = int(positions[-1]) - first + 1 + 3  # int64 totals carry at most 3 digits up
    grid = np.zeros(sums.shape[:-2] + (size,) + sums.shape[-1:], dtype=np.int64)
    grid[..., positions - first, :] = sums
    for k in range(size - 1):
        carry = grid[..., k, :] >> LIMB_BITS  # floor division: the digit left is in [0, 2^27)
        grid[..., k, :] &= _MASK
        grid[..., k + 1, :] += carry
    return np.arange(first, first + size), grid


def _digits_to_float(positions: np.ndarray, sums: np.ndarray) -> np.ndarray:
    grid_positions, grid = _normalised(positions, sums)
    negative = grid[..., -1, :] < 0
    if negative.any():
        _, flipped = _normalised(positions, -sums)
        grid = np.where(negative[..., None, :], flipped, grid)
    result = np.zeros(grid.shape[:-2] + grid.shape[-1:])
    for k in range(grid.shape[-2] - 1, -1, -1):  # the highest digit first: one fixed order
        result += np.ldexp(grid[..., k, :].astype(np.float64), LIMB_BITS * int(grid_positions[k]))
    return np.where(negative, -result, result)
