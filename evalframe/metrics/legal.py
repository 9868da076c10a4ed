"""The legal passage-retrieval metrics of ``score.py`` (seed 003) and LegalBench-RAG's character spans.

The legal files (:mod:`evalframe.io.legal`) give, per gold test, the system's ranked passages
(the ``ranking`` table, with ``text``) and the gold answers (the ``judgments`` table, one row
per answer, relevance 1, with ``text``), read under the *text relevance rule*
(:mod:`evalframe.engine.matching`): a passage matches a gold answer when, after
``strip().lower()``, either contains the other; an empty passage matches nothing. The queries
table carries ``top_passage`` (the first passage, null when none) and ``gold_answers``.

score.py's definitions differ from the engine's standard ``recall@k`` and ``ndcg@k``, so they
are their own metrics, all prefixed ``legal_``:

``legal_exact_match``
    1 when the top passage equals a gold answer after ``strip().lower()``, else 0 (0 when
    nothing was retrieved).
``legal_span_f1``
    Token F1 between the top passage and each gold answer over token *sets*
    (:func:`evalframe.data.text.word_tokens`): ``P = |p ∩ g| / |p|``, ``R = |p ∩ g| / |g|``,
    ``F1 = 2PR / (P + R)``, 0 when either set is empty or they share nothing; the maximum over
    the gold answers; 0 when nothing was retrieved.
``legal_recall@k``
    The fraction of the test's gold answers matched by some passage in the top k (not the
    fraction of relevant passages: several passages matching one answer count it once).
``legal_ndcg@k``
    ``DCG@k = Σ_{i<=k} rel_i / log2(i + 1)`` with ``rel_i = 1`` when passage i matches any
    gold answer; ``IDCG@k = Σ_{i <= min(#gold answers, k)} 1 / log2(i + 1)``. Several passages
    matching one answer can push it above 1: score.py computes it so and published numbers use
    it, so it is kept (never clipped) and the summary's note counts the queries above 1.
    ``legal_ndcg@k(dedupe=true)`` credits each gold answer at most once: ``rel_i = 1`` only when
    passage i is the first, in rank order, to match some gold answer; it stays in [0, 1].

Character spans (LegalBench-RAG), when the ranked passages carry ``file_path`` and ``span``:

``span_precision@k``, ``span_recall@k``
    Let R be the union of the character spans of the top-k passages and G the union of the
    gold answers' spans (same file). ``span_precision@k = |R ∩ G| / |R|`` and
    ``span_recall@k = |R ∩ G| / |G|``: overlaps are merged, no character counts twice.
    Precision is null (skipped) when the top k cover no character; both are null when the
    query's passages carry no span at all (string predictions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evalframe.data.text import normalise_series, tokenise_series
from evalframe.metrics.base import SPANS_GIVEN, ItemMetric, Parameterless, QueryMetric, TargetCategory, safe_divide, span_columns
from evalframe.metrics.params import cutoff, param

#: The queries-table columns of the legal reader that the query-level metrics read.
TOP_PASSAGE = "top_passage"
GOLD_ANSWERS = "gold_answers"


def _per_answer(batch: pl.Series) -> pl.DataFrame:
    """One row per (query row, gold answer) of a struct batch of ``top_passage, gold_answers``."""
    return (
        batch.struct.unnest()
        .with_row_index("_row")
        .explode(GOLD_ANSWERS)
        .rename({GOLD_ANSWERS: "_gold"})
    )


def _best_per_row(long: pl.DataFrame, score: pl.Expr, height: int) -> pl.Series:
    best = long.group_by("_row").agg(_best=score.max())
    rows = pl.DataFrame({"_row": pl.int_range(height, dtype=pl.UInt32, eager=True)})
    return rows.join(best, on="_row", how="left").get_column("_best").fill_null(0.0).cast(pl.Float64)


def exact_match_batch(batch: pl.Series) -> pl.Series:
    """``legal_exact_match`` of each row of a ``top_passage, gold_answers`` struct batch."""
    long = _per_answer(batch)
    long = long.with_columns(_top=normalise_series(long.get_column(TOP_PASSAGE)), _gold=normalise_series(long.get_column("_gold")))
    equal = (pl.col("_top") == pl.col("_gold")).fill_null(False).cast(pl.Float64)
    return _best_per_row(long, equal, batch.len())


def span_f1_batch(batch: pl.Series) -> pl.Series:
    """``legal_span_f1`` of each row of a ``top_passage, gold_answers`` struct batch."""
    long = _per_answer(batch)
    long = long.with_columns(
        _top=tokenise_series(long.get_column(TOP_PASSAGE)).list.unique(),
        _gold=tokenise_series(long.get_column("_gold")).list.unique(),
    )
    common = pl.col("_top").list.set_intersection("_gold").list.len().cast(pl.Float64)
    precision = common / pl.col("_top").list.len()
    recall = common / pl.col("_gold").list.len()
    f1 = pl.when(common > 0).then(2 * precision * recall / (precision + recall)).otherwise(0.0)
    return _best_per_row(long, f1.fill_null(0.0), batch.len())


class _TopPassageMetric(Parameterless, QueryMetric):
    """A query-level metric of the top passage against the gold answers (a batch function)."""

    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    required_columns = {"queries": (TOP_PASSAGE, GOLD_ANSWERS)}
    batch_function: ClassVar = None

    def expr(self) -> pl.Expr:
        return pl.struct(TOP_PASSAGE, GOLD_ANSWERS).map_batches(type(self).batch_function, return_dtype=pl.Float64)


class LegalExactMatch(_TopPassageMetric):
    """1 when the top passage equals a gold answer after strip().lower() (score.py exact_match)."""

    name = "legal_exact_match"  # type: ignore[assignment]
    batch_function = staticmethod(exact_match_batch)


class LegalSpanF1(_TopPassageMetric):
    """Best token-set F1 of the top passage against a gold answer (score.py span_f1)."""

    name = "legal_span_f1"  # type: ignore[assignment]
    batch_function = staticmethod(span_f1_batch)


def _within(k: int) -> pl.Expr:
    return pl.col("rank") <= k


class _GoldTestMetric(ItemMetric):
    """Defined on every gold test (the reader requires at least one gold answer per test); a query
    without judgments would give a null value with the reason ``undefined (zero denominator)``."""

    subset: ClassVar[str] = "all queries"
    subset_where: ClassVar[str | None] = None


@dataclass(frozen=True)
class LegalRecallAtK(_GoldTestMetric):
    """Fraction of the gold answers matched by a passage in the top k (score.py recall@k)."""

    k: int = cutoff()
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    item_columns: ClassVar[tuple[str, ...]] = ("first_matches",)

    @property
    def name(self) -> str:
        return f"legal_recall@{self.k}"

    def partials(self) -> dict[str, pl.Expr]:
        return {f"answers_found@{self.k}": pl.when(_within(self.k)).then(pl.col("first_matches")).sum()}

    def value(self) -> pl.Expr:
        return safe_divide(pl.col(f"answers_found@{self.k}").cast(pl.Float64), pl.col("n_relevant"))


@dataclass(frozen=True)
class LegalNDCGAtK(_GoldTestMetric):
    """score.py's nDCG@k: IDCG over min(#gold answers, k); not clipped (dedupe=true: each answer credited once)."""

    k: int = cutoff()
    dedupe: bool = param(False, "credit each gold answer at most once")
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_ACCURACY
    item_columns: ClassVar[tuple[str, ...]] = ("first_matches",)

    @property
    def name(self) -> str:
        return f"legal_ndcg@{self.k}" + ("(dedupe=true)" if self.dedupe else "")

    def _dcg_name(self) -> str:
        return f"legal_dcg@{self.k}" + ("[dedupe]" if self.dedupe else "")

    def partials(self) -> dict[str, pl.Expr]:
        credited = pl.col("first_matches") > 0 if self.dedupe else pl.col("is_relevant")
        discounted = credited.cast(pl.Float64) / (pl.col("rank") + 1).log(2)
        return {self._dcg_name(): pl.when(_within(self.k)).then(discounted).sum()}

    def ideal_partials(self) -> dict[str, pl.Expr]:
        # The ideal ranking is the gold answers themselves, one relevant row each: min(#answers, k) terms.
        discounted = pl.col("is_relevant").cast(pl.Float64) / (pl.col("rank") + 1).log(2)
        return {f"legal_idcg@{self.k}": pl.when(_within(self.k)).then(discounted).sum()}

    def value(self) -> pl.Expr:
        return safe_divide(pl.col(self._dcg_name()), pl.col(f"legal_idcg@{self.k}"))

    def note(self) -> tuple[pl.Expr, str] | None:
        if self.dedupe:
            return None
        return (self.value() > 1.0, "{count} queries above 1 (several passages matching one gold answer, as score.py "
                                   "counts them; `dedupe=true` credits each answer once)")


class _SpanMetric(_GoldTestMetric):
    target: ClassVar[TargetCategory] = TargetCategory.RETRIEVAL_RELEVANCE
    k: int

    @property
    def item_columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return (*span_columns(self.k), "has_span")

    def _names(self) -> tuple[str, str, str]:
        return f"span_chars@{self.k}", f"gold_span_chars@{self.k}", "spanned_items"

    def partials(self) -> dict[str, pl.Expr]:
        chars, gold, spanned = self._names()
        added, inside = span_columns(self.k)
        return {chars: pl.col(added).sum(), gold: pl.col(inside).sum(), spanned: pl.col("has_span").sum()}

    def ideal_partials(self) -> dict[str, pl.Expr]:
        return {"gold_chars": pl.when(pl.col("is_relevant")).then(pl.col("gold_new_chars")).sum()}

    def _spanless(self) -> pl.Expr:
        """The ranking gives no spans, or this query's retrieved items carry none."""
        return ~pl.col(SPANS_GIVEN) | ((pl.col("n_retrieved") > 0) & (pl.col(self._names()[2]) == 0))

    def skip_reason(self) -> pl.Expr:
        return pl.when(self._spanless()).then(pl.lit("retrieved items carry no span")).otherwise(
            pl.lit("undefined (zero denominator)"))


@dataclass(frozen=True)
class SpanPrecisionAtK(_SpanMetric):
    """Characters of the top-k spans inside gold spans, over the characters the top-k spans cover."""

    k: int = cutoff()

    @property
    def name(self) -> str:
        return f"span_precision@{self.k}"

    def value(self) -> pl.Expr:
        chars, gold, _ = self._names()
        return pl.when(~self._spanless()).then(safe_divide(pl.col(gold).cast(pl.Float64), pl.col(chars)))


@dataclass(frozen=True)
class SpanRecallAtK(_SpanMetric):
    """Characters of the gold spans covered by the top-k spans, over the gold characters."""

    k: int = cutoff()

    @property
    def name(self) -> str:
        return f"span_recall@{self.k}"

    def value(self) -> pl.Expr:
        _, gold, _ = self._names()
        return pl.when(~self._spanless()).then(safe_divide(pl.col(gold).cast(pl.Float64), pl.col("gold_chars")))


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("legal_exact_match", LegalExactMatch,
                   meaning="Share of questions whose answer text matches the gold answer exactly.", kind="rate"),
        MetricSpec("legal_span_f1", LegalSpanF1,
                   meaning="Word overlap (F1) between the answer span and the gold span.", kind="score"),
        MetricSpec("legal_recall", LegalRecallAtK, at="k", at_required=True,
                   meaning="Share of a question's gold passages found in the top {k}.", kind="rate"),
        MetricSpec("legal_ndcg", LegalNDCGAtK, at="k", at_required=True,
                   meaning="Quality of the top {k} order of passages against the ideal one (1 = gold first).", kind="score"),
        MetricSpec("span_precision", SpanPrecisionAtK, at="k",
                   at_required=True,
                   meaning="Share of the text of the top {k} passages that lies inside gold spans.", kind="rate"),
        MetricSpec("span_recall", SpanRecallAtK, at="k", at_required=True,
                   meaning="Share of the gold spans' text covered by the top {k} passages.", kind="rate"),
    ]


SPECS = _specs()
