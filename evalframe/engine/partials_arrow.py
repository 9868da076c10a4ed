"""Partials to and from Arrow (the kernel contract's wire format, :mod:`evalframe.engine.kernel`).

Each frame of :class:`~evalframe.engine.partials.Partials` becomes one row of
:data:`PARTIALS_SCHEMA`: ``part`` (an id shared by one part's rows), ``kind`` (``queries``,
``sizes``, ``values``, ``moments``, ``states``, ``inside``, ``replicate_sums``, ``facts``), ``key`` (JSON: the frame's
key in the partials; a set metric's state is named by its position among the plan's distinct
states) and ``payload`` (the frame as an Arrow IPC stream). The bound plan travels pickled in the
``facts`` row: read only partials that evalframe wrote (like any pickle, a file from elsewhere
could run code).
"""

from __future__ import annotations

import io
import json
import pickle
import uuid
from collections.abc import Iterable

import polars as pl
import pyarrow as pa

from evalframe.data.units import Units
from evalframe.engine.partials import Partials
from evalframe.engine.plan import Plan
from evalframe.engine.replicate_sums import ReplicateSums
from evalframe.errors import ConfigError
from evalframe.metrics.base import SetMetric

#: The one Arrow schema of serialised partials (a Spark ``mapInArrow`` declares it as
#: :data:`PARTIALS_DDL`).
PARTIALS_SCHEMA = pa.schema([
    pa.field("part", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("key", pa.string(), nullable=False),
    pa.field("payload", pa.binary(), nullable=False),
])
#: The same schema as a Spark DDL string.
PARTIALS_DDL = "part string, kind string, key string, payload binary"

_FRAMES = ("sizes", "values", "moments", "states", "inside")


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
    for key, sums in partials.replicate_sums.items():
        rows.append(("replicate_sums", json.dumps(list(key)), _ipc(sums.to_frame())))
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
    sums: dict[tuple, ReplicateSums] = {}
    for kind, key, payload in rows:
        if kind == "facts":
            continue
        if kind == "queries":
            queries = _frame(payload)
            continue
        if kind == "replicate_sums":
            sums[tuple(json.loads(key))] = ReplicateSums.from_frame(_frame(payload))
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
        replicate_sums=sums,
        **frames,
    )
