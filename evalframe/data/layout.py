"""Facts about a table's rows that several stages read, taken once per frame.

A run of ten million rows is read by the contract's key check (:mod:`evalframe.data.conform`)
and then by the ranking stage (:mod:`evalframe.engine.ranking`). Both want the same facts,
each a pass over every row:

- :func:`column_hashes`: the 64-bit hash of every value of a column (``doc_id``): the key check
  compares those of each query's rows, the ranking stage looks a judgment's ``doc_id`` up among
  them;
- :func:`stretch_starts`: the first row of every stretch of equal values of a column (the query
  ids of a run come in stretches, one per query): the key check and the ranking stage's query
  index both start from them;
- :func:`key_stretch_starts`: the same for several columns at once (a run's stretches of one
  (system, query_id) pair);
- :func:`distinct_in_blocks`: whether those hashes differ within every block of rows (a query's
  rows): the key check's verdict, which also tells the ranking stage that a judgment's hash
  matches at most one row of its query's block.

Each is computed on the first request and kept while the frame lives (a weak reference drops it
with the frame; two threads asking at once may both compute it, to the same value). A stage that
knows a later one will ask can :func:`begin` a fact on a thread of its own, beside its own
work: the later request waits for that computation instead of making it again (and makes it
itself, raising here, if the begun one failed). Frames are
taken as unchanging, as :func:`~evalframe.data.conform.conform` takes them: a frame changed in
place (``frame[name] = ...``) after a fact was taken must not be asked again. The arrays handed
out are read-only.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe._threads import in_parts

if TYPE_CHECKING:
    import numpy as np

#: Seed of :func:`value_hash`: both sides of a comparison of hashes must use the same one.
HASH_SEED = 7

#: Facts by frame: ``id(frame)`` → (weak reference to the frame, {(fact, column): value}).
_FACTS: dict[int, tuple[weakref.ref, dict[tuple[str, str], Any]]] = {}


def value_hash(name: str) -> pl.Expr:
    """The 64-bit hash of each value of column ``name`` (Polars' hash, seed :data:`HASH_SEED`):
    the hash :func:`column_hashes` holds, to compute on another table (the judgments' doc ids)."""
    return pl.col(name).hash(HASH_SEED)


def key_hash(columns) -> pl.Expr:
    """One 64-bit hash of each row's values of ``columns`` (each column's hash, seeded by its
    position, XOR-ed): equal keys hash equal; different keys may too (rarely), so an equal hash
    is a candidate to check on the values."""
    from functools import reduce
    from operator import xor

    return reduce(xor, (pl.col(name).hash(seed) for seed, name in enumerate(columns, 1)))


def same_keys(left: pl.DataFrame, right: pl.DataFrame, keys: Sequence[str]) -> bool:
    """Whether ``left`` and ``right`` hold the same ``keys`` in the same row order (two columns
    compared, where a join would hash both)."""
    return left.select(keys).equals(right.select(keys))


def joined_beside(left: pl.DataFrame, right: pl.DataFrame, keys: Sequence[str]) -> pl.DataFrame:
    """``left`` left-joined with ``right`` on ``keys``, in ``left``'s order: ``right``'s other
    columns placed beside ``left``'s when both hold the same keys in the same order
    (:func:`same_keys`) and share no other column name; else a join (as it would be, suffixes
    included)."""
    others = right.drop(keys)
    if not set(others.columns) & set(left.columns) and same_keys(left, right, keys):
        return left.hstack(others.get_columns())
    return left.join(right, on=keys, how="left", maintain_order="left")


def column_hashes(frame: pl.DataFrame, name: str) -> np.ndarray:
    """:func:`value_hash` of every row of ``frame`` as one contiguous, read-only ``uint64`` array.

    Two equal values hash equal; two different values may too (rarely), so an equal hash is a
    candidate to check on the values themselves.
    """
    return _fact(frame, "hashes", name, lambda: _hashes(frame, name))


def begin_column_hashes(frame: pl.DataFrame, name: str) -> None:
    """Begin :func:`column_hashes` of column ``name`` on a thread of its own (:func:`begin`)."""
    begin(frame, "hashes", name, lambda: _hashes(frame, name))


def _hashes(frame: pl.DataFrame, name: str) -> np.ndarray:
    import numpy as np

    return column_in_pieces(frame, value_hash(name), np.uint64)


def column_in_pieces(frame: pl.DataFrame, expr: pl.Expr, dtype: type) -> np.ndarray:
    """``frame.select(expr)``'s one column as a new NumPy array of ``dtype``, evaluated on slices
    of :data:`PIECE_ROWS` rows and written into the array piece by piece.

    The same values as ``frame.select(expr).to_series().to_numpy()``, with less fresh memory:
    that makes the column in Polars' memory, then copies its chunks into one more column, and
    on ten million rows each new page of Polars' costs more than the arithmetic. A piece's
    memory is small enough to be used again by the next piece, and NumPy's one array asks the
    system for large pages. The pieces are shared by every core (:func:`~evalframe._threads.in_parts`).
    ``expr`` must work row by row (a hash, a cast).
    """
    import numpy as np

    out = np.empty(frame.height, dtype=dtype)

    def fill(first: int, last: int) -> None:
        for start in range(first, last, PIECE_ROWS):
            stop = min(start + PIECE_ROWS, last)
            out[start:stop] = frame.slice(start, stop - start).select(expr).to_series().to_numpy()

    in_parts(frame.height, fill, min_rows=4 * PIECE_ROWS)  # the pieces on every core
    return out


#: Rows of a piece of :func:`column_in_pieces` (4 MB of 64-bit values).
PIECE_ROWS = 1 << 19


def stretch_starts(frame: pl.DataFrame, name: str) -> np.ndarray:
    """The first row (``int64``) of every stretch of equal values of column ``name`` (nulls are
    equal), in order; empty for an empty frame.

    A run-length encoding, not a comparison of neighbours: a constant column (such as the
    default ``system``) stays one value instead of becoming millions of copies.

    >>> stretch_starts(pl.DataFrame({"q": ["a", "a", "b", "a"]}), "q").tolist()
    [0, 2, 3]
    """
    def starts() -> np.ndarray:
        import numpy as np

        if frame.height == 0:
            return np.zeros(0, dtype=np.int64)
        lengths = frame.select(pl.col(name).rle().struct.field("len")).to_series().to_numpy().astype(np.int64)
        return np.cumsum(lengths) - lengths

    return _fact(frame, "starts", name, starts)


def key_stretch_starts(frame: pl.DataFrame, names: tuple[str, ...]) -> np.ndarray:
    """The first row (``int64``) of every stretch of rows equal in all the columns ``names``, in
    order: a stretch ends where any of them changes, so its starts are the sorted union of each
    column's :func:`stretch_starts` (a small sort of those and a comparison of neighbours, no
    array as long as the frame; NumPy's ``union1d`` hashes, several times slower).

    >>> key_stretch_starts(pl.DataFrame({"s": ["a", "a", "a", "b"], "q": [1, 1, 2, 2]}), ("s", "q")).tolist()
    [0, 2, 3]
    """
    def starts() -> np.ndarray:
        import numpy as np

        merged = np.sort(np.concatenate([np.zeros(0, dtype=np.int64), *(stretch_starts(frame, name) for name in names)]))
        return merged[np.r_[True, merged[1:] != merged[:-1]]] if len(merged) else merged

    return _fact(frame, "key starts", ",".join(names), starts)


def distinct_in_blocks(frame: pl.DataFrame, name: str, length: int) -> bool:
    """Whether the :func:`column_hashes` of column ``name`` differ within every block of
    ``length`` rows (row ``r`` in block ``r // length``; ``length`` divides the frame's height).

    Each block's hashes are sorted on their own, a slice of blocks at a time (small sorts that
    stay in the cache, no second array as long as the column; slices on every core), and
    neighbours compared. ``True`` means that no two rows of a block share a value of ``name``;
    ``False``, that two may (or that two values share a hash).
    """
    def verdict() -> bool:
        import numpy as np

        blocks = column_hashes(frame, name).reshape(-1, length)
        step = max(1, _SORTED_CELLS // length)

        def distinct(first: int, last: int) -> bool:
            for start in range(first, last, step):
                part = np.sort(blocks[start:min(start + step, last)], axis=1)
                if (part[:, 1:] == part[:, :-1]).any():
                    return False
            return True

        return all(in_parts(len(blocks), distinct, min_rows=4 * step))  # the blocks on every core

    return _fact(frame, f"distinct in blocks of {length}", name, verdict)


#: Hashes sorted at a time by :func:`distinct_in_blocks` (a few MB: the sorts stay in the cache).
_SORTED_CELLS = 1 << 18


def fact(frame: pl.DataFrame, fact: str, name: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, kept as the fact ``fact`` of column(s) ``name`` of ``frame`` (module docstring):
    for facts that other modules define (a NumPy array handed out is read-only)."""
    return _fact(frame, fact, name, compute)


def begin(frame: pl.DataFrame, fact: str, name: str, compute: Callable[[], Any]) -> None:
    """Begin computing a :func:`fact` on a thread of its own; the first request for it waits for
    the result. Nothing it raises is seen here: the request then computes the fact itself."""
    facts = _facts_of(frame)
    if (fact, name) not in facts:
        facts[fact, name] = begun(compute, f"evalframe-fact-{fact}")


def begun(compute: Callable[[], Any], thread_name: str) -> Future:
    """``compute()`` on a thread of its own (named ``thread_name``): its future, whose result is
    read-only (an array) and whose exception holds no traceback (so no frame, and no table, is
    kept by it): whoever reads a failed one computes the value again, in its own place."""
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(_read_only(compute()))
        except BaseException as error:  # the request computes it again and raises in its own place
            future.set_exception(error.with_traceback(None))

    threading.Thread(target=work, name=thread_name, daemon=True).start()
    return future


def forget(frame: pl.DataFrame, fact: str, name: str) -> None:
    """Drop the fact ``fact`` of ``name`` of ``frame`` (one its stage no longer needs: its memory
    is not kept while the frame lives)."""
    entry = _FACTS.get(id(frame))
    if entry is not None and entry[0]() is frame:
        entry[1].pop((fact, name), None)


def _facts_of(frame: pl.DataFrame) -> dict[tuple[str, str], Any]:
    key = id(frame)
    entry = _FACTS.get(key)
    if entry is None or entry[0]() is not frame:  # none yet, or a freed frame's id reused
        entry = (weakref.ref(frame, lambda _: _FACTS.pop(key, None)), {})
        _FACTS[key] = entry
    return entry[1]


def _read_only(value: Any) -> Any:
    if hasattr(value, "flags"):
        value.flags.writeable = False  # shared: nobody may change it
    return value


def _fact(frame: pl.DataFrame, fact: str, name: str, compute: Callable[[], Any]) -> Any:
    facts = _facts_of(frame)
    value = facts.get((fact, name), _ABSENT)
    if isinstance(value, Future):  # begun on another thread
        if value.exception() is None:
            facts[fact, name] = value = value.result()
            return value
        facts.pop((fact, name), None)
        value = _ABSENT
    if value is _ABSENT:
        value = facts[fact, name] = _read_only(compute())
    return value


_ABSENT = object()
