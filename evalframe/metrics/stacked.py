"""A set metric's state under many weight vectors at once: the stacked state (bootstrap, tests).

:meth:`~evalframe.metrics.base.SetMetric.values_under` needs a metric's value under each column
of a weight matrix ``W`` (rows × R). Every set metric already says how to reduce rows to a
mergeable state (:meth:`~evalframe.metrics.base.SetMetric.state`) and how to turn a state into
its value (``finalize``), so the value under ``W`` needs no code of its own: it is ``finalize``
of the *stacked state*, the state of column ``r`` for every ``r`` with a key ``_replicate``.

:func:`stacked_state` builds it from the metric's own ``state`` without copying a row per
replicate. ``W`` is factored as ``W[i, r] = scale_i · units[u_i, r]`` (a row's user weight times
its unit's replicate count, :class:`~evalframe.metrics.base.RowWeights`), so:

1. the state is computed once per unit (``state(rows, by=[_unit])`` with the rows' own weights);
2. each state column is classified by how it depends on the weights, by computing the slice's
   state a second time with every weight doubled: a *weighted sum* doubles (``Σ w·x``), a *count*
   of rows does not change (``n``) (doubling is exact in floating point, so equal means equal);
3. the state of column ``r`` is then a product over units, for every state key ``k``::

       weighted sum:  S[k, r] = Σ_u s[u, k] · units[u, r]
       count:         S[k, r] = Σ_u s[u, k] · [units[u, r] > 0]

   and key ``k`` is in replicate ``r`` when one of its units is drawn (a row of weight 0 is
   absent, as in the state of the rows that column keeps).

A metric may declare the kinds instead (``state_kinds``: column → ``"sum"`` or ``"count"``), which
spares the probe's second state.

The products are sparse (keys × units) times dense (units × R) matrix products, one for all the
columns of a kind, stored by unit (each unit's row of weights is read once): no loop over rows
or replicates, and each sum adds its units in ascending order. Exact: a state merges by
summation (DESIGN §3), so the state of a multiset of units is the count-weighted sum of theirs.
A state column that is neither (not linear in the weights) falls back to the rows repeated per
replicate with their weights: correct, slower.

**Dense form.** Step 3's products are the state in *dense form* (:class:`DenseState`): the state
keys of the slice once (K, in key order, nulls last) and each state column as a K × R matrix
(``S[k, r]`` above), computed when a metric asks for it (:meth:`DenseState.column`; a column
summed over the keys, :meth:`DenseState.total`, is a product over units alone). The *stacked*
state (:func:`stacked_states`, key ``_replicate``, one row per key present in a replicate) is
that form written long, for a metric whose ``finalize`` is a Polars plan. A set metric whose
value is a vectorised function of its state's sums by key reads the dense form itself, with no
long table (:class:`~evalframe.metrics.keyed_sums.KeyedSumsMetric`, the ROC family): its
``finalize`` calls the same function with the slices of a Polars state as the columns.

:func:`stacked_states` does this for every slice of a grouping at once: steps 1 and 2 are one
Polars batch (the slice a key of the group-by), step 3 runs for many slices in one product
(each unit's row of weights read once for all of them; each cell still adds only its own slice's
units, in ascending order, so a slice's sums have the bits they have alone). The bootstrap calls
it once per metric state, grouping and block of replicates, never per replicate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import polars as pl

#: Key of the unit a row belongs to, while a per-unit state is computed.
UNIT = "_stacked_unit"
#: Key of the probe (0: the rows' weights, 1: doubled) while a per-unit state is computed.
PROBE = "_stacked_probe"
#: Dense code of a state key while a per-unit state is computed.
CODE = "_stacked_key"
#: Key of the slice a row belongs to, while the per-unit states of several slices are computed.
SLICE_CODE = "_stacked_slice"


def stacked_state(metric: Any, frame: pl.DataFrame, weights: Any, *, weight: str, replicate: str) -> pl.DataFrame:
    """The state of ``metric`` (a :class:`~evalframe.metrics.base.SetMetric`) under every column
    of ``weights`` (a :class:`~evalframe.metrics.base.RowWeights`), stacked: key ``replicate``.

    The rows' weight column is ``weight``. Columns ``replicate``, the metric's ``state_keys`` and
    its state columns, rows ordered by replicate; a replicate without a row of positive weight
    has no row (module docstring). The one slice of :func:`stacked_states`.
    """
    return next(stacked_states(metric, frame, [np.arange(frame.height)], weights, weight=weight, replicate=replicate))


def stacked_states(metric: Any, frame: pl.DataFrame, slices: Sequence[np.ndarray], weights: Any, *, weight: str,
                   replicate: str) -> Iterator[pl.DataFrame]:
    """:func:`stacked_state` of each slice of ``frame`` (``slices``: the row positions of each), in
    order, under ``weights`` (a :class:`~evalframe.metrics.base.RowWeights` of ``frame``'s rows).

    The per-unit states of every slice come from one Polars plan (the slice is a key of its
    group-by, so each slice's per-unit state is the one it has alone); the products then run for
    several slices at once (:func:`long_tables`, at most about :data:`_PRODUCT_CELLS` cells), and
    their tables are made one at a time as the caller asks for them.
    """
    pending: list[DenseState] = []  # slices whose products are made together
    cells = 0
    for dense, slice_rows, slice_weights in _per_unit_slices(metric, frame, slices, weights, weight=weight):
        if dense is None:  # a state column not linear in the weights
            yield from long_tables(pending, replicate)
            pending, cells = [], 0
            yield _repeated_rows_state(metric, slice_rows(), slice_weights(), weight=weight, replicate=replicate)
            continue
        pending.append(dense)
        cells += dense.long_cells
        if cells >= _PRODUCT_CELLS:
            yield from long_tables(pending, replicate)
            pending, cells = [], 0
    yield from long_tables(pending, replicate)


#: At most about this many cells (state rows × columns × R) of several slices' products are made
#: at once (:func:`long_tables`): 2^23 float64 cells are 64 MiB.
_PRODUCT_CELLS = 1 << 23


def long_tables(denses: Sequence[DenseState], replicate: str) -> Iterator[pl.DataFrame]:
    """:meth:`DenseState.long_table` of several slices under one weight matrix, in order, with the
    products of all of them made at once: two sparse products (the drawn-unit indicator, the
    weights) in place of two per slice.

    Each unit's row of weights is then read once for every slice it is in, not once per slice
    (the products of a slice's few state rows read the whole weight matrix: memory, not
    arithmetic, was their cost). Each cell still adds its own units in ascending order, so every
    slice's table has the bits it has alone.
    """
    shared = [d for d in denses if d.size and d._weights is denses[0]._weights]
    if len(shared) < 2:
        for dense in denses:
            yield dense.long_table(replicate)
        return
    weights = shared[0]._weights
    with_positive = iter(_products_of_many([dense._positive_parts() for dense in shared], weights.positive_units, whole=True))
    with_weights = iter(_products_of_many([dense._weighted_parts() for dense in shared], weights.units,
                                          whole=weights.whole_units))
    for dense in denses:
        if dense.size and dense._weights is weights:
            yield dense.long_table(replicate, products=(next(with_positive), next(with_weights)))
        else:
            yield dense.long_table(replicate)


def dense_states(metric: Any, frame: pl.DataFrame, slices: Sequence[np.ndarray], weights: Any, *,
                 weight: str) -> Iterator[DenseState]:
    """The state of each slice of ``frame`` under ``weights`` in dense form (:class:`DenseState`), in
    order: the per-unit states of :func:`stacked_states`, with the products left to the metric.
    The metric's state must be sums and counts of rows (linear in the weights), else ValueError."""
    for dense, _, _ in _per_unit_slices(metric, frame, slices, weights, weight=weight):
        if dense is None:
            msg = f"`{metric.name}`: its state has a column that is neither a weighted sum nor a count of rows"
            raise ValueError(msg)
        yield dense


def _per_unit_slices(metric: Any, frame: pl.DataFrame, slices: Sequence[np.ndarray], weights: Any, *,
                     weight: str) -> Iterator[tuple[DenseState | None, Any, Any]]:
    """Per slice: its :class:`DenseState` (None when a state column is not linear in the weights),
    and functions giving the slice's rows and its weights (for the repeated-rows fallback)."""
    WEIGHT = weight  # noqa: N806 (the base module's column name)
    order = np.concatenate(slices) if len(slices) else np.zeros(0, np.int64)
    slice_code = np.repeat(np.arange(len(slices), dtype=np.int64), [s.size for s in slices])
    rows = frame[order].with_columns(pl.Series(SLICE_CODE, slice_code))
    weights = weights.take(order)
    if type(metric).slice_columns.__qualname__ != "SetMetric.slice_columns":  # columns over the whole slice first
        rows = metric.slice_columns(rows.lazy().with_columns(pl.lit(1.0).alias(WEIGHT)), [SLICE_CODE]).drop(WEIGHT).collect(engine="in-memory")
    kept = weights.scale > 0
    kept_rows = rows.filter(pl.Series(kept)) if not kept.all() else rows
    kept_rows = kept_rows.with_columns(pl.Series(UNIT, weights.index[kept], dtype=pl.Int64),
                                       pl.Series(WEIGHT, weights.scale[kept], dtype=pl.Float64))
    keys = list(metric.state_keys)
    probes = pl.concat([
        kept_rows.lazy().with_columns(pl.lit(0, dtype=pl.Int8).alias(PROBE)),
        kept_rows.lazy().with_columns(pl.lit(1, dtype=pl.Int8).alias(PROBE), (pl.col(WEIGHT) * 2.0).alias(WEIGHT)),
    ])
    # One batch of two plans: the per-unit state of every slice, sorted by key and unit with a
    # dense code per distinct key (over all slices: each slice's codes are then made to start at
    # 0), and each slice's state under its weights and under them doubled (the probes), a key's
    # two probes neighbours. A metric that declares its columns' kinds (``state_kinds``) is not probed.
    code = (pl.struct([SLICE_CODE, *keys]).is_first_distinct().cum_sum() - 1) if keys else pl.lit(0)
    declared = getattr(metric, "state_kinds", None)
    plans = [metric.state_of(kept_rows.lazy(), [SLICE_CODE, UNIT])
             .sort([SLICE_CODE, *keys, UNIT], nulls_last=True)
             .with_columns(code.cast(pl.Int64).alias(CODE))]
    if declared is None:
        plans.append(metric.state_of(probes, [SLICE_CODE, PROBE]).sort([SLICE_CODE, *keys, PROBE], nulls_last=True))
    per_unit, probed = [*pl.collect_all(plans, engine="in-memory"), None][:2]
    unit_bounds = np.searchsorted(per_unit.get_column(SLICE_CODE).to_numpy(), np.arange(len(slices) + 1))
    per_unit = per_unit.drop(SLICE_CODE)
    if probed is not None:
        probe_bounds = np.searchsorted(probed.get_column(SLICE_CODE).to_numpy(), np.arange(len(slices) + 1))
        probed = probed.drop(SLICE_CODE)
    row_bounds = np.cumsum([0, *(s.size for s in slices)])  # the rows are in slice order
    for position in range(len(slices)):
        in_slice = slice(int(row_bounds[position]), int(row_bounds[position + 1]))
        probes_of_slice = probed[int(probe_bounds[position]):int(probe_bounds[position + 1])] if probed is not None else None
        yield (_dense_slice(metric, per_unit[int(unit_bounds[position]):int(unit_bounds[position + 1])],
                            probes_of_slice, keys, weights, declared),
               lambda in_slice=in_slice: rows[in_slice].drop(SLICE_CODE), lambda in_slice=in_slice: weights.take(in_slice))


def _column_kinds(metric: Any, probed: pl.DataFrame, value_columns: list[str]) -> dict[str, str] | None:
    """How each state column depends on the weights, from a slice's state under its weights and
    under them doubled (rows of probe 0 and 1 in turn): ``sum`` (doubles), ``count`` (unchanged);
    None when a column is neither (not linear in the weights)."""
    probe = probed.get_column(PROBE).to_numpy()
    if probed.height % 2 or (probe[0::2] != 0).any() or (probe[1::2] != 1).any():
        msg = f"`{metric.name}`: the state of doubled weights has other keys than the state itself"
        raise ValueError(msg)
    kinds = {}
    table = _as_floats(probed, value_columns, np.nan)
    for position, column in enumerate(value_columns):
        once, twice = table[0::2, position], table[1::2, position]
        if np.array_equal(twice, 2 * once, equal_nan=True):
            kinds[column] = "sum"
        elif np.array_equal(twice, once, equal_nan=True):
            kinds[column] = "count"
        else:
            return None
    return kinds


def _dense_slice(metric: Any, per_unit: pl.DataFrame, probed: pl.DataFrame | None, keys: list[str],
                 weights: Any, declared: dict[str, str] | None) -> DenseState | None:
    """One slice's :class:`DenseState` from its per-unit state and its probes (:func:`stacked_states`),
    or the kinds the metric declares; None when a state column is not linear in the weights."""
    value_columns = [c for c in per_unit.columns if c not in (UNIT, CODE, *keys)]
    kinds = dict(declared) if probed is None else _column_kinds(metric, probed, value_columns)
    if kinds is None:
        return None
    return DenseState(per_unit, keys, value_columns, kinds, weights)


class DenseState:
    """A slice's state under R weight columns in dense form (module docstring): the state keys once,
    each state column as a keys × R matrix of products over units, made on request.

    - :attr:`keys`: the K distinct state keys of the slice (a table, key order, nulls last);
    - :meth:`column` (K × R, or the keys asked for): ``Σ_u s[u, k] · units[u, r]`` for a weighted
      sum, with the drawn-unit indicator ``[units[u, r] > 0]`` for a count (a key whose units are
      not drawn in ``r`` is 0 there); :meth:`nonzero_keys`: the keys where it can be non-zero;
      :meth:`total` (R): the column summed over the keys; :meth:`key`: a numeric key's values;
    - :meth:`long_table`: the stacked state (one row per replicate and key present in it).

    Each cell adds its units in ascending order (one sparse product, zeros left out), so a
    column has the bits of the long form's.
    """

    def __init__(self, per_unit: pl.DataFrame, keys: list[str], value_columns: list[str], kinds: dict[str, str], weights: Any):
        self._per_unit, self._key_names, self.value_columns, self.kinds = per_unit, keys, value_columns, kinds
        self._weights = weights
        self.replicates = weights.shape[1]
        if per_unit.height:
            key_code = per_unit.get_column(CODE).to_numpy()
            self._key_code = key_code - key_code[0]
            self.size = int(self._key_code[-1]) + 1
        else:
            self._key_code, self.size = np.zeros(0, np.int64), 0
        self._unit_of = per_unit.get_column(UNIT).to_numpy()
        # State sums are never null (a count or a sum over rows).
        self._values = {c: per_unit.get_column(c).to_numpy().astype(np.float64) for c in value_columns}

    @property
    def keys(self) -> pl.DataFrame:
        """The slice's distinct state keys, one row each, in key order (nulls last)."""
        first = np.flatnonzero(np.r_[True, self._key_code[1:] != self._key_code[:-1]]) if self.size else np.zeros(0, np.int64)
        return self._per_unit.select(self._key_names)[first]

    @property
    def width(self) -> int:
        """Columns of the dense form: the replicates R."""
        return self.replicates

    def key(self, name: str) -> np.ndarray:
        """The numeric state key ``name`` of each of the K keys, as a K × 1 float column (null: NaN)."""
        first = np.flatnonzero(np.r_[True, self._key_code[1:] != self._key_code[:-1]]) if self.size else np.zeros(0, np.int64)
        values = self._per_unit.get_column(name).to_numpy()  # a numeric key: null is NaN
        return values[first].astype(np.float64)[:, None]

    def _against(self, name: str) -> np.ndarray:
        return self._weights.units if self.kinds[name] == "sum" else self._weights.positive_units

    def nonzero_keys(self, name: str) -> np.ndarray:
        """Positions (key order) of the keys where the column is not 0 under some weight column:
        the keys with a unit whose value there is not 0."""
        return np.unique(self._key_code[self._values[name] != 0])

    def column(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """The state column ``name`` under every weight column, at the keys ``rows`` (positions, in
        the order given; all K in key order by default): len(rows) × R, one sparse product
        (units in ascending order in every cell, zeros left out)."""
        from scipy import sparse  # imported where used: every run resolves this module's metrics

        rows = np.arange(self.size) if rows is None else np.asarray(rows, dtype=np.int64)
        position = np.full(self.size, -1, dtype=np.int64)
        position[rows] = np.arange(rows.size)
        at = position[self._key_code]
        values = self._values[name]
        keep = (at >= 0) & (values != 0)
        against = self._against(name)
        matrix = sparse.csc_matrix((values[keep], (at[keep], self._unit_of[keep])), shape=(rows.size, against.shape[0]))
        return np.asarray(matrix @ against)

    def total(self, name: str) -> np.ndarray:
        """The state column ``name`` summed over the keys, under every weight column: R values
        (``Σ_u (Σ_k s[u, k]) · units[u, r]``: a product over units, no K × R matrix); meant for
        counts of rows, whose sums are exact."""
        against = self._against(name)
        per_unit = np.bincount(self._unit_of, weights=self._values[name], minlength=against.shape[0])
        return per_unit @ against

    def integral(self, name: str) -> bool:
        """Whether every value of :meth:`column` is a whole number (whole per-unit sums and weights)."""
        return _whole(self._values[name]) and (self.kinds[name] == "count" or self._weights.whole_units)

    @property
    def long_cells(self) -> int:
        """Cells of :meth:`long_table`'s products: (1 + state columns) × keys × R."""
        return (1 + len(self.value_columns)) * self.size * self.replicates

    def _positive_parts(self) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, int]:
        """What goes with the drawn-unit indicator: presence (a key is in a replicate when one of
        its units is drawn) and the counts of rows, as :func:`_products_of_many` takes them."""
        counts = [self._values[c] for c in self.value_columns if self.kinds[c] == "count"]
        return [np.ones(self._per_unit.height), *counts], self._key_code, self._unit_of, self.size

    def _weighted_parts(self) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, int]:
        """What goes with the weights: the weighted sums."""
        sums = [self._values[c] for c in self.value_columns if self.kinds[c] == "sum"]
        return sums, self._key_code, self._unit_of, self.size

    def long_table(self, replicate: str, products: tuple[np.ndarray, np.ndarray] | None = None) -> pl.DataFrame:
        """The stacked state: columns ``replicate``, the state keys and columns, one row per replicate
        and key with a drawn unit, ordered by replicate, then key. ``products``: those of
        :meth:`_positive_parts` and :meth:`_weighted_parts` when made already (:func:`long_tables`)."""
        REPLICATE = replicate  # noqa: N806
        first, schema, value_columns, kinds = self._per_unit, self._per_unit.schema, self.value_columns, self.kinds
        keys = self._key_names
        if first.height == 0:
            return pl.DataFrame(schema={REPLICATE: pl.Int64, **{c: schema[c] for c in [*keys, *value_columns]}})
        sums = [c for c in value_columns if kinds[c] == "sum"]
        if products is None:
            with_positive = _products_of_many([self._positive_parts()], self._weights.positive_units, whole=True)[0]
            with_weights = _products_of_many([self._weighted_parts()], self._weights.units, whole=self._weights.whole_units)[0]
        else:
            with_positive, with_weights = products
        stacked_of = dict(zip(sums, with_weights, strict=True))
        stacked_of.update(zip([c for c in value_columns if kinds[c] == "count"], with_positive[1:], strict=True))
        present = with_positive[0] > 0                                  # keys × R
        replicate_of, key_of = np.nonzero(present.T)                   # ordered by replicate, then key
        data: list[pl.Series] = [pl.Series(REPLICATE, replicate_of.astype(np.int64))]
        if keys:
            data += self.keys[key_of].get_columns()
        for column in value_columns:
            stacked = stacked_of[column][key_of, replicate_of]
            data.append(pl.Series(column, np.rint(stacked) if schema[column].is_integer() else stacked))
        return pl.DataFrame(data).cast({column: schema[column] for column in value_columns})


def _whole(matrix: np.ndarray) -> bool:
    """Whether every entry of ``matrix`` is a whole number."""
    return bool(np.array_equal(matrix, np.floor(matrix)))


def _as_floats(table: pl.DataFrame, columns: list[str], null: float) -> np.ndarray:
    """``columns`` of ``table`` as one float64 matrix (rows × columns), nulls as ``null``."""
    if not columns:
        return np.zeros((table.height, 0))
    return table.select(pl.col(columns).cast(pl.Float64).fill_null(null)).to_numpy()


def _products_of_many(parts: Sequence[tuple[list[np.ndarray], np.ndarray, np.ndarray, int]],
                      against: np.ndarray, *, whole: bool) -> list[np.ndarray]:
    """``S_c · against`` for each per-unit state column ``c`` of each part ``(columns, key_code,
    unit_of, n_keys)`` (``S_c``: keys × units, the value of row ``i`` at ``(key_code[i],
    unit_of[i])``): one array (columns × keys × R) per part. ``whole``: every entry of
    ``against`` is a whole number.

    One sparse product for every column of every part, stored by unit (CSC): each unit's row of
    ``against`` is read once for every part, column and key it adds to, instead of once per
    product; every cell still adds its units in ascending order (a cell has at most one entry per
    unit), so the sums have the bits of one product per column and part.

    When every value and weight is a whole number and no sum can reach 2^53, every partial sum
    is exact, so any order of adding gives those same bits: a matrix that is not too sparse
    (:data:`_DENSE_SHARE`, at most :data:`_DENSE_CELLS` cells) is then multiplied dense (BLAS,
    blocked for the cache: many times the sparse product's speed on the counts of a few slices).
    """
    replicates = against.shape[1]
    data, rows, units, shapes = [], [], [], []
    offset = 0
    for columns, key_code, unit_of, n_keys in parts:
        count = len(columns)
        shapes.append((offset, count, n_keys))
        if count:
            data.append(np.concatenate(columns))
            rows.append((key_code[None, :] + n_keys * np.arange(count)[:, None]).reshape(-1) + offset)
            units.append(np.tile(unit_of, count))
        offset += count * n_keys
    if not data:
        return [np.zeros((count, n_keys, replicates)) for _, count, n_keys in shapes]
    values, row, unit = np.concatenate(data), np.concatenate(rows), np.concatenate(units)
    product = _dense_product(values, row, unit, offset, against) if whole else None
    if product is None:
        from scipy import sparse  # imported where used: every run resolves this module's metrics

        matrix = sparse.csc_matrix((values, (row, unit)), shape=(offset, against.shape[0]))
        product = np.asarray(matrix @ against)
    return [product[start:start + count * n_keys].reshape(count, n_keys, replicates) for start, count, n_keys in shapes]


#: :func:`_products_of_many` multiplies whole numbers dense when the matrix has at most this many
#: cells (32 MiB) and at least this share of them non-zero.
_DENSE_CELLS = 1 << 22
_DENSE_SHARE = 1 / 16


def _dense_product(values: np.ndarray, row: np.ndarray, unit: np.ndarray, height: int,
                   against: np.ndarray) -> np.ndarray | None:
    """The product of the sparse matrix ``(values, (row, unit))`` (``height`` × units) and the
    whole numbers ``against``, dense, when it is exact and worth it (:func:`_products_of_many`); else None."""
    cells = height * against.shape[0]
    if cells > _DENSE_CELLS or values.size < _DENSE_SHARE * cells or not _whole(values):
        return None
    matrix = np.bincount(row * against.shape[0] + unit, weights=values, minlength=cells).reshape(height, against.shape[0])
    largest = float(np.abs(matrix).sum(axis=1).max(initial=0.0)) * float(np.abs(against).max(initial=0.0))
    if not largest < 2.0**53:  # a sum could round (or is not finite): the sparse product, in order
        return None
    product = matrix @ against
    product += 0.0  # as the sparse product, which starts from 0: -0.0 becomes 0.0, nothing else changes
    return product


def _repeated_rows_state(metric: Any, rows: pl.DataFrame, weights: Any, *, weight: str, replicate: str) -> pl.DataFrame:
    """The stacked state the slow way: every row once per replicate where its weight is positive."""
    WEIGHT, REPLICATE = weight, replicate  # noqa: N806
    matrix = weights.dense()
    row_of, replicate_of = np.nonzero(matrix)
    order = np.lexsort((row_of, replicate_of))
    row_of, replicate_of = row_of[order], replicate_of[order]
    repeated = rows[row_of].with_columns(
        pl.Series(WEIGHT, matrix[row_of, replicate_of], dtype=pl.Float64),
        pl.Series(REPLICATE, replicate_of.astype(np.int64)),
    )
    state = metric.state_of(repeated.lazy(), [REPLICATE]).collect(engine="in-memory")
    return state.sort(REPLICATE, maintain_order=True)
