"""Text normalisation and tokenisation shared by text-matching relevance and text metrics.

Both follow Python's own string methods, so that results agree with scripts written with them
(the legal ``score.py``, seed 003) to the last character:

- :func:`normalised`: ``text.strip().lower()``. Polars' ``to_lowercase`` follows a newer
  Unicode version than Python for some 55 characters, and its whitespace set differs from
  ``str.strip()``'s (``\\x1c``–``\\x1f``), so each *distinct* text goes through Python once.
- :func:`word_tokens`: the lower-cased alphanumeric tokens (``str.isalnum()``) of NLTK's word
  tokenizer. NLTK's ``word_tokenize`` needs the ``punkt`` data files, which evalframe never
  downloads: sentences are split by an untrained ``PunktSentenceTokenizer()`` (its default
  parameters, no data) and each sentence by ``NLTKWordTokenizer`` (the Treebank-style
  tokenizer ``word_tokenize`` uses). nltk is imported on first use (the ``legal`` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import polars as pl


def _map_distinct(texts: pl.Series, function: Callable[[str], object], dtype: pl.DataType) -> pl.Series:
    """``function`` applied to each distinct non-null text once, mapped back onto ``texts``."""
    distinct = texts.drop_nulls().unique(maintain_order=True)
    values = pl.Series([function(text) for text in distinct.to_list()], dtype=dtype)
    lookup = pl.DataFrame({"_text": distinct, "_value": values})
    frame = pl.DataFrame({"_text": texts}).join(lookup, on="_text", how="left", maintain_order="left")
    return frame.get_column("_value").alias(texts.name)


def normalise_series(texts: pl.Series) -> pl.Series:
    """``text.strip().lower()`` of every text (null stays null)."""
    return _map_distinct(texts.cast(pl.String), lambda text: text.strip().lower(), pl.String)


def normalised(text: pl.Expr) -> pl.Expr:
    """Expression form of :func:`normalise_series`."""
    return text.map_batches(normalise_series, return_dtype=pl.String, is_elementwise=True)


_TOKENIZERS: tuple | None = None
#: Held while NLTK's modules are imported (here) or loaded around its package
#: (:func:`evalframe.metrics.lexical._porter_module` stubs ``nltk`` in ``sys.modules`` for a moment):
#: metric groups run on two threads, and one must not import NLTK while the other has it stubbed.
NLTK_LOCK = threading.RLock()


def _tokenizers() -> tuple:
    global _TOKENIZERS
    with NLTK_LOCK:
        if _TOKENIZERS is None:
            try:
                from nltk.tokenize import NLTKWordTokenizer
                from nltk.tokenize.punkt import PunktSentenceTokenizer
            except ImportError:  # pragma: no cover - depends on the environment
                from evalframe.errors import ConfigError

                msg = "span F1 tokenises with NLTK, which is not installed: pip install 'evalframe[legal]'"
                raise ConfigError(msg) from None
            _TOKENIZERS = (PunktSentenceTokenizer(), NLTKWordTokenizer())
        return _TOKENIZERS


def word_tokens(text: str) -> list[str]:
    """The alphanumeric tokens of ``text.lower()``: untrained Punkt sentences, then NLTK's word
    tokenizer in each, keeping tokens whose ``str.isalnum()`` is true.

    >>> word_tokens("The Party shall pay $5,000. Non-disclosure applies to Section 2.")
    ['the', 'party', 'shall', 'pay', 'applies', 'to', 'section', '2']
    """
    sentences, words = _tokenizers()
    return [token for sentence in sentences.tokenize(text.lower()) for token in words.tokenize(sentence) if token.isalnum()]


def tokenise_series(texts: pl.Series) -> pl.Series:
    """:func:`word_tokens` of every text, as a list column (null stays null)."""
    return _map_distinct(texts.cast(pl.String), word_tokens, pl.List(pl.String))
