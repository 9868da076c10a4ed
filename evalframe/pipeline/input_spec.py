"""A pipeline's ``input:`` block (:class:`InputSpec`) and the spec as the format accepts it
(:func:`normalized`): what :func:`evalframe.pipeline.early.begin_reading_input` needs to begin
the input's read before the engine (and :mod:`evalframe.pipeline.spec`) is imported."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalframe.pipeline.requires import without_requires


@dataclass(frozen=True)
class InputSpec:
    """Where the per-query data comes from and how its columns are named.

    ``gold`` is the second file of formats that score predictions against a gold standard
    (``legal``); ``--gold`` on the command line overrides it.
    """

    path: str | None = None
    format: str = "per_query"
    columns: Mapping[str, str] = field(default_factory=dict)
    #: A CSV input's field separator (default: `,` for .csv, tab for .tsv).
    separator: str | None = None
    #: Whether a CSV input's numbers have a decimal comma (`0,85`).
    decimal_comma: bool = False
    gold: str | None = None
    #: The samples file of the `rag` format's two-file form (the input is then the outputs file).
    samples: str | None = None
    #: An extracted sentence outside the query's candidates: `error` (default) or `allow`.
    extracted_outside_candidates: str = "error"
    #: The other tables of the `recommendations` format: `ground_truth`, `items` (the catalog),
    #: `history` and `similarity` (paths; :func:`evalframe.io.recommendations.read_recommendations`).
    tables: Mapping[str, str] = field(default_factory=dict)
    #: Format ``embeddings``: the query vectors and the exact kNN settings (``queries``, ``k``, ``similarity``).
    knn: Mapping[str, Any] | None = None


def normalized(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What runs of a spec the format accepts: no ``requires:`` (:func:`~evalframe.pipeline.requires.without_requires`),
    slices as key lists, and the bootstrap unit as the engine reads it (``query`` → ``[query_id]``,
    ``post_id`` → ``[post_id]``)."""
    spec = without_requires(spec)
    bootstrap = spec.get("bootstrap")
    if isinstance(bootstrap, Mapping) and bootstrap.get("unit") is not None:
        unit = bootstrap["unit"]
        columns = [unit] if isinstance(unit, str) else list(unit) if isinstance(unit, list) else unit
        if isinstance(columns, list):
            columns = ["query_id" if c == "query" else c for c in columns]
        spec["bootstrap"] = {**bootstrap, "unit": columns}
    return spec
