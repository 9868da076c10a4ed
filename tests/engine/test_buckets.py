"""Out of core on one machine (issue 27 part 2, :mod:`evalframe.engine.buckets`): the bucket path
equals the in-memory path for every metric family with weights, slices and the bootstrap; scans
of Parquet, CSV, NDJSON, folders and globs; temporary buckets removed also on error and Ctrl-C;
bad settings are ConfigErrors naming the key; ``evalframe trec --buckets`` prints what
``evalframe trec`` prints."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partition_checks import METRICS, SLICES, SUBSETS, assert_same_evaluation, with_answers
from tables_strategy import evidence_tables

import evalframe as ef
from evalframe.engine import buckets as bucket_module
from evalframe.cli import main as cli_main
from evalframe.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trec_eval"
RANKING = ["ndcg@10", "recall@5", "map", "mrr", "P@5", "num_ret", "num_rel_ret"]


@given(tables=evidence_tables(weights="integer", min_posts=1, max_posts=8), weighted=st.booleans(),
       bootstrap=st.booleans(), n_buckets=st.integers(1, 9), data=st.data())
@settings(max_examples=5, deadline=None)
def test_buckets_equal_the_in_memory_run_for_every_family(tables, weighted, bootstrap, n_buckets, data, tmp_path_factory):
    """Per-post metrics make the post the bucket key: each query goes where its post goes."""
    tables = with_answers(tables, data)
    options = dict(metrics=METRICS, subsets=SUBSETS, slices=SLICES, weight="w" if weighted else None,
                   across_folds="fold", bootstrap=ef.Bootstrap(resamples=30, seed=5) if bootstrap else None)
    folder = tmp_path_factory.mktemp("buckets")
    whole = ef.evaluate(tables, **options)
    in_buckets = ef.evaluate(tables, **options, buckets=n_buckets, bucket_dir=folder)
    assert_same_evaluation(in_buckets, whole)
    assert [p.name for p in next(folder.iterdir()).iterdir()] == ["_values"]  # the buckets are gone; the result's values stay
    del in_buckets
    gc.collect()
    assert list(folder.iterdir()) == []  # and go with the result


@pytest.fixture(scope="module")
def trec_like(tmp_path_factory) -> dict:
    """A two-system run (system b misses some queries) with a query slice, weights and qrels that
    judge a query no system retrieved, written as Parquet (two files), CSV and NDJSON."""
    rng = np.random.default_rng(27)
    n_queries, depth = 120, 12
    rows = []
    for system in ("a", "b"):
        for q in range(n_queries):
            if system == "b" and q % 7 == 0:
                continue
            docs = rng.choice(40, size=depth, replace=False)
            scores = np.round(rng.random(depth), 2)  # ties, broken by doc_id as trec_eval does
            rows += [{"system": system, "query_id": f"q{q:03d}", "doc_id": f"d{d}", "score": float(s)} for d, s in zip(docs, scores)]
    run = pl.DataFrame(rows)
    qrels = pl.DataFrame({
        "query_id": [f"q{q:03d}" for q in range(n_queries + 1) for _ in range(3)],
        "doc_id": [f"d{d}" for _ in range(n_queries + 1) for d in rng.choice(40, size=3, replace=False)],
        "relevance": rng.integers(0, 3, size=3 * (n_queries + 1)).tolist(),
    }).filter(pl.col("query_id") != "q005")  # q005: retrieved, never judged (its rows are counted, not used)
    queries = (run.select("system", "query_id").unique().join(qrels.select("query_id").unique(), on="query_id")
               .with_columns(topic=pl.col("query_id").str.slice(-1).cast(pl.Int64) % 3,
                             w=(pl.col("query_id").str.slice(-2).cast(pl.Int64) % 4).cast(pl.Float64)).sort("system", "query_id"))
    root = tmp_path_factory.mktemp("inputs")
    (root / "run").mkdir()
    run.filter(pl.col("system") == "a").write_parquet(root / "run" / "a.parquet")
    run.filter(pl.col("system") == "b").write_parquet(root / "run" / "b.parquet")
    run.write_csv(root / "run.csv")
    run.write_ndjson(root / "run.ndjson")
    qrels.write_parquet(root / "qrels.parquet")
    qrels.write_csv(root / "qrels.csv")
    return {"run": run, "qrels": qrels, "queries": queries, "root": root}


@pytest.mark.parametrize("run_source", ["run/*.parquet", "run", "run.csv", "run.ndjson"])
def test_scans_in_buckets_equal_the_in_memory_run(trec_like, run_source, tmp_path):
    root = trec_like["root"]
    options = dict(metrics=RANKING, bootstrap=ef.Bootstrap(resamples=50), missing="zero")
    whole = ef.evaluate(ef.read_run(trec_like["run"]), ef.read_qrels(trec_like["qrels"]), **options)
    scanned = ef.evaluate(ef.scan_run(str(root / run_source)), ef.scan_qrels(root / "qrels.csv"), **options,
                          buckets=4, bucket_dir=tmp_path)
    assert_same_evaluation(scanned, whole)
    assert any("run rows of 1 queries without judgments were ignored" in note for note in scanned.notes)
    del scanned
    gc.collect()
    assert list(tmp_path.iterdir()) == []


def test_a_queries_table_with_slices_and_weights_in_buckets(trec_like, tmp_path):
    options = dict(metrics=RANKING, slices={"overall": [], "topic": ["topic"]}, weight="w",
                   bootstrap=ef.Bootstrap(resamples=40, method="bca"))
    run, qrels, queries = ef.read_run(trec_like["run"]), ef.read_qrels(trec_like["qrels"]), trec_like["queries"]
    whole = ef.evaluate(run, qrels, queries=queries, **options)
    in_buckets = ef.evaluate(run, qrels, queries=queries, **options, buckets=3, bucket_dir=tmp_path)
    assert_same_evaluation(in_buckets, whole)
    del in_buckets
    gc.collect()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_temporary_buckets_are_removed_on_error_and_ctrl_c(trec_like, tmp_path, monkeypatch, failure):
    calls = []
    original = bucket_module.evaluate_part

    def failing(tables, plan):
        calls.append(1)
        if len(calls) == 2:
            assert len(list(tmp_path.iterdir())) == 1  # the buckets exist while they are evaluated
            raise failure
        return original(tables, plan)

    monkeypatch.setattr(bucket_module, "evaluate_part", failing)
    with pytest.raises(type(failure)):
        ef.evaluate(ef.read_run(trec_like["run"]), ef.read_qrels(trec_like["qrels"]), RANKING, missing="zero",
                    buckets=5, bucket_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_per_unit_values_stay_on_disk_with_the_result(trec_like, tmp_path, monkeypatch):
    """Each bucket's per-unit values are written to disk and read back lazily when finalising
    (quantiles one metric at a time, skip counts streamed); the result's long per-unit table is a
    lazy scan of those files (collected only when read), the files live as long as the result
    (and its copies), and go with it."""
    from dataclasses import replace

    from evalframe.engine import evaluation

    seen = []
    original = evaluation.finalize

    def finalize(partials, **kwargs):
        files = sorted(p.name for p in tmp_path.rglob("*.parquet") if p.parent.parent.name == "_values")
        seen.extend((frame, files) for frame in partials.values.values())
        return original(partials, **kwargs)

    monkeypatch.setattr(evaluation, "finalize", finalize)
    run, qrels = ef.read_run(trec_like["run"]), ef.read_qrels(trec_like["qrels"])
    bootstrap = ef.Bootstrap(resamples=20, seed=1)
    in_buckets = ef.evaluate(run, qrels, RANKING, missing="zero", buckets=3, bucket_dir=tmp_path, bootstrap=bootstrap)
    assert seen and all(isinstance(frame, pl.LazyFrame) for frame, _ in seen)
    assert seen[0][1] == ["00000.parquet", "00001.parquet", "00002.parquet"]
    assert isinstance(in_buckets.per_unit_frame, pl.LazyFrame)
    whole = ef.evaluate(run, qrels, RANKING, missing="zero", bootstrap=bootstrap)
    copy = replace(in_buckets, notes=())
    del in_buckets
    gc.collect()
    assert_same_evaluation(replace(copy, notes=whole.notes), whole)  # the copy still reads the files
    assert copy.per_unit_lazy().collect().equals(whole.per_unit_values)
    del copy
    gc.collect()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("settings_", "message"), [
    ({"buckets": 0}, "`buckets` must be a whole number >= 1 or 'auto', got 0"),
    ({"buckets": -2}, "`buckets` must be a whole number >= 1"),
    ({"buckets": "many"}, "`buckets` must be a whole number >= 1 or 'auto', got 'many'"),
    ({"buckets": "auto", "memory": -1}, "`memory` must be a positive size"),
    ({"buckets": "auto", "memory": "lots"}, "`memory` must be a positive size such as 8GB or 512MB, got 'lots'"),
])
def test_bad_settings_are_config_errors_naming_the_key(trec_like, settings_, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ef.evaluate(ef.read_run(trec_like["run"]), ef.read_qrels(trec_like["qrels"]), RANKING, **settings_)


def test_auto_picks_the_fewest_buckets_that_fit_the_budget():
    assert bucket_module.parse_memory("8GB") == 8 << 30
    assert bucket_module.parse_memory("512 MiB") == 512 << 20
    assert bucket_module.parse_memory(None) == bucket_module.machine_memory() // 3
    factor, share = bucket_module.WORKING_FACTOR, bucket_module.BUCKET_SHARE
    assert share == 0.5
    assert bucket_module.choose_buckets("auto", input_bytes=10 << 30, memory=8 << 30) == -(-(factor * 10) // 4)
    assert bucket_module.choose_buckets("auto", input_bytes=1, memory=8 << 30) == 1
    assert bucket_module.choose_buckets(7, input_bytes=10 << 30, memory=1) == 7


def test_a_pipeline_names_a_bad_execution_key():
    with pytest.raises(ConfigError, match=r"execution\.buckets"):
        ef.load_pipeline("evidence_contract", set=["execution.buckets=0"])
    pipeline = ef.load_pipeline("evidence_contract", set=["execution.buckets=auto", "execution.memory=2GB"])
    assert pipeline.execution == {"buckets": "auto", "memory": "2GB"}


def _cli(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalframe.cli", *arguments], capture_output=True, text=True, check=False)


def test_cli_trec_with_buckets_prints_what_trec_prints(tmp_path, capsys):
    """In-process (``cli.main``), then the refusal through the installed module in a child process
    (trec's own exit-0 child process: tests/compat/test_trec_conformance.py)."""
    qrels, run = str(FIXTURES / "qrels.test"), str(FIXTURES / "results.test")
    plain_status = cli_main(["trec", "-q", "-c", "-m", "all_trec", qrels, run])
    plain = capsys.readouterr()
    bucketed_status = cli_main(["trec", "-q", "-c", "-m", "all_trec", qrels, run, "--buckets", "5", "--bucket-dir", str(tmp_path)])
    bucketed = capsys.readouterr()
    assert plain_status == bucketed_status == 0
    assert bucketed.out == plain.out and bucketed.err == plain.err
    assert len(plain.out.splitlines()) > 100
    assert list(tmp_path.iterdir()) == []
    refused = _cli("trec", qrels, run, "--buckets", "auto", "--memory=-3GB")
    assert refused.returncode == 2 and "`--memory` must be a positive size" in refused.stderr


def _posts_with_an_orphan() -> dict[str, pl.DataFrame]:
    """Six posts of two criteria (a query each), one system; plus a query ``zz|c0`` that is ranked
    and judged but absent from the queries table."""
    query_ids = [f"p{p}|c{c}" for p in range(6) for c in range(2)]
    run = pl.DataFrame({
        "system": "s",
        "query_id": [q for q in [*query_ids, "zz|c0"] for _ in range(3)],
        "doc_id": [f"{q}_d{i}" for q in [*query_ids, "zz|c0"] for i in range(3)],
        "rank": [1, 2, 3] * (len(query_ids) + 1),
    })
    qrels = pl.DataFrame({"query_id": [*query_ids, "zz|c0"], "doc_id": [f"{q}_d{i % 3}" for i, q in enumerate([*query_ids, "zz|c0"])],
                          "relevance": 1})
    queries = pl.DataFrame({
        "system": "s", "query_id": query_ids, "post_id": [q.split("|")[0] for q in query_ids],
        "criterion_id": [q.split("|")[1] for q in query_ids], "label": [i % 2 for i in range(len(query_ids))],
        "prob": [round(0.1 + 0.07 * i, 2) for i in range(len(query_ids))],
    })
    return {"run": run, "qrels": qrels, "queries": queries}


@pytest.mark.parametrize("n_buckets", [1, 3])
def test_per_post_buckets_keep_the_rows_of_a_query_the_queries_table_lacks(n_buckets, tmp_path):
    """Per-post metrics bucket by post; the run's and qrels' rows of a query absent from the queries
    table go to that query id's bucket, where the engine notes them as it does in memory."""
    data = _posts_with_an_orphan()
    tables = ef.Tables.from_run(ef.read_run(data["run"]), ef.read_qrels(data["qrels"]), data["queries"])
    options = dict(metrics=["macro_f1", "recall@3", "mrr"])
    whole = ef.evaluate(tables, **options)
    in_buckets = ef.evaluate(tables, **options, buckets=n_buckets, bucket_dir=tmp_path)
    assert "1 judged queries are not in the queries table and were ignored" in whole.notes
    assert "1 judged queries are not in the queries table and were ignored" in in_buckets.notes
    assert_same_evaluation(in_buckets, whole)


def test_a_query_whose_units_fall_in_two_buckets_is_an_error_naming_it(tmp_path):
    data = _posts_with_an_orphan()
    queries = pl.concat([data["queries"], data["queries"].head(1).with_columns(system=pl.lit("t"), post_id=pl.lit("p9"))])
    run = pl.concat([data["run"], data["run"].head(3).with_columns(system=pl.lit("t"))])
    tables = ef.Tables.from_run(ef.read_run(run), ef.read_qrels(data["qrels"]), queries)
    with pytest.raises(ConfigError, match=r"query 'p0\|c0' belongs to units \['post_id'\] that fall in different buckets"):
        ef.evaluate(tables, metrics=["macro_f1"], buckets=64, bucket_dir=tmp_path)


def test_a_bucket_run_streams_its_per_unit_values_to_the_outputs(tmp_path):
    """The long per-unit values of a bucket run are a lazy scan of its files: the result's
    per_query.parquet and per_unit.parquet (sunk from the files) hold the in-memory run's values,
    and every view of them (per_unit, per_query, per_unit_values) equals the in-memory one."""
    data = _posts_with_an_orphan()
    tables = ef.Tables.from_run(ef.read_run(data["run"]), ef.read_qrels(data["qrels"]), data["queries"])
    options = dict(metrics=["exact_match", "macro_f1", "recall@3", "mrr"], slices={"overall": [], "criterion": ["criterion_id"]})
    whole = ef.evaluate(tables, **options)
    in_buckets = ef.evaluate(tables, **options, buckets=3, bucket_dir=tmp_path / "scratch")
    assert in_buckets.per_unit_on_disk and not whole.per_unit_on_disk
    whole.write(tmp_path / "memory")
    in_buckets.write(tmp_path / "buckets")
    for name in ("per_query.parquet", "per_unit.parquet"):
        written = pl.read_parquet(tmp_path / "buckets" / name)
        assert written.height and written.equals(pl.read_parquet(tmp_path / "memory" / name)), name
    assert (tmp_path / "buckets" / "summary.csv").read_bytes() == (tmp_path / "memory" / "summary.csv").read_bytes()
    assert in_buckets.per_unit("post").equals(whole.per_unit("post"))
    assert in_buckets.per_query.equals(whole.per_query)
    assert in_buckets.per_unit_values.equals(whole.per_unit_values)
