"""Agreement between raters (seed 004 §21.3.1) under many task-weight vectors at once.

The kernels take ratings already encoded as integer codes (:class:`Ratings`: task, rater and the
rating's position on the scale, one rating per task and rater) and a weight matrix ``W``
(tasks × C): column ``c`` gives every task a weight. Column 0 of the matrix the callers pass is
all ones (the estimate on the data); the others are the engine's bootstrap replicates over tasks
(:func:`evalframe.engine.replicates.poisson_counts`), so one pass gives the value and its
replicates. Every statistic is a ratio of sums that are linear in the task weights, computed as
products ``Aᵀ · W`` of a per-task table ``A`` with the weights: no loop over tasks, pairs or
replicates (tasks are taken in chunks that bound memory, each a dense product). With all weights 1 they are:

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

KappaWeights = Literal["unweighted", "linear", "quadratic"]
AlphaLevel = Literal["nominal", "ordinal", "interval"]
KAPPA_WEIGHTS: tuple[KappaWeights, ...] = ("unweighted", "linear", "quadratic")
ALPHA_LEVELS: tuple[AlphaLevel, ...] = ("nominal", "ordinal", "interval")


@dataclass(frozen=True)
class Scale:
    """The rating scale: its values in order, and whether they are numbers (interval distances).

    The chapter's ``RelevanceScale`` is ``Scale((0, 1, 2, 3, 4))``.
    """

    values: tuple
    numeric: bool = True

    @property
    def width(self) -> float:
        """``max − min`` of a numeric scale (the chapter's 4 of its 0–4 scale); 1 otherwise."""
        return float(max(self.values) - min(self.values)) if self.numeric and len(self.values) > 1 else 1.0


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


class TaskSums:
    """Every per-task quantity the summary statistics add up, as the columns of one matrix, so
    that all of them under all weight columns are ONE product ``Aᵀ · W`` (a pass over the
    weights), then finished per statistic from the sums (:meth:`statistics`)."""

    def __init__(self, counts: np.ndarray):
        k = counts.shape[1]
        m = counts.sum(axis=1)
        multi = (m >= 2).astype(np.float64)
        safe = np.where(m >= 2, m * (m - 1), 1.0)
        columns = {
            "multi": multi[:, None],
            "agree": (multi * (counts.max(axis=1) == m))[:, None],
            "pairs_agreeing": (counts * (counts - 1)).sum(axis=1)[:, None],
            "pairs": (m * (m - 1))[:, None],
            "fleiss_task": (multi * ((counts**2).sum(axis=1) - m) / safe)[:, None],
            "value_counts": counts * multi[:, None],
            "ratings": (m * multi)[:, None],
            "coincidences": coincidences(counts),
        }
        self.k = k
        self.slices: dict[str, slice] = {}
        start = 0
        for name, block in columns.items():
            self.slices[name] = slice(start, start + block.shape[1])
            start += block.shape[1]
        self.matrix = np.hstack(list(columns.values()))

    def sums(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        product = self.matrix.T @ weights
        return {name: product[where] for name, where in self.slices.items()}


def exact_agreement(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Share (by weight) of the tasks with >= 2 ratings whose ratings all agree; one value per column."""
    return _ratio(sums["agree"][0], sums["multi"][0])


def pairwise_agreement(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Share of agreeing pairs of ratings of one task, pooled over tasks; one value per column."""
    return _ratio(sums["pairs_agreeing"][0], sums["pairs"][0])


def fleiss_kappa(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Fleiss' κ over tasks with >= 2 ratings (module docstring); one value per column."""
    observed = _ratio(sums["fleiss_task"][0], sums["multi"][0])
    shares = _ratio(sums["value_counts"], sums["ratings"])
    expected = (shares**2).sum(axis=0)
    return _ratio(observed - expected, 1.0 - expected)


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Each task's coincidence contributions ``(n_uc n_uk − [c = k] n_uc) / (m_u − 1)``,
    flattened to (tasks × values²); zero for a task with fewer than 2 ratings."""
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :]
    k = counts.shape[1]
    pairs[:, np.arange(k), np.arange(k)] -= counts
    scale = np.divide(1.0, m - 1, out=np.zeros_like(m), where=m >= 2)
    return (pairs * scale[:, None, None]).reshape(counts.shape[0], k * k)


def krippendorff_alpha(sums: dict[str, np.ndarray], level: AlphaLevel, values: np.ndarray) -> np.ndarray:
    """Krippendorff's α at ``level`` (module docstring) from the summed coincidences."""
    observed = sums["coincidences"]
    k = int(round(np.sqrt(observed.shape[0])))
    observed = observed.reshape(k, k, -1)
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


class PairSums:
    """What Cohen's κ of every rater pair adds up, per task, as the columns of one matrix ``F``
    (tasks × columns), so that the sums under all weight columns are products ``Fᵀ · W`` (BLAS)
    and κ follows from them (:meth:`kappas`): ``κ_w = 1 − O_w / E_w`` with
    ``E_w = Σ_ij w_ij r_i c_j / N`` (``r``, ``c`` the two raters' marginals on the tasks both
    rated, ``N`` the weight of those tasks). The columns:

    - per pair, its observed disagreement ``w[c_a, c_b]`` under the three weightings on the tasks
      both rated (0 elsewhere);
    - per rater, the one-hot of its rating (``K`` columns, 0 where it did not rate): the marginals
      of a pair whose two raters rated the same tasks (a complete design: every pair) need no
      columns of their own;
    - per other pair, both raters' one-hot ratings on the tasks both rated and a 1 (``2K + 1``).

    Every column is a small whole number, so with integer weights (bootstrap counts) whose sums
    stay below 2²⁴ / max(w) the products run in float32, exactly (every partial sum is a whole
    number float32 holds); otherwise float64. Tasks are taken in chunks that bound memory."""

    #: At most this many task × column cells of features (or of converted weights) at once.
    CHUNK_CELLS = 1 << 23

    def __init__(self, ratings: Ratings, pairs: np.ndarray):
        k, tasks = ratings.n_values, ratings.n_tasks
        self.k, self.pairs, self.n_tasks = k, pairs, tasks
        self.grid = np.full((tasks, ratings.n_raters), -1, dtype=np.int64)
        self.grid[ratings.task, ratings.rater] = ratings.code
        self.disagreement = np.stack([kappa_disagreement(k, kind) for kind in KAPPA_WEIGHTS])  # 3 × k × k
        rated = self.grid >= 0
        first, second = (pairs[:, 0], pairs[:, 1]) if len(pairs) else (np.zeros(0, np.int64),) * 2
        self.same_tasks = (rated[:, first] == rated[:, second]).all(axis=0) if tasks else np.ones(len(pairs), bool)
        self.own = np.flatnonzero(~self.same_tasks)  # pairs with marginal columns of their own
        n_pairs, n_raters = len(pairs), ratings.n_raters
        self.rater_start = 3 * n_pairs
        self.own_start = self.rater_start + k * n_raters
        self.width = self.own_start + (2 * k + 1) * self.own.size

    def features(self, rows: slice) -> np.ndarray:
        """The columns (class docstring) of the tasks ``rows``, as float64."""
        grid = self.grid[rows]
        first, second = grid[:, self.pairs[:, 0]], grid[:, self.pairs[:, 1]]
        both = (first >= 0) & (second >= 0)
        a, b = np.where(both, first, 0), np.where(both, second, 0)
        values = np.arange(self.k)
        out = np.zeros((grid.shape[0], self.width))
        out[:, :self.rater_start] = (self.disagreement[:, a, b] * both).transpose(1, 2, 0).reshape(grid.shape[0], -1)
        out[:, self.rater_start:self.own_start] = (grid[:, :, None] == values).reshape(grid.shape[0], -1)
        if self.own.size:
            mine = both[:, self.own, None]
            own = np.concatenate([(a[:, self.own, None] == values) & mine, (b[:, self.own, None] == values) & mine, mine], axis=2)
            out[:, self.own_start:] = own.reshape(grid.shape[0], -1)
        return out

    def sums(self, weights: np.ndarray) -> np.ndarray:
        """``Fᵀ · W`` (columns × C): exact in float32 for integer weights whose column sums stay
        below 2²⁴ / max(w) (class docstring), else in float64; tasks in chunks."""
        exact32 = np.issubdtype(weights.dtype, np.integer) and (
            weights.size == 0 or float(weights.sum(axis=0).max()) * max(1.0, float(self.disagreement.max())) < 2**24)
        dtype = np.float32 if exact32 else np.float64
        total = np.zeros((self.width, weights.shape[1]))
        step = max(1, self.CHUNK_CELLS // max(1, self.width, weights.shape[1]))
        for start in range(0, self.n_tasks, step):
            rows = slice(start, min(self.n_tasks, start + step))
            total += (self.features(rows).astype(dtype).T @ weights[rows].astype(dtype)).astype(np.float64)
        return total

    def kappas(self, weights: np.ndarray) -> np.ndarray:
        """Cohen's κ of every pair under every weight column: (pairs × 3 weightings × C)."""
        sums = self.sums(weights)
        n_pairs, k, columns = len(self.pairs), self.k, weights.shape[1]
        observed = sums[:self.rater_start].reshape(n_pairs, 3, columns)
        per_rater = sums[self.rater_start:self.own_start].reshape(-1, k, columns)
        rows, cols = per_rater[self.pairs[:, 0]], per_rater[self.pairs[:, 1]]  # pairs × k × C
        total = rows.sum(axis=1)
        if self.own.size:
            own = sums[self.own_start:].reshape(self.own.size, 2 * k + 1, columns)
            rows[self.own], cols[self.own], total[self.own] = own[:, :k], own[:, k:2 * k], own[:, 2 * k]
        return self._finish(observed, rows, cols, total)

    def confusions(self) -> np.ndarray:
        """Each pair's confusion matrix on the tasks both rated (pairs × K × K), one bincount."""
        first, second = self.grid[:, self.pairs[:, 0]], self.grid[:, self.pairs[:, 1]]
        both = (first >= 0) & (second >= 0)
        cell = (np.arange(len(self.pairs)) * self.k + first) * self.k + second
        return np.bincount(cell[both], minlength=len(self.pairs) * self.k * self.k).reshape(-1, self.k, self.k).astype(np.float64)

    def estimates(self) -> np.ndarray:
        """Cohen's κ of every pair on the data (all weights 1), from the confusion matrices:
        (pairs × 3 weightings); equal to :meth:`kappas` of a column of ones."""
        matrix = self.confusions()
        observed = np.einsum("wij,pij->pw", self.disagreement, matrix)[:, :, None]
        rows, cols = matrix.sum(axis=2)[:, :, None], matrix.sum(axis=1)[:, :, None]
        return self._finish(observed, rows, cols, rows.sum(axis=1))[:, :, 0]

    def _finish(self, observed: np.ndarray, rows: np.ndarray, cols: np.ndarray, total: np.ndarray) -> np.ndarray:
        """κ = 1 − O_w / E_w from the weighted disagreement (pairs × 3 × C), marginals (pairs × K × C)
        and totals (pairs × C)."""
        expected = _ratio(np.einsum("wij,pic,pjc->pwc", self.disagreement, rows, cols), total[:, None, :])
        return 1.0 - _ratio(observed, expected)


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
