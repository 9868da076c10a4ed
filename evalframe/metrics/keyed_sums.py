"""Set metrics whose value is one vectorised function of their state's sums by key (the ROC family).

A set metric's state is a table of sums per slice and state key (DESIGN §3). Most set metrics
turn it into a value with a Polars ``finalize``, and their bootstrap replicates are that
``finalize`` of the stacked state (:mod:`evalframe.metrics.stacked`). Where the value is a
running sum along the keys (the ROC family: cumulative weights down the thresholds), the stacked
state has (keys × replicates) rows, ~10⁸ on the demo sample, which Polars' segmented running sums
cannot carry fast. Such a metric is a :class:`KeyedSumsMetric`: its value is **one** function over
the state in dense form — the keys × C matrices of its state columns, C columns each holding a
slice (or a replicate) — and every path calls that function:

- ``finalize`` (a run, merged partials, buckets, Spark): the Polars state's slices become the
  columns (:func:`slice_columns`; a slice's keys fill its column from the top, slices of similar
  key counts share a matrix, padding rows are zeros), then the function, then the metric's
  reasons give ``n``, ``value``, ``note`` per slice (:func:`~evalframe.metrics.set_values.finalized`);
- the bootstrap: the generic replicate state in dense form
  (:class:`~evalframe.metrics.stacked.DenseState`: one sparse product key-indicator × units ·
  units × R per state column), the R replicates as the columns, then the same function and reasons.

**What a new such metric declares** (besides ``state``, ``state_keys``, ``state_id`` and ``name``
as any set metric): ``state_kinds``, its state columns and how each depends on the weights
(``"sum"``: a weighted sum ``Σ w·x``; ``"count"``: a count of rows; nothing else fits the dense
form); ``view(dense)``, what it reads from a dense state (built once per slice and shared by
the metrics of one ``state_id``; the dense state itself by default); ``slice_values(view)``, per
column ``n`` (rows used), ``value`` (NaN: undefined) and whatever its ``reasons()`` read; and
``reasons()``, Polars conditions over those columns (the first that holds gives the note). A
value must not change when a column holds a key with zero sums (a padding row, a key whose
units a replicate did not draw). A dense state, either kind, offers ``width`` (C), ``size`` (K),
``key(name)`` (K × 1 or K × C floats), ``nonzero_keys(name)``, ``column(name, rows)``,
``total(name)`` and ``integral(name)``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.metrics.base import WEIGHT, RowWeights, SetMetric, row_weights
from evalframe.metrics.set_values import Reason, finalized

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light


class SliceColumns:
    """The dense form of a Polars state's slices (:func:`slice_columns`): the same reading
    interface as :class:`~evalframe.metrics.stacked.DenseState`, one column per slice.

    Column ``c`` holds its slice's state rows in key order (nulls last) from row 0; the rows below
    (padding) have zero sums and NaN keys.
    """

    def __init__(self, keys: dict[str, np.ndarray], columns: dict[str, np.ndarray]):
        self._keys, self._columns = keys, columns
        first = next(iter(columns.values()))
        self.size, self.width = first.shape

    def key(self, name: str) -> np.ndarray:
        return self._keys[name]

    def nonzero_keys(self, name: str) -> np.ndarray:
        return np.flatnonzero((self._columns[name] != 0).any(axis=1))

    def column(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        values = self._columns[name]
        return values if rows is None else values[rows]

    def total(self, name: str) -> np.ndarray:
        return self._columns[name].sum(axis=0)

    def integral(self, name: str) -> bool:
        values = self._columns[name]
        return bool(np.array_equal(values, np.floor(values)))


def slice_columns(state: pl.DataFrame, by: Sequence[str], keys: Sequence[str],
                  columns: Sequence[str]) -> Iterator[tuple[pl.DataFrame, SliceColumns]]:
    """The slices of ``state`` (one row per slice of ``by`` and key) as dense columns: per batch, the
    keys of its slices (a table, by ``by``) and a :class:`SliceColumns`. The state keys are numeric.

    Slices whose key counts have the same bit length (1, 2–3, 4–7, …) share one batch, so a
    batch's padding is less than its rows. Without ``by`` there is one slice, even with no row.
    """
    # Numeric keys (null: NaN, ordered last) and sums (never null).
    key_values = {k: state.get_column(k).to_numpy().astype(np.float64) for k in keys}
    if by:  # the rows of each slice (one group-by, in no particular order of slices)
        groups = state.with_row_index("_row").group_by(list(by)).agg(pl.col("_row"))
        slice_keys = groups.drop("_row")
        sizes = groups.get_column("_row").list.len().to_numpy().astype(np.int64)
        rows = groups.get_column("_row").explode().to_numpy().astype(np.int64) if state.height else np.zeros(0, np.int64)
        slices = groups.height
    else:
        slice_keys, sizes, rows, slices = pl.DataFrame(), np.array([state.height]), np.arange(state.height), 1
    slice_of = np.repeat(np.arange(slices), sizes)
    # Each slice's rows in key order (a stable sort by the keys, then by slice).
    order = np.lexsort([*(key_values[k][rows] for k in reversed(keys)), slice_of])
    rows = rows[order]
    starts = (np.cumsum(sizes) - sizes).astype(np.int64)
    position = np.arange(rows.size) - starts[slice_of]
    key_values = {k: values[rows] for k, values in key_values.items()}
    values = {c: state.get_column(c).to_numpy().astype(np.float64)[rows] for c in columns}
    size_class = np.array([int(size).bit_length() for size in sizes], dtype=np.int64)
    for found in np.unique(size_class):
        members = np.flatnonzero(size_class == found)
        height, width = max(int(sizes[members].max()), 1), members.size
        column_of = np.full(slices, -1, dtype=np.int64)
        column_of[members] = np.arange(width)
        inside = column_of[slice_of] >= 0
        at = (position[inside], column_of[slice_of[inside]])
        dense_keys, dense_columns = {}, {}
        for name, array in key_values.items():
            dense_keys[name] = np.full((height, width), np.nan)
            dense_keys[name][at] = array[inside]
        for name, array in values.items():
            dense_columns[name] = np.zeros((height, width))
            dense_columns[name][at] = array[inside]
        yield slice_keys[members] if by else slice_keys, SliceColumns(dense_keys, dense_columns)


class KeyedSumsMetric(SetMetric):
    """A set metric whose value is one vectorised function of its state in dense form (module
    docstring): ``finalize`` and the bootstrap's replicates both call :meth:`slice_values`."""

    reads_dense_state: ClassVar[bool] = True
    #: The state's value columns (besides the slice and state keys) and how each depends on the
    #: weights: ``"sum"`` (a weighted sum, ``Σ w·x``) or ``"count"`` (a count of rows).
    state_kinds: ClassVar[Mapping[str, str]]

    def view(self, dense: Any) -> Any:
        """What the metric reads from a dense state (shared by the metrics of one ``state_id``)."""
        return dense

    @abstractmethod
    def slice_values(self, view: Any) -> dict[str, np.ndarray]:
        """Per column of the dense state: ``n`` (rows used), ``value`` and what :meth:`reasons` read."""

    @abstractmethod
    def reasons(self) -> list[Reason]:
        """When the value is undefined, and why (conditions over :meth:`slice_values`' columns)."""

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """:meth:`slice_values` with the state's slices as the columns (:func:`slice_columns`)."""
        return finalize_sharing([self], state, by)[0]

    def _slice_table(self, slice_keys: pl.DataFrame, views: Sequence[Any]) -> pl.LazyFrame:
        """The slices' keys (of every view, in order) beside :meth:`slice_values` of each of their
        dense states' :meth:`view`: the views' values joined in NumPy, one table for all of them."""
        found = [self.slice_values(view) for view in views]
        frame = pl.DataFrame({name: np.concatenate([np.asarray(f[name]) for f in found]) for name in found[0]})
        frame = pl.concat([slice_keys, frame], how="horizontal") if slice_keys.width else frame
        return frame.lazy().with_columns(pl.col("n").cast(pl.Int64), pl.col("value").fill_nan(None))  # NaN: undefined, no reason named

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> Any:  # type: ignore[override]
        """The :meth:`view` of ``frame``'s state under every column of ``weights`` (dense form)."""
        from evalframe.metrics.stacked import dense_states

        weights = row_weights(frame, weights)
        return self.view(next(dense_states(self, frame, [np.arange(frame.height)], weights, weight=WEIGHT)))

    def values_from_replicate_state(self, view: Any) -> np.ndarray:  # type: ignore[override]
        """The R values of :meth:`replicate_state`'s result: :meth:`slice_values`, nan where a reason holds."""
        return self.replicate_values([self.slice_values(view)])[0]

    def replicate_values(self, found: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
        """The values of several :meth:`slice_values` results (slices of a grouping, each under the
        R replicate columns), nan where a reason holds: the reasons read in one Polars plan."""
        if not found:
            return []
        columns = {name: np.concatenate([np.asarray(f[name]) for f in found]) for name in found[0]}
        table = pl.DataFrame(columns).with_columns(pl.col("n").cast(pl.Int64))
        values = finalized(table.lazy(), [], pl.col("value"), self.reasons()).collect(engine="in-memory").get_column("value")
        values = values.fill_null(np.nan).to_numpy().astype(np.float64)
        bounds = np.cumsum([0, *(np.asarray(f["value"]).size for f in found)])
        return [values[start:stop] for start, stop in zip(bounds[:-1], bounds[1:], strict=True)]


def finalize_sharing(metrics: Sequence[KeyedSumsMetric], state: pl.LazyFrame | pl.DataFrame,
                     by: list[str]) -> list[pl.LazyFrame]:
    """:meth:`KeyedSumsMetric.finalize` of several metrics of one ``state_id`` on their one state:
    the slices as dense columns (:func:`slice_columns`) and their :meth:`~KeyedSumsMetric.view`
    (the ROC family's curves) built once for all of them, as the bootstrap does."""
    first = metrics[0]
    table = state.collect(engine="in-memory") if isinstance(state, pl.LazyFrame) else state
    views = [(slice_keys, first.view(dense))
             for slice_keys, dense in slice_columns(table, by, first.state_keys, list(first.state_kinds))]
    if not views:  # no slice: the columns of none
        empty = SliceColumns({k: np.zeros((1, 0)) for k in first.state_keys}, {c: np.zeros((1, 0)) for c in first.state_kinds})
        views = [(table.select(by).clear(), first.view(empty))]
    slice_keys = pl.concat([keys for keys, _ in views], how="vertical_relaxed")  # the slices of every view, in order
    dense_views = [view for _, view in views]
    return [finalized(metric._slice_table(slice_keys, dense_views), by, pl.col("value"), metric.reasons()) for metric in metrics]
