"""Lexical generation metrics of seed 000 (§4.1, §4.2.1, §4.4.1), one value per (sample, system).

All read the queries table of a RAG file (:mod:`evalframe.io.rag`): ``response``, ``reference``,
``query_text`` and the evidence lists ``retrieved_texts`` / ``relevant_texts``. Each value comes
from the vectorised kernels of :mod:`evalframe.metrics.lexical`, called once per batch of rows
(``map_batches``), never per row.

- ``answer_exact_match`` (seed ``ExactMatch``; ``exact_match`` is the contract's per-post
  multi-label metric): 1 when the normalised response equals the normalised reference.
- ``token_f1``: SQuAD v1.1's F1 of the normalised tokens: ``common = Σ_t min(count_resp(t),
  count_ref(t))``; 0 when ``common = 0``, else ``2·p·r / (p + r)`` with ``p = common / |resp|``,
  ``r = common / |ref|``.
- ``rouge1_answer``, ``rouge2_answer``, ``rougeL_answer`` (and ``…_query`` with
  ``compare_to=query``, target generation relevance): rouge-score's F-measure
  (``RougeScorer([...], use_stemmer=True).score(reference, response)``), from its tokens.
- ``evidence_overlap_faithfulness``: the share of the response's n-grams (with multiplicity,
  token_f1's normalisation) found in the concatenated evidence (top-k retrieved texts, or the
  relevant documents' texts).

Normalisation options (seed §4.1): ``ignore_case``, ``ignore_punctuation``, ``ignore_articles``,
all on by default (= the official SQuAD v1.1 normalisation). A sample without a reference is
outside the subset of the correctness metrics (null, counted: "no reference answer"); an empty
response scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from evalframe.metrics import lexical
from evalframe.metrics.base import QueryMetric, TargetCategory
from evalframe.metrics.params import cutoff, declared, param


def rowwise(function: Callable[..., np.ndarray], *columns: str, key: object = None) -> pl.Expr:
    """A Float64 expression computed by ``function`` over whole columns (one call per batch).

    ``key`` names what is computed (a metric object), so that two expressions of equal metrics on
    the same columns share one computation (default: the function itself).
    """
    def batch(struct: pl.Series) -> pl.Series:
        fields = [struct.struct.field(name) for name in columns]
        # Memoised: the engine evaluates a value twice in one select (value and skip reason).
        memo_key = (function if key is None else key, columns)
        values = lexical.memoised(memo_key, tuple(fields), lambda: np.asarray(function(*fields), dtype=np.float64))
        return pl.Series(values, dtype=pl.Float64).fill_nan(None)
    return pl.struct(*columns).map_batches(batch, return_dtype=pl.Float64)


@dataclass(frozen=True)
class _Normalised:
    """The three normalisation options of seed 000 §4.1 (all on: SQuAD v1.1)."""

    ignore_case: bool = param(True, "lower-case before comparing")
    ignore_punctuation: bool = param(True, "drop ASCII punctuation")
    ignore_articles: bool = param(True, "drop the words a, an, the")

    def options(self) -> dict[str, bool]:
        return {"ignore_case": self.ignore_case, "ignore_punctuation": self.ignore_punctuation,
                "ignore_articles": self.ignore_articles}

    def _suffix(self) -> str:
        off = [f"{name}=false" for name, on in self.options().items() if not on]
        return f"({','.join(off)})" if off else ""

    def tokens(self, texts: pl.Series) -> pl.DataFrame:
        return lexical.squad_tokens(texts, **self.options())


class _WithReference:
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("reference", "response")}
    subset: ClassVar[str] = "samples with a reference answer"
    subset_where: ClassVar[str | None] = "reference IS NOT NULL"
    outside_reason: ClassVar[str] = "no reference answer"
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)


@dataclass(frozen=True)
class AnswerExactMatch(_WithReference, _Normalised, QueryMetric):
    """1 when the normalised response equals the normalised reference answer, else 0 (SQuAD EM)."""

    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_CORRECTNESS
    is_rate: ClassVar[bool] = True

    @property
    def name(self) -> str:
        return f"answer_exact_match{self._suffix()}"

    def expr(self) -> pl.Expr:
        def values(reference: pl.Series, response: pl.Series) -> np.ndarray:
            normalise = lambda text: lexical.squad_normalise(text, **self.options())  # noqa: E731
            a = lexical.map_distinct(reference, normalise)
            b = lexical.map_distinct(response, normalise)
            return (a == b).cast(pl.Float64).to_numpy()
        return rowwise(values, "reference", "response", key=self)


def f1_from_counts(common: np.ndarray, predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """SQuAD's F1 from counts: 0 without a common token, else ``2pr / (p + r)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = 1.0 * common / predicted
        recall = 1.0 * common / gold
        f1 = (2 * precision * recall) / (precision + recall)
    return np.where(common == 0, 0.0, f1)


def token_f1_values(reference: pl.Series, response: pl.Series, options: Mapping[str, bool] | None = None) -> np.ndarray:
    """SQuAD v1.1 token F1 of every (reference, response) row."""
    options = dict(options or {})
    rows = reference.len()
    gold = lexical.squad_tokens(reference, **options)
    predicted = lexical.squad_tokens(response, **options)
    common = lexical.ngram_overlap(predicted, gold, rows, 1)
    return f1_from_counts(common, lexical.row_totals(predicted, rows), lexical.row_totals(gold, rows))


@dataclass(frozen=True)
class TokenF1(_WithReference, _Normalised, QueryMetric):
    """SQuAD v1.1 token F1 between the response and the reference answer."""

    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_CORRECTNESS

    @property
    def name(self) -> str:
        return f"token_f1{self._suffix()}"

    def expr(self) -> pl.Expr:
        return rowwise(lambda reference, response: token_f1_values(reference, response, self.options()),
                       "reference", "response", key=self)


RougeVariant = Literal["rouge1", "rouge2", "rougeL"]
CompareTo = Literal["reference", "query"]
EvidenceSource = Literal["retrieved", "relevant"]


def compare_to() -> Any:
    """The declaration of ``compare_to`` (what the response is compared with), for the metrics
    that build on :class:`Compared`."""
    return param("reference", "compare the response with the reference or the query", kind=str,
                 choices=("reference", "query"))


def evidence_source() -> Any:
    """The declaration of ``evidence_source`` (which documents are the evidence), with the
    evidence's top-``k``: ``evidence_overlap_faithfulness`` and ``llm_faithfulness``."""
    return param("retrieved", "which documents are the evidence", kind=str, choices=("retrieved", "relevant"))


def evidence_cutoff() -> Any:
    """The declaration of the evidence's ``k`` (top-k retrieved documents; none: all)."""
    return cutoff(None, "top-k retrieved documents (none: all)")


class Compared:
    """A metric of the response against the reference answer or the query (``compare_to``,
    declared on the metric with :func:`compare_to`): the column compared, the target it measures
    (correctness against the reference, relevance against the query) and the subset that follows
    (samples that have that text; the others are outside it, counted)."""

    compare_to: CompareTo

    @property
    def against(self) -> str:
        return "reference" if self.compare_to == "reference" else "query_text"

    @property
    def target(self) -> TargetCategory:  # type: ignore[override]
        return TargetCategory.GENERATION_CORRECTNESS if self.compare_to == "reference" else TargetCategory.GENERATION_RELEVANCE

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": (self.against, "response")}

    @property
    def subset(self) -> str:  # type: ignore[override]
        return "samples with a reference answer" if self.compare_to == "reference" else "samples with a query text"

    @property
    def subset_where(self) -> str:  # type: ignore[override]
        return f"{self.against} IS NOT NULL"

    @property
    def outside_reason(self) -> str:  # type: ignore[override]
        return "no reference answer" if self.compare_to == "reference" else "no query text"


def rouge_fmeasure(target: pl.Series, prediction: pl.Series, variant: str, *, use_stemmer: bool = True) -> np.ndarray:
    """rouge-score's F-measure of ``variant`` for every (target, prediction) row.

    ROUGE-N: ``p = overlap / max(|pred n-grams|, 1)``, ``r = overlap / max(|target n-grams|, 1)``;
    ROUGE-L: ``p = lcs / |pred|``, ``r = lcs / |target|`` (0 when either has no token);
    ``f = 2pr / (p + r)``, 0 when ``p + r = 0`` (rouge-score's ``scoring.fmeasure``).
    """
    rows = target.len()
    gold = lexical.rouge_tokens(target, use_stemmer=use_stemmer)
    predicted = lexical.rouge_tokens(prediction, use_stemmer=use_stemmer)
    if variant == "rougeL":
        common = lexical.lcs_lengths(gold, predicted, rows).astype(np.float64)
        n_pred = lexical.row_totals(predicted, rows).astype(np.float64)
        n_gold = lexical.row_totals(gold, rows).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision, recall = common / n_pred, common / n_gold
        empty = (n_pred == 0) | (n_gold == 0)
        precision, recall = np.where(empty, 0.0, precision), np.where(empty, 0.0, recall)
    else:
        n = int(variant[len("rouge"):])
        common = lexical.ngram_overlap(predicted, gold, rows, n).astype(np.float64)
        precision = common / np.maximum(lexical.row_totals(predicted, rows, n), 1)
        recall = common / np.maximum(lexical.row_totals(gold, rows, n), 1)
    total = precision + recall
    with np.errstate(divide="ignore", invalid="ignore"):
        f = 2 * precision * recall / total
    return np.where(total > 0, f, 0.0)


@dataclass(frozen=True)
class Rouge(Compared, QueryMetric):
    """ROUGE F-measure of the response against the reference (or the query), as rouge-score."""

    variant: RougeVariant = param("rougeL", "ROUGE-1, ROUGE-2 or ROUGE-L", kind=str, choices=("rouge1", "rouge2", "rougeL"))
    use_stemmer: bool = param(True, "Porter-stem tokens longer than 3 characters (rouge-score)")
    compare_to: CompareTo = compare_to()
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    @property
    def name(self) -> str:
        suffix = "" if self.use_stemmer else "(use_stemmer=false)"
        return f"{self.variant}_{'answer' if self.compare_to == 'reference' else 'query'}{suffix}"

    def expr(self) -> pl.Expr:
        return rowwise(lambda target, response: rouge_fmeasure(target, response, self.variant, use_stemmer=self.use_stemmer),
                       self.against, "response", key=self)


NO_NGRAM = "the response has no n-gram, or the evidence no text"


@dataclass(frozen=True)
class EvidenceOverlapFaithfulness(QueryMetric):
    """Share of the response's n-grams found in the evidence (lexical faithfulness, seed §4.4.1).

    ``Σ_g count_resp(g) · [g occurs in E] / Σ_g count_resp(g)`` with ``E`` the concatenation
    (joined by a space) of the top-``k`` retrieved texts (``evidence_source=retrieved``, ``k``
    none: all) or of the relevant documents' texts (``relevant``), both normalised as token_f1.
    A response without n-grams, or evidence without text, is null (its reason counted).
    """

    n: int = param(1, "n-gram size", low=1)
    evidence_source: EvidenceSource = evidence_source()
    k: int | None = evidence_cutoff()
    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_FAITHFULNESS
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    is_rate: ClassVar[bool] = True

    @property
    def _evidence(self) -> str:
        return "retrieved_texts" if self.evidence_source == "retrieved" else "relevant_texts"

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": (self._evidence, "response")}

    @property
    def name(self) -> str:
        params = [f"n={self.n}"] if self.n != 1 else []
        params += [f"evidence_source={self.evidence_source}"] if self.evidence_source != "retrieved" else []
        params += [f"k={self.k}"] if self.k is not None else []
        return "evidence_overlap_faithfulness" + (f"({','.join(params)})" if params else "")

    def expr(self) -> pl.Expr:
        def values(evidence: pl.Series, response: pl.Series) -> np.ndarray:
            rows = response.len()
            lists = evidence if self.k is None else evidence.list.head(self.k)
            joined = lists.list.eval(pl.element().fill_null("")).list.join(" ")
            predicted = lexical.squad_tokens(response)
            evidence_tokens = lexical.squad_tokens(joined)
            found = lexical.ngram_support(predicted, evidence_tokens, rows, self.n).astype(np.float64)
            total = lexical.row_totals(predicted, rows, self.n).astype(np.float64)
            has_evidence = lexical.row_totals(evidence_tokens, rows) > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where((total > 0) & has_evidence, found / total, np.nan)
        return rowwise(values, self._evidence, "response", key=self)

    def skip_reason(self) -> pl.Expr:
        return pl.lit(NO_NGRAM)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "rouge1_answer": ("Shared words between the answer and the reference (ROUGE-1 F).", "score"),
        "rouge1_query": ("Shared words between the answer and the question (ROUGE-1 F): does it address it?", "score"),
        "rouge2_answer": ("Shared word pairs between the answer and the reference (ROUGE-2 F).", "score"),
        "rouge2_query": ("Shared word pairs between the answer and the question (ROUGE-2 F).", "score"),
        "rougeL_answer": ("Longest shared word sequence between the answer and the reference (ROUGE-L F).", "score"),
        "rougeL_query": ("Longest shared word sequence between the answer and the question (ROUGE-L F).", "score"),
    }
    rouge = []
    for variant in ("rouge1", "rouge2", "rougeL"):
        for compare_to, suffix, what in (("reference", "answer", "the reference answer"), ("query", "query", "the query")):
            rouge.append(MetricSpec(
                f"{variant}_{suffix}",
                lambda variant=variant, compare_to=compare_to, **kw: Rouge(variant, compare_to=compare_to, **kw),
                f"{variant.upper().replace('L', '-L')} F-measure of the response against {what} (rouge-score)",
                declared(Rouge, "use_stemmer"),
                meaning=meanings[f"{variant}_{suffix}"][0], kind=meanings[f"{variant}_{suffix}"][1],
            ))
    return [
        MetricSpec("answer_exact_match", AnswerExactMatch,
                   aliases=("em", "squad_em"),
                   meaning="Share of answers equal to the reference after SQuAD normalisation.", kind="rate"),
        MetricSpec("token_f1", TokenF1, aliases=("squad_f1",),
                   meaning="Word overlap (SQuAD F1) between the answer and the reference.", kind="score"),
        *rouge,
        MetricSpec("evidence_overlap_faithfulness", EvidenceOverlapFaithfulness, aliases=("faithfulness",),
                   meaning="Share of the answer's words ({n}-grams) found in the {evidence_source} documents: a lexical proxy for being supported by evidence.", kind="rate"),
    ]


SPECS = _specs()
