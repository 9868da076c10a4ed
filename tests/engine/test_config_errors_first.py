"""A configuration error comes before any data work of the metric groups, which run two at a time
(``_threads.in_order``): a group whose data fails cannot hide another group's ConfigError."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest

import evalframe as ef
from evalframe.errors import ConfigError
from evalframe.metrics.base import QueryMetric, TargetCategory

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
#: Rows the metric below was asked to compute.
computed: list[int] = []


def _fails(prob: pl.Series) -> pl.Series:
    computed.append(prob.len())
    raise ValueError("a collect error")


@dataclass(frozen=True)
class FailsWhenComputed(QueryMetric):
    """Built fine; computing it (a collect of its group) raises."""

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar = {"queries": ("prob",)}

    @property
    def name(self) -> str:
        return "fails_when_computed"

    def expr(self) -> pl.Expr:
        return pl.col("prob").map_batches(_fails, return_dtype=pl.Float64)


@dataclass(frozen=True)
class Unbuildable(QueryMetric):
    """A metric whose expression cannot be built: a configuration error."""

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar = {"queries": ("prob",)}

    @property
    def name(self) -> str:
        return "unbuildable"

    def expr(self) -> pl.Expr:
        raise ConfigError("`unbuildable`: its threshold must be set")


@dataclass(frozen=True)
class PostWithItsOwnSubset(QueryMetric):
    """A per-post metric that declares its own subset, which only query-unit metrics may."""

    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar = {"queries": ("prob",)}
    unit: ClassVar[str] = "post"
    subset_where: ClassVar[str | None] = "label = 1"

    @property
    def name(self) -> str:
        return "post_mean_prob"

    def expr(self) -> pl.Expr:
        return pl.col("prob").mean()


@pytest.fixture(scope="module")
def tables():
    return ef.read_per_query(SAMPLE)


def test_the_failing_metric_fails_when_computed(tables):
    computed.clear()
    with pytest.raises(Exception, match="a collect error"):
        ef.evaluate(tables, metrics=[FailsWhenComputed()])
    assert computed


@pytest.mark.parametrize(("second", "message"), [
    (Unbuildable(), "its threshold must be set"),
    (PostWithItsOwnSubset(), "`post_mean_prob` of unit `post` declares its own subset"),
])
def test_a_later_groups_config_error_comes_before_an_earlier_groups_data_work(tables, second, message, monkeypatch):
    import evalframe._threads as threads

    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)  # the groups on two threads, whatever the runner has
    computed.clear()
    with pytest.raises(ConfigError, match=message):
        ef.evaluate(tables, metrics={"all_queries": [FailsWhenComputed(), "brier"], "has_evidence": [second]},
                    subsets={"has_evidence": "label = 1"}, units={"post": ["post_id"]})
    assert computed == []  # no group computed anything
