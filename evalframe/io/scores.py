"""Read scored cases (anomaly and fraud detection) into the engine's tables.

One row per case: ``query_id``, ``label`` (1 anomaly or fraud, 0 normal), ``prob`` (the
detector's score, higher is more suspicious), optional ``system`` and any slice columns (and
``onset`` / ``detected_at`` for time to detection). The table is the queries table itself (no
ranking, no judgments). ``label`` must be 0 or 1 and ``prob`` a number where given (an empty
cell is a case without it, left out of the metrics that need it and counted); a bad value is
an error naming the file, line and value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.data.tables import Tables
from evalframe.errors import InputError, Problem
from evalframe.io.tables import apply_mapping, read_frame

_LISTED = 20


def read_scores(source: str | Path | pl.DataFrame, *, columns: Mapping[str, str] | None = None,
                separator: str | None = None) -> Tables:
    """:class:`~evalframe.data.tables.Tables` whose queries are the scored cases (module docstring)."""
    if isinstance(source, pl.DataFrame):
        frame, locate, name = source, (lambda index: f"row {index + 1}"), "scores"
    else:
        frame, locate = read_frame(source, separator=separator)
        name = str(source)
    frame, _ = apply_mapping(frame, columns, source=name)
    problems: list[Problem] = []
    for column, dtype, allowed, text in (("label", pl.Int64, (0, 1), "is not 0 or 1"), ("prob", pl.Float64, None, "is not a number")):
        if column not in frame.columns:
            continue
        raw = frame.get_column(column)
        cleaned = raw.cast(pl.String).str.strip_chars() if raw.dtype == pl.String else raw
        values = cleaned.cast(pl.Float64, strict=False)
        given = cleaned.is_not_null() & (cleaned.cast(pl.String) != "")
        bad = given & (values.is_null() | values.is_nan())
        if allowed is not None:
            bad = bad | (given & ~values.is_in(pl.Series([float(a) for a in allowed]).implode()).fill_null(False))
        rows = np.nonzero(bad.fill_null(False).to_numpy())[0]
        problems += [Problem(locate(int(i)), column, raw[int(i)], text) for i in rows[:_LISTED]]
        if rows.size > _LISTED:
            problems.append(Problem.unlisted(column, text, int(rows.size - _LISTED)))
        frame = frame.with_columns(values.cast(dtype).alias(column))
    if problems:
        raise InputError(name, problems)
    queries = conform(frame, load_contract("queries"), source=name, locate=locate)
    judgments = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    return Tables(queries=queries, judgments=judgments, n_rows=queries.height)
