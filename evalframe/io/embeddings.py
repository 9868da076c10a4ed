"""Reading embedding tables: an id column and a vector column per row, optionally a model column.

An embedding table is Parquet (or, for small data, CSV/TSV or NDJSON/JSONL) with

- ``id``: the vector's identifier (any type; kept as text, as the ranking tables key documents),
- ``vector``: a ``list[float]`` or fixed-size ``array[float, d]`` column; in a CSV file, a JSON
  list written in one field (``"[0.1, -0.2, 0.3]"``),
- optionally ``label`` and ``group`` columns (pairs for alignment, per-label slices), and a
  ``model`` column when one file holds the vectors of several models (one
  :class:`Embeddings` per model).

A ``.npy`` matrix (n × d) is accepted too: its ids are the row numbers ``0 … n−1``. A NumPy
array or a Polars DataFrame is read the same way from Python.

Bad input stops with :class:`~evalframe.errors.InputError` (exit 2) naming the file, the row
(1-based; a CSV file's line) and the value: a missing column, vectors of different lengths, a
null vector, NaN or infinite components, a duplicate id, fewer than 2 vectors. A zero vector is
refused where a cosine is needed (:meth:`Embeddings.unit_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, MAX_LISTED_PROBLEMS, InputError, Problem
from evalframe.io.tables import CSV_SUFFIXES, JSONL_SUFFIXES, PARQUET_SUFFIXES, read_frame

NPY_SUFFIX = ".npy"
#: Cells (rows × d) checked or measured at once: 2M float64 ≈ 16 MB of temporaries.
_BLOCK_CELLS = 2_000_000


def _row_block(vectors: np.ndarray) -> int:
    return max(1, _BLOCK_CELLS // max(1, vectors.shape[1]))


@dataclass(frozen=True)
class Embeddings:
    """The vectors of one model: ``vectors`` (n × d float32 or float64), ``ids`` (text, unique),
    optional ``labels`` / ``groups`` (one per row), and where they came from (``source``)."""

    vectors: np.ndarray
    ids: pl.Series
    source: str = "embeddings"
    model: str = "default"
    labels: pl.Series | None = None
    groups: pl.Series | None = None
    #: How the rows are located in messages: "row" (Parquet, NDJSON, arrays) or "line" (CSV).
    row_word: str = "row"
    #: Added to a 0-based row index to name it in messages (1 for rows, 2 for a CSV's lines).
    row_offset: int = 1
    meta: Mapping[str, object] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.vectors.shape[0]

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def where(self, index: int) -> str:
        """``row 7`` / ``line 8``: a 0-based row index of the file as the user numbers it."""
        return f"{self.row_word} {index + self.row_offset}"

    def locate(self, index: int) -> str:
        """Where this set's vector ``index`` is in its file (a model's rows are a subset of it)."""
        rows = self.meta.get("rows")
        return self.where(int(rows[index]) if rows is not None else int(index))

    def unit_rows(self) -> UnitRows:
        """The rows scaled to unit length, as a view that scales the rows it is asked for
        (no n × d copy). A zero vector has no direction: an :class:`InputError` naming its rows
        (a cosine needs one)."""
        norms = row_norms(self.vectors)
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise InputError(self.source, _listed(
                [Problem(self.locate(int(i)), "vector", f"id {self.ids[int(i)]}", "is a zero vector (a cosine needs a direction)")
                 for i in zero], "vector", "is a zero vector (a cosine needs a direction)"),
                hint="drop the zero vectors, or use metric=\"dot\" for retrieval")
        return UnitRows(self.vectors, 1.0 / norms)


class UnitRows:
    """Unit-length rows of a matrix without a copy of it: ``view[i]`` / ``view[a:b]`` /
    ``view[index_array]`` is those rows of ``vectors`` times their inverse norms (float64)."""

    def __init__(self, vectors: np.ndarray, inverse_norms: np.ndarray) -> None:
        self.vectors, self.inverse_norms = vectors, inverse_norms
        self.shape = vectors.shape
        self.dtype = np.dtype(np.float64)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        scale = self.inverse_norms[rows]
        return self.vectors[rows].astype(np.float64) * (scale[..., None] if np.ndim(scale) else scale)

    def pair_cosines(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """``u_a · u_b`` of each pair: the raw rows' dot product (in their own dtype) times the two
        inverse norms; two gathers, no scaled copies."""
        dots = np.einsum("ij,ij->i", self.vectors[first], self.vectors[second])
        return dots * self.inverse_norms[first] * self.inverse_norms[second]


def row_norms(vectors: np.ndarray) -> np.ndarray:
    """Euclidean norm of every row (float64), block by block (no n × d temporary)."""
    norms = np.empty(vectors.shape[0])
    rows = _row_block(vectors)
    for start in range(0, vectors.shape[0], rows):
        block = vectors[start:start + rows].astype(np.float64, copy=False)
        norms[start:start + rows] = np.sqrt(np.einsum("ij,ij->i", block, block))
    return norms


def _listed(problems: list[Problem], column: str | None, message: str) -> list[Problem]:
    """The first problems one by one and a tally of the rest (errors' convention)."""
    if len(problems) <= MAX_LISTED_PROBLEMS:
        return problems
    return [*problems[:MAX_LISTED_PROBLEMS], Problem.unlisted(column, message, len(problems) - MAX_LISTED_PROBLEMS)]


def read_embeddings(
    source: str | Path | pl.DataFrame | np.ndarray,
    *,
    id: str = "id",
    vector: str = "vector",
    label: str | None = None,
    group: str | None = None,
    model: str | None = None,
    model_column: str = "model",
    name: str | None = None,
    min_vectors: int = 2,
    label_required: bool = True,
) -> dict[str, Embeddings]:
    """Read an embedding table (module docstring) into one :class:`Embeddings` per model.

    ``id``, ``vector``, ``label``, ``group`` and ``model_column`` name the file's columns.
    Each model needs ``min_vectors`` vectors (2 for the intrinsic metrics; a query set may have 1).
    With ``label_required=False`` a missing label (or group) column leaves ``labels`` (``groups``)
    None (a pipeline that adapts to its input) instead of an error.
    The model of a table without ``model_column`` is ``model`` (default: the file's stem, or
    ``"default"``). Rows keep the file's order within each model.

    >>> read_embeddings(np.eye(3, dtype=np.float32))["default"].ids.to_list()
    ['0', '1', '2']
    """
    if isinstance(source, np.ndarray):
        one = _from_matrix(source, name or "array", model or "default", min_vectors)
        return {one.model: one}
    if isinstance(source, pl.DataFrame):
        if not label_required:
            label = label if label in source.columns else None
            group = group if group in source.columns else None
        return _from_frame(source, name or "embedding table", id=id, vector=vector, label=label, group=group,
                           model=model or "default", model_column=model_column, row_word="row", row_offset=1,
                           min_vectors=min_vectors)
    path = Path(source)
    suffix = path.suffix.lower()
    default_model = model or path.stem
    if suffix == NPY_SUFFIX:
        if not path.is_file():
            raise InputError(str(path), Problem(None, None, NO_VALUE, "file not found"))
        try:
            matrix = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read as a .npy matrix: {error}")) from None
        one = _from_matrix(matrix, str(path), default_model, min_vectors)
        return {one.model: one}
    if suffix not in PARQUET_SUFFIXES | set(CSV_SUFFIXES) | JSONL_SUFFIXES:
        msg = f"unknown embedding format `{suffix}` (expected .parquet, .pq, .csv, .tsv, .jsonl, .ndjson or .npy)"
        raise InputError(str(path), Problem(None, None, NO_VALUE, msg))
    frame, _ = read_frame(path)
    if not label_required:
        label = label if label in frame.columns else None
        group = group if group in frame.columns else None
    is_csv = suffix in CSV_SUFFIXES
    return _from_frame(frame, str(path), id=id, vector=vector, label=label, group=group, model=default_model,
                       model_column=model_column, row_word="line" if is_csv else "row", row_offset=2 if is_csv else 1,
                       min_vectors=min_vectors)


def _from_matrix(matrix: np.ndarray, source: str, model: str, min_vectors: int) -> Embeddings:
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.number) or np.issubdtype(matrix.dtype, np.complexfloating):
        raise InputError(source, Problem(None, None, f"shape {matrix.shape}, dtype {matrix.dtype}",
                                         "must be a 2-D matrix of real numbers (one vector per row)"))
    vectors = matrix if matrix.dtype in (np.float32, np.float64) else matrix.astype(np.float64)
    ids = pl.Series("id", np.arange(vectors.shape[0]).astype(str))
    embeddings = Embeddings(vectors=vectors, ids=ids, source=source, model=model)
    _check_values(embeddings, min_vectors=min_vectors)
    return embeddings


def _from_frame(frame: pl.DataFrame, source: str, *, id: str, vector: str, label: str | None, group: str | None,
                model: str, model_column: str, row_word: str, row_offset: int, min_vectors: int) -> dict[str, Embeddings]:
    wanted = {"id": id, "vector": vector, "label": label, "group": group}
    missing = [name for name in wanted.values() if name is not None and name not in frame.columns]
    if missing:
        hint = (f"name the columns (--id / --vector; `input.columns` in a pipeline; id=, vector= in Python); the file has "
                f"{', '.join(f'`{c}`' for c in frame.columns[:12])}")
        raise InputError(source, [Problem(None, name, NO_VALUE, "is not a column of the file") for name in missing], hint=hint)
    frame = frame.with_row_index("_row")
    vectors = _vector_matrix(frame, vector, source, row_word, row_offset)
    models = (frame.get_column(model_column).cast(pl.String).fill_null("default")
              if model_column in frame.columns else pl.Series([model] * frame.height, dtype=pl.String))
    found: dict[str, Embeddings] = {}
    for name in models.unique(maintain_order=True).to_list():
        rows = np.flatnonzero((models == name).to_numpy())
        part = frame[rows] if len(rows) != frame.height else frame
        embeddings = Embeddings(
            vectors=vectors[rows] if len(rows) != frame.height else vectors,
            ids=part.get_column(id).cast(pl.String).rename("id"),
            source=source, model=str(name),
            labels=part.get_column(label).rename("label") if label else None,
            groups=part.get_column(group).rename("group") if group else None,
            row_word=row_word, row_offset=row_offset,
            meta={"rows": part.get_column("_row").to_numpy()},
        )
        _check_values(embeddings, id_column=id, min_vectors=min_vectors)
        found[embeddings.model] = embeddings
    return found


def _vector_matrix(frame: pl.DataFrame, column: str, source: str, row_word: str, row_offset: int) -> np.ndarray:
    """The vector column as an n × d float matrix; one problem per null or mis-sized vector."""
    series = frame.get_column(column)
    where = lambda i: f"{row_word} {i + row_offset}"  # noqa: E731
    if series.dtype == pl.String:
        series = _parse_json_lists(series, column, source, where)
    if isinstance(series.dtype, pl.Array):
        if series.null_count():
            bad = np.flatnonzero(series.is_null().to_numpy())
            raise InputError(source, _listed([Problem(where(int(i)), column, None, "has no vector") for i in bad],
                                             column, "has no vector"))
        matrix = series.to_numpy()
        return _as_float(matrix, source, column)
    if not isinstance(series.dtype, pl.List) or not (series.dtype.inner.is_numeric() or series.dtype.inner == pl.Null):
        raise InputError(source, Problem(None, column, str(series.dtype),
                                         "must be a list of numbers or a fixed-size array (one vector per row)"))
    lengths = series.list.len()
    problems = [Problem(where(int(i)), column, None, "has no vector") for i in np.flatnonzero(series.is_null().to_numpy())]
    counts = lengths.drop_nulls()
    if counts.len() == 0:
        raise InputError(source, problems or Problem(None, column, NO_VALUE, "has no vectors"))
    dim = int(counts.mode().sort()[-1]) if counts.n_unique() > 1 else int(counts[0])
    length_values = lengths.fill_null(dim).to_numpy()
    wrong = np.flatnonzero(length_values != dim)
    problems += [Problem(where(int(i)), column, f"{int(length_values[i])} components",
                         f"has a vector of another length than the others ({dim})") for i in wrong]
    if dim == 0:
        problems.append(Problem(None, column, NO_VALUE, "holds empty vectors (0 components)"))
    if problems:
        raise InputError(source, _listed(sorted(problems, key=lambda p: int(p.location.split()[-1]) if p.location else 0),
                                         column, "has a vector of another length than the others"))
    flat = series.explode()
    if flat.null_count():
        first = int(np.flatnonzero(flat.is_null().to_numpy())[0]) // dim
        raise InputError(source, Problem(where(first), column, None, "has a null component"))
    return _as_float(flat.to_numpy().reshape(-1, dim), source, column)


def _as_float(matrix: np.ndarray, source: str, column: str) -> np.ndarray:
    if matrix.dtype in (np.float32, np.float64):
        return matrix
    if not np.issubdtype(matrix.dtype, np.number):
        raise InputError(source, Problem(None, column, str(matrix.dtype), "must hold numbers"))
    return matrix.astype(np.float64)


def _parse_json_lists(series: pl.Series, column: str, source: str, where) -> pl.Series:
    """A CSV's vector column: one JSON list of numbers per field."""
    problems, parsed = [], []
    for index, text in enumerate(series.to_list()):
        try:
            value = None if text is None else json.loads(text)
        except json.JSONDecodeError:
            value = text
        if value is not None and not (isinstance(value, list) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)):
            problems.append(Problem(where(index), column, text, "is not a JSON list of numbers (e.g. [0.1, -0.2])"))
            value = None
        parsed.append(None if value is None else [float(x) for x in value])
    if problems:
        raise InputError(source, _listed(problems, column, "is not a JSON list of numbers (e.g. [0.1, -0.2])"))
    return pl.Series(column, parsed, dtype=pl.List(pl.Float64))


def _check_values(embeddings: Embeddings, id_column: str = "id", min_vectors: int = 2) -> None:
    """Finite components, unique non-null ids, at least ``min_vectors`` vectors: every problem at once."""
    source, vectors = embeddings.source, embeddings.vectors
    at = embeddings.locate
    problems: list[Problem] = []
    finite = np.empty(vectors.shape[0], dtype=bool)
    rows = _row_block(vectors)
    for start in range(0, vectors.shape[0], rows):
        finite[start:start + rows] = np.isfinite(vectors[start:start + rows]).all(axis=1)
    bad = np.flatnonzero(~finite)
    for i in bad[:MAX_LISTED_PROBLEMS]:
        component = int(np.flatnonzero(~np.isfinite(vectors[i]))[0])
        problems.append(Problem(at(i), "vector", float(vectors[i, component]),
                                f"has a component that is not a finite number (component {component})"))
    if bad.size > MAX_LISTED_PROBLEMS:
        problems.append(Problem.unlisted("vector", "has a component that is not a finite number", bad.size - MAX_LISTED_PROBLEMS))
    ids = embeddings.ids
    for i in np.flatnonzero(ids.is_null().to_numpy())[:MAX_LISTED_PROBLEMS]:
        problems.append(Problem(at(i), id_column, None, "has no id"))
    duplicated = ids.is_duplicated().to_numpy() & ids.is_not_null().to_numpy()
    repeats = np.flatnonzero(duplicated & ~ids.is_first_distinct().to_numpy())
    for i in repeats[:MAX_LISTED_PROBLEMS]:
        problems.append(Problem(at(i), id_column, ids[int(i)], f"repeats an id (model `{embeddings.model}`)"))
    if repeats.size > MAX_LISTED_PROBLEMS:
        problems.append(Problem.unlisted(id_column, "repeats an id", repeats.size - MAX_LISTED_PROBLEMS))
    if embeddings.n < min_vectors:
        problems.append(Problem(None, None, NO_VALUE,
                                f"model `{embeddings.model}` has {embeddings.n} vector(s); at least {min_vectors} are needed"))
    if problems:
        raise InputError(source, problems)


def read_pairs(source: str | Path | pl.DataFrame, embeddings: Embeddings, *, first: str = "id_a",
               second: str = "id_b") -> np.ndarray:
    """Positive pairs (``id_a, id_b`` per row) as an (n_pairs × 2) array of row indices into
    ``embeddings``; a pair naming an unknown id is an error naming its row and value."""
    if isinstance(source, pl.DataFrame):
        frame, where, name = source, (lambda i: f"row {i + 1}"), "pairs table"  # noqa: E731
    else:
        frame, _ = read_frame(source)
        is_csv = Path(source).suffix.lower() in CSV_SUFFIXES
        where, name = (lambda i: f"line {i + 2}") if is_csv else (lambda i: f"row {i + 1}"), str(source)  # noqa: E731
    missing = [c for c in (first, second) if c not in frame.columns]
    if missing:
        raise InputError(name, [Problem(None, c, NO_VALUE, "is not a column of the pairs file") for c in missing])
    index = pl.DataFrame({"_id": embeddings.ids, "_index": np.arange(embeddings.n, dtype=np.int64)})
    columns = []
    problems: list[Problem] = []
    for column in (first, second):
        keyed = frame.select(pl.col(column).cast(pl.String).alias("_id")).with_row_index("_row").join(
            index, on="_id", how="left", maintain_order="left")
        unknown = keyed.filter(pl.col("_index").is_null())
        problems += [Problem(where(int(row)), column, value, f"names an id that model `{embeddings.model}` does not have")
                     for row, value in unknown.select("_row", "_id").head(MAX_LISTED_PROBLEMS).iter_rows()]
        columns.append(keyed.get_column("_index").to_numpy())
    if problems:
        raise InputError(name, problems)
    pairs = np.stack(columns, axis=1).astype(np.int64) if frame.height else np.empty((0, 2), dtype=np.int64)
    return pairs


__all__ = ["Embeddings", "UnitRows", "read_embeddings", "read_pairs", "row_norms"]
