"""Parameters declared once, on the metric class (evalframe/metrics/params.py): the registry's
specs, parsing, checks, pipelines and the listing all read the one declaration."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import polars as pl
import pytest

import evalframe as ef
from evalframe.cli import main
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, SetMetric, TargetCategory
from evalframe.metrics.params import Param, params_of
from evalframe.metrics.registry import MetricSpec, available, register_metric, resolve, shared_parameters, unregister_metric


@dataclass(frozen=True)
class ShareAbove(SetMetric):
    """Weighted share of positives among the queries with prob >= cut (a toy metric)."""

    cut: float = ef.param(0.5, "counted when prob >= cut", low=0, high=1, shared=True)
    bins: int = ef.param(4, "a whole number, only to be checked", low=1)
    side: str = ef.param("above", "which side of the cut", choices=("above", "below"))
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    required_columns: ClassVar = {"queries": ("label", "prob")}

    @property
    def name(self) -> str:
        return f"share_above(cut={self.cut!r},bins={self.bins},side={self.side})"

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        kept = ((pl.col("prob") >= self.cut) == (self.side == "above")).cast(pl.Float64) * pl.col(WEIGHT)
        return rows.group_by(by).agg(n=pl.len(), kept=kept.sum(), hits=(kept * pl.col("label")).sum())

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        totals = state.group_by(by).agg(pl.col("n").sum().cast(pl.Int64), pl.col("kept").sum(), pl.col("hits").sum())
        return totals.select(*by, "n", (pl.col("hits") / pl.col("kept")).alias("value"), pl.lit(None, pl.String).alias("note"))


@pytest.fixture
def registered():
    spec = register_metric(MetricSpec("share_above", ShareAbove, "share of positives above a cut",
                                      meaning="Share of positives among queries with p ≥ {cut}.", kind="rate"))
    yield spec
    unregister_metric(spec.name)


def test_the_spec_reads_the_class_declaration(registered):
    assert [(p.name, p.kind, p.default, p.shared) for p in registered.params] == [
        ("cut", float, 0.5, True), ("bins", int, 4, False), ("side", str, "above", False)]
    assert registered.shared == ("cut",) and shared_parameters()["cut"] == ["share_above"]
    metric = resolve("share_above(cut=0.25,bins=2,side=below)")
    assert metric == ShareAbove(cut=0.25, bins=2, side="below")
    assert resolve("share_above", defaults={"cut": 1}).cut == 1.0 and isinstance(resolve("share_above", defaults={"cut": 1}).cut, float)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: ShareAbove(cut=1.5), "`share_above(cut=1.5,bins=4,side=above)` needs a cut in [0, 1], got 1.5"),
    (lambda: ShareAbove(cut=True), "needs a cut in [0, 1], got True"),
    (lambda: ShareAbove(bins=2.0), "needs a bins >= 1 (a whole number), got 2.0"),
    (lambda: ShareAbove(bins=0), "needs a bins >= 1 (a whole number), got 0"),
    (lambda: ShareAbove(side="left"), "needs a side one of ['above', 'below'], got 'left'"),
    (lambda: resolve("share_above(cut=nan)"), "needs a cut in [0, 1], got nan"),
    (lambda: resolve("share_above(bins=x)"), "parameter `bins` must be int, got 'x'"),
])
def test_one_check_in_python_and_in_metric_strings(registered, build, message):
    with pytest.raises(ConfigError) as caught:
        build()
    assert message in str(caught.value)


def test_a_pipeline_names_the_key_path_of_a_bad_shared_value(registered, tmp_path, capsys):
    path = tmp_path / "p.yaml"
    path.write_text("version: 1\nname: t\ninput: {path: x.csv, format: per_query}\nparameters: {cut: 2}\n"
                    "metrics:\n  - names: [share_above]\n")
    assert main(["check-pipeline", str(path)]) == 2
    assert "parameters.cut: needs a cut in [0, 1], got 2 (read by `share_above`)" in capsys.readouterr().err


def test_the_listing_shows_the_declared_parameters(registered, capsys):
    assert main(["metrics"]) == 0
    listed = capsys.readouterr().out
    assert "params: cut=0.5, bins=4, side=above {above|below}" in listed


def test_every_bundled_class_declaration_matches_its_field():
    """A spec built from a class lists exactly the class's declared parameters, with the
    dataclass defaults: nothing is declared twice."""
    for spec in available():
        if not isinstance(spec.build, type):
            continue
        declared = params_of(spec.build)
        if declared:
            assert spec.params == declared, spec.name
            fields = {f.name: f for f in dataclasses.fields(spec.build)}
            for param in declared:
                default = fields[param.name].default
                assert param.default == (None if default is dataclasses.MISSING else default), (spec.name, param.name)
                assert param.required == (default is dataclasses.MISSING)


@pytest.mark.parametrize(("param", "good", "bad"), [
    (Param("x", float, 0.5, low=0, high=1, low_open=True), [1, 0.5, 1.0], [0, 0.0, -1, 1.01, float("inf"), "0.5", True]),
    (Param("x", int, 1, low=1), [1, 7], [0, 1.0, True, "2"]),
    (Param("x", str, "a", choices=("a", "b")), ["a", "b"], ["c", None, 1]),
    (Param("x", int, None, low=1), [None, 3], [0]),
])
def test_param_rules(param, good, bad):
    for value in good:
        param.check(value, "`m`")
    for value in bad:
        with pytest.raises(ConfigError, match="`m` needs a x"):
            param.check(value, "`m`")
