"""What a Spark task runs (``mapInArrow``): complete units in, per-unit values and partials out.

:func:`evaluate_partition` receives one partition of the tagged union of the input tables
(:mod:`evalframe.spark.driver` builds it), sorted by the unit key. It regroups the Arrow
batches into tables of whole units (:func:`~evalframe.spark.batches.complete_units`; a table
with nothing to evaluate, only rows the engine counts as ignored, joins a neighbour), splits
each back into the evaluation's tables (run, qrels, queries) and runs the engine's kernel on
them (:func:`evalframe.engine.kernel.evaluate_part`); the partition's partials merge
(:func:`~evalframe.engine.kernel.merge`). It yields Arrow batches of one schema
(:func:`output_schema`):

- the per-unit values (long form) of every chunk, when the driver asked for them;
- the partition's merged partials, serialised (:func:`~evalframe.engine.kernel.to_arrow`: the
  ``part, kind, key, payload`` columns);
- instead, when anything raises, one row carrying the error (``_error``, pickled): the driver
  raises evalframe's own exception (class and message) rather than Spark's Java stack trace.

Nothing here talks to Spark: the function reads and writes Arrow only, so it runs (and is
tested) without a cluster, and on the executors it needs only evalframe and its dependencies.
"""

from __future__ import annotations

import dataclasses
import pickle
import re
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from evalframe.data.schema import load_contract
from evalframe.data.tables import Tables
from evalframe.engine.kernel import PARTIALS_SCHEMA, evaluate_part, from_arrow, merge, to_arrow
from evalframe.engine.partials import Partials
from evalframe.engine.per_unit import long_values
from evalframe.engine.plan import Plan
from evalframe.errors import NO_VALUE, EvalframeError, InputError, Problem
from evalframe.metrics.base import SetMetric
from evalframe.spark.batches import complete_units

#: The tagged union's column of each input table (a struct of the table's own columns).
TABLE_COLUMNS = {"run": "_run", "qrels": "_qrels", "queries": "_queries"}
#: The tagged union's column, with coarser units, of how many units a run or qrels row's query
#: belongs to in the queries table (more than one is refused: its rows would go to one only).
UNITS_OF_QUERY = "_units_of_query"
#: The output's column that carries a task's error (binary, null on every other row).
ERROR = "_error"
#: The output's columns of serialised partials (null on per-unit value rows).
PARTIALS_COLUMNS = tuple(PARTIALS_SCHEMA.names)


@dataclass(frozen=True)
class TaskSpec:
    """What every task needs, shipped with the function (pickled once per task).

    ``keys``: the partition's sort key columns (the unit key); ``systems``: every system of the
    run, when no queries table is given (the evaluated pairs are then every system × every
    judged query of the task, as for the whole); ``min_rows``: rows gathered before a kernel
    call; ``values_schema``: the per-unit values' Arrow schema, None when not asked for.
    """

    plan: Plan
    keys: tuple[str, ...]
    systems: tuple[str, ...] | None
    min_rows: int
    values_schema: pa.Schema | None


def output_schema(values_schema: pa.Schema | None) -> pa.Schema:
    """The tasks' output: the per-unit values' columns (if any), the partials' columns
    (``part, kind, key, payload``), then ``_error``; every column nullable (a row is one kind)."""
    fields = list(values_schema) if values_schema is not None else []
    carried = [field.with_nullable(True) for field in PARTIALS_SCHEMA]
    return pa.schema([*fields, *carried, pa.field(ERROR, pa.binary())])


def _tables_of(chunk: pa.Table) -> Tables:
    """The evaluation's tables of a chunk of the tagged union: each table's rows, its own columns."""
    from evalframe.io import read_qrels, read_run  # imported where used

    frame = pl.from_arrow(chunk)
    if UNITS_OF_QUERY in frame.columns:
        _check_one_unit_per_query(frame)
    parts = {
        name: frame.filter(pl.col(column).is_not_null()).select(pl.col(column).struct.unnest())
        for name, column in TABLE_COLUMNS.items() if column in frame.columns
    }
    run = _read(parts["run"], read_run, "ranking", "run")
    qrels = _read(parts["qrels"], read_qrels, "judgments", "qrels")
    return Tables.from_run(run, qrels, parts.get("queries"), source="run DataFrame")


def _read(frame: pl.DataFrame, reader, contract: str, table: str) -> pl.DataFrame:
    """``reader(frame)`` (errors naming rows by their keys); a chunk without rows of the table
    (units with no judgment, or absent from the run) gets it empty, in the contract's types."""
    if frame.height:
        with _rows_named_by_key(frame, table):
            return reader(frame)
    columns = load_contract(contract).columns
    return frame.with_columns(
        *(pl.col(name).cast(column.polars_dtype) for name, column in columns.items() if name in frame.columns),
        *(pl.lit(None, dtype=column.polars_dtype).alias(name) for name, column in columns.items()
          if name not in frame.columns and column.default is not None),
    )


def _check_one_unit_per_query(frame: pl.DataFrame) -> None:
    """Refuse run and qrels rows whose query belongs to several units (e.g. two posts, for two
    systems): they can be sent to one unit's task only."""
    shared = frame.filter(pl.col(UNITS_OF_QUERY) > 1)
    if shared.is_empty():
        return
    query_id = pl.coalesce([pl.col(TABLE_COLUMNS[name]).struct.field("query_id").cast(pl.String) for name in ("run", "qrels")])
    found = shared.select(query_id.alias("query_id"), UNITS_OF_QUERY).unique(maintain_order=True).head(20)
    raise InputError("queries DataFrame", [
        Problem(f"query {query_id!r}", None, NO_VALUE, f"is in {n} different units (the queries table's rows of its systems give "
                "different unit keys); evalframe.spark sends a query's run and qrels rows to one unit: give it one unit in every system")
        for query_id, n in found.iter_rows()])


_ROW = re.compile(r"row (\d+)")


@contextmanager
def _rows_named_by_key(frame: pl.DataFrame, table: str):
    """Re-raise a reader's error with each ``row N`` (a row of this task's rows, meaningless to
    the user) named by the row's keys instead: ``query 'q7', doc 'd3'``."""
    try:
        yield
    except InputError as error:
        keys = [key for key in ("system", "query_id", "doc_id") if key in frame.columns]

        def named(problem: Problem) -> Problem:
            found = _ROW.fullmatch(problem.location or "")
            if not found or int(found.group(1)) > frame.height:
                return problem
            row = frame.row(int(found.group(1)) - 1, named=True)
            return dataclasses.replace(problem, location=", ".join(f"{key.removesuffix('_id')} {row[key]!r}" for key in keys))

        raise InputError(f"{table} DataFrame", [named(p) for p in error.problems], hint=error.hint) from None


def _value_tables(partials: Partials, schema: pa.Schema) -> Iterator[pa.Table]:
    """The partials' per-unit values, long (as the result's ``per_unit_values``): the columns of
    ``schema`` they have (the others are padded with nulls by :func:`_padded`)."""
    plan = partials.plan
    for (g, unit), wide in partials.values.items():
        group = plan.groups[g]
        metrics = [m for m in group.metrics if m.unit == unit and not isinstance(m, SetMetric)]
        keys = [name for name in schema.names if name in wide.columns]
        yield long_values(wide, metrics, keys).with_columns(unit=pl.lit(unit), subset=pl.lit(group.subset.name)).to_arrow()


def _padded(table: pa.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``table``'s rows in ``schema``: its own columns, null in every other column."""
    columns = [table.column(field.name).cast(field.type) if field.name in table.column_names
               else pa.nulls(table.num_rows, field.type) for field in schema]
    yield from pa.Table.from_arrays(columns, schema=schema).to_batches()


def evaluate_partition(batches: Iterable[pa.RecordBatch], spec: TaskSpec) -> Iterator[pa.RecordBatch]:
    """The task function of ``mapInArrow`` (module docstring)."""
    schema = output_schema(spec.values_schema)
    parts: list[Partials] = []
    try:
        for chunk in _evaluable(complete_units(batches, spec.keys, spec.min_rows)):
            partials = evaluate_part(_tables_of(chunk), spec.plan, systems=spec.systems)
            if spec.values_schema is not None:
                for values in _value_tables(partials, spec.values_schema):
                    yield from _padded(values, schema)
            parts.append(partials)
        serialised = to_arrow(merge(parts)) if parts else None
    except Exception as error:  # noqa: BLE001 — every failure goes to the driver, raised there as it is
        yield from _padded(pa.table({ERROR: pa.array([_pickled_error(error)], pa.binary())}), schema)
        return
    if serialised is not None:
        yield from _padded(serialised, schema)


def _evaluable(chunks: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """The chunks (whole units, in key order), each holding something the kernel evaluates: a
    queries row (with a queries table), else a judgment. A chunk of none (rows of queries absent
    from the queries table, or never judged: the engine only counts them, in notes) joins the
    next such chunk, or the last at the end of the partition; one in a partition of no other
    rows is refused (the engine cannot count rows it does not evaluate alone)."""
    ready: pa.Table | None = None
    waiting: list[pa.Table] = []
    for chunk in chunks:
        if not _evaluates_something(chunk):
            waiting.append(chunk)
            continue
        if ready is not None:
            yield ready
        ready, waiting = pa.concat_tables([*waiting, chunk]), []
    if ready is None and waiting:
        orphans = pa.concat_tables(waiting)
        ids = pl.from_arrow(orphans).select(pl.coalesce(pl.col(c).struct.field("query_id").cast(pl.String) for c in
                                                        (TABLE_COLUMNS["run"], TABLE_COLUMNS["qrels"]))).to_series().unique()
        raise InputError("run DataFrame", Problem(None, "query_id", NO_VALUE,
                         f"a Spark partition holds only rows of queries that are not evaluated ({ids.len()} queries absent from the "
                         f"queries table or never judged, e.g. {ids.sort().head(3).to_list()}), whose rows the engine counts only "
                         "beside evaluated ones"), hint="give `partitions=` fewer partitions, or leave those rows out")
    if ready is not None:
        yield pa.concat_tables([ready, *waiting])


def _evaluates_something(chunk: pa.Table) -> bool:
    column = TABLE_COLUMNS["queries"] if TABLE_COLUMNS["queries"] in chunk.column_names else TABLE_COLUMNS["qrels"]
    return chunk.column(column).null_count < chunk.num_rows


def _pickled_error(error: Exception) -> bytes:
    """evalframe's own errors (bad input, bad configuration) as they are, to be raised on the
    driver with their class and message; any other error (a bug) as a RuntimeError with its
    type, text and the task's traceback (the driver's traceback would not show where it arose)."""
    if isinstance(error, EvalframeError):
        try:
            payload = pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # noqa: S301 (our own bytes, just made)
            return payload
        except Exception:  # noqa: BLE001, S110 — one that does not round-trip is sent as text, below
            pass
    text = "".join(traceback.format_exception(error))
    return pickle.dumps(RuntimeError(f"a Spark task failed: {type(error).__name__}: {error}\n{text}"))


def partials_of(table: pa.Table) -> list[Partials]:
    """The partials of the collected rows (``part, kind, key, payload, _error``); the first
    task error found is raised here, as the task raised it."""
    errors = [payload for payload in table.column(ERROR).to_pylist() if payload is not None]
    if errors:
        raise pickle.loads(errors[0])  # noqa: S301 (bytes our own tasks wrote)
    carried = table.filter(pa.compute.is_null(table.column(ERROR))).select(list(PARTIALS_COLUMNS))
    return from_arrow(carried.cast(PARTIALS_SCHEMA)) if carried.num_rows else []
