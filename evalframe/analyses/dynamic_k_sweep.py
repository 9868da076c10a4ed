"""The dynamic-K γ sweep (contract §8.2): how K, evidence recall, precision and workload move
with the mass threshold γ of a dynamic-K policy.

**The mass policy.** For a query with ranked scores ``s_1 ≥ s_2 ≥ … ≥ s_n`` (``ranked_scores``,
the ranking's ``score``) the policy keeps the smallest ``k`` whose cumulative score reaches a
share γ of the total::

    K_γ = min { k : Σ_{i≤k} s_i ≥ γ · Σ_{i≤n} s_i },   then clipped to [k_min, k_max]

Scores must be non-negative (a mass); with ``normalize="softmax"`` they are first turned into
``exp(s_i − max s) / Σ_j exp(s_j − max s)`` (any real scores). Sums run in rank order, the
total being the last running sum, so a prefix that reaches γ·total exactly (decimal scores) is
found as in plain sequential arithmetic. A query without ranked items has
``K = k_min`` and extracts nothing. K can exceed the ranking's length after clipping; the query
then extracts its whole ranking.

**What each row reports**, per γ, grouping set (``overall``, ``fold``, …) and system:
``mean_k`` (and ``median_k``, ``p90_k``) over all queries, ``evidence_recall`` and
``evidence_precision`` at that K over the queries with at least one relevant item (``n_with_evidence``;
an empty extraction has precision 0.0), and the workload over all queries:
``sentences_extracted`` (``Σ min(K, n_ranked)``) and ``sentences_per_1000_queries``.

**One implementation.** The sweep counts each γ's top K with the engine's extraction stage
(:func:`~evalframe.engine.extraction.top_k_aggregations`, every γ at once over the ranking's
rows), writes the K and the
counts into the queries table as ``selected_k``, ``n_extracted`` and ``n_extracted_relevant``,
and evaluates the registered metrics ``selected_k``, ``n_extracted``,
``evidence_recall@selected_k`` and ``evidence_precision@selected_k`` with the engine: the very
code that scores a system's own dynamic K. The K of every query and every γ comes from one
group-by over the ranking rows (cumulative sums), never a Python loop over queries. Every γ is
evaluated in one engine pass: γ number ``i``'s copy of the queries table has each system renamed
``<system>\x1f<i>`` (so no unit or slice mixes two γs), and each γ's rows are read back under the
plain names, in the order of γ's own evaluation (the same values: each slice holds the same
units in the same order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import polars as pl

from evalframe.data.units import QUERY_KEYS, SYSTEM
from evalframe.engine.aggregate import order_summary
from evalframe.engine.extraction import EXTRACTION_COLUMNS, top_k_aggregations, with_relevance
from evalframe.engine.ranking import rank_items
from evalframe.errors import NO_VALUE, ConfigError, Problem

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.plan import Plan
    from evalframe.engine.result import Evaluation

DEFAULT_GAMMAS = (0.7, 0.8, 0.9, 0.95)
Normalize = Literal["softmax"] | None
NORMALIZE_CHOICES = (None, "none", "softmax")
#: The engine's metrics the sweep evaluates at each γ.
SWEEP_METRICS = ("selected_k", "n_extracted", "n_queries", "evidence_recall@selected_k", "evidence_precision@selected_k")
#: Columns of the sweep table after ``gamma, grouping, system`` and the slice keys.
SWEEP_COLUMNS = ("n_queries", "mean_k", "median_k", "p90_k", "n_with_evidence", "evidence_recall",
                 "evidence_precision", "sentences_extracted", "sentences_per_1000_queries")


def check_sweep_parameters(gammas: Sequence[float], k_min: int, k_max: int, normalize: str | None) -> list[Problem]:
    """Every problem of the sweep's parameters, as ``dynamic_k_sweep.<key>`` problems."""
    problems = []
    gammas = list(gammas)
    if not gammas:
        problems.append(Problem("dynamic_k_sweep.gammas", None, NO_VALUE, "needs at least one γ"))
    for index, gamma in enumerate(gammas):
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0 < gamma <= 1:
            problems.append(Problem(f"dynamic_k_sweep.gammas[{index}]", None, gamma, "must be a number in (0, 1]"))
    if len(set(gammas)) < len(gammas):
        problems.append(Problem("dynamic_k_sweep.gammas", None, gammas, "lists a γ twice"))
    for key, value in (("k_min", k_min), ("k_max", k_max)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(Problem(f"dynamic_k_sweep.{key}", None, value, "must be a whole number >= 0"))
    if not problems and k_min > k_max:
        problems.append(Problem("dynamic_k_sweep.k_min", None, k_min, f"is above k_max ({k_max})"))
    if normalize not in NORMALIZE_CHOICES:
        problems.append(Problem("dynamic_k_sweep.normalize", None, normalize, "must be `none` or `softmax`"))
    return problems


def sweep_arguments(block: Mapping[str, object]) -> dict[str, object]:
    """The keyword arguments of :func:`dynamic_k_sweep` from a pipeline's ``dynamic_k_sweep:``
    block (its defaults filled in; ``slices`` stays a list of slice names)."""
    normalize = block.get("normalize", "none")
    return {
        "gammas": list(block.get("gammas", DEFAULT_GAMMAS)),
        "k_min": block.get("k_min", 1),
        "k_max": block.get("k_max", 20),
        "normalize": None if normalize == "none" else normalize,
        "slices": block.get("slices"),
    }


def mass_policy_k(
    ranking: pl.DataFrame,
    gammas: Sequence[float],
    *,
    k_min: int,
    k_max: int,
    normalize: Normalize = None,
    in_rank_order: bool = False,
) -> pl.DataFrame:
    """``system, query_id`` and one column ``k_<i>`` per γ (``gammas[i]``): the mass policy's K
    (module docstring) for every query the ranking lists.

    ``ranking`` holds ``system, query_id, score`` and ``rank`` (or only scores, ranked by
    :func:`~evalframe.engine.ranking.rank_items`); ``in_rank_order`` says that each query's
    rows already come together and by rank (exploded ranked lists), which saves a sort. Negative
    scores without ``normalize="softmax"`` are a :class:`~evalframe.errors.ConfigError` naming a query.
    """
    rows = _policy_rows(ranking, normalize=normalize, in_rank_order=in_rank_order)
    names = [f"k_{i}" for i in range(len(gammas))]
    return _policy(rows, gammas, k_min, k_max, names).drop("_query").collect(engine="in-memory")


def _policy_rows(ranking: pl.DataFrame, *, normalize: Normalize, in_rank_order: bool,
                 keep: Sequence[str] = ()) -> pl.LazyFrame:
    """The ranking's rows (query keys, ``rank``, the ``keep`` columns) with ``_query`` (a number
    per query), ``_cumulative`` (the running mass in rank order) and ``_total`` (the query's mass)."""
    if "score" not in ranking.columns:
        msg = "the dynamic-K sweep needs ranked scores (a per_query `ranked_scores` column, or a ranking `score`)"
        raise ConfigError(msg)
    if "rank" not in ranking.columns:
        ranking = rank_items(ranking)
    if normalize in (None, "none"):
        negative = ranking.filter(pl.col("score") < 0)
        if negative.height:
            system, query_id, score = negative.select(SYSTEM, "query_id", "score").row(0)
            msg = (f"dynamic_k_sweep: the mass policy needs non-negative scores, but {negative.height} are negative "
                   f"(e.g. {score!r} for query {query_id!r} of system {system!r}); set `normalize: softmax`")
            raise ConfigError(msg)
        mass = pl.col("score")
    else:
        # exp(s − max s); dividing by the sum (softmax) scales both sides of the rule alike.
        mass = (pl.col("score") - pl.col("score").max().over(QUERY_KEYS)).exp()
    rows = ranking.lazy().select(*QUERY_KEYS, "rank", *keep, _mass=mass)
    if not in_rank_order:
        rows = rows.sort(*QUERY_KEYS, "rank")
    # Each query's rows are now contiguous: number the queries by where their rows start, so the
    # windows and the group-by key on one integer instead of hashing two strings.
    starts = pl.any_horizontal(pl.col(key).ne_missing(pl.col(key).shift()) for key in QUERY_KEYS)
    rows = rows.with_columns(_query=starts.cum_sum())
    # The total is the last running sum, added in the same order: a prefix that equals γ·total
    # in exact arithmetic compares the same way whatever the summation kernel.
    return rows.with_columns(_cumulative=pl.col("_mass").cum_sum().over("_query")).with_columns(
        _total=pl.col("_cumulative").last().over("_query")
    )


def _policy_k(gamma: float, k_min: int, k_max: int) -> pl.Expr:
    """The policy's K of one query at ``gamma``, an aggregation over its :func:`_policy_rows`."""
    # Smallest k with cumulative ≥ γ·total = 1 + the number of prefixes still below it (the
    # prefixes grow), at most the ranking's length (rounding can leave the last one below).
    return pl.min_horizontal((pl.col("_cumulative") < gamma * pl.col("_total")).sum() + 1, pl.len()).cast(
        pl.Int64).clip(k_min, k_max)


def _policy(rows: pl.LazyFrame, gammas: Sequence[float], k_min: int, k_max: int, names: Sequence[str]) -> pl.LazyFrame:
    """``_query``, ``system, query_id`` and each γ's K (named ``names``) from :func:`_policy_rows`."""
    return rows.group_by("_query").agg(*(pl.col(key).first() for key in QUERY_KEYS), *(
        _policy_k(gamma, k_min, k_max).alias(name) for gamma, name in zip(gammas, names, strict=True)))


def dynamic_k_sweep(
    data: Tables | Evaluation,
    *,
    gammas: Sequence[float] = DEFAULT_GAMMAS,
    k_min: int = 1,
    k_max: int = 20,
    normalize: Normalize | Literal["none"] = None,
    slices: Mapping[str, Sequence[str]] | None = None,
    weight: str | None = None,
    relevance_threshold: int | None = None,
) -> pl.DataFrame:
    """The γ sweep table (module docstring): one row per γ, grouping set, system and slice.

    ``data`` is the input tables (``ef.read_per_query(...)``) or an evaluation that holds them
    (its ``inputs``), whose weight, relevance threshold and fold grouping are then the defaults.
    ``slices`` defaults to ``overall`` plus the evaluation's fold grouping (or ``fold`` when the
    queries have that column).
    """
    from evalframe.engine.evaluation import run
    from evalframe.engine.result import Evaluation

    plan = data.plan if isinstance(data, Evaluation) else None
    tables = data.inputs if isinstance(data, Evaluation) else data
    if tables is None or tables.queries is None:
        raise ConfigError("the dynamic-K sweep needs the input tables with their queries table")
    setup = sweep_setup(plan, tables.queries.columns, gammas=gammas, k_min=k_min, k_max=k_max, normalize=normalize,
                        slices=slices, weight=weight, relevance_threshold=relevance_threshold)
    return sweep_table(run(sweep_queries(tables, setup), sweep_plan(setup)).summary, setup)


@dataclass(frozen=True)
class SweepSetup:
    """The sweep's parameters with their defaults resolved (:func:`sweep_setup`)."""

    gammas: tuple[float, ...]
    k_min: int
    k_max: int
    normalize: Normalize | Literal["none"]
    slices: Mapping[str, Sequence[str]]
    weight: str | None
    relevance_threshold: int


def sweep_setup(plan: Plan | None, query_columns: Sequence[str], *, gammas: Sequence[float] = DEFAULT_GAMMAS,
                k_min: int = 1, k_max: int = 20, normalize: Normalize | Literal["none"] = None,
                slices: Mapping[str, Sequence[str]] | None = None, weight: str | None = None,
                relevance_threshold: int | None = None) -> SweepSetup:
    """The parameters of :func:`dynamic_k_sweep` checked, with the defaults of the evaluation's
    ``plan`` (None: none) and of its queries table's columns filled in."""
    problems = check_sweep_parameters(gammas, k_min, k_max, normalize)
    if problems:
        raise ConfigError.of(problems)
    if slices is None:
        slices = {"overall": ()}
        if plan is not None and plan.fold_grouping is not None:
            slices[plan.fold_grouping] = plan.slices[plan.fold_grouping]
        elif "fold" in query_columns:
            slices["fold"] = ("fold",)
    weight = weight if weight is not None or plan is None else plan.weight
    threshold = relevance_threshold if relevance_threshold is not None else (plan.relevance_threshold if plan else 1)
    return SweepSetup(tuple(float(gamma) for gamma in gammas), k_min, k_max, normalize, dict(slices), weight, threshold)


def sweep_plan(setup: SweepSetup) -> Plan:
    """The engine's plan of the sweep's one pass over every γ (:func:`sweep_queries`)."""
    from evalframe.engine.evaluation import make_plan

    return make_plan(list(SWEEP_METRICS), slices=setup.slices, weight=setup.weight,
                     relevance_threshold=setup.relevance_threshold)


def sweep_queries(tables: Tables, setup: SweepSetup) -> Tables:
    """The tables of the sweep's engine pass: every γ's copy of the queries table with its K and
    its top K's counts (module docstring), and no ranking. Each query's rows come from its own
    ranking rows and judgments alone, so the tables of parts holding whole queries (buckets)
    are the parts of the whole's, and the engine's partials of them merge into the whole's."""
    gammas, k_min, slices, weight = list(setup.gammas), setup.k_min, setup.slices, setup.weight
    k_columns = [f"_sweep_k{i}" for i in range(len(gammas))]
    counts = [f"{name}__{column}" for column in k_columns for name in EXTRACTION_COLUMNS]
    # Every γ's K per query, then its top K's counts (the engine's own counting), over the ranking's
    # rows keyed by one integer per query (no string keys hashed).
    rows = _policy_rows(tables.ranking, normalize=setup.normalize, in_rank_order=tables.ranking_rows is None, keep=["doc_id"])
    policy = _policy(rows, gammas, k_min, setup.k_max, k_columns)
    counted = (
        with_relevance(rows.select("_query", "query_id", "doc_id", "rank"), tables.judgments, setup.relevance_threshold)
        .join(policy.select("_query", *k_columns), on="_query", how="inner")
        .group_by("_query")
        .agg(expression.alias(f"{name}__{column}") for column in k_columns
             for name, expression in zip(EXTRACTION_COLUMNS, top_k_aggregations(pl.col(column)), strict=True))
    )
    per_query = policy.join(counted, on="_query", how="inner").drop("_query").collect(engine="in-memory")
    base = tables.queries.drop("selected_k", *EXTRACTION_COLUMNS, strict=False)
    # A query without ranked items has K = k_min and extracts nothing.
    base = base.join(per_query, on=QUERY_KEYS, how="left", maintain_order="left").with_columns(
        pl.col(k_columns).fill_null(k_min), pl.col(counts).fill_null(0))
    # The columns the sweep's evaluation reads: keys, slice keys, the weight, and n_relevant.
    needed = [c for c in dict.fromkeys([*QUERY_KEYS, *(k for keys in slices.values() for k in keys),
                                        *([weight] if weight else []), "n_relevant"]) if c in base.columns]
    copies = []
    for i in range(len(gammas)):
        column = k_columns[i]
        chosen = {column: "selected_k", **{f"{name}__{column}": name for name in EXTRACTION_COLUMNS}}
        copies.append(base.select(*needed, *(pl.col(old).alias(new) for old, new in chosen.items()))
                      .with_columns(pl.col(SYSTEM) + _gamma_suffix(i)))
    # Every γ in one engine pass: γ i's copy of the queries has its systems renamed with
    # _gamma_suffix(i), so units and slices never mix γs. The metrics read only the queries
    # table (the counts are given), so the ranking is not passed.
    return replace(tables, queries=pl.concat(copies), ranking_rows=None, ranked_lists=None)


def sweep_table(summary: pl.DataFrame, setup: SweepSetup) -> pl.DataFrame:
    """The sweep table (module docstring) of the summary of the engine's pass over
    :func:`sweep_queries` as :func:`sweep_plan` says."""
    slices = setup.slices
    slice_keys = [k for keys in slices.values() for k in keys]
    rows = []
    for i, gamma in enumerate(setup.gammas):
        suffix = _gamma_suffix(i)
        of_gamma = summary.filter(pl.col(SYSTEM).str.ends_with(suffix)).with_columns(
            pl.col(SYSTEM).str.strip_suffix(suffix))
        # The order of γ's own evaluation (natural order of the plain system names).
        of_gamma = order_summary(of_gamma, list(SWEEP_METRICS), slices, list(dict.fromkeys(slice_keys)))
        rows.append(_sweep_rows(of_gamma, gamma, slice_keys))
    return pl.concat(rows, how="vertical_relaxed")


def _gamma_suffix(i: int) -> str:
    """What the sweep appends to every system name of γ number ``i`` (a unit separator, then ``i``)."""
    return f"\x1f{i}"


def _sweep_rows(summary: pl.DataFrame, gamma: float, slice_keys: Sequence[str]) -> pl.DataFrame:
    """One γ's sweep rows from its evaluation summary (one row per grouping, system, slice)."""
    keys = ["grouping", SYSTEM, *dict.fromkeys(slice_keys)]
    summary = summary.filter(pl.col("grouping") != "across_folds")

    def stat(metric: str, column: str, alias: str) -> pl.DataFrame:
        return summary.filter(pl.col("metric") == metric).select(*keys, pl.col(column).alias(alias))

    parts = [
        stat("n_queries", "value", "n_queries"),
        stat("selected_k", "value", "mean_k"),
        stat("selected_k", "median", "median_k"),
        stat("selected_k", "p90", "p90_k"),
        stat("evidence_recall@selected_k", "n", "n_with_evidence"),
        stat("evidence_recall@selected_k", "value", "evidence_recall"),
        stat("evidence_precision@selected_k", "value", "evidence_precision"),
        stat("n_extracted", "value", "sentences_extracted"),
    ]
    table = parts[0]
    for part in parts[1:]:
        table = table.join(part, on=keys, how="left", nulls_equal=True, maintain_order="left")
    per_1000 = pl.when(pl.col("n_queries") > 0).then(pl.col("sentences_extracted") / pl.col("n_queries") * 1000)
    # Counts are whole numbers unless the units are weighted.
    counts = [
        pl.col(name).cast(pl.Int64) for name in ("n_queries", "sentences_extracted")
        if table.select((pl.col(name) == pl.col(name).round(0)).all()).item()
    ]
    return table.with_columns(sentences_per_1000_queries=per_1000).with_columns(counts).select(
        pl.lit(gamma).alias("gamma"), *keys, *SWEEP_COLUMNS
    )
