"""Texts to embeddings, each unique text encoded once per run, in batches, with a disk cache.

:func:`embed` takes a column of texts (nulls allowed) and an encoder: any ``embed_fn``
(``list[str] -> 2-D array``, one row per text) or a sentence-transformers model directory. The
unique non-null texts are looked up in the in-process memo and the Parquet cache (keyed by the
encoder's model id and the text's sha256), the rest are encoded ``batch_size`` at a time (a
progress bar on long work) and added to both. An ``embed_fn`` without a ``model_id`` attribute
has no stable identity, so its embeddings are memoised for the process only, never on disk.

:func:`cosine_pairs` is the cosine similarity of two such columns row by row:
``a·b / (‖a‖ ‖b‖)``; null where either text is null, NaN where either vector is zero.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evalframe._files import add_missing_rows, read_parquet_table
from evalframe._progress import Progress
from evalframe.errors import ConfigError

#: Texts encoded per call of the encoder.
DEFAULT_BATCH_SIZE = 64
CACHE_SCHEMA = {"model_id": pl.String, "text_sha256": pl.String, "embedding": pl.List(pl.Float32)}


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("model_id", pa.large_string()), ("text_sha256", pa.large_string()),
                      ("embedding", pa.large_list(pa.float32()))])


def _vectors(column: Any) -> list[np.ndarray]:
    """The float32 vectors of a pyarrow list column, one array per row."""
    import pyarrow.compute as pc

    column = column.combine_chunks()
    flat = pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return np.split(flat, np.cumsum(pc.list_value_length(column).to_numpy(zero_copy_only=False))[:-1]) if len(column) else []


def text_sha256(texts: list[str]) -> list[str]:
    return [hashlib.sha256(text.encode("utf-8")).hexdigest() for text in texts]


@dataclass(eq=False)
class Encoder:
    """An ``embed_fn`` (or a model's ``encode``) with its identity, memo and optional Parquet cache."""

    encode: Callable[[list[str]], Any]
    model_id: str | None
    cache: Path | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    _memo: dict[str, np.ndarray] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: Texts sent to the encoder by this object (for tests and benchmarks: a re-run sends none).
    n_encoded: int = 0

    def _load_cache(self, hashes: list[str]) -> None:
        # pyarrow, not Polars: this runs inside a metric's Polars function, under the encoder's lock
        # (evalframe._files says why).
        if self.cache is None or self.model_id is None or not self.cache.exists():
            return
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            table = read_parquet_table(self.cache)  # one version, whoever replaces the file meanwhile
            wanted = pa.array(hashes, table["text_sha256"].type)
            found = table.filter(pc.and_(pc.equal(table["model_id"], self.model_id), pc.is_in(table["text_sha256"], value_set=wanted)))
        except (OSError, KeyError, pa.ArrowException) as error:
            raise ConfigError(f"{self.cache}: cannot read the embedding cache: {error}") from None
        for sha, vector in zip(found["text_sha256"].to_pylist(), _vectors(found["embedding"]), strict=True):
            self._memo.setdefault(sha, vector)

    def _save_cache(self, hashes: list[str]) -> None:
        if self.cache is None or self.model_id is None or not hashes:
            return
        import pyarrow as pa
        import pyarrow.compute as pc

        new = pa.table({"model_id": [self.model_id] * len(hashes), "text_sha256": hashes,
                        "embedding": [self._memo[h] for h in hashes]}, schema=_arrow_schema())
        # another encoder, of this process or another, may share the file: its texts of this model stay
        add_missing_rows(self.cache, new, "text_sha256",
                         known=lambda old: old.filter(pc.equal(old["model_id"], self.model_id))["text_sha256"])

    def vectors(self, texts: list[str]) -> np.ndarray:
        """One row per text of ``texts`` (unique texts, in order), encoding only what is not known."""
        hashes = text_sha256(texts)
        with self._lock:
            unknown = [i for i, sha in enumerate(hashes) if sha not in self._memo]
            if unknown:
                self._load_cache([hashes[i] for i in unknown])
                unknown = [i for i in unknown if hashes[i] not in self._memo]
            if unknown:
                with Progress(len(unknown), "embedding texts") as progress:
                    for start in range(0, len(unknown), self.batch_size):
                        batch = unknown[start:start + self.batch_size]
                        encoded = np.asarray(self.encode([texts[i] for i in batch]), dtype=np.float32)
                        if encoded.ndim != 2 or encoded.shape[0] != len(batch):
                            raise ConfigError(f"embed_fn must return a 2-D array with one row per text: got shape "
                                              f"{encoded.shape} for {len(batch)} texts")
                        for i, vector in zip(batch, encoded, strict=True):
                            self._memo[hashes[i]] = vector
                        self.n_encoded += len(batch)
                        progress.advance(len(batch))
                self._save_cache([hashes[i] for i in unknown])
            return np.stack([self._memo[sha] for sha in hashes]) if hashes else np.zeros((0, 0), dtype=np.float32)


_model_encoders: dict[tuple[str, str | None, int], Encoder] = {}
_function_encoders: dict[tuple[int, str | None, int], Encoder] = {}
#: Held while an encoder is looked up or made: metric groups evaluated on two threads get the same one.
_encoders_lock = threading.Lock()


def encoder_for(*, embed_fn: Callable[[list[str]], Any] | None = None, model: str | None = None,
                cache: str | Path | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> Encoder:
    """The encoder of an ``embed_fn`` or of a model directory (None: the bundled MiniLM), one per
    process for each (encoder, cache, batch size), so a run encodes each text once."""
    cache_path = Path(cache) if cache is not None else None
    if embed_fn is not None:
        if not callable(embed_fn):
            raise ConfigError(f"embed_fn must be callable (list[str] -> 2-D array), got {type(embed_fn).__name__}")
        key = (id(embed_fn), str(cache_path), batch_size)
        with _encoders_lock:
            found = _function_encoders.get(key)
            if found is None or found.encode is not embed_fn:
                found = _function_encoders[key] = Encoder(embed_fn, getattr(embed_fn, "model_id", None), cache_path,
                                                          batch_size)
            return found
    from evalframe.semantic.models import model_directory, model_id, sentence_model

    directory = model_directory(model, what="embedding_similarity")
    key = (str(directory), str(cache_path), batch_size)
    with _encoders_lock:  # the model is loaded once, by the first thread that asks
        if key not in _model_encoders:
            loaded = sentence_model(directory)
            encode = lambda texts: loaded.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)  # noqa: E731
            _model_encoders[key] = Encoder(encode, model_id(directory), cache_path, batch_size)
        return _model_encoders[key]


def embed(texts: pl.Series, encoder: Encoder) -> tuple[np.ndarray, np.ndarray]:
    """``(vectors, present)``: one embedding row per non-null text of ``texts`` (in order) and the
    mask of non-null rows; each unique text is encoded once."""
    present = texts.is_not_null().to_numpy()
    values = texts.filter(texts.is_not_null())
    unique = values.unique(maintain_order=True)
    vectors = encoder.vectors(unique.to_list())
    if values.len() == 0:
        return vectors, present
    codes = values.to_frame("text").join(unique.to_frame("text").with_row_index("code"), on="text", how="left",
                                         maintain_order="left")["code"].to_numpy()
    return vectors[codes], present


def cosine_pairs(first: pl.Series, second: pl.Series, encoder: Encoder) -> np.ndarray:
    """Row-wise cosine similarity of the embeddings of two text columns (NaN where a text is null).

    Both columns' unique texts are encoded together, once."""
    both = pl.concat([first.cast(pl.String), second.cast(pl.String)])
    vectors, present = embed(both, encoder)
    rows = first.len()
    full = np.full((2 * rows, vectors.shape[1] if vectors.size else 1), np.nan, dtype=np.float64)
    if vectors.size:
        full[present] = vectors
    a, b = full[:rows], full[rows:]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
