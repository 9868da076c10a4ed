"""A pipeline's input out of core (``execution: {buckets: …}``, ``--buckets``): scanned, split by
unit into bucket files, read and evaluated bucket by bucket — never held whole.

    input (file, folder or glob; CSV, Parquet, NDJSON) ──scan──▶ the first queries' rows: the
    reader's tables ──▶ preflight (with every system, one streaming pass) ──▶ rows hashed by unit key
    into N bucket files (streaming sink) ──▶ per bucket: the format's reader (the contract,
    every check of the eager read) ──▶ the kernel ──▶ partials merged ──▶ the result

It serves the formats with one input row per (system, query) (:data:`evalframe.io.readers.ROW_READERS`:
``per_query``, ``retrieval_results``, ``scores``), whose rows split by query (or by a coarser
unit's key, e.g. ``post_id``) into parts the reader reads on its own, with the checks that span
rows (one row per system and query, the same gold list in every system) inside a part, since a
query's rows all fall in one bucket. The other formats, and pipelines with a metric that asks
an LLM judge, are read whole and then bucketed (:func:`evalframe.engine.evaluation.run`).

**What is checked before anything is computed**: the pipeline against the input's columns and
systems (:func:`evalframe.pipeline.preflight.preflight` on the reader's tables of every row of
the queries among the first :data:`HEAD_ROWS` rows, and the systems of every row in order of
first appearance). Each
bucket's rows then pass the reader's contract as they are read, and the bootstrap unit's
consistency is checked there (it spans only whole units). An error in any bucket stops the run
before anything is written (exit 2) and names the file, line, column and value, as the eager
reader does; it lists the problems of that bucket. ``run.json``'s row counts (the input's
rows, the ranking's and the judgments') are added up bucket by bucket as the buckets are read.

**The dynamic-K γ sweep** runs bucket by bucket too: each bucket's queries get every γ's K and
counts (:func:`~evalframe.analyses.dynamic_k_sweep.sweep_queries`, from that bucket's ranking
and judgments alone), the sweep's engine pass gives the bucket's partials (their per-unit values
on disk), and the merged partials give the sweep table of the in-memory run.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from evalframe._progress import step
from evalframe.analyses.dynamic_k_sweep import SweepSetup, sweep_plan, sweep_queries, sweep_setup, sweep_table
from evalframe.data.units import partition_keys
from evalframe.engine.buckets import (bucket_folder, check_buckets, choose_buckets, parse_memory, read_bucket,
                                      run_buckets, sink_buckets, spill_values)
from evalframe.engine.evaluation import finalize
from evalframe.engine.partials import evaluate_part, merge
from evalframe.errors import ConfigError, InputError
from evalframe.io.readers import ROW_READERS, RowReader
from evalframe.io.scan import FILE_COLUMN, ROW_COLUMN, RowScan, scan_rows
from evalframe.metrics.judged import is_judged, prepare_metrics
from evalframe.pipeline.preflight import check_part, preflight

if TYPE_CHECKING:
    from evalframe.data.tables import Tables
    from evalframe.engine.plan import Plan
    from evalframe.engine.result import Evaluation
    from evalframe.pipeline.spec import PipelineSpec

#: The queries of the first rows are read before the split, to check the pipeline against the input.
HEAD_ROWS = 1_000
#: Rows per row group of the bucket files: an input row holds whole lists as text (kilobytes), so
#: the split's writers buffer a few MB per bucket (measured on 586 MB of per_query CSV in 28
#: buckets: peak RSS of the split 950 MB with Polars' default row groups, 483 MB with 4,096 rows).
SPLIT_ROW_GROUP = 4_096
_ROWS = "rows"
#: The folder of the γ sweep's per-unit values inside the bucket folder.
_SWEEP = "_sweep"


def scans_input(pipeline: PipelineSpec, source, samples=None) -> bool:
    """Whether the pipeline's input is read out of core: ``execution.buckets`` set, a format
    read row by row, an input given as a path (a file, folder or glob), and no metric asking
    an LLM judge (it asks about the whole input at once, and run.json counts its calls)."""
    buckets = (pipeline.execution or {}).get("buckets")
    return (buckets is not None and pipeline.input.format in ROW_READERS and samples is None
            and isinstance(source, (str, Path)) and not any(is_judged(m) for m in pipeline.plan.metrics))


def run_scanned(pipeline: PipelineSpec, source: str | Path) -> tuple[PipelineSpec, Evaluation, int]:
    """The pipeline adapted to its input (preflight), its evaluation, and the input's row count,
    the input read bucket by bucket (module docstring)."""
    execution = dict(pipeline.execution or {})
    buckets = check_buckets(execution.get("buckets"), key="execution.buckets")
    budget = parse_memory(execution.get("memory"), key="execution.memory")
    pipeline, rows = checked_scan(pipeline, source)
    spec, reader = pipeline.input, ROW_READERS[pipeline.input.format]
    plan = replace(pipeline.plan, about={**pipeline.plan.about, "outputs": pipeline.outputs})
    names = rows.frame.collect_schema().names()
    key = _raw_key(reader, partition_keys((m.unit for m in plan.metrics), plan.units), names, spec.columns)
    n = choose_buckets(buckets, rows.size, budget)
    counts = dict.fromkeys(("rows", "ranking", "judgments"), 0)  # the input tables' rows, added bucket by bucket
    sweep, sweep_parts = None, []  # the γ sweep's parameters and plan (its defaults read the queries' columns), its parts

    def evaluate_bucket(bucket: int) -> tuple[object, list[str]]:
        nonlocal sweep
        raw = read_bucket(folder, _ROWS, bucket, schema).sort(FILE_COLUMN, ROW_COLUMN)
        if raw.is_empty():
            return None, []
        tables = _read(rows, reader, spec, raw)
        check_part(pipeline, tables)
        for name, count in input_rows(tables).items():
            counts[name] += count
        if pipeline.dynamic_k_sweep is not None:  # the γ sweep's partials of this bucket, its per-unit values on disk
            sweep = sweep or _sweep(pipeline, tables.queries.columns)
            part = evaluate_part(sweep_queries(tables, sweep[0]), sweep[1])
            sweep_parts.append(spill_values(part, folder / _SWEEP, bucket))
        return evaluate_part(tables, plan), []

    with bucket_folder(execution.get("bucket_dir")) as folder:
        schema = rows.frame.collect_schema()
        with step(f"splitting the input into {n} bucket{'s' if n != 1 else ''}"):
            try:
                sink_buckets(rows.frame, folder / _ROWS, key, n, row_group_size=SPLIT_ROW_GROUP)
            except pl.exceptions.PolarsError as error:
                raise rows.read_error(error) from None
        evaluation = run_buckets(n, evaluate_bucket, folder, finish=finalize)
        if sweep is not None:
            evaluation = evaluation.with_tables(dynamic_k_sweep=sweep_table(finalize(merge(sweep_parts)).summary, sweep[0]))
    n_rows = counts.pop("rows")
    return pipeline, replace(evaluation, input_rows=counts), n_rows


def input_rows(tables: Tables) -> dict[str, int]:
    """The row counts ``run.json`` gives of a run's input (``rows``: the input file's;
    ``ranking``, ``judgments``: the reader's tables'): each adds up over parts holding whole
    queries, since the reader's tables of a query come from that query's rows alone."""
    return {"rows": tables.n_rows, "ranking": tables.n_ranking_rows, "judgments": tables.judgments.height}


def checked_scan(pipeline: PipelineSpec, source: str | Path) -> tuple[PipelineSpec, RowScan]:
    """The pipeline adapted to its input by :func:`~evalframe.pipeline.preflight.preflight`
    (module docstring: the first queries' rows, every system), and the input's scan; nothing
    is split or computed (``evalframe check-pipeline … --buckets`` stops here)."""
    spec, reader = pipeline.input, ROW_READERS[pipeline.input.format]
    rows = scan_rows(source, separator=spec.separator)
    head = _collected(rows, _head(rows, reader, spec.columns))
    tables = _read(rows, reader, spec, head)
    pipeline = preflight(pipeline, tables, systems=_systems(rows, reader, spec.columns))
    prepare_metrics(pipeline.plan.metrics, tables)  # e.g. a model not on disk: an error before the split
    return pipeline, rows


def _head(rows: RowScan, reader: RowReader, columns) -> pl.LazyFrame:
    """Every row of the queries among the first :data:`HEAD_ROWS` rows (one streaming pass), so
    that the reader's checks across a query's rows see them all, as when it reads the file whole."""
    names = rows.frame.collect_schema().names()
    try:
        query = _raw_key(reader, ["query_id"], names, columns)
    except ConfigError:  # a column the mapping names is missing: the reader says so
        return rows.frame.head(HEAD_ROWS)
    first = rows.frame.head(HEAD_ROWS).select(query).unique()
    return rows.frame.join(first, on=query, how="semi", nulls_equal=True, maintain_order="left")


def _collected(rows: RowScan, frame: pl.LazyFrame) -> pl.DataFrame:
    try:
        return frame.collect()
    except pl.exceptions.PolarsError as error:
        raise rows.read_error(error) from None


def _read(rows: RowScan, reader: RowReader, spec, raw: pl.DataFrame) -> Tables:
    """The reader's tables of ``raw`` (rows of the scan); its errors name the scan's files and lines."""
    try:
        return reader.read(raw.drop(FILE_COLUMN, ROW_COLUMN), spec)
    except InputError as error:
        raise rows.located(error, raw) from None


def _systems(rows: RowScan, reader: RowReader, columns) -> list[str] | None:
    """Every system of the input in order of first appearance (one streaming pass over the
    system column), or None when the input has no such column (one system)."""
    column = dict(columns or {}).get(reader.system_column, reader.system_column)
    if column not in rows.frame.collect_schema().names():
        return None
    position = pl.col(FILE_COLUMN).cast(pl.Int64) * (1 << 40) + pl.col(ROW_COLUMN).cast(pl.Int64)
    first = rows.frame.group_by(pl.col(column).cast(pl.String)).agg(position.min().alias("_first"))
    found = _collected(rows, first.sort("_first"))
    return found.get_column(column).drop_nulls().to_list()


def _raw_key(reader: RowReader, key: list[str], names: list[str], columns) -> list[str]:
    """The input's columns to hash: the reader's query columns for ``query_id``, a coarser
    unit's key columns under the input's own names (the column mapping)."""
    mapping = dict(columns or {})
    raw = []
    for name in key:
        wanted = reader.query_columns if name == "query_id" else (name,)
        found = [mapping.get(column, column) for column in wanted if mapping.get(column, column) in names]
        if not found:
            raise ConfigError(f"execution.buckets: the unit key `{name}` is not a column of the input "
                              f"(columns: {', '.join(n for n in names if n not in (FILE_COLUMN, ROW_COLUMN))})")
        raw += found
    return list(dict.fromkeys(raw))


def _sweep(pipeline: PipelineSpec, query_columns: list[str]) -> tuple[SweepSetup, Plan]:
    """The parameters and engine plan of the pipeline's dynamic-K sweep (its ``dynamic_k_sweep:``
    block), run bucket by bucket beside the pipeline's own plan (module docstring)."""
    setup = sweep_setup(pipeline.plan, query_columns, **pipeline.sweep_arguments())
    return setup, sweep_plan(setup)
