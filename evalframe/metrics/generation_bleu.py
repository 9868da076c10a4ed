"""BLEU (seed 000 §4.2.2): corpus BLEU as a mergeable set metric, sentence BLEU per sample.

Both equal sacrebleu: ``bleu`` is ``sacrebleu.corpus_bleu(responses, [references]).score`` over
a slice's samples (0–100, the ``13a`` tokenizer, ``max_order`` 4, ``smooth_method`` exp by
default), ``sentence_bleu`` is ``sacrebleu.sentence_bleu(response, [reference]).score`` (effective
order, as sacrebleu's sentence BLEU).

**State.** BLEU is a function of sums over segments (Papineni et al. 2002): per order ``n``
the clipped n-gram matches ``correct_n = Σ_g min(count_hyp(g), count_ref(g))`` and the
hypothesis n-grams ``total_n``, and the lengths ``sys_len``, ``ref_len``. The state of a slice is
their (weighted) sums, so corpus BLEU merges across parts exactly, slices by any key and gets
bootstrap CIs (the generic stacked state: per-segment counts times the replicate weights). Then
(sacrebleu's ``compute_bleu``)::

    BP = 1 if sys_len >= ref_len else exp(1 − ref_len / sys_len)   (0 when sys_len = 0)
    p_n = 100 · correct_n / total_n;  with correct_n = 0: exp → 100 / (2^j · total_n) (j-th such
    order), floor → 100 · smooth_value / total_n, none → 0;  add-k adds smooth_value to both
    counts of orders n > 1; orders from the first with total_n = 0 on are left out
    BLEU = BP · exp(Σ_{n <= N} log p_n / N)   (log 0 = −9999999999; 0 when no n-gram matches)

with ``N = max_order`` (or, with effective order, the last order with a non-zero total).
Samples without a reference are left out of the corpus (outside the subset, counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np
import polars as pl

from evalframe.metrics import lexical
from evalframe.metrics.base import (
    WEIGHT,
    QueryMetric,
    SetMetric,
    TargetCategory,
)
from evalframe.metrics.set_values import finalized, per_slice
from evalframe.metrics.generation_overlap import rowwise
from evalframe.metrics.params import param

SmoothMethod = Literal["exp", "floor", "add-k", "none"]
SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
NO_SEGMENT = "no sample with a reference answer in the slice"


def segment_counts(reference: pl.Series, response: pl.Series, max_order: int) -> np.ndarray:
    """Per segment: ``sys_len, ref_len, correct_1..N, total_1..N`` (rows × (2 + 2N), float64)."""
    return lexical.memoised(("bleu_counts", max_order), (reference, response),
                            lambda: _segment_counts(reference, response, max_order))


def _segment_counts(reference: pl.Series, response: pl.Series, max_order: int) -> np.ndarray:
    rows = reference.len()
    hyp = lexical.bleu_tokens(response)
    ref = lexical.bleu_tokens(reference)
    columns = [lexical.row_totals(hyp, rows), lexical.row_totals(ref, rows)]
    columns += [lexical.ngram_overlap(hyp, ref, rows, n) for n in range(1, max_order + 1)]
    columns += [lexical.row_totals(hyp, rows, n) for n in range(1, max_order + 1)]
    return np.column_stack(columns).astype(np.float64)


def bleu_from_counts(counts: np.ndarray, *, max_order: int = 4, smooth_method: str = "exp",
                     smooth_value: float | None = None, effective_order: bool = False) -> np.ndarray:
    """sacrebleu's ``compute_bleu`` for every row of summed counts (``sys_len, ref_len,
    correct_1..N, total_1..N``), vectorised over rows (module docstring)."""
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float64))
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS[smooth_method]
    sys_len, ref_len = counts[:, 0], counts[:, 1]
    correct = counts[:, 2:2 + max_order].copy()
    total = counts[:, 2 + max_order:2 + 2 * max_order].copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
        any_match = (correct != 0).any(axis=1)
        smooth_mteval = np.ones(counts.shape[0])
        eff_order = np.full(counts.shape[0], max_order)
        running = np.ones(counts.shape[0], dtype=bool)
        precisions = np.zeros_like(correct)
        for n in range(max_order):
            if smooth_method == "add-k" and n > 0:
                correct[:, n] += smooth_value
                total[:, n] += smooth_value
            running &= total[:, n] != 0
            if effective_order:
                eff_order = np.where(running, n + 1, eff_order)
            zero = correct[:, n] == 0
            if smooth_method == "exp":
                smooth_mteval = np.where(running & zero, smooth_mteval * 2, smooth_mteval)
                smoothed = 100.0 / (smooth_mteval * total[:, n])
            elif smooth_method == "floor":
                smoothed = 100.0 * smooth_value / total[:, n]
            else:
                smoothed = np.zeros(counts.shape[0])
            value = np.where(zero, smoothed, 100.0 * correct[:, n] / total[:, n])
            precisions[:, n] = np.where(running, value, 0.0)
        logs = np.where(precisions == 0.0, -9999999999.0, np.log(np.where(precisions == 0.0, 1.0, precisions)))
        total_log = np.zeros(counts.shape[0])
        for n in range(max_order):  # left to right, as Python's sum over the first eff_order terms
            total_log = np.where(n < eff_order, total_log + logs[:, n], total_log)
        score = bp * np.exp(total_log / eff_order)
    return np.where(any_match, score, 0.0)


def _params_suffix(max_order: int, smooth_method: str, smooth_value: float | None, default_smooth: str) -> str:
    params = [f"max_order={max_order}"] if max_order != 4 else []
    params += [f"smooth_method={smooth_method}"] if smooth_method != default_smooth else []
    params += [f"smooth_value={smooth_value:g}"] if smooth_value is not None else []
    return f"({','.join(params)})" if params else ""


@dataclass(frozen=True)
class _Bleu:
    """sacrebleu's options (its defaults), declared once for corpus and sentence BLEU."""

    max_order: int = param(4, "longest n-gram", low=1)
    smooth_method: SmoothMethod = param("exp", "sacrebleu's smoothing of zero precisions", kind=str,
                                        choices=tuple(SMOOTH_DEFAULTS))
    smooth_value: float | None = param(None, "value of the floor and add-k smoothing (sacrebleu's default when none)")
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("reference", "response")}
    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_CORRECTNESS
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 100.0)
    subset: ClassVar[str] = "samples with a reference answer"


@dataclass(frozen=True)
class CorpusBleu(_Bleu, SetMetric):
    """Corpus BLEU of a slice's responses against their references (sacrebleu.corpus_bleu, 0-100)."""

    @property
    def name(self) -> str:
        return "bleu" + _params_suffix(self.max_order, self.smooth_method, self.smooth_value, "exp")

    @property
    def state_id(self) -> object:
        return ("bleu_counts", self.max_order)

    def _count_names(self) -> list[str]:
        orders = range(1, self.max_order + 1)
        return ["sys_len", "ref_len", *(f"correct_{n}" for n in orders), *(f"total_{n}" for n in orders)]

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        names = self._count_names()
        max_order = self.max_order

        def counts(struct: pl.Series) -> pl.Series:
            table = segment_counts(struct.struct.field("reference"), struct.struct.field("response"), max_order)
            return pl.DataFrame(table, schema=names, orient="row").to_struct("counts")

        dtype = pl.Struct({name: pl.Float64 for name in names})
        used = rows.filter(pl.col("reference").is_not_null())
        with_counts = used.with_columns(pl.struct("reference", "response").map_batches(counts, return_dtype=dtype).alias("_counts"))
        sums = [(pl.col("_counts").struct.field(name) * pl.col(WEIGHT)).sum().alias(name) for name in names]
        # n: segments of positive weight (a segment of weight 0 is absent, as in the bootstrap's path)
        aggregations = [(pl.col(WEIGHT) > 0).sum().cast(pl.Int64).alias("n"), *sums]
        return with_counts.group_by(by).agg(aggregations) if by else with_counts.select(aggregations)

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        names = self._count_names()
        table = per_slice(state, by, {"n": pl.col("n").sum(), **{name: pl.col(name).sum() for name in names}})
        options = {"max_order": self.max_order, "smooth_method": self.smooth_method, "smooth_value": self.smooth_value}
        value = pl.struct(names).map_batches(
            lambda s: pl.Series(bleu_from_counts(s.struct.unnest().to_numpy(), **options), dtype=pl.Float64),
            return_dtype=pl.Float64,
        )
        return finalized(table, by, value, [(pl.col("n") == 0, NO_SEGMENT), (pl.col("sys_len").is_null(), NO_SEGMENT)])


@dataclass(frozen=True)
class SentenceBleu(_Bleu, QueryMetric):
    """Sentence BLEU of the response against its reference (sacrebleu.sentence_bleu, 0-100)."""

    subset_where: ClassVar[str | None] = "reference IS NOT NULL"
    outside_reason: ClassVar[str] = "no reference answer"

    @property
    def name(self) -> str:
        return "sentence_bleu" + _params_suffix(self.max_order, self.smooth_method, self.smooth_value, "exp")

    def expr(self) -> pl.Expr:
        options = {"max_order": self.max_order, "smooth_method": self.smooth_method,
                   "smooth_value": self.smooth_value, "effective_order": True}
        return rowwise(lambda reference, response: bleu_from_counts(segment_counts(reference, response, self.max_order), **options),
                       "reference", "response")


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("bleu", CorpusBleu, aliases=("corpus_bleu",),
                   meaning="Corpus BLEU (0-100) of the answers against the references, as sacrebleu.", kind="score"),
        MetricSpec("sentence_bleu", SentenceBleu,
                   meaning="BLEU (0-100) of each answer against its reference, averaged.", kind="score"),
    ]


SPECS = _specs()
