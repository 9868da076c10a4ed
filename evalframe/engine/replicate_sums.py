"""The bootstrap's per-unit replicate sums, per part and mergeable (issue 22 part 4, issue 27).

For a per-unit metric the replicate ``r`` of a slice's mean is ``T_r / D_r`` with

    T_r = Σ_rows c(u(row), r) · w_row · v_row,    D_r = Σ_rows c(u(row), r) · w_row [v_row present]

(``c`` the Poisson count of the row's resampled unit ``u``, :mod:`evalframe.engine.replicates`;
``w`` the user weight; a count metric's replicates are ``T_r``). The counts depend on the unit's
key only, so any part of the rows — a bucket, a Spark partition, the whole — computes its own
``T`` and ``D`` where its rows are (:func:`part_sums`), and the parts' sums add
(:meth:`ReplicateSums.merge`). The sums are exact (:mod:`evalframe.engine.exact_sums`: integer
digit totals), so they are the same for every partition and every order: bucket, Spark and
in-memory runs give bit-identical replicate values and intervals.

With ``strata`` a replicate's weights are ``c · n_h / Σ_{v∈h} c(v, r)``; the factor depends on
the stratum and replicate only, so the sums are kept per stratum and the factor applied when the
merged sums are read (:func:`replicate_totals`): ``T_r = Σ_h scale_hr · T_hr``, strata in sorted
order.

Memory: rows are visited in blocks of :data:`BLOCK_CELLS` // R (the block's counts, float64);
what a part keeps is per slice, stratum, metric and grid digit one row of R integers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.engine import exact_sums

np = lazy_module("numpy")

#: At most this many row × replicate cells of counts at once (64 MB of float64).
BLOCK_CELLS = 1 << 23
#: The key columns of a sums row besides the slice's keys.
STRATUM, COLUMN, POSITION = "_stratum", "_column", "_position"


@dataclass(frozen=True)
class ReplicateSums:
    """Exact replicate sums of one (metric group, unit, grouping set) of one part.

    ``keys``: one row per (slice keys …, ``_stratum`` (text, "" without strata), ``_column``
    (``m`` for metric ``m``'s ``T``, ``M + m`` for its ``D``), ``_position`` (grid digit or a
    non-finite count, :mod:`~evalframe.engine.exact_sums`)); ``sums``: int64, rows × R.
    """

    keys: pl.DataFrame
    sums: np.ndarray

    def merge(self, *others: ReplicateSums) -> ReplicateSums:
        """The sums of the union of the parts: rows with equal keys add (exactly)."""
        parts = (self, *others)
        keys = pl.concat([p.keys for p in parts], how="vertical_relaxed")
        sums = np.concatenate([p.sums for p in parts])
        groups = keys.with_row_index("_row").group_by(keys.columns, maintain_order=True).agg(pl.col("_row"))
        group_of = np.empty(keys.height, dtype=np.int64)
        rows = groups.get_column("_row")
        group_of[rows.explode().to_numpy()] = np.repeat(np.arange(groups.height), rows.list.len().to_numpy())
        merged = np.zeros((groups.height, sums.shape[1]), dtype=np.int64)
        np.add.at(merged, group_of, sums)
        return ReplicateSums(groups.drop("_row"), merged)

    def to_frame(self) -> pl.DataFrame:
        """The sums as one frame (``sums``: ``Array(Int64, R)``), e.g. for Arrow."""
        return self.keys.with_columns(pl.Series("sums", self.sums, dtype=pl.Array(pl.Int64, self.sums.shape[1])))

    @classmethod
    def from_frame(cls, frame: pl.DataFrame) -> ReplicateSums:
        sums = frame.get_column("sums")
        width = sums.dtype.size  # type: ignore[union-attr]
        return cls(frame.drop("sums"), np.asarray(sums.to_numpy(), dtype=np.int64).reshape(frame.height, width))


def part_sums(wide: pl.DataFrame, metric_names: Sequence[str], weight: str | None, unit_index: np.ndarray,
              unit_counts: Callable[[np.ndarray], np.ndarray], by: Mapping[str, Sequence[str]], strata: str | None,
              resamples: int) -> dict[str, ReplicateSums]:
    """Each grouping set's :class:`ReplicateSums` of the per-unit values ``wide`` (``weight`` the
    user-weight column or None). ``unit_index`` gives each row's resampled unit (a position),
    ``unit_counts(positions)`` those units' replicate counts (units × R, float64).

    Rows are visited in blocks in unit order; within a block the digits of a unit's rows in one
    slice are added first (whole numbers, exact), so each product runs over (slice, unit) pairs,
    not rows (a post's ten criteria are one pair)."""
    values = wide.select(pl.col(name).cast(pl.Float64) for name in metric_names).to_numpy()
    present = ~np.isnan(values)
    user = wide.get_column(weight).cast(pl.Float64).to_numpy() if weight is not None else np.ones(wide.height)
    terms = np.hstack([np.where(present, values * user[:, None], 0.0), np.where(present, user[:, None], 0.0)])
    stratum = (wide.get_column(strata).cast(pl.String).fill_null("") if strata else pl.Series(STRATUM, [""] * wide.height))
    segments = {}
    for grouping, keys in by.items():
        labelled = wide.select(*keys).with_columns(stratum.alias(STRATUM))
        found = labelled.with_row_index("_row").group_by([*keys, STRATUM], maintain_order=True).agg(pl.col("_row"))
        segment_of = np.empty(wide.height, dtype=np.int64)
        rows = found.get_column("_row")
        segment_of[rows.explode().to_numpy()] = np.repeat(np.arange(found.height), rows.list.len().to_numpy())
        segments[grouping] = (found.drop("_row"), segment_of)
    # The grid digits every column uses in this part (zero digits dropped: fewer product columns).
    block = max(1, min(exact_sums.BLOCK_ROWS, BLOCK_CELLS // max(1, resamples)))
    codes = np.zeros(0, dtype=np.int64)
    for start in range(0, wide.height, block):
        codes = np.union1d(codes, _codes(terms[start:start + block]))
    if codes.size == 0:
        codes = _pair_codes(np.zeros(1), np.zeros(1))  # every slice keeps a row, even when all its terms are 0
    totals = {grouping: np.zeros((found.height, codes.size, resamples), dtype=np.int64)
              for grouping, (found, _) in segments.items()}
    order = np.argsort(unit_index, kind="stable")
    for start in range(0, wide.height, block):
        rows = order[start:start + block]
        matrix = _digit_matrix(terms[rows], codes)
        drawn, unit_of_row = np.unique(unit_index[rows], return_inverse=True)
        unit_of_row = unit_of_row.reshape(-1)
        counts = unit_counts(drawn)
        for grouping, (_, segment_of) in segments.items():
            pair = segment_of[rows] * drawn.size + unit_of_row
            by_pair = np.argsort(pair, kind="stable")
            sorted_pair = pair[by_pair]
            starts = np.flatnonzero(np.r_[True, sorted_pair[1:] != sorted_pair[:-1]])
            # Each (slice, unit) pair's digits: sums of whole numbers below 2^53, exact.
            summed = np.add.reduceat(matrix[by_pair], starts, axis=0)
            pairs = sorted_pair[starts]
            segment, unit = pairs // drawn.size, pairs % drawn.size
            bounds = np.flatnonzero(np.diff(segment)) + 1
            for first, last in zip(np.r_[0, bounds], np.r_[bounds, pairs.size], strict=True):
                # Exact: digits < 2^27, counts ≤ 20, at most BLOCK_ROWS rows (exact_sums).
                product = summed[first:last].T @ counts[unit[first:last]]
                totals[grouping][segment[first]] += product.astype(np.int64)
    out = {}
    code_frame = pl.DataFrame({COLUMN: (codes >> _SPAN_BITS).astype(np.int32), POSITION: (codes & _SPAN_MASK) - _OFFSET})
    for grouping, (found, _) in segments.items():
        keys = found.join(code_frame, how="cross")
        out[grouping] = ReplicateSums(keys, totals[grouping].reshape(-1, resamples))
    return out


#: A (column, position) pair as one int64: column · 2^32 + position + 2^31 (sorted like the pairs).
_SPAN_BITS, _OFFSET = 32, 1 << 31
_SPAN_MASK = (1 << _SPAN_BITS) - 1
#: Grid positions of finite digits lie within ±_GRID_OFFSET (float64: about −40 … 40).
_GRID_OFFSET = 64


def _pair_codes(columns: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return (columns.astype(np.int64) << _SPAN_BITS) + positions.astype(np.int64) + _OFFSET


def _codes(terms: np.ndarray) -> np.ndarray:
    """The sorted codes of the (column, grid position) pairs with a non-zero digit, and of the
    non-finite counts found (a count per grid cell: no sort of the digits)."""
    position, limbs = exact_sums.digits(terms)
    columns = np.broadcast_to(np.arange(terms.shape[1])[:, None], limbs.shape[1:])
    width = 2 * _GRID_OFFSET
    cells = np.zeros(terms.shape[1] * width, dtype=np.int64)
    for j in range(exact_sums.LIMBS):
        nonzero = limbs[..., j] != 0
        cells += np.bincount((columns[None, :, j] * width + position + j + _GRID_OFFSET)[nonzero], minlength=cells.size)
    hit = np.flatnonzero(cells)
    found = [_pair_codes(hit // width, hit % width - _GRID_OFFSET)]
    special = exact_sums.nonfinite(terms)
    for j, code in enumerate(exact_sums.NONFINITE):
        column = np.flatnonzero(special[..., j].any(axis=0))
        found.append(_pair_codes(column, np.full(column.size, code)))
    return np.unique(np.concatenate(found))


def _digit_matrix(terms: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Rows × product columns (``codes``, sorted): each term's digits in its (column, position) columns."""
    position, limbs = exact_sums.digits(terms)
    matrix = np.zeros((terms.shape[0], codes.size))
    rows = np.broadcast_to(np.arange(terms.shape[0])[:, None, None], limbs.shape)
    columns = np.broadcast_to(np.arange(terms.shape[1])[None, :, None], limbs.shape)
    positions = position[..., None] + np.arange(exact_sums.LIMBS)
    nonzero = limbs != 0
    matrix[rows[nonzero], np.searchsorted(codes, _pair_codes(columns[nonzero], positions[nonzero]))] = limbs[nonzero]
    special = exact_sums.nonfinite(terms)
    if special.any():
        for j, code in enumerate(exact_sums.NONFINITE):
            for column in np.flatnonzero(special[..., j].any(axis=0)).tolist():
                matrix[:, np.searchsorted(codes, _pair_codes(np.array([column]), np.array([code])))[0]] = special[:, column, j]
    return matrix


def replicate_totals(sums: ReplicateSums, n_metrics: int, resamples: int,
                     scale_of: Mapping[str, np.ndarray] | None) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Per slice of merged sums: the slice keys, ``T`` and ``D`` (slices × metrics × R, float64).

    ``scale_of`` maps a stratum's text to its factors (R) for the strata bootstrap (None: no
    strata). Strata add in sorted order, so the result is a function of the exact sums only."""
    key_columns = [c for c in sums.keys.columns if c not in (STRATUM, COLUMN, POSITION)]
    labelled = sums.keys.with_row_index("_row")
    # Slices in key order (whatever order the parts were merged in): what reads them in order
    # (the across-folds mean of the folds' replicates) then adds in one order.
    slices = labelled.group_by(key_columns).agg(pl.col("_row")).sort(key_columns, nulls_last=True)
    totals = np.zeros((slices.height, 2 * n_metrics, resamples))
    column = sums.keys.get_column(COLUMN).to_numpy()
    position = sums.keys.get_column(POSITION).to_numpy()
    stratum = sums.keys.get_column(STRATUM).to_numpy()
    for s, rows in enumerate(slices.get_column("_row").to_list()):
        rows = np.asarray(rows, dtype=np.int64)
        for name in sorted(set(stratum[rows].tolist())):
            chosen = rows[stratum[rows] == name]
            grid = np.unique(position[chosen])
            dense = np.zeros((2 * n_metrics, grid.size, resamples), dtype=np.int64)
            dense[column[chosen], np.searchsorted(grid, position[chosen])] = sums.sums[chosen]
            value = exact_sums.to_float(grid, dense)
            totals[s] += value if scale_of is None else value * scale_of[name][None, :]
    return slices.drop("_row"), totals[:, :n_metrics], totals[:, n_metrics:]
