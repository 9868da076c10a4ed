"""Bootstrap replicates as weight vectors over units (DESIGN §2: a replicate is a weight vector).

A replicate gives every unit a count: how many times the unit is drawn, Poisson(1) (the
"Poisson bootstrap", which approximates drawing n units with replacement and, unlike it, needs
no knowledge of n). The count of unit ``u`` in replicate ``r`` is a pure function of
``(seed, u's key values, r)``:

    h(u)    = FNV-1a 64 of the key values' UTF-8 text (a stable hash: the same on every machine
              and every Polars version)
    z(u, r) = SplitMix64(h(u) XOR SplitMix64(seed) + (r + 1) · 0x9E3779B97F4A7C15)
    count   = the Poisson(1) quantile of z / 2^64 (inverse CDF; counts above 20, probability
              < 1e-19, are cut to 20)

So the counts do not depend on the order of the rows, on how the units are split into parts
(each part draws exactly the counts the whole would give its units), or on the system: two
systems evaluated on the same units get the same replicates, which makes every comparison
paired for free. Same seed, same counts, on any machine.

Everything is vectorised over units and replicates (NumPy unsigned 64-bit arithmetic, which
wraps modulo 2^64 as the hash functions require); no Python loop runs over units or
replicates (the only loops run over the bytes of the longest key and over blocks of replicates
that bound memory).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Separates the key columns of a unit in the hash (a byte that UTF-8 text never contains).
_COLUMN_SEPARATOR = np.uint64(0xFF)
#: Poisson(1) cumulative probabilities P(X ≤ k), k = 0 … 19 (counts are cut at 20), as
#: thresholds on 64-bit words: a word z draws the count #{k : z ≥ threshold_k}.
_POISSON_THRESHOLDS = np.array(
    [min(2**64 - 1, int(p * 2.0**64)) for p in np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)])],
    dtype=np.uint64,
)
#: Counts up to this are drawn by comparisons; the rare larger ones (P ≈ 1e-5) by a search.
_COMMON = 6
#: At most this many unit × replicate cells are drawn at once (bounds temporary memory).
_BLOCK_CELLS = 1 << 22


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place: a bijection of 64-bit words whose outputs look independent."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def _text_hash(column: pl.Series) -> np.ndarray:
    """FNV-1a 64 of every value's UTF-8 text (a null hashes as the empty text plus a marker)."""
    import pyarrow as pa  # imported where used

    text = column.cast(pl.String)
    nulls = text.is_null().to_numpy()
    array = pa.array(text.fill_null("").to_arrow()).cast(pa.large_string())
    offsets_buffer, data_buffer = array.buffers()[1], array.buffers()[2]
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[array.offset: array.offset + len(array) + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    hashes = np.full(len(array), _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max(initial=0))):
            inside = lengths > position
            byte = data[starts[inside] + position].astype(np.uint64)
            hashes[inside] = (hashes[inside] ^ byte) * _FNV_PRIME
        # The length (and a null marker) close the value, so "ab" + "c" and "a" + "bc" differ.
        hashes = (hashes ^ lengths.astype(np.uint64)) * _FNV_PRIME
        hashes = (hashes ^ nulls.astype(np.uint64) << np.uint64(8)) * _FNV_PRIME
    return hashes


def unit_hashes(keys: pl.DataFrame) -> np.ndarray:
    """A stable 64-bit hash of each row's key values (all columns of ``keys``, in order).

    The text of each value is hashed, so a key read as the integer 7 and as the text "7" hash
    alike; columns are joined with a separator byte that UTF-8 text never contains.
    """
    if keys.width == 0:
        raise ValueError("unit keys need at least one column")
    hashes = np.full(keys.height, _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in keys.columns:
            hashes = (hashes ^ _text_hash(keys.get_column(name))) * _FNV_PRIME
            hashes = (hashes ^ _COLUMN_SEPARATOR) * _FNV_PRIME
    return hashes


def poisson_counts(keys: pl.DataFrame, resamples: int, seed: int, *, first: int = 0) -> np.ndarray:
    """Replicate counts of the units whose key values are the rows of ``keys``.

    Returns a ``uint8`` array of shape ``(keys.height, resamples)``: column ``j`` is replicate
    ``first + j``, cell ``(i, j)`` how many times unit ``i`` is drawn in it (Poisson(1), see the
    module docstring). Rows with the same key values get the same counts; the result depends
    only on ``(seed, key values, replicate number)``.

    >>> keys = pl.DataFrame({"post_id": ["p1", "p2", "p3"]})
    >>> counts = poisson_counts(keys, resamples=4, seed=0)
    >>> counts.shape, counts.dtype
    ((3, 4), dtype('uint8'))
    >>> bool((poisson_counts(keys[1:], 4, seed=0) == counts[1:]).all())   # parts draw what the whole draws
    True
    """
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    hashes = unit_hashes(keys)
    with np.errstate(over="ignore"):
        seeded = hashes ^ _splitmix64(np.array([seed], dtype=np.uint64))
        counts = np.zeros((keys.height, resamples), dtype=np.uint8)
        block = max(1, _BLOCK_CELLS // max(1, keys.height))
        for start in range(0, resamples, block):
            stop = min(resamples, start + block)
            replicate = np.arange(first + start + 1, first + stop + 1, dtype=np.uint64) * _GOLDEN
            z = _splitmix64(seeded[:, None] + replicate[None, :])
            drawn = counts[:, start:stop]
            for threshold in _POISSON_THRESHOLDS[:_COMMON]:
                drawn += z >= threshold
            rare = np.nonzero(z >= _POISSON_THRESHOLDS[_COMMON - 1])
            drawn[rare] = np.searchsorted(_POISSON_THRESHOLDS, z[rare], side="right")
    return counts
