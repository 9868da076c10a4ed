"""Tokens and n-gram counts of texts, vectorised: the kernels of the lexical RAG metrics.

Tokenisers (each text goes through Python once per *distinct* text or token, where Python's own
string semantics define the result; everything after is Polars or NumPy):

- :func:`squad_tokens`: the official SQuAD v1.1 normalisation (lower-case, drop ASCII
  punctuation, drop the words a/an/the, collapse white space), split on spaces; each of the
  three removals can be switched off (seed 000 §4.1 options);
- :func:`rouge_tokens`: rouge-score's tokenizer (lower-case, runs of ``[^a-z0-9]`` become a
  space, Porter stemming of tokens longer than 3 characters with rouge-score's own stemmer);
- :func:`bleu_tokens`: sacrebleu's ``13a`` tokenizer of the right-stripped text, split on spaces
  (its rules as Polars string operations, :func:`tokenize_13a`).

Tokens are held long: a frame ``row, pos, token`` (rows of the input, positions 0-based).
Counting kernels over long tokens:

- :func:`ngram_overlap`: per row, n-grams of A, of B, and ``Σ_g min(count_A(g), count_B(g))``
  (the clipped overlap of ROUGE-N, BLEU and token F1);
- :func:`ngram_support`: per row, n-grams of A that occur anywhere in B (with A's multiplicity);
- :func:`lcs_lengths`: per row, the length of the longest common subsequence (ROUGE-L), one
  dynamic-programming row update for all rows at once (``cur = cummax(max(prev, shift(prev) + match))``).
"""

from __future__ import annotations

import re
import string
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import cache

import numpy as np
import polars as pl

ROW, POS, TOKEN = "row", "pos", "token"

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalise(text: str, *, ignore_case: bool = True, ignore_punctuation: bool = True,
                    ignore_articles: bool = True) -> str:
    """SQuAD v1.1's answer normalisation (all options on), one text.

    >>> squad_normalise("The  Cat's hat!")
    'cats hat'
    """
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = text.translate(_PUNCTUATION)
    if ignore_articles:
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def map_distinct(texts: pl.Series, function: Callable[[str], str]) -> pl.Series:
    """``function`` of each distinct non-null text once, mapped back onto ``texts`` (null stays null)."""
    frame = pl.DataFrame({"_text": texts.cast(pl.String)})
    distinct = frame.get_column("_text").drop_nulls().unique()
    lookup = pl.DataFrame({"_text": distinct, "_value": pl.Series([function(t) for t in distinct.to_list()], dtype=pl.String)})
    return frame.join(lookup, on="_text", how="left", maintain_order="left").get_column("_value")


def _long(spaced: pl.Series) -> pl.DataFrame:
    """Long tokens of texts whose tokens are separated by single spaces (null or "" → no token)."""
    return (
        pl.DataFrame({TOKEN: spaced})
        .with_row_index(ROW)
        .filter(pl.col(TOKEN).is_not_null() & (pl.col(TOKEN) != ""))
        .with_columns(pl.col(TOKEN).str.split(" "))
        .with_columns(pl.int_ranges(0, pl.col(TOKEN).list.len(), dtype=pl.UInt32).alias(POS))
        .explode(TOKEN, POS)
    )


def squad_tokens(texts: pl.Series, *, ignore_case: bool = True, ignore_punctuation: bool = True,
                 ignore_articles: bool = True) -> pl.DataFrame:
    """Long tokens of :func:`squad_normalise` of every text."""
    options = {"ignore_case": ignore_case, "ignore_punctuation": ignore_punctuation, "ignore_articles": ignore_articles}
    return memoised(("squad", *options.values()), (texts,),
                    lambda: _long(map_distinct(texts, lambda text: squad_normalise(text, **options))))


@cache
def _porter():
    """rouge-score's stemmer: NLTK's ``PorterStemmer()`` (what ``DefaultTokenizer(use_stemmer=True)``
    builds). Importing it through ``nltk``'s package costs about 1.5 s of CPU (the package's
    ``__init__`` imports scikit-learn and scipy.stats); unless ``nltk`` is already imported, the
    module ``nltk/stem/porter.py`` and its three small dependencies are loaded from their files
    instead, the same code, and ``sys.modules`` is left as it was. If that fails (another NLTK
    layout), the ordinary import."""
    import sys

    from evalframe.data.text import NLTK_LOCK

    with NLTK_LOCK:  # no other thread imports NLTK while its package is stubbed
        if "nltk" not in sys.modules:
            try:
                return _porter_module().PorterStemmer()
            except Exception:  # noqa: BLE001 - any failure falls back to the ordinary import below
                pass
        from nltk.stem.porter import PorterStemmer

        return PorterStemmer()


def _porter_module():
    """``nltk.stem.porter`` loaded without running ``nltk/__init__.py`` (:func:`_porter`)."""
    import importlib.util
    import sys
    import types
    from pathlib import Path

    spec = importlib.util.find_spec("nltk")  # locates the package without executing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))

    def nltk_modules() -> dict:
        return {name: module for name, module in sys.modules.items() if name == "nltk" or name.startswith("nltk.")}

    saved = nltk_modules()  # put back as they were afterwards, whatever happens
    try:
        for name in saved:
            del sys.modules[name]
        for name, folder in (("nltk", root), ("nltk.stem", root / "stem")):
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]  # a namespace for the submodules, nothing executed
            sys.modules[name] = package
        import nltk.stem.porter as porter  # noqa: PLC0415 - imports nltk.redos, nltk.stem.api, nltk.termsec only

        return porter
    finally:
        for name in nltk_modules():
            del sys.modules[name]
        sys.modules.update(saved)


def rouge_tokens(texts: pl.Series, *, use_stemmer: bool = True) -> pl.DataFrame:
    """Long tokens of ``rouge_score.tokenize.tokenize(text, stemmer)`` of every text.

    Python lower-cases each distinct text (its case mapping is rouge-score's); Polars replaces
    runs of ``[^a-z0-9]`` (ASCII, the same in both engines) and splits; the stemmer runs once per
    distinct token longer than 3 characters.
    """
    return memoised(("rouge", use_stemmer), (texts,), lambda: _rouge_tokens(texts, use_stemmer))


def _rouge_tokens(texts: pl.Series, use_stemmer: bool) -> pl.DataFrame:
    lowered = map_distinct(texts, str.lower)
    spaced = lowered.str.replace_all(r"[^a-z0-9]+", " ").str.strip_chars(" ")
    long = _long(spaced)
    if use_stemmer and long.height:
        stemmer = _porter()
        distinct = long.filter(pl.col(TOKEN).str.len_chars() > 3).get_column(TOKEN).unique()
        stems = pl.DataFrame({TOKEN: distinct, "_stem": pl.Series([stemmer.stem(t) for t in distinct.to_list()], dtype=pl.String)})
        long = long.join(stems, on=TOKEN, how="left", maintain_order="left").with_columns(
            pl.coalesce("_stem", TOKEN).alias(TOKEN)).drop("_stem")
        # rouge-score's final check drops tokens that are not [a-z0-9]+; positions close up.
        long = long.filter(pl.col(TOKEN).str.contains(r"^[a-z0-9]+$")).with_columns(
            pl.int_range(pl.len(), dtype=pl.UInt32).over(ROW).alias(POS))
    return long


#: Python's white space (``str.split()``, ``str.rstrip()``): Unicode White_Space, which is the
#: regex ``\s`` of both engines, and the separators U+001C–U+001F, which Python adds.
_WHITE = r"[\s\x1c-\x1f]"


def tokenize_13a(texts: pl.Series) -> pl.Series:
    """sacrebleu's ``Tokenizer13a()(text.rstrip())`` (what its BLEU does to each segment) as
    Polars string operations, in its order: drop ``<skipped>`` and ``-\\n``, ``\\n`` → space,
    unescape ``&quot; &amp; &lt; &gt;`` one after the other, pad with spaces, then its four
    regular expressions (ASCII punctuation apart; period and comma apart unless next to a digit;
    a dash after a digit apart) and one space between tokens. Leftmost, non-overlapping
    replacement is the same in Python's ``re`` and Rust's ``regex``."""
    text = texts.cast(pl.String).str.replace(_WHITE + "+$", "")
    for old, new in (("<skipped>", ""), ("-\n", ""), ("\n", " "), ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        text = text.str.replace_all(old, new, literal=True)
    text = pl.select(pl.concat_str([pl.lit(" "), pl.lit(text), pl.lit(" ")])).to_series()
    for pattern, replacement in ((r"([\x7b-\x7e\x5b-\x60\x20-\x26\x28-\x2b\x3a-\x40\x2f])", " ${1} "),
                                 (r"([^0-9])([.,])", "${1} ${2} "), (r"([.,])([^0-9])", " ${1} ${2}"), (r"([0-9])(-)", "${1} ${2} ")):
        text = text.str.replace_all(pattern, replacement)
    return text.str.replace_all(_WHITE + "+", " ").str.strip_chars(" ")


def bleu_tokens(texts: pl.Series) -> pl.DataFrame:
    """Long tokens of sacrebleu's ``13a`` tokenizer (after ``rstrip``, as sacrebleu's BLEU): :func:`tokenize_13a`."""
    return memoised(("13a",), (texts,), lambda: _long(tokenize_13a(texts)))


# --- memo: one computation per input, however often the engine asks -----------------------------

#: The last results of :func:`memoised` (a handful: a metric's value is asked for twice in one
#: select, once for the value and once for its skip reason, and every grouping set asks a set
#: metric's per-row counts again for the same rows).
_MEMO: OrderedDict = OrderedDict()
MEMO_SIZE = 64
_MEMO_LOCK = threading.Lock()


def fingerprint(*columns: pl.Series) -> tuple:
    """An order-sensitive fingerprint of whole columns: their length, dtype and row hashes."""
    parts: list = []
    for column in columns:
        hashes = column.hash(seed=11).to_numpy().astype(np.uint64)
        weights = np.arange(1, hashes.size + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        with np.errstate(over="ignore"):
            parts += [column.len(), str(column.dtype), int((hashes * weights).sum(dtype=np.uint64)),
                      int(np.bitwise_xor.reduce(hashes)) if hashes.size else 0]
    return tuple(parts)


def memoised(key: Hashable, columns: tuple[pl.Series, ...], compute: Callable[[], object]) -> object:
    """``compute()`` once per (``key``, content of ``columns``); the last :data:`MEMO_SIZE` kept.
    Safe from several threads (the engine evaluates metric groups side by side): the memo is
    read and written under a lock, ``compute()`` runs outside it."""
    found = (key, fingerprint(*columns))
    with _MEMO_LOCK:
        if found in _MEMO:
            _MEMO.move_to_end(found)
            return _MEMO[found]
    result = compute()
    with _MEMO_LOCK:
        _MEMO[found] = result
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return result


# --- counting -----------------------------------------------------------------------------------


def _codes(*longs: pl.DataFrame) -> list[pl.DataFrame]:
    """The long frames with ``token`` replaced by integer codes shared between them."""
    vocabulary = pl.concat([long.select(TOKEN) for long in longs]).unique().with_row_index("_code")
    return [long.join(vocabulary, on=TOKEN, how="left").select(ROW, POS, pl.col("_code").alias(TOKEN)) for long in longs]


def _grams(long: pl.DataFrame, n: int) -> tuple[pl.DataFrame, list[str]]:
    """Counts of each row's n-grams: ``row, g0..g{n-1}, count``."""
    names = [f"g{i}" for i in range(n)]
    ordered = long.sort(ROW, POS)
    length = pl.len().over(ROW)
    grams = ordered.with_columns(
        *(pl.col(TOKEN).shift(-i).alias(name) for i, name in enumerate(names)), _length=length
    ).filter(pl.col(POS) + n <= pl.col("_length"))
    return grams.group_by(ROW, *names).agg(count=pl.len().cast(pl.Int64)), names


def row_totals(long: pl.DataFrame, rows: int, n: int = 1) -> np.ndarray:
    """Number of n-grams of each row: ``max(tokens − n + 1, 0)``."""
    tokens = np.bincount(long.get_column(ROW).to_numpy(), minlength=rows).astype(np.int64)
    return np.maximum(tokens - n + 1, 0)


def ngram_overlap(a: pl.DataFrame, b: pl.DataFrame, rows: int, n: int) -> np.ndarray:
    """``Σ_g min(count_a(g), count_b(g))`` over the n-grams of each row (0 for a row without)."""
    a, b = _codes(a, b)
    grams_a, names = _grams(a, n)
    grams_b, _ = _grams(b, n)
    both = grams_a.join(grams_b, on=[ROW, *names], how="inner", suffix="_b")
    per_row = both.group_by(ROW).agg(pl.min_horizontal("count", "count_b").sum().alias("overlap"))
    out = np.zeros(rows, dtype=np.int64)
    out[per_row.get_column(ROW).to_numpy()] = per_row.get_column("overlap").to_numpy()
    return out


def ngram_support(a: pl.DataFrame, b: pl.DataFrame, rows: int, n: int) -> np.ndarray:
    """``Σ_g count_a(g) · [g occurs in b]`` per row: a's n-grams (with multiplicity) found in b."""
    a, b = _codes(a, b)
    grams_a, names = _grams(a, n)
    grams_b, _ = _grams(b, n)
    found = grams_a.join(grams_b.select(ROW, *names), on=[ROW, *names], how="semi")
    per_row = found.group_by(ROW).agg(pl.col("count").sum())
    out = np.zeros(rows, dtype=np.int64)
    out[per_row.get_column(ROW).to_numpy()] = per_row.get_column("count").to_numpy()
    return out


def ngram_keys(long: pl.DataFrame, n: int) -> pl.DataFrame:
    """Each row's n-grams as text (tokens joined by a space; tokens hold none) with counts."""
    names = [f"g{i}" for i in range(n)]
    ordered = long.sort(ROW, POS)
    grams = ordered.with_columns(
        *(pl.col(TOKEN).shift(-i).alias(name) for i, name in enumerate(names)), _length=pl.len().over(ROW)
    ).filter(pl.col(POS) + n <= pl.col("_length"))
    return grams.group_by(ROW, pl.concat_str(names, separator=" ").alias("ngram")).agg(count=pl.len().cast(pl.Int64))


#: Rows of one dynamic-programming batch of :func:`lcs_lengths` (bounds its memory).
LCS_BATCH = 4096


def lcs_lengths(a: pl.DataFrame, b: pl.DataFrame, rows: int) -> np.ndarray:
    """Length of the longest common subsequence of each row's token sequences.

    Rows are sorted by length and processed in batches; within a batch the classic table is
    filled one row of ``a`` at a time for every pair at once:
    ``cur[j] = max over j' <= j of max(prev[j'], prev[j' − 1] + [a_i = b_j'])``.
    """
    a, b = _codes(a, b)
    out = np.zeros(rows, dtype=np.int64)
    len_a = np.bincount(a.get_column(ROW).to_numpy(), minlength=rows)
    len_b = np.bincount(b.get_column(ROW).to_numpy(), minlength=rows)
    active = np.flatnonzero((len_a > 0) & (len_b > 0))
    if active.size == 0:
        return out
    order = active[np.lexsort((len_b[active], len_a[active]))]
    a_rows, a_pos, a_tok = (a.get_column(c).to_numpy() for c in (ROW, POS, TOKEN))
    b_rows, b_pos, b_tok = (b.get_column(c).to_numpy() for c in (ROW, POS, TOKEN))
    slot = np.full(rows, -1, dtype=np.int64)
    for start in range(0, order.size, LCS_BATCH):
        batch = order[start:start + LCS_BATCH]
        slot[batch] = np.arange(batch.size)
        width_a, width_b = int(len_a[batch].max()), int(len_b[batch].max())
        grid_a = np.full((batch.size, width_a), -1, dtype=np.int64)
        grid_b = np.full((batch.size, width_b), -2, dtype=np.int64)
        in_a, in_b = slot[a_rows] >= 0, slot[b_rows] >= 0
        grid_a[slot[a_rows[in_a]], a_pos[in_a]] = a_tok[in_a]
        grid_b[slot[b_rows[in_b]], b_pos[in_b]] = b_tok[in_b]
        prev = np.zeros((batch.size, width_b + 1), dtype=np.int32)
        for i in range(width_a):
            match = grid_b == grid_a[:, i:i + 1]
            step = np.maximum(prev[:, 1:], prev[:, :-1] + match)
            prev = prev.copy()
            prev[:, 1:] = np.maximum.accumulate(step, axis=1)
        out[batch] = prev[:, -1]
        slot[batch] = -1
    return out
