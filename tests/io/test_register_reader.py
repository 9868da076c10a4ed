"""A new input format is one function (evalframe.io.readers.register_reader): its table passes the
same contract as the bundled format it follows, a pipeline names it under input.format."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.cli import main
from evalframe.errors import ConfigError, InputError
from evalframe.io.readers import reader_formats, unregister_reader

SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
PIPELINE = "version: 1\nname: mine\ninput: {{path: {path}, format: {format}}}\nmetrics:\n  - names: [mrr, auroc]\n"


def read_reversed_tsv(path: Path) -> pl.DataFrame:
    """A toy format: the per_query columns, tab-separated, columns written in reverse order."""
    table = pl.read_csv(path, separator="\t", infer_schema_length=None)
    return table.select(reversed(table.columns))


@pytest.fixture
def reversed_tsv(tmp_path):
    ef.register_reader("reversed_tsv", read_reversed_tsv, schema="per_query")
    table = pl.read_csv(SAMPLE, n_rows=60, infer_schema_length=None)
    path = tmp_path / "runs.tsv"
    table.select(reversed(table.columns)).write_csv(path, separator="\t")
    yield path
    unregister_reader("reversed_tsv")


def test_a_registered_format_runs_like_the_format_it_follows(reversed_tsv, tmp_path):
    head = tmp_path / "head.csv"
    pl.read_csv(SAMPLE, n_rows=60, infer_schema_length=None).write_csv(head)
    (tmp_path / "mine.yaml").write_text(PIPELINE.format(path=reversed_tsv, format="reversed_tsv"))
    (tmp_path / "plain.yaml").write_text(PIPELINE.format(path=head, format="per_query"))
    mine, plain = ef.run_pipeline(str(tmp_path / "mine.yaml")), ef.run_pipeline(str(tmp_path / "plain.yaml"))
    assert "reversed_tsv" in reader_formats()
    assert_frame_equal(mine.summary, plain.summary)


def test_its_table_is_validated_at_the_same_door(reversed_tsv, tmp_path, capsys):
    bad = pl.read_csv(reversed_tsv, separator="\t", infer_schema_length=None).with_columns(p_has_evidence=pl.lit(1.7))
    bad.write_csv(reversed_tsv, separator="\t")
    (tmp_path / "mine.yaml").write_text(PIPELINE.format(path=reversed_tsv, format="reversed_tsv"))
    with pytest.raises(InputError, match="p_has_evidence"):
        ef.run_pipeline(str(tmp_path / "mine.yaml"))
    assert main(["run", str(tmp_path / "mine.yaml"), "--out", str(tmp_path / "out"), "-q"]) == 2
    assert not (tmp_path / "out").exists()


def test_an_unregistered_format_is_refused_by_name(tmp_path):
    (tmp_path / "p.yaml").write_text(PIPELINE.format(path=SAMPLE, format="reversed_tsv"))
    with pytest.raises(ConfigError, match="input.format"):
        ef.load_pipeline(str(tmp_path / "p.yaml"))


@pytest.mark.parametrize(("format", "schema", "message"), [
    ("per_query", "per_query", "already registered"),
    ("my format", "per_query", "a name like"),
    ("mine", "queries", "`schema` must be one of per_query, retrieval_results"),
])
def test_bad_registrations_are_config_errors(format, schema, message):
    with pytest.raises(ConfigError, match=message):
        ef.register_reader(format, read_reversed_tsv, schema=schema)
