"""Reading embedding tables: formats, column names, models, and every bad input named (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import evalframe as ef
from evalframe.io.embeddings import read_embeddings, read_pairs

VECTORS = [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 0.0], [1.0, 1.0, 1.0]]


def _frame(**extra):
    return pl.DataFrame({"id": ["a", "b", "c", "d"], "vector": VECTORS, **extra})


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".ndjson", ".npy", "array"])
def test_every_format_gives_the_same_vectors(tmp_path, suffix):
    path = tmp_path / f"emb{suffix}"
    frame = _frame(label=["x", "x", "y", "y"])
    if suffix == ".parquet":
        frame.write_parquet(path)
    elif suffix == ".csv":
        frame.with_columns(vector=pl.Series([json.dumps(v) for v in VECTORS])).write_csv(path)
    elif suffix == ".ndjson":
        frame.write_ndjson(path)
    elif suffix == ".npy":
        np.save(path, np.array(VECTORS))
    read = read_embeddings(np.array(VECTORS) if suffix == "array" else path, label=None)
    (embeddings,) = read.values()
    np.testing.assert_array_equal(embeddings.vectors, np.array(VECTORS))
    expected_ids = ["0", "1", "2", "3"] if suffix in (".npy", "array") else ["a", "b", "c", "d"]
    assert embeddings.ids.to_list() == expected_ids
    assert embeddings.model == ("default" if suffix == "array" else "emb")


def test_fixed_size_array_columns_and_several_models(tmp_path):
    frame = pl.concat([_frame(model="m1"), _frame(model="m2")]).with_columns(pl.col("vector").cast(pl.Array(pl.Float32, 3)))
    frame.write_parquet(tmp_path / "both.parquet")
    read = read_embeddings(tmp_path / "both.parquet")
    assert list(read) == ["m1", "m2"]
    assert read["m2"].vectors.dtype == np.float32 and read["m2"].vectors.shape == (4, 3)


def test_renamed_columns_and_labels(tmp_path):
    frame = _frame(topic=[1, 1, 2, 2]).rename({"id": "doc", "vector": "emb"})
    frame.write_parquet(tmp_path / "e.parquet")
    (one,) = read_embeddings(tmp_path / "e.parquet", id="doc", vector="emb", label="topic").values()
    assert one.labels.to_list() == [1, 1, 2, 2]


def _error(source, **options) -> str:
    with pytest.raises(ef.InputError) as caught:
        read_embeddings(source, **options)
    return str(caught.value)


def test_bad_inputs_name_file_row_and_value(tmp_path):
    path = tmp_path / "bad.parquet"
    pl.DataFrame({"id": ["a", "b", "c", "a"], "vector": [[1.0, 2.0], [1.0], [float("nan"), 1.0], [0.0, 1.0]]}).write_parquet(path)
    message = _error(path)
    assert str(path) in message and "row 2" in message and "1 components" in message and "another length" in message
    pl.DataFrame({"id": ["a", "b", "c", "a"], "vector": [[1.0, 2.0], [1.0, 3.0], [float("nan"), 1.0], [0.0, float("inf")]]}).write_parquet(path)
    message = _error(path)
    assert "row 3" in message and "nan" in message and "not a finite number" in message
    assert "row 4" in message and "repeats an id" in message and "'a'" in message and "inf" in message
    assert "missing" not in message
    message = _error(_frame(), id="doc")
    assert "`doc`" in message and "is not a column" in message
    assert "at least 2" in _error(np.ones((1, 3)))
    assert "has no vector" in _error(pl.DataFrame({"id": ["a", "b"], "vector": [[1.0], None]}))
    assert "2-D matrix" in _error(np.ones(3))


def test_csv_vector_that_is_not_a_json_list_names_its_line(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text('id,vector\na,"[1, 2]"\nb,"1;2"\n')
    message = _error(path)
    assert "line 3" in message and "'1;2'" in message and "JSON list" in message


def test_zero_vectors_are_refused_where_a_cosine_is_needed():
    (one,) = read_embeddings(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])).values()
    with pytest.raises(ef.InputError, match="row 2.*zero vector"):
        one.unit_rows()


def test_pairs_name_their_unknown_ids(tmp_path):
    (one,) = read_embeddings(_frame()).values()
    assert read_pairs(pl.DataFrame({"id_a": ["a", "c"], "id_b": ["b", "d"]}), one).tolist() == [[0, 1], [2, 3]]
    path = tmp_path / "pairs.csv"
    path.write_text("id_a,id_b\na,b\na,zz\n")
    with pytest.raises(ef.InputError) as caught:
        read_pairs(path, one)
    assert "line 3" in str(caught.value) and "'zz'" in str(caught.value)


def test_rows_of_a_second_model_are_named_as_in_the_file(tmp_path):
    path = tmp_path / "two.parquet"
    pl.DataFrame({"id": ["a", "b", "a", "b", "c"], "vector": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 2.0]],
                  "model": ["m1", "m1", "m2", "m2", "m2"]}).write_parquet(path)
    read = read_embeddings(path)
    with pytest.raises(ef.InputError, match="row 4.*zero vector"):
        read["m2"].unit_rows()
    with pytest.raises(ef.InputError, match="row 4.*zero vector"):
        ef.knn_run(read["m1"], read["m2"], k=1)
