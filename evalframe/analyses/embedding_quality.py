"""Embedding quality side by side: intrinsic metrics of several models in one tidy table.

:func:`embedding_quality` (``ef.embedding_quality({"a": X_a, "b": X_b}, labels=y)``) computes,
for each model, the metrics of :mod:`evalframe.metrics.embedding_space` (isotropy, the cosine
mean, alignment, uniformity, collapse) and returns one row per (model, slice, metric) with

- ``value``; ``n`` the vectors (or pairs) it is computed over; ``note`` how (uniformity's pair
  count and seed, alignment's pairs);
- ``se``, ``ci_low``, ``ci_high``: a bootstrap interval for the metrics that are means of
  per-vector or per-pair values (``avg_cosine_similarity`` over vectors, ``alignment`` over
  pairs), with the engine's replicate counts (:mod:`evalframe.engine.bootstrap`: Poisson(1)
  counts keyed by the vector's id, or the pair's two ids, so the same ids draw the same counts
  in every model and run) and percentile intervals; null for the other metrics, which are not
  means of independent parts;
- ``target``, ``warning_if`` and ``verdict`` (good / fair / warning) from the chapter's
  thresholds (:data:`~evalframe.metrics.embedding_space.HEALTH`).

``by_label=True`` adds one slice per label (the metrics of that label's vectors; alignment from
its pairs). :func:`embedding_report` returns the table with the eigenvalue spectrum and the
per-dimension variances of each model, which the report plots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from evalframe.errors import ConfigError, InputError, Problem
from evalframe.io.embeddings import Embeddings, read_embeddings, read_pairs
from evalframe.metrics import embedding_space as space
from evalframe.engine.bootstrap import Bootstrap, intervals
from evalframe.engine.replicates import poisson_counts

OVERALL = "overall"
#: Cells (units × resamples) of replicate counts held at once (2M float64 ≈ 16 MB).
_COUNT_CELLS = 2_000_000
#: A fixed number of units per block (tests set it small); None: from _COUNT_CELLS.
_COUNT_ROWS: int | None = None

QUALITY_SCHEMA = {
    "model": pl.String, "slice": pl.String, "label": pl.String, "metric": pl.String, "value": pl.Float64,
    "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64, "note": pl.String,
    "target": pl.String, "warning_if": pl.String, "verdict": pl.String,
}


@dataclass(frozen=True)
class EmbeddingReport:
    """The quality table, each model's eigenvalue spectrum (``model, component, eigenvalue,
    variance_share``) and per-dimension variances (``model, dimension, variance``)."""

    quality: pl.DataFrame
    spectrum: pl.DataFrame
    dimensions: pl.DataFrame

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        return {"embedding_quality": self.quality, "embedding_spectrum": self.spectrum,
                "embedding_dimensions": self.dimensions}


def load_models(models, *, label: str | None = None, id: str = "id", vector: str = "vector", model_column: str = "model",
                label_required: bool = True) -> dict[str, Embeddings]:
    """Model name → :class:`Embeddings` from a mapping (values: arrays, Embeddings or files), a
    single array / file (one model, or one per ``model_column`` value), or a list of files."""
    options = {"label": label, "id": id, "vector": vector, "model_column": model_column, "label_required": label_required}
    if isinstance(models, Embeddings):
        return {models.model: models}
    if isinstance(models, Mapping):
        found = {}
        for name, value in models.items():
            if isinstance(value, Embeddings):
                found[str(name)] = value
                continue
            read = read_embeddings(value, **options, model=str(name), name=str(name))
            if len(read) != 1:
                raise ConfigError(f"model `{name}`: the file holds {len(read)} models ({', '.join(read)}); "
                                  "give one per name, or pass the file alone")
            found[str(name)] = next(iter(read.values()))
        return found
    if isinstance(models, (list, tuple)):
        found = {}
        for value in models:
            for name, embeddings in read_embeddings(value, **options).items():
                if name in found:
                    raise InputError(str(value), Problem(None, "model", name, f"model `{name}` is also in another file"))
                found[name] = embeddings
        return found
    return read_embeddings(models, **options)


def _labels_of(embeddings: Embeddings, labels) -> np.ndarray | None:
    if labels is None or isinstance(labels, str):
        return None if embeddings.labels is None else embeddings.labels.to_numpy()
    values = np.asarray(labels.to_numpy() if isinstance(labels, pl.Series) else labels, dtype=object)
    if values.shape[0] != embeddings.n:
        raise InputError(embeddings.source, Problem(None, "label", f"{values.shape[0]} labels",
                                                    f"model `{embeddings.model}` has {embeddings.n} vectors"))
    return values


def _pairs_of(embeddings: Embeddings, pairs, labels: np.ndarray | None) -> tuple[np.ndarray | None, str]:
    if pairs is not None:
        if isinstance(pairs, np.ndarray):
            array = pairs.astype(np.int64)
            if array.ndim != 2 or array.shape[1] != 2 or (array.size and (array.min() < 0 or array.max() >= embeddings.n)):
                raise InputError("pairs", Problem(None, None, f"shape {pairs.shape}",
                                                  f"must be (n_pairs × 2) row indices below {embeddings.n}"))
            return array, f"{array.shape[0]:,} given pairs"
        array = read_pairs(pairs, embeddings)
        return array, f"{array.shape[0]:,} pairs from {pairs if isinstance(pairs, str | Path) else 'the pairs table'}"
    if labels is not None:
        array = space.pairs_from_labels(labels)
        return array, f"{array.shape[0]:,} pairs within labels (first {space.LABEL_PAIR_MEMBERS} members of each)"
    return None, "no positive pairs (give labels or pairs)"


def mean_interval(values: np.ndarray, keys: pl.DataFrame, settings: Bootstrap) -> tuple[float, float, float]:
    """``(se, ci_low, ci_high)`` of the mean of ``values`` (one per unit, keyed by ``keys``)
    under the engine's Poisson replicate counts, accumulated over row blocks (no units ×
    resamples matrix at once)."""
    numerator = np.zeros(settings.resamples)
    denominator = np.zeros(settings.resamples)
    rows = _COUNT_ROWS or max(1, _COUNT_CELLS // settings.resamples)
    for start in range(0, values.size, rows):
        counts = poisson_counts(keys[start:start + rows], settings.resamples, settings.seed).astype(np.float64)
        numerator += values[start:start + rows] @ counts
        denominator += counts.sum(axis=0)
    replicates = np.divide(numerator, denominator, out=np.full(settings.resamples, np.nan), where=denominator > 0)
    found = intervals(replicates[None, :], np.array([values.mean()]), settings.confidence)
    return float(found.se[0]), float(found.low[0]), float(found.high[0])


def _model_rows(embeddings: Embeddings, rows: np.ndarray | None, pairs: np.ndarray | None, pair_note: str, *,
                bootstrap: Bootstrap | None, dead_threshold: float, pair_budget: int, sample_size: int,
                seed: int, alpha: float, t: float) -> tuple[list[dict], space.Spectrum]:
    """The metric rows of one model (or of the vectors ``rows`` of it, for a label's slice)."""
    if rows is None:
        sub = embeddings
    else:  # a label's vectors; messages still name the rows of the file
        file_rows = embeddings.meta.get("rows")
        sub = replace(embeddings, vectors=embeddings.vectors[rows], ids=embeddings.ids.gather(rows),
                      meta={"rows": rows if file_rows is None else file_rows[rows]})
    X, ids = sub.vectors, sub.ids
    U = sub.unit_rows()
    spectrum = space.Spectrum.of(X)
    n = X.shape[0]
    out: list[dict] = []

    def add(metric, value, *, count=n, note=None, interval=(None, None, None)):
        value = None if value is None else float(value)
        rule = space.HEALTH.get(metric)
        out.append({"metric": metric, "value": value, "n": count, "note": note,
                    "se": interval[0], "ci_low": interval[1], "ci_high": interval[2],
                    "target": rule.good_text if rule else None, "warning_if": (rule.warning_text or None) if rule else None,
                    "verdict": rule.verdict(value) if rule else None})

    for metric, value in space.isotropy(spectrum).items():
        add(metric, value)
    contributions = space.cosine_contributions(U)
    interval = (mean_interval(contributions, pl.DataFrame({"id": ids}), bootstrap) if bootstrap is not None
                else (None, None, None))
    add("avg_cosine_similarity", contributions.mean(), interval=interval)
    aligned = None
    if pairs is not None and pairs.shape[0]:
        distances = space.pair_distances(U, pairs, alpha)
        aligned = float(distances.mean())
        keys = pl.DataFrame({"id_a": ids.gather(pairs[:, 0]), "id_b": ids.gather(pairs[:, 1])})
        interval = mean_interval(distances, keys, bootstrap) if bootstrap is not None else (None, None, None)
        add("alignment", aligned, count=pairs.shape[0], note=pair_note, interval=interval)
    else:
        add("alignment", None, count=0, note=pair_note)
    uniform = space.uniformity(U, t, pair_budget=pair_budget, sample_size=sample_size, seed=seed)
    add("uniformity", uniform.value, count=uniform.pairs, note=uniform.note)
    add("alignment_uniformity_sum", None if aligned is None else aligned + uniform.value,
        count=pairs.shape[0] if pairs is not None else 0)
    for metric, value in space.collapse(spectrum, dead_threshold).items():
        if metric not in ("nominal_dimension",):
            add(metric, value)
    return out, spectrum


def embedding_report(
    models,
    *,
    labels: Sequence | np.ndarray | str | None = None,
    pairs=None,
    by_label: bool = False,
    bootstrap: Bootstrap | None = Bootstrap(),
    dead_threshold: float = space.DEAD_THRESHOLD,
    pair_budget: int = space.PAIR_BUDGET,
    sample_size: int = space.SAMPLE_PAIRS,
    seed: int = 0,
    alpha: float = space.ALIGNMENT_ALPHA,
    t: float = space.UNIFORMITY_T,
) -> EmbeddingReport:
    """The quality table, spectra and per-dimension variances of ``models`` (module docstring).

    ``labels``: one label per vector (the same for every model), or the name of the label
    column the embedding files were read with. ``pairs``: positive pairs, an (n_pairs × 2)
    array of row indices or a pairs file / table (``id_a, id_b``); without them, pairs come
    from the labels. ``bootstrap=None`` leaves the intervals out. ``pair_budget``,
    ``sample_size`` and ``seed`` steer uniformity (exact under the budget, else a seeded sample).
    """
    for name, value in (("pair_budget", pair_budget), ("sample_size", sample_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"embedding quality: `{name}` must be a whole number >= 1, got {value!r}")
    found = load_models(models, label=labels if isinstance(labels, str) else None)
    if by_label and labels is None and not any(e.labels is not None for e in found.values()):
        raise ConfigError("embedding quality: `by_label` needs labels (`labels=` or a label column)")
    settings = dict(bootstrap=bootstrap, dead_threshold=dead_threshold, pair_budget=pair_budget,
                    sample_size=sample_size, seed=seed, alpha=alpha, t=t)
    rows, spectra, dimensions = [], [], []
    for name, embeddings in found.items():
        label_values = _labels_of(embeddings, labels)
        pair_array, pair_note = _pairs_of(embeddings, pairs, label_values)
        model_rows, spectrum = _model_rows(embeddings, None, pair_array, pair_note, **settings)
        rows += [{"model": name, "slice": OVERALL, "label": None, **row} for row in model_rows]
        total = spectrum.clamped.sum()
        spectra.append(pl.DataFrame({"model": name, "component": np.arange(1, spectrum.d + 1),
                                     "eigenvalue": spectrum.eigenvalues, "variance_share": spectrum.clamped / total}))
        dimensions.append(pl.DataFrame({"model": name, "dimension": np.arange(spectrum.d), "variance": spectrum.variances}))
        if by_label and label_values is not None:
            rows += _label_rows(name, embeddings, label_values, pair_array, settings)
    quality = pl.DataFrame(rows, schema=QUALITY_SCHEMA)
    return EmbeddingReport(quality=quality.select(list(QUALITY_SCHEMA)), spectrum=pl.concat(spectra),
                           dimensions=pl.concat(dimensions))


def _label_rows(name, embeddings, label_values, pair_array, settings) -> list[dict]:
    """One slice per label with at least 2 vectors; smaller labels are counted in one note row."""
    text = np.array([None if v is None or v != v else str(v) for v in label_values], dtype=object)
    present = np.array([v is not None for v in text])
    values, codes = np.unique(text[present].astype(str), return_inverse=True)
    members = np.flatnonzero(present)
    rows, too_small = [], 0
    for code, value in enumerate(values):
        subset = members[codes == code]
        if subset.size < 2:
            too_small += 1
            continue
        local = None
        if pair_array is not None:
            inside = np.isin(pair_array[:, 0], subset) & np.isin(pair_array[:, 1], subset)
            position = np.full(embeddings.n, -1)
            position[subset] = np.arange(subset.size)
            local = position[pair_array[inside]]
        note = f"{0 if local is None else local.shape[0]:,} pairs within the label"
        label_rows, _ = _model_rows(embeddings, subset, local, note, **settings)
        rows += [{"model": name, "slice": "label", "label": str(value), **row} for row in label_rows]
    if too_small:
        rows.append({"model": name, "slice": "label", "label": None, "metric": "labels_with_one_vector",
                     "value": float(too_small), "n": too_small, "note": "labels with fewer than 2 vectors have no slice",
                     "se": None, "ci_low": None, "ci_high": None, "target": None, "warning_if": None, "verdict": None})
    return rows


def embedding_quality(models, **options) -> pl.DataFrame:
    """The tidy quality table of :func:`embedding_report` (same arguments).

    >>> rng = np.random.default_rng(0)
    >>> table = embedding_quality({"a": rng.normal(size=(200, 16))}, labels=rng.integers(0, 4, 200), bootstrap=None)
    >>> table.filter(pl.col("metric") == "embedding_dim")["value"].item()
    16.0
    """
    return embedding_report(models, **options).quality


__all__ = ["EmbeddingReport", "embedding_quality", "embedding_report", "load_models", "mean_interval"]
