"""`evalframe metrics` and ef.list_metrics(): one table read from the registry, with each metric's
range, direction, definition, meaning and declared parameters."""

from __future__ import annotations

import math

import polars as pl

import evalframe as ef
from evalframe.cli import main
from evalframe.metrics.listing import _example, value_range_text
from evalframe.metrics.registry import available, resolve


def test_one_row_per_registered_metric_from_its_spec_and_class():
    table = ef.list_metrics()
    specs = {spec.name: spec for spec in available()}
    assert sorted(table.get_column("name").to_list()) == sorted(specs)
    for row in table.iter_rows(named=True):
        spec = specs[row["name"]]
        assert row["description"] == spec.doc and row["meaning"] == spec.meaning
        assert row["aliases"] == list(spec.aliases)
    recall = table.filter(name="recall").row(0, named=True)
    assert (recall["range"], recall["direction"], recall["kind"], recall["parameters"]) == (
        "[0, 1]", "higher is better", "rate", "k (required)")
    latency = table.filter(name="p95_latency").row(0, named=True)
    assert (latency["range"], latency["direction"], latency["parameters"]) == ("[0, ∞)", "lower is better",
                                                                                  "timing_key=end_to_end")
    bleu = table.filter(name="bleu").row(0, named=True)
    assert bleu["range"] == "[0, 100]"
    assert bleu["parameters"] == "max_order=4, smooth_method=exp {none|floor|add-k|exp}, smooth_value=null"
    exact = table.filter(name="answer_exact_match").row(0, named=True)
    assert exact["parameters"].startswith("ignore_case=true {true|false}, ")


def test_ranges_are_the_metrics_declared_value_ranges():
    for row in ef.list_metrics().filter(pl.col("range").is_not_null()).iter_rows(named=True):
        spec = next(spec for spec in available() if spec.name == row["name"])
        assert row["range"] == value_range_text(_example(spec).value_range)
    assert value_range_text((0.0, 1.0)) == "[0, 1]" and value_range_text((-math.inf, math.inf)) == "(-∞, ∞)"
    assert value_range_text(None) is None


def test_the_command_prints_range_meaning_and_parameters(capsys):
    assert main(["metrics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["legal_ndcg"])
    assert "[0, 1]" in lines[at] and "↑" in lines[at]
    assert lines[at + 1].split()[0] == "means:" and "top {k}" in lines[at + 1]
    assert lines[at + 2].split()[0] == "params:" and "dedupe=false {true|false}" in lines[at + 2]


def test_a_flag_parameter_reads_true_or_false_and_says_so():
    assert resolve("legal_ndcg@5(dedupe=TRUE)") == resolve("legal_ndcg@5(dedupe=true)")
    assert resolve("token_f1(ignore_case=false)").ignore_case is False
    for text, fragment in (("legal_ndcg@5(dedupe=yes)", "must be true or false, got 'yes'"),):
        try:
            resolve(text)
        except ef.ConfigError as error:
            assert fragment in str(error)
        else:
            raise AssertionError(text)
    from evalframe.metrics.generation_overlap import AnswerExactMatch

    assert AnswerExactMatch(ignore_case="false") == AnswerExactMatch(ignore_case=False)
    try:
        AnswerExactMatch(ignore_case=1)
    except ef.ConfigError as error:
        assert "needs a ignore_case (true or false), got 1" in str(error)
    else:
        raise AssertionError("ignore_case=1 was accepted")
