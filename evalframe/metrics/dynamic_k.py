"""Dynamic-K extraction metrics (contract §4): the selected K and the extracted set's quality.

A system that picks K per query (dynamic K) extracts a set of sentences; these metrics read
that set as the engine counts it on the queries table (:mod:`evalframe.engine.extraction`):
``n_extracted`` (its size), ``n_extracted_relevant`` (its relevant items), ``selected_k``
(the K the system chose; the set's size when no K is given) and ``n_relevant``.

- ``selected_k``: the query's K, on all queries; the summary's mean, median, p90, min and max
  are contract §4.1's distribution (slice by ``state`` or ``label`` for its breakdowns);
- ``n_extracted``: sentences extracted, summed over a slice (the review workload);
- ``evidence_recall@selected_k`` = ``n_extracted_relevant / n_relevant`` (§4.2);
- ``evidence_precision@selected_k`` = ``n_extracted_relevant / n_extracted``, and 0.0 for an
  empty extraction, as the contract's code says (§4.3).

The two evidence metrics are defined on queries with at least one relevant item (the contract's
has_evidence = 1 subset); others are null with the reason "no relevant item". Their names
keep fixed and dynamic K apart (contract A.3): ``recall@10`` is a cutoff of the ranking,
``evidence_recall@selected_k`` the system's own extracted set, and ``evidence_recall@10`` is
not a metric.

>>> EvidenceRecallAtSelectedK().name
'evidence_recall@selected_k'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import Parameterless, QueryMetric, TargetCategory, safe_divide
from evalframe.metrics.params import param

#: The only "cutoff" of the evidence metrics: the K the system selected.
SELECTED_K = "selected_k"
NO_EXTRACTION = "no extraction (selected_k and extracted_sent_uids are empty)"


class _Extraction(Parameterless, QueryMetric):
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    required_columns: ClassVar = {"queries": ("selected_k", "n_extracted", "n_extracted_relevant")}

    def skip_reason(self) -> pl.Expr:
        return pl.lit(NO_EXTRACTION)


class SelectedK(_Extraction):
    """The number of sentences the system selected for the query (dynamic K).

    ``selected_k`` where the input gives it, else the size of the extracted set; null (with a
    reason) when neither is known. Defined on every query, whatever its label (§4.1).
    """

    name = "selected_k"  # type: ignore[assignment]
    higher_is_better: ClassVar[bool] = False

    def expr(self) -> pl.Expr:
        return pl.coalesce("selected_k", "n_extracted").cast(pl.Float64)


class NumExtracted(_Extraction):
    """Number of sentences extracted for the query; summed over a slice (review workload)."""

    name = "n_extracted"  # type: ignore[assignment]
    summary = "sum"
    higher_is_better: ClassVar[bool] = False

    def expr(self) -> pl.Expr:
        return pl.col("n_extracted").cast(pl.Float64)


@dataclass(frozen=True)
class _ExtractedSetMetric(_Extraction):
    """A metric of the extracted set on queries with at least one relevant item, named
    ``<family>@selected_k``: its only cutoff is the K the system selected (Appendix A.3 keeps it
    apart from the fixed-K ``recall@k``)."""

    k: str = param(SELECTED_K, "always `selected_k`: the K the system chose", choices=(SELECTED_K,))
    family: ClassVar[str]
    subset: ClassVar[str] = "queries with at least one relevant item"
    subset_where: ClassVar[str] = "n_relevant > 0"
    outside_reason: ClassVar[str] = "no relevant item"
    required_columns: ClassVar = {"queries": ("selected_k", "n_extracted", "n_extracted_relevant", "n_relevant")}

    def __post_init__(self) -> None:
        if self.k != SELECTED_K:
            msg = f"`{self.family}` is measured at the K the system selected: write `{self.family}@{SELECTED_K}` (got `@{self.k}`)"
            raise ConfigError(msg)
        super().__post_init__()

    @property
    def name(self) -> str:
        return f"{self.family}@{self.k}"


@dataclass(frozen=True)
class EvidenceRecallAtSelectedK(_ExtractedSetMetric):
    """Fraction of the query's relevant sentences that the system extracted (contract §4.2).

    ``|gold ∩ extracted| / |gold|``; null ("no relevant item") for a query without gold.
    """

    family: ClassVar[str] = "evidence_recall"

    def expr(self) -> pl.Expr:
        return safe_divide(pl.col("n_extracted_relevant").cast(pl.Float64), pl.col("n_relevant"))


@dataclass(frozen=True)
class EvidencePrecisionAtSelectedK(_ExtractedSetMetric):
    """Fraction of the extracted sentences that are relevant (contract §4.3).

    ``|gold ∩ extracted| / |extracted|``, and 0.0 when nothing was extracted (the contract's
    code); computed on queries with at least one relevant item.
    """

    family: ClassVar[str] = "evidence_precision"

    def expr(self) -> pl.Expr:
        extracted = pl.col("n_extracted")
        return pl.when(extracted == 0).then(0.0).otherwise(pl.col("n_extracted_relevant") / extracted)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("selected_k", SelectedK,
                   meaning="Sentences the system chose to extract per query (dynamic K).", kind="score"),
        MetricSpec("n_extracted", NumExtracted,
                   meaning="Sentences extracted, summed over the queries: the reading workload.", kind="count"),
        MetricSpec("evidence_recall", EvidenceRecallAtSelectedK,
                   at="k", at_required=True,
                   meaning="Share of a query's gold evidence sentences that the system extracted.", kind="rate"),
        MetricSpec("evidence_precision", EvidencePrecisionAtSelectedK, at="k", at_required=True,
                   meaning="Share of the extracted sentences that are gold evidence.", kind="rate"),
    ]


SPECS = _specs()
