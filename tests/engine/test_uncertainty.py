"""The uncertainty stage (evalframe.engine.uncertainty): cluster bootstrap against a plain-Python
reference, values_under against the normal path, parts, across folds, weights, strata,
determinism, undefined replicates and the pipeline door."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score
from tables_strategy import evidence_tables, restrict

import evalframe as ef
from evalframe.engine.evaluation import finalize, run
from evalframe.engine.partials import compute_partials
from evalframe.engine.plan import Plan, build_groups
from evalframe.errors import ConfigError
from evalframe.metrics.base import WEIGHT, SetMetric, TargetCategory
from evalframe.metrics.registry import resolve
from evalframe.engine.replicates import poisson_counts

SET_METRICS = ["auroc", "auprc", "tpr@fpr=0.3", "tpr@fpr=1.0", "ece", "ece(bins=3)", "tp", "fn", "f1", "mcc",
               "specificity", "balanced_accuracy", "micro_f1", "weighted_f1", "label_macro_f1"]


def _ci(ev: ef.Evaluation, **where) -> dict:
    rows = ev.summary.filter(**where)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def _percentile(values: list[float]) -> tuple[float, float]:
    defined = np.array([v for v in values if not math.isnan(v)])
    return float(np.percentile(defined, 2.5)), float(np.percentile(defined, 97.5))


# --- values_under (Interface A) against the normal path -------------------------------------


@given(tables=evidence_tables(weights="float", min_posts=1), data=st.data())
@settings(max_examples=15)
def test_values_under_equals_the_normal_path(tables, data):
    """A column of weights gives what state()/finalize() give with those weights (positive weights)."""
    rows = tables.queries.filter(pl.col("system") == tables.queries.get_column("system")[0])
    columns = data.draw(st.integers(1, 4))
    weights = np.array(data.draw(st.lists(
        st.lists(st.floats(0.01, 5).map(lambda w: round(w, 2)), min_size=columns, max_size=columns),
        min_size=rows.height, max_size=rows.height)))
    # a post's rows share their weight (a post unit's rule)
    post_code = rows.get_column("post_id").rank("dense").cast(pl.Int64).to_numpy() - 1
    weights = weights[post_code]
    for name in SET_METRICS:
        metric = resolve(name)
        found = metric.values_under(rows, weights)
        for column in range(columns):
            weighted = rows.with_columns(pl.Series(WEIGHT, weights[:, column]))
            expected = metric.compute(weighted.lazy(), by=[]).collect().get_column("value")[0]
            if expected is None:
                assert math.isnan(found[column]), (name, column, found[column])
            else:
                assert found[column] == pytest.approx(expected, rel=1e-9, abs=1e-12), (name, column)


def test_values_under_takes_any_non_negative_weights_and_checks_them():
    frame = pl.DataFrame({"label": [1, 0, 1, 0, None], "prob": [0.9, 0.8, 0.3, 0.1, 0.5]})
    auroc = resolve("auroc")
    # a sign-flip / swap style matrix: 0/1 columns and fractional ones
    weights = np.array([[1, 0, 0.5], [1, 1, 0.5], [0, 0, 2.0], [1, 1, 0.0], [3, 3, 3]], dtype=float)
    values = auroc.values_under(frame, weights)
    assert values[0] == pytest.approx(roc_auc_score([1, 0, 0], [0.9, 0.8, 0.1]))
    assert math.isnan(values[1])  # weights leave one class only
    assert values[2] == pytest.approx(roc_auc_score([1, 0, 1], [0.9, 0.8, 0.3], sample_weight=[0.5, 0.5, 2.0]))
    with pytest.raises(ValueError, match="non-negative"):
        auroc.values_under(frame, -weights)
    with pytest.raises(ValueError, match="shape"):
        auroc.values_under(frame, weights[:3])


def test_every_registered_set_metric_has_one_definition():
    """No set metric carries bootstrap code of its own (issue 21, part 4): its replicates are
    finalize() of the generic stacked state, or, for a metric that is one vectorised function of
    its state's sums by key (the ROC family), that same function on the generic replicate state in
    dense form, the one its finalize calls. No family overrides either path, except one that builds
    the generic stacked state's own table faster and proves it equal (below)."""
    from evalframe.metrics.keyed_sums import KeyedSumsMetric
    from evalframe.metrics.recommendation import ItemCountMetric
    from evalframe.metrics.registry import available

    # Builds the generic stacked state's very table faster (integer item ids, one sparse product)
    # and finalizes it with its one finalize; tests/metrics/test_recommendation_speed_paths.py
    # shows the table equals the generic one row for row.
    faster_stacked_state = (ItemCountMetric,)
    keyed = 0
    for spec in available():
        if not (isinstance(spec.build, type) and issubclass(spec.build, SetMetric)):
            continue
        if issubclass(spec.build, faster_stacked_state):
            continue
        base = KeyedSumsMetric if issubclass(spec.build, KeyedSumsMetric) else SetMetric
        keyed += base is KeyedSumsMetric
        assert spec.build.replicate_state is base.replicate_state, spec.name
        assert spec.build.values_from_replicate_state is base.values_from_replicate_state, spec.name
        if base is KeyedSumsMetric:
            assert spec.build.finalize is KeyedSumsMetric.finalize, spec.name
            assert not hasattr(spec.build, "values_on_curves") and not hasattr(spec.build, "value"), spec.name
    assert keyed >= 5  # auroc, auprc, tpr@fpr, the detection walk and the cost curve


@given(tables=evidence_tables(weights="float", min_posts=1), data=st.data())
@settings(max_examples=30)
def test_roc_family_replicates_equal_finalize_of_the_stacked_state(tables, data):
    """The dense replicate state (every key of the slice, zero where a replicate drew none of its
    units) and finalize of the stacked state in long form (only the keys present) give the same bits."""
    rows = tables.queries.filter(pl.col("system") == tables.queries.get_column("system")[0])
    columns = data.draw(st.integers(1, 5))
    weights = np.array(data.draw(st.lists(
        st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 0.5, 3.25]), min_size=columns, max_size=columns),
        min_size=rows.height, max_size=rows.height)))
    for name in ("auroc", "auprc", "tpr@fpr=0.3", "tpr@fpr=1.0", "detection_rate@fpr=0.2", "min_cost_threshold"):
        metric = resolve(name)
        fast = metric.values_under(rows, weights)
        definition = SetMetric.values_from_replicate_state(metric, SetMetric.replicate_state(metric, rows, weights))
        np.testing.assert_array_equal(fast, definition, err_msg=name)


@dataclass(frozen=True)
class PositiveShare(SetMetric):
    """A toy set metric with no bootstrap code: the weighted share of positives in the slice."""

    target = TargetCategory.CLASSIFICATION
    required_columns = {"queries": ("label",)}

    @property
    def name(self) -> str:
        return "positive_share"

    def state(self, rows, by):
        weighted = pl.col(WEIGHT) * (pl.col("label") == 1).cast(pl.Float64)
        aggregations = [pl.len().cast(pl.Int64).alias("n"), weighted.sum().alias("positive"), pl.col(WEIGHT).sum().alias("weight")]
        return rows.group_by(by).agg(aggregations) if by else rows.select(aggregations)

    def finalize(self, state, by):
        aggregations = [pl.col("n").sum().cast(pl.Int64), (pl.col("positive").sum() / pl.col("weight").sum()).alias("value"),
                        pl.lit(None, dtype=pl.String).alias("note")]
        return state.group_by(by).agg(aggregations) if by else state.select(aggregations)


def test_a_new_set_metric_needs_no_bootstrap_code():
    """A set metric with only state() and finalize() runs in a bootstrapped evaluation (it used to
    stop with exit 3) and its replicates are those of the plain-Python reference."""
    tables = _clustered(n_posts=30)
    settings = ef.Bootstrap(resamples=200, seed=3, unit=["post_id"])
    ev = ef.evaluate(tables, metrics=[PositiveShare()], bootstrap=settings)
    row = _ci(ev, metric="positive_share", grouping="overall")
    queries = tables.queries.sort("post_id", "criterion_id")
    posts = queries.select("post_id").unique().sort("post_id")
    counts = poisson_counts(posts, 200, 3).astype(float)
    index = queries.join(posts.with_row_index("_i"), on="post_id", how="left", maintain_order="left").get_column("_i").to_numpy()
    w = counts[index]
    positive = (queries.get_column("label") == 1).to_numpy().astype(float)
    expected = (positive[:, None] * w).sum(axis=0) / w.sum(axis=0)
    low, high = _percentile(list(expected))
    assert row["value"] == pytest.approx(positive.mean(), abs=1e-12)
    assert row["ci_low"] == pytest.approx(low, abs=1e-12) and row["ci_high"] == pytest.approx(high, abs=1e-12)


# --- cluster bootstrap against a plain-Python reference -------------------------------------


def _clustered(n_posts: int = 40, criteria: int = 5, seed: int = 0, systems=("s",)) -> ef.Tables:
    rng = np.random.default_rng(seed)
    rows = []
    for post in range(n_posts):
        shift = rng.normal(0, 0.15)  # a post's criteria are correlated
        for criterion in range(criteria):
            label = int(rng.random() < 0.4)
            prob = float(np.clip(0.25 + 0.3 * label + shift + rng.normal(0, 0.15), 0, 1))
            for system in systems:
                rows.append({"system": system, "query_id": f"p{post}|c{criterion}", "post_id": f"p{post}",
                             "criterion_id": f"c{criterion}", "fold": post % 3, "label": label, "prob": round(prob, 3),
                             "w": float(1 + post % 2)})
    queries = pl.DataFrame(rows)
    empty_j = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    empty_l = pl.DataFrame(schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.List(pl.String)})
    return ef.Tables(queries=queries, judgments=empty_j, ranked_lists=empty_l)


@pytest.mark.parametrize("weighted", [False, True])
def test_cluster_bootstrap_equals_a_plain_python_reference(weighted):
    """Every query gets its post's Poisson count (times its user weight); the reference loops."""
    tables = _clustered()
    resamples = 300
    settings_ = ef.Bootstrap(resamples=resamples, seed=4, unit="post_id")
    ev = ef.evaluate(tables, metrics=["brier", "auroc", "ece", "macro_f1", "micro_f1"], bootstrap=settings_,
                     weight="w" if weighted else None, units={"post": ["post_id"]})
    queries = tables.queries
    posts = queries.select("post_id").unique().sort("post_id")
    counts = poisson_counts(posts, resamples, seed=4)
    count_of = dict(zip(posts.get_column("post_id").to_list(), counts, strict=True))
    user = queries.get_column("w").to_numpy() if weighted else np.ones(queries.height)
    label, prob = queries.get_column("label").to_numpy(), queries.get_column("prob").to_numpy()
    brier = (prob - label) ** 2
    post_ids = queries.get_column("post_id").to_list()
    reference = {"brier": [], "auroc": [], "ece": []}
    for r in range(resamples):  # the plain-Python reference: one replicate at a time
        w = np.array([count_of[p][r] for p in post_ids]) * user
        reference["brier"].append(float((w * brier).sum() / w.sum()))
        reference["auroc"].append(float(roc_auc_score(label, prob, sample_weight=w)))
        bins = np.minimum((prob * 10).astype(int), 9)
        gaps = sum(abs((w * (prob - label))[bins == b].sum()) for b in range(10))
        reference["ece"].append(float(gaps / w.sum()))
    for name, values in reference.items():
        row = _ci(ev, metric=name)
        low, high = _percentile(values)
        assert row["ci_low"] == pytest.approx(low, rel=1e-9), name
        assert row["ci_high"] == pytest.approx(high, rel=1e-9), name
        assert row["se"] == pytest.approx(np.std(values, ddof=1), rel=1e-9), name
        stored = ev.replicates.filter(pl.col("metric") == name).get_column("values").to_list()[0]
        np.testing.assert_allclose(stored, values, rtol=1e-9)
    # post-unit metric: each post's own count
    post_rows = ev.per_unit("post").filter(pl.col("metric") == "macro_f1").sort("post_id")
    post_values = post_rows.get_column("value").to_numpy()
    post_weight = (np.array([1.0 + int(p[1:]) % 2 for p in post_rows.get_column("post_id")]) if weighted
                   else np.ones(post_rows.height))
    post_counts = np.array([count_of[p] for p in post_rows.get_column("post_id")])
    means = [float((post_counts[:, r] * post_weight * post_values).sum() / (post_counts[:, r] * post_weight).sum())
             for r in range(resamples)]
    row = _ci(ev, metric="macro_f1")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(_percentile(means), rel=1e-9)


def test_default_unit_is_each_metrics_own_unit():
    tables = _clustered(n_posts=25)
    ev = ef.evaluate(tables, metrics=["brier"], bootstrap=ef.Bootstrap(resamples=200, seed=1))
    queries = tables.queries
    counts = poisson_counts(queries.select("query_id"), 200, seed=1).astype(float)
    brier = ((queries.get_column("prob") - queries.get_column("label")) ** 2).to_numpy()
    means = (counts * brier[:, None]).sum(axis=0) / counts.sum(axis=0)
    row = _ci(ev, metric="brier")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(_percentile(list(means)), rel=1e-9)


# --- pairing, parts, across folds, strata ---------------------------------------------------


def test_two_systems_share_replicates():
    """Identical data under two system names: identical replicate values (paired for free)."""
    tables = _clustered(systems=("a", "b"))
    ev = ef.evaluate(tables, metrics=["brier", "auroc"], bootstrap=ef.Bootstrap(resamples=100, unit="post_id"))
    for name in ("brier", "auroc"):
        by_system = {row["system"]: row["values"] for row in
                     ev.replicates.filter(pl.col("metric") == name).iter_rows(named=True)}
        assert by_system["a"] == by_system["b"]


def _plan(bootstrap: ef.Bootstrap, *, ranking: bool = True) -> Plan:
    metrics = {"all_queries": ["auroc", "ece", "tp", "brier", "macro_f1", "micro_f1"]}
    if ranking:
        metrics["has_evidence"] = ["recall@3", "mrr"]
    return Plan(
        groups=build_groups(metrics, {"has_evidence": "label = 1"}),
        slices={"overall": (), "fold": ("fold",), "criterion": ("criterion_id",)},
        across_folds="fold",
        bootstrap=bootstrap,
    )


@given(tables=evidence_tables(weights="one", min_posts=2), data=st.data())
@settings(max_examples=15)
def test_parts_merge_into_the_wholes_intervals(tables, data):
    """Units split into random parts: same replicate counts, so merged partials give the whole's CIs."""
    posts = tables.queries.get_column("post_id").unique().sort().to_list()
    n_parts = data.draw(st.integers(1, min(4, len(posts))))
    order = data.draw(st.permutations(posts))
    parts = [restrict(tables, list(order[i::n_parts])) for i in range(n_parts)]
    plan = _plan(ef.Bootstrap(resamples=50, unit="post_id", seed=9))
    whole = run(tables, plan)
    merged = finalize(compute_partials(parts[0], plan).merge(*(compute_partials(p, plan) for p in parts[1:])))
    keys = ["grouping", "system", "fold", "criterion_id", "metric", "subset"]
    ours = merged.summary.sort(keys, nulls_last=True)
    theirs = whole.summary.sort(keys, nulls_last=True)
    for column in ("se", "ci_low", "ci_high"):
        a, b = ours.get_column(column), theirs.get_column(column)
        assert (a.is_null() == b.is_null()).all(), column
        assert ((a - b).abs().fill_null(0.0) <= 1e-9).all(), column


def test_across_folds_replicates_are_the_mean_of_the_fold_replicates():
    tables = _clustered(n_posts=30)
    ev = run(tables, _plan(ef.Bootstrap(resamples=200, unit="post_id"), ranking=False))
    for name in ("auroc", "brier", "macro_f1"):
        folds = ev.replicates.filter(pl.col("grouping") == "fold", pl.col("metric") == name)
        across = ev.replicates.filter(pl.col("grouping") == "across_folds", pl.col("metric") == name)
        expected = np.mean(np.array(folds.get_column("values").to_list()), axis=0)
        np.testing.assert_allclose(np.array(across.get_column("values").to_list()[0]), expected, rtol=1e-12)
        row = _ci(ev, grouping="across_folds", metric=name)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(_percentile(list(expected)), rel=1e-12)


def test_weights_are_honoured():
    """Whole user weights act as repeated rows: weight 0 leaves a query out of every replicate."""
    tables = _clustered(n_posts=20)
    zeroed = tables.queries.with_columns(w=pl.when(pl.col("post_id") == "p3").then(0.0).otherwise(1.0))
    dropped = tables.queries.filter(pl.col("post_id") != "p3")
    settings_ = ef.Bootstrap(resamples=150, unit="post_id")
    with_zero = ef.evaluate(ef.Tables(zeroed, tables.judgments, tables.ranked_lists), metrics=["brier", "auroc"],
                            weight="w", bootstrap=settings_)
    without = ef.evaluate(ef.Tables(dropped, tables.judgments, tables.ranked_lists), metrics=["brier", "auroc"],
                          bootstrap=settings_)
    for name in ("brier", "auroc"):
        a, b = _ci(with_zero, metric=name), _ci(without, metric=name)
        assert (a["ci_low"], a["ci_high"], a["se"]) == pytest.approx((b["ci_low"], b["ci_high"], b["se"]), rel=1e-12)


def test_strata_keep_each_folds_weight():
    tables = _clustered(n_posts=30)
    ev = ef.evaluate(tables, metrics=["tp", "fp", "tn", "fn"], slices={"fold": ["fold"]},
                     bootstrap=ef.Bootstrap(resamples=100, unit="post_id", strata="fold"))
    for fold in range(3):
        counts = ev.replicates.filter(pl.col("fold") == fold).sort("metric")
        total = np.array(counts.get_column("values").to_list()).sum(axis=0)
        n_queries = tables.queries.filter(pl.col("fold") == fold).height
        np.testing.assert_allclose(total, n_queries, rtol=1e-12)  # every replicate keeps the fold's size
    with pytest.raises(ConfigError, match="varies within"):
        ef.evaluate(tables, metrics=["tp"], bootstrap=ef.Bootstrap(resamples=10, unit="post_id", strata="criterion_id"))


# --- determinism, undefined replicates, no bootstrap, errors --------------------------------


def test_same_seed_same_bytes_other_seed_other_values(tmp_path):
    tables = _clustered(n_posts=15)
    outputs = []
    for seed, name in ((1, "a"), (1, "b"), (2, "c")):
        ev = ef.evaluate(tables, metrics=["brier", "auroc"], bootstrap=ef.Bootstrap(resamples=50, seed=seed))
        ev.write(tmp_path / name, ("summary.csv", "replicates.parquet"))
        outputs.append(((tmp_path / name / "summary.csv").read_bytes(), (tmp_path / name / "replicates.parquet").read_bytes()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] != outputs[2][0]


def test_undefined_replicates_are_counted_in_the_note():
    queries = pl.DataFrame({"system": "s", "query_id": ["q1", "q2", "q3"], "label": [1, 0, 0], "prob": [0.9, 0.2, 0.4]})
    tables = ef.Tables(queries, _clustered().judgments, _clustered().ranked_lists)
    ev = ef.evaluate(tables, metrics=["auroc", "brier"], bootstrap=ef.Bootstrap(resamples=1000))
    auroc = _ci(ev, metric="auroc")
    values = np.array(ev.replicates.filter(pl.col("metric") == "auroc").get_column("values").to_list()[0])
    undefined = int(np.isnan(values).sum())
    assert 0 < undefined < 1000  # one class drawn, or nothing
    assert f"from {1000 - undefined} of 1000 replicates ({undefined} undefined" in auroc["note"]
    assert (auroc["ci_low"], auroc["ci_high"]) == pytest.approx(_percentile(list(values)), rel=1e-12)


def test_without_bootstrap_the_columns_are_null():
    ev = ef.evaluate(_clustered(n_posts=5), metrics=["brier", "auroc"])
    assert ev.replicates is None and ev.plan.bootstrap is None
    assert ev.summary.select(pl.col("se", "ci_low", "ci_high").null_count().sum()).row(0) == (2, 2, 2)
    with_ci = ef.evaluate(_clustered(n_posts=5), metrics=["brier", "auroc"], bootstrap=ef.Bootstrap(resamples=20))
    assert with_ci.summary["value"].to_list() == ev.summary["value"].to_list()  # the bootstrap adds intervals only


def test_a_unit_that_varies_within_a_metric_unit_is_an_error():
    with pytest.raises(ConfigError, match="varies within a `post`"):
        ef.evaluate(_clustered(n_posts=5), metrics=["macro_f1"], units={"post": ["post_id"]},
                    bootstrap=ef.Bootstrap(resamples=10, unit="criterion_id"))
    with pytest.raises(ConfigError, match="nothing_here"):
        ef.evaluate(_clustered(n_posts=5), metrics=["brier"], bootstrap=ef.Bootstrap(resamples=10, unit="nothing_here"))


def test_bca_for_per_unit_means_percentile_for_set_metrics():
    tables = _clustered(n_posts=30)
    ev = ef.evaluate(tables, metrics=["brier", "auroc"], bootstrap=ef.Bootstrap(resamples=300, method="bca"))
    percentile = ef.evaluate(tables, metrics=["brier", "auroc"], bootstrap=ef.Bootstrap(resamples=300))
    assert _ci(ev, metric="auroc")["ci_low"] == _ci(percentile, metric="auroc")["ci_low"]
    assert _ci(ev, metric="brier")["ci_low"] != _ci(percentile, metric="brier")["ci_low"]


# --- the pipeline door and the progress bar -------------------------------------------------


def _spec(bootstrap) -> dict:
    return {"version": 1, "name": "mini", "metrics": [{"names": ["auroc", "brier"]}], "bootstrap": bootstrap}


@pytest.mark.parametrize(
    ("bootstrap", "message"),
    [
        ({"resamples": 0}, "resamples"),
        ({"n": 1000}, "bootstrap.n: unknown key"),
        ({"unit": 3}, "bootstrap.unit"),
        ({"method": "bootstrap-t"}, "bootstrap.method"),
    ],
)
def test_bad_bootstrap_blocks_are_errors_naming_the_key(bootstrap, message):
    from evalframe.pipeline import Pipeline

    with pytest.raises(ConfigError, match=message):
        Pipeline.from_mapping(_spec(bootstrap))


def test_pipeline_bootstrap_block_reaches_the_plan_and_run_pipeline_overrides_it():
    from evalframe.pipeline import Pipeline

    pipeline = Pipeline.from_mapping(_spec({"resamples": 50, "unit": ["post_id"], "strata": "fold"}))
    assert pipeline.plan.bootstrap == ef.Bootstrap(resamples=50, unit="post_id", strata="fold")
    from evalframe.pipeline.run import with_bootstrap

    assert with_bootstrap(pipeline, None).plan.bootstrap is None
    assert ef.load_pipeline("evidence_contract").plan.bootstrap == ef.Bootstrap(resamples=1000, unit="post_id")


def test_progress_bar_only_on_a_terminal_after_a_second(monkeypatch, capsys):
    import io

    from evalframe import _progress

    monkeypatch.setattr(_progress, "DELAY", 0.0)
    # Not quiet, whatever an earlier in-process `evalframe run -q` of this worker left set (restored after).
    monkeypatch.setattr(_progress, "_QUIET", False)
    with _progress.Progress(3, "bootstrap") as progress:  # stderr captured: not a terminal
        progress.advance()
    assert capsys.readouterr().err == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with _progress.Progress(2, "bootstrap") as progress:
        progress.advance(2)
    assert "bootstrap [" in terminal.getvalue() and "2/2" in terminal.getvalue()
    _progress.set_quiet(True)
    try:
        quiet = Terminal()
        monkeypatch.setattr("sys.stderr", quiet)
        with _progress.Progress(2, "bootstrap") as progress:
            progress.advance(2)
        assert quiet.getvalue() == ""
    finally:
        _progress.set_quiet(False)


def test_the_threads_change_no_bit(monkeypatch):
    """The replicate values of several groups, units and grouping sets computed on threads at
    once are those computed one after another, bit for bit (two subsets, two units, weights)."""
    from evalframe.engine import uncertainty

    tables = _clustered(n_posts=30, systems=("a", "b"))
    metrics = ["brier", "auroc", "ece", "tp", "f1", "micro_f1", "label_macro_f1"]
    kwargs = dict(metrics={"all_queries": metrics, "positives": ["auroc", "brier", "tp"]}, subsets={"positives": "label = 1"},
                  slices={"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]}, weight="w",
                  bootstrap=ef.Bootstrap(resamples=40, seed=3))
    found = []
    for threads in (1, 2):
        monkeypatch.setattr(uncertainty, "THREADS", threads)
        monkeypatch.setattr("os.cpu_count", lambda: 2)
        ev = ef.evaluate(tables, **kwargs)
        found.append(ev.replicates)
    assert found[0].height > 20
    assert found[0].drop("values").equals(found[1].drop("values"))
    one, two = (np.asarray(t.get_column("values").to_numpy(), dtype=np.float64) for t in found)
    np.testing.assert_array_equal(one.view(np.uint64), two.view(np.uint64))
