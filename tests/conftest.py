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

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, settings

import evalframe as ef

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,  # the first Polars call of a process compiles plans; no timing in correctness tests
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("explore", parent=settings.get_profile("ci"), derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

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
                     help="append each test's CPU seconds (this process, all phases) to FILE as `seconds<TAB>test id`; "
                          "on a shared machine CPU time says what wall time cannot")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    target = item.config.getoption("--cpu-durations")
    if not target:
        yield
        return
    import time

    start = time.process_time()
    yield
    with open(target, "a") as handle:
        handle.write(f"{time.process_time() - start:.3f}\t{item.nodeid}\n")


@pytest.fixture(scope="session")
def bundled_sample_run(tmp_path_factory):
    """``(Evaluation, out folder)`` of the bundled pipeline on the bundled sample, 1,000-resample
    bootstrap and every output included, as ``ef.run_pipeline(path, input=path, out=...)``: run
    once per session (per pytest-xdist worker) for the CLI tests that read it, test_cli_pipeline and
    test_cli_stats (none may write into its folder)."""
    out = tmp_path_factory.mktemp("bundled_sample_run") / "out"
    result = ef.run_pipeline(str(REPO_ROOT / "pipelines" / "evidence_contract.yaml"),
                             input=str(REPO_ROOT / "data_samples" / "per_query.csv"), out=out)
    return result, out
