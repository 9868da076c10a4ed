"""The ``embeddings`` input format and the ``embedding_quality:`` block of a pipeline.

- :func:`read_embedding_input`: the corpus embedding table (the pipeline's input; one system
  per ``model``), the query vectors of ``input.knn.queries`` and the qrels (``input.gold``) give
  the engine's tables: the run is :func:`evalframe.knn_run` (exact top ``k``), so the pipeline's
  ranking metrics, slices, bootstrap and ``compare:`` apply as to any run.
- :func:`with_embedding_quality`: after the engine, the quality tables of the corpus vectors
  (:func:`evalframe.embedding_report`), added to the result as ``embedding_quality``,
  ``embedding_spectrum`` and ``embedding_dimensions`` (written as CSV; the report plots them).

A relative ``knn.queries`` path is looked up beside the input file first (by its file name), then
from the current folder, then in the bundle: ``evalframe run embeddings --input my/corpus.parquet``
takes ``my/queries.parquet``, and the bundled pipeline its sample from any folder. Qrels that judge none of the queries are an error naming both files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe._resources import bundled_dir
from evalframe.data.tables import Tables
from evalframe.errors import NO_VALUE, ConfigError, InputError, Problem

if TYPE_CHECKING:
    from evalframe.engine.result import Evaluation
    from evalframe.pipeline.spec import InputSpec, PipelineSpec

#: Columns of the embedding tables that ``input.columns`` may rename. A query table's ``label``
#: and ``group`` become the slice keys ``query_label`` and ``query_group`` of the queries
#: (``slices: {topic: [query_label]}``; the queries table's own ``label`` is the classification label).
EMBEDDING_COLUMNS = ("id", "vector", "model", "label", "group")


def _columns(spec: InputSpec) -> dict[str, str]:
    unknown = sorted(set(spec.columns) - set(EMBEDDING_COLUMNS))
    if unknown:
        raise ConfigError(f"input.columns: format `embeddings` maps {', '.join(EMBEDDING_COLUMNS)}, not {', '.join(unknown)}")
    return {"id": spec.columns.get("id", "id"), "vector": spec.columns.get("vector", "vector"),
            "model_column": spec.columns.get("model", "model")}


def _slice_columns(spec: InputSpec) -> dict[str, str]:
    return {"label": spec.columns.get("label", "label"), "group": spec.columns.get("group", "group")}


def queries_path(given: str, source: str | Path | None) -> Path:
    """Where ``knn.queries`` is: beside the input file, else as given, else in the bundle."""
    path = Path(given)
    candidates = [path]
    if not path.is_absolute():
        if source is not None:
            candidates.insert(0, Path(source).parent / path.name)
        candidates.append(bundled_dir("pipelines").parent / path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise InputError(given, Problem(None, None, NO_VALUE,
                                    "query embeddings not found (input.knn.queries; looked beside the input file, as given "
                                    "and in the bundle)"))


def read_embedding_input(spec: InputSpec, source: str | Path | pl.DataFrame, gold: str | Path | None) -> Tables:
    """The engine's tables of an ``embeddings`` input (module docstring)."""
    from evalframe.engine.knn import knn_run
    from evalframe.io import read_qrels, read_run
    from evalframe.io.embeddings import read_embeddings

    options: dict[str, Any] = dict(spec.knn or {})
    columns = _columns(spec)
    corpus = read_embeddings(source, **columns)
    path = queries_path(options["queries"], source if isinstance(source, str | Path) else None)
    queries = read_embeddings(path, **columns, **_slice_columns(spec), min_vectors=1, label_required=False)
    if set(queries) != set(corpus) and not (len(queries) == 1 and len(corpus) >= 1):
        raise InputError(str(path), Problem(None, columns["model_column"], sorted(queries),
                                            f"the query models differ from the corpus models {sorted(corpus)}"))
    shared = next(iter(queries.values())) if len(queries) == 1 else None
    k, similarity = options.get("k", 100), options.get("similarity", "cosine")
    run = read_run(pl.concat([knn_run(shared if shared is not None else queries[name], vectors, k, similarity, system=name)
                              for name, vectors in corpus.items()]))
    if gold is None:
        raise ConfigError("format `embeddings` needs the qrels: `input.gold` or `--gold FILE`")
    qrels = read_qrels(gold)
    query_ids = set(run.get_column("query_id").unique().to_list())
    judged = set(qrels.get_column("query_id").unique().to_list())
    if not judged & query_ids:
        raise InputError(f"{gold}, {path}", Problem(None, "query_id", NO_VALUE,
                                                    "the qrels judge none of the queries (different query ids?)"),
                         hint="pass the qrels of these queries with --gold FILE")
    unjudged = len(query_ids - judged)
    notes = (f"{unjudged:,} quer{'y has' if unjudged == 1 else 'ies have'} no judgments in {gold}",) if unjudged else ()
    n_vectors = sum(vectors.n for vectors in corpus.values())
    query_table = _query_table(queries, list(corpus), shared is not None)
    return replace(Tables.from_run(run, qrels, query_table, source=str(source)), notes=notes, n_rows=n_vectors)


def _query_table(queries, systems: list[str], shared: bool) -> pl.DataFrame | None:
    """The queries table (system, query_id and the query file's label / group) when the query
    file has a label or group column, so that slices can group queries by them; else None."""
    if all(q.labels is None and q.groups is None for q in queries.values()):
        return None
    parts = []
    for system in systems:
        own = next(iter(queries.values())) if shared else queries[system]
        columns = {"system": pl.Series([system] * own.n, dtype=pl.String), "query_id": own.ids}
        if own.labels is not None:
            columns["query_label"] = own.labels.cast(pl.String)
        if own.groups is not None:
            columns["query_group"] = own.groups.cast(pl.String)
        parts.append(pl.DataFrame(columns))
    return pl.concat(parts, how="diagonal_relaxed")


def with_embedding_quality(evaluation: Evaluation, pipeline: PipelineSpec, source: str | Path | pl.DataFrame) -> Evaluation:
    """The evaluation with the quality tables of the corpus vectors (``embedding_quality:`` block)."""
    from evalframe.analyses.embedding_quality import embedding_report, load_models

    options = dict(pipeline.embedding_quality or {})
    labels = options.pop("labels", None)
    models = load_models(source, label=labels, label_required=False, **_columns(pipeline.input))
    notes = []
    if labels is not None and all(m.labels is None for m in models.values()):
        notes.append(f"embedding quality: the input has no label column `{labels}`; alignment and per-label slices skipped")
        labels, options["by_label"] = None, False
    report = embedding_report(models, labels=labels, bootstrap=pipeline.plan.bootstrap, **options)
    about = {**evaluation.plan.about.get("analyses", {}),
             "embedding_quality": {"labels": labels, **options, "bootstrap": pipeline.plan.bootstrap is not None}}
    evaluation = replace(evaluation.with_tables(**report.tables), notes=(*evaluation.notes, *notes))
    return replace(evaluation, plan=replace(evaluation.plan, about={**evaluation.plan.about, "analyses": about}))
