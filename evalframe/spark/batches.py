"""Complete units out of a stream of Arrow batches (the task side of :mod:`evalframe.spark`).

Spark hands a ``mapInArrow`` function the rows of one partition as Arrow record batches of at
most ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows each. The partition is sorted by the
unit key, so the rows of a unit are contiguous, but a batch boundary may fall inside a unit (or a
unit may span several batches). :func:`complete_units` regroups the stream into tables that each
hold whole units:

- batches are gathered until at least ``min_rows`` rows are pending;
- the pending rows are cut just before the last unit seen (the rows whose key equals the last
  row's key, a suffix because the partition is sorted): everything before is yielded, the last
  unit is carried into the next batch, since more of its rows may follow;
- when the stream ends, the carried rows are yielded (the last unit is then complete).

A unit larger than ``min_rows`` is carried until it ends, whatever its size. Keys compare with
nulls equal to nulls (Spark sorts nulls together), so a null key is one unit like any value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc


def _last_unit_length(table: pa.Table, keys: Sequence[str]) -> int:
    """How many rows at the end of ``table`` share its last row's key values."""
    same = None
    for key in keys:
        column = table.column(key)
        last = column[len(column) - 1]
        if last.is_valid:
            equal = pc.fill_null(pc.equal(column, last), False)
        else:
            equal = pc.is_null(column)
        same = equal if same is None else pc.and_(same, equal)
    return pc.sum(same.cast(pa.int64())).as_py() or 0


def complete_units(batches: Iterable[pa.RecordBatch], keys: Sequence[str], min_rows: int) -> Iterator[pa.Table]:
    """Tables of whole units from ``batches`` sorted by ``keys``, in stream order: each is cut
    when ``min_rows`` rows are pending, before the last unit seen then (module docstring)."""
    pending: list[pa.RecordBatch] = []
    n_pending = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        n_pending += batch.num_rows
        if n_pending < min_rows:
            continue
        table = pa.Table.from_batches(pending)
        cut = table.num_rows - _last_unit_length(table, keys)
        if cut == 0:  # one unit so far: it may go on in the next batch
            continue
        yield table.slice(0, cut)
        pending = table.slice(cut).to_batches()
        n_pending = table.num_rows - cut
    if n_pending:
        yield pa.Table.from_batches(pending)
