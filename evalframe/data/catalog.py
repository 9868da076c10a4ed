"""What is known about recommended items beyond the ranking (seed 004 §21.4.2).

A :class:`Catalog` holds up to three tables, each checked when it is made:

- ``items``: one row per catalog item, ``item_id`` and optionally ``popularity`` (a number
  >= 0, e.g. interactions), ``category`` and ``embedding`` (a list of floats);
- ``history``: the items each user interacted with before (``query_id`` — the user —, ``item_id``);
- ``similarity``: item-pair similarities (``item_a``, ``item_b``, ``similarity``), looked up as
  the chapter does: ``(rec, h)`` first, then ``(h, rec)``.

The beyond-accuracy metrics of :mod:`evalframe.metrics.recommendation` read it; the engine binds
the evaluation's catalog (``Tables.catalog``) to them. A catalog compares and hashes by identity
(a metric holding one stays hashable).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.errors import InputError, Problem

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light

#: Columns of the items table besides ``item_id``, each optional.
ITEM_COLUMNS = ("popularity", "category", "embedding")


def _problems_of_duplicates(frame: pl.DataFrame, keys: list[str], what: str) -> list[Problem]:
    repeated = np.nonzero(frame.select(keys).is_duplicated().to_numpy())[0]
    return [Problem(f"row {int(i) + 1}", keys[0], frame.row(int(i))[frame.columns.index(keys[0])], f"{what} is listed twice")
            for i in repeated[:20]]


@dataclass(frozen=True, eq=False)
class Catalog:
    """Item tables for beyond-accuracy metrics (module docstring). Build with :func:`catalog`."""

    items: pl.DataFrame | None = None
    history: pl.DataFrame | None = None
    similarity: pl.DataFrame | None = None

    @property
    def size(self) -> int | None:
        return None if self.items is None else self.items.height

    def parts(self) -> set[str]:
        """What a pipeline part may ``require`` of the catalog: ``catalog`` (the items table), its
        columns (``popularity``, ``category``, ``embedding``), ``history`` and ``similarity``."""
        found = set() if self.items is None else {"catalog", *(c for c in ITEM_COLUMNS if self.has(c))}
        return found | {name for name in ("history", "similarity") if getattr(self, name) is not None}

    def has(self, column: str) -> bool:
        """Whether the items table has ``column`` (``popularity``, ``category``, ``embedding``)."""
        return self.items is not None and column in self.items.columns


def catalog(items: pl.DataFrame | None = None, *, history: pl.DataFrame | None = None,
            similarity: pl.DataFrame | None = None, item: str = "item_id", user: str = "query_id",
            source: str = "catalog") -> Catalog:
    """A checked :class:`Catalog`: ``item_id`` unique, ``popularity`` a number >= 0 (a text column
    from a CSV is read as numbers), ``similarity`` a number; problems name the table and row."""
    problems: list[Problem] = []
    if items is not None:
        if item not in items.columns:
            raise InputError(source, Problem(None, item, None, f"no column `{item}` (columns: {items.columns})"))
        items = items.rename({item: "item_id"}) if item != "item_id" else items
        kept = ["item_id", *[c for c in ITEM_COLUMNS if c in items.columns]]
        items = items.select(kept).with_columns(pl.col("item_id").cast(pl.String))
        problems += _problems_of_duplicates(items, ["item_id"], "the item")
        if "popularity" in items.columns:
            raw = items.get_column("popularity")
            numbers = raw.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False) if raw.dtype == pl.String else raw.cast(pl.Float64)
            bad = np.nonzero((numbers.is_null() | numbers.is_nan() | (numbers < 0)).fill_null(True).to_numpy())[0]
            problems += [Problem(f"row {int(i) + 1}", "popularity", raw[int(i)], "is not a number >= 0") for i in bad[:20]]
            items = items.with_columns(numbers.alias("popularity"))
        if "category" in items.columns:
            items = items.with_columns(pl.col("category").cast(pl.String))
    if history is not None:
        missing = [c for c in (user, item) if c not in history.columns]
        if missing:
            raise InputError(f"{source} history", [Problem(None, c, None, f"no column `{c}`") for c in missing])
        history = history.select(pl.col(user).cast(pl.String).alias("query_id"), pl.col(item).cast(pl.String).alias("item_id"))
    if similarity is not None:
        missing = [c for c in ("item_a", "item_b", "similarity") if c not in similarity.columns]
        if missing:
            raise InputError(f"{source} similarity", [Problem(None, c, None, f"no column `{c}`") for c in missing])
        raw = similarity.get_column("similarity")
        numbers = raw.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False) if raw.dtype == pl.String else raw.cast(pl.Float64)
        bad = np.nonzero((numbers.is_null() | numbers.is_nan()).to_numpy())[0]
        problems += [Problem(f"row {int(i) + 1}", "similarity", raw[int(i)], "is not a number") for i in bad[:20]]
        similarity = similarity.select(pl.col("item_a").cast(pl.String), pl.col("item_b").cast(pl.String), numbers.alias("similarity"))
    if problems:
        raise InputError(source, problems)
    return Catalog(items, history, similarity)
