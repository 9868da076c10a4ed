"""Out of core on one machine (issue 27 part 2): the kernel bucket by bucket, partials merged.

    inputs (scans or frames) ──hash(unit key) mod N──▶ N bucket folders per table (Parquet,
    Polars' streaming sink) ──▶ for each bucket: read its rows of every table, run the kernel
    (:func:`evalframe.engine.partials.evaluate_part`) ──▶ merge the partials ──▶ finalise

Every table of the evaluation (ranking rows or ranked lists, judgments, queries) is split by
the same key, so each bucket holds complete units: the query (``query_id``), or, when a metric
has a coarser unit (``post``), that unit's key columns — then each query is sent where its unit
goes (read off the queries table). The result equals the in-memory run's (the kernel's
guarantee, :mod:`evalframe.engine.kernel`).

**Memory model.** While a bucket is evaluated, memory holds that bucket's rows and the
engine's working tables for them (about :data:`WORKING_FACTOR` times the bucket's input
bytes). Each bucket's per-unit values (units × metrics) go to a Parquet file beside the bucket
(:func:`spill_values`) as soon as the bucket is done; across buckets memory holds only the
queries table (one row per evaluated query) and the per-slice sums, set-metric states and bootstrap replicate sums — not
the ranking rows, not the per-unit values. Finalising reads the values back from the files
one metric at a time: the quantiles exactly (one metric's values of one grouping set in
memory at once, sorted per slice), the skip counts (a streaming pass). The result's long
per-unit table stays a lazy scan of the files (:attr:`Evaluation.per_unit_frame
<evalframe.engine.result.Evaluation.per_unit_frame>`), which the outputs sink to their files;
the files live in the bucket folder's ``_values`` as long as a result reads them
(:class:`SpilledValues`). BCa's jackknife alone reads every unit's values at once.
``buckets="auto"`` picks ``N`` so that one bucket's working set fits half the memory budget
(:data:`BUCKET_SHARE`; the budget's default: a third of the machine's memory), leaving the
other half for what grows with the units when the result is built.

**Temporary files** go to a fresh folder inside ``bucket_dir`` (default: the system's
temporary folder) and are removed when the evaluation ends, also on an error or Ctrl-C; the
per-unit value files that the result reads, when the last result holding them is gone (or
at the interpreter's exit).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import polars as pl

from evalframe._progress import Progress, step
from evalframe.data.tables import Tables
from evalframe.data.units import SYSTEM, partition_keys
from evalframe.engine.partials import Partials, evaluate_part, merge, merged_notes, values_in_key_order
from evalframe.engine.plan import Plan
from evalframe.engine.result import Evaluation
from evalframe.errors import ConfigError
from evalframe.io.scan import Scan
from evalframe.metrics.base import ItemMetric

#: Bytes of working memory per byte of a bucket's input (joins, the ranking index, per-unit
#: tables), measured on the ranking benchmark (benchmarks/bench_buckets.py) with headroom.
WORKING_FACTOR = 12
#: Share of the memory budget one bucket's working set may take: the rest is left for what grows
#: with the number of units while the result is built (the queries table, one metric's per-unit
#: values read back for its quantiles; BCa's units × metrics arrays). Measured at
#: 1,000,000 queries (benchmarks/README.md): the bucket's working set and the bootstrap's arrays
#: are of one size there.
BUCKET_SHARE = 0.5
#: Most buckets ``auto`` picks (more only make more, smaller files).
MAX_AUTO_BUCKETS = 4096
#: Seed of the bucket hash (any fixed value: rows of one unit must meet in one bucket).
_HASH_SEED = 0x27B0C4E7
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_memory(value: int | float | str | None, *, key: str = "memory") -> int:
    """A memory budget in bytes: a number of bytes, or text such as ``"8GB"``, ``"512 MiB"``;
    None: a third of the machine's memory. Raises :class:`ConfigError` naming ``key``."""
    if value is None:
        return machine_memory() // 3
    if isinstance(value, bool):
        raise ConfigError(f"`{key}` must be a positive size such as 8GB, got {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    else:
        found = _SIZE.match(str(value))
        if not found:
            raise ConfigError(f"`{key}` must be a positive size such as 8GB or 512MB, got {value!r}")
        number = float(found.group(1)) * 1024 ** " kmgt".index(found.group(2).lower() or " ")
    if not number > 0 or not math.isfinite(number):
        raise ConfigError(f"`{key}` must be a positive size such as 8GB, got {value!r}")
    return int(number)


def machine_memory() -> int:
    """Physical memory of the machine in bytes (8 GiB when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def check_buckets(value: int | str | None, *, key: str = "buckets") -> int | str | None:
    """``buckets``: None (in memory), a whole number >= 1, or ``"auto"``; else ConfigError naming ``key``."""
    if value is None or value == "auto":
        return value
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"`{key}` must be a whole number >= 1 or 'auto', got {value!r}")
    return value


def choose_buckets(buckets: int | str, input_bytes: int, memory: int) -> int:
    """``buckets`` itself, or for ``"auto"`` the fewest buckets whose working set
    (:data:`WORKING_FACTOR` × input bytes / N) fits :data:`BUCKET_SHARE` of ``memory``."""
    if buckets != "auto":
        return int(buckets)
    return max(1, min(MAX_AUTO_BUCKETS, math.ceil(WORKING_FACTOR * input_bytes / (BUCKET_SHARE * memory))))


def _hash(columns: list[str], n: int) -> pl.Expr:
    text = pl.concat_str([pl.col(c).cast(pl.String).fill_null("\x00") for c in columns], separator="\x1f")
    return (text.hash(seed=_HASH_SEED) % n).cast(pl.Int64)


def partials_in_buckets(
    tables: Mapping[str, Scan | pl.DataFrame | pl.LazyFrame | None],
    plan: Plan,
    *,
    buckets: int | str,
    memory: int | str | None = None,
    bucket_dir: str | Path | None = None,
    template: Tables | None = None,
    finish: Callable[[Partials], object] | None = None,
):
    """The merged partials of ``plan`` on ``tables``, evaluated bucket by bucket (module
    docstring); :func:`evalframe.engine.evaluation.finalize` turns them into the result.

    ``finish`` (e.g. ``finalize``) runs on the merged partials while the bucket files still
    exist: their per-unit values are then lazy scans of the files (:func:`spill_values`), and
    ``finish``'s result is returned. Without ``finish`` the merged partials are returned with
    their per-unit values read into memory (the files are removed on return).

    ``tables`` maps ``ranking_rows`` (a run), ``ranked_lists``, ``judgments`` and ``queries`` to
    scans or frames (None: absent). Scanned tables are validated per bucket by the readers'
    contracts; frames are taken as the readers returned them. ``template`` carries the other
    facts of in-memory :class:`Tables` (relevance rule, catalog, notes) into every bucket.
    """
    buckets = check_buckets(buckets)
    budget = parse_memory(memory)
    present = {name: table for name, table in tables.items() if table is not None}
    scans = {name: table if isinstance(table, Scan) else Scan.of_frame(table, _CONTRACT.get(name, name), name)
             for name, table in present.items()}
    n = choose_buckets(buckets, sum(scan.size for scan in scans.values()), budget)
    template = template or Tables(queries=None, judgments=pl.DataFrame())
    key = partition_keys((m.unit for m in plan.metrics), plan.units)
    systems = _systems(scans) if "queries" not in scans else None
    with bucket_folder(bucket_dir) as folder:
        with step(f"splitting the input into {n} bucket{'s' if n != 1 else ''}"):
            schemas = split_into_buckets(scans, key, n, folder)
        counts_ignored = any(isinstance(m, ItemMetric) for m in plan.metrics)

        def evaluate_bucket(bucket: int) -> tuple[Partials | None, list[str]]:
            frames = {name: read_bucket(folder, name, bucket, schemas[name]) for name in scans}
            part_tables = _bucket_tables(frames, scans, template, systems)
            if part_tables is not None:
                return evaluate_part(part_tables, plan), []
            if counts_ignored and frames.get("ranking_rows") is not None and frames["ranking_rows"].height:
                return None, [_ignored_note(frames["ranking_rows"])]
            return None, []

        return run_buckets(n, evaluate_bucket, folder, notes=template.notes, finish=finish)


@contextmanager
def bucket_folder(bucket_dir: str | Path | None = None) -> Iterator[Path]:
    """A fresh folder for one evaluation's bucket files inside ``bucket_dir`` (default: the
    system's temporary folder), removed when the block ends, also on an error or Ctrl-C; but
    for its per-unit values (``_values``) when a result still reads them (:class:`SpilledValues`),
    which then removes the folder when the last result holding them is gone.""" 
    root = Path(bucket_dir) if bucket_dir is not None else Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="evalframe-buckets-", dir=root))
    try:
        yield folder
    finally:
        if (folder / VALUES).is_dir():  # a result reads them (SpilledValues): it removes the folder when it goes
            for child in folder.iterdir():
                if child.name != VALUES:
                    shutil.rmtree(child, ignore_errors=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def run_buckets(
    n: int,
    evaluate_bucket: Callable[[int], tuple[Partials | None, list[str]]],
    folder: Path,
    *,
    notes: tuple[str, ...] = (),
    finish: Callable[[Partials], object] | None = None,
):
    """The kernel bucket by bucket, merged: ``evaluate_bucket(b)`` gives bucket ``b``'s partials
    (None: nothing to evaluate) and counted notes of what it left out; each part's per-unit values
    go to disk at once (:func:`spill_values`); the merge's notes follow ``notes`` (the input's).
    ``finish`` and the return value: as :func:`partials_in_buckets`.

    The per-unit value files go to ``folder/_values`` (:class:`SpilledValues`): an
    :class:`~evalframe.engine.result.Evaluation` that ``finish`` returns reads its long per-unit
    values from them lazily and keeps them (and ``folder``) alive (``per_unit_files``); on an
    error, or without such a result, they are removed at once."""
    spilled = SpilledValues(folder)
    try:
        parts, left_out = [], []
        with Progress(n, "buckets") as progress:
            for bucket in range(n):
                part, part_notes = evaluate_bucket(bucket)
                if part is not None:
                    parts.append(spill_values(part, spilled.path, bucket))
                left_out += [[note] for note in part_notes]
                progress.advance()
        if not parts:
            raise ConfigError("the input has no judged query to evaluate")
        merged = merge(parts)
        merged = replace(merged, notes=tuple(dict.fromkeys([*notes, *merged_notes([merged.notes, *left_out])])))
        if finish is None:
            return replace(merged, values={(g, unit): values_in_key_order(frame.lazy(), merged.units, unit).collect()
                                           for (g, unit), frame in merged.values.items()})
        result = finish(merged)
    except BaseException:
        spilled.remove()
        raise
    if isinstance(result, Evaluation) and result.per_unit_on_disk:
        return replace(result, per_unit_files=spilled)
    spilled.remove()
    return result


#: The folder of the per-unit values inside a bucket folder.
VALUES = "_values"


class SpilledValues:
    """The per-unit value files of one bucket run (``<bucket folder>/_values``): :meth:`remove`,
    or garbage collection of this object (the last result holding it is gone), or the
    interpreter's exit removes them with their bucket folder (whose other files
    :func:`bucket_folder` removes when the run ends)."""

    def __init__(self, folder: Path):
        self.path = folder / VALUES
        self.path.mkdir()
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(folder), True)

    def remove(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"SpilledValues({str(self.path)!r})"


def spill_values(part: Partials, folder: Path, bucket: int) -> Partials:
    """``part`` with its per-unit values written to ``folder/<group>-<unit>/<bucket>.parquet``
    and replaced by lazy scans of those files (Parquet keeps every float's bits, so the values
    read back are the ones computed)."""
    values = {}
    for (g, unit), frame in part.values.items():
        path = folder / f"{g}-{unit}" / f"{bucket:05d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(path, compression="lz4", statistics=False)
        values[(g, unit)] = pl.scan_parquet(path)
    return replace(part, values=values)


#: The contract of each table of :class:`Tables` (how a frame is validated when scanned).
_CONTRACT = {"ranking_rows": "ranking", "judgments": "judgments", "queries": "queries", "ranked_lists": "ranked_lists"}


def _systems(scans: Mapping[str, Scan]) -> tuple[str, ...] | None:
    """Every system of the run (a streaming pass over one column), or None without a system column."""
    run = scans.get("ranking_rows") or scans.get("ranked_lists")
    if run is None or SYSTEM not in run.frame.collect_schema().names():
        return None
    found = run.frame.select(pl.col(SYSTEM).cast(pl.String).unique()).collect(engine="streaming")
    return tuple(sorted(found.get_column(SYSTEM).drop_nulls().to_list()))


def split_into_buckets(scans: Mapping[str, Scan], key: list[str], n: int, folder: Path) -> dict[str, pl.Schema]:
    """Sink every table into ``folder/<table>/_bucket=<b>/`` by the hash of ``key`` (streaming).

    A table without the key columns (a run or qrels when the key is a coarser unit's) gets
    each query's bucket from the queries table; its rows of a query the queries table lacks go
    to the bucket of that query id, so the engine counts them there as it does in memory (the
    note "N judged queries are not in the queries table and were ignored"), never dropped. A
    query whose units fall in two buckets is an error naming it (the in-memory path would see
    both units' rows in one place)."""
    schemas: dict[str, pl.Schema] = {}
    queries = scans.get("queries")
    bucket_of_query = None
    if key != ["query_id"]:
        if queries is None or not set(key) <= set(queries.frame.collect_schema().names()):
            raise ConfigError(f"buckets: metrics of a coarser unit need a queries table with its key columns {key}")
        bucket_of_query = (queries.frame.select(pl.col("query_id").cast(pl.String), _hash(key, n).alias("_bucket"))
                           .unique().collect(engine="streaming"))
        split = bucket_of_query.filter(pl.col("query_id").is_duplicated())
        if split.height:
            raise ConfigError(f"buckets: query {split.get_column('query_id').sort()[0]!r} belongs to units {key} that fall "
                              "in different buckets; give each query one unit, or evaluate without buckets")
    for name, scan in scans.items():
        frame = scan.frame
        schemas[name] = frame.collect_schema()
        if set(key) <= set(schemas[name].names()):
            keyed = frame.with_columns(_hash(key, n).alias("_bucket"))
        else:
            keyed = (frame.join(bucket_of_query.lazy(), left_on=pl.col("query_id").cast(pl.String), right_on="query_id",
                                how="left", maintain_order="left")
                     .with_columns(pl.coalesce("_bucket", _hash(["query_id"], n)).alias("_bucket"))
                     .select(*schemas[name].names(), "_bucket"))
        sink_buckets(keyed, folder / name)
    return schemas


def sink_buckets(frame: pl.LazyFrame, folder: Path, key: list[str] | None = None, n: int = 1, *,
                 row_group_size: int | None = None) -> None:
    """Stream ``frame`` into ``folder/_bucket=<b>/`` (Parquet), by its ``_bucket`` column, or
    with ``key``, by the hash of those columns modulo ``n``. Each bucket's writer holds up to a
    row group (``row_group_size`` rows; None: Polars' default) before writing it: wide rows
    (a per_query file's lists as text) want smaller row groups to keep the split's memory small."""
    if key is not None:
        frame = frame.with_columns(_hash(key, n).alias("_bucket"))
    frame.sink_parquet(pl.PartitionBy(folder, key="_bucket", include_key=False), mkdir=True,
                       compression="lz4", engine="streaming", row_group_size=row_group_size)


def read_bucket(folder: Path, name: str, bucket: int, schema: pl.Schema) -> pl.DataFrame:
    where = folder / name / f"_bucket={bucket}"
    files = sorted(where.glob("*.parquet")) if where.is_dir() else []
    if not files:
        return pl.DataFrame(schema=schema)
    return pl.read_parquet([str(f) for f in files], hive_partitioning=False)


def _bucket_tables(frames: Mapping[str, pl.DataFrame], scans: Mapping[str, Scan], template: Tables,
                   systems: tuple[str, ...] | None) -> Tables | None:
    """One bucket's :class:`Tables` (scanned tables validated by the readers), or None when it
    holds nothing to evaluate (no query, no judgment)."""
    from evalframe.io import read_qrels, read_run

    judgments = frames.get("judgments")
    queries = frames.get("queries")
    if (queries is None or queries.is_empty()) and (judgments is None or judgments.is_empty()):
        return None
    if judgments is not None and isinstance(scans["judgments"], Scan) and scans["judgments"].files:
        judgments = read_qrels(judgments)
    ranking_rows = frames.get("ranking_rows")
    if ranking_rows is not None and scans["ranking_rows"].files:
        ranking_rows = read_run(ranking_rows)
    return replace(
        template,
        queries=queries,
        judgments=judgments if judgments is not None else template.judgments.clear(),
        ranking_rows=ranking_rows,
        ranked_lists=frames.get("ranked_lists"),
        n_rows=ranking_rows.height if ranking_rows is not None else 0,
        notes=(),
        systems=systems if queries is None else None,
        ranking_source=scans["ranking_rows"].source if "ranking_rows" in scans else template.ranking_source,
    )


def _ignored_note(run: pl.DataFrame) -> str:
    """The engine's note for run rows of queries without judgments (a bucket with no judged
    query is not evaluated; its rows are still counted, and the counts add up across buckets)."""
    return f"{run.height} run rows of {run.get_column('query_id').n_unique()} queries without judgments were ignored"
