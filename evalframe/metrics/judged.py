"""LLM-judged generation metrics of seed 000 §4.4.2 and §5, one value per (sample, system).

- ``llm_faithfulness`` (§4.4.2): the judge reads the question, the answer and the evidence (the
  top-``k`` retrieved texts, ``evidence_source=retrieved``, or the relevant documents' texts,
  ``relevant``; joined as numbered passages) and scores how much of the answer the evidence
  supports; ``scale`` (default ``0-1``) is the range the prompt asks for, normalised to [0, 1].
- ``llm_answer_quality[<dimension>]`` (§5): the judge scores one dimension (relevance,
  helpfulness, clarity or any of your own) of the answer to the question, on ``scale`` (default
  ``1-5``), normalised to [0, 1]. ``llm_answer_quality`` is the mean of its ``dimensions`` (or
  the weighted mean with ``weights``, one per dimension, separated by ``|``); listing it gives
  one row per dimension plus the mean. A sample whose dimensions are not all scored has a null
  mean (the first missing dimension's reason).

The prompt is a template file (``prompt:``; defaults in ``evalframe/semantic/prompts/``, copy
one to change it) whose ``{question}``, ``{answer}``, ``{evidence}`` and ``{dimension}`` are
filled in; its sha256 is part of the cache key, so an edited template never reuses old answers.
The critic is the metric's own (``LLMFaithfulnessScore(critic)``) or the run's (``--judge``,
``ef.run_pipeline(..., judge=critic)``). Every prompt is asked (or, in replay mode, found in the
cache) in :meth:`prepare`, before any value is computed; an answer without a score gives null
with the reason ``judge_parse_failure`` (a failed call: ``judge_call_failure``), counted in
``n_skipped``, never a 0 and never a NaN in a mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics import lexical
from evalframe.metrics.base import Metric, QueryMetric, TargetCategory
from evalframe.metrics.generation_overlap import EvidenceSource, evidence_cutoff, evidence_source
from evalframe.metrics.params import param
from evalframe.metrics.robustness import _patterns as _split
from evalframe.semantic import session
from evalframe.semantic.critic import LLMCritic, Request, Verdict
from evalframe.semantic.judge_cache import sha256_text
from evalframe.semantic.parsing import parse_scale

PROMPTS = Path(__file__).resolve().parent.parent / "semantic" / "prompts"
DEFAULT_DIMENSIONS = "relevance|helpfulness|clarity"
NO_EVIDENCE = "no evidence text"
NO_JUDGE = ("needs an LLM judge: run with `--judge record` (OPENAI_BASE_URL, EVALFRAME_JUDGE_MODEL, and "
            "EVALFRAME_JUDGE_API_KEY or OPENAI_API_KEY where the server needs a key), or pass a critic in Python "
            "(`ef.LLMFaithfulnessScore(critic)`, `ef.run_pipeline(..., judge=critic)`)")


@cache
def _template(path: str) -> tuple[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"prompt template {path}: cannot read it ({error.strerror})") from None
    return text, sha256_text(text)


def fill(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced (other braces, such as a JSON
    example, are left as they are)."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def _scale(default: str) -> Any:
    """The declaration of ``scale`` (the judge metrics differ in its default only)."""
    return param(default, "the range the judge answers in, LOW-HIGH (normalised to [0, 1])")


@dataclass(frozen=True)
class _Judged(QueryMetric):
    """What the judge metrics share: the critic, the template, the scale, asking once."""

    critic: LLMCritic | None = field(default=None, compare=False, repr=False)
    scale: str = _scale("0-1")
    prompt: str | None = param(None, "a prompt template file (default: evalframe/semantic/prompts/)", kind=str)

    base_name: ClassVar[str] = ""
    default_prompt: ClassVar[str] = ""
    default_scale: ClassVar[str] = "0-1"
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        parse_scale(self.scale)
        if self.critic is not None and not isinstance(self.critic, LLMCritic):
            raise ConfigError(f"`{self.base_name}`: critic must be an LLMCritic, got {type(self.critic).__name__}")

    def _params(self) -> list[str]:
        params = [f"scale={self.scale}"] if self.scale != self.default_scale else []
        return params + ([f"prompt={self.prompt}"] if self.prompt is not None else [])

    @property
    def judge(self) -> LLMCritic:
        found = self.critic or session.current().critic
        if found is None:
            raise ConfigError(f"`{self.name}` {NO_JUDGE}")
        return found

    def template(self) -> tuple[str, str]:
        return _template(self.prompt or str(PROMPTS / self.default_prompt))

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(("system", "query_id", *self.required_columns["queries"])))

    def requests(self, frame: pl.DataFrame) -> list[list[Request | None]]:
        """Per row, the requests whose verdicts make its value (None where there is nothing to ask)."""
        raise NotImplementedError

    def combine(self, verdicts: list[Verdict | None], row: int) -> tuple[float | None, str | None]:
        verdict = verdicts[0]
        return (None, NO_EVIDENCE) if verdict is None else (verdict.score, verdict.reason)

    def results(self, frame: pl.DataFrame) -> tuple[np.ndarray, list[str | None]]:
        """Values and skip reasons of every row of ``frame`` (the judge asked once per unique prompt)."""
        per_row = self.requests(frame)
        flat = [request for row in per_row for request in row if request is not None]
        verdicts = iter(self.judge.judge_all(flat, scale=parse_scale(self.scale), label=self.name) if flat else [])
        values, reasons = np.full(frame.height, np.nan), []
        for i, row in enumerate(per_row):
            value, reason = self.combine([next(verdicts) if request is not None else None for request in row], i)
            values[i] = np.nan if value is None else value
            reasons.append(None if value is not None else reason)
        return values, reasons

    def _memo(self, struct: pl.Series) -> tuple[np.ndarray, list[str | None]]:
        fields = tuple(struct.struct.field(name) for name in self.columns)
        frame = pl.DataFrame(list(fields))
        return lexical.memoised((self, id(self.judge)), fields, lambda: self.results(frame))

    def expr(self) -> pl.Expr:
        return pl.struct(*self.columns).map_batches(
            lambda s: pl.Series(self._memo(s)[0], dtype=pl.Float64).fill_nan(None), return_dtype=pl.Float64)

    def skip_reason(self) -> pl.Expr:
        return pl.struct(*self.columns).map_batches(lambda s: pl.Series(self._memo(s)[1], dtype=pl.String), return_dtype=pl.String)

    def prepare(self, tables: Any) -> LLMCritic:
        """Ask the judge every prompt of the queries table now (replay: fail on any miss before
        anything is computed); the values then come from the critic's memory."""
        queries = tables.queries
        self.results(queries.select(self.columns))
        return self.judge


@dataclass(frozen=True)
class LLMFaithfulnessScore(_Judged):
    """LLM-judged support of the answer by the evidence, normalised to [0, 1] (seed §4.4.2)."""

    evidence_source: EvidenceSource = evidence_source()
    k: int | None = evidence_cutoff()

    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_FAITHFULNESS
    subset: ClassVar[str] = "samples with a response"
    subset_where: ClassVar[str | None] = "response IS NOT NULL"
    outside_reason: ClassVar[str] = "no response"
    base_name: ClassVar[str] = "llm_faithfulness"
    default_prompt: ClassVar[str] = "faithfulness.txt"

    @property
    def _evidence(self) -> str:
        return "retrieved_texts" if self.evidence_source == "retrieved" else "relevant_texts"

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": ("query_text", "response", self._evidence)}

    @property
    def name(self) -> str:
        params = [f"evidence_source={self.evidence_source}"] if self.evidence_source != "retrieved" else []
        params += [f"k={self.k}"] if self.k is not None else []
        params += self._params()
        return self.base_name + (f"({','.join(params)})" if params else "")

    def requests(self, frame: pl.DataFrame) -> list[list[Request | None]]:
        template, sha = self.template()
        rows = []
        for system, query_id, question, answer, evidence in frame.select(self.columns).iter_rows():
            texts = [t for t in (evidence or [])[: self.k] if t] if evidence is not None else []
            if answer is None or not texts:
                rows.append([None])
                continue
            passages = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(texts, 1))
            prompt = fill(template, {"question": question or "", "answer": answer, "evidence": passages})
            rows.append([Request(prompt, {"system": system, "sample": query_id, "metric": self.name}, sha)])
        return rows


@dataclass(frozen=True)
class LLMAnswerQuality(_Judged):
    """LLM-judged answer quality: one dimension, as llm_answer_quality[relevance], or the mean of its dimensions (seed §5)."""

    dimension: str | None = param(None, "one dimension (written llm_answer_quality[relevance])", kind=str)
    dimensions: str = param(DEFAULT_DIMENSIONS, "the dimensions averaged, separated by |")
    weights: str | None = param(None, "a weight per dimension, separated by | (default: equal)", kind=str)
    scale: str = _scale("1-5")

    target: ClassVar[TargetCategory] = TargetCategory.GENERATION_RELEVANCE
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("query_text", "response")}
    subset: ClassVar[str] = "samples with a response"
    subset_where: ClassVar[str | None] = "response IS NOT NULL"
    outside_reason: ClassVar[str] = "no response"
    base_name: ClassVar[str] = "llm_answer_quality"
    default_prompt: ClassVar[str] = "answer_quality.txt"
    default_scale: ClassVar[str] = "1-5"

    def __post_init__(self) -> None:
        super().__post_init__()
        names = _split(self.dimensions, "dimensions", self.base_name)
        if self.dimension is not None:
            _split(self.dimension, "dimension", self.base_name)
        if self.weights is not None:
            try:
                weights = [float(w) for w in _split(self.weights, "weights", self.base_name)]
            except ValueError:
                raise ConfigError(f"`{self.base_name}`: weights must be numbers separated by |, got {self.weights!r}") from None
            if len(weights) != len(names) or any(w < 0 for w in weights) or sum(weights) <= 0:
                raise ConfigError(f"`{self.base_name}`: weights need one non-negative number per dimension "
                                  f"({len(names)}: {', '.join(names)}) and a positive sum, got {self.weights!r}")

    @property
    def name(self) -> str:
        if self.dimension is not None:
            params = self._params()
            return f"{self.base_name}[{self.dimension}]" + (f"({','.join(params)})" if params else "")
        params = [f"dimensions={self.dimensions}"] if self.dimensions != DEFAULT_DIMENSIONS else []
        params += [f"weights={self.weights}"] if self.weights is not None else []
        params += self._params()
        return self.base_name + (f"({','.join(params)})" if params else "")

    @property
    def _dimensions(self) -> tuple[str, ...]:
        return (self.dimension,) if self.dimension is not None else _split(self.dimensions, "dimensions", self.base_name)

    def expanded(self) -> list[Metric]:
        """The metric as listed: the mean brings a row per dimension before it."""
        if self.dimension is not None:
            return [self]
        return [LLMAnswerQuality(self.critic, self.scale, self.prompt, dimension=d) for d in self._dimensions] + [self]

    def requests(self, frame: pl.DataFrame) -> list[list[Request | None]]:
        template, sha = self.template()
        rows = []
        for system, query_id, question, answer in frame.select(self.columns).iter_rows():
            if answer is None:
                rows.append([None] * len(self._dimensions))
                continue
            rows.append([Request(fill(template, {"question": question or "", "answer": answer, "dimension": d}),
                                 {"system": system, "sample": query_id, "metric": f"{self.base_name}[{d}]"}, sha)
                         for d in self._dimensions])
        return rows

    def combine(self, verdicts: list[Verdict | None], row: int) -> tuple[float | None, str | None]:
        for verdict in verdicts:
            if verdict is None:
                return None, "no response"
            if verdict.score is None:
                return None, verdict.reason
        weights = np.ones(len(verdicts)) if self.weights is None or self.dimension is not None \
            else np.array([float(w) for w in _split(self.weights, "weights", self.base_name)])
        scores = np.array([verdict.score for verdict in verdicts])
        return float(scores @ weights / weights.sum()), None


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("llm_faithfulness", LLMFaithfulnessScore,
                   meaning="How much of the answer an LLM judge finds supported by the evidence (0 none, 1 all).", kind="score"),
        MetricSpec("llm_answer_quality", LLMAnswerQuality, bracket="dimension",
                   meaning="An LLM judge's rating of the answer (relevance, helpfulness, clarity), 1–5 scaled to [0, 1].",
                   kind="score"),
    ]


SPECS = _specs()


def is_judged(metric: Metric) -> bool:
    """Whether ``metric`` asks an LLM judge (its :meth:`prepare` asks it about every row)."""
    return isinstance(metric, _Judged)


def prepare_metrics(metrics: list[Metric], tables: Any) -> dict[str, Any] | None:
    """Run every metric's :meth:`~evalframe.metrics.base.Metric.prepare`; for the judge metrics,
    the ``judge`` section of run.json: each critic (never its key), and this run's calls, cache
    hits, retries and failures by kind. None when no metric is judged."""
    judged = [metric for metric in metrics if isinstance(metric, _Judged)]
    critics = {id(metric.judge): metric.judge for metric in judged}  # a missing judge is an error here
    before = {key: dict(critic.stats) for key, critic in critics.items()}
    refusals = []  # every judged metric's replay misses in one error, not only the first metric's
    for metric in metrics:
        try:
            metric.prepare(tables)
        except ConfigError as error:
            if not isinstance(metric, _Judged):
                raise
            refusals.append(str(error))
    if refusals:
        raise ConfigError(_without_repeats(refusals))
    if not judged:
        return None
    totals: dict[str, int] = {}
    described = []
    for key, critic in critics.items():
        counts = {name: n - before[key].get(name, 0) for name, n in critic.stats.items() if n - before[key].get(name, 0)}
        for name, n in counts.items():
            totals[name] = totals.get(name, 0) + n
        described.append({**critic.describe(), **_grouped(counts)})
    return {**_grouped(totals), "critics": described, "metrics": [metric.name for metric in judged]}


def _without_repeats(refusals: list[str]) -> str:
    """The replay refusals as one message: a prompt listed under one metric is not listed again
    under another that asks the same (``llm_answer_quality`` reuses its dimensions' prompts)."""
    seen: set[str] = set()
    kept = []
    for refusal in refusals:
        header, *listed = refusal.split("\n")
        new = [line for line in listed if line not in seen]
        seen.update(listed)
        if new or not listed:
            kept.append("\n".join([header, *new]))
    return "\n".join(kept)


def _grouped(counts: Mapping[str, int]) -> dict[str, Any]:
    failures = {name.removeprefix("failures."): n for name, n in sorted(counts.items()) if name.startswith("failures.")}
    return {"calls": counts.get("calls", 0), "hits": counts.get("hits", 0), "retries": counts.get("retries", 0),
            "failures": failures}
