"""The judge cache: every (provider, model, prompt, parameters, template) → raw answer and score.

Keyed by the sha256 of those five, as JSON (:func:`cache_key`), in a Parquet file (default
``judge_cache.parquet`` next to the results; any declared path). A parse failure is cached like
a score (its answer is what the judge said; a re-run must not ask again); a failed call is not.
The cache holds no credential: neither the key nor the headers of a call are part of it.

Modes (:data:`MODES`): ``record`` (default) calls the judge on a miss and writes the answer;
``live`` calls on a miss and writes nothing; ``replay`` never calls: every miss is listed and
the run stops with exit 2 before anything is computed.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from evalframe._files import add_missing_rows, read_parquet_table
from evalframe.errors import ConfigError

Mode = Literal["live", "record", "replay"]
MODES: tuple[str, ...] = ("live", "record", "replay")
DEFAULT_CACHE_NAME = "judge_cache.parquet"
SCHEMA = {"key": pl.String, "provider": pl.String, "model": pl.String, "template_sha256": pl.String,
          "parameters": pl.String, "prompt": pl.String, "answer": pl.String, "score": pl.Float64, "reason": pl.String}


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(name, pa.float64() if dtype == pl.Float64 else pa.large_string()) for name, dtype in SCHEMA.items()])


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise ConfigError(f"judge mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode  # type: ignore[return-value]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(provider: str, model: str, prompt: str, parameters: dict[str, Any], template_sha256: str) -> str:
    """sha256 of the provider, model, prompt, call parameters and prompt template's hash."""
    payload = json.dumps({"provider": provider, "model": model, "prompt": prompt, "parameters": parameters,
                          "template": template_sha256}, sort_keys=True, ensure_ascii=False)
    return sha256_text(payload)


@dataclass(frozen=True)
class Entry:
    """One cached answer."""

    answer: str
    score: float | None
    reason: str | None


class JudgeCache:
    """A Parquet file of judge answers, read once, written back (atomically) by :meth:`flush`, which
    merges what other writers (threads or processes) added meanwhile (:mod:`evalframe._files`)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._new: list[dict[str, Any]] = []
        if self.path.exists():
            import pyarrow as pa

            try:
                table = pl.from_arrow(read_parquet_table(self.path))  # one version, whoever replaces the file meanwhile
            except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as error:
                raise ConfigError(f"{self.path}: cannot read the judge cache: {error}") from None
            missing = sorted(set(SCHEMA) - set(table.columns))
            if missing:
                raise ConfigError(f"{self.path}: not a judge cache (no column {', '.join(missing)})")
            for key, answer, score, reason in table.select("key", "answer", "score", "reason").iter_rows():
                self._entries[key] = Entry(answer, score, reason)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def put(self, key: str, entry: Entry, **described: Any) -> None:
        with self._lock:
            if key not in self._entries:
                self._entries[key] = entry
                self._new.append({"key": key, **described, "answer": entry.answer, "score": entry.score, "reason": entry.reason})

    def flush(self) -> None:
        """Write the answers added since the last flush (nothing when there are none)."""
        with self._lock:
            if not self._new:
                return
            # pyarrow, not Polars: a judge may be asked inside a metric's Polars function (evalframe._files says why).
            import pyarrow as pa

            # another cache object, of this process or another, may share the file: its answers stay
            add_missing_rows(self.path, pa.Table.from_pylist(self._new, schema=_arrow_schema()), "key")
            self._new.clear()
