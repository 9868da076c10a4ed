"""Stratified sampling of units and stratified estimates (004 §21.6.1; issue 11, part 4).

**Allocation.** A population of ``N`` units in strata ``h`` of sizes ``N_h`` gets ``n`` sampled
units, ``n_h`` per stratum:

- ``proportional``: ``n_h ∝ N_h`` (every unit has the same chance; design weights all equal);
- ``equal``: ``n_h = n / H``;
- ``neyman``: ``n_h ∝ N_h s_h`` (Neyman's optimal allocation: the smallest variance of the
  stratified mean for a given ``n``), with ``s_h`` the stratum's standard deviation of the
  metric: a column of per-unit pilot values (``std="column"``: its sample std within each
  stratum), a pilot table (``std=pilot``: the stratum columns and ``value``, e.g. a small
  evaluation's per-query values) or the stds themselves (``std={stratum: s_h}``); strata the
  pilot does not cover get s_h = 0;
- ``oversample={stratum: factor}`` multiplies a stratum's share before the total is split, so
  the budget ``n`` stays fixed (the design weights undo the over-representation);
- ``min_per_stratum=m`` gives every stratum at least ``min(m, N_h)`` units first; the rest is
  split by the shares. No stratum gets more than ``N_h``: its excess goes to the others.

Shares become whole numbers by the largest-remainder rule, so ``Σ n_h = n`` exactly (ties of
remainders go to the stratum listed first, in sorted stratum order).

**Selection** is deterministic per seed and counter-based like the bootstrap replicates: every
unit gets the word ``SplitMix64(h(unit key) ⊕ SplitMix64(seed ⊕ c))`` (the unit-key hash ``h``
of :mod:`evalframe.engine.replicates`); a stratum's ``n_h`` units with the smallest words are
drawn. The words are a random permutation of the stratum, so this is simple random sampling
without replacement within each stratum, and it does not depend on row order.

**Design weights** ``N_h / n_h`` (units of the population each sampled unit stands for) are put
in a column (:attr:`StratifiedSample.weight`) that ``ef.evaluate(..., weight=sample.weight)``
reads: the weighted mean of a per-unit metric is then the stratified estimate of the population
mean ``ȳ_st = Σ_h W_h ȳ_h`` (``W_h = N_h / N``).

**Standard error** (:func:`stratified_estimate`, :meth:`StratifiedSample.estimate`):
``SE² = Σ_h W_h² (1 − n_h/N_h) s_h² / n_h`` (``s_h``: the sample std, ddof = 1, of the values
drawn in stratum ``h``; ``1 − n_h/N_h`` the finite-population correction; a stratum drawn whole
adds nothing), and the normal interval ``ȳ_st ± z_{1−α/2} SE``. A stratum with one drawn value
has no ``s_h``: it adds nothing and is counted in ``note``. For set metrics (AUROC, ECE) the
stratified standard error comes from the bootstrap within strata (``bootstrap: strata:``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
from scipy import special

from evalframe.errors import ConfigError
from evalframe.engine.replicates import _splitmix64, unit_hashes

Allocation = Literal["proportional", "equal", "neyman"]
ALLOCATIONS = ("proportional", "equal", "neyman")
#: The column of design weights a sample adds.
DESIGN_WEIGHT = "design_weight"
_SAMPLE_STREAM = np.uint64(0x53414D504C455253)


def allocate(
    sizes: Sequence[int], n: int, *, allocation: Allocation = "proportional", std: Sequence[float] | None = None,
    min_per_stratum: int = 0, factors: Sequence[float] | None = None,
) -> np.ndarray:
    """Units to draw per stratum (module docstring): ``n_h`` for strata of sizes ``sizes``.

    >>> allocate([1000, 99_000, 9_900_000], 10_000).tolist()          # proportional
    [1, 99, 9900]
    >>> allocate([1000, 99_000, 9_900_000], 10_000, min_per_stratum=100).tolist()
    [100, 198, 9702]
    >>> allocate([100, 100], 20, allocation="neyman", std=[1.0, 3.0]).tolist()
    [5, 15]
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    strata = sizes.size
    if allocation not in ALLOCATIONS:
        raise ConfigError(f"unknown allocation `{allocation}` (known: {', '.join(ALLOCATIONS)})")
    if n < 1 or n > sizes.sum():
        raise ConfigError(f"`n` must be between 1 and the population's {sizes.sum():,} units, got {n:,}")
    if min_per_stratum < 0:
        raise ConfigError(f"`min_per_stratum` must be >= 0, got {min_per_stratum}")
    base = np.minimum(sizes, min_per_stratum)
    if base.sum() > n:
        raise ConfigError(f"`min_per_stratum` = {min_per_stratum} over {strata} strata needs {base.sum():,} units, more than n = {n:,}")
    if allocation == "proportional":
        share = sizes.astype(np.float64)
    elif allocation == "equal":
        share = np.ones(strata)
    else:
        if std is None:
            raise ConfigError("`neyman` allocation needs each stratum's std: `std=` a column of pilot values or {stratum: std}")
        std = np.asarray(std, dtype=np.float64)
        if np.any(~np.isfinite(std)) or np.any(std < 0):
            raise ConfigError(f"stratum std must be finite and >= 0, got {std.tolist()}")
        share = sizes * std
        if share.sum() == 0:
            share = sizes.astype(np.float64)  # every std 0: any allocation is optimal; take proportional
    if factors is not None:
        share = share * np.asarray(factors, dtype=np.float64)
    counts = base.copy()
    # Split the rest by the shares among strata with room; a stratum that would exceed N_h is
    # filled and its excess split again (at most one round per stratum: a loop over strata).
    open_ = counts < sizes
    for _ in range(strata + 1):
        remaining = n - counts.sum()
        if remaining == 0 or not open_.any():
            break
        weights = np.where(open_, share, 0.0)
        if weights.sum() == 0:
            weights = np.where(open_, 1.0, 0.0)
        target = counts + remaining * weights / weights.sum()
        full = open_ & (target >= sizes)
        if full.any():
            counts[full] = sizes[full]
            open_ &= ~full
            continue
        counts = _largest_remainder(target, n)
        break
    return counts


def _largest_remainder(target: np.ndarray, n: int) -> np.ndarray:
    """Whole numbers ``≥ ⌊target⌋`` summing to ``n``: the largest remainders get the spare units."""
    floor = np.floor(target + 1e-9).astype(np.int64)
    spare = n - floor.sum()
    if spare > 0:
        order = np.argsort(-(target - floor), kind="stable")
        floor[order[:spare]] += 1
    return floor


def selection_words(hashes: np.ndarray, seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """Each unit's selection word under each seed, shape ``(units, seeds)`` (module docstring)."""
    seeds = np.atleast_1d(np.asarray(seeds, dtype=np.uint64))
    with np.errstate(over="ignore"):
        keyed = _splitmix64(seeds ^ _SAMPLE_STREAM)
        return _splitmix64(hashes[:, None] ^ keyed[None, :])


def draw(strata: np.ndarray, counts: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Which units are drawn (``bool``, shape of ``words``): in each stratum ``h`` (codes
    ``0 … H−1`` in ``strata``), the ``counts[h]`` units with the smallest words, per column.
    A loop over strata only; every seed (column) at once."""
    chosen = np.zeros(words.shape, dtype=bool)
    for h, count in enumerate(counts):
        members = np.nonzero(strata == h)[0]
        if count == 0 or members.size == 0:
            continue
        if count >= members.size:
            chosen[members] = True
            continue
        block = words[members]
        picked = np.argpartition(block, count - 1, axis=0)[:count]
        chosen[members[picked], np.arange(words.shape[1])[None, :]] = True
    return chosen


def _stratum_std(table: pl.DataFrame, by: list[str], std) -> pl.DataFrame | None:
    if std is None:
        return None
    if isinstance(std, str):
        if std not in table.columns:
            raise ConfigError(f"`std` column `{std}` is not in the table (columns: {', '.join(table.columns)})")
        return table.group_by(by).agg(_std=pl.col(std).cast(pl.Float64).std().fill_null(0.0))
    if isinstance(std, pl.DataFrame):
        missing = [c for c in [*by, "value"] if c not in std.columns]
        if missing:
            raise ConfigError(f"a pilot for `std` needs the stratum columns and `value`; it lacks {missing}")
        return std.group_by(by).agg(_std=pl.col("value").cast(pl.Float64).std().fill_null(0.0)).cast(
            {b: table.schema[b] for b in by})
    if isinstance(std, Mapping):
        if len(by) != 1:
            raise ConfigError("`std` as a mapping needs one stratum column; pass a column of pilot values instead")
        return pl.DataFrame({by[0]: list(std), "_std": [float(v) for v in std.values()]}).cast({by[0]: table.schema[by[0]]})
    raise ConfigError(f"`std` must be a column name, a pilot table or a mapping stratum → std, got {type(std).__name__}")


@dataclass(frozen=True)
class StratifiedSample:
    """A stratified sample of units (module docstring).

    ``table``: the sampled rows with the design weight column :attr:`weight`; ``tables``: the
    same for :class:`~evalframe.data.tables.Tables` input (the queries of the sampled units,
    their rankings and judgments); ``allocation``: per stratum ``N``, ``n`` and the design
    weight; ``unit``: the unit key columns; ``by``: the stratum columns.
    """

    table: pl.DataFrame
    allocation: pl.DataFrame
    by: tuple[str, ...]
    unit: tuple[str, ...]
    tables: object | None = None
    weight: str = DESIGN_WEIGHT

    def estimate(self, values, *, metric: str | None = None, value: str = "value", confidence: float = 0.95) -> pl.DataFrame:
        """The stratified estimate of the population mean, its SE and CI (:func:`stratified_estimate`).

        ``values``: an :class:`~evalframe.engine.result.Evaluation` of this sample (with
        ``metric``: one row per system) or a table with the unit key columns and ``value``.
        """
        if metric is not None:
            table = values.per_unit().filter(pl.col("metric") == metric) if hasattr(values, "per_unit") else values.filter(pl.col("metric") == metric)
            if table.height == 0:
                raise ConfigError(f"no per-unit values of `{metric}` (a set metric's stratified SE comes from the bootstrap within strata)")
        else:
            table = values
        group = ["system"] if "system" in table.columns else []
        keyed = table.join(self.table.select(*self.unit, *self.by).unique(), on=list(self.unit), how="inner")
        return stratified_estimate(keyed, value=value, by=list(self.by), population=self.allocation.select(*self.by, "N"),
                                   group=group, confidence=confidence)


def stratified_sample(
    table, *, by: str | Sequence[str], n: int, allocation: Allocation = "proportional", min_per_stratum: int = 0,
    oversample: Mapping[object, float] | None = None, seed: int = 0, std: str | Mapping[object, float] | None = None,
    unit: str | Sequence[str] | None = None,
) -> StratifiedSample:
    """Draw ``n`` units stratified by ``by`` (module docstring).

    ``table`` is a table with one row per unit, or :class:`~evalframe.data.tables.Tables`:
    then the units are queries (``unit`` default ``query_id``: all systems of a query are kept
    together, so comparisons stay paired) and their rankings and judgments are kept too.

    >>> sample = ef.stratified_sample(tables, by="criterion_id", n=2000, allocation="neyman", std="pilot", seed=1)  # doctest: +SKIP
    >>> est = ef.evaluate(sample.tables, metrics=["ndcg@10"], weight=sample.weight)                             # doctest: +SKIP
    """
    from evalframe.data.tables import Tables

    by = [by] if isinstance(by, str) else list(by)
    source = table.queries if isinstance(table, Tables) else table
    if source is None:
        raise ConfigError("stratified_sample needs a queries table (Tables without queries have no strata)")
    unit = ["query_id"] if unit is None and isinstance(table, Tables) else ([unit] if isinstance(unit, str) else list(unit or []))
    missing = [c for c in [*by, *unit] if c not in source.columns]
    if missing:
        raise ConfigError(f"columns {missing} are not in the table (columns: {', '.join(source.columns)})")
    units = source.with_row_index("_row") if not unit else source
    keys = unit or ["_row"]
    per_unit = units.group_by(keys, maintain_order=True).agg(pl.col(by).n_unique().name.suffix("_n"), pl.col(by).first())
    spread = per_unit.filter(pl.any_horizontal([pl.col(f"{b}_n") > 1 for b in by]))
    if spread.height:
        raise ConfigError(f"a unit must lie in one stratum: {spread.height} units ({keys} = {spread.row(0)[:len(keys)]}, …) span several values of {by}")
    per_unit = per_unit.select(*keys, *by)
    strata = per_unit.group_by(by).agg(N=pl.len().cast(pl.Int64)).sort(by, nulls_last=True)
    stds = _stratum_std(units, by, std)
    if stds is not None:
        strata = strata.join(stds, on=by, how="left").with_columns(pl.col("_std").fill_null(0.0))
    factors = np.ones(strata.height)
    if oversample:
        labels = strata.select(by[0]).to_series().to_list() if len(by) == 1 else [tuple(r) for r in strata.select(by).iter_rows()]
        unknown = [k for k in oversample if k not in labels]
        if unknown:
            raise ConfigError(f"`oversample` names unknown strata {unknown} (strata: {labels[:20]})")
        factors = np.array([float(oversample.get(label, 1.0)) for label in labels])
        if np.any(factors <= 0):
            raise ConfigError("`oversample` factors must be > 0")
    counts = allocate(strata.get_column("N").to_numpy(), n, allocation=allocation, min_per_stratum=min_per_stratum,
                      std=strata.get_column("_std").to_numpy() if stds is not None else None, factors=factors)
    strata = strata.select(*by, "N").with_columns(n=pl.Series(counts, dtype=pl.Int64)).with_columns(
        **{DESIGN_WEIGHT: pl.when(pl.col("n") > 0).then(pl.col("N") / pl.col("n"))}
    ).with_row_index("_stratum")
    coded = per_unit.join(strata.select("_stratum", *by), on=by, how="left", nulls_equal=True)
    words = selection_words(unit_hashes(coded.select(keys)), [seed])
    chosen = draw(coded.get_column("_stratum").to_numpy().astype(np.int64), counts, words)[:, 0]
    drawn = coded.filter(pl.Series(chosen)).join(strata.select("_stratum", DESIGN_WEIGHT), on="_stratum").select(*keys, DESIGN_WEIGHT)
    sampled = units.join(drawn, on=keys, how="inner", maintain_order="left")
    if not unit:
        sampled = sampled.drop("_row")
    result_tables = None
    if isinstance(table, Tables):
        from dataclasses import replace

        ids = sampled.select(pl.col("query_id").unique())
        judgments = table.judgments.join(ids, on="query_id", how="semi") if table.judgments is not None else None
        ranking_rows = table.ranking_rows.join(ids, on="query_id", how="semi") if table.ranking_rows is not None else None
        ranked_lists = table.ranked_lists.join(ids, on="query_id", how="semi") if table.ranked_lists is not None else None
        result_tables = replace(table, queries=sampled, judgments=judgments, ranking_rows=ranking_rows, ranked_lists=ranked_lists,
                                n_rows=sampled.height)
    return StratifiedSample(table=sampled, allocation=strata.drop("_stratum"), by=tuple(by), unit=tuple(keys),
                            tables=result_tables)


def stratified_estimate(values: pl.DataFrame, *, value: str, by: Sequence[str], population: pl.DataFrame,
                        group: Sequence[str] = (), confidence: float = 0.95) -> pl.DataFrame:
    """The stratified mean of ``value`` over the population, its standard error and normal CI.

    ``values``: one row per sampled unit with the stratum columns ``by`` (and ``group``, e.g.
    ``system``, for one estimate per group); ``population``: ``by`` and ``N`` (stratum sizes).
    Returns per group: ``estimate`` (Σ W_h ȳ_h), ``se`` (√Σ W_h² (1 − n_h/N_h) s_h²/n_h),
    ``ci_low``, ``ci_high``, ``n`` (values used), ``N`` and ``note`` (strata with a single value,
    or with none, which leave the estimate undefined).
    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"`confidence` must be in (0, 1), got {confidence}")
    by, group = list(by), list(group)
    z = float(special.ndtri(0.5 + confidence / 2.0))
    present = values.filter(pl.col(value).is_not_null() & pl.col(value).is_not_nan())
    per_stratum = present.group_by([*group, *by]).agg(
        n_h=pl.len().cast(pl.Int64), mean_h=pl.col(value).cast(pl.Float64).mean(), var_h=pl.col(value).cast(pl.Float64).var(),
    )
    groups = present.select(group).unique() if group else pl.DataFrame({"_g": [0]})
    frame = (groups.join(population.select(*by, "N"), how="cross"))
    frame = frame.join(per_stratum, on=[*group, *by], how="left", nulls_equal=True) if group else frame.drop("_g").join(per_stratum, on=by, how="left", nulls_equal=True)
    keys = group or []
    total = pl.col("N").sum().over(keys) if keys else pl.col("N").sum()
    frame = frame.with_columns(W=pl.col("N") / total)
    summary_exprs = {
        "estimate": pl.when(pl.col("n_h").null_count() == 0).then((pl.col("W") * pl.col("mean_h")).sum()),
        "se": ((pl.col("W") ** 2) * (1 - pl.col("n_h") / pl.col("N")) * pl.col("var_h").fill_null(0.0) / pl.col("n_h")).sum().sqrt(),
        "n": pl.col("n_h").sum().cast(pl.Int64), "N": pl.col("N").sum().cast(pl.Int64),
        "_single": (pl.col("n_h") == 1).sum(), "_empty": pl.col("n_h").is_null().sum(),
    }
    result = frame.group_by(keys, maintain_order=True).agg(**summary_exprs) if keys else frame.select(**summary_exprs)
    note = (
        pl.when(pl.col("_empty") > 0).then(pl.format("{} strata without a value: no estimate", pl.col("_empty")))
        .when(pl.col("_single") > 0).then(pl.format("{} strata with one value add no variance", pl.col("_single")))
    )
    result = result.with_columns(
        se=pl.when(pl.col("estimate").is_not_null()).then(pl.col("se")),
        note=note,
    ).with_columns(ci_low=pl.col("estimate") - z * pl.col("se"), ci_high=pl.col("estimate") + z * pl.col("se"))
    return result.select(*keys, "estimate", "se", "ci_low", "ci_high", "n", "N", "note").sort(keys) if keys else result.select(
        "estimate", "se", "ci_low", "ci_high", "n", "N", "note")
