"""Resampled units of the bootstrap (:mod:`evalframe.engine.bootstrap`): their replicate
weights drawn on demand (:class:`ResampledUnits`), and the per-unit metrics' exact replicate sums
of one part of the data (:func:`part_replicate_sums`, :mod:`evalframe.engine.replicate_sums`),
which the kernel computes where the per-unit values are and the merge adds."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import partial

import polars as pl

from evalframe._lazy import lazy_module
from evalframe._threads import in_order
from evalframe.data.units import SYSTEM
from evalframe.engine import replicate_sums
from evalframe.engine.bootstrap import Bootstrap, stratum_scale
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, RowWeights, SetMetric

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light

#: At most this many row × replicate cells of a set metric's largest slice at once (its replicate
#: states, e.g. the ROC points × replicates, grow with it). Each block recomputes the grouping's
#: per-unit states, so fewer, larger blocks cost less: at 1 << 25 (32 M cells) a 25,000-row slice
#: takes its 1,000 replicates in one block.
BLOCK_CELLS = 1 << 25
#: Up to this many unit × replicate cells (1 GiB of float64), a tuple of unit columns keeps its
#: whole weight matrix once drawn: every slice and block then reads rows of it instead of hashing
#: its units again (the sample's bootstrap drew the same weights once per slice: 23% of its time).
#: Above it (e.g. a million queries × 1,000), weights are drawn block by block on demand.
CACHED_WEIGHT_CELLS = 1 << 27


class ResampledUnits:
    """Replicate weights of the distinct resampled units, per tuple of unit columns.

    The units of a tuple of columns are its distinct key values in sorted order (``_unit``, their
    position); their weights are drawn on demand for any subset of units and block of replicates
    (:meth:`weights`), never as one units × R matrix, so memory stays bounded however many units
    there are. With strata, each stratum's replicate totals are summed once, block by block.
    """

    def __init__(self, queries: pl.DataFrame, settings: Bootstrap):
        self.queries, self.settings, self.cache, self.drawn, self.positive = queries, settings, {}, {}, {}
        self.stratum_names: dict[tuple[str, ...], np.ndarray] = {}
        # The bootstrap's tasks run on two threads (``_threads.in_order``) and share these caches:
        # each is filled once, under this lock (else both threads would draw the same matrix).
        self._filling = threading.RLock()

    def _units(self, columns: tuple[str, ...]) -> tuple[pl.DataFrame, np.ndarray | None, np.ndarray | None]:
        """The distinct units (``_unit`` and ``columns``), their stratum codes and each stratum's scale."""
        with self._filling:
            if columns not in self.cache:
                missing = [c for c in (*columns, *([self.settings.strata] if self.settings.strata else [])) if c not in self.queries.columns]
                if missing:
                    raise ConfigError(f"bootstrap: no column {missing} in the queries table (columns: {self.queries.columns})")
                strata_column = self.settings.strata
                selected = [*columns, *([strata_column] if strata_column and strata_column not in columns else [])]
                distinct = self.queries.select(selected).unique().sort(selected, nulls_last=True)
                keys = distinct.select(columns)
                if keys.is_duplicated().any():
                    raise ConfigError(f"bootstrap `strata` column `{strata_column}` varies within a resampled unit {list(columns)}")
                codes = scale = None
                if strata_column:
                    strata = distinct.get_column(strata_column).cast(pl.String).fill_null("").to_numpy()
                    names, codes = np.unique(strata, return_inverse=True)
                    codes = codes.reshape(-1)
                    self.stratum_names[columns] = names
                    scale = stratum_scale(keys, codes, self.settings, BLOCK_CELLS)
                self.cache[columns] = (keys.with_row_index("_unit"), codes, scale)
            return self.cache[columns]

    def _cached(self, columns: tuple[str, ...]) -> np.ndarray | None:
        """The whole weight matrix (units × R), drawn once, when it has at most
        :data:`CACHED_WEIGHT_CELLS` cells; else None (weights are drawn block by block)."""
        with self._filling:
            height = self._units(columns)[0].height
            if columns not in self.drawn and height * self.settings.resamples <= CACHED_WEIGHT_CELLS:
                self.drawn[columns] = self._draw(columns, np.arange(height), 0, self.settings.resamples)
            return self.drawn.get(columns)

    def strata(self, columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The strata's texts (sorted; a null stratum is "") and their factors (strata × R)."""
        scale = self._units(columns)[2]
        return self.stratum_names[columns], scale

    def weights(self, columns: tuple[str, ...], units: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Replicate weights (float64, ``len(units) × (stop − start)``) of the units at positions
        ``units`` in replicates ``start … stop − 1``: exactly those rows and columns of
        :func:`~evalframe.engine.bootstrap.unit_weight_matrix` of all units."""
        stop = self.settings.resamples if stop is None else stop
        matrix = self._cached(columns)
        if matrix is None:
            return self._draw(columns, units, start, stop)
        if start == 0 and stop == matrix.shape[1] and np.array_equal(units, np.arange(matrix.shape[0])):
            return matrix  # all of it: no copy
        return matrix[units, start:stop]

    def blocks(self, columns: tuple[str, ...], unit_index: np.ndarray, scale: np.ndarray,
               largest_slice: int) -> Iterator[tuple[int, int, RowWeights]]:
        """Replicates ``start … stop − 1`` and the weights of rows whose units are at ``unit_index``
        (user weights ``scale``), block by block: a block has at most :data:`BLOCK_CELLS` //
        ``largest_slice`` replicates, so a slice's rows × replicates stay bounded. A whole cached
        weight matrix is used as it is (no copy of its rows); otherwise the rows' own units are drawn."""
        resamples = self.settings.resamples
        block = max(1, BLOCK_CELLS // max(1, largest_slice))
        matrix = self._cached(columns)
        if matrix is not None:
            with self._filling:
                if columns not in self.positive:
                    self.positive[columns] = (matrix > 0).astype(np.float64)
                positive = self.positive[columns]
            for start in range(0, resamples, block):
                stop = min(resamples, start + block)
                yield start, stop, RowWeights(matrix[:, start:stop], unit_index, scale, positive[:, start:stop])
            return
        drawn, inverse = np.unique(unit_index, return_inverse=True)
        for start in range(0, resamples, block):
            stop = min(resamples, start + block)
            yield start, stop, RowWeights(self._draw(columns, drawn, start, stop), inverse.reshape(-1), scale)

    def _draw(self, columns: tuple[str, ...], units: np.ndarray, start: int, stop: int) -> np.ndarray:
        """The weights of the units at positions ``units`` in replicates ``start … stop − 1``,
        hashed from their keys (:func:`~evalframe.engine.replicates.poisson_counts`)."""
        keys, codes, scale = self._units(columns)
        from evalframe.engine.replicates import poisson_counts

        counts = poisson_counts(keys.select(columns)[units], stop - start, self.settings.seed, first=start).astype(np.float64)
        if scale is not None:
            counts *= scale[codes[units], start:stop]
        return counts

    def matrix(self, columns: tuple[str, ...]) -> tuple[pl.DataFrame, np.ndarray]:
        """The units and their whole weight matrix (units × R): for callers that need it all."""
        keys = self._units(columns)[0]
        return keys, self.weights(columns, np.arange(keys.height))

    def index(self, frame: pl.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
        """Each row's resampled-unit position."""
        keys = self._units(columns)[0]
        index = frame.select(columns).join(keys, on=list(columns), how="left", nulls_equal=True, maintain_order="left")
        return index.get_column("_unit").to_numpy()

    def rows(self, frame: pl.DataFrame, columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Each row's resampled-unit index, and the units' weight matrix."""
        return self.index(frame, columns), self.matrix(columns)[1]


def resampled_columns(settings: Bootstrap, units, unit: str, available: Sequence[str]) -> tuple[str, ...]:
    columns = settings.unit_columns or tuple(k for k in units.key_columns(unit) if k != SYSTEM)
    missing = [c for c in columns if c not in available]
    if missing:
        raise ConfigError(
            f"bootstrap `unit` {list(columns)}: {missing} varies within a `{unit}` (or is not a column), so `{unit}` "
            f"metrics cannot be resampled by it; resample `{unit}`s or a coarser unit"
        )
    return columns


def part_replicate_sums(plan, units, queries: pl.DataFrame, values, applies) -> dict:
    """The per-unit metrics' exact replicate sums of one part (:mod:`~evalframe.engine.replicate_sums`),
    per (group, unit, grouping set): computed where the part's values are, merged by adding.

    ``values`` maps (group, unit) to the part's per-unit values (wide), ``queries`` is the part's
    queries table (its resampled units), ``applies`` says which grouping sets group which unit."""
    settings = plan.bootstrap
    counts_only = ResampledUnits(queries, replace(settings, strata=None))  # strata: applied when read
    by = {grouping: [SYSTEM, *keys] for grouping, keys in plan.slices.items()}
    from threadpoolctl import threadpool_limits  # imported where used

    def sums_of(g: int, unit: str, wide: pl.DataFrame) -> dict:
        metrics = [m for m in plan.groups[g].metrics if m.unit == unit and not isinstance(m, SetMetric)]
        columns = resampled_columns(settings, units, unit, wide.columns)
        if settings.strata and settings.strata not in wide.columns:
            raise ConfigError(f"bootstrap `strata` column `{settings.strata}` varies within a `{unit}` "
                              "(or is not a column); stratify by a column with one value per unit")
        unit_index = counts_only.index(wide, columns)
        groupings = {grouping: keys for grouping, keys in by.items() if applies[(unit, grouping)]}
        found = replicate_sums.part_sums(
            wide, [m.name for m in metrics], WEIGHT if plan.weight is not None else None, unit_index,
            lambda positions, columns=columns: counts_only.weights(columns, positions),
            groupings, settings.strata, settings.resamples)
        return {(g, unit, grouping): sums for grouping, sums in found.items()}

    out = {}
    # Each (group, unit) on its own, two at a time (threads: NumPy's sorts and products release
    # the GIL); the sums are exact integers, the same whatever runs beside them.
    tasks = [partial(sums_of, g, unit, wide) for (g, unit), wide in values.items()]
    with threadpool_limits(limits=1, user_api="blas"):  # thin products: one thread is faster
        for found in in_order(tasks):
            out |= found
    return out
