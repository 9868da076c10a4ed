"""Intrinsic quality of an embedding matrix (seed 004 §21.1): isotropy, uniformity and
alignment, dimension collapse, and the chapter's health thresholds.

Every function takes an n × d matrix ``X`` (float32 or float64; n ≥ 2) — or, for the cosine
metrics, unit rows ``U``: a matrix or any object that gives rows by ``U[a:b]`` and ``U[indices]``
(:class:`evalframe.io.embeddings.UnitRows` scales them on the fly) — and works over row blocks,
so temporary memory is bounded by the block size and the d × d covariance, never n × n or a
second n × d copy. Sums accumulate in float64.

**Isotropy** (§21.1.1, names of the chapter's ``compute_isotropy``). With the covariance
``C = (X − x̄)ᵀ(X − x̄) / (n − 1)`` (one centred pass over row blocks after the mean) and its
eigenvalues ``λ`` clamped at 1e-10 and sorted descending:

- ``partition_isotropy = λ_min · d / Σλ`` (1 for equal variance in every direction);
- ``effective_dimensionality = (Σλ)² / Σλ²`` (participation ratio); ``effective_dim_ratio`` is
  it over d;
- ``top_10_variance_ratio`` / ``top_50_variance_ratio``: the share of ``Σλ`` in the largest 10 /
  50 eigenvalues (all of them when d is smaller);
- ``avg_cosine_similarity``: the mean cosine over ordered pairs i ≠ j, exactly, in O(n·d): with
  unit rows ``u_i`` and ``s = Σ u_i``, ``(|s|² − Σ|u_i|²) / (n (n − 1))``. It is the mean over
  vectors of ``c_i = (u_i · s − |u_i|²) / (n − 1)``, each vector's mean cosine to the others,
  which is what its bootstrap resamples.

**Uniformity and alignment** (§21.1.2, Wang & Isola 2020), on unit rows:

- ``alignment = mean over positive pairs of ‖u_a − u_b‖^α`` (α = 2);
- ``uniformity = log mean over pairs i < j of exp(−t ‖u_i − u_j‖²)`` (t = 2), over every pair
  exactly (in blocks) when ``n (n − 1) / 2 ≤ pair_budget``, else over ``sample_size`` pairs
  i ≠ j drawn uniformly with replacement from ``numpy.random.default_rng(seed)`` (the first index
  ``integers(0, n)``, the second ``integers(0, n − 1)`` shifted past the first), with
  ``‖u_i − u_j‖² = 2 − 2 u_i·u_j``; the result says which, how many pairs and the seed. (The chapter's all-pairs branch also averages the
  n diagonal terms ``exp(0) = 1``; evalframe averages distinct pairs only, as Wang & Isola's
  ``pdist``.)
- ``alignment_uniformity_sum``: the two added (null without positive pairs).
- Pairs from labels, as the chapter: within each label (labels in sorted order), the first 50
  members in row order, every pair i < j of them (:func:`pairs_from_labels`).

**Dimension collapse** (§21.1.3): per-dimension variance (ddof = 1); ``dead_dimensions`` are
those below ``threshold`` (default 0.01) and ``dead_ratio`` their share of d; the variance
distribution ``min, p25, median, p75, max`` (p25 / p75 linear interpolation; ``median`` as the
chapter's ``torch.median``, the lower of the two middle values when d is even). The singular
values of the centred matrix are ``σ = sqrt((n − 1) λ)`` (the covariance's unclamped eigenvalues,
negative rounding set to 0; the min(n, d) largest): ``effective_rank = exp(−Σ p log p)`` with
``p = σ / Σσ`` and ``0 log 0 = 0`` (Roy & Bhattacharya 2007); ``stable_rank = (Σσ)² / Σσ²`` as
the chapter names it, and ``stable_rank_classic = Σσ² / σ_max²`` (the usual stable rank);
``collapse_detected = dead_ratio > 0.1 or effective_rank < 0.3 d``. A matrix whose rows are all
equal has no spread: its ranks are 0 (and, by the clamping, every eigenvalue is 1e-10).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: Cells (rows × d) of a float64 block: 2M cells ≈ 16 MB, whatever d is.
BLOCK_CELLS = 2_000_000
#: Fixed block sizes in rows (tests set them small); None: from BLOCK_CELLS and d.
BLOCK_ROWS: int | None = None
PAIR_BLOCK: int | None = None
#: Side of an all-pairs uniformity tile (a 1024 × 1024 float64 tile is 8 MB).
PAIR_TILE = 1024
#: Uniformity over every pair when there are at most this many (≈ 2 s at d = 384).
PAIR_BUDGET = 50_000_000
#: Pairs drawn for uniformity past the budget.
SAMPLE_PAIRS = 1_000_000
#: The chapter's defaults.
DEAD_THRESHOLD = 0.01
ALIGNMENT_ALPHA = 2.0
UNIFORMITY_T = 2.0
LABEL_PAIR_MEMBERS = 50
_EIGEN_FLOOR = 1e-10


def _rows_per_block(d: int, fixed: int | None = None) -> int:
    return fixed or max(1, BLOCK_CELLS // max(1, d))


def _blocks(n: int, rows: int):
    for start in range(0, n, rows):
        yield start, min(n, start + rows)


def column_mean(X: np.ndarray) -> np.ndarray:
    """Mean of each column (float64), block by block."""
    total = np.zeros(X.shape[1])
    for start, stop in _blocks(X.shape[0], _rows_per_block(X.shape[1], BLOCK_ROWS)):
        total += X[start:stop].sum(axis=0, dtype=np.float64)
    return total / X.shape[0]


def covariance(X: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """``(X − x̄)ᵀ(X − x̄) / (n − 1)`` (d × d, float64): centred block by block, so no
    cancellation from a large mean and no n × d copy."""
    mean = column_mean(X) if mean is None else mean
    d = X.shape[1]
    gram = np.zeros((d, d))
    for start, stop in _blocks(X.shape[0], _rows_per_block(d, BLOCK_ROWS)):
        block = X[start:stop].astype(np.float64) - mean
        gram += block.T @ block
    return gram / (X.shape[0] - 1)


@dataclass(frozen=True)
class Spectrum:
    """What the covariance tells, computed once per matrix: the eigenvalues (descending,
    unclamped), the per-dimension variances, n and d."""

    eigenvalues: np.ndarray
    variances: np.ndarray
    n: int
    d: int

    @classmethod
    def of(cls, X: np.ndarray) -> Spectrum:
        cov = covariance(X)
        eigenvalues = np.linalg.eigvalsh(cov)[::-1].copy()
        return cls(eigenvalues=eigenvalues, variances=np.diag(cov).copy(), n=X.shape[0], d=X.shape[1])

    @property
    def clamped(self) -> np.ndarray:
        """Eigenvalues clamped at 1e-10, as the chapter's ``compute_isotropy``."""
        return np.maximum(self.eigenvalues, _EIGEN_FLOOR)

    @property
    def singular_values(self) -> np.ndarray:
        """Singular values of the centred matrix, the min(n, d) largest (module docstring)."""
        return np.sqrt(np.maximum(self.eigenvalues, 0.0) * (self.n - 1))[: min(self.n, self.d)]


def isotropy(spectrum: Spectrum) -> dict[str, float]:
    """The chapter's isotropy metrics but the cosine mean (:func:`mean_cosine`), from the spectrum."""
    lam = spectrum.clamped
    total = lam.sum()
    effective = total**2 / np.square(lam).sum()
    return {
        "partition_isotropy": float(lam.min() * lam.size / total),
        "effective_dimensionality": float(effective),
        "effective_dim_ratio": float(effective / spectrum.d),
        "top_10_variance_ratio": float(lam[:10].sum() / total),
        "top_50_variance_ratio": float(lam[:50].sum() / total),
        "embedding_dim": spectrum.d,
    }


def unit_sum(U: np.ndarray) -> tuple[np.ndarray, float]:
    """``s = Σ u_i`` (float64) and ``Σ |u_i|²`` of unit rows, block by block."""
    total, squares = np.zeros(U.shape[1]), 0.0
    for start, stop in _blocks(U.shape[0], _rows_per_block(U.shape[1], BLOCK_ROWS)):
        block = np.asarray(U[start:stop], dtype=np.float64)
        total += block.sum(axis=0)
        squares += float(np.einsum("ij,ij->", block, block))
    return total, squares


def mean_cosine(U: np.ndarray) -> float:
    """Mean cosine over ordered pairs i ≠ j of unit rows, ``(|s|² − Σ|u_i|²) / (n (n − 1))``."""
    total, squares = unit_sum(U)
    n = U.shape[0]
    return float((total @ total - squares) / (n * (n - 1)))


def cosine_contributions(U: np.ndarray) -> np.ndarray:
    """``c_i = (u_i · s − |u_i|²) / (n − 1)``: each vector's mean cosine to the others (their mean
    is :func:`mean_cosine`), the per-vector values the bootstrap resamples."""
    total, _ = unit_sum(U)
    n = U.shape[0]
    values = np.empty(n)
    for start, stop in _blocks(n, _rows_per_block(U.shape[1], BLOCK_ROWS)):
        block = np.asarray(U[start:stop], dtype=np.float64)
        values[start:stop] = (block @ total - np.einsum("ij,ij->i", block, block)) / (n - 1)
    return values


def pair_distances(U: np.ndarray, pairs: np.ndarray, alpha: float = ALIGNMENT_ALPHA) -> np.ndarray:
    """``‖u_a − u_b‖^α`` of each pair (rows of ``pairs``: two row indices), in blocks."""
    out = np.empty(pairs.shape[0])
    for start, stop in _blocks(pairs.shape[0], _rows_per_block(U.shape[1], PAIR_BLOCK)):
        a = np.asarray(U[pairs[start:stop, 0]], dtype=np.float64)
        diff = a - U[pairs[start:stop, 1]]
        squared = np.einsum("ij,ij->i", diff, diff)
        out[start:stop] = squared if alpha == 2.0 else squared ** (alpha / 2.0)
    return out


def alignment(U: np.ndarray, pairs: np.ndarray, alpha: float = ALIGNMENT_ALPHA) -> float | None:
    """Mean ``‖u_a − u_b‖^α`` over positive pairs; None without pairs."""
    if pairs.shape[0] == 0:
        return None
    return float(pair_distances(U, pairs, alpha).mean())


def pairs_from_labels(labels: Sequence | np.ndarray, members: int = LABEL_PAIR_MEMBERS) -> np.ndarray:
    """Positive pairs from labels as the chapter builds them (module docstring): an
    (n_pairs × 2) array of row indices, by label (sorted), then first member, then second.
    Rows with a null (None / NaN) label take part in no pair."""
    values = np.asarray(labels, dtype=object)
    present = np.array([v is not None and v == v for v in values], dtype=bool) if values.size else np.zeros(0, bool)
    rows = np.flatnonzero(present)
    if rows.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    codes = np.unique(values[rows].astype(str) if _mixed(values[rows]) else values[rows], return_inverse=True)[1].reshape(-1)
    order = np.lexsort((rows, codes))
    codes, rows = codes[order], rows[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    position = np.arange(rows.size) - np.repeat(starts, np.diff(np.r_[starts, rows.size]))
    keep = position < members
    codes, rows, position = codes[keep], rows[keep], position[keep]
    sizes = np.bincount(codes)
    firsts, seconds = np.triu_indices(min(members, int(sizes.max())), k=1)
    chunks = []
    group_starts = np.r_[0, np.cumsum(sizes)[:-1]]
    for size in np.unique(sizes[sizes > 1]):
        # Every label with `size` members gives the same index pattern: one gather per size.
        take = firsts < size
        pattern_a, pattern_b = firsts[take & (seconds < size)], seconds[take & (seconds < size)]
        labels_of_size = np.flatnonzero(sizes == size)
        base = group_starts[labels_of_size][:, None]
        chunks.append((labels_of_size[:, None].repeat(pattern_a.size, 1).ravel(),
                       rows[(base + pattern_a).ravel()], rows[(base + pattern_b).ravel()],
                       np.tile(np.arange(pattern_a.size), labels_of_size.size)))
    if not chunks:
        return np.empty((0, 2), dtype=np.int64)
    label, a, b, sequence = (np.concatenate(part) for part in zip(*chunks))
    order = np.lexsort((sequence, label))
    return np.stack([a[order], b[order]], axis=1).astype(np.int64)


def _mixed(values: np.ndarray) -> bool:
    return len({type(v) for v in values}) > 1


@dataclass(frozen=True)
class Uniformity:
    """The uniformity value and how it was computed: ``exact`` (every pair i < j) or a sample of
    ``pairs`` pairs drawn from ``seed``."""

    value: float
    pairs: int
    exact: bool
    seed: int | None = None
    t: float = UNIFORMITY_T

    @property
    def note(self) -> str:
        if self.exact:
            return f"all {self.pairs:,} pairs"
        return f"a seeded sample of {self.pairs:,} pairs (seed {self.seed})"


def uniformity(U: np.ndarray, t: float = UNIFORMITY_T, *, pair_budget: int = PAIR_BUDGET,
               sample_size: int = SAMPLE_PAIRS, seed: int = 0) -> Uniformity:
    """Uniformity of unit rows (module docstring): exact in blocks under ``pair_budget`` pairs,
    else over ``sample_size`` seeded pairs."""
    n = U.shape[0]
    all_pairs = n * (n - 1) // 2
    if all_pairs <= pair_budget:
        return Uniformity(float(np.log(_kernel_sum_all_pairs(U, t) / all_pairs)), all_pairs, True, t=t)
    rng = np.random.default_rng(seed)
    first = rng.integers(0, n, size=sample_size)
    # A second index uniform over the n − 1 others: i ≠ j without rejection.
    second = rng.integers(0, n - 1, size=sample_size)
    second += second >= first
    total = 0.0
    for start, stop in _blocks(sample_size, _rows_per_block(U.shape[1], PAIR_BLOCK)):
        # ‖u_i − u_j‖² = 2 − 2 u_i·u_j for unit rows (an absolute error of rounding size, which
        # exp(−t d²) does not feel).
        squared = np.maximum(2.0 - 2.0 * pair_cosines(U, first[start:stop], second[start:stop]), 0.0)
        total += np.exp(-t * squared).sum()
    return Uniformity(float(np.log(total / sample_size)), sample_size, False, seed=seed, t=t)


def pair_cosines(U, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``u_a · u_b`` for the pairs (first[i], second[i]) of unit rows (float64): the rows' own
    ``pair_cosines`` when they have one (:class:`~evalframe.io.embeddings.UnitRows` gathers raw
    rows, no scaled copies), else a row-wise dot product."""
    if hasattr(U, "pair_cosines"):
        return np.asarray(U.pair_cosines(first, second), dtype=np.float64)
    return np.einsum("ij,ij->i", np.asarray(U[first], dtype=np.float64), np.asarray(U[second], dtype=np.float64))


def _kernel_sum_all_pairs(U: np.ndarray, t: float) -> float:
    """``Σ_{i<j} exp(−t ‖u_i − u_j‖²)`` over row blocks (a PAIR_TILE × PAIR_TILE tile at a time)."""
    n, rows = U.shape[0], PAIR_TILE
    squares = np.empty(n)
    for start, stop in _blocks(n, _rows_per_block(U.shape[1], BLOCK_ROWS)):
        block = np.asarray(U[start:stop], dtype=np.float64)
        squares[start:stop] = np.einsum("ij,ij->i", block, block)
    total = 0.0
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        left = np.asarray(U[i0:i1], dtype=np.float64)
        for j0 in range(i0, n, rows):
            j1 = min(n, j0 + rows)
            gram = left @ np.asarray(U[j0:j1], dtype=np.float64).T
            squared = np.maximum(squares[i0:i1, None] + squares[None, j0:j1] - 2.0 * gram, 0.0)
            kernel = np.exp(-t * squared)
            if j0 == i0:
                kernel = np.triu(kernel, k=1)
            total += kernel.sum()
    return total


def collapse(spectrum: Spectrum, threshold: float = DEAD_THRESHOLD) -> dict[str, float | int | bool | None]:
    """The chapter's ``detect_dimension_collapse`` from the spectrum (module docstring)."""
    variances, d = spectrum.variances, spectrum.d
    dead = int((variances < threshold).sum())
    sigma = spectrum.singular_values
    total, squares = sigma.sum(), np.square(sigma).sum()
    if total > 0:
        p = sigma / total
        positive = p[p > 0]
        effective_rank = float(np.exp(-(positive * np.log(positive)).sum()))
        stable = float(total**2 / squares)
        classic = float(squares / sigma.max() ** 2)
    else:
        effective_rank, stable, classic = 0.0, 0.0, 0.0
    return {
        "dead_dimensions": dead,
        "dead_ratio": dead / d,
        "variance_min": float(variances.min()),
        "variance_p25": float(np.quantile(variances, 0.25)),
        "variance_median": float(np.quantile(variances, 0.5, method="lower")),
        "variance_p75": float(np.quantile(variances, 0.75)),
        "variance_max": float(variances.max()),
        "effective_rank": effective_rank,
        "stable_rank": stable,
        "stable_rank_classic": classic,
        "nominal_dimension": d,
        "collapse_detected": bool(dead / d > 0.1 or effective_rank < d * 0.3),
    }


@dataclass(frozen=True)
class HealthRule:
    """A metric's good range and warning sign (§21.1.1 tip, §21.1.2 note), as text and tests."""

    good: tuple[tuple[str, float], ...]
    warning: tuple[tuple[str, float], ...] = ()
    source: str = ""
    _ops: dict = field(default_factory=lambda: {">": np.greater, "<": np.less, ">=": np.greater_equal,
                                                "<=": np.less_equal}, repr=False, compare=False)

    def _holds(self, rules, value: float) -> bool:
        return bool(rules) and all(self._ops[op](value, bound) for op, bound in rules)

    def verdict(self, value: float | None) -> str | None:
        """``good`` (inside the good range), ``warning`` (a warning sign), else ``fair``; None
        for a missing value."""
        if value is None or value != value:
            return None
        if self._holds(self.good, value):
            return "good"
        if self.warning and any(self._ops[op](value, bound) for op, bound in self.warning):
            return "warning"
        return "fair"

    @property
    def good_text(self) -> str:
        if len(self.good) == 2 and self.good[0][0].startswith(">") and self.good[1][0].startswith("<"):
            return f"in [{self.good[0][1]:g}, {self.good[1][1]:g}]"
        return " and ".join(f"{op} {bound:g}" for op, bound in self.good)

    @property
    def warning_text(self) -> str:
        return " or ".join(f"{op} {bound:g}" for op, bound in self.warning)


#: The chapter's thresholds: good values and warning signs.
HEALTH: dict[str, HealthRule] = {
    "partition_isotropy": HealthRule(good=((">", 0.5),), source="§21.1.1"),
    "effective_dim_ratio": HealthRule(good=((">", 0.5),), warning=(("<", 0.2),), source="§21.1.1"),
    "avg_cosine_similarity": HealthRule(good=((">=", -0.01), ("<=", 0.05)), warning=((">", 0.3),), source="§21.1.1"),
    "top_10_variance_ratio": HealthRule(good=(("<", 0.2),), warning=((">", 0.5),), source="§21.1.1"),
    "alignment": HealthRule(good=(("<", 0.5),), source="§21.1.2"),
    "uniformity": HealthRule(good=(("<", -2.0),), source="§21.1.2"),
    "dead_ratio": HealthRule(good=(("<=", 0.1),), warning=((">", 0.1),), source="§21.1.3"),
}
#: Whether a larger value is better, for the metrics the report compares (None: neither).
HIGHER_IS_BETTER = {
    "partition_isotropy": True, "effective_dimensionality": True, "effective_dim_ratio": True,
    "top_10_variance_ratio": False, "top_50_variance_ratio": False, "alignment": False, "uniformity": False,
    "dead_dimensions": False, "dead_ratio": False, "effective_rank": True, "stable_rank": True,
    "stable_rank_classic": True,
}

__all__ = [
    "HEALTH",
    "HealthRule",
    "Spectrum",
    "Uniformity",
    "alignment",
    "collapse",
    "column_mean",
    "cosine_contributions",
    "covariance",
    "isotropy",
    "mean_cosine",
    "pair_distances",
    "pairs_from_labels",
    "uniformity",
]
