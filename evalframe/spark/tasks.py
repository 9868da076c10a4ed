"""What a Spark task runs (``mapInArrow``): complete units in, per-unit values and partials out.

:func:`evaluate_partition` receives one partition of the tagged union of the input tables
(:mod:`evalframe.spark.evaluate` builds it), sorted by the unit key. It regroups the Arrow
batches into tables of whole units (:func:`~evalframe.spark.batches.complete_units`), splits
each back into the evaluation's tables (run, qrels, queries), runs the engine's kernel on
them and merges the partials of the partition. It yields Arrow batches of one schema:

- the per-unit values (long form) of every chunk, when the driver asked for them;
- one row carrying the partition's merged partials, serialised (``_partials``);
- instead, when the kernel raises, one row carrying the error (``_error``): the driver raises
  evalframe's own exception (class and message) rather than Spark's Java stack trace.

Nothing here talks to Spark: the function reads and writes Arrow only, so it runs (and is
tested) without a cluster, and on the executors it needs only evalframe and its dependencies.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from evalframe.data.tables import Tables
from evalframe.engine.partials import Partials, compute_partials
from evalframe.engine.per_unit import long_values
from evalframe.engine.plan import Plan
from evalframe.metrics.base import SetMetric
from evalframe.spark.batches import complete_units

#: The tagged union's column of each input table (a struct of the table's own columns).
TABLE_COLUMNS = {"run": "_run", "qrels": "_qrels", "queries": "_queries"}
#: The output's columns that carry the partials and an error (binary, null on value rows).
PARTIALS, ERROR = "_partials", "_error"


@dataclass(frozen=True)
class TaskSpec:
    """What every task needs, shipped with the function (pickled once per task).

    ``keys``: the partition's sort key columns (the unit key); ``systems``: every system of the
    run, when no queries table is given (a task builds its queries as systems × its judged
    queries, as the whole's would be: a judged query no row of a task ranks is still evaluated);
    ``values_schema``: the per-unit values' Arrow schema, None when they are not asked for.
    """

    plan: Plan
    keys: tuple[str, ...]
    systems: tuple[str, ...] | None
    min_rows: int
    values_schema: pa.Schema | None


def output_schema(values_schema: pa.Schema | None) -> pa.Schema:
    """The tasks' output: the per-unit values' columns (if any), then ``_partials`` and ``_error``."""
    fields = list(values_schema) if values_schema is not None else []
    return pa.schema([*fields, pa.field(PARTIALS, pa.binary()), pa.field(ERROR, pa.binary())])


def _tables_of(chunk: pa.Table, spec: TaskSpec) -> Tables:
    """The evaluation's tables of a chunk of the tagged union: each table's rows, its own columns."""
    frame = pl.from_arrow(chunk)
    parts = {}
    for name, column in TABLE_COLUMNS.items():
        if column in frame.columns:
            parts[name] = frame.filter(pl.col(column).is_not_null()).select(pl.col(column).struct.unnest())
    from evalframe.io import read_qrels, read_run  # imported where used (readers are not needed to plan)

    run, qrels = read_run(parts["run"]), read_qrels(parts["qrels"])
    queries = parts.get("queries")
    if queries is None and spec.systems is not None:
        judged = qrels.select(pl.col("query_id").unique(maintain_order=True))
        queries = pl.DataFrame({"system": list(spec.systems)}, schema={"system": run.schema["system"]}).join(judged, how="cross")
    return Tables.from_run(run, qrels, queries, source="run")


def _value_batches(partials: Partials, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The partials' per-unit values, long (as the result's ``per_unit_values``), in ``schema``."""
    plan = partials.plan
    for (g, unit), wide in partials.values.items():
        group = plan.groups[g]
        metrics = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
        keys = [name for name in schema.names if name in wide.columns]
        long = long_values(wide, metrics, keys).with_columns(unit=pl.lit(unit), subset=pl.lit(group.subset.name))
        missing = [field for field in schema if field.name not in long.columns]
        table = long.to_arrow()
        for field in missing:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
        yield from table.select(schema.names).cast(schema).to_batches()


def _single_row(schema: pa.Schema, column: str, payload: bytes) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([payload if field.name == column else None], type=field.type) for field in schema], schema=schema
    )


def evaluate_partition(batches: Iterable[pa.RecordBatch], spec: TaskSpec) -> Iterator[pa.RecordBatch]:
    """The task function of ``mapInArrow`` (module docstring)."""
    schema = output_schema(spec.values_schema)
    merged: Partials | None = None
    try:
        for chunk in complete_units(batches, spec.keys, spec.min_rows):
            partials = compute_partials(_tables_of(chunk, spec), spec.plan)
            if spec.values_schema is not None:
                yield from _value_batches(partials, spec.values_schema)
            merged = partials if merged is None else merged.merge(partials)
    except Exception as error:  # noqa: BLE001 — every failure goes to the driver as evalframe's own error
        yield _single_row(schema, ERROR, _pickled_error(error))
        return
    if merged is not None:
        yield _single_row(schema, PARTIALS, pickle.dumps(merged, protocol=pickle.HIGHEST_PROTOCOL))


def _pickled_error(error: Exception) -> bytes:
    """The error itself when it pickles (evalframe's errors do), else its type, text and traceback."""
    try:
        payload = pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(payload)
        return payload
    except Exception:  # noqa: BLE001 — an exception that does not round-trip is sent as text
        text = "".join(traceback.format_exception(error))
        return pickle.dumps(RuntimeError(f"a Spark task failed: {type(error).__name__}: {error}\n{text}"))


def partials_of(rows: Sequence[tuple[bytes | None, bytes | None]]) -> list[Partials]:
    """The partials of the collected ``(_partials, _error)`` rows; a task's error is raised here."""
    for _, error in rows:
        if error is not None:
            raise pickle.loads(error)
    return [pickle.loads(payload) for payload, _ in rows if payload is not None]
