"""The one result type of every evaluation (:func:`evalframe.evaluate`, every pipeline).

- ``summary``: tidy, one row per (grouping set, system, slice key values, metric, subset) with
  ``unit``, ``n``, ``n_skipped``, ``n_outside_subset``, ``value``, ``std``, ``median``, ``p25``,
  ``p75``, ``p90``, ``min``, ``max``, the bootstrap's ``se``, ``ci_low``, ``ci_high`` (null
  without ``bootstrap``) and ``note``;
- ``replicates``: with a bootstrap, each summary row's replicate values (paired comparisons
  subtract them);
- ``per_query``: long per-query values (``system, query_id``, trace and slice keys, ``metric``,
  ``value``, ``skip_reason``) of the query-unit metrics; :meth:`Evaluation.per_unit` gives any
  unit's (``ev.per_unit("post")``);
- ``skipped``: per system, unit, metric and reason, how many units have no value;
- ``notes``: what was left out and why (never silently);
- ``tables``: further named result tables that later stages add (an ablation table, a tuning
  table, the consistency checks, a comparison), each written as ``<name>.csv`` and rendered as a
  section of ``summary.md``; ``inputs`` holds the input tables the result was computed from.

The engine knows nothing of reports or result folders. The views a user reaches from a result
(``ev.write``, ``ev.plot``, ``ev.table()``, ``ev.overview()``, ``ev.info``, ``ev.report_table()``,
notebook display) are attached by :mod:`evalframe.report.views` through :func:`evaluation_view`;
``import evalframe`` (which every ``import evalframe.<module>`` runs first) imports it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe._sorting import natural_sorted
from evalframe.data.units import QUERY, Units
from evalframe.errors import ConfigError
from evalframe.metrics.registry import canonical_name

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.plan import Plan
    from evalframe.metrics.base import Metric


class LongValues:
    """The long per-unit values of an in-memory evaluation, made from their lazy plan (over the
    wide per-unit tables) the first time anything reads them, then kept: once for the result
    and every copy of it (``replace`` copies share this object). A run that reads only the
    summary (``outputs: [summary.csv, run.json]``) never makes them: units × metrics rows
    (1.35 M on the 147,700-query benchmark, ~90 MB of new columns) that nothing would read."""

    def __init__(self, plan: pl.LazyFrame):
        self._plan: pl.LazyFrame | None = plan
        self._frame: pl.DataFrame | None = None
        self._lock = threading.Lock()

    @classmethod
    def made(cls, frame: pl.DataFrame) -> LongValues:
        """Values already made (a pickled result's)."""
        values = cls(frame.lazy())
        values._plan, values._frame = None, frame
        return values

    def frame(self) -> pl.DataFrame:
        with self._lock:  # two threads reading at once make them once
            if self._frame is None:
                self._frame, self._plan = self._plan.collect(engine="in-memory"), None
            return self._frame

    def __reduce__(self):
        return LongValues.made, (self.frame(),)


@dataclass(frozen=True, repr=False)
class Evaluation:
    """What an evaluation returns (see the module docstring)."""

    summary: pl.DataFrame
    #: The long per-unit values as the engine left them (read :attr:`per_unit_frame`): in memory
    #: a :class:`LongValues`, made when first read; on the bucket path a lazy plan over the
    #: per-unit values spilled to disk (never collected by the engine).
    per_unit_source: pl.DataFrame | pl.LazyFrame | LongValues
    skipped: pl.DataFrame
    plan: Plan
    units: Units
    queries: pl.DataFrame
    inputs: Tables | None = None
    notes: tuple[str, ...] = ()
    #: Where the input came from (path, sha256, format, rows), for ``run.json``.
    source: dict[str, Any] = field(default_factory=dict)
    #: Row counts of the input tables (``ranking``, ``judgments``) for ``run.json`` when
    #: ``inputs`` is not held: a pipeline's bucket path adds them up bucket by bucket
    #: (:mod:`evalframe.pipeline.scanned`). Empty: read them off ``inputs``.
    input_rows: Mapping[str, int] = field(default_factory=dict)
    #: The bootstrap's replicate values (when ``plan.bootstrap`` is set): the summary's key
    #: columns and ``values``, ``Array(Float64, R)``, nan where a replicate is undefined
    #: (:func:`evalframe.engine.uncertainty.replicates_table`); None without a bootstrap.
    replicates: pl.DataFrame | None = None
    #: Further named result tables (``"ablation"``, ``"checks"``, …), in the order they were added.
    tables: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    #: On the bucket path, the owner of the spilled per-unit value files that
    #: :attr:`per_unit_frame` reads (:class:`evalframe.engine.buckets.SpilledValues`): the files
    #: are removed when no result holding it is left (every copy made with ``replace`` holds it).
    per_unit_files: Any = field(default=None, compare=False)

    @property
    def per_unit_frame(self) -> pl.DataFrame | pl.LazyFrame:
        """The long per-unit values: a DataFrame in memory (made on first read); on the bucket
        path a lazy plan over the per-unit values spilled to disk. Read them through
        :attr:`per_unit_values` (a DataFrame) or :meth:`per_unit_lazy`."""
        source = self.per_unit_source
        return source.frame() if isinstance(source, LongValues) else source

    @cached_property
    def per_unit_values(self) -> pl.DataFrame:
        """The long per-unit values (keys, trace and slice keys, ``metric``, ``value``,
        ``skip_reason``, ``unit``, ``subset``). After a bucket run (``buckets=…``) this reads every
        unit's values of every metric from disk into memory (units × metrics rows: gigabytes for
        tens of millions of units); :meth:`per_unit_lazy` streams them instead."""
        frame = self.per_unit_frame
        return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


    def __repr__(self) -> str:
        """A few lines for ``print(ev)`` and a notebook's text view: systems, queries, metrics,
        slices, whether intervals were computed, further tables and how to see more."""
        name = self.plan.about.get("name") or "evaluation"
        systems = natural_sorted(self.summary.get_column("system").unique().to_list())
        queries = self.queries.select("query_id").n_unique() if "query_id" in self.queries.columns else self.queries.height
        metrics = [m.name for m in self.metrics]
        bootstrap = self.plan.bootstrap
        lines = [
            f"<Evaluation {name!r}: {len(systems)} system{'s' if len(systems) != 1 else ''}, {queries:,} queries, "
            f"{len(metrics)} metrics, {self.summary.height:,} summary rows>",
            f"  systems:   {_shortened(systems)}",
            f"  metrics:   {_shortened(metrics)}",
            "  slices:    " + ", ".join(f"{g} [{', '.join(k)}]" if k else g for g, k in self.plan.slices.items())
            + (f" + across_folds ({self.plan.across_folds})" if self.plan.across_folds else ""),
            "  intervals: " + (f"{bootstrap.confidence:.0%} bootstrap CI, {bootstrap.resamples:,} resamples"
                               if bootstrap is not None else "none (no bootstrap)"),
        ]
        if self.tables:
            lines.append(f"  tables:    {', '.join(self.tables)}")
        if self.notes:
            lines.append(f"  notes:     {len(self.notes)} (ev.notes)")
        lines.append("  see: ev.summary, ev.select(...), ev.by_system(), ev.table(), ev.plot.roc()")
        return "\n".join(lines)

    def with_tables(self, **tables: pl.DataFrame) -> Evaluation:
        """A copy with named result tables added (a later stage's output; replaces same names)."""
        return replace(self, tables={**self.tables, **tables})

    @property
    def checks(self) -> pl.DataFrame | None:
        """The consistency checks table, when the evaluation ran them."""
        return self.tables.get("checks")

    @property
    def metrics(self) -> tuple[Metric, ...]:
        return tuple(self.plan.metrics)

    def per_unit(self, unit: str = QUERY) -> pl.DataFrame:
        """Long values of one unit's metrics: its keys, trace and slice keys, ``metric``,
        ``value``, ``skip_reason`` (and ``subset`` when a metric is computed on several)."""
        return self.per_unit_lazy(unit).collect()

    @property
    def per_unit_on_disk(self) -> bool:
        """Whether the per-unit values are kept on disk (a bucket run): read them lazily then."""
        return isinstance(self.per_unit_source, pl.LazyFrame)

    def per_unit_lazy(self, unit: str | None = None) -> pl.LazyFrame:
        """The long per-unit values as a lazy frame: every unit's (None), or ``unit``'s with the
        columns of :meth:`per_unit` (found in one pass; after a bucket run a streaming scan of the
        files on disk): sink it (``ev.per_unit_lazy("query").sink_parquet(path)``)
        to write the values without holding them in memory."""
        if unit is None:
            return self.per_unit_frame.lazy()
        rows = self.per_unit_frame.lazy().filter(pl.col("unit") == unit)
        keys = [c for c in rows.collect_schema().names() if c not in ("metric", "value", "skip_reason", "unit", "subset")]
        # The rule of per_unit (a key column all null among the unit's rows is not the unit's;
        # the subset shown when a metric has several), from counts of one streaming pass.
        counts = rows.select(
            pl.len().alias("_rows"),
            *(pl.col(c).null_count().alias(c) for c in keys),
            (pl.struct("metric", "subset").n_unique() > pl.col("metric").n_unique()).alias("_several"),
        ).collect(engine="streaming").row(0, named=True)
        keys = [c for c in keys if counts[c] < counts["_rows"] or c in self.units.key_columns(unit)]
        extra = ["subset"] if counts["_several"] else []
        return rows.select(*keys, "metric", *extra, "value", "skip_reason")

    @cached_property
    def per_query(self) -> pl.DataFrame:
        """Long per-query values (query-unit metrics); see :meth:`per_unit`."""
        return self.per_unit(QUERY)

    def wide(self, unit: str = QUERY, *, summary: bool = False, stat: str = "value") -> pl.DataFrame:
        """One column per metric: the per-unit values of ``unit`` (keys as rows), or with
        ``summary=True`` the summary's ``stat`` (``value``, ``std``, ``n``, …) per grouping,
        system and slice.

        A metric computed on several subsets gets one column per subset, ``metric [subset]``.
        Set metrics (AUROC, ECE, …) have no per-unit values: they appear with ``summary=True``.
        """
        if summary:
            table = self.summary
            _check_stat(stat, table)
            keys = [c for c in ("grouping", "system", *self.plan.slice_keys) if table.get_column(c).null_count() < table.height]
            index, values = keys, stat
        else:
            table = self.per_unit(unit)
            index = [c for c in table.columns if c not in ("metric", "value", "skip_reason", "subset")]
            values = "value"
        return _labelled(table).pivot(on="_label", index=index, values=values, maintain_order=True)

    def by_system(self, baseline: str | None = None, *, grouping: str | None = None, stat: str = "value") -> pl.DataFrame:
        """Metrics × systems side by side: one row per metric (and subset) of ``grouping``
        (default: the first slice, usually ``overall``; ``"all"`` for every grouping), one
        column per system holding ``stat``; with ``baseline`` a system's name, the baseline's
        column comes first and each other system gets a column ``<system> - <baseline>``
        (its difference to the baseline, positive when the system's value is larger).

        >>> ev.by_system(baseline="bm25")  # doctest: +SKIP
        metric   subset       bm25    dense   dense - bm25
        ndcg@10  all queries  0.4012  0.4520  0.0508
        """
        table = self.summary
        _check_stat(stat, table)
        groupings = list(dict.fromkeys(table.get_column("grouping").to_list()))
        chosen = groupings if grouping == "all" else [self._grouping_name(grouping or next(iter(self.plan.slices)))]
        rows = table.filter(pl.col("grouping").is_in(chosen))
        systems = natural_sorted(rows.get_column("system").unique().to_list())
        if baseline is not None and baseline not in systems:
            raise ConfigError(f"baseline `{baseline}` is not a system of this evaluation (systems: {', '.join(map(repr, systems))})")
        keys = [c for c in ("grouping", *self.plan.slice_keys) if rows.get_column(c).null_count() < rows.height]
        if len(chosen) == 1:
            keys = [c for c in keys if c != "grouping"]
        index = [*keys, "metric", "subset"]
        side = rows.pivot(on="system", index=index, values=stat, maintain_order=True)
        ordered = [baseline, *(s for s in systems if s != baseline)] if baseline else systems
        side = side.select(*index, *ordered)
        if baseline is not None:
            side = side.with_columns((pl.col(s) - pl.col(baseline)).alias(f"{s} - {baseline}") for s in ordered[1:])
        return side

    def select(
        self,
        *,
        grouping: str | None = None,
        metric: str | Sequence[str] | None = None,
        system: str | Sequence[str] | None = None,
        subset: str | None = None,
        **slice_values: Any,
    ) -> pl.DataFrame:
        """Summary rows by slice values: ``ev.select(criterion_id="A.3")``, ``ev.select(fold=2,
        metric="ndcg@10")``, ``ev.select(fold="2")`` (a value is read as the column's type).

        Slice values pick the grouping that groups by exactly those columns (else every grouping
        that groups by them); without any, every grouping's rows are kept. ``grouping`` may name a
        grouping or, for a one-column slice, its column (``grouping="criterion_id"``). ``metric``
        takes any spelling the registry knows (``P@5`` finds ``precision@5``). A value, key or
        grouping the summary does not have is a :class:`~evalframe.errors.ConfigError` that lists
        what it has, never an empty table or a Polars error.
        """
        table = self.summary
        known_keys = list(self.plan.slice_keys)
        unknown = [key for key in slice_values if key not in known_keys]
        if unknown:
            raise ConfigError(f"select(): {', '.join(f'`{k}`' for k in unknown)} is not a slice column "
                              f"(slice columns: {', '.join(f'`{k}`' for k in known_keys) or 'none'}; "
                              "other filters: grouping, metric, system, subset)")
        if grouping is not None:
            table = table.filter(pl.col("grouping") == self._grouping_name(grouping))
        elif slice_values:
            wanted = set(slice_values)
            exact = [name for name, keys in self.plan.slices.items() if set(keys) == wanted]
            covering = exact or [name for name, keys in self.plan.slices.items() if wanted <= set(keys)]
            if not covering:
                described = "; ".join(f"{name}: [{', '.join(keys)}]" for name, keys in self.plan.slices.items())
                raise ConfigError(f"select(): no slice groups by {', '.join(f'`{k}`' for k in slice_values)} (slices: {described})")
            table = table.filter(pl.col("grouping").is_in(covering))
        for key, wanted in slice_values.items():
            table = table.filter(pl.col(key).is_in(_as_values(key, wanted, table.get_column(key))))
        if metric is not None:
            names = [metric] if isinstance(metric, str) else list(metric)
            table = table.filter(pl.col("metric").is_in(_present(self.summary, "metric", [canonical_name(n) for n in names])))
        if system is not None:
            table = table.filter(pl.col("system").is_in(_present(self.summary, "system", [system] if isinstance(system, str) else list(system))))
        if subset is not None:
            table = table.filter(pl.col("subset") == _present(self.summary, "subset", [subset])[0])
        return table

    def _grouping_name(self, name: str) -> str:
        """A grouping's name, given its name or (for a one-column slice) its column's name."""
        if name in self.plan.slices or name == "across_folds":
            return name
        by_column = [grouping for grouping, keys in self.plan.slices.items() if tuple(keys) == (name,)]
        if by_column:
            return by_column[0]
        described = ", ".join(f"`{g}`" + (f" (or `{keys[0]}`)" if len(keys) == 1 and keys[0] != g else "")
                              for g, keys in self.plan.slices.items())
        raise ConfigError(f"no grouping `{name}` (groupings: {described})")

    def to_pandas(self, table: str = "summary"):
        """``summary`` (default), ``per_query``, ``report`` or a further result table as pandas."""
        if table == "summary":
            return self.summary.to_pandas()
        if table == "per_query":
            return self.per_query.to_pandas()
        if table == "report":
            return self.report_table().to_pandas()
        if table in self.tables:
            return self.tables[table].to_pandas()
        known = ", ".join(["summary", "per_query", "report", *self.tables])
        raise ConfigError(f"no table `{table}` in this result (tables: {known})")


def evaluation_view(name: str | None = None, *, cached: bool = False) -> Callable[[Callable], Callable]:
    """Attach ``function`` to :class:`Evaluation` as the method ``name`` (default: the
    function's name), or as a cached property with ``cached=True``.

    This is how the layers above the engine give a result its user-facing views without the
    engine importing them (the way pandas' accessors work): :mod:`evalframe.report.views`
    attaches ``info`` (``run.json``), ``overview``, ``report_table``, ``table``,
    ``_repr_html_``, ``plot`` and ``write``, and ``import evalframe`` imports that module, so
    every ``Evaluation`` has them. Attaching a name the class already defines is an error (a
    view never replaces the engine's own attributes).
    """

    def attach(function: Callable) -> Callable:
        attribute = name or function.__name__
        if attribute in Evaluation.__dict__ and attribute not in _VIEWS:
            raise RuntimeError(f"Evaluation.{attribute} is defined by the engine; a view cannot replace it")
        value: Any = function
        if cached:
            value = cached_property(function)
            value.__set_name__(Evaluation, attribute)
        setattr(Evaluation, attribute, value)
        _VIEWS[attribute] = function
        return function

    return attach


#: Views attached by higher layers (:func:`evaluation_view`): name → function.
_VIEWS: dict[str, Callable] = {}


def _shortened(names: list[str], limit: int = 8) -> str:
    """The first ``limit`` names and how many more: ``auroc, ece, … (+61 more)``."""
    shown = ", ".join(names[:limit])
    return shown + (f", … (+{len(names) - limit} more)" if len(names) > limit else "")


def _check_stat(stat: str, table: pl.DataFrame) -> None:
    from evalframe.engine.aggregate import SUMMARY_STATS

    if stat not in SUMMARY_STATS:
        raise ConfigError(f"unknown summary column `{stat}` (one of {', '.join(SUMMARY_STATS)})")


def _labelled(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` with ``_label``: the metric, or ``metric [subset]`` for a metric on several subsets."""
    if "subset" not in table.columns:
        return table.with_columns(_label=pl.col("metric"))
    several = pl.col("subset").n_unique().over("metric") > 1
    return table.with_columns(
        _label=pl.when(several).then(pl.format("{} [{}]", "metric", "subset")).otherwise(pl.col("metric"))
    )


def _present(table: pl.DataFrame, column: str, wanted: list) -> list:
    """``wanted`` values, each of which ``table[column]`` holds; else an error listing what it holds."""
    have = table.get_column(column).unique().to_list()
    missing = [value for value in wanted if value not in have]
    if missing:
        raise ConfigError(f"select(): no {column} {', '.join(map(repr, missing))} in the summary "
                          f"({column}s: {_listed(have)})")
    return wanted


def _listed(values: list) -> str:
    shown = natural_sorted(v for v in values if v is not None)
    return ", ".join(map(repr, shown[:12])) + (", …" if len(shown) > 12 else "")


def _as_values(key: str, wanted: Any, column: pl.Series) -> list:
    """``wanted`` (a value or a list) as values of ``column``'s type, each present in it:
    ``fold="2"`` finds fold 2 of an integer column, ``fold=2`` finds ``"2"`` of a text one."""
    values = list(wanted) if isinstance(wanted, (list, tuple, set)) else [wanted]
    converted = []
    for value in values:
        if column.dtype.is_integer():
            text = str(value).strip()
            if isinstance(value, bool) or not (text.lstrip("+-").isdigit() or (isinstance(value, float) and value.is_integer())):
                raise ConfigError(f"select(): `{key}` holds integers; {value!r} is not one (values: {_listed(column.unique().to_list())})")
            converted.append(int(float(text)) if isinstance(value, float) else int(text))
        elif column.dtype.is_float():
            try:
                converted.append(float(value))
            except (TypeError, ValueError):
                raise ConfigError(f"select(): `{key}` holds numbers; {value!r} is not one") from None
        else:
            converted.append(str(value))
    have = set(column.drop_nulls().unique().to_list())
    missing = [value for value in converted if value not in have]
    if missing:
        raise ConfigError(f"select(): no {key} {', '.join(map(repr, missing))} in the summary "
                          f"({key} values: {_listed(list(have))})")
    return converted
