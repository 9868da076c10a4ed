"""The metric abstraction (DESIGN §3): one description, three levels.

Every metric declares its canonical ``name`` (``recall@5``), the ``target`` category it
measures (the taxonomy of seed 000 §2.1), its ``level`` and the columns it needs:

- **item** level (:class:`ItemMetric`): computed from a query's ranked items. ``partials()``
  gives named aggregations over one query's rows of the ranking table (``hits@5``); the
  evaluator runs them all in one group-by, sharing partials between metrics ("count first").
  ``ideal_partials()`` are aggregations of the same kind over the query's ideal ranking (its
  judged items, best grade first), e.g. the ideal DCG. ``value()`` then combines partials with
  per-query context (``n_relevant``, ``n_retrieved``) into one value per query: "count first,
  divide once".
- **query** level (:class:`QueryMetric`): a row-wise expression on the ``queries`` table.
- **set** level (:class:`SetMetric`): an aggregation over the queries of a slice (AUROC, ECE)
  that has no per-query value.

Undefined values follow one policy everywhere: ``null`` with a reason that is counted
(``n_skipped``), never a made-up 0; callers may ask for 0 instead (``empty="zero"``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar, Literal

import polars as pl


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


class Metric(ABC):
    """Common description of every metric."""

    target: ClassVar[TargetCategory]
    level: ClassVar[Level]
    #: Columns the metric reads, by table (``{"ranking": ("rank",), "judgments": ("relevance",)}``).
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: Which queries the metric is defined on, in words (reports print it).
    subset: ClassVar[str] = "all queries"
    #: How a slice summarises per-query values: their mean, or their sum for counts.
    summary: ClassVar[Summary] = "mean"
    higher_is_better: ClassVar[bool] = True

    @property
    @abstractmethod
    def name(self) -> str:
        """Canonical printed name, e.g. ``ndcg@10``; parsing it gives back an equal metric."""

    def __str__(self) -> str:
        return self.name


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

    #: Whether the partials read unjudged items (rows whose ``relevance`` is null). When no
    #: metric of an evaluation does, the evaluator feeds them the judged items only, which on a
    #: run of millions of rows is most of the saving. A metric whose value would change if the
    #: unjudged rows were left out (say, one counting items above the first relevant one) must
    #: say True; so must a subclass whose partials read more than its parent's.
    reads_unjudged_items: ClassVar[bool] = True

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

    #: Whether a query without any relevant item is outside the metric's subset.
    needs_relevant: ClassVar[bool] = True


class QueryMetric(Metric):
    """A row-wise metric on the ``queries`` table (DESIGN §3, query level)."""

    level = Level.QUERY

    @abstractmethod
    def expr(self) -> pl.Expr:
        """Per-query value; null where undefined."""

    def skip_reason(self) -> pl.Expr:
        """Why the value is null where it is; override for a more precise reason."""
        return pl.lit("undefined")


class SetMetric(Metric):
    """A metric of a whole slice of queries with no per-query value (DESIGN §3, set level)."""

    level = Level.SET

    @abstractmethod
    def compute(self, queries: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """One row per group of ``by`` with columns ``by``, ``n``, ``value`` and ``note``.

        ``note`` says why ``value`` is null where it is (e.g. "only one class in the slice").
        """


# --- helpers shared by metric families -----------------------------------------------------


def safe_divide(numerator: pl.Expr, denominator: pl.Expr) -> pl.Expr:
    """``numerator / denominator``, null where the denominator is 0 (never a made-up value)."""
    return pl.when(denominator != 0).then(numerator / denominator)


def cutoff_suffix(k: int | None) -> str:
    return "" if k is None else f"@{k}"
