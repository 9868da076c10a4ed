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
one in-memory ``evaluate`` of the whole: counts and per-unit values bit-identical, sums and
moments (``value``, ``std``) within 1e-12 relative (floats add in another order), quantiles
exact (they are taken from the per-unit values, which travel in the partials), bootstrap
intervals identical (replicate counts depend on the seed, the unit's key and the replicate
number only, and the uncertainty stage visits the units in key order, whatever the parts).
:func:`merge` is associative and commutative (up to that float rounding) and refuses parts that
share a unit (:func:`~evalframe.engine.partials.check_disjoint_units`).

**What travels.** Each frame of :class:`~evalframe.engine.partials.Partials` becomes one row:
``kind`` (``queries``, ``sizes``, ``values``, ``moments``, ``states``, ``inside``, ``facts``),
``key`` (JSON: the frame's key in the partials; a set metric's state is named by its position
among the plan's distinct states), ``payload`` (the frame as an Arrow IPC stream). The bound
plan travels pickled in the ``facts`` row: read only partials that evalframe wrote (like any
pickle, a file from elsewhere could run code).

**Notes** that count what a part left out ("3 run rows of 2 queries without judgments were
ignored") add up across parts when merged: notes that begin with a number and read alike but
for their numbers are one note whose numbers are the sums.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace

import polars as pl
import pyarrow as pa

from evalframe.data.tables import Tables
from evalframe.data.units import Units
from evalframe.engine.evaluation import finalize, make_plan
from evalframe.engine.partials import Partials, compute_partials
from evalframe.engine.plan import Plan
from evalframe.engine.result import Evaluation
from evalframe.errors import ConfigError
from evalframe.metrics.base import SetMetric

__all__ = ["PARTIALS_SCHEMA", "evaluate_part", "finalise", "from_arrow", "make_plan", "merge", "to_arrow"]

#: The one Arrow schema of serialised partials (a Spark ``mapInArrow`` declares it as
#: ``"part string, kind string, key string, payload binary"``).
PARTIALS_SCHEMA = pa.schema([
    pa.field("part", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("key", pa.string(), nullable=False),
    pa.field("payload", pa.binary(), nullable=False),
])
#: The same schema as a Spark DDL string.
PARTIALS_DDL = "part string, kind string, key string, payload binary"

_FRAMES = ("sizes", "values", "moments", "states", "inside")


def evaluate_part(tables: Tables, plan: Plan, *, systems: Sequence[str] | None = None) -> Partials:
    """The kernel: per-unit values and mergeable partials of one part holding complete units.

    ``systems`` (the whole run's systems) matters only when ``tables.queries`` is None: the
    evaluated pairs are then every system × every judged query of the part, as for the whole.
    """
    if systems is not None and tables.queries is None:
        tables = replace(tables, systems=tuple(systems))
    return compute_partials(tables, plan)


def merge(parts: Iterable[Partials]) -> Partials:
    """The partials of the union of disjoint parts (at least one); counted notes add up."""
    parts = list(parts)
    if not parts:
        raise ConfigError("merge needs at least one part")
    merged = parts[0].merge(*parts[1:]) if len(parts) > 1 else parts[0]
    return replace(merged, notes=merged_notes([p.notes for p in parts]))


def finalise(partials: Partials, *, tables: Tables | None = None) -> Evaluation:
    """The :class:`~evalframe.engine.result.Evaluation` of (merged) partials."""
    return finalize(partials, tables=tables)


# --- notes ---------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d+")


def merged_notes(notes_of_parts: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """The notes of the parts, once each; a note that starts with a count ("3 run rows …") is a
    count of what its part left out, and the parts' notes that read alike but for their numbers
    become one note with the numbers summed (position by position), in first-seen order."""
    merged: dict[str, list[int] | None] = {}
    texts: dict[str, str] = {}
    for notes in notes_of_parts:
        for note in notes:
            if not _NUMBER.match(note):
                merged.setdefault(note, None)
                texts.setdefault(note, note)
                continue
            template = _NUMBER.sub("{}", note)
            numbers = [int(n) for n in _NUMBER.findall(note)]
            known = merged.get(template)
            merged[template] = numbers if known is None else [a + b for a, b in zip(known, numbers, strict=True)]
            texts.setdefault(template, template)
    return tuple(texts[key] if numbers is None else texts[key].format(*numbers) for key, numbers in merged.items())


# --- Arrow ------------------------------------------------------------------------------------


def _state_ids(plan: Plan) -> list[object]:
    """The plan's distinct set-metric states in a fixed order (how the ``states`` key names one)."""
    return list(dict.fromkeys(m.state_id for group in plan.groups for m in group.metrics if isinstance(m, SetMetric)))


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc_stream(buffer, compression="uncompressed")
    return buffer.getvalue()


def _frame(payload: bytes) -> pl.DataFrame:
    return pl.read_ipc_stream(io.BytesIO(payload))


def to_arrow(partials: Partials, *, part: str | None = None) -> pa.Table:
    """The partials as one Arrow table of :data:`PARTIALS_SCHEMA` (``part``: an id shared by its
    rows, default a random one), e.g. for ``pyarrow.parquet.write_table`` or a ``mapInArrow``."""
    part = part if part is not None else uuid.uuid4().hex
    state_index = {state_id: position for position, state_id in enumerate(_state_ids(partials.plan))}
    facts = {
        "units": {name: list(keys) for name, keys in partials.units.keys.items()},
        "applies": [[unit, grouping, flag] for (unit, grouping), flag in partials.applies.items()],
        "notes": list(partials.notes),
    }
    rows: list[tuple[str, str, bytes]] = [
        ("facts", json.dumps(facts), pickle.dumps(partials.plan, protocol=pickle.HIGHEST_PROTOCOL)),
        ("queries", "[]", _ipc(partials.queries)),
    ]
    for kind in _FRAMES:
        for key, frame in getattr(partials, kind).items():
            key = (key[0], key[1], state_index[key[2]]) if kind == "states" else key
            rows.append((kind, json.dumps(list(key)), _ipc(frame)))
    kinds, keys, payloads = zip(*rows, strict=True)
    return pa.Table.from_arrays(
        [pa.array([part] * len(rows), pa.string()), pa.array(kinds, pa.string()), pa.array(keys, pa.string()),
         pa.array(payloads, pa.binary())],
        schema=PARTIALS_SCHEMA,
    )


def from_arrow(table: pa.Table | Iterable[pa.RecordBatch]) -> list[Partials]:
    """The partials of every part whose rows ``table`` holds (rows of several parts may be
    interleaved, e.g. collected from a Spark job or read from several Parquet files)."""
    if not isinstance(table, pa.Table):
        table = pa.Table.from_batches(list(table), schema=PARTIALS_SCHEMA)
    missing = [name for name in PARTIALS_SCHEMA.names if name not in table.column_names]
    if missing:
        raise ConfigError(f"serialised partials need the columns {PARTIALS_SCHEMA.names}; missing {missing}")
    by_part: dict[str, list[tuple[str, str, bytes]]] = {}
    for part, kind, key, payload in zip(*(table.column(name).to_pylist() for name in PARTIALS_SCHEMA.names), strict=True):
        by_part.setdefault(part, []).append((kind, key, payload))
    return [_partials(part, rows) for part, rows in by_part.items()]


def _partials(part: str, rows: list[tuple[str, str, bytes]]) -> Partials:
    facts = [(key, payload) for kind, key, payload in rows if kind == "facts"]
    if len(facts) != 1:
        raise ConfigError(f"serialised partials of part {part!r} have {len(facts)} `facts` rows (need one)")
    about, plan_bytes = json.loads(facts[0][0]), facts[0][1]
    plan: Plan = pickle.loads(plan_bytes)  # noqa: S301 (partials evalframe wrote itself, module docstring)
    state_ids = _state_ids(plan)
    frames: dict[str, dict] = {kind: {} for kind in _FRAMES}
    queries = None
    for kind, key, payload in rows:
        if kind == "facts":
            continue
        if kind == "queries":
            queries = _frame(payload)
            continue
        if kind not in frames:
            raise ConfigError(f"serialised partials of part {part!r}: unknown kind {kind!r}")
        parsed = tuple(json.loads(key))
        if kind == "states":
            parsed = (parsed[0], parsed[1], state_ids[parsed[2]])
        frames[kind][parsed] = _frame(payload)
    if queries is None:
        raise ConfigError(f"serialised partials of part {part!r} have no `queries` row")
    return Partials(
        plan=plan,
        units=Units({name: tuple(keys) for name, keys in about["units"].items()}),
        queries=queries,
        applies={(unit, grouping): bool(flag) for unit, grouping, flag in about["applies"]},
        notes=tuple(about["notes"]),
        **frames,
    )
