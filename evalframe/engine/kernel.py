"""The kernel contract (DESIGN §3 "Scale"): complete units in, serialisable partials out.

The same engine runs on parts of the data — buckets on disk (:mod:`evalframe.engine.buckets`),
Spark partitions (``evalframe.spark``) — and the parts merge exactly. Four calls:

=====================  ====================================================================
where                  call
=====================  ====================================================================
once, on the driver    ``plan = make_plan(metrics, slices=..., bootstrap=..., ...)`` (the
                       keywords of :func:`evalframe.evaluate`); ship ``plan`` to the tasks
                       (it pickles).
each task / bucket     ``part = evaluate_part(tables, plan, systems=...)`` — ``tables`` holds
                       **complete units**: every row of each unit it holds, of every table
                       (ranking rows, judgments, queries), split by ``query_id`` (and by the
                       unit keys of coarser units, e.g. ``post_id``). ``systems``: every
                       system of the whole run (needed when ``tables.queries`` is None, so a
                       system without rows in this part still gets its judged queries).
                       ``table = to_arrow(part)``: one ``pyarrow.Table`` of schema
                       :data:`PARTIALS_SCHEMA` (``part, kind, key, payload``), which a
                       ``mapInArrow`` yields batch by batch and Parquet stores as is.
the driver             ``parts = from_arrow(collected)`` (the rows of any number of parts, in
                       any order: a list of :class:`~evalframe.engine.partials.Partials`),
                       ``ev = finalise(merge(parts))``: the usual
                       :class:`~evalframe.engine.result.Evaluation`.
=====================  ====================================================================

**Guarantee.** For any partition of the units into parts, ``finalise(merge(parts))`` equals
one in-memory ``evaluate`` of the whole: counts, keys, skip reasons and notes exactly; per-unit
values bit for bit (every column they are computed from is dense, :func:`~evalframe.engine.per_unit.dense`:
Polars would divide by a broadcast column — a one-row join in a part with one query — as
``x * (1 / y)``); quantiles, min and max bit for bit (order statistics of those values);
bootstrap intervals and replicate values bit for bit (the replicate counts depend on the seed,
the unit's key and the replicate number only, and the uncertainty stage visits the units in
key order, whatever the parts); sums and moments (mean, std, se) within 1e-12 relative (they
add in the parts' order). :func:`merge` is associative and commutative (up to that float
rounding of the sums) and refuses parts that share a unit
(:func:`~evalframe.engine.partials.check_disjoint_units`).

**What travels** (:mod:`evalframe.engine.partials_arrow`): each frame of
:class:`~evalframe.engine.partials.Partials` becomes one row: ``kind``, ``key`` (JSON),
``payload`` (the frame as an Arrow IPC stream); the bound plan travels pickled in the ``facts``
row, so read only partials that evalframe wrote.

**Notes** that count what a part left out ("3 run rows of 2 queries without judgments were
ignored") add up across parts when merged: notes that begin with a number and read alike but
for their numbers are one note whose numbers are the sums.
"""

from __future__ import annotations

from evalframe.data.tables import Tables
from evalframe.engine.evaluation import finalize, make_plan
from evalframe.engine.partials import Partials, evaluate_part, merge, merged_notes
from evalframe.engine.partials_arrow import PARTIALS_DDL, PARTIALS_SCHEMA, from_arrow, to_arrow
from evalframe.engine.result import Evaluation

__all__ = ["PARTIALS_DDL", "PARTIALS_SCHEMA", "Partials", "evaluate_part", "finalise", "from_arrow", "make_plan", "merge",
           "merged_notes", "to_arrow"]


def finalise(partials: Partials, *, tables: Tables | None = None) -> Evaluation:
    """The :class:`~evalframe.engine.result.Evaluation` of (merged) partials."""
    return finalize(partials, tables=tables)
