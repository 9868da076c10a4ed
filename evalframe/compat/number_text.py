"""Numbers as trec_eval prints them, a whole column at a time and exactly as Python would.

trec_eval's value field is C's ``%6.4f``; evalframe has always printed it with Python's
``f"{x:6.4f}"`` (counts with ``f"{round(x)}"``). Python formats by correct rounding: the exact
binary value of ``x`` times 10⁴, rounded to the nearest integer, ties to even. This module does
the same in 64-bit integer arithmetic, so every value's text is byte-identical to Python's
without a Python call per value:

- a finite double is ``x = ±m·2^e`` with ``m < 2^53`` a whole number (read from its bits), so
  ``x·10⁴ = (m·625)·2^(e+4)``, and ``M = m·625 < 2^63`` is exact in 64 bits;
- with ``s = -(e+4) ≥ 1`` bits shifted out: ``n = M >> s``, the bits shifted out ``r`` against
  one half ``h = 2^(s-1)``: ``n + 1`` when ``r > h`` or ``r = h`` and ``n`` is odd (ties to
  even); for ``s ≥ 64``, ``M < 2^63 ≤ h`` and ``n = 0``;
- the text is the sign (``-`` for every negative double, ``-0.0000`` included, as Python
  prints it), ``n // 10⁴``, ``.``, then ``n mod 10⁴`` on four digits. It always has at least six
  characters, so the field width 6 pads nothing. The usual ``d.dddd`` (0 ≤ x < 9.99995) of a
  long column is gathered from a table of all 10⁵ such texts; other magnitudes, negatives and
  short columns are joined from their integer parts' text (no pyarrow: its import alone costs
  0.2 CPU-s, more than a 4.6 M-value column).

Outside that path — nan, ±inf and ``|x| ≥ 2^48`` (where ``s < 1``) — Python's own formatting is
called for those values only (``   nan``, ``   inf``, …). Counts are rounded half to even by
:func:`numpy.rint`, which is Python's ``round``, for ``|x| < 2^62``; nan, ±inf and larger values
go through ``round`` itself (which raises for nan and ±inf, as it always has here).
"""

from __future__ import annotations

import numpy as np
import polars as pl

#: Counts beyond this magnitude are rounded by Python (NumPy's int64 stops at 2^63).
_COUNT_LIMIT = 2.0**62
#: Every ``d.dddd`` text (10⁵ of them), made when a column is at least this long.
_TABLE_SIZE = 100_000


def fixed4_text(values: np.ndarray) -> pl.Series:
    """``f"{x:6.4f}"`` of every float64 in ``values``, as a String series (see the module doc)."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    rounded = np.empty(x.size, dtype=np.uint64)
    exact = np.empty(x.size, dtype=bool)
    negative = np.empty(x.size, dtype=bool)
    for start in range(0, x.size, _SLICE):  # a slice at a time: the temporaries stay in the cache
        part = slice(start, start + _SLICE)
        rounded[part], exact[part], negative[part] = _rounded_units(x[part])
    short = exact & ~negative & (rounded < np.uint64(100_000))  # "d.dddd": nearly every value
    text = _short_text(np.where(short, rounded, np.uint64(0)).astype(np.uint32))
    longer = np.flatnonzero(exact & ~short)
    if longer.size:
        text = text.scatter(longer, _long_text(rounded[longer], negative[longer]))
    return _python_where(text, ~exact, x, lambda value: f"{value:6.4f}")


#: Values turned into units of 10⁻⁴ at a time by :func:`fixed4_text`.
_SLICE = 1 << 16


def _rounded_units(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|x|·10⁴ rounded half to even (``uint64``), whether that is exact (finite and
    |x| < 2^48), and the sign bit, of each float64 in ``x`` (see the module doc)."""
    bits = x.view(np.uint64)
    biased = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    fraction = bits & np.uint64((1 << 52) - 1)
    normal = biased != 0
    mantissa = np.where(normal, fraction | np.uint64(1 << 52), fraction)  # subnormals: no hidden bit
    # x = mantissa·2^e with e = max(biased, 1) - 1075; s = -(e + 4) bits of M are shifted out.
    shift = np.int64(1071) - np.maximum(biased, np.uint64(1)).astype(np.int64)
    exact = np.isfinite(x) & (shift >= 1)
    shifted = np.clip(shift, 1, 63).astype(np.uint64)
    scaled = mantissa * np.uint64(625)
    whole = scaled >> shifted
    rest = scaled & ((np.uint64(1) << shifted) - np.uint64(1))
    half = np.uint64(1) << (shifted - np.uint64(1))
    up = (rest > half) | ((rest == half) & ((whole & np.uint64(1)) == np.uint64(1)))
    rounded = np.where(shift >= 64, np.uint64(0), whole + up.astype(np.uint64))
    negative = (bits >> np.uint64(63)) == np.uint64(1)
    return rounded, exact, negative


def _short_text(rounded: np.ndarray) -> pl.Series:
    """``d.dddd`` of each ``rounded`` (< 10⁵, units of 10⁻⁴). A long column gathers its texts
    from the table of all 10⁵ of them (each text is six bytes, held inside Polars' string view:
    the gather copies no string data); a short one is made directly (:func:`_long_text`)."""
    if rounded.size < _TABLE_SIZE:
        return _long_text(rounded.astype(np.uint64), np.zeros(rounded.size, dtype=bool))
    return _long_text(np.arange(_TABLE_SIZE, dtype=np.uint64), np.zeros(_TABLE_SIZE, dtype=bool)).gather(rounded)


def _long_text(rounded: np.ndarray, negative: np.ndarray) -> pl.Series:
    """The sign, ``rounded // 10⁴``, ``.`` and ``rounded mod 10⁴`` on four digits."""
    return pl.DataFrame({
        "negative": negative,
        "units": rounded // np.uint64(10_000),
        "digits": rounded % np.uint64(10_000) + np.uint64(10_000),  # "1dddd": the leading 1 is cut
    }).select(
        pl.concat_str(
            pl.when(pl.col("negative")).then(pl.lit("-")).otherwise(pl.lit("")),
            pl.col("units").cast(pl.String),
            pl.lit("."),
            pl.col("digits").cast(pl.String).str.slice(1),
        ),
    ).to_series()


def count_text(values: np.ndarray) -> pl.Series:
    """``f"{round(x)}"`` of every float64 in ``values`` (half to even), as a String series."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    exact = np.isfinite(x) & (np.abs(x) < _COUNT_LIMIT)
    rounded = np.rint(np.where(exact, x, 0.0)).astype(np.int64)
    return _python_where(pl.Series(rounded).cast(pl.String), ~exact, x, lambda value: f"{round(value)}")


def _python_where(text: pl.Series, mask: np.ndarray, values: np.ndarray, python) -> pl.Series:
    """``text`` with the entries under ``mask`` replaced by ``python(value)`` (a few at most)."""
    where = np.flatnonzero(mask)
    if where.size == 0:
        return text
    return text.scatter(where, [python(float(value)) for value in values[where]])
