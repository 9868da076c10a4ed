"""The driver side of :func:`evalframe.spark.evaluate`: one Spark job, partials merged here.

1. The input tables become one DataFrame: each row keeps its table's columns in a struct column
   of its own (``_run``, ``_qrels``, ``_queries``; the others null) and the unit key as text
   (``_unit``), so tables of any columns and types travel together. The unit key is the
   ``query_id``, or, when a metric has a coarser unit (``post``), that unit's key columns
   (:func:`~evalframe.data.units.partition_keys`, as the buckets on disk): a queries row has
   them, and the run's and the qrels' rows take their query's from the queries table (a join;
   a query of no unit keeps its own ``query_id``, a query of two units is refused in the task).
2. ``repartition(n, _unit).sortWithinPartitions(_unit).mapInArrow(evaluate_partition)``: every
   row of a unit, of every table, lands in one task, contiguous; the task runs the engine's
   kernel on whole units (:mod:`evalframe.spark.tasks`). No per-query Python call
   (``groupBy().applyInArrow`` would make one per unit).
3. The tasks' partials are collected and merged here, then finalised into the usual
   :class:`~evalframe.engine.result.Evaluation`, as in memory. They are small beside the input:
   per slice sums, moments and set-metric states, one row per query of the queries table and
   the per-unit values (units × metrics, what the quantiles and intervals are computed from);
   never the ranking rows. With ``per_unit_path``, Spark also writes the long per-unit values to
   Parquet from the same (persisted) job output, once the partials came back without an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from evalframe.data.schema import load_contract
from evalframe.data.units import QUERY, SYSTEM, partition_keys
from evalframe.engine.kernel import finalise, make_plan, merge
from evalframe.engine.partials import TRACE_KEYS
from evalframe.engine.result import Evaluation
from evalframe.errors import ConfigError, InputError, NO_VALUE, Problem
from evalframe.metrics.base import Metric
from evalframe.spark.tasks import (ERROR, PARTIALS_COLUMNS, TABLE_COLUMNS, UNITS_OF_QUERY, TaskSpec, evaluate_partition, output_schema,
                                   partials_of)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The partition and sort key column of the tagged union (the unit key, as text).
UNIT_KEY = "_unit"
#: The column every table shares (the query unit's key; coarser units are joined on it).
QUERY_ID = "query_id"
#: Separates key columns in the unit key text (a null key value is written as "\x00").
_SEPARATOR = "\x1f"
#: Rows gathered before a task runs the kernel (whole units; a larger unit is taken whole).
DEFAULT_ROWS_PER_CALL = 250_000


def _pyspark():
    try:
        import pyspark.sql.functions as functions
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ConfigError("evalframe.spark needs pyspark: pip install 'evalframe[spark]' (and a Java runtime)") from error
    return functions


def _check_columns(frame: DataFrame, table: str, needed: Iterable[str]) -> None:
    missing = [name for name in needed if name not in frame.columns]
    if missing:
        raise InputError(f"{table} DataFrame", [Problem(None, name, NO_VALUE, "is a required column and is missing") for name in missing],
                         hint=f"the DataFrame has columns {frame.columns}")


def _unit_text(columns: Iterable[str], prefix: str):
    """The unit key as text: ``prefix`` and each key column's value (nulls equal to nulls)."""
    functions = _pyspark()
    values = [functions.coalesce(functions.col(f"`{c}`").cast("string"), functions.lit("\x00")) for c in columns]
    return functions.concat_ws(_SEPARATOR, functions.lit(prefix), *values)


def _tagged(frame: DataFrame, table: str, schemas: Mapping[str, Any], unit_keys: list[str],
            units_of_queries: DataFrame | None) -> DataFrame:
    """``frame``'s rows with the unit key and every table's struct column (only its own non-null).

    ``unit_keys == ["query_id"]``: the key is the query id. Otherwise a table with the key
    columns (the queries table) keys its rows by them, and the others by their query's unit,
    read off ``units_of_queries`` (``_query, _unit`` and how many units the query has); a query
    of no unit keys its rows by its own id."""
    functions = _pyspark()
    structs = []
    for name, column in TABLE_COLUMNS.items():
        if name not in schemas:
            continue
        if name == table:
            structs.append(functions.struct(*(functions.col(f"`{c}`") for c in frame.columns)).alias(column))
        else:
            structs.append(functions.lit(None).cast(schemas[name]).alias(column))
    if unit_keys == [QUERY_ID]:
        return frame.select(functions.col(QUERY_ID).cast("string").alias(UNIT_KEY), *structs)
    if set(unit_keys) <= set(frame.columns):
        return frame.select(_unit_text(unit_keys, "u").alias(UNIT_KEY), functions.lit(None).cast("long").alias(UNITS_OF_QUERY),
                            *structs)
    keyed = frame.select(functions.col(QUERY_ID).cast("string").alias("_query"), *structs)
    joined = keyed.join(units_of_queries, "_query", "left")
    own = functions.concat_ws(_SEPARATOR, functions.lit("q"), functions.col("_query"))
    return joined.select(functions.coalesce(functions.col(UNIT_KEY), own).alias(UNIT_KEY), UNITS_OF_QUERY,
                         *(functions.col(column) for column in TABLE_COLUMNS.values() if column in joined.columns))


def _units_of_queries(queries: DataFrame, unit_keys: list[str]) -> DataFrame:
    """Each query id of the queries table: its unit key (the least, if several) and how many
    different units it belongs to (more than one is refused in the tasks)."""
    functions = _pyspark()
    units = queries.select(functions.col(QUERY_ID).cast("string").alias("_query"), _unit_text(unit_keys, "u").alias(UNIT_KEY))
    return units.groupBy("_query").agg(functions.min(UNIT_KEY).alias(UNIT_KEY),
                                       functions.countDistinct(UNIT_KEY).alias(UNITS_OF_QUERY))


def _exists(spark, path: str) -> bool:
    """Whether ``path`` exists on its file system (as Spark's writers see it: local, HDFS, S3, …)."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return bool(hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(hadoop_path))


def _values_fields(queries: DataFrame | None, plan, unit_keys: list[str]) -> list:
    """The per-unit values' Spark fields: system, query_id, the unit, trace and slice keys a
    queries table has (their own types), then metric, value, skip_reason, unit, subset."""
    from pyspark.sql.types import DoubleType, StringType, StructField

    fields = [StructField(SYSTEM, StringType()), StructField("query_id", StringType())]
    if queries is not None:
        types = {field.name: field.dataType for field in queries.schema.fields}
        for key in dict.fromkeys([*unit_keys, *TRACE_KEYS, *plan.slice_keys]):
            if key in types and key not in (SYSTEM, "query_id"):
                fields.append(StructField(key, types[key]))
    return [*fields, StructField("metric", StringType()), StructField("value", DoubleType()),
            StructField("skip_reason", StringType()), StructField("unit", StringType()), StructField("subset", StringType())]


def _as_the_whole_carries(columns: list[str], merged) -> list:
    """The per-unit values' columns, each key column null on the rows of a unit whose values on
    the whole do not carry it: a slice key constant within the units of one task (a post whose
    criteria are one) but not within those of the whole, as in memory."""
    functions = _pyspark()
    wide_columns: dict[str, set[str]] = {}
    for (_, unit), wide in merged.values.items():
        wide_columns.setdefault(unit, set(wide.columns))
    selected = []
    for name in columns:
        dropped = sorted(unit for unit, carried in wide_columns.items() if name not in carried)
        if name in ("metric", "value", "skip_reason", "unit", "subset") or not dropped:
            selected.append(functions.col(f"`{name}`"))
        else:
            selected.append(functions.when(functions.col("unit").isin(dropped), functions.lit(None)).otherwise(functions.col(f"`{name}`"))
                            .alias(name))
    return selected


def evaluate(
    run: DataFrame,
    qrels: DataFrame,
    metrics: Iterable[str | Metric] | Mapping[str, Iterable[str | Metric]] = (),
    *,
    queries: DataFrame | None = None,
    per_unit_path: str | None = None,
    partitions: int | None = None,
    rows_per_call: int = DEFAULT_ROWS_PER_CALL,
    **options: Any,
) -> Evaluation:
    """Evaluate Spark DataFrames: the same :class:`~evalframe.engine.result.Evaluation` as
    :func:`evalframe.evaluate` on the same rows (summary, CIs, notes), computed by Spark tasks.

    Parameters
    ----------
    run, qrels, queries
        Spark DataFrames with the columns of :func:`evalframe.read_run` (``query_id``, ``doc_id``,
        ``score`` and/or ``rank``, optional ``system``), :func:`evalframe.read_qrels`
        (``query_id``, ``doc_id``, ``relevance``) and, optionally, the queries table (``query_id``,
        ``system``, slice keys, ``label``/``prob`` for set metrics, a weight column). Every row is
        checked by the same contracts as in memory, inside the tasks.
    metrics, **options
        As :func:`evalframe.evaluate`: ``slices``, ``subsets``, ``weight``, ``bootstrap``,
        ``parameters``, ``empty``, ``missing``, ``max_depth``, …
    per_unit_path
        A new folder (local, HDFS, S3, … as Spark writes) where Spark writes the long per-unit
        values (keys, metric, value, skip_reason, unit, subset) as Parquet, from the tasks. An
        existing path is refused before anything runs; nothing is written when a task fails.
        None: not written (the result's ``per_unit_values`` hold them either way).
    partitions
        Spark partitions (tasks) of the job; default ``spark.sql.shuffle.partitions``.
    rows_per_call
        Rows (whole units) a task gathers before it runs the kernel once.

    Units: metrics per query and of coarser units (``post``: the per-post multi-label metrics;
    then the queries table must have the unit's key columns, and each query belongs to one
    unit). A task receives every row of the units it evaluates, of every table, so its partials
    are those of whole units and merge exactly (:meth:`~evalframe.engine.partials.Partials.merge`).
    """
    from pyspark import StorageLevel
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import StructType

    _pyspark()
    plan = make_plan(metrics, **options)
    unit_keys = partition_keys((m.unit for m in plan.metrics), plan.units)
    if rows_per_call < 1:
        raise ConfigError(f"`rows_per_call` must be a whole number >= 1, got {rows_per_call!r}")
    _check_columns(run, "run", ["query_id", "doc_id"])
    _check_columns(qrels, "qrels", ["query_id", "doc_id", "relevance"])
    if queries is not None:
        _check_columns(queries, "queries", ["query_id"])
    if unit_keys != [QUERY_ID]:
        coarse = sorted({m.unit for m in plan.metrics if m.unit != QUERY})
        if queries is None:
            raise ConfigError(f"evalframe.spark: metrics per {', '.join(coarse)} need a queries DataFrame with the unit's key "
                              f"columns {unit_keys} (each query's rows go where its unit goes)")
        _check_columns(queries, "queries", unit_keys)
    spark = run.sparkSession
    n_partitions = partitions or int(spark.conf.get("spark.sql.shuffle.partitions"))
    if n_partitions < 1:
        raise ConfigError(f"`partitions` must be a whole number >= 1, got {partitions!r}")
    if per_unit_path is not None and _exists(spark, per_unit_path):
        raise ConfigError(f"per_unit_path {per_unit_path!r} exists: give a new folder (nothing of yours is replaced)")

    tables = {"run": run, "qrels": qrels, **({"queries": queries} if queries is not None else {})}
    schemas = {name: frame.schema for name, frame in tables.items()}
    units_of_queries = _units_of_queries(queries, unit_keys) if unit_keys != [QUERY_ID] else None
    union = None
    for name, frame in tables.items():
        tagged = _tagged(frame, name, schemas, unit_keys, units_of_queries)
        union = tagged if union is None else union.unionByName(tagged)

    systems = None
    if queries is None:  # every system × every judged query, as in memory: the systems come from the whole run
        if SYSTEM in run.columns:
            systems = tuple(sorted(row[0] for row in run.select(SYSTEM).distinct().collect()))
        else:
            systems = (load_contract("ranking").columns[SYSTEM].default,)

    values_fields = _values_fields(queries, plan, unit_keys) if per_unit_path is not None else None
    values_schema = to_arrow_schema(StructType(values_fields)) if values_fields is not None else None
    spec = TaskSpec(plan=plan, keys=(UNIT_KEY,), systems=systems, min_rows=rows_per_call, values_schema=values_schema)
    out_schema = from_arrow_schema(output_schema(values_schema))
    with warnings.catch_warnings():
        # pyspark 4 warns about pandas >= 3 when a map function is declared; mapInArrow uses Arrow only.
        warnings.filterwarnings("ignore", message=".*PySpark does not yet fully support pandas", category=FutureWarning)
        output = (
            union.repartition(n_partitions, UNIT_KEY)
            .sortWithinPartitions(UNIT_KEY)
            .mapInArrow(partial(evaluate_partition, spec=spec), out_schema)
        )
    functions = _pyspark()
    carried = functions.col(PARTIALS_COLUMNS[0]).isNotNull() | functions.col(ERROR).isNotNull()
    if per_unit_path is not None:
        output = output.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        parts = partials_of(output.where(carried).select(*PARTIALS_COLUMNS, ERROR).toArrow())
        if not parts:
            raise InputError("run DataFrame", Problem(None, None, NO_VALUE, "no rows to evaluate"))
        merged = merge(parts)
        if per_unit_path is not None:
            values = output.where(~carried).drop(*PARTIALS_COLUMNS, ERROR)
            values.select(*_as_the_whole_carries(values.columns, merged)).write.parquet(per_unit_path)
    finally:
        if per_unit_path is not None:
            output.unpersist()
    return finalise(merged)
