"""The one reader of a result folder (evalframe.results.reader, ``ef.load``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.errors import InputError
from evalframe.results.data import from_evaluation

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
PIPELINE = {
    "version": 1,
    "name": "tiny",
    "input": {"path": "in.csv", "format": "per_query"},
    "units": {"post": ["post_id"]},
    "metrics": [{"names": ["mrr", "auroc"]}, {"names": ["macro_f1"]}],
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reader")
    (folder / "in.csv").write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:201]))
    (folder / "p.yaml").write_text(yaml.safe_dump(PIPELINE))
    ev = ef.run_pipeline(str(folder / "p.yaml"), input=str(folder / "in.csv"))
    return ev, ev.write(folder / "out", ("per_query.parquet", "per_unit.parquet", "summary.parquet", "run.json"))


def test_load_reads_what_write_wrote(written):
    ev, out = written
    result = ef.load(out)
    assert_frame_equal(result.summary, ev.summary)
    assert_frame_equal(result.per_query, ev.per_query)
    assert_frame_equal(result.per_unit("post"), ev.per_unit("post"))
    assert result.info == ev.info
    assert result.replicates is None and result.curves is None and result.tables == {}


def test_the_folder_gives_the_statistics_the_same_values_as_the_evaluation(written):
    ev, out = written
    from_folder, from_memory = ef.load(out).data(), from_evaluation(ev)
    keys = ["system", "unit", "metric", "query_id", "post_id"]
    columns = [*keys, "subset", "value"]
    assert_frame_equal(from_folder.values.select(columns).sort(keys, nulls_last=True),
                       from_memory.values.select(columns).sort(keys, nulls_last=True), check_dtypes=False)
    assert from_folder.levels == from_memory.levels and dict(from_folder.unit_keys) == dict(from_memory.unit_keys)


@pytest.mark.parametrize(("make", "message"), [
    (lambda path: None, "result folder not found"),
    (lambda path: path.mkdir(), "has no summary.parquet and no run.json"),
    (lambda path: (path.mkdir(), pl.DataFrame({"x": [1]}).write_parquet(path / "summary.parquet"),
                   (path / "run.json").write_text("{}")), "column `grouping`: required column is missing"),
])
def test_a_folder_that_is_not_a_result_is_named(tmp_path, make, message):
    make(tmp_path / "r")
    with pytest.raises(InputError, match=message):
        ef.load(tmp_path / "r")
