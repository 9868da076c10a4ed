"""The task side of evalframe.spark without a JVM: Arrow batches regrouped into whole units, and
the mapInArrow function's partials merged and finalised into the in-memory result."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.engine.kernel import finalise, make_plan, merge
from evalframe.errors import InputError
from evalframe.spark.batches import complete_units
from evalframe.spark.tasks import TABLE_COLUMNS, TaskSpec, evaluate_partition, partials_of
from spark_data import (BOOTSTRAP, CLASSIFICATION, POST_METRICS, POST_SLICES, RANKING, SLICES, assert_same_replicates,
                        assert_same_summary, generated, generated_posts, in_memory)


def _batches(keys: list[int], cuts: list[int]) -> list[pa.RecordBatch]:
    table = pa.table({"_unit": pa.array([f"u{k:03d}" for k in keys]), "row": pa.array(range(len(keys)))})
    bounds = sorted({0, len(keys), *(c for c in cuts if 0 < c < len(keys))})
    return [batch for start, stop in zip(bounds, bounds[1:]) for batch in table.slice(start, stop - start).to_batches()]


@given(sizes=st.lists(st.integers(1, 9), min_size=1, max_size=12), cuts=st.lists(st.integers(0, 100), max_size=20),
       min_rows=st.integers(1, 15))
@settings(max_examples=30)
def test_complete_units_keep_every_unit_whole(sizes, cuts, min_rows):
    keys = [unit for unit, size in enumerate(sizes) for _ in range(size)]
    tables = list(complete_units(_batches(keys, cuts), ["_unit"], min_rows))
    rows = [row for table in tables for row in table.column("row").to_pylist()]
    assert rows == list(range(len(keys)))  # every row once, in order
    seen = [set(table.column("_unit").to_pylist()) for table in tables]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:])  # no unit in two tables
    # a table is cut once min_rows rows are pending, before the unit that was still open then
    for table, following in zip(tables, tables[1:]):
        first = following.column("_unit")[0].as_py()
        assert table.num_rows + following.column("_unit").to_pylist().count(first) >= min_rows


def test_a_unit_longer_than_many_batches_is_carried_whole():
    keys = [0] * 3 + [1] * 40 + [2]
    tables = list(complete_units(_batches(keys, list(range(0, 44, 3))), ["_unit"], 2))
    assert [t.column("_unit").to_pylist() for t in tables] == [["u000"] * 3, ["u001"] * 40, ["u002"]]


def _struct(frame: pl.DataFrame) -> pa.StructArray:
    table = frame.to_arrow()
    return pa.StructArray.from_arrays([column.combine_chunks() for column in table.columns], names=table.column_names)


def _tagged_partitions(data: dict[str, pl.DataFrame], n_partitions: int, batch_rows: int,
                       unit_of_query: dict[str, str] | None = None) -> list[list[pa.RecordBatch]]:
    """What the driver's repartition + sortWithinPartitions hands the tasks: the tables' rows
    tagged by struct column, split by a hash of the unit key (the query id, or the query's unit
    from ``unit_of_query``), sorted, cut into small batches."""
    pieces = []
    for name, frame in data.items():
        query_ids = frame.get_column("query_id").to_list()
        units = [unit_of_query.get(q, f"q:{q}") for q in query_ids] if unit_of_query is not None else query_ids
        columns = {"_unit": pa.array(units)}
        for other, column in TABLE_COLUMNS.items():
            if other in data:
                struct = _struct(frame) if other == name else pa.nulls(frame.height, _struct(data[other].head(0)).type)
                columns[column] = struct
        pieces.append(pa.table(columns))
    union = pl.from_arrow(pa.concat_tables(pieces)).with_columns(
        _part=pl.col("_unit").hash(seed=1) % n_partitions).sort("_unit", maintain_order=True)
    return [union.filter(pl.col("_part") == part).drop("_part").to_arrow().to_batches(max_chunksize=batch_rows)
            for part in range(n_partitions)]


def _task_output(partitions, spec) -> pa.Table:
    return pa.Table.from_batches([batch for batches in partitions for batch in evaluate_partition(iter(batches), spec)])


def test_tasks_on_small_batches_give_the_in_memory_result():
    data = generated(n_queries=40)
    options = {"slices": SLICES, "weight": "w", "bootstrap": BOOTSTRAP}
    plan = make_plan(RANKING + CLASSIFICATION, **options)
    spec = TaskSpec(plan=plan, keys=("_unit",), systems=None, min_rows=30, values_schema=None)
    parts = partials_of(_task_output(_tagged_partitions(data, 3, batch_rows=5), spec))
    assert len(parts) == 3
    ours = finalise(merge(parts))
    theirs = in_memory(data, RANKING + CLASSIFICATION, queries=data["queries"], **options)
    assert_same_summary(ours.summary, theirs.summary)
    assert_same_replicates(ours.replicates, theirs.replicates)


def test_tasks_on_small_batches_give_the_in_memory_result_per_post():
    """Per-post metrics: the post is the unit key, every table's rows go where their query's
    post goes; posts straddle batches and chunks hold posts without judgments or rankings."""
    data = generated_posts(n_posts=16)
    options = {"slices": POST_SLICES, "weight": "w", "bootstrap": BOOTSTRAP, "missing": "zero"}
    metrics = [*POST_METRICS, "recall@5", "auroc"]
    spec = TaskSpec(plan=make_plan(metrics, **options), keys=("_unit",), systems=None, min_rows=6, values_schema=None)
    posts = dict(data["queries"].select("query_id", "post_id").unique().iter_rows())
    parts = partials_of(_task_output(_tagged_partitions(data, 3, batch_rows=4, unit_of_query=posts), spec))
    ours = finalise(merge(parts))
    theirs = in_memory(data, metrics, queries=data["queries"], **options)
    assert_same_summary(ours.summary, theirs.summary)
    assert_same_replicates(ours.replicates, theirs.replicates)
    # the same notes, their counts summed over the parts; in the order the parts first give them (a part without the
    # query absent from the queries table says first what the others say later)
    assert sorted(ours.notes) == sorted(theirs.notes) and any("not in the queries table" in note for note in ours.notes)


def test_tasks_without_queries_evaluate_every_system_of_the_run():
    """A partition where one system ranks nothing still evaluates that system's judged queries
    (``missing="zero"`` scores them 0), as the whole would."""
    data = generated(n_queries=12)
    data = {"run": data["run"].filter(~((pl.col("system") == "dense") & (pl.col("query_id") < "q0006"))), "qrels": data["qrels"]}
    plan = make_plan(["recall@10", "ndcg@10"], missing="zero")
    spec = TaskSpec(plan=plan, keys=("_unit",), systems=("bm25", "dense"), min_rows=1, values_schema=None)
    partitions = [[b for b in _tagged_partitions(data, 1, 1000)[0]]]
    first_half = pl.from_arrow(pa.Table.from_batches(partitions[0]))
    split = [first_half.filter(pl.col("_unit") < "q0006").to_arrow().to_batches(),
             first_half.filter(pl.col("_unit") >= "q0006").to_arrow().to_batches()]
    ours = finalise(merge(partials_of(_task_output(split, spec))))
    theirs = in_memory(data, ["recall@10", "ndcg@10"], missing="zero")
    assert_same_summary(ours.summary, theirs.summary)
    assert ours.notes == theirs.notes


def test_an_error_in_a_task_comes_back_as_evalframes_own():
    data = generated(n_queries=6)
    data["run"] = data["run"].with_columns(score=pl.when(pl.col("doc_id") == "d3").then(np.inf).otherwise(pl.col("score")))
    spec = TaskSpec(plan=make_plan(["mrr"]), keys=("_unit",), systems=("bm25", "dense"), min_rows=10, values_schema=None)
    output = _task_output(_tagged_partitions({"run": data["run"], "qrels": data["qrels"]}, 2, 4), spec)
    with pytest.raises(InputError, match="score") as raised:
        partials_of(output)
    message = str(raised.value)
    # a task's rows are named by their keys (a row number within a task would mean nothing)
    assert message.startswith("run DataFrame: ") and "column `score`: is not a finite number (value: inf)" in message
    assert "system 'bm25', query 'q0000', doc 'd3'" in message or "query 'q0" in message
