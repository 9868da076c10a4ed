"""What a run was given that a metric named in a pipeline cannot carry: an ``embed_fn``, an LLM
critic, an embedding cache file.

``ef.run_pipeline("rag", embed_fn=my_encoder, judge=critic)`` runs the engine inside
:func:`use`; ``embedding_similarity`` and the judge metrics built from their names read
:func:`current` when they hold no encoder or critic of their own (a metric object built in
Python, ``ef.LLMFaithfulnessScore(critic)``, keeps its own). The resources are process-wide
(not a context variable): Polars calls a metric's batch function from its own threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: ``list[str] -> 2-D array`` (one row per text).
EmbedFn = Callable[[list[str]], Any]


@dataclass(frozen=True)
class Resources:
    """The encoder, critic and embedding cache of the current run (each may be None)."""

    embed_fn: EmbedFn | None = None
    critic: Any = None  # an evalframe.semantic.critic.LLMCritic
    embedding_cache: str | None = None


_lock = threading.Lock()
_current = Resources()


def current() -> Resources:
    """The resources of the run in progress (empty outside :func:`use`)."""
    return _current


@contextmanager
def use(resources: Resources) -> Iterator[Resources]:
    """Make ``resources`` current for the duration of a run, then restore what was there."""
    global _current
    with _lock:
        previous, _current = _current, resources
    try:
        yield resources
    finally:
        with _lock:
            _current = previous
