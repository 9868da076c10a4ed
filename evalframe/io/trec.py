"""Readers for TREC run and qrels text files.

Formats (fields separated by any run of spaces or tabs):

- run: ``query_id Q0 doc_id rank score system``; as in trec_eval, the rank field is read but
  not used: a topic is ordered by score descending, then doc_id descending.
- qrels: ``query_id iteration doc_id relevance``.

Fields are taken literally, so a doc id may contain ``#`` or any other non-blank character.
Blank lines are ignored, and so are fields past the last one (trec_eval reserves them for
future expansion). A line with too few fields, a score that is not a
number or a relevance that is not an integer is reported with its line number.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalframe.data.contracts import conform, load_contract
from evalframe.errors import NO_VALUE, InputError, Problem

RUN_FIELDS = ("query_id", "q0", "doc_id", "trec_rank", "score", "system")
QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")


def _read_fields(path: Path, fields: tuple[str, ...], kind: str) -> tuple[pl.DataFrame, pl.Series]:
    """Split every non-blank line of ``path`` into ``fields``; return the table and line numbers."""
    try:
        lines = pl.read_csv(
            path,
            has_header=False,
            new_columns=["text"],
            separator="\x1f",
            quote_char=None,
            schema={"text": pl.String},
            raise_if_empty=False,
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError, OSError) as error:
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot read the file as text: {error}")) from None
    lines = lines.with_row_index("line", offset=1).filter(
        pl.col("text").is_not_null() & (pl.col("text").str.strip_chars() != "")
    )
    if lines.height == 0:
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"the {kind} file is empty"))
    split = lines.select(
        "line",
        "text",
        parts=pl.col("text").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" "),
    )
    # trec_eval reads the first fields and ignores what follows ("reserved for future expansion").
    wrong = split.filter(pl.col("parts").list.len() < len(fields))
    if wrong.height:
        def message(found: int) -> str:
            return f"expected {len(fields)} fields ({' '.join(fields)}), found {found}"

        listed = wrong.head(50)
        problems = [Problem(f"line {line}", None, text, message(len(parts))) for line, text, parts in listed.iter_rows()]
        # Lines past the first 50 are counted by their number of fields (one kind of problem each).
        totals = wrong.group_by(found=pl.col("parts").list.len()).agg(pl.len(), first=pl.col("line").min()).sort("found")
        shown = dict(listed.group_by(found=pl.col("parts").list.len()).len().iter_rows())
        for found, total, first in totals.iter_rows():
            if total > shown.get(found, 0):
                problems.append(Problem.unlisted(None, message(found), total - shown.get(found, 0), first=f"line {first}"))
        qrels_shaped = kind == "run" and (wrong.get_column("parts").list.len() == len(QRELS_FIELDS)).all()
        hint = _SWAPPED_HINT if qrels_shaped else _delimited_hint(split.get_column("text").item(0), len(fields))
        raise InputError(str(path), problems, hint=hint)
    table = split.select(
        *(pl.col("parts").list.get(position).alias(name) for position, name in enumerate(fields))
    )
    return table, split.get_column("line")


#: A run file whose lines have a qrels file's four fields: the two files were likely given in the wrong order.
_SWAPPED_HINT = ("its lines have the 4 fields of a qrels file (query_id iteration doc_id relevance): are the qrels "
                 "and the run swapped? `evalframe trec QRELS RUN` takes the qrels first; in Python "
                 "`ef.evaluate(run, qrels, ...)` / `ef.read_run(run)`, `ef.read_qrels(qrels)`")


def _delimited_hint(first_line: str, n_fields: int) -> str | None:
    """A hint when the first line holds enough fields separated by commas or semicolons: a
    table (CSV) rather than a TREC file."""
    for separator, name in ((",", "comma"), (";", "semicolon")):
        if len(first_line.split(separator)) >= n_fields:
            return (
                f"the file looks {name}-separated; a TREC file separates its fields by spaces or tabs. "
                "A table with named columns is read as CSV when its name ends in .csv, or with `format=\"csv\"`"
                + (" and `separator=\";\"`" if separator == ";" else "")
            )
    return None


def read_trec_run(path: str | Path) -> pl.DataFrame:
    """Read a TREC run file into the ``ranking`` table (columns system, query_id, doc_id, score).

    The run tag (6th field) becomes ``system``. The file's rank field is ignored, as trec_eval
    does: the ranking is built from ``score`` (descending) with ties broken by ``doc_id``
    descending.
    """
    path = Path(path)
    table, lines = _read_fields(path, RUN_FIELDS, "run")
    table = table.select("system", "query_id", "doc_id", "score")
    return conform(table, load_contract("ranking"), source=str(path), locate=lambda i: f"line {lines[i]}")


def read_trec_qrels(path: str | Path) -> pl.DataFrame:
    """Read a TREC qrels file into the ``judgments`` table (query_id, doc_id, relevance)."""
    path = Path(path)
    table, lines = _read_fields(path, QRELS_FIELDS, "qrels")
    table = table.select("query_id", "doc_id", "relevance")
    return conform(table, load_contract("judgments"), source=str(path), locate=lambda i: f"line {lines[i]}")
