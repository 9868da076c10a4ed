"""The ablation table (contract §8.1): arithmetic, order, and agreement with the summary."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.analyses.ablation import ablation_table
from evalframe.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]


def summary(values: dict[tuple[str, str], tuple[float, float]]) -> pl.DataFrame:
    return pl.DataFrame({
        "grouping": "across_folds",
        "system": [system for system, _ in values],
        "metric": [metric for _, metric in values],
        "subset": "all queries",
        "value": [v[0] for v in values.values()],
        "std": [v[1] for v in values.values()],
    })


def test_cells_are_mean_std_and_changes_against_previous_and_first():
    table = ablation_table(summary({
        ("base", "auroc"): (0.80, 0.010), ("mid", "auroc"): (0.85, 0.020), ("full", "auroc"): (0.83, 0.015),
    }), order=["base", "mid", "full"], metrics=["auroc"])
    assert table["system"].to_list() == ["base", "mid", "full"]
    assert table["position"].to_list() == [1, 2, 3]
    assert table["auroc"].to_list() == [0.80, 0.85, 0.83]
    assert table["auroc_std"].to_list() == [0.010, 0.020, 0.015]
    assert table["auroc_vs_previous"].to_list()[0] is None
    assert table["auroc_vs_previous"].to_list()[1:] == pytest.approx([0.05, -0.02])
    assert table["auroc_vs_first"].to_list() == pytest.approx([0.0, 0.05, 0.03])


def test_declared_order_wins_over_the_inputs():
    values = {("a", "mrr"): (0.5, 0.1), ("b", "mrr"): (0.7, 0.1)}
    assert ablation_table(summary(values), order=["b", "a"], metrics=["mrr"])["system"].to_list() == ["b", "a"]
    assert ablation_table(summary(values), order=None, metrics=["mrr"])["system"].to_list() == ["a", "b"]


@pytest.mark.parametrize(("order", "metrics", "message"), [
    (["a", "zzz"], ["mrr"], "systems the input does not have"),
    (["a", "a"], ["mrr"], "twice"),
    (["a"], ["ndcg@10"], "not computed"),
])
def test_bad_declarations_are_config_errors(order, metrics, message):
    with pytest.raises(ConfigError, match=message):
        ablation_table(summary({("a", "mrr"): (0.5, 0.1)}), order=order, metrics=metrics)


def test_needs_across_folds_rows():
    with pytest.raises(ConfigError, match="across_folds"):
        ablation_table(summary({("a", "mrr"): (0.5, 0.1)}).with_columns(grouping=pl.lit("overall")), order=None, metrics=["mrr"])


def test_python_door_reads_the_evaluations_summary():
    tables = ef.read_per_query(REPO_ROOT / "data_samples" / "per_query.csv")
    ev = ef.evaluate(tables, metrics=["auroc", "alert_precision"], slices={"overall": [], "fold": ["fold"]}, across_folds="fold")
    table = ef.ablation(ev, order=["retriever_only", "full_pipeline"], metrics=["auroc", "alert_precision"]).tables["ablation"]
    across = ev.summary.filter(grouping="across_folds")
    for row in table.iter_rows(named=True):
        for metric in ("auroc", "alert_precision"):
            expected = across.filter(system=row["system"], metric=metric)
            assert row[metric] == expected["value"].item() and row[f"{metric}_std"] == expected["std"].item()
    first, second = table.rows(named=True)
    assert second["auroc_vs_first"] == pytest.approx(second["auroc"] - first["auroc"])
