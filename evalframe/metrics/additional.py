"""Latency and diversity metrics of seed 000 §7.

- ``mean_latency``: the sample's time ``latency_<timing_key>`` (seconds), averaged per slice.
- ``p50_latency``, ``p95_latency``, ``p99_latency``: nearest rank, ``sorted[⌈q·n⌉ − 1]`` (seed
  §7.1.2); with weights the weighted inverted CDF: the smallest time whose cumulative weight
  reaches ``q · Σw`` (the same value with unit weights). A set metric whose state is the weight
  at each distinct time, so it merges exactly.
- ``distinct_1``, ``distinct_2``: unique / total n-grams over a slice's responses (token_f1's
  normalisation). The state is each n-gram's weighted count (key ``ngram``), so it merges; under
  weights an n-gram is counted as unique when a row of positive weight holds it.
- ``intra_list_diversity@k``: per sample, ``1 −`` the mean pairwise cosine similarity of the
  top-k retrieved embeddings (``Σ_{i<j} cos = (‖Σ ê_i‖² − m) / 2`` over the m unit vectors),
  computed for all samples at once; samples without two embedded documents are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics import lexical
from evalframe.metrics.base import (
    WEIGHT,
    QueryMetric,
    SetMetric,
    TargetCategory,
)
from evalframe.metrics.params import cutoff, declared, param
from evalframe.metrics.set_values import finalized, per_slice
from evalframe.metrics.generation_overlap import rowwise

NO_TIMING = "no timing"


def timing_key() -> Any:
    """The declaration of ``timing_key`` (which timing: a key of the sample's ``timings``, read
    from the column ``latency_<timing_key>``), for every latency metric."""
    return param("end_to_end", "which timing (a key of `timings`)")


class _Timed:
    """What the latency metrics share: the timing they read (``timing_key``, declared on each
    with :func:`timing_key`), its column ``latency_<timing_key>``, their target and direction."""

    timing_key: str
    target: ClassVar[TargetCategory] = TargetCategory.LATENCY
    higher_is_better: ClassVar[bool] = False
    value_range: ClassVar[tuple[float, float] | None] = (0.0, float("inf"))

    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[misc]  (the metric's declared parameters)
        if not self.timing_key.replace("_", "").isalnum():  # it names a column
            raise ConfigError(f"latency: timing_key must be a timing's name such as end_to_end, got {self.timing_key!r}")

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": (f"latency_{self.timing_key}",)}

    def _timing_suffix(self) -> str:
        return "" if self.timing_key == "end_to_end" else f"(timing_key={self.timing_key})"


@dataclass(frozen=True)
class MeanLatency(_Timed, QueryMetric):
    """Mean time of the samples (seconds, ``timings[timing_key]``)."""

    timing_key: str = timing_key()

    @property
    def name(self) -> str:
        return "mean_latency" + self._timing_suffix()

    def expr(self) -> pl.Expr:
        return pl.col(f"latency_{self.timing_key}").cast(pl.Float64)

    def skip_reason(self) -> pl.Expr:
        return pl.lit(NO_TIMING)


@dataclass(frozen=True)
class QuantileLatency(_Timed, SetMetric):
    """Nearest-rank quantile of the samples' times (seconds): sorted[ceil(q·n) − 1]."""

    #: Set by the metric's name (``p95_latency``).
    quantile: float = param(0.95, "the quantile, in (0, 1]", low=0, high=1, low_open=True)
    timing_key: str = timing_key()
    state_keys: ClassVar[tuple[str, ...]] = ("latency",)
    subset: ClassVar[str] = "samples with a timing"

    @property
    def name(self) -> str:
        return f"p{self.quantile * 100:g}_latency" + self._timing_suffix()

    @property
    def state_id(self) -> object:
        return ("latency_weights", self.timing_key)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        # Rows without a timing keep their slice in the state (key latency null, n 0), so a
        # slice with no timed sample gets a row and its reason rather than no row at all.
        timed = rows.with_columns(latency=pl.col(f"latency_{self.timing_key}").cast(pl.Float64))
        has_time = pl.col("latency").is_not_null()
        return timed.group_by(*by, "latency").agg(
            n=has_time.sum().cast(pl.Int64), weight=pl.when(has_time).then(pl.col(WEIGHT)).otherwise(0.0).sum())

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        merged = state.group_by(*by, "latency").agg(pl.col("n").sum(), pl.col("weight").sum()).filter(
            (pl.col("weight") > 0) & pl.col("latency").is_not_null())
        over = by or None
        ranked = merged.sort(*by, "latency").with_columns(
            _cum=pl.col("weight").cum_sum().over(over) if over else pl.col("weight").cum_sum(),
            _total=pl.col("weight").sum().over(over) if over else pl.col("weight").sum(),
        )
        reached = ranked.filter(pl.col("_cum") >= self.quantile * pl.col("_total"))
        picked = per_slice(reached, by, {"_value": pl.col("latency").first()})
        counts = per_slice(state, by, {"n": pl.col("n").sum()})
        table = counts.join(picked, on=by, how="left", nulls_equal=True) if by else pl.concat([counts, picked], how="horizontal")
        return finalized(table, by, pl.col("_value"), [(pl.col("n") == 0, "no timed sample in the slice"),
                                                       (pl.col("_value").is_null(), "every timed sample weighs 0")])


@dataclass(frozen=True)
class DistinctN(SetMetric):
    """Unique / total n-grams over a slice's responses (distinct-n)."""

    #: Set by the metric's name (``distinct_2``).
    n: int = param(2, "n-gram size", low=1)
    target: ClassVar[TargetCategory] = TargetCategory.DIVERSITY
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("response",)}
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    state_keys: ClassVar[tuple[str, ...]] = ("ngram",)

    @property
    def name(self) -> str:
        return f"distinct_{self.n}"

    def _grams(self, responses: pl.Series) -> pl.DataFrame:
        return lexical.ngram_keys(lexical.squad_tokens(responses), self.n)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        n = self.n

        def grams(struct: pl.Series) -> pl.Series:
            keys = lexical.ngram_keys(lexical.squad_tokens(struct.struct.field("response")), n)
            lists = keys.group_by(lexical.ROW).agg("ngram", "count")
            frame = pl.DataFrame({lexical.ROW: pl.int_range(struct.len(), eager=True, dtype=pl.UInt32)}).join(
                lists, on=lexical.ROW, how="left", maintain_order="left")
            return frame.select(pl.struct("ngram", "count").alias("_grams")).to_series()

        dtype = pl.Struct({"ngram": pl.List(pl.String), "count": pl.List(pl.Int64)})
        exploded = (
            rows.with_columns(pl.struct("response").map_batches(grams, return_dtype=dtype).alias("_grams"))
            .with_columns(ngram=pl.col("_grams").struct.field("ngram"), _count=pl.col("_grams").struct.field("count"))
            .explode("ngram", "_count")
        )
        grams = exploded.filter(pl.col("ngram").is_not_null()).group_by(*by, "ngram").agg(
            rows=pl.lit(0, dtype=pl.Int64),
            weighted_count=(pl.col("_count") * pl.col(WEIGHT)).sum(),
            weight=pl.col(WEIGHT).sum(),
        )
        # One key-less row per slice counts its responses (the units of n).
        responses = rows.group_by(by).agg(rows=pl.len().cast(pl.Int64)) if by else rows.select(rows=pl.len().cast(pl.Int64))
        responses = responses.with_columns(ngram=pl.lit(None, dtype=pl.String), weighted_count=pl.lit(0.0), weight=pl.lit(0.0))
        return pl.concat([grams, responses.select(*by, "ngram", "rows", "weighted_count", "weight")], how="vertical_relaxed")

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        merged = state.group_by(*by, "ngram").agg(pl.col("rows").sum(), pl.col("weighted_count").sum(), pl.col("weight").sum())
        table = per_slice(merged, by, {
            "n": pl.col("rows").sum(),  # the responses (key-less rows of the state)
            "_unique": (pl.col("ngram").is_not_null() & (pl.col("weight") > 0)).sum().cast(pl.Float64),
            "_total": pl.col("weighted_count").sum(),
        })
        return finalized(table, by, pl.col("_unique") / pl.col("_total"),
                         [(pl.col("_total") == 0, f"no response with a {self.n}-gram in the slice")])


@dataclass(frozen=True)
class IntraListDiversity(QueryMetric):
    """1 − mean pairwise cosine similarity of the top-k retrieved documents' embeddings."""

    k: int = cutoff(5, "top-k retrieved documents", low=2)
    target: ClassVar[TargetCategory] = TargetCategory.DIVERSITY
    required_columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"queries": ("retrieved_embeddings",)}
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 2.0)

    @property
    def name(self) -> str:
        return f"intra_list_diversity@{self.k}"

    def expr(self) -> pl.Expr:
        return rowwise(lambda embeddings: intra_list_diversity(embeddings, self.k), "retrieved_embeddings")

    def skip_reason(self) -> pl.Expr:
        return pl.lit("fewer than two embedded documents in the top k")


def intra_list_diversity(embeddings: pl.Series, k: int) -> np.ndarray:
    """ILD@k of every row of a ``list[list[float]]`` series (nan without two non-zero vectors)."""
    rows = embeddings.len()
    top = embeddings.list.head(k)
    long = pl.DataFrame({"e": top}).with_row_index("row").explode("e").drop_nulls("e")
    out = np.full(rows, np.nan)
    if long.height == 0:
        return out
    dim = int(long.get_column("e").list.len().max())
    vectors = np.vstack(long.get_column("e").to_numpy()) if dim else np.zeros((long.height, 0))
    vectors = np.asarray(vectors, dtype=np.float64).reshape(long.height, dim)
    norms = np.linalg.norm(vectors, axis=1)
    keep = norms > 0
    units = vectors[keep] / norms[keep, None]
    row = long.get_column("row").to_numpy()[keep].astype(np.int64)
    summed = np.zeros((rows, dim))
    np.add.at(summed, row, units)
    m = np.bincount(row, minlength=rows).astype(np.float64)
    pair_sum = ((summed ** 2).sum(axis=1) - m) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = pair_sum / (m * (m - 1) / 2)
    return np.where(m >= 2, 1.0 - mean, np.nan)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "p50_latency": ("Median {timing_key} time, in seconds (half the questions are faster).", "score"),
        "p90_latency": ("90th percentile of the {timing_key} time, in seconds.", "score"),
        "p95_latency": ("95th percentile of the {timing_key} time, in seconds (1 in 20 questions is slower).", "score"),
        "p99_latency": ("99th percentile of the {timing_key} time, in seconds (1 in 100 questions is slower).", "score"),
    }
    quantiles = [
        MetricSpec(f"p{q}_latency", lambda q=q, **kw: QuantileLatency(q / 100, **kw),
                   f"Nearest-rank {q}th percentile of the samples' times (seconds)", declared(QuantileLatency, "timing_key"),
                   meaning=meanings[f"p{q}_latency"][0], kind=meanings[f"p{q}_latency"][1])
        for q in (50, 90, 95, 99)
    ]
    return [
        MetricSpec("mean_latency", MeanLatency,
                   meaning="Mean {timing_key} time per question, in seconds.", kind="score"),
        *quantiles,
        MetricSpec("distinct_1", lambda: DistinctN(1), "Unique / total words over a slice's responses (distinct-1)",
                   meaning="Unique words over all words of the answers: low means repetitive answers.", kind="rate"),
        MetricSpec("distinct_2", lambda: DistinctN(2), "Unique / total word bigrams over a slice's responses (distinct-2)",
                   meaning="Unique word pairs over all word pairs of the answers.", kind="rate"),
        MetricSpec("intra_list_diversity", IntraListDiversity,
                   at="k", aliases=("ild",),
                   meaning="How different the top {k} retrieved documents are from each other (1 − mean cosine).", kind="score"),
    ]


SPECS = _specs()
