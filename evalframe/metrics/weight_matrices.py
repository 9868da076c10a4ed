"""Metrics under weight matrices: the data a set metric's bootstrap and randomization tests work on.

A weight matrix gives every row of a slice ``R`` weights at once, one per replicate (a bootstrap
draw, a permutation). :class:`RowWeights` holds it factored by unit (``W[i, r] = scale[i] ·
units[index[i], r]``) so that sums are products over units, not rows; :func:`row_weights`
checks a plain matrix into one. A set metric's state under every column at once is a
:class:`ReplicateState`: the state :meth:`~evalframe.metrics.base.SetMetric.state` would give,
with one slice per replicate (key :data:`REPLICATE`, built by :func:`replicate_frame`), so that
the metric's own ``finalize`` turns it into ``R`` values (:func:`finalized_values`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from evalframe._lazy import lazy_module

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light


@dataclass(frozen=True)
class ReplicateState:
    """A state (as :meth:`SetMetric.state` gives) with one slice per weight column, key ``_replicate``."""

    table: pl.DataFrame
    replicates: int


def replicate_count(state: object) -> int:
    return state.replicates  # type: ignore[attr-defined]


#: The key of the slice a stacked replicate state belongs to (:func:`~evalframe.metrics.base.values_under_grouped`).
SLICE = "_slice"


class RowWeights:
    """A weight matrix (rows × R) given as unit weights: ``W[i, r] = scale[i] · units[index[i], r]``.

    What :meth:`SetMetric.values_under` works with: a plain matrix is wrapped with one unit per
    row (:func:`row_weights`); the bootstrap passes its unit counts this way so that no
    rows × R matrix is built for sums, which are computed per unit first and then multiplied
    with the unit matrix (``(indicator ᵀ · P) · units``, ``P`` the row→unit map): a product
    over units, not rows.
    """

    def __init__(self, units: np.ndarray, index: np.ndarray | None = None, scale: np.ndarray | None = None,
                 positive_units: np.ndarray | None = None, whole_units: list[bool] | None = None):
        self.units = units
        n = units.shape[0] if index is None else index.shape[0]
        self.index = np.arange(n) if index is None else index
        self.scale = np.ones(n) if scale is None else scale
        self._positive_units = positive_units
        self._whole_units = [] if whole_units is None else whole_units  # shared by take(): checked once

    @property
    def whole_units(self) -> bool:
        """Whether every unit weight is a whole number (a count of draws; computed once)."""
        if not self._whole_units:
            self._whole_units.append(bool(np.array_equal(self.units, np.floor(self.units))))
        return self._whole_units[0]

    @property
    def positive_units(self) -> np.ndarray:
        """``units > 0`` as floats (computed once; pass it to share it between row sets)."""
        if self._positive_units is None:
            self._positive_units = (self.units > 0).astype(np.float64)
        return self._positive_units

    @property
    def shape(self) -> tuple[int, int]:
        return (self.index.shape[0], self.units.shape[1])

    def take(self, rows: np.ndarray) -> RowWeights:
        """The weights of the rows ``rows`` (positions, a boolean mask or a slice), still factored."""
        return RowWeights(self.units, self.index[rows], self.scale[rows], self._positive_units, self._whole_units)

    def dense(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The matrix itself (of ``rows`` only, in their order)."""
        index, scale = (self.index, self.scale) if rows is None else (self.index[rows], self.scale[rows])
        if np.all(scale == 1.0):
            return self.units[index]
        return self.units[index] * scale[:, None]

    def grouped(self, codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``Σ_{i in rows, code_i = k} W[i, r]`` for every group ``k`` in ``[0, codes.max()]``.

        One sparse (groups × units) matrix times the unit matrix: a pass over the rows' weights
        without building them.
        """
        from scipy import sparse  # imported where used: `import evalframe` stays light

        groups = int(codes.max()) + 1 if codes.size else 0
        indicator = sparse.csr_matrix((self.scale[rows], (codes, self.index[rows])), shape=(groups, self.units.shape[0]))
        return np.asarray(indicator @ self.units)

    def sums(self, codes: np.ndarray, groups: int, values: np.ndarray | None = None) -> np.ndarray:
        """``Σ_i [code_i = k] · values_i · W[i, r]`` for every group ``k``: (groups × R).

        The rows are first added per (group, unit) (one ``bincount``), then multiplied with the
        unit matrix: (groups × units) · (units × R).
        """
        n_units = self.units.shape[0]
        row_weight = self.scale if values is None else self.scale * values
        per_unit = np.bincount(codes * n_units + self.index, weights=row_weight, minlength=groups * n_units)
        return per_unit.reshape(groups, n_units) @ self.units

    def positive_counts(self, codes: np.ndarray, groups: int) -> np.ndarray:
        """Rows of positive weight per group and column: (groups × R) integers."""
        n_units = self.units.shape[0]
        kept = self.scale > 0
        per_unit = np.bincount(codes[kept] * n_units + self.index[kept], minlength=groups * n_units)
        return np.rint(per_unit.reshape(groups, n_units).astype(np.float64) @ self.positive_units).astype(np.int64)


def row_weights(frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> RowWeights:
    """``weights`` checked (one row per row of ``frame``, finite, non-negative) as :class:`RowWeights`."""
    if isinstance(weights, RowWeights):
        if weights.shape[0] != frame.height:
            raise ValueError(f"weights must have {frame.height} rows, got {weights.shape[0]}")
        return weights
    matrix = np.asarray(weights, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != frame.height:
        raise ValueError(f"weights must have shape ({frame.height}, R), got {matrix.shape}")
    if matrix.size and (not np.isfinite(matrix.sum()) or matrix.min() < 0):
        raise ValueError("weights must be finite and non-negative")
    return RowWeights(matrix)


def scored_rows(frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> tuple[np.ndarray, np.ndarray, RowWeights]:
    """The rows with both ``label`` and ``prob``: ``(label == 1, prob, weights)`` of them."""
    weights = row_weights(frame, weights)
    label = frame.get_column("label").cast(pl.Float64).to_numpy()
    prob = frame.get_column("prob").cast(pl.Float64).to_numpy()
    used = ~(np.isnan(label) | np.isnan(prob))
    if used.all():
        return label == 1, prob, weights
    return label[used] == 1, prob[used], weights.take(used)


def replicate_frame(columns: dict[str, np.ndarray], replicates: int, keys: dict[str, np.ndarray] | None = None) -> ReplicateState:
    """A state table for :meth:`SetMetric.finalize` with one slice per replicate: key ``_replicate``.

    ``columns`` are (K × R) or (R,) arrays of sums (K state keys, e.g. bins); ``keys`` the K
    values of each state key. Rows ordered by replicate, then key.
    """
    data: dict[str, np.ndarray] = {}
    first = next(iter(columns.values()))
    k = 1 if first.ndim == 1 else first.shape[0]
    data[REPLICATE] = np.repeat(np.arange(replicates, dtype=np.int64), k)
    for name, values in (keys or {}).items():
        data[name] = np.tile(values, replicates)
    for name, values in columns.items():
        data[name] = values.reshape(k, replicates).T.reshape(-1)
    return ReplicateState(pl.DataFrame(data), replicates)


def finalized_values(table: pl.DataFrame, replicates: int) -> np.ndarray:
    """The ``value`` of each replicate from ``finalize(..., by=[_replicate])`` (nan where null)."""
    values = np.full(replicates, np.nan)
    values[table.get_column(REPLICATE).to_numpy()] = table.get_column("value").cast(pl.Float64).fill_null(np.nan).to_numpy()
    return values


def finalized_slices(table: pl.DataFrame, replicates: int) -> list[tuple[int, np.ndarray]]:
    """:func:`finalized_values` of each slice of ``finalize(..., by=[_slice, _replicate])``:
    ``(slice, values)`` pairs, one NumPy pass over the whole table."""
    if table.height == 0:  # no slice has a state row (e.g. no judged query in any slice)
        return []
    slice_of = table.get_column(SLICE).to_numpy()
    replicate_of = table.get_column(REPLICATE).to_numpy()
    value = table.get_column("value").cast(pl.Float64).fill_null(np.nan).to_numpy()
    order = np.argsort(slice_of, kind="stable")
    found, starts = np.unique(slice_of[order], return_index=True)
    out = []
    for position, start, stop in zip(found.tolist(), starts.tolist(), [*starts[1:].tolist(), order.size], strict=True):
        values = np.full(replicates, np.nan)
        chosen = order[start:stop]
        values[replicate_of[chosen]] = value[chosen]
        out.append((position, values))
    return out


#: The slice key of a state built per replicate (:func:`replicate_frame`).
REPLICATE = "_replicate"
