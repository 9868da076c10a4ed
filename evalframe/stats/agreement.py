"""Agreement between raters (seed 004 §21.3.1) under many task-weight vectors at once.

The kernels take ratings already encoded as integer codes (:class:`Ratings`: task, rater and the
rating's position on the scale, one rating per task and rater) and a weight matrix ``W``
(tasks × C): column ``c`` gives every task a weight. Column 0 of the matrix the callers pass is
all ones (the estimate on the data); the others are the engine's bootstrap replicates over tasks
(:func:`evalframe.stats.replicates.poisson_counts`), so one pass gives the value and its
replicates. Every statistic is a ratio of sums that are linear in the task weights, computed as
products ``Aᵀ · W`` of a per-task table ``A`` with the weights: no loop over tasks, pairs or
replicates (the loop over rater pairs is a sparse product). With all weights 1 they are:

- **exact agreement** (the chapter's ``exact_agreement_rate``): among tasks with >= 2 ratings,
  the share whose ratings are all equal;
- **pairwise agreement** (``pairwise_agreement_rate``): among all pairs of ratings of one task
  (pooled over tasks), the share that are equal, ``Σ_u Σ_c n_uc(n_uc − 1) / Σ_u m_u(m_u − 1)``;
- **Cohen's κ** of two raters on the tasks both rated, with the disagreement weights ``w_ij``
  ``1 − [i = j]`` (unweighted), ``|i − j|`` (linear) or ``(i − j)²`` (quadratic) over the
  positions ``i, j`` of the scale's values, as ``sklearn.metrics.cohen_kappa_score(labels=scale,
  weights=…)``: ``κ = 1 − Σ w_ij O_ij / Σ w_ij E_ij`` with ``O`` the confusion matrix and ``E``
  the outer product of its marginals over its total; undefined (nan) when ``Σ w E = 0`` (both
  raters gave one and the same value throughout);
- **Fleiss' κ** over tasks with >= 2 ratings: ``P_u = (Σ_c n_uc² − m_u) / (m_u(m_u − 1))``,
  ``P̄`` their mean, ``p_c = Σ_u n_uc / Σ_u m_u``, ``P_e = Σ_c p_c²``, ``κ = (P̄ − P_e) / (1 − P_e)``;
  equal to ``statsmodels.stats.inter_rater.fleiss_kappa`` when every task has the same number
  of ratings (with varying numbers it is the usual generalisation, each task's ``P_u`` with its
  own ``m_u``); nan when ``P_e = 1``;
- **Krippendorff's α** (missing ratings allowed): the coincidence matrix
  ``o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1)`` over tasks with >= 2 ratings, its
  marginals ``n_c`` and total ``n``, and ``α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck`` with
  the metric's distance: nominal ``[c ≠ k]``, interval ``(v_c − v_k)²`` (the values), ordinal
  ``(Σ_{g=c}^{k} n_g − (n_c + n_k) / 2)²``, as the ``krippendorff`` package; nan when the
  denominator is 0 (one value only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import sparse

KappaWeights = Literal["unweighted", "linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval"]
KAPPA_WEIGHTS: tuple[KappaWeights, ...] = ("unweighted", "linear", "quadratic")
ALPHA_LEVELS: tuple[AlphaLevel, ...] = ("nominal", "ordinal", "interval")


@dataclass(frozen=True)
class Ratings:
    """Encoded ratings: ``task``, ``rater`` and ``code`` (position on the scale) per rating;
    ``values`` the scale's numeric values (for interval distances), ``n_tasks``, ``n_raters``."""

    task: np.ndarray
    rater: np.ndarray
    code: np.ndarray
    values: np.ndarray
    n_tasks: int
    n_raters: int

    @property
    def n_values(self) -> int:
        return int(self.values.shape[0])

    def counts(self) -> np.ndarray:
        """``n_uc``: ratings of value ``c`` on task ``u`` (tasks × scale values)."""
        flat = np.bincount(self.task * self.n_values + self.code, minlength=self.n_tasks * self.n_values)
        return flat.reshape(self.n_tasks, self.n_values).astype(np.float64)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.divide(numerator, denominator, out=np.full(np.shape(numerator), np.nan), where=denominator > 0)


def exact_agreement(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Share (by weight) of the tasks with >= 2 ratings whose ratings all agree; one value per column."""
    m = counts.sum(axis=1)
    multi = (m >= 2).astype(np.float64)
    agree = multi * (counts.max(axis=1) == m)
    return _ratio(agree @ weights, multi @ weights)


def pairwise_agreement(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Share of agreeing pairs of ratings of one task, pooled over tasks; one value per column."""
    m = counts.sum(axis=1)
    agreeing = (counts * (counts - 1)).sum(axis=1)
    return _ratio(agreeing @ weights, (m * (m - 1)) @ weights)


def fleiss_kappa(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Fleiss' κ over tasks with >= 2 ratings (module docstring); one value per column."""
    m = counts.sum(axis=1)
    multi = m >= 2
    counts, m, weights = counts[multi], m[multi], weights[multi]
    per_task = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    total = weights.sum(axis=0)
    observed = _ratio(per_task @ weights, total)
    shares = _ratio(counts.T @ weights, (m @ weights)[None, :])
    expected = (shares**2).sum(axis=0)
    return _ratio(observed - expected, 1.0 - expected) if expected.size else expected


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Each task's coincidence contributions ``(n_uc n_uk − [c = k] n_uc) / (m_u − 1)``,
    flattened to (tasks × values²); zero for a task with fewer than 2 ratings."""
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    k = counts.shape[1]
    pairs[:, np.arange(k), np.arange(k)] -= counts
    scale = np.divide(1.0, m - 1, out=np.zeros_like(m), where=m >= 2)
    return (pairs * scale[:, None, None]).reshape(counts.shape[0], k * k)


def krippendorff_alpha(counts: np.ndarray, weights: np.ndarray, level: AlphaLevel, values: np.ndarray) -> np.ndarray:
    """Krippendorff's α at ``level`` (module docstring); one value per column of ``weights``."""
    k = counts.shape[1]
    observed = (coincidences(counts).T @ weights).reshape(k, k, -1)
    marginal = observed.sum(axis=1)  # n_c per column: (k × C)
    n = marginal.sum(axis=0)
    if level == "nominal":
        distance = (1.0 - np.eye(k))[:, :, None]
    elif level == "interval":
        distance = ((values[:, None] - values[None, :]) ** 2)[:, :, None]
    elif level == "ordinal":
        cumulative = np.vstack([np.zeros((1, marginal.shape[1])), np.cumsum(marginal, axis=0)])
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[high + 1] - cumulative[low]  # Σ_{g=low}^{high} n_g: (k × k × C)
        distance = (between - (marginal[:, None, :] + marginal[None, :, :]) / 2.0) ** 2
    else:
        raise ValueError(f"unknown level {level!r}")
    disagreement = (observed * distance).sum(axis=(0, 1))
    expected = (marginal[:, None, :] * marginal[None, :, :] * distance).sum(axis=(0, 1))
    return 1.0 - _ratio((n - 1.0) * disagreement, expected)


def kappa_disagreement(n_values: int, kind: KappaWeights) -> np.ndarray:
    """The disagreement weights ``w_ij`` of Cohen's κ over scale positions (module docstring)."""
    position = np.arange(n_values, dtype=np.float64)
    if kind == "unweighted":
        return 1.0 - np.eye(n_values)
    if kind == "linear":
        return np.abs(position[:, None] - position[None, :])
    if kind == "quadratic":
        return (position[:, None] - position[None, :]) ** 2
    raise ValueError(f"unknown kappa weights {kind!r}")


def rater_pairs(n_raters: int) -> np.ndarray:
    """Every pair ``(a, b)`` with ``a < b`` of rater codes: (pairs × 2)."""
    first, second = np.triu_indices(n_raters, k=1)
    return np.column_stack([first, second])


def pair_confusions(ratings: Ratings, weights: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Weighted confusion matrices of every rater pair on the tasks both rated:
    (pairs × values × values × C). One sparse product over (pair, cell) × tasks."""
    k, tasks = ratings.n_values, ratings.n_tasks
    grid = np.full((tasks, ratings.n_raters), -1, dtype=np.int64)
    grid[ratings.task, ratings.rater] = ratings.code
    rows, columns = [], []
    for position, (a, b) in enumerate(pairs.tolist()):  # a loop over pairs, each a vector op over tasks
        both = np.nonzero((grid[:, a] >= 0) & (grid[:, b] >= 0))[0]
        rows.append(position * k * k + grid[both, a] * k + grid[both, b])
        columns.append(both)
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    column = np.concatenate(columns) if columns else np.zeros(0, np.int64)
    indicator = sparse.csr_matrix((np.ones(row.size), (row, column)), shape=(len(pairs) * k * k, tasks))
    return np.asarray(indicator @ weights).reshape(len(pairs), k, k, weights.shape[1])


def cohen_kappa(confusions: np.ndarray, kind: KappaWeights) -> np.ndarray:
    """Cohen's κ of each confusion matrix (… × values × values × C → … × C), module docstring."""
    k = confusions.shape[-2]
    w = kappa_disagreement(k, kind)[:, :, None]
    total = confusions.sum(axis=(-3, -2))
    rows = confusions.sum(axis=-2)  # rater a's marginals: (… × k × C)
    columns = confusions.sum(axis=-3)  # rater b's marginals
    expected = _ratio(rows[..., :, None, :] * columns[..., None, :, :], total[..., None, None, :])
    observed_disagreement = (confusions * w).sum(axis=(-3, -2))
    expected_disagreement = (expected * w).sum(axis=(-3, -2))
    return 1.0 - _ratio(observed_disagreement, expected_disagreement)


#: Landis & Koch (1977): the words for a κ (or α) value, by lower bound.
LANDIS_KOCH = ((0.81, "almost perfect"), (0.61, "substantial"), (0.41, "moderate"), (0.21, "fair"), (0.0, "slight"))


def landis_koch(value: float | None) -> str | None:
    """Landis–Koch wording of an agreement coefficient: < 0 poor, 0–0.20 slight, 0.21–0.40 fair,
    0.41–0.60 moderate, 0.61–0.80 substantial, 0.81–1 almost perfect (None for no value).

    >>> landis_koch(0.45), landis_koch(-0.1), landis_koch(0.9)
    ('moderate', 'poor', 'almost perfect')
    """
    if value is None or not np.isfinite(value):
        return None
    if value < 0:
        return "poor"
    rounded = round(float(value), 2)
    return next(words for bound, words in LANDIS_KOCH if rounded >= bound)
