"""Ranking construction: from a validated run table to ranked, judged item rows.

- With a ``rank`` column, the given order is the ranking (ranks need not be contiguous;
  two items of one query with the same rank are an error).
- With only ``score``, items are ordered by score descending, then ``doc_id`` descending
  (trec_eval's tie rule, a byte-wise string comparison).

The result carries ``rank`` as the 1-based position in that order, optionally cut at
``max_depth`` items per query (trec_eval ``-M``), and is sorted by system, query and rank.

:func:`judged_ranks` finds the same ranks for the judged items only, without sorting the
run's strings (millions of rows): what the item-metric stage (:mod:`evalframe.engine.per_unit`) needs when every
metric ignores unjudged items.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING

import polars as pl

from evalframe._sorting import sort_split_in_place
from evalframe._threads import in_parts
from evalframe.data import layout
from evalframe.data.units import QUERY_KEYS
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem

if TYPE_CHECKING:
    import numpy as np

def rank_items(run: pl.DataFrame, *, max_depth: int | None = None, source: str = "run") -> pl.DataFrame:
    """Return ``run`` sorted by system, query and rank, with ``rank`` = 1-based position."""
    if "rank" in run.columns:
        _reject_tied_ranks(run, source)
        ordered = run.sort([*QUERY_KEYS, "rank"])
    else:
        ordered = run.sort([*QUERY_KEYS, "score", "doc_id"], descending=[False, False, True, True])
    ranked = ordered.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(QUERY_KEYS))
    if max_depth is not None:
        ranked = ranked.filter(pl.col("rank") <= max_depth)
    return ranked


def _reject_tied_ranks(run: pl.DataFrame, source: str) -> None:
    tied = (
        run.group_by([*QUERY_KEYS, "rank"])
        .agg(pl.col("doc_id").head(2), pl.len().alias("count"))
        .filter(pl.col("count") > 1)
        .sort([*QUERY_KEYS, "rank"])
    )
    if tied.height:
        problems = [
            Problem(
                None,
                "rank",
                rank,
                f"query {query_id!r} of system {system!r} gives rank {rank} to {count} items "
                f"({', '.join(map(repr, docs))}, ...); a given order cannot have ties",
            )
            for system, query_id, rank, docs, count in tied.head(20).iter_rows()
        ]
        raise InputError(source, problems)


#: The largest finite single-precision float.
FLOAT32_MAX = 3.4028234663852886e38


def single_precision_scores(run: pl.DataFrame, *, source: str = "run") -> pl.DataFrame:
    """``run`` with each score rounded to the nearest 32-bit float, as trec_eval stores it.

    trec_eval reads a score as a double and keeps it in a ``float``: two scores that differ only
    beyond single precision (20.401 and 20.401000001) tie there, and its tie rule (doc_id
    descending) orders them. A score beyond float32's finite range is an error
    (:func:`check_single_precision`). NaN scores are left to the ranking's own checks.
    """
    check_single_precision(run, source=source)
    return run.with_columns(pl.col("score").cast(pl.Float32).cast(pl.Float64))


def check_single_precision(run: pl.DataFrame, *, source: str = "run") -> None:
    """Raise when a score of ``run`` is beyond float32's finite range (|score| > 3.4028235e38):
    it has no defined single-precision value (C leaves the conversion undefined), so trec_eval's
    ranking is undefined; the error names the rows (the first 20) and ``source``."""
    score = pl.col("score")
    too_large = (score.abs() > FLOAT32_MAX) & score.is_finite()
    if not run.select(too_large.any()).item():
        return
    rows = run.filter(too_large)
    problems = [
        Problem(None, "score", value, f"query {query_id!r}, doc {doc_id!r}: beyond the range of a 32-bit float, "
                "where trec_eval's ranking is undefined; rescale the scores or evaluate with 64-bit scores")
        for query_id, doc_id, value in rows.head(20).select("query_id", "doc_id", "score").iter_rows()
    ]
    if rows.height > 20:
        problems.append(Problem(None, "score", NO_VALUE, f"{rows.height} scores in all are beyond float32's range"))
    raise InputError(source, problems)


def judge_items(ranked: pl.DataFrame, judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """Attach each ranked item's judged ``relevance`` (null if unjudged) and ``is_relevant``."""
    judged = ranked.join(
        judgments.select("query_id", "doc_id", "relevance"),
        on=["query_id", "doc_id"],
        how="left",
        maintain_order="left",
    )
    return judged.with_columns(is_relevant=(pl.col("relevance") >= relevance_threshold).fill_null(False))


def query_context(
    judgments: pl.DataFrame, ideal_partials: Mapping[str, pl.Expr] | None = None, *, relevance_threshold: int = 1
) -> pl.DataFrame:
    """Per-query facts from the judgments: ``n_relevant`` and the metrics' ``ideal_partials``.

    The ideal ranking of a query is its judged items with a positive grade, best grade first;
    its rows carry ``rank``, ``relevance``, ``is_relevant`` and ``relevant_at_rank`` like a
    ranking's. Queries without a positive grade are absent (their context is all zeros).
    """
    ideal = (
        judgments.lazy()
        .filter(pl.col("relevance") > 0)  # every relevant item, as the threshold is >= 1
        .sort("query_id", "relevance", descending=[False, True])
        .with_columns(rank=position_in_run("query_id"), is_relevant=pl.col("relevance") >= relevance_threshold)
        .with_columns(relevant_at_rank=running_sum_in_run("is_relevant", "query_id"))
    )
    context = ideal.group_by("query_id").agg(
        n_relevant=pl.col("is_relevant").sum().cast(pl.Int64), **(ideal_partials or {})
    )
    return context.collect(engine="in-memory")  # streaming float sums vary in the last bit


def _run_starts(key: str) -> pl.Expr:
    return pl.col(key).ne_missing(pl.col(key).shift())


def position_in_run(key: str) -> pl.Expr:
    """1-based position of each row among the rows of its ``key``, for rows grouped by ``key``.

    Element-wise (no window over groups): the row number less that of the run's first row.
    """
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    return row - pl.when(_run_starts(key)).then(row).forward_fill() + 1


def running_sum_in_run(column: str, key: str) -> pl.Expr:
    """Running sum of ``column`` within each run of equal ``key``, for rows grouped by ``key``."""
    total = pl.col(column).cast(pl.Int64).cum_sum()
    before = total - pl.col(column).cast(pl.Int64)
    return total - pl.when(_run_starts(key)).then(before).forward_fill()


def check_threshold(relevance_threshold: int) -> None:
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, int) or relevance_threshold < 1:
        msg = f"relevance threshold must be a whole number >= 1, got {relevance_threshold!r}"
        raise ConfigError(msg)


# --- the fast path: ranks of the judged rows, without sorting the run --------------------------


@dataclass(frozen=True, eq=False)
class RowCodes:
    """Each run row's pair code, held as the run's stretches of rows of one pair: ``starts``
    (the first row of each, ``int64``) and ``codes`` (each one's code, ``uint32``) of a run of
    ``height`` rows.

    The column of codes itself (a number per run row: 40 MB of fresh memory on ten million
    rows) is made only when asked for (:attr:`series`, :meth:`to_numpy`); a few rows' codes
    (:meth:`gather`) and whether the codes are sorted (:meth:`is_sorted`) come from the
    stretches. The methods are those of the Series they stand for.
    """

    starts: np.ndarray
    codes: np.ndarray
    height: int

    @cached_property
    def series(self) -> pl.Series:
        """The code of every row (UInt32)."""
        import numpy as np

        return pl.Series("code", np.repeat(self.codes, np.diff(self.starts, append=self.height)), dtype=pl.UInt32)

    def to_numpy(self) -> np.ndarray:
        return self.series.to_numpy()

    def is_sorted(self) -> bool:
        """Whether the rows' codes never decrease."""
        return bool((self.codes[1:] >= self.codes[:-1]).all())

    def gather(self, rows: pl.Series | np.ndarray) -> pl.Series:
        """The codes of ``rows`` (row numbers), each found by a binary search in ``starts``."""
        import numpy as np

        rows = rows.to_numpy() if isinstance(rows, pl.Series) else np.asarray(rows)
        return pl.Series("code", self.codes[np.searchsorted(self.starts, rows, side="right") - 1], dtype=pl.UInt32)


@dataclass(frozen=True, eq=False)
class QueryIndex:
    """The (system, query_id) pairs of a run, numbered, and the number of each row's pair.

    ``pairs`` has ``code`` (0, 1, ... in order of first appearance), ``system``, ``query_id``
    and ``n_rows``; ``row_codes`` gives each run row's ``code`` (:class:`RowCodes`), and
    ``codes`` the same as a Series (UInt32). ``begun`` holds the run's :func:`score_lateness`
    begun early (:func:`begin_score_lateness`), by precision: kept with the index, never on the
    caller's run frame, and cleared once every metric group has ranked (:func:`~evalframe.engine.partials.compute_partials`).
    """

    pairs: pl.DataFrame
    row_codes: RowCodes
    begun: dict[str, Future] = field(default_factory=dict, repr=False)

    @property
    def codes(self) -> pl.Series:
        return self.row_codes.series


def index_queries(run: pl.DataFrame) -> QueryIndex:
    """Number the run's (system, query_id) pairs and give each row its pair's number.

    Runs are usually grouped by query, so the pairs are read off the stretches of rows with
    equal keys (a run-length encoding of each key column; a stretch of the pair ends where
    either key changes) rather than by hashing every row. A run whose rows of one query are
    scattered gives many stretches: slower, as correct.

    >>> run = pl.DataFrame({"system": ["s", "s", "s", "t"], "query_id": ["q2", "q2", "q1", "q2"]})
    >>> index = index_queries(run)
    >>> index.codes.to_list(), index.pairs.rows()
    ([0, 0, 1, 2], [(0, 's', 'q2', 2), (1, 's', 'q1', 1), (2, 't', 'q2', 1)])
    """
    import numpy as np

    start_rows = layout.key_stretch_starts(run, tuple(QUERY_KEYS))
    n_rows = np.diff(start_rows, append=run.height)
    heads = run.select(QUERY_KEYS)[start_rows].with_columns(n_rows=pl.Series(n_rows, dtype=pl.Int64))
    if heads.select(layout.key_hash(QUERY_KEYS).n_unique()).item() == heads.height:
        pairs = heads.with_row_index("code")  # every pair one stretch (distinct hashes, distinct pairs): no group-by
    else:
        pairs = (
            heads.group_by(QUERY_KEYS, maintain_order=True)
            .agg(pl.col("n_rows").sum())
            .with_row_index("code")
        )
    if pairs.height == heads.height:  # one stretch per pair: the stretch number is the code
        head_codes = pairs.get_column("code")
    else:
        head_codes = heads.join(pairs.select(*QUERY_KEYS, "code"), on=QUERY_KEYS, how="left", maintain_order="left")
        head_codes = head_codes.get_column("code")
    row_codes = RowCodes(starts=start_rows, codes=head_codes.to_numpy().astype(np.uint32), height=run.height)
    return QueryIndex(pairs=pairs, row_codes=row_codes)


@dataclass(frozen=True)
class JudgedRanking:
    """What item metrics need from a run, short of its unjudged rows.

    ``pairs``: ``code``, ``system``, ``query_id`` and ``n_rows`` (items retrieved) of every
    evaluated (system, query) pair found in the run, by code. ``judged``: ``code``, ``rank``
    and ``relevance`` of every retrieved item that is judged, by code and rank.
    """

    pairs: pl.DataFrame
    judged: pl.DataFrame


def judged_ranks(
    run: pl.DataFrame,
    judgments: pl.DataFrame,
    universe: pl.DataFrame,
    *,
    index: QueryIndex | None = None,
    source: str = "run",
    single_precision: bool = False,
) -> JudgedRanking | None:
    """The rank and relevance of every judged item the run retrieved for the ``universe`` pairs.

    The ranks are those of :func:`rank_items` (given ranks, or score descending then doc_id
    descending), found without sorting the run's rows: each row gets one 64-bit key, the pair
    code in the high bits and its lateness (the rank, or the score's bits turned so that higher
    scores come first) in the low ones. A judged item's rank is one plus the number of keys of
    its pair below its own: counted directly in the pair's block of rows when every pair has
    the same number of rows, one block after the other (the usual layout, and no sort:
    :func:`_counts_in_blocks`), else found by binary search in the keys sorted as plain
    integers. Items whose key is shared are tied: their order is settled by doc_id among the
    few rows concerned.

    With ``single_precision`` the scores are compared as 32-bit floats, as trec_eval stores them
    (:func:`single_precision_scores`): the key then holds the float32's 32 bits whole, so two
    keys tie exactly when the rounded scores do, and a score beyond float32's range is an error
    naming ``source`` (:func:`check_single_precision`).

    Returns None when the shortcut cannot vouch for the result (a score that is NaN or loses
    its order in the key, a (query_id, doc_id) listed twice): callers then use
    :func:`rank_items` and :func:`judge_items`. Tied given ranks are reported as
    :func:`rank_items` reports them.

    >>> run = pl.DataFrame({"system": "s", "query_id": "q1", "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 1.0]})
    >>> judgments = pl.DataFrame({"query_id": "q1", "doc_id": ["a", "x"], "relevance": [1, 2]})
    >>> judged_ranks(run, judgments, run.select(QUERY_KEYS)).judged.rows()  # a ties c, c goes first
    [(0, 3, 1)]
    """
    import numpy as np

    index = index if index is not None else index_queries(run)
    evaluated = universe.select(QUERY_KEYS)
    if layout.same_keys(evaluated, index.pairs, QUERY_KEYS):  # the run's pairs, in its order (trec): no join
        wanted = index.pairs
    else:
        wanted = index.pairs.join(evaluated.unique(), on=QUERY_KEYS, how="semi")
    codes: pl.Series | RowCodes = index.row_codes
    kept_rows = None
    if wanted.height < index.pairs.height:
        keep = pl.repeat(False, index.pairs.height, eager=True).scatter(wanted.get_column("code"), True)
        kept_rows = keep.gather(index.codes).arg_true()
        run, codes = run[kept_rows], index.codes.gather(kept_rows)
    pairs = wanted.select("code", *QUERY_KEYS, "n_rows")
    if run.height == 0:
        empty = {"code": pl.UInt32, "rank": pl.Int64, "relevance": judgments.schema["relevance"]}
        return JudgedRanking(pairs=pairs, judged=pl.DataFrame(schema=empty))
    by_score = "rank" not in run.columns
    if single_precision and not by_score and "score" in run.columns:
        check_single_precision(run, source=source)  # unused for the order, still refused
    lateness_bits = 64 - max(1, (index.pairs.height - 1).bit_length())
    # Every pair the same number of rows, one block each: count within the blocks, no sort.
    block = _block_length(wanted, codes) if by_score else None
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The judgments are matched while NumPy builds (and sorts) the keys: both cores work.
        if block is not None:
            matching = pool.submit(_matches_in_blocks, run, judgments, wanted, codes, block)
        else:
            matching = pool.submit(_judged_matches, run, judgments)
        key_options = {"lateness_bits": lateness_bits, "by_score": by_score, "single_precision": single_precision,
                       "source": source, "lateness": _lateness_reader(index, run, kept_rows, single_precision)}
        # Within a block every row has one code: the lateness alone orders them.
        keys = _ranking_keys(run, codes, with_codes=block is None, **key_options)
        sorted_keys = _sorted_keys(keys, codes) if keys is not None and block is None else None
        matches = matching.result()
    if keys is None or matches is None:
        return None
    if not by_score and (sorted_keys[1:] == sorted_keys[:-1]).any():
        _reject_tied_ranks(run, source)  # two items of one query share a rank: an error
        return None

    rows = matches.get_column("_row").to_numpy()
    if block is not None and len(rows) * block > _BLOCK_COMPARISONS_PER_ROW * len(keys):
        # Many judged items per block: a sort is cheaper.
        keys = _ranking_keys(run, codes, **key_options)
        block, sorted_keys = None, _sorted_keys(keys, codes)
    judged_keys = keys[rows]
    tie_pairs = None
    if sorted_keys is None:
        below, equal, tie_pairs = _counts_in_blocks(keys, rows, block)
        rank, tied = below + 1, equal > 1
    else:
        # Searching for sorted needles walks the keys in order: far fewer cache misses.
        needle_order = np.argsort(judged_keys)
        first = np.empty(len(rows), dtype=np.int64)
        first[needle_order] = np.searchsorted(sorted_keys, judged_keys[needle_order])
        # Keys sort by pair first, and a pair has n_rows keys: where each pair's keys begin.
        in_order = wanted.sort("code")
        n_rows = in_order.get_column("n_rows").to_numpy()
        pair_start = np.zeros(index.pairs.height, dtype=np.int64)
        pair_start[in_order.get_column("code").to_numpy()] = np.cumsum(n_rows) - n_rows
        rank = first - pair_start[judged_keys >> np.uint64(lateness_bits)] + 1
        # ``first`` is the first of the equal keys: the one after it tells whether there is a tie.
        following = np.minimum(first + 1, len(sorted_keys) - 1)
        tied = (sorted_keys[following] == judged_keys) & (first + 1 < len(sorted_keys))
        del sorted_keys

    judged = pl.DataFrame(
        {
            "code": codes.gather(matches.get_column("_row")),
            "rank": rank,
            "relevance": matches.get_column("relevance"),
        }
    )
    if by_score and tied.any():
        if tie_pairs is None:
            tie_pairs = _tie_pairs_by_key(keys, rows, judged_keys, tied)
        # Keys within blocks hold the whole score, and the matching vouched for distinct doc ids
        # per block (the key check's verdict): every shared key is then a true tie.
        certain = block is not None and layout.distinct_in_blocks(run, "doc_id", block)
        ahead = _ahead_within_ties(run, rows, *tie_pairs, single_precision=single_precision, certain=certain)
        if ahead is None:
            return None
        judged = judged.with_columns(rank=pl.Series(rank + ahead))
    return JudgedRanking(pairs=pairs, judged=judged.sort("code", "rank"))


#: The block count (:func:`_counts_in_blocks`) is used while it compares at most this many keys
#: per run row (a sort of the keys moves each about log2(rows) times).
_BLOCK_COMPARISONS_PER_ROW = 16
#: Judged rows × block length compared at once by :func:`_counts_in_blocks` (half a MB of keys:
#: the comparisons stay in the cache).
_BLOCK_CELLS = 1 << 16


def _block_length(wanted: pl.DataFrame, codes: pl.Series | RowCodes) -> int | None:
    """The rows per pair when the run is pairs of one length each, one block after the other
    (rows grouped by pair, the usual layout), so that row ``r`` is in block ``r // length``;
    else None."""
    lengths = wanted.get_column("n_rows")
    if lengths.len() == 0 or lengths.n_unique() != 1 or not codes.is_sorted():
        return None
    return int(lengths.item(0))


def _counts_in_blocks(keys: np.ndarray, rows: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray, tuple]:
    """For each of ``rows``: how many keys of its block (``length`` rows from ``r // length``)
    are below its own, and how many equal it (itself included). The rank is one more than the
    first; a second equal key is a tie. Also the tie pairs (:func:`_ahead_within_ties`): for
    each row with a tie, its position in ``rows`` and every row of its block sharing its key.
    Chunks of judged rows bound the memory (and fit the cache); parts of the rows are counted
    on every core (:func:`~evalframe._threads.in_parts`)."""
    import numpy as np

    blocks = keys.reshape(-1, length)
    below = np.empty(len(rows), dtype=np.int64)
    equal = np.empty(len(rows), dtype=np.int64)
    step = max(1, _BLOCK_CELLS // length)

    def count(first: int, last: int) -> tuple[list, list]:
        judged, members = [], []
        for start in range(first, last, step):
            stop = min(start + step, last)
            chunk = rows[start:stop]
            own = keys[chunk][:, None]
            block = blocks[chunk // length]
            below[start:stop] = _trues_per_row(block < own)
            same = block == own
            counts = _trues_per_row(same)
            equal[start:stop] = counts
            with_ties = np.flatnonzero(counts > 1)
            which, offset = np.nonzero(same[with_ties])
            judged.append(start + with_ties[which])
            members.append(chunk[with_ties[which]] // length * length + offset)
        return judged, members

    parts = in_parts(len(rows), count, min_rows=16 * step)
    empty = np.zeros(0, dtype=np.int64)
    judged = np.concatenate([empty, *(piece for part in parts for piece in part[0])])
    members = np.concatenate([empty, *(piece for part in parts for piece in part[1])])
    return below, equal, (judged, members)


def _trues_per_row(mask: np.ndarray) -> np.ndarray:
    """The number of true values in each row of a 2-D boolean array, summed as bytes in the
    narrowest unsigned integer that holds a row's length (a third less CPU than NumPy's
    ``count_nonzero`` along an axis)."""
    import numpy as np

    width = mask.shape[1]
    dtype = np.uint8 if width < 1 << 8 else np.uint16 if width < 1 << 16 else np.uint64
    return mask.view(np.uint8).sum(axis=1, dtype=dtype)


def _ranking_keys(
    run: pl.DataFrame,
    codes: pl.Series | RowCodes,
    *,
    lateness_bits: int,
    by_score: bool,
    single_precision: bool = False,
    with_codes: bool = True,
    source: str = "run",
    lateness: Callable[[], np.ndarray] | None = None,
) -> np.ndarray | None:
    """One unsigned integer key per row, that sorts as the rows' ranking does.

    A key holds the row's pair code (with ``with_codes``), then its lateness in the ranking: the
    given rank, or the score's order reversed (:func:`_score_lateness`), cut to
    ``lateness_bits`` when the code shares the 64 bits (two scores the cut cannot tell apart
    look tied, which :func:`_ahead_within_ties` checks). With ``single_precision`` the score is
    first rounded to a 32-bit float, whose 32 bits fit whole (``lateness_bits`` >= 32 while the
    pairs are fewer than 2^32): no cut. Without ``with_codes`` (the count within blocks, where
    every row of a block has one code) the key is the lateness alone, whole, of the score's
    width. None for a NaN score or a rank too large to fit.

    The lateness of the scores is ``lateness()`` (read-only: :func:`_lateness_reader`'s, begun
    beside the derive stage by :func:`begin_score_lateness`), else the run's :func:`score_lateness`;
    the code is added in one more array only when asked for.
    """
    import numpy as np

    if by_score:
        score = run.get_column("score")
        if score.null_count() or score.is_nan().any():  # NumPy would read a null as NaN
            return None
        lateness = lateness() if lateness is not None else score_lateness(run, single_precision=single_precision)
        if single_precision and _has_infinite(lateness):
            check_single_precision(run, source=source)  # a finite score beyond float32: an error
        if not with_codes:
            return lateness
        width = lateness.dtype.itemsize * 8
        if width > lateness_bits:
            lateness = lateness >> lateness.dtype.type(width - lateness_bits)
    else:
        lateness = run.get_column("rank").to_numpy(writable=True)
        if lateness.min() < 0 or int(lateness.max()) >= 1 << lateness_bits:
            return None
        lateness = lateness.view(np.uint64)
        if not with_codes:
            return lateness
    keys = codes.to_numpy().astype(np.uint64)
    keys <<= np.uint64(lateness_bits)
    keys |= lateness
    return keys


def score_lateness(run: pl.DataFrame, *, single_precision: bool = False) -> np.ndarray:
    """Each row's score as a :func:`_score_lateness` (its order reversed, in unsigned integers;
    with ``single_precision`` of the score rounded to a 32-bit float), read-only. Meaningless
    where a score is null or NaN (the caller checks).

    On millions of rows fresh memory costs more than the arithmetic (each new page is a fault
    and a page of zeros): the lateness is made in the one NumPy copy of the scores, written piece
    by piece (:func:`~evalframe.data.layout.column_in_pieces`)."""
    lateness = _lateness_of(run, single_precision)
    lateness.flags.writeable = False
    return lateness


def begin_score_lateness(index: QueryIndex, run: pl.DataFrame, *, single_precision: bool = False) -> None:
    """Begin the :func:`score_lateness` of ``run`` (the run ``index`` numbers) on a thread of its
    own (a stage before the ranking's, whose own work leaves a core idle), kept on ``index``
    (:attr:`QueryIndex.begun`): :func:`judged_ranks` reads it, or the rows of it it ranks, and it
    goes with the index when the evaluation ends (or fails)."""
    precision = _precision(single_precision)
    if precision not in index.begun:
        index.begun[precision] = layout.begun(lambda: _lateness_of(run, single_precision), "evalframe-score-lateness")


def _lateness_reader(index: QueryIndex, run: pl.DataFrame, rows: pl.Series | None,
                     single_precision: bool) -> Callable[[], np.ndarray]:
    """The :func:`score_lateness` of ``run`` (the indexed run's ``rows``, all of them when None),
    made once on the first call: the one begun on ``index`` (waited for; the ``rows`` of it
    taken, a gather instead of a second lateness of the slice), else computed on ``run`` itself
    (also when the begun one failed: its error is then raised here, in its own place)."""

    @cache
    def read() -> np.ndarray:
        begun = index.begun.get(_precision(single_precision))
        if begun is not None and begun.exception() is None:  # waits for the begun one
            whole = begun.result()
            return whole if rows is None else whole[rows.to_numpy()]
        return score_lateness(run, single_precision=single_precision)  # a failed begun one raises here

    return read


def _precision(single_precision: bool) -> str:
    return "score:float32" if single_precision else "score:float64"


def _lateness_of(run: pl.DataFrame, single_precision: bool) -> np.ndarray:
    import numpy as np

    if single_precision:
        values = layout.column_in_pieces(run, pl.col("score").cast(pl.Float32), np.float32)
    else:
        values = layout.column_in_pieces(run, pl.col("score"), np.float64)
    values += values.dtype.type(0.0)  # -0.0 becomes 0.0
    return _score_lateness(values)


def _has_infinite(lateness: np.ndarray) -> bool:
    """Whether a :func:`_score_lateness` (of scores without NaN) holds an infinite score: +inf and
    -inf are its two extremes (two reductions, no mask as long as the run)."""
    import numpy as np

    dtype = np.float32 if lateness.dtype.itemsize == 4 else np.float64
    plus, minus = _score_lateness(np.array([np.inf, -np.inf], dtype=dtype))
    return bool(lateness.min() == plus or lateness.max() == minus)


def _sorted_keys(keys: np.ndarray, codes: pl.Series | RowCodes) -> np.ndarray:
    """``keys`` (:func:`_ranking_keys`) sorted, in a copy."""
    import numpy as np

    ordered = keys.copy()
    if codes.is_sorted():
        # The keys already come by pair: split at a pair boundary, each half sorts on its own.
        code_of_row = codes.to_numpy()
        middle = int(np.searchsorted(code_of_row, code_of_row[len(code_of_row) // 2]))
        sort_split_in_place(ordered, middle)
    else:
        ordered.sort()
    return ordered


def _score_lateness(scores: np.ndarray) -> np.ndarray:
    """Unsigned integers of the scores' width (64 bits for float64, 32 for float32) that sort as
    the scores do, reversed (higher score, lower value).

    The IEEE-754 bits of a float sort as the float when every bit of a negative number is
    flipped and only the sign bit of a positive one; inverting that reverses the order, which
    comes to flipping the low bits (all but the sign) of positive numbers and nothing of
    negative ones. -0.0 must have been read as 0.0 (``scores + 0.0``) for the two to tie. The
    integers are made in the memory of ``scores``, which is overwritten, a slice at a time (the
    masks stay small and in the cache).
    """
    import numpy as np

    width = scores.dtype.itemsize * 8
    signed, unsigned = (np.int64, np.uint64) if width == 64 else (np.int32, np.uint32)
    bits = scores.view(signed)
    low_bits = signed(2 ** (width - 1) - 1)
    for start in range(0, len(bits), _LATENESS_SLICE):
        part = bits[start:start + _LATENESS_SLICE]
        flips = part >> signed(width - 1)  # all ones for negative numbers, zero otherwise
        np.invert(flips, out=flips)
        flips &= low_bits  # ones but the sign for positive numbers, zero otherwise
        part ^= flips
    return bits.view(unsigned)


#: Scores turned into lateness at a time by :func:`_score_lateness`.
_LATENESS_SLICE = 1 << 16


def _tie_pairs_by_key(keys: np.ndarray, rows: np.ndarray, judged_keys: np.ndarray, tied: np.ndarray) -> tuple:
    """The tie pairs of the ``tied`` judged rows (:func:`_ahead_within_ties`), found by one hash
    lookup per run row (a few tens of milliseconds on ten million rows)."""
    import numpy as np

    tied_set = pl.Series(np.unique(judged_keys[tied])).implode()
    members = pl.Series(keys).is_in(tied_set).arg_true()
    group = pl.DataFrame({"_key": pl.Series(keys).gather(members), "_member": members})
    judged = pl.DataFrame({"_key": judged_keys[tied], "_judged": np.flatnonzero(tied)})
    pairs = judged.join(group, on="_key", how="inner")
    return pairs.get_column("_judged").to_numpy(), pairs.get_column("_member").to_numpy()


def _ahead_within_ties(
    run: pl.DataFrame,
    rows: np.ndarray,
    judged: np.ndarray,
    members: np.ndarray,
    *,
    single_precision: bool = False,
    certain: bool = False,
) -> np.ndarray | None:
    """For each of ``rows`` (judged run rows), how many rows sharing its key come first (doc_id
    descending): 0 without a tie. The ties are given as pairs: ``judged[i]`` (a position in
    ``rows``) shares its key with run row ``members[i]`` (itself among them). Scores are
    compared as 32-bit floats with ``single_precision``.

    None when a shared key is not a true tie (two scores that the key could not tell apart) or
    a doc_id repeats within a tie: rare, and left to the exact path. ``certain`` says that
    neither can happen (keys that hold the scores whole, doc ids known to differ within each
    query): the check is skipped.
    """
    import numpy as np

    doc_id = run.get_column("doc_id")
    if not certain:
        own = pl.Series(rows[judged])
        pairs = pl.DataFrame({"_judged": judged, "doc_id": doc_id.gather(pl.Series(members))})
        score = run.get_column("score")
        dtype = pl.Float32 if single_precision else pl.Float64
        scores = pl.DataFrame({
            "_score": score.gather(pl.Series(members)).cast(dtype) + 0.0,  # -0.0 ties 0.0
            "_own_score": score.gather(own).cast(dtype) + 0.0,
        })
        if (scores.select((pl.col("_score") != pl.col("_own_score")).any()).item()
                or pairs.select(pl.struct("_judged", "doc_id").is_duplicated().any()).item()):
            return None

    def ahead(start: int, stop: int) -> np.ndarray:  # whether each pair's member comes first (doc_id descending)
        member_ids = doc_id.gather(pl.Series(members[start:stop]))
        return (member_ids > doc_id.gather(pl.Series(rows[judged[start:stop]]))).to_numpy()

    first = np.concatenate(in_parts(len(judged), ahead))  # parts of the pairs on every core
    return np.bincount(judged, weights=first, minlength=len(rows)).astype(np.int64)


def _matches_in_blocks(
    run: pl.DataFrame, judgments: pl.DataFrame, wanted: pl.DataFrame, codes: pl.Series | RowCodes, length: int
) -> pl.DataFrame | None:
    """:func:`_judged_matches` for a run of blocks (every pair ``length`` rows, one block after
    the other, :func:`_block_length`): each judgment is looked for in its query's block only.

    A judgment takes the code of each evaluated pair of its query (one per system), so its
    block; the block's doc_id hashes (:func:`~evalframe.data.layout.column_hashes`, those of the
    run's key check) are compared with the judgment's, a few judgments at a time (the
    comparisons stay in the cache, as :func:`_counts_in_blocks`'). The key check's verdict that
    the hashes of every block differ (:func:`~evalframe.data.layout.distinct_in_blocks`) leaves
    at most one equal hash per judgment: the first found is the match, checked on the doc_id
    itself (parts of the judgments on every core, :func:`~evalframe._threads.in_parts`). No hash
    of the (query_id, doc_id) pair per run row, no membership test over the run: a block is a
    hundred rows, the run millions. Falls back to :func:`_judged_matches` when a
    block holds two equal hashes or a match is not one, and when the judgments are many per
    block (a hash join is then cheaper).
    """
    import numpy as np

    judged = _with_pair_codes(judgments, wanted)
    if judged.height * length > _BLOCK_COMPARISONS_PER_ROW * run.height:
        return _judged_matches(run, judgments)
    if not layout.distinct_in_blocks(run, "doc_id", length):  # a doc_id twice in a block, or two sharing a hash
        return _judged_matches(run, judgments)
    hashes = layout.column_hashes(run, "doc_id").reshape(-1, length)
    wanted_hashes = judged.select(layout.value_hash("doc_id")).to_series().to_numpy()
    block_codes = codes.gather(np.arange(0, run.height, length)).to_numpy()  # sorted: the blocks in code order
    block_of = np.searchsorted(block_codes, judged.get_column("code").to_numpy())
    rows = np.full(judged.height, -1, dtype=np.int64)
    step = max(1, _BLOCK_CELLS // length)

    doc_id, wanted_ids = run.get_column("doc_id"), judged.get_column("doc_id")

    def find(first: int, last: int) -> bool:
        for start in range(first, last, step):
            stop = min(start + step, last)
            blocks = block_of[start:stop]
            same = hashes[blocks] == wanted_hashes[start:stop, None]
            position = same.argmax(axis=1)  # the first equal hash (the only one), or 0 when none is
            hit = np.flatnonzero(same[np.arange(len(blocks)), position])
            rows[start + hit] = blocks[hit] * length + position[hit]
        # Each match checked on the doc_id itself (a hash that matched another id fails it).
        matched = np.flatnonzero(rows[first:last] >= 0)
        retrieved = doc_id.gather(pl.Series(rows[first:last][matched], dtype=pl.UInt32))
        return bool((retrieved == wanted_ids.slice(first, last - first).gather(pl.Series(matched))).all())

    checked = in_parts(judged.height, find, min_rows=16 * step)  # parts of the judgments on every core
    found = rows >= 0
    matches = judged.filter(pl.Series(found)).select(pl.Series("_row", rows[found], dtype=pl.UInt32), "relevance")
    if not all(checked) or _repeats(matches.get_column("_row").to_numpy()):
        return _judged_matches(run, judgments)  # a hash that matched another id, or a judgment listed twice
    return matches.select("_row", "relevance")


def _with_pair_codes(judgments: pl.DataFrame, wanted: pl.DataFrame) -> pl.DataFrame:
    """``query_id, doc_id, relevance`` of the ``judgments`` joined with the ``code`` of each
    ``wanted`` pair of their query (inner, in the judgments' order).

    Judgments come in stretches of one query (a qrels file is grouped by query): the stretches'
    first query ids (:func:`~evalframe.data.layout.stretch_starts`) are joined, a few hundred
    thousand strings fewer to hash, and each row takes its stretch's code. When a query has
    several pairs (several systems) every row is joined as it is."""
    import numpy as np

    starts = layout.stretch_starts(judgments, "query_id")
    heads = judgments.get_column("query_id").gather(pl.Series(starts)).to_frame().with_row_index("_stretch")
    judgments = judgments.select("query_id", "doc_id", "relevance")
    lengths = np.diff(starts, append=judgments.height)
    head_ids = heads.get_column("query_id")
    if (wanted.height == len(starts) and head_ids.equals(wanted.get_column("query_id"))
            and head_ids.n_unique() == len(starts)):
        # Stretch i is the query of wanted pair i, each query one pair (trec's qrels and run): no join.
        return judgments.with_columns(pl.Series("code", np.repeat(wanted.get_column("code").to_numpy(), lengths), dtype=pl.UInt32))
    found = heads.join(wanted.select("code", "query_id"), on="query_id", how="inner")
    if found.get_column("_stretch").is_duplicated().any():  # a query of several pairs
        return judgments.join(wanted.select("code", "query_id"), on="query_id", how="inner", maintain_order="left")
    code_of_stretch = np.full(len(starts), -1, dtype=np.int64)
    code_of_stretch[found.get_column("_stretch").to_numpy()] = found.get_column("code").to_numpy()
    code = np.repeat(code_of_stretch, lengths)
    kept = code >= 0
    return judgments.filter(pl.Series(kept)).with_columns(pl.Series("code", code[kept], dtype=pl.UInt32))


def _repeats(values: np.ndarray) -> bool:
    """Whether a value occurs twice in ``values`` (a sort of a copy, neighbours compared)."""
    import numpy as np

    ordered = np.sort(values)
    return bool((ordered[1:] == ordered[:-1]).any())


def _judged_matches(run: pl.DataFrame, judgments: pl.DataFrame) -> pl.DataFrame | None:
    """The run rows that are judged: ``_row`` (position in ``run``) and ``relevance``.

    The (query_id, doc_id) pairs are matched through one 64-bit hash per row, much cheaper than
    a join on two strings; each match is then checked on the ids themselves. A hash shared by
    two judged pairs, or a match that is not one, falls back to the string join; None when the
    judgments list a (query_id, doc_id) twice.
    """
    ids = ["query_id", "doc_id"]
    pair_hash = (pl.col("query_id").hash(1) ^ pl.col("doc_id").hash(2)).alias("_pair")
    judged = judgments.select(pair_hash, "relevance", _judgment=pl.int_range(pl.len(), dtype=pl.UInt32))
    if judged.get_column("_pair").n_unique() == judged.height:
        hashed = run.select(pair_hash).with_row_index("_row")
        # Most rows are unjudged: a membership test first leaves the join a few rows to pair.
        candidates = hashed.filter(pl.col("_pair").is_in(judged.get_column("_pair").implode()))
        matches = candidates.join(judged, on="_pair", how="inner")
        rows, judgment_rows = matches.get_column("_row"), matches.get_column("_judgment")
        if run.select(pl.col(ids).gather(rows)).equals(judgments.select(pl.col(ids).gather(judgment_rows))):
            return matches.select("_row", "relevance")
    if judgments.select(pl.struct(ids).is_duplicated().any()).item():
        return None
    return (
        run.select(ids)
        .with_row_index("_row")
        .join(judgments.select(*ids, "relevance"), on=ids, how="inner")
        .select("_row", "relevance")
    )
