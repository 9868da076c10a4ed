"""The input readers a pipeline's ``input.format`` names: the bundled ones and those added with
:func:`register_reader`.

Bundled: ``per_query`` (a per_query.csv, :mod:`evalframe.io.per_query`), ``retrieval_results``
(a gold set's results, :mod:`evalframe.io.retrieval_results`), ``legal`` (score.py's JSON with
its gold file, :mod:`evalframe.io.legal`), ``rag`` (RAG output files, :mod:`evalframe.io.rag`),
``recommendations`` (a recommender's lists with its side tables, :mod:`evalframe.io.recommendations`)
``scores`` (scored cases, :mod:`evalframe.io.scores`) and ``embeddings`` (a corpus embedding
table, its query vectors and qrels, :mod:`evalframe.io.embeddings`, retrieved by exact kNN:
:mod:`evalframe.pipeline.embeddings`).

A registered reader turns a file of its own format into a table laid out as one of the input
contracts (``schema``: ``per_query`` or ``retrieval_results``, ``schemas/<schema>.yaml``); that
table then passes through the contract's bundled reader, so it is validated at the same door,
with the same errors, as a file of that format (a new input format is one function):

>>> import evalframe as ef
>>> ef.register_reader("my_jsonl", lambda path: pl.read_ndjson(path).rename({"p": "p_has_evidence"}),
...                    schema="per_query")                                            # doctest: +SKIP
>>> ef.run_pipeline("evidence_contract", input="runs.jsonl", set={"input.format": "my_jsonl"})  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evalframe.errors import ConfigError

#: Formats evalframe reads itself.
BUNDLED_FORMATS = ("per_query", "retrieval_results", "legal", "rag", "recommendations", "scores", "embeddings")
#: Input contracts a registered reader's table may follow.
READER_SCHEMAS = ("per_query", "retrieval_results")


@dataclass(frozen=True)
class Reader:
    """A registered input format: ``read(path)`` gives a table laid out as ``schema``."""

    format: str
    read: Callable[[Path], pl.DataFrame]
    schema: str

    def table(self, path: str | Path) -> pl.DataFrame:
        """The reader's table of ``path``; anything but a Polars DataFrame is a ConfigError."""
        table = self.read(Path(path))
        if not isinstance(table, pl.DataFrame):
            raise ConfigError(f"the reader of format `{self.format}` returned {type(table).__name__}, "
                              f"not a Polars DataFrame laid out as `{self.schema}`")
        return table


_registered: dict[str, Reader] = {}


@dataclass(frozen=True)
class RowReader:
    """A bundled format with one input row per (system, query): such a file splits by query into
    parts that each reader reads on its own, which is how a pipeline's input is read bucket by
    bucket without holding it whole (:mod:`evalframe.pipeline.scanned`).

    ``read(source, spec)`` is the reader on a path or on a frame of the file's rows as
    :func:`~evalframe.io.tables.read_frame` gives them; ``spec`` is the pipeline's ``input:``
    block (``columns``, ``separator``, ``decimal_comma``, ``extracted_outside_candidates``).
    ``query_columns`` are the contract columns whose values name a query (its ``query_id``);
    ``system_column`` the one naming the system (absent: every row is one system)."""

    format: str
    read: Callable[[str | Path | pl.DataFrame, object], object]
    query_columns: tuple[str, ...]
    system_column: str


def _read_per_query(source, spec):
    from evalframe.io.per_query import read_per_query

    return read_per_query(source, columns=spec.columns, separator=spec.separator,
                          decimal_comma=spec.decimal_comma, extracted_outside_candidates=spec.extracted_outside_candidates)


def _read_retrieval_results(source, spec):
    from evalframe.io.retrieval_results import read_retrieval_results

    return read_retrieval_results(source, columns=spec.columns)


def _read_scores(source, spec):
    from evalframe.io.scores import read_scores

    return read_scores(source, columns=spec.columns, separator=spec.separator)


#: The bundled formats read row by row (:class:`RowReader`).
ROW_READERS = {
    "per_query": RowReader("per_query", _read_per_query, ("post_id", "criterion_id"), "config"),
    "retrieval_results": RowReader("retrieval_results", _read_retrieval_results, ("query_id",), "system"),
    "scores": RowReader("scores", _read_scores, ("query_id",), "system"),
}


def register_reader(format: str, fn: Callable[[Path], pl.DataFrame], schema: str) -> Reader:
    """Add the input format ``format``: ``fn(path)`` reads a file into a table laid out as the
    input contract ``schema`` (module docstring). A pipeline names it under ``input.format``.
    A bundled or already registered format is a :class:`~evalframe.errors.ConfigError`."""
    if not isinstance(format, str) or not format.isidentifier():
        raise ConfigError(f"register_reader(): the format must be a name like `my_jsonl`, got {format!r}")
    if format in BUNDLED_FORMATS or format in _registered:
        raise ConfigError(f"register_reader(): the format `{format}` is already registered")
    if schema not in READER_SCHEMAS:
        raise ConfigError(f"register_reader(): `schema` must be one of {', '.join(READER_SCHEMAS)}, got {schema!r}")
    if not callable(fn):
        raise ConfigError(f"register_reader(): `fn` must be a function of a path, got {type(fn).__name__}")
    reader = Reader(format, fn, schema)
    _registered[format] = reader
    return reader


def unregister_reader(format: str) -> None:
    """Remove a format added by :func:`register_reader` (tests, notebooks)."""
    if _registered.pop(format, None) is None:
        raise ConfigError(f"`{format}` was not added by register_reader()")


def registered_reader(format: str) -> Reader | None:
    """The registered reader of ``format``; None for a bundled or unknown one."""
    return _registered.get(format)


def reader_formats() -> tuple[str, ...]:
    """Every format a pipeline may name: the bundled ones, then the registered ones."""
    return (*BUNDLED_FORMATS, *_registered)
