"""ef.compare (issue 11, parts 2 and 5): values, deltas, tests and corrections against oracles."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import polars as pl
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests

import evalframe as ef
from evalframe.metrics.roc import AUROC
from evalframe.results.data import from_evaluation
from evalframe.stats.compare import stacked_values, values_under


def queries_table(n: int, seed: int, *, shift: float = 0.05) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    base = np.clip(0.5 * label + rng.normal(0.25, 0.2, n), 0, 1).round(2)
    better = np.clip(base + shift * (2 * label - 1) + rng.normal(0, 0.1, n), 0, 1).round(2)
    return pl.DataFrame({
        "system": ["base"] * n + ["new"] * n,
        "query_id": [f"q{i:03d}" for i in range(n)] * 2,
        "fold": [i % 3 for i in range(n)] * 2,
        "label": np.concatenate([label, label]),
        "prob": np.concatenate([base, better]),
    })


def evaluate(queries: pl.DataFrame, metrics=("brier", "auroc")) -> ef.Evaluation:
    empty = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    return ef.evaluate(ef.Tables(queries=queries, judgments=empty), metrics=list(metrics),
                       slices={"overall": [], "fold": ["fold"]})


@pytest.fixture(scope="module")
def evaluation():
    return evaluate(queries_table(120, 0))


def brier_pairs(queries: pl.DataFrame, fold=None):
    rows = queries if fold is None else queries.filter(fold=fold)
    rows = rows.with_columns(b=(pl.col("prob") - pl.col("label")) ** 2).pivot(on="system", index="query_id", values="b")
    return rows.get_column("new").to_numpy(), rows.get_column("base").to_numpy()


def test_per_unit_rows_equal_scipy_and_the_summary(evaluation):
    table = ef.compare(evaluation, baseline="base", tests=("t", "wilcoxon", "randomization"), permutations=2000)
    queries = evaluation.queries
    for fold in (None, 0, 1, 2):
        grouping = "overall" if fold is None else "fold"
        row = table.filter(grouping=grouping, metric="brier").filter(
            pl.col("fold").is_null() if fold is None else pl.col("fold") == fold).row(0, named=True)
        x, y = brier_pairs(queries, fold)
        assert row["n_pairs"] == x.size
        assert row["value"] - row["baseline_value"] == pytest.approx(row["delta"])
        assert row["delta"] == pytest.approx(x.mean() - y.mean())
        assert row["p_t"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)
        assert row["p_wilcoxon"] == pytest.approx(stats.wilcoxon(x, y).pvalue, rel=1e-9)
        assert row["effect_size"] == pytest.approx((x - y).mean() / (x - y).std(ddof=1))
        assert row["higher_is_better"] is False
        assert 0 < row["p_randomization"] <= 1 and row["randomization_exact"] is False
        assert row["test"] == "t" and row["significant"] == (row["p_t_adjusted"] < 0.05)


def test_adjusted_p_values_equal_statsmodels_over_the_family(evaluation):
    for correction, name in (("holm", "holm"), ("bh", "fdr_bh"), ("bonferroni", "bonferroni"), ("by", "fdr_by")):
        table = ef.compare(evaluation, baseline="base", tests=("t",), correction=correction, family="comparison")
        p = table.get_column("p_t").to_numpy()
        present = ~np.isnan(p)
        expected = multipletests(p[present], method=name)[1]
        np.testing.assert_allclose(table.get_column("p_t_adjusted").to_numpy()[present], expected, rtol=1e-12)
    by_grouping = ef.compare(evaluation, baseline="base", tests=("t",), correction="bonferroni", family="grouping")
    overall = by_grouping.filter(grouping="overall", metric="brier").row(0, named=True)
    assert overall["p_t_adjusted"] == pytest.approx(min(1.0, overall["p_t"]))   # the only per-unit test of its family


def test_small_slices_are_enumerated_exactly():
    queries = queries_table(8, 3)
    table = ef.compare(evaluate(queries, ["brier"]), baseline="base", tests=("randomization",))
    row = table.filter(grouping="overall").row(0, named=True)
    x, y = brier_pairs(queries)
    d = x - y
    flips = [abs(np.dot(signs, d)) for signs in itertools.product([1, -1], repeat=d.size)]
    assert row["randomization_exact"] is True
    assert row["p_randomization"] == pytest.approx(np.mean(np.array(flips) >= abs(d.sum()) * (1 - 1e-9)))


def test_unpaired_units_are_an_error_or_dropped_and_counted():
    queries = queries_table(30, 1).filter(~((pl.col("system") == "new") & pl.col("query_id").is_in(["q000", "q001"])))
    ev = evaluate(queries, ["brier"])
    with pytest.raises(ef.InputError, match=r"2 of `base` have no `new` row \(e.g. query_id='q000'"):
        ef.compare(ev, baseline="base")
    table = ef.compare(ev, baseline="base", unpaired="drop")
    row = table.filter(grouping="overall").row(0, named=True)
    assert row["n_pairs"] == 28
    assert "0 query units of `new` and 2 of `base` without a pair dropped" in row["note"]


def test_unknown_baseline_and_options_are_named(evaluation):
    with pytest.raises(ef.InputError, match="unknown baseline `bm25`"):
        ef.compare(evaluation, baseline="bm25")
    with pytest.raises(ef.ConfigError, match="unknown correction `fdr`"):
        ef.compare(evaluation, baseline="base", correction="fdr")
    with pytest.raises(ef.ConfigError, match="unknown tests"):
        ef.compare(evaluation, baseline="base", tests=("mann-whitney",))


@pytest.mark.parametrize(("arguments", "keywords", "named"), [
    ((5,), {}, "`evaluation` must be an Evaluation or a result folder, got int 5"),
    ((None, "base"), {}, "`evaluation`"),
    (("<evaluation>",), {}, "`baseline`: name the system"),
    (("<evaluation>", 5), {}, "`baseline` must be a system name, got 5"),
    (("<evaluation>", "base"), {"alpha": "0.05"}, "`alpha` must be a number"),
    (("<evaluation>", "base"), {"confidence": None}, "`confidence` must be a number"),
    (("<evaluation>", "base"), {"tests": 5}, "`tests` must be a name or a list of names"),
    (("<evaluation>", "base"), {"metrics": [1]}, "`metrics` must be a name or a list of names"),
    (("<evaluation>", "base"), {"family": 3}, "`family` must be a name or a list of names"),
    (("<evaluation>", "base"), {"seed": 1.5}, "`seed` must be a whole number"),
    (("<evaluation>", "base"), {"set_permutations": "10"}, "`set_permutations` must be a whole number"),
])
def test_wrong_argument_types_are_config_errors(evaluation, arguments, keywords, named):
    arguments = tuple(evaluation if a == "<evaluation>" else a for a in arguments)
    with pytest.raises(ef.ConfigError, match=named.replace("(", r"\(")):
        ef.compare(*arguments, **keywords)


def test_set_metric_randomization_through_values_under(evaluation):
    row = ef.compare(evaluation, baseline="base", set_permutations=10_000).filter(grouping="overall", metric="auroc").row(0, named=True)
    assert 0 < row["p_randomization"] <= 1 and "values_under" not in (row["note"] or "")
    assert row["delta"] == pytest.approx(
        roc_auc_score(*_labels_probs(evaluation.queries, "new")) - roc_auc_score(*_labels_probs(evaluation.queries, "base")))


def _labels_probs(queries, system):
    rows = queries.filter(system=system)
    return rows.get_column("label").to_numpy(), rows.get_column("prob").to_numpy()


@dataclass(frozen=True)
class LoopAUROC(AUROC):
    """A stand-in for the vectorised ``values_under`` (Interface A): scikit-learn per weight column."""

    def values_under(self, frame: pl.DataFrame, weights: np.ndarray) -> np.ndarray:
        label, prob = frame.get_column("label").to_numpy(), frame.get_column("prob").to_numpy()
        return np.array([roc_auc_score(label, prob, sample_weight=weights[:, r]) for r in range(weights.shape[1])])


def test_stacked_fallback_equals_the_metric_under_each_weight_vector():
    frame = queries_table(40, 2).with_columns(_weight=pl.lit(1.0))
    weights = np.random.default_rng(0).integers(0, 3, (frame.height, 5)).astype(float)
    expected = LoopAUROC().values_under(frame, weights)
    np.testing.assert_allclose(stacked_values([AUROC()], frame, weights)["auroc"], expected, rtol=1e-12)
    np.testing.assert_allclose(values_under(AUROC(), frame, weights), expected, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:Only one class")
def test_set_metric_randomization_swaps_units_between_systems():
    queries = queries_table(8, 4, shift=0.2)
    ev = evaluate(queries, ["brier", "auroc"])
    plan = ev.plan
    groups = tuple(replace(g, metrics=tuple(LoopAUROC() if m.name == "auroc" else m for m in g.metrics)) for g in plan.groups)
    data = replace(from_evaluation(ev), rows=lambda: (ev.queries, replace(plan, groups=groups)))
    options = {"baseline": "base", "tests": ("randomization",), "groupings": ["overall"]}
    row = ef.compare(data, **options, set_permutations=10_000).filter(metric="auroc").row(0, named=True)
    # reference: every one of the 2^8 swaps, AUROC of each side by scikit-learn
    label_new, prob_new = _labels_probs(queries, "new")
    label_base, prob_base = _labels_probs(queries, "base")
    observed = roc_auc_score(label_new, prob_new) - roc_auc_score(label_base, prob_base)
    deltas = []
    for keep in itertools.product([True, False], repeat=8):
        keep = np.array(keep)
        first = np.where(keep, prob_new, prob_base)
        second = np.where(keep, prob_base, prob_new)
        deltas.append(roc_auc_score(label_new, first) - roc_auc_score(label_new, second))
    assert row["randomization_exact"] is True
    assert row["delta"] == pytest.approx(observed)
    assert row["p_randomization"] == pytest.approx(np.mean(np.abs(deltas) >= abs(observed) * (1 - 1e-9)))
    fallback = ef.compare(ev, **options, set_permutations=256)
    assert fallback.filter(metric="auroc").get_column("p_randomization").item() == pytest.approx(row["p_randomization"])


def test_delta_interval_is_the_percentile_interval_of_paired_replicate_differences(evaluation):
    summary = evaluation.summary.filter(pl.col("grouping") != "across_folds")
    rng = np.random.default_rng(9)
    replicates = summary.select("grouping", "system", "fold", "metric", "unit", "subset").with_columns(
        values=pl.Series([rng.normal(0, 1, 200).tolist() for _ in range(summary.height)])
    )
    data = replace(from_evaluation(evaluation), replicates=replicates)
    row = ef.compare(data, baseline="base", tests=("t",)).filter(grouping="overall", metric="brier").row(0, named=True)
    key = (pl.col("grouping") == "overall") & (pl.col("metric") == "brier")
    new = np.array(replicates.filter(key & (pl.col("system") == "new")).get_column("values").item().to_list())
    base = np.array(replicates.filter(key & (pl.col("system") == "base")).get_column("values").item().to_list())
    assert row["delta_ci_low"] == pytest.approx(np.quantile(new - base, 0.025))
    assert row["delta_ci_high"] == pytest.approx(np.quantile(new - base, 0.975))


def test_same_seed_same_table_whatever_the_row_order():
    queries = queries_table(200, 6)
    first = ef.compare(evaluate(queries, ["brier"]), baseline="base", permutations=3000, seed=2)
    shuffled = queries.sample(fraction=1.0, shuffle=True, seed=1)
    again = ef.compare(evaluate(shuffled, ["brier"]), baseline="base", permutations=3000, seed=2)
    order = ["grouping", "fold"]
    first, again = first.sort(order, nulls_last=True), again.sort(order, nulls_last=True)
    # the signs depend on (seed, unit key, permutation) only: identical p-values; sums of floats
    # in another order may differ in the last bits
    assert first.select("p_randomization", "randomization_exact", "n_pairs").equals(
        again.select("p_randomization", "randomization_exact", "n_pairs"))
    np.testing.assert_allclose(first.get_column("p_t").to_numpy(), again.get_column("p_t").to_numpy(), rtol=1e-9)
    other_seed = ef.compare(evaluate(queries, ["brier"]), baseline="base", permutations=3000, seed=3)
    assert not first.get_column("p_randomization").equals(other_seed.get_column("p_randomization"))


def test_shared_sign_flips_equal_the_slice_by_slice_test():
    from evalframe.stats.paired_tests import shared_sign_flip_pvalues, sign_flip_pvalues
    from evalframe.engine.replicates import unit_hashes

    rng = np.random.default_rng(4)
    hashes = unit_hashes(pl.DataFrame({"unit": [f"u{i}" for i in range(60)]}))
    blocks = []
    for rows in (np.arange(0, 40), np.arange(30, 60), np.arange(55, 60)):  # the last one is enumerated exactly
        matrix = rng.normal(0.1, 1, (rows.size, 3))
        matrix[rng.random(matrix.shape) < 0.1] = np.nan
        blocks.append((rows, matrix))
    shared = shared_sign_flip_pvalues(hashes, blocks, permutations=2000, seed=5)
    for (rows, matrix), (p, exact) in zip(blocks, shared, strict=True):
        alone, alone_exact = sign_flip_pvalues(matrix, hashes[rows], permutations=2000, seed=5)
        np.testing.assert_array_equal(p, alone)
        np.testing.assert_array_equal(exact, alone_exact)


def test_set_metrics_are_tested_on_the_paired_bootstrap_replicates(evaluation):
    summary = evaluation.summary.filter(pl.col("grouping") != "across_folds")
    rng = np.random.default_rng(11)
    replicates = summary.select("grouping", "system", "fold", "metric", "unit", "subset").with_columns(
        values=pl.Series([rng.normal(0.05 if s == "new" else 0.0, 0.05, 99).tolist() for s in summary.get_column("system")])
    )
    data = replace(from_evaluation(evaluation), replicates=replicates)
    row = ef.compare(data, baseline="base").filter(grouping="overall", metric="auroc").row(0, named=True)
    key = (pl.col("grouping") == "overall") & (pl.col("metric") == "auroc")
    new = np.array(replicates.filter(key & (pl.col("system") == "new")).get_column("values").item().to_list())
    base = np.array(replicates.filter(key & (pl.col("system") == "base")).get_column("values").item().to_list())
    d = new - base
    expected = min(1.0, 2 * min(1 + (d <= 0).sum(), 1 + (d >= 0).sum()) / (d.size + 1))
    assert row["test"] == "bootstrap" and row["p_bootstrap"] == pytest.approx(expected)
    assert row["p_randomization"] is None
    without = ef.compare(replace(data, replicates=None), baseline="base").filter(grouping="overall", metric="auroc").row(0, named=True)
    assert without["p_bootstrap"] is None and "no bootstrap replicates" in without["note"]


def test_the_default_family_is_one_metric_on_one_slice_across_systems():
    queries = pl.concat([queries_table(60, 3, shift=0.1), queries_table(60, 3, shift=0.2).filter(pl.col("system") == "new")
                         .with_columns(system=pl.lit("newer"))])
    table = ef.compare(evaluate(queries, ["brier"]), baseline="base", tests=("t",), correction="bonferroni")
    for (_, _, _), rows in table.group_by(["grouping", "fold", "metric"]):
        p = rows.get_column("p_t").to_numpy()
        np.testing.assert_allclose(rows.get_column("p_t_adjusted").to_numpy(), np.minimum(1.0, p * len(p)))


def test_a_helper_threads_progress_stays_hidden(monkeypatch):
    """compare recomputes replicates on a helper thread (quiet_here) beside the main thread's bar:
    only the main thread's bar is drawn on the terminal."""
    import io
    from concurrent.futures import ThreadPoolExecutor

    from evalframe import _progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def draw(label: str) -> None:
        with _progress.Progress(2, label) as progress:
            progress.advance(2)

    def quietly() -> None:
        with _progress.quiet_here():
            draw("helper")

    terminal = Terminal()
    monkeypatch.setattr(_progress, "DELAY", -1.0)  # shown at once, whatever the clock's resolution
    monkeypatch.setattr(_progress, "_QUIET", False)  # an earlier CLI test in this worker may have run with -q
    monkeypatch.setattr("sys.stderr", terminal)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(quietly).result()
    draw("main")
    assert "main [" in terminal.getvalue() and "helper" not in terminal.getvalue()
