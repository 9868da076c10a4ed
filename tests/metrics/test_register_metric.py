"""Adding a metric without editing evalframe (CONTRIBUTING.md's worked example): a toy set metric
registered at run time, resolved by name, listed by the CLI, interpreted in reports, run with the
bootstrap and with merged parts, each against a plain NumPy reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main
from evalframe.engine.evaluation import finalize, run
from evalframe.engine.partials import compute_partials
from evalframe.engine.plan import Plan, build_groups
from evalframe.engine.replicates import poisson_counts
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, SetMetric, TargetCategory, replicate_frame, row_weights
from evalframe.metrics.interpretation import describe
from evalframe.metrics.registry import MetricSpec, Param, register_metric, resolve, unregister_metric


@dataclass(frozen=True)
class FlaggedPositiveShare(SetMetric):
    """Share of the flagged queries (prob >= cut) that are positive: Σ w·y·f / Σ w·f."""

    cut: float = 0.5
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    higher_is_better: ClassVar[bool] = True
    required_columns: ClassVar = {"queries": ("label", "prob")}

    @property
    def name(self) -> str:  # type: ignore[override]
        return "flagged_positive_share" if self.cut == 0.5 else f"flagged_positive_share(cut={self.cut:g})"

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        flagged = (pl.col("prob") >= self.cut).cast(pl.Float64) * pl.col(WEIGHT)
        return rows.group_by(by).agg(n=pl.len(), flagged=flagged.sum(), hits=(flagged * pl.col("label")).sum())

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        totals = state.group_by(by).agg(pl.col("n").sum().cast(pl.Int64), pl.col("flagged").sum(), pl.col("hits").sum())
        value = pl.when(pl.col("flagged") > 0).then(pl.col("hits") / pl.col("flagged"))
        note = pl.when(pl.col("flagged") == 0).then(pl.lit("no flagged query"))
        return totals.select(*by, "n", value.alias("value"), note.alias("note"))

    def replicate_state(self, frame: pl.DataFrame, weights: np.ndarray):
        matrix = row_weights(frame, weights).dense()
        flagged = (frame.get_column("prob").to_numpy() >= self.cut).astype(np.float64)
        hits = flagged * frame.get_column("label").to_numpy()
        return replicate_frame({"n": (matrix > 0).sum(axis=0), "flagged": flagged @ matrix, "hits": hits @ matrix},
                               matrix.shape[1])


SPEC = MetricSpec("flagged_positive_share", FlaggedPositiveShare, "share of flagged queries that are positive",
                  params=(Param("cut", float, 0.5, doc="flagged when prob >= cut"),),
                  meaning="Of 100 queries flagged at p ≥ {cut}, how many are positive.", kind="rate")


@pytest.fixture
def registered():
    register_metric(SPEC)
    yield
    unregister_metric(SPEC.name)


def _queries(seed: int = 0, n: int = 300) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = (rng.random(n) < 0.3).astype(int)
    prob = np.round(np.clip(0.3 + 0.3 * label + rng.normal(0, 0.2, n), 0, 1), 3)
    return pl.DataFrame({"system": "s", "query_id": [f"q{i}" for i in range(n)], "fold": np.arange(n) % 3,
                         "label": label, "prob": prob})


def _reference(queries: pl.DataFrame, cut: float, weights: np.ndarray | None = None) -> float:
    label, prob = queries.get_column("label").to_numpy(), queries.get_column("prob").to_numpy()
    weights = np.ones(len(label)) if weights is None else weights
    flagged = prob >= cut
    return float((weights * label * flagged).sum() / (weights * flagged).sum())


def test_a_registered_metric_resolves_lists_and_reads_its_meaning(registered, capsys):
    metric = resolve("flagged_positive_share(cut=0.4)")
    assert metric == FlaggedPositiveShare(cut=0.4) and metric.name == "flagged_positive_share(cut=0.4)"
    assert describe(metric).text == "Of 100 queries flagged at p ≥ 0.4, how many are positive." and describe(metric).kind == "rate"
    assert main(["metrics"]) == 0
    assert "flagged_positive_share" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="registered twice"):
        register_metric(SPEC)


def test_unregistered_it_is_unknown_again(registered):
    unregister_metric(SPEC.name)
    with pytest.raises(ConfigError, match="unknown metric"):
        resolve("flagged_positive_share")
    register_metric(SPEC)  # the fixture removes it again


def test_it_runs_with_the_bootstrap_against_a_plain_reference(registered):
    queries = _queries()
    tables = ef.Tables(queries=queries, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String,
                                                                       "relevance": pl.Int64}))
    ev = ef.evaluate(tables, metrics=["flagged_positive_share"], bootstrap=ef.Bootstrap(resamples=200, seed=3))
    row = ev.summary.filter(grouping="overall").row(0, named=True)
    assert row["value"] == pytest.approx(_reference(queries, 0.5), abs=1e-12)
    counts = poisson_counts(queries.select("query_id"), 200, seed=3).astype(float)  # the engine's replicates
    replicate_values = np.array([_reference(queries, 0.5, counts[:, r]) for r in range(200)])
    low, high = np.percentile(replicate_values, [2.5, 97.5])
    assert row["ci_low"] == pytest.approx(low, abs=1e-9) and row["ci_high"] == pytest.approx(high, abs=1e-9)


@pytest.mark.parametrize("n_parts", [1, 2, 5])
def test_parts_evaluated_apart_merge_into_the_whole(registered, n_parts):
    queries = _queries(seed=n_parts)
    tables = ef.Tables(queries=queries, judgments=pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String,
                                                                       "relevance": pl.Int64}))
    plan = Plan(groups=build_groups({"all_queries": ["flagged_positive_share", "flagged_positive_share(cut=0.7)"]}, {}),
                slices={"overall": (), "fold": ("fold",)})
    parts = [ef.Tables(queries=queries[i::n_parts], judgments=tables.judgments) for i in range(n_parts)]
    partials = [compute_partials(part, plan) for part in parts]
    merged = finalize(partials[0].merge(*partials[1:])).summary.sort("grouping", "fold", "metric")
    whole = run(tables, plan).summary.sort("grouping", "fold", "metric")
    assert merged.select("grouping", "fold", "metric", "n", "value").equals(whole.select("grouping", "fold", "metric", "n", "value"))
    overall = whole.filter(grouping="overall", metric="flagged_positive_share(cut=0.7)").item(0, "value")
    assert overall == pytest.approx(_reference(queries, 0.7), abs=1e-12)
