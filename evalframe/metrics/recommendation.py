"""Beyond-accuracy metrics of recommenders (seed 004 §21.4.2): coverage, concentration, popularity.

A recommendation table is a ranking (user = query, item = doc); ``hit_rate@k`` is the ranking
metric. The metrics here read each user's top-``k`` items, the queries column
:data:`RECOMMENDED` (item ids in rank order, which the engine derives from the ranking), and the
:class:`~evalframe.data.catalog.Catalog` bound to them (the evaluation's ``Tables.catalog``).

**Set metrics with a mergeable state.** All of them but serendipity are properties of a slice's
item counts ``c_i = Σ_users weight · [i in the user's top k]`` (the chapter's
``Counter(all_recs)``, a user's repeated item counted each time). The state (shared by every
metric at one ``k``) is one row per (slice, item) with ``count``, plus one row per slice with a
null item holding the users (``n``) and their weight; states of disjoint users add up, so the
metrics slice, merge and bootstrap like any other. Under R replicate weight vectors at once the
state is the generic stacked state's table (:mod:`evalframe.metrics.stacked`), built here from
integer item ids as one sparse product, items × units times units × R
(:meth:`ItemCountMetric.replicate_state`), and ``finalize`` turns it into R values. Over the items with
``c_i > 0`` (``U`` of them, ``C = Σ c_i``):

- ``unique_items@k`` = ``U`` (the chapter's ``unique_items_recommended``);
- ``catalog_coverage@k`` = ``U / |catalog|`` (the chapter's ``len(set(all_recs)) / len(item_popularity)``);
- ``category_coverage@k`` = distinct categories of the recommended catalog items / distinct
  categories of the catalog (an item missing from the catalog has no category; the chapter
  counts it as ``"unk"``, which can push the ratio above 1);
- ``gini@k`` = ``(2 Σ_j j · c_(j) − (n + 1) C) / (n C)`` with ``c_(1) <= … <= c_(n)`` the sorted
  counts (the chapter's ``gini_coefficient``): over the ``n = U`` recommended items by default,
  over the whole catalog with ``gini@k(over=catalog)`` (catalog items never recommended count 0,
  ``n = |catalog ∪ recommended|``); 0 equal, towards 1 concentrated;
- ``popularity_bias@k`` = ``(Σ c_i pop_i / C) / mean_catalog(pop)`` (an item missing from the
  catalog has popularity 0, as the chapter's ``.get(item, 0)``); > 1 leans to popular items;
- ``novelty@k`` = ``Σ c_i · (−log2(pop_i / Σ_catalog pop)) / Σ c_i`` over recommended items with a
  positive popularity (mean self-information of a recommendation; others are left out).

A metric whose catalog (or catalog column) is missing is undefined with a note naming what it
needs; a slice with no recommendation has no Gini, popularity bias or novelty.

**Serendipity** (query level, per user; the chapter's definition): for each of the user's top-k
items ``1 − min_h sim(rec, h)`` over the user's history ``h`` (``sim`` from the catalog's
similarity table, ``(rec, h)`` then ``(h, rec)``, or the cosine of the items' embeddings; 0.5 for
an unknown pair; the minimum similarity is 1.0, so serendipity 0, when the user has no history,
as the chapter's code), averaged over the items; 0 for a user without recommendations. Its
slice mean is the chapter's ``serendipity``. (The chapter's comment says "1 − max_similarity";
its code, followed here, takes the minimum.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import polars as pl

from evalframe._lazy import lazy_module
from evalframe._sorting import sorted_codes
from evalframe.metrics.base import (
    REPLICATE,
    WEIGHT,
    QueryMetric,
    ReplicateState,
    RowWeights,
    SetMetric,
    TargetCategory,
    finalized_values,
    row_weights,
)
from evalframe.metrics.params import cutoff, param
from evalframe.metrics.set_values import finalized

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light

#: The queries column of each user's recommended item ids, best first (derived from the ranking).
RECOMMENDED = "recommended"
#: The state's item key.
ITEM = "item_id"
NO_RECOMMENDATION = "no recommendation in the slice"
NO_USER = "no user in the slice"


def _by_slice(frame: pl.LazyFrame, by: list[str], aggregations: list[pl.Expr]) -> pl.LazyFrame:
    return frame.group_by(by).agg(aggregations) if by else frame.select(aggregations)


def _item_counts(rows: pl.LazyFrame, by: list[str], k: int) -> pl.LazyFrame:
    """Per slice ``by`` and item, the users' weight sum (``count``) over the top-``k`` lists,
    computed when the caller collects the state (``pl.defer``: a state built and dropped costs
    nothing), in the cheapest way that gives the same bits:

    - grouped by Polars' streaming engine when every weight is a whole number and every sum
      stays below 2^53, else by the in-memory engine. The counts group ``users × k`` exploded
      string ids (20,000,000 at a million users); the streaming engine groups them at about a
      third of the in-memory engine's cost, but sums each group's floats in an order that varies
      from run to run. Sums of whole numbers below 2^53 are exact in any order, so the counts,
      and every metric of them, are the same bits either way; fractional weights keep the
      in-memory engine's fixed order;
    - grouped by the item alone when every ``by`` column holds one value (one system, no other
      slice: the usual single-number run), the slice columns then added as constants (a
      constant string key hashed with each of the 20,000,000 ids costs a third more)."""
    exploded = rows.select(*by, WEIGHT, pl.col(RECOMMENDED).list.head(k).alias(ITEM)).explode(ITEM).drop_nulls(ITEM)
    aggregations = [pl.lit(0, dtype=pl.Int64).alias("n"), pl.col(WEIGHT).sum().cast(pl.Float64).alias("count")]
    items = exploded.group_by([*by, ITEM]).agg(aggregations)
    head = pl.col(RECOMMENDED).list.head(k).list.len()
    whole = (pl.col(WEIGHT) == pl.col(WEIGHT).floor()).all() & ((pl.col(WEIGHT).abs() * head).sum() < 2.0**53)
    schema = items.collect_schema()

    def counted() -> pl.DataFrame:
        facts = rows.select(whole.alias("_whole"), *(pl.col(c).n_unique().alias(f"_n{i}") for i, c in enumerate(by)),
                            pl.col(by).first()).collect(engine="in-memory")
        engine = "streaming" if facts.get_column("_whole").item() else "in-memory"
        if by and all(facts.get_column(f"_n{i}").item() == 1 for i in range(len(by))):
            alone = exploded.drop(by).group_by(ITEM).agg(aggregations).join(facts.lazy().select(by), how="cross")
            return alone.select(schema.names()).collect(engine=engine)
        return items.collect(engine=engine)

    return pl.defer(counted, schema=schema)


@dataclass(frozen=True)
class ItemCountMetric(SetMetric):
    """Base of the metrics of a slice's item counts at cutoff ``k`` (module docstring)."""

    k: int = cutoff(doc="cutoff: the top k items of each user")
    catalog: object | None = field(default=None, compare=False, repr=False)
    target: ClassVar[TargetCategory] = TargetCategory.DIVERSITY
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": (RECOMMENDED,)}
    subset: ClassVar[str] = "all users"
    state_keys: ClassVar[tuple[str, ...]] = (ITEM,)
    key: ClassVar[str]
    #: Catalog columns the metric needs (``"items"``: just the catalog's item list).
    needs: ClassVar[tuple[str, ...]] = ()

    @property
    def name(self) -> str:
        return f"{self.key}@{self.k}"

    @property
    def state_id(self) -> object:
        return ("item_counts", self.k)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        users = _by_slice(rows, by, [pl.len().cast(pl.Int64).alias("n"), pl.col(WEIGHT).sum().cast(pl.Float64).alias("count")])
        items = _item_counts(rows, by, self.k)
        users = users.with_columns(pl.lit(None, dtype=pl.String).alias(ITEM))
        return pl.concat([users.select(*by, ITEM, "n", "count"), items.select(*by, pl.col(ITEM).cast(pl.String), "n", "count")],
                         how="vertical_relaxed")

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> ReplicateState:
        """The item-count state of ``frame`` (one slice's users) under every column of ``weights``,
        stacked with the key ``_replicate``: the table of the generic stacked state
        (:func:`evalframe.metrics.stacked.stacked_state`), built without grouping item strings.

        With ``U`` the units' replicate weights (units × R, :class:`~evalframe.metrics.base.RowWeights`:
        a user's weight is ``scale_user · U[unit_user, r]``), the item ids of the users' top-``k``
        lists are encoded to integers once (one categorical cast), and all the counts are one
        sparse product::

            count[i, r] = Σ_u A[i, u] · U[u, r],   A[i, u] = Σ_{users of u with i in their top k} scale_user

        (items × units times units × R; the users' row is one more row of ``A`` with each unit's
        weight sum; ``n[r] = Σ_u n_u · [U[u, r] > 0]``). An item is in replicate ``r`` when its
        count is positive, the users' row when one of its units is drawn; each sum adds its units
        in ascending order, as the generic state's product does. Users of weight 0 are absent.
        ``finalize`` (the one definition of the metrics) then turns the table into ``R`` values.
        """
        from scipy import sparse  # imported where used: every run resolves this module's metrics

        weights = row_weights(frame, weights)
        replicates, n_units = weights.shape[1], weights.units.shape[0]
        kept = np.flatnonzero(weights.scale > 0)
        unit, scale = weights.index[kept], weights.scale[kept]
        lists = frame.get_column(RECOMMENDED)
        lists = lists if kept.size == frame.height else lists.gather(kept)
        lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
        if lengths.size and lengths.max() > self.k:            # cut only when some list is longer
            lists, lengths = lists.list.head(self.k), np.minimum(lengths, self.k)
        items = lists.explode(empty_as_null=False, keep_nulls=False).cast(pl.String)  # user by user
        if items.null_count():                                 # a null item is no item
            listed = items.is_not_null()
            lengths = np.bincount(np.repeat(np.arange(kept.size), lengths)[listed.to_numpy()], minlength=kept.size)
            items = items.filter(listed)
        names, key = sorted_codes(items)                       # integer item ids, keys in the state's order
        names = names.alias(ITEM)
        n_items = names.len()
        ascending = bool(np.all(np.diff(unit) > 0))   # each user its own unit, in unit order
        if ascending:
            # Each user its own unit, in unit order (the usual bootstrap over users): A's columns
            # are the users' lists as they come (a CSR matrix of units × items, transposed).
            per_unit = np.zeros(n_units, dtype=np.int64)
            per_unit[unit] = lengths
            by_unit = sparse.csr_matrix((np.repeat(scale, lengths), key, np.concatenate([[0], np.cumsum(per_unit)])),
                                        shape=(n_units, n_items))
            by_unit.sum_duplicates()                           # an item listed twice: one entry
            counts = np.asarray(by_unit.T @ weights.units)
        else:
            user = np.repeat(np.arange(kept.size), lengths)
            counts = np.asarray(sparse.csr_matrix((scale[user], (key, unit[user])), shape=(n_items, n_units)) @ weights.units)
        users = sparse.csr_matrix((scale, (np.zeros(kept.size, dtype=np.int64), unit)), shape=(1, n_units))
        counts = np.vstack([counts, np.asarray(users @ weights.units)])   # the users' row last (a null item)
        if unit.size == n_units and ascending:  # one user per unit: the drawn units
            per_unit_users = np.count_nonzero(weights.units > 0, axis=0).astype(np.float64)
        else:
            per_unit_users = np.bincount(unit, minlength=n_units).astype(np.float64) @ weights.positive_units
        present = counts > 0
        present[n_items] = per_unit_users > 0
        replicate_of, key_of = np.nonzero(present.T)          # ordered by replicate, then key
        keys = pl.concat([names, pl.Series([None], dtype=pl.String)])
        table = pl.DataFrame([
            pl.Series(REPLICATE, replicate_of.astype(np.int64)),
            keys.gather(key_of).alias(ITEM),
            pl.Series("n", np.where(key_of == n_items, np.rint(per_unit_users)[replicate_of], 0).astype(np.int64)),
            pl.Series("count", counts[key_of, replicate_of], dtype=pl.Float64),
        ])
        return ReplicateState(table, replicates)

    def values_from_replicate_state(self, state: ReplicateState) -> np.ndarray:
        """:meth:`finalize` of :meth:`replicate_state`'s table, one slice per replicate; its rows
        have distinct (replicate, item) keys already, so the sum of a merged state's equal keys
        is skipped."""
        return finalized_values(self._finalized(state.table.lazy(), [REPLICATE], merged=False).collect(engine="in-memory"),
                                state.replicates)

    # --- what a metric adds -------------------------------------------------------------------

    def missing_catalog(self) -> str | None:
        """Why the bound catalog cannot give this metric (None: it can)."""
        if not self.needs:
            return None
        catalog = self.catalog
        if catalog is None or catalog.items is None:
            return f"no item catalog given (`{self.key}` needs the catalog's items)"
        for column in self.needs:
            if column != "items" and not catalog.has(column):
                return f"the item catalog has no `{column}` column"
        return None

    def aggregations(self) -> dict[str, pl.Expr]:
        """Aggregations over one slice's recommended items (``count`` > 0, catalog columns joined)."""
        return {"unique": pl.len().cast(pl.Float64), "total": pl.col("count").sum()}

    def value(self) -> pl.Expr:
        """The metric from one slice's aggregations."""
        raise NotImplementedError

    def undefined(self) -> list[tuple[pl.Expr, str]]:
        return []

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return self._finalized(state, by)

    def _finalized(self, state: pl.LazyFrame, by: list[str], *, merged: bool = True) -> pl.LazyFrame:
        """:meth:`finalize`; ``merged=False`` when no two rows of ``state`` share their slice and item."""
        users = _by_slice(state.filter(pl.col(ITEM).is_null()), by, [pl.col("n").sum().alias("n")])
        items = state.filter(pl.col(ITEM).is_not_null())
        if merged:
            items = items.group_by([*by, ITEM]).agg(pl.col("count").sum())
        items = items.filter(pl.col("count") > 0)
        reason = self.missing_catalog()
        if reason is None and self.needs:
            items = items.join(self.catalog.items.lazy().drop("embedding", strict=False), on=ITEM, how="left")
        aggregations = self.aggregations() if reason is None else ItemCountMetric.aggregations(self)
        aggregated = _by_slice(items, by, [expr.alias(name) for name, expr in aggregations.items()])
        table = users.join(aggregated, on=by, how="left", nulls_equal=True) if by else users.join(aggregated, how="cross")
        table = table.with_columns(pl.col("unique").fill_null(0.0), pl.col("total").fill_null(0.0))
        reasons = [(pl.lit(True), reason)] if reason is not None else []
        value = self.value() if reason is None else pl.lit(None, dtype=pl.Float64)
        undefined = self.undefined() if reason is None else []
        return finalized(table, by, value, [*reasons, (pl.col("n") == 0, NO_USER), *undefined])


_NO_RECS = (pl.col("total") <= 0, NO_RECOMMENDATION)


class UniqueItems(ItemCountMetric):
    """Distinct items recommended in the users' top k (the chapter's ``unique_items_recommended``)."""

    key = "unique_items"
    value_range = (0.0, math.inf)

    def value(self) -> pl.Expr:
        return pl.col("unique")


class CatalogCoverage(ItemCountMetric):
    """Share of the catalog recommended in some user's top k: distinct items / catalog size."""

    key = "catalog_coverage"
    needs = ("items",)
    value_range = (0.0, math.inf)
    is_rate = True

    def value(self) -> pl.Expr:
        size = self.catalog.size if self.catalog is not None and self.catalog.items is not None else 0
        return pl.col("unique") / size if size else pl.lit(None, dtype=pl.Float64)

    def undefined(self):
        size = self.catalog.size if self.catalog is not None and self.catalog.items is not None else 0
        return [(pl.lit(size == 0), "the item catalog is empty")]


class CategoryCoverage(ItemCountMetric):
    """Share of the catalog's categories among the top-k items: categories recommended / categories."""

    key = "category_coverage"
    needs = ("category",)
    value_range = (0.0, 1.0)
    is_rate = True

    def aggregations(self) -> dict[str, pl.Expr]:
        return {**super().aggregations(), "categories": pl.col("category").drop_nulls().n_unique().cast(pl.Float64)}

    def _catalog_categories(self) -> int:
        return int(self.catalog.items.get_column("category").drop_nulls().n_unique())

    def value(self) -> pl.Expr:
        total = self._catalog_categories() if self.missing_catalog() is None else 0
        return pl.col("categories") / total if total else pl.lit(None, dtype=pl.Float64)

    def undefined(self):
        total = self._catalog_categories() if self.missing_catalog() is None else 1
        return [(pl.lit(total == 0), "the item catalog has no category")]


@dataclass(frozen=True)
class Gini(ItemCountMetric):
    """Gini coefficient of the top-k recommendation counts (the chapter's formula); lower is more even."""

    over: str = param("recommended", "the recommended items only (the chapter) or the whole catalog with zeros",
                      choices=("recommended", "catalog"), noun="count over")
    key: ClassVar[str] = "gini"
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    @property
    def needs(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("items",) if self.over == "catalog" else ()

    @property
    def name(self) -> str:
        return f"gini@{self.k}" + ("(over=catalog)" if self.over == "catalog" else "")

    def aggregations(self) -> dict[str, pl.Expr]:
        ranked = (pl.col("count").sort() * pl.int_range(1, pl.len() + 1, dtype=pl.Int64)).sum()
        extra = {}
        if self.over == "catalog" and self.missing_catalog() is None:
            extra["outside"] = pl.col(ITEM).is_in(self.catalog.items.get_column("item_id").implode()).not_().sum().cast(pl.Float64)
        return {**super().aggregations(), "ranked": ranked.cast(pl.Float64), **extra}

    def value(self) -> pl.Expr:
        if self.over == "catalog" and self.missing_catalog() is None:
            n = pl.col("outside").fill_null(0.0) + float(self.catalog.size)
        else:
            n = pl.col("unique")
        zeros = n - pl.col("unique")
        weighted_ranks = pl.col("ranked") + zeros * pl.col("total")
        return (2.0 * weighted_ranks - (n + 1.0) * pl.col("total")) / (n * pl.col("total"))

    def undefined(self):
        return [_NO_RECS]


class PopularityBias(ItemCountMetric):
    """Mean popularity of the top-k items over the catalog's mean popularity (> 1: leans popular)."""

    key = "popularity_bias"
    needs = ("popularity",)
    higher_is_better = False
    value_range = (0.0, math.inf)

    def aggregations(self) -> dict[str, pl.Expr]:
        return {**super().aggregations(), "popular": (pl.col("count") * pl.col("popularity").fill_null(0.0)).sum()}

    def _catalog_mean(self) -> float:
        return float(self.catalog.items.get_column("popularity").mean() or 0.0) if self.missing_catalog() is None else 0.0

    def value(self) -> pl.Expr:
        mean = self._catalog_mean()
        return (pl.col("popular") / pl.col("total")) / mean if mean > 0 else pl.lit(None, dtype=pl.Float64)

    def undefined(self):
        return [_NO_RECS, (pl.lit(self.missing_catalog() is None and self._catalog_mean() <= 0), "the catalog's mean popularity is 0")]


class Novelty(ItemCountMetric):
    """Mean self-information −log2(popularity share) of the top-k items (higher: less popular)."""

    key = "novelty"
    needs = ("popularity",)
    value_range = (0.0, math.inf)

    def aggregations(self) -> dict[str, pl.Expr]:
        total = float(self.catalog.items.get_column("popularity").sum()) if self.missing_catalog() is None else 0.0
        known = pl.col("popularity").fill_null(0.0) > 0
        information = -(pl.col("popularity") / total).log(2) if total > 0 else pl.lit(0.0)
        return {**super().aggregations(),
                "informed": pl.when(known).then(pl.col("count")).otherwise(0.0).sum(),
                "information": pl.when(known).then(pl.col("count") * information).otherwise(0.0).sum()}

    def value(self) -> pl.Expr:
        return pl.col("information") / pl.col("informed")

    def undefined(self):
        return [_NO_RECS, (pl.col("informed").fill_null(0.0) <= 0, "no recommended item has a positive popularity")]


# --- serendipity: one value per user ----------------------------------------------------------


@dataclass(frozen=True)
class Serendipity(QueryMetric):
    """Per user, the mean over the top-k items of 1 − min similarity to the user's history (the chapter's)."""

    k: int = cutoff(doc="cutoff: the top k items of each user")
    catalog: object | None = field(default=None, compare=False, repr=False)
    target: ClassVar[TargetCategory] = TargetCategory.DIVERSITY
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("query_id", RECOMMENDED)}
    subset: ClassVar[str] = "all users"
    value_range: ClassVar[tuple[float, float] | None] = None

    @property
    def name(self) -> str:
        return f"serendipity@{self.k}"

    def _missing(self) -> str | None:
        catalog = self.catalog
        if catalog is None or catalog.history is None:
            return "no user history given (serendipity needs the catalog's history)"
        if catalog.similarity is None and not catalog.has("embedding"):
            return "no item similarity given (a similarity table or item embeddings)"
        return None

    def expr(self) -> pl.Expr:
        if self._missing() is not None:
            return pl.lit(None, dtype=pl.Float64)
        return pl.struct("query_id", RECOMMENDED).map_batches(self.per_user, return_dtype=pl.Float64)

    def skip_reason(self) -> pl.Expr:
        reason = self._missing()
        return pl.lit(reason) if reason is not None else pl.lit("undefined")

    def per_user(self, users: pl.Series) -> pl.Series:
        """Serendipity of each user (a struct of ``query_id`` and :data:`RECOMMENDED`), by joins."""
        table = users.struct.unnest().with_row_index("_user")
        recs = (
            table.select("_user", pl.col("query_id").cast(pl.String), pl.col(RECOMMENDED).list.head(self.k).alias("rec"))
            .explode("rec").drop_nulls("rec").with_row_index("_rec").with_columns(pl.col("rec").cast(pl.String))
        )
        pairs = recs.join(self.catalog.history.rename({"item_id": "seen"}), on="query_id", how="inner")
        similarity = self._pair_similarity(pairs.select("rec", "seen").unique())
        nearest = (
            pairs.join(similarity, on=["rec", "seen"], how="left")
            .group_by("_rec").agg(pl.col("similarity").fill_null(0.5).min().alias("nearest"))
        )
        per_rec = recs.join(nearest, on="_rec", how="left").with_columns(
            (1.0 - pl.col("nearest").fill_null(1.0)).alias("serendipity"))  # no history: min similarity 1.0
        per_user = per_rec.group_by("_user").agg(pl.col("serendipity").mean())
        return (
            table.select("_user").join(per_user, on="_user", how="left", maintain_order="left")
            .get_column("serendipity").fill_null(0.0).alias("serendipity")
        )

    def _pair_similarity(self, pairs: pl.DataFrame) -> pl.DataFrame:
        """``similarity`` of each (rec, seen) pair, null when unknown."""
        catalog = self.catalog
        if catalog.similarity is not None:
            table = catalog.similarity.unique(["item_a", "item_b"], keep="first")
            forward = table.rename({"item_a": "rec", "item_b": "seen", "similarity": "_forward"})
            backward = table.rename({"item_a": "seen", "item_b": "rec", "similarity": "_backward"})
            return (
                pairs.join(forward, on=["rec", "seen"], how="left").join(backward, on=["rec", "seen"], how="left")
                .select("rec", "seen", pl.coalesce("_forward", "_backward").alias("similarity"))
            )
        vectors = catalog.items.select("item_id", pl.col("embedding").cast(pl.List(pl.Float64)))
        joined = (
            pairs.join(vectors.rename({"item_id": "rec", "embedding": "_a"}), on="rec", how="left")
            .join(vectors.rename({"item_id": "seen", "embedding": "_b"}), on="seen", how="left")
        )
        present = joined.get_column("_a").is_not_null() & joined.get_column("_b").is_not_null()
        similarity = np.full(joined.height, np.nan)
        if present.any():
            kept = joined.filter(present)
            a = np.vstack(kept.get_column("_a").to_list())
            b = np.vstack(kept.get_column("_b").to_list())
            norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
            similarity[present.to_numpy()] = np.divide((a * b).sum(axis=1), norms, out=np.full(norms.shape, np.nan), where=norms > 0)
        return joined.select("rec", "seen").with_columns(pl.Series("similarity", similarity).fill_nan(None))


RECOMMENDATION_METRICS = (UniqueItems, CatalogCoverage, CategoryCoverage, Gini, PopularityBias, Novelty)


def bind_catalog(metric, catalog):
    """``metric`` with the evaluation's catalog when it reads one (else unchanged)."""
    from dataclasses import replace

    if isinstance(metric, ItemCountMetric | Serendipity) and metric.catalog is None and catalog is not None:
        return replace(metric, catalog=catalog)
    return metric


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "unique_items": ("Distinct items recommended in the users' top lists.", "count"),
        "catalog_coverage": ("Share of the catalog that appears in at least one user's top list.", "rate"),
        "category_coverage": ("Share of the catalog's categories that appear in the users' top lists.", "rate"),
        "popularity_bias": ("Mean popularity of recommended items relative to the catalog mean (1 = no bias).", "score"),
        "novelty": ("Mean self-information of recommended items (−log2 popularity share): higher is less obvious.", "score"),
    }
    specs = [MetricSpec(metric.key, metric, (metric.__doc__ or "").strip().splitlines()[0], at="k", at_required=True,
                         meaning=meanings[metric.key][0], kind=meanings[metric.key][1])
             for metric in RECOMMENDATION_METRICS if metric is not Gini]
    specs.append(MetricSpec("gini", Gini, (Gini.__doc__ or "").strip().splitlines()[0], at="k", at_required=True,
                            meaning="Concentration of recommendations on few items (0 = spread evenly, 1 = all on one item).", kind="score"))
    specs.append(MetricSpec("serendipity", Serendipity, (Serendipity.__doc__ or "").strip().splitlines()[0],
                            at="k", at_required=True, meaning="How unlike the user's history the recommended items are (1 − closest similarity).", kind="score"))
    return specs


SPECS = _specs()
