"""Shared test helpers: tiny run/qrels builders, per-query lookups, the trec_eval fixtures.

Builders take plain Python structures so that a test reads like the case it pins::

    run = make_run({"q1": {"d1": 0.9, "d2": 0.8}})          # scores
    run = make_run({"q1": ["d2", "d1"]})                      # an order (scores 2.0, 1.0)
    qrels = make_qrels({"q1": {"d2": 1, "d1": 0}})
    values = metric_values(ef.evaluate(run, qrels, ["mrr"]), "mrr")   # {"q1": 1.0}

Hypothesis runs derandomized by default (same examples on every run, so CI is reproducible);
``HYPOTHESIS_PROFILE=explore`` draws fresh random examples on every run.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from built_once import EVALFRAME, start_bundled_cli_run, wait_started
from hypothesis import HealthCheck, settings
from readme_blocks import WRITTEN as README_WRITTEN
from readme_blocks import readme_run

import evalframe as ef

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,  # the first Polars call of a process compiles plans; no timing in correctness tests
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
    max_examples=30,  # where a test does not set its own (tests keep theirs modest: the suite's time, issue 20)
)
settings.register_profile("explore", parent=settings.get_profile("ci"), derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Report plots are drawn in this process, not in a pool of worker processes (the library's default
# on 2+ cores): pytest-xdist already keeps every core busy, a pool's start-up (a fork server, each
# worker importing matplotlib and receiving the data) only adds CPU, and its CPU would escape the
# suite's own measurements. test_plots_and_html compares the pool's bytes with these.
os.environ.setdefault("EVALFRAME_PLOT_WORKERS", "0")

#: Repository root (the folder holding pyproject.toml).
REPO_ROOT = Path(__file__).resolve().parents[1]
#: trec_eval's own test data, copied verbatim into the repository (see its README).
TREC_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "trec_eval"
#: The files of :data:`TREC_FIXTURES` that the conformance tests read.
TREC_FIXTURE_FILES = (
    "qrels.test", "qrels.rel_level", "results.test", "results.trunc",
    "out.test", "out.test.a", "out.test.aq", "out.test.aqc", "out.test.aql", "out.test.meas_params",
)


def _run_frame(
    rankings: Mapping[str, Mapping[str, float] | Sequence[str]], system: str | None
) -> pl.DataFrame:
    rows = []
    for query_id, items in rankings.items():
        if isinstance(items, Mapping):
            rows += [(query_id, doc_id, float(score)) for doc_id, score in items.items()]
        else:  # an order: first item gets the highest score
            rows += [(query_id, doc_id, float(len(items) - position)) for position, doc_id in enumerate(items)]
    frame = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    if system is not None:
        frame = frame.with_columns(system=pl.lit(system))
    return frame


@pytest.fixture(scope="session")
def make_run():
    """``make_run({"q1": {"d1": 0.9}} | {"q1": ["d1", "d2"]}, system=None)`` → ranking table."""

    def build(rankings, *, system: str | None = None) -> pl.DataFrame:
        return ef.read_run(_run_frame(rankings, system))

    return build


@pytest.fixture(scope="session")
def make_qrels():
    """``make_qrels({"q1": {"d1": 2, "d2": 0}})`` → judgments table."""

    def build(judgments: Mapping[str, Mapping[str, int]]) -> pl.DataFrame:
        rows = [(q, d, int(g)) for q, grades in judgments.items() for d, g in grades.items()]
        frame = pl.DataFrame(
            rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row"
        )
        return ef.read_qrels(frame)

    return build


def per_query_dict(result: ef.Result, metric: str, *, system: str | None = None) -> dict[str, float | None]:
    """``{query_id: value}`` of one metric (value None where the query was skipped)."""
    table = result.per_query.filter(pl.col("metric") == metric)
    if system is not None:
        table = table.filter(pl.col("system") == system)
    assert table.height > 0, f"metric {metric!r} not in the result ({result.per_query['metric'].unique().to_list()})"
    assert table.get_column("query_id").is_unique().all(), "several systems: pass system="
    return dict(table.select("query_id", "value").iter_rows())


@pytest.fixture(scope="session")
def metric_values():
    """``metric_values(result, "mrr", system=None)`` → ``{query_id: value}``."""
    return per_query_dict


@pytest.fixture(scope="session")
def trec_dir() -> Path:
    """The trec_eval fixture folder; fails (never skips) naming every file that is missing."""
    missing = [name for name in TREC_FIXTURE_FILES if not (TREC_FIXTURES / name).is_file()]
    if missing:
        pytest.fail(
            f"trec_eval conformance fixtures missing from {TREC_FIXTURES}: {', '.join(missing)} "
            "(they are part of the repository: restore them from version control)"
        )
    return TREC_FIXTURES


# --- test-suite speed (issue 20): CPU seconds per test, for a quiet-machine estimate on a busy one


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", metavar="FILE", default=None,
                     help="append each test's CPU seconds to FILE as `seconds<TAB>children seconds<TAB>test id` "
                          "(this process, all phases; children: the processes it started and waited for, e.g. the "
                          "CLI or a plot worker); on a shared machine CPU time says what wall time cannot")


def _cpu_seconds() -> tuple[float, float]:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    target = item.config.getoption("--cpu-durations")
    if not target:
        yield
        return
    own, children = _cpu_seconds()
    yield
    own_after, children_after = _cpu_seconds()
    with open(target, "a") as handle:
        handle.write(f"{own_after - own:.3f}\t{children_after - children:.3f}\t{item.nodeid}\n")


def pytest_collection_finish(session):
    """Once the test modules are imported, their objects (modules, functions, strategies: most of
    a worker's heap, and all of it alive to the end) are left out of the garbage collector's
    scans (``gc.freeze``), and young objects are scanned every 10,000 allocations instead of 700:
    the full scans over the whole heap had cost about 5 % of a test process's CPU (tests/engine,
    -n 0: 2.9 -> 1.1 CPU-s in the collector). Objects the tests make are collected as before."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 10)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """In a fresh checkout every pytest-xdist worker rewrote the asserts of every test module it
    imports while collecting (~2.7 CPU-s a worker), each for itself. The second worker first
    rewrites them last-first into pytest's cache of rewritten modules, while the first collects
    first-last, and stops where it meets a module the first worker has rewritten: each module is
    rewritten about once. The first worker collects as before; with the cache filled (a second run)
    this finds the last module cached and does nothing. Where pytest's helpers are not there (they
    are its own, not its API), every worker rewrites what it imports, as without this hook."""
    if os.environ.get("PYTEST_XDIST_WORKER") != "gw1" or sys.dont_write_bytecode:
        return
    try:
        from _pytest.assertion.rewrite import (PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, assertstate_key,
                                               get_cache_dir, try_makedirs)
    except ImportError:
        return
    config = session.config
    if config.getoption("assertmode") != "rewrite" or assertstate_key not in config.stash:
        return
    state = config.stash[assertstate_key]
    try:
        for source in sorted((REPO_ROOT / "tests").rglob("test_*.py"), reverse=True):
            pyc = get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)
            if _read_pyc(source, pyc) is not None or not try_makedirs(pyc.parent):
                return  # the first worker has come this far (or the folder cannot hold a cache)
            source_hash, code = _rewrite_test(source, config)
            _write_pyc(state, code, source_hash, pyc)
    except Exception:  # noqa: BLE001 (pytest's own helpers changed: each worker rewrites for itself)
        return


@pytest.fixture(scope="session", autouse=True)
def _slow_commands_started_early(request, tmp_path_factory):
    """The CLI run of the bundled sample (~18 CPU-seconds, read by test_cli_pipeline's
    ``sample_runs``) starts in the background with the first test of the run, when a selected
    test reads it: the workers run other tests meanwhile instead of one of them waiting for it in
    a test's setup (:func:`built_once.start_once`)."""
    if EVALFRAME.is_file() and any("sample_runs" in item.fixturenames for item in request.session.items):
        start_bundled_cli_run(tmp_path_factory)  # else sample_runs fails, naming it


def pytest_sessionfinish(session):
    wait_started()  # a command started in the background never outlives the process that started it


@pytest.fixture(scope="session")
def bundled_sample_run(tmp_path_factory):
    """``(result, out folder)`` of the bundled pipeline on the bundled sample with every output,
    written from Python by README.md's block ``ev = ef.run_pipeline("pipelines/evidence_contract.yaml",
    input="data_samples/per_query.csv")`` ... ``ev.write("reports/exp42")`` with
    ``TEST_RESAMPLES`` bootstrap resamples (``ef.run_pipeline(..., out=...)`` is that run and that
    write), for the CLI tests that read it (test_cli_pipeline, test_cli_stats; none may write into
    its folder). The README's runnable blocks run once per test run (tests/readme_blocks.py), for
    tests/docs/test_readme.py and for these. ``result`` holds the run's in-memory ``summary`` and
    ``per_query`` tables (the whole Evaluation pickles to ~100 MB)."""
    run = readme_run(tmp_path_factory)
    out = run.root / README_WRITTEN
    if run.failure is not None or run.summary is None or not out.is_dir():
        pytest.fail(f"README.md's runnable blocks did not write the bundled run into {README_WRITTEN} "
                    f"(tests/docs/test_readme.py; tests/readme_blocks.WRITTEN names the folder): {run.failure}")
    return SimpleNamespace(summary=run.summary, per_query=run.per_query), out
