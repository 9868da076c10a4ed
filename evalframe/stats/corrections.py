"""Multiple-testing corrections: adjusted p-values over a family of tests (004 §21.5.3).

For a family of ``m`` p-values sorted ascending, ``p_(1) ≤ … ≤ p_(m)``:

- ``bonferroni``: ``min(1, m · p)`` (controls the family-wise error rate);
- ``holm`` (step-down Bonferroni): ``min(1, max_{j ≤ i} (m − j + 1) · p_(j))`` (controls the
  family-wise error rate, never less powerful than Bonferroni);
- ``bh`` (Benjamini–Hochberg): ``min(1, min_{j ≥ i} m · p_(j) / j)`` (controls the false
  discovery rate for independent or positively dependent tests);
- ``by`` (Benjamini–Yekutieli): BH with ``m`` replaced by ``m · Σ_{k=1}^{m} 1/k`` (controls the
  false discovery rate under any dependence);
- ``none``: the p-values as they are.

These are ``statsmodels.stats.multitest.multipletests``' ``bonferroni``, ``holm``, ``fdr_bh``
and ``fdr_by`` (tested to agree). Edge rule: a null (or NaN) p-value is not a test: it stays
null and does not count in ``m``. Ties get equal adjusted values, whatever their order.

:func:`adjust_pvalues` corrects one family (a NumPy array); :func:`adjust_in_families` corrects
a column of a table within the families of ``over`` (one sort, cumulative maxima and minima per
family; no Python loop over families or tests).

>>> adjust_pvalues([0.001, 0.02, 0.03, 0.04, 0.06, 0.15, 0.25], "bh").round(4).tolist()
[0.007, 0.07, 0.07, 0.07, 0.084, 0.175, 0.25]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import polars as pl

from evalframe.errors import ConfigError

Correction = Literal["bonferroni", "holm", "bh", "by", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)

def check_correction(method: str) -> str:
    """``method`` if it names a correction, else a :class:`ConfigError` listing them."""
    if method not in CORRECTIONS:
        raise ConfigError(f"unknown correction `{method}` (known: {', '.join(f'`{c}`' for c in CORRECTIONS)})")
    return method


def adjust_in_families(table: pl.DataFrame, p: str, method: Correction = "holm", *, over: Sequence[str] = ()) -> pl.Series:
    """The adjusted p-values of column ``p`` of ``table``, one family per value of ``over``.

    Returns a Float64 series aligned with ``table``'s rows. Nulls (and NaN) stay null and do not
    count in a family's size (module docstring). One sort, then cumulative maxima (Holm) or
    minima (BH, BY) within each family: no Python loop over families or tests.
    """
    check_correction(method)
    over = list(over)
    family = (lambda expr: expr.over(over)) if over else (lambda expr: expr)
    frame = table.select(*over, pl.col(p).cast(pl.Float64).fill_nan(None).alias("_p")).with_row_index("_row")
    if method == "none":
        return frame.get_column("_p").alias(p)
    ordered = frame.sort([*over, "_p"], nulls_last=True)
    m = family(pl.col("_p").count())
    i = family(pl.col("_p").cum_count())  # 1-based rank among the family's non-null p-values
    if method == "bonferroni":
        value = pl.min_horizontal(pl.col("_p") * m, 1.0)
    elif method == "holm":
        value = family(pl.min_horizontal(pl.col("_p") * (m - i + 1), 1.0).cum_max())
    else:
        harmonic = 1.0 if method == "bh" else pl.col("_harmonic")
        if method == "by":
            ordered = ordered.with_columns(_m=m)
            ordered = ordered.with_columns(_harmonic=pl.Series(_harmonic_numbers(ordered.get_column("_m").to_numpy())))
        value = family(pl.min_horizontal(pl.col("_p") * m * harmonic / i, 1.0).cum_min(reverse=True))
    result = ordered.with_columns(_adjusted=pl.when(pl.col("_p").is_not_null()).then(value)).sort("_row")
    return result.get_column("_adjusted").alias(p)


def _harmonic_numbers(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.int64)
    table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, int(m.max(initial=0)) + 1))])
    return table[m]


def adjust_pvalues(p: Sequence[float] | np.ndarray, method: Correction = "holm") -> np.ndarray:
    """Adjusted p-values of one family (module docstring); NaN stays NaN and is not counted.

    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, float("nan")], "bonferroni").tolist()
    [0.01, nan]
    """
    check_correction(method)
    p = np.asarray(p, dtype=np.float64)
    result = np.full(p.shape, np.nan)
    present = ~np.isnan(p)
    values = p[present]
    m = values.size
    if m == 0:
        return result
    if method == "none":
        result[present] = values
        return result
    if method == "bonferroni":
        result[present] = np.minimum(values * m, 1.0)
        return result
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    i = np.arange(1, m + 1)
    if method == "holm":
        adjusted_sorted = np.maximum.accumulate(np.minimum(ranked * (m - i + 1), 1.0))
    else:
        factor = 1.0 if method == "bh" else _harmonic_numbers(np.array([m]))[0]
        adjusted_sorted = np.minimum.accumulate(np.minimum(ranked * m * factor / i, 1.0)[::-1])[::-1]
    unsorted = np.empty(m)
    unsorted[order] = adjusted_sorted
    result[present] = unsorted
    return result
