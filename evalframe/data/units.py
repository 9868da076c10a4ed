"""Units: what a metric gives one value for, and their key columns (DESIGN §2).

The default unit is the ``query`` (keys ``system, query_id``). A coarser unit is a set of
queries named by key columns that come from the data and the pipeline, e.g. ``post`` →
``[post_id]`` (all criteria of one post); every unit is also per ``system``, so numbers never mix
systems. When a pipeline does not declare ``post`` and the queries table has a ``post_id``
column, ``post`` means ``[post_id]``.

Two facts about a unit are read off the data, never assumed:

- whether a slice applies to it (:func:`constant_within`): a slice key must have one value within
  each unit (a post has one fold, but several criteria, so ``criterion`` does not slice posts);
- its weight (:func:`unit_weights`): the weight its queries share; queries of one unit with
  different weights are an error naming the unit.

Units to come plug in here: a ``pair`` unit (a query and its ``variant_of`` parent, for the
robustness metrics) is declared as ``pair: [pair_id]`` once the derive stage gives both rows of a
pair one ``pair_id`` (the parent's query_id); its metrics aggregate the two rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem

SYSTEM = "system"
QUERY = "query"
#: The keys of the query unit: one row of the queries table.
QUERY_KEYS = [SYSTEM, "query_id"]
#: Units known without a declaration when their key columns are present.
DEFAULT_UNITS: dict[str, tuple[str, ...]] = {"post": ("post_id",)}


@dataclass(frozen=True)
class Units:
    """Unit names and their key columns (without ``system``, which every unit has)."""

    keys: Mapping[str, tuple[str, ...]]

    @classmethod
    def resolve(cls, declared: Mapping[str, Sequence[str]] | None, columns: Sequence[str]) -> Units:
        """The query unit, the declared units, and the default units whose columns are present."""
        keys: dict[str, tuple[str, ...]] = {QUERY: ("query_id",)}
        keys.update({name: cols for name, cols in DEFAULT_UNITS.items() if set(cols) <= set(columns)})
        for name, cols in (declared or {}).items():
            if name == QUERY:
                msg = "units: `query` is built in (one row of the queries table); name a coarser unit"
                raise ConfigError(msg)
            keys[name] = tuple(cols)
        return cls(keys)

    def key_columns(self, unit: str) -> list[str]:
        """``system`` and the unit's key columns."""
        if unit not in self.keys:
            known = ", ".join(f"`{name}`" for name in self.keys)
            msg = f"unknown unit `{unit}` (units: {known}); declare it, e.g. `units: {{{unit}: [{unit}_id]}}`"
            raise ConfigError(msg)
        return [SYSTEM, *self.keys[unit]]


def partition_keys(units: Iterable[str], declared: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The columns to split an evaluation's data into parts by, so that every part holds whole
    units of each of ``units`` (the metrics' units): ``["query_id"]`` when they are all the query,
    else the key columns of the coarser ones (``declared``, else :data:`DEFAULT_UNITS`, else the
    unit's own name), e.g. ``["post_id"]``. Tables without those columns (a run, qrels) then
    send each query where its unit goes. Buckets on disk and Spark partitions split by these.

    >>> partition_keys(["query", "post"])
    ['post_id']
    """
    coarser = [unit for unit in dict.fromkeys(units) if unit != QUERY]
    if not coarser:
        return ["query_id"]
    declared = declared or {}
    return list(dict.fromkeys(key for unit in coarser for key in declared.get(unit, DEFAULT_UNITS.get(unit, (unit,)))))


def constant_within(queries: pl.DataFrame, unit_keys: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The ``columns`` (in their order, each once) that have a single value within every unit
    (null counts as a value), all of them read in one group-by of the units.

    Every column is constant within the query unit (one row per unit). A table without rows has
    no unit to tell, and no column is called constant then (as a slice on no rows applies to none).

    >>> constant_within(pl.DataFrame({"system": ["a"] * 3, "post_id": ["p", "p", "q"],
    ...                               "fold": [1, 1, 2], "criterion_id": ["A", "B", "A"]}),
    ...                 ["system", "post_id"], ["fold", "criterion_id"])
    ['fold']
    """
    columns = list(dict.fromkeys(columns))
    if not columns or list(unit_keys) == QUERY_KEYS:
        return columns
    spread = queries.group_by(list(unit_keys)).agg(pl.col(name).n_unique() for name in columns)
    single = spread.select((pl.col(name).max() <= 1).alias(name) for name in columns).row(0, named=True)
    return [name for name in columns if single[name]]


def unit_weights(
    queries: pl.DataFrame, unit: str, unit_keys: Sequence[str], weight: str, *, label: str | None = None
) -> pl.DataFrame:
    """One row per unit: its keys and the weight its queries share (``weight`` column).

    Raises :class:`~evalframe.errors.InputError` naming the units whose queries disagree (and the
    weight column as the user calls it, ``label``).
    """
    keys = list(unit_keys)
    shared = queries.group_by(keys, maintain_order=True).agg(
        pl.col(weight).first(), pl.col(weight).n_unique().alias("_n_weights"), pl.col(weight).min().alias("_low"),
        pl.col(weight).max().alias("_high"),
    )
    conflicts = shared.filter(pl.col("_n_weights") > 1)
    if conflicts.height:
        problems = [
            Problem(None, label or weight, NO_VALUE,
                    f"{unit} {', '.join(f'{k}={v!r}' for k, v in zip(keys, row[:len(keys)], strict=True))} has queries "
                    f"with different weights ({row[-2]} … {row[-1]}); a {unit}'s metrics need one weight per {unit}")
            for row in conflicts.head(20).iter_rows()
        ]
        raise InputError("queries table", problems)
    return shared.select(*keys, weight)
