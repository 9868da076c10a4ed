"""The metric abstraction (DESIGN §3): one description, three levels, any unit, weights.

Every metric declares its canonical ``name`` (``recall@5``), the ``target`` category it
measures (the taxonomy of seed 000 §2.1), its ``level``, the ``unit`` it gives values for and
the columns it needs:

- **item** level (:class:`ItemMetric`): computed from a query's ranked items. ``partials()``
  gives named aggregations over one query's rows of the ranking table (``hits@5``); the
  evaluator runs them all in one group-by, sharing partials between metrics ("count first").
  ``ideal_partials()`` are aggregations of the same kind over the query's ideal ranking (its
  judged items, best grade first), e.g. the ideal DCG. ``value()`` then combines partials with
  per-query context (``n_relevant``, ``n_retrieved``) into one value per query: "count first,
  divide once". Item metrics have the unit ``query``.
- **query** level (:class:`QueryMetric`): one value per unit from the ``queries`` table. For
  the unit ``query`` ``expr()`` is a row-wise expression (the Brier term); for a coarser unit
  (``post``: the criteria of one post) it is an aggregation over the unit's query rows (a
  post's F1 over its criteria).
- **set** level (:class:`SetMetric`): a property of a whole slice of units (AUROC, ECE, micro
  F1) with no per-unit value, computed in two steps that make it mergeable: ``state()``
  reduces rows to sufficient statistics that add up (confusion counts, the positive and
  negative weight at each score, per-bin sums), ``finalize()`` turns a slice's state into the
  value. The state of a union of disjoint sets of units is the sum of their states
  (:func:`merge_states`), so a metric can run on parts of the data (buckets on disk,
  bootstrap replicates) and be merged exactly.

**Units.** ``unit`` names what a metric produces one value for: ``query`` (default) or a
coarser unit made of queries whose key columns come from the data and the pipeline
(``units: {post: [post_id]}``), never from a constant. Units to come plug in the same way: a
*pair* unit (a query and its ``variant_of`` parent, for robustness metrics) is a unit whose
keys are ``[variant_of]`` once the parent row is given that key too, and whose ``expr()``
compares the two rows of the pair; a metric whose per-unit value comes from a Python library
called in batches (ROUGE through rouge-score) is a query-level metric whose ``expr()`` is a
``map_batches`` over the reference and response columns, one call per batch, never per row.

**Weights.** Every row the engine hands a metric carries :data:`WEIGHT`, its unit's
non-negative weight (1.0 unless the user gives a weight column). Per-unit values are
summarised by the engine as weighted means; set metrics use weighted counts exactly as
scikit-learn's ``sample_weight`` (a row's weight multiplies what it adds to every sum).

Undefined values follow one policy everywhere: ``null`` with a reason that is counted
(``n_skipped``, ``skip_reason`` or the summary's ``note``), never a made-up 0; callers may ask
for 0 instead (``empty="zero"``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from enum import StrEnum
from typing import ClassVar, Literal

import polars as pl

from evalframe._lazy import lazy_module
from evalframe.metrics.params import check_parameters
# The metric families import the weight-matrix helpers from here too (row_weights, scored_rows,
# replicate_frame); their home is evalframe.metrics.weight_matrices.
from evalframe.metrics.weight_matrices import (  # noqa: F401
    REPLICATE,
    SLICE,
    ReplicateState,
    RowWeights,
    finalized_slices,
    finalized_values,
    replicate_count,
    replicate_frame,
    row_weights,
    scored_rows,
)

np = lazy_module("numpy")  # imported on first use: `import evalframe` stays light


class TargetCategory(StrEnum):
    """What a metric measures (seed 000 §2.1), extended with the evidence gate's two targets."""

    RETRIEVAL_RELEVANCE = "retrieval_relevance"
    RETRIEVAL_ACCURACY = "retrieval_accuracy"
    GENERATION_RELEVANCE = "generation_relevance"
    GENERATION_FAITHFULNESS = "generation_faithfulness"
    GENERATION_CORRECTNESS = "generation_correctness"
    LATENCY = "latency"
    DIVERSITY = "diversity"
    NOISE_ROBUSTNESS = "noise_robustness"
    NEGATIVE_REJECTION = "negative_rejection"
    COUNTERFACTUAL_ROBUSTNESS = "counterfactual_robustness"
    # evalframe's additions for evidence gates (seed 001 §2): query-level has-evidence decisions.
    CLASSIFICATION = "classification"
    CALIBRATION = "calibration"


class Level(StrEnum):
    ITEM = "item"
    QUERY = "query"
    SET = "set"


Summary = Literal["mean", "sum"]

#: Per-query context columns an item metric's ``value()`` may use besides its partials.
QUERY_CONTEXT = ("n_relevant", "n_retrieved")
#: Context column present when a metric reads character spans: whether the ranking gives spans
#: at all (False for string-only predictions), :mod:`evalframe.engine.matching`.
SPANS_GIVEN = "ranking_has_spans"


def span_columns(k: int) -> tuple[str, str]:
    """Item columns of the character-span stage at cutoff ``k``: the characters each of the top-k
    items adds to the union of the top-k spans, and those of them inside the gold spans."""
    return f"new_span_chars@{k}", f"new_gold_chars@{k}"


def span_cutoffs(columns: set[str] | frozenset[str]) -> list[int]:
    """The cutoffs of the :func:`span_columns` names among ``columns``."""
    return sorted({int(c.rpartition("@")[2]) for c in columns if c.startswith(("new_span_chars@", "new_gold_chars@"))})

#: The column of every row handed to a metric that holds its unit's weight (Float64, >= 0).
WEIGHT = "_weight"

#: The skip reason of a ranking ratio whose denominator is 0.
UNDEFINED_RATIO = "undefined (zero denominator)"

#: The unit every metric has unless it says otherwise.
QUERY_UNIT = "query"


class Parameterless:
    """Mixin of a metric class without parameters: its instances are equal, hash alike and print
    as ``Name()`` (put it first among the bases)."""

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Metric(ABC):
    """Common description of every metric."""

    target: ClassVar[TargetCategory]
    level: ClassVar[Level]
    #: What the metric gives one value for (per unit) or is computed over (set level).
    unit: ClassVar[str] = QUERY_UNIT
    #: Columns the metric reads, by table (``{"ranking": ("rank",), "queries": ("label",)}``).
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: The metric's own subset: the units it is defined on, in words (reports print it) ...
    subset: ClassVar[str] = "all queries"
    #: ... and as a Polars SQL condition over the queries table (None: every unit). A unit
    #: outside it keeps its per-unit row with a null value and the reason
    #: :attr:`outside_reason`, unless the caller asks for ``empty="zero"``.
    subset_where: ClassVar[str | None] = None
    #: The skip reason of a unit outside the metric's own subset.
    outside_reason: ClassVar[str] = "outside the metric's subset"
    #: How a slice summarises per-unit values: their (weighted) mean, or their sum for counts.
    summary: ClassVar[Summary] = "mean"
    higher_is_better: ClassVar[bool] = True
    #: Whether the value is a rate (a proportion of items or queries) that plain-language text,
    #: such as the PR comment of ``evalframe gate``, prints as a percentage ("recall@5 is 87%").
    is_rate: ClassVar[bool] = False
    #: The closed interval every value lies in (``(0.0, 1.0)`` for a probability or rate,
    #: ``(-1.0, 1.0)`` for MCC, ``(0.0, inf)`` for a count); the checks stage verifies it
    #: (contract §9.1). None: no declared range, not checked.
    value_range: ClassVar[tuple[float, float] | None] = None

    @property
    @abstractmethod
    def name(self) -> str:
        """Canonical printed name, e.g. ``ndcg@10``; parsing it gives back an equal metric."""

    def __str__(self) -> str:
        return self.name

    def __post_init__(self) -> None:
        """Check the parameters the class declares (:func:`evalframe.metrics.params.param`)."""
        check_parameters(self)

    def prepare(self, tables: object) -> None:
        """Work done once per evaluation before any value is computed (the engine calls it with the
        evaluation's tables): the judge metrics ask their judge every prompt here, so a replay
        miss stops the run before anything is computed. Nothing by default."""
        return None

    def note(self) -> tuple[pl.Expr, str] | None:
        """A per-unit flag worth counting in the summary's ``note``, and its text.

        ``(flag, template)``: ``flag`` has the shape of the metric's per-unit value (true for a
        unit to count), ``template`` contains ``{count}``, e.g. ``"{count} posts with no true and
        no predicted positive scored 0.0"``. None (the default) when there is nothing to say.
        Set metrics have no per-unit value and no such note.
        """
        return None


class ItemMetric(Metric):
    """A metric computed from each query's ranked items (DESIGN §3, item level).

    Rows seen by ``partials()`` carry ``rank`` (1-based), ``relevance`` (grade, null when the
    item is unjudged), ``is_relevant`` (grade >= threshold) and ``relevant_at_rank`` (relevant
    items at this rank or above), in rank order.

    Partials that are plain aggregations of row-wise expressions (``pl.when(cond).then(x).sum()``
    rather than ``x.filter(cond).sum()`` or a running sum) keep the evaluator's group-by on its
    fast path; ``relevant_at_rank`` is there so that average precision needs no running sum.
    """

    level = Level.ITEM
    required_columns = {"ranking": ("query_id", "doc_id"), "judgments": ("query_id", "doc_id", "relevance")}
    subset = "queries with at least one relevant item"
    subset_where = "n_relevant > 0"
    outside_reason = "no relevant item"
    value_range = (0.0, 1.0)

    #: Whether the partials read unjudged items (rows whose ``relevance`` is null). When no
    #: metric of an evaluation does, the evaluator feeds them the judged items only, which on a
    #: run of millions of rows is most of the saving. A metric whose value would change if the
    #: unjudged rows were left out (say, one counting items above the first relevant one) must
    #: say True; so must a subclass whose partials read more than its parent's.
    reads_unjudged_items: ClassVar[bool] = True
    #: Columns of the judged item rows, beyond those above, that the partials read; the
    #: judging stages add them (:mod:`evalframe.engine.matching`): ``first_matches`` (relevant
    #: judgments this item is the first to match), ``has_span`` and the :func:`span_columns` of a
    #: cutoff (character spans). A metric that lists any is computed on every ranked row.
    item_columns: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def partials(self) -> dict[str, pl.Expr]:
        """Named aggregations over one query's ranking rows; 0 must be right for no rows."""

    def ideal_partials(self) -> dict[str, pl.Expr]:
        """Named aggregations over the query's ideal ranking; none by default.

        The ideal ranking holds the query's judged items with a positive grade, best grade
        first, with the same columns as the rows of :meth:`partials` (its ``rank`` is the
        position in that order). 0 must be right for a query without such items.
        """
        return {}

    @abstractmethod
    def value(self) -> pl.Expr:
        """Per-query value from partials and context; null where undefined."""

    def skip_reason(self) -> pl.Expr:
        """Why :meth:`value` is null where it is, inside the metric's subset (same shape)."""
        return pl.lit(UNDEFINED_RATIO)


class QueryMetric(Metric):
    """One value per unit from the ``queries`` table (DESIGN §3, query level).

    For the unit ``query``, :meth:`expr` is row-wise: one value per row of the queries table.
    For a coarser unit it is an aggregation over the query rows of one unit (the engine runs it
    in a group-by over the unit's keys), e.g. a post's F1 over its criteria.
    """

    level = Level.QUERY

    @abstractmethod
    def expr(self) -> pl.Expr:
        """The unit's value; null where undefined."""

    def skip_reason(self) -> pl.Expr:
        """Why the value is null where it is (same shape as :meth:`expr`); override for a more precise reason."""
        return pl.lit("undefined")


class SetMetric(Metric):
    """A metric of a whole slice of units with no per-unit value (DESIGN §3, set level).

    Computed in two steps so that parts of the data can be evaluated apart and merged:
    :meth:`state` reduces the rows of each slice to sufficient statistics whose columns add up,
    :meth:`finalize` turns a slice's (possibly merged) state into the metric. Metrics with
    equal :attr:`state_id` share one state (all confusion metrics at one threshold share the
    confusion counts), which the engine computes once.

    A set metric of a coarser unit whose state counts units (a post spans several rows)
    declares a dataclass field ``unit_keys``: the engine sets it to the unit's key columns.
    """

    level = Level.SET
    #: Whether the state of a unit whose queries are split between parts adds up exactly to the
    #: unit's own (every state column sums over query rows and none counts units): only then may
    #: merged partials split a coarser unit (:func:`evalframe.engine.partials.check_disjoint_units`).
    state_merges_by_query: ClassVar[bool] = False
    #: Key columns of the state's rows besides the slice keys, e.g. ``("prob",)`` for the ROC
    #: family's operating points or ``("bin",)`` for ECE.
    state_keys: ClassVar[tuple[str, ...]] = ()
    #: Whether the metric is one vectorised function of its state in dense form, which its
    #: replicates read directly (:class:`~evalframe.metrics.keyed_sums.KeyedSumsMetric`).
    reads_dense_state: ClassVar[bool] = False
    #: The state's value columns (besides the slice and state keys) and how each depends on the
    #: weights, ``"sum"`` (a weighted sum, ``Σ w·x``) or ``"count"`` (a count of rows), when the
    #: metric declares them; None: the bootstrap finds them by computing each slice's state a
    #: second time with every weight doubled (:mod:`evalframe.metrics.stacked`). Declaring them
    #: spares that second state; ``tests/metrics/test_stacked_states.py`` checks every
    #: declaration against the probe.
    state_kinds: ClassVar[Mapping[str, str] | None] = None

    @property
    def state_id(self) -> object:
        """Hashable identity of the state; metrics with equal ids share one. Default: no sharing."""
        return (type(self), self.name)

    def slice_columns(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """``rows`` with the columns that depend on *other* rows of their slice (a variant's
        parent in the slice, for paired robustness); none by default.

        A metric that needs such columns adds them here and reads them in :meth:`state_of`;
        the generic stacked state (:func:`evalframe.metrics.stacked.stacked_state`) adds them
        once over the whole slice before it reduces the rows unit by unit, so a pair split
        across units is still a pair, as in :meth:`state`.
        """
        return rows

    def state_of(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """:meth:`state` of rows that already carry :meth:`slice_columns` (by default, :meth:`state`)."""
        return self.state(rows, by)

    @abstractmethod
    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """Sufficient statistics of each slice of ``by``.

        One row per (``*by``, ``*state_keys``) value found in ``rows``; every other column is a
        sum over the rows it stands for (weighted with :data:`WEIGHT` where a weight applies, or
        a count of units), so that the state of disjoint parts merges by summation
        (:func:`merge_states`).
        """

    @abstractmethod
    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """One row per slice of ``by`` found in ``state`` with columns ``by``, ``n`` (Int64:
        units used), ``value`` (Float64) and ``note`` (String: why ``value`` is null, else null).

        Must not depend on the order of the state's rows.
        """

    def compute(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """:meth:`finalize` of :meth:`state`: the metric per slice (rows without :data:`WEIGHT` weigh 1)."""
        return self.finalize(self.state(with_unit_weights(rows), by), by)

    # --- the metric under many weight vectors at once (bootstrap, randomization tests) ----------

    def values_under(self, frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> np.ndarray:
        """The metric of one slice under each column of a weight matrix: ``R`` values.

        ``frame`` holds the rows of one slice with the columns the metric reads (one row per
        unit, or, for a metric of a coarser unit such as a post, the unit's query rows);
        ``weights`` is a non-negative float matrix of shape ``(frame.height, R)``: column ``r``
        gives every row its weight (for a coarser unit, its rows share the unit's weight). A row
        of weight 0 is absent from that column. Returns a float64 array of ``R`` values, nan
        where the metric is undefined (one class for AUROC, no row with weight, …).

        Equal to the normal path (:meth:`state` then :meth:`finalize` with :data:`WEIGHT` set to
        that column) for positive weights, because it *is* that path: :meth:`finalize` of the
        stacked state (:meth:`replicate_state`), so a set metric has one definition and needs no
        bootstrap code of its own.
        """
        return self.values_from_replicate_state(self.replicate_state(frame, weights))

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> ReplicateState:
        """The :meth:`state` of ``frame`` under every column of ``weights``, stacked with a key
        ``_replicate`` (:func:`evalframe.metrics.stacked.stacked_state`: products over units of
        the per-unit state, never a copy of the rows per replicate); shared by metrics with
        equal :attr:`state_id`."""
        from evalframe.metrics.stacked import stacked_state

        weights = row_weights(frame, weights)
        return ReplicateState(stacked_state(self, frame, weights, weight=WEIGHT, replicate=REPLICATE), weights.shape[1])

    def values_from_replicate_state(self, state: ReplicateState) -> np.ndarray:
        """The ``R`` values of :meth:`replicate_state`'s result (nan where undefined): :meth:`finalize`
        with one slice per replicate."""
        lazy = self.finalize(state.table.lazy(), [REPLICATE])
        return finalized_values(lazy.collect(engine="in-memory"), state.replicates)


def values_under_all(metrics: list[SetMetric], frame: pl.DataFrame, weights: np.ndarray | RowWeights) -> dict[str, np.ndarray]:
    """:meth:`SetMetric.values_under` of several metrics on one slice (:func:`values_under_grouped`)."""
    return values_under_grouped(metrics, frame, [np.arange(frame.height)], weights)[0]


#: Stacked state rows finalized in one Polars batch (bounds memory; a batch is one ``collect_all``).
_BATCH_ROWS = 1 << 22


def values_under_grouped(metrics: list[SetMetric], frame: pl.DataFrame, slices: Sequence[np.ndarray],
                         weights: np.ndarray | RowWeights) -> list[dict[str, np.ndarray]]:
    """:meth:`SetMetric.values_under` of several metrics on several slices of one ``frame``
    (``slices``: each slice's row positions) under one weight matrix of ``frame``'s rows.

    Each state is computed for every slice from one Polars plan
    (:func:`evalframe.metrics.stacked.stacked_states`). A
    :class:`~evalframe.metrics.keyed_sums.KeyedSumsMetric` reads each slice's state in dense form
    with its one function (the reasons of all slices in one plan); the other metrics are finalized
    on the states of many slices stacked (key ``_slice``) in one ``collect_all`` per batch of
    about :data:`_BATCH_ROWS` state rows, so the number of Polars calls does not grow with the
    slices. Each slice's values have the bits it has alone (:func:`values_under_all`).
    """
    from evalframe.metrics.stacked import dense_states, stacked_states

    weights = row_weights(frame, weights)
    replicates = weights.shape[1]
    results: list[dict[str, np.ndarray]] = [{} for _ in slices]
    by_state: dict[object, list[SetMetric]] = {}
    for metric in metrics:
        by_state.setdefault(metric.state_id, []).append(metric)
    for sharing in by_state.values():
        first = sharing[0]
        if first.reads_dense_state:  # one function of the dense state: every slice from one plan
            of_slices: dict[str, list] = {metric.name: [] for metric in sharing}
            for dense in dense_states(first, frame, slices, weights, weight=WEIGHT):
                view = first.view(dense)
                for metric in sharing:
                    of_slices[metric.name].append(metric.slice_values(view))
            for metric in sharing:  # the reasons of every slice at once
                for found, values in zip(results, metric.replicate_values(of_slices[metric.name]), strict=True):
                    found[metric.name] = values
            continue
        if type(first).replicate_state is not SetMetric.replicate_state:  # a faster stacked state of its own
            for found, rows in zip(results, slices, strict=True):
                state = first.replicate_state(frame[rows], weights.take(rows))
                for metric in sharing:
                    found[metric.name] = metric.values_from_replicate_state(state)
            continue
        pending: list[pl.DataFrame] = []
        pending_rows = 0

        def flush(sharing=sharing, pending=pending) -> None:
            stacked = pl.concat(pending, how="vertical_relaxed").lazy()
            plans = [metric.finalize(stacked, [SLICE, REPLICATE]) for metric in sharing]
            for metric, table in zip(sharing, pl.collect_all(plans, engine="in-memory"), strict=True):
                for position, values in finalized_slices(table, replicates):
                    results[position][metric.name] = values
            pending.clear()

        states = stacked_states(first, frame, slices, weights, weight=WEIGHT, replicate=REPLICATE)
        for position, table in enumerate(states):
            pending.append(table.with_columns(pl.lit(position, dtype=pl.Int64).alias(SLICE)))
            pending_rows += table.height
            if pending_rows >= _BATCH_ROWS:
                flush()
                pending_rows = 0
        if pending:
            flush()
    return [{metric.name: found.get(metric.name, np.full(replicates, np.nan)) for metric in metrics} for found in results]


def merge_states(states: list[pl.LazyFrame], by: list[str], state_keys: tuple[str, ...]) -> pl.LazyFrame:
    """The state of the union of disjoint parts: rows with equal keys added column by column."""
    keys = [*by, *state_keys]
    return pl.concat(states, how="vertical_relaxed").group_by(keys).agg(pl.exclude(keys).sum())


def with_unit_weights(rows: pl.LazyFrame) -> pl.LazyFrame:
    """``rows`` with a :data:`WEIGHT` column of 1.0 when it has none."""
    if WEIGHT in rows.collect_schema().names():
        return rows
    return rows.with_columns(pl.lit(1.0, dtype=pl.Float64).alias(WEIGHT))


def weight() -> pl.Expr:
    """The row's unit weight."""
    return pl.col(WEIGHT)


#: Whether the set-metric states being built read rows whose every :data:`WEIGHT` is 1
#: (:func:`all_weights_one`).
_UNIT_WEIGHTS: ContextVar[bool] = ContextVar("evalframe_unit_weights", default=False)


@contextmanager
def all_weights_one(every_weight_is_one: bool = True) -> Iterator[None]:
    """Within the block, the states built (:meth:`SetMetric.state`) are of rows whose every
    :data:`WEIGHT` is 1: the engine says so while it builds the plans of an evaluation without a
    ``weight`` column. A weighted count of rows is then the number of those rows, which the
    states add as a plain count (:func:`~evalframe.metrics.curves.weight_where`): the same
    Float64 as the exact sum of their weights, without its fixed-point units. Read when a plan
    is built (one thread's context), not when it runs."""
    token = _UNIT_WEIGHTS.set(every_weight_is_one)
    try:
        yield
    finally:
        _UNIT_WEIGHTS.reset(token)


def weights_are_one() -> bool:
    """Whether the state being built reads rows whose every weight is 1 (:func:`all_weights_one`)."""
    return _UNIT_WEIGHTS.get()


# --- helpers shared by metric families -----------------------------------------------------


def safe_divide(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """``numerator / denominator``, null where the denominator is 0 (never a made-up value)."""
    return pl.when(denominator != 0).then(numerator / denominator)


def cutoff_suffix(k: int | None) -> str:
    return "" if k is None else f"@{k}"
