"""The legal retrieval files of ``score.py`` (seed 003), read into the engine's tables.

Predictions (a JSON list)::

    [{"query": "...", "retrieved_passages": ["passage text", ...]}, ...]

where a retrieved passage may also be an object ``{"text": ..., "file_path": ..., "span":
[start, end]}`` (LegalBench-RAG style; the span enables ``span_precision@k`` and
``span_recall@k``). Gold (a JSON object)::

    {"tests": [{"query": "...", "snippets": [{"file_path": "cuad/x.txt", "span": [11, 96],
                                              "answer": "..."}, ...]}, ...]}

The tables (:class:`~evalframe.data.tables.Tables`, ``relevance_rule="text"``):

- ``queries``: one row per gold test (``query_id`` its position in ``tests``, zero-padded), with
  ``query_text``, ``benchmark`` (the first folder of its first snippet's ``file_path``:
  ``contractnli``, ``cuad``, ``maud``, ``privacy_qa``; null without a folder), ``top_passage``
  (null when nothing was retrieved) and ``gold_answers``; ``system`` is the predictions file's
  name (without suffix) unless given;
- ``ranking``: the passages of each test's prediction (``doc_id`` ``p<rank>``, ``rank``,
  ``text``, and ``file_path``, ``span_start``, ``span_end`` when any passage has a span);
- ``judgments``: one row per gold snippet (``doc_id`` ``a<position>``, relevance 1, ``text``
  its answer, ``file_path``, ``span_start``, ``span_end``).

Predictions are matched to gold tests by the exact ``query`` text, as score.py does: a test
without a prediction has no ranking (scored 0 everywhere with ``missing="zero"``); predictions
whose query is not in the gold file are ignored; a query predicted twice keeps its last
prediction (score.py reads them into a dict). Each case is counted in a note.

Bad input (not JSON, a wrong shape, a passage that is neither a string nor a passage object, a
snippet without ``answer``, a test without snippets, a span that is not two whole numbers
``0 <= start <= end``) raises :class:`~evalframe.errors.InputError` naming the file and the
JSON path of every problem (``tests[3].snippets[0].answer``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.data.tables import Tables
from evalframe.errors import NO_VALUE, InputError, Problem

#: Benchmarks of LegalBench-RAG (the first folder of a snippet's file_path).
BENCHMARKS = ("contractnli", "cuad", "maud", "privacy_qa")
#: The most problems collected before reading stops.
MAX_PROBLEMS = 50


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)


def _load(path: Path) -> Any:
    if not path.is_file():
        raise InputError(str(path), Problem(None, None, NO_VALUE, "file not found"))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"cannot be read: {error}")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise InputError(str(path), Problem(where, None, NO_VALUE, f"not valid JSON: {error.msg}")) from None


class _Problems(list):
    def add(self, path: str | None, message: str, value: Any = NO_VALUE) -> None:
        self.append(Problem(path or None, None, value, message))


def _span(value: Any, path: str, problems: _Problems) -> tuple[int, int] | None:
    ok = (isinstance(value, list) and len(value) == 2
          and all(isinstance(x, int) and not isinstance(x, bool) for x in value))
    if not ok:
        problems.add(path, f"expected [start, end], two whole numbers, found {_kind(value)}", value)
        return None
    start, end = value
    if start < 0 or end < start:
        problems.add(path, "expected 0 <= start <= end", value)
        return None
    return start, end


def _passage(item: Any, path: str, problems: _Problems) -> tuple[str, str | None, int | None, int | None] | None:
    if isinstance(item, str):
        return item, None, None, None
    if not isinstance(item, dict):
        problems.add(path, f"expected a passage (a string, or an object with `text`, `file_path`, `span`), found {_kind(item)}", item)
        return None
    text = item.get("text")
    if not isinstance(text, str):
        problems.add(f"{path}.text", "required string" if "text" not in item else f"expected a string, found {_kind(text)}",
                     NO_VALUE if "text" not in item else text)
        return None
    file_path = item.get("file_path")
    if file_path is not None and not isinstance(file_path, str):
        problems.add(f"{path}.file_path", f"expected a string, found {_kind(file_path)}", file_path)
        return None
    span = _span(item["span"], f"{path}.span", problems) if item.get("span") is not None else None
    if item.get("span") is not None and span is None:
        return None
    if (span is None) != (file_path is None):
        problems.add(path, "a passage's `span` needs its `file_path` and the other way round")
        return None
    return text, file_path, *(span or (None, None))


def read_predictions(path: str | Path) -> tuple[list[tuple[str, list]], int]:
    """The predictions file as ``(query, passages)`` pairs (each passage ``(text, file_path,
    start, end)``) in file order, and the number of passages with a span."""
    path = Path(path)
    data = _load(path)
    problems = _Problems()
    if not isinstance(data, list):
        raise InputError(str(path), Problem(None, None, NO_VALUE, f"expected a JSON list of predictions, found {_kind(data)}"))
    predictions, n_spans = [], 0
    for i, record in enumerate(data):
        if len(problems) >= MAX_PROBLEMS:
            break
        where = f"[{i}]"
        if not isinstance(record, dict):
            problems.add(where, f"expected an object with `query` and `retrieved_passages`, found {_kind(record)}")
            continue
        query, passages = record.get("query"), record.get("retrieved_passages")
        bad = False
        if not isinstance(query, str):
            problems.add(f"{where}.query", "required key is missing" if "query" not in record else f"expected a string, found {_kind(query)}",
                         NO_VALUE if "query" not in record else query)
            bad = True
        if not isinstance(passages, list):
            missing = "retrieved_passages" not in record
            problems.add(f"{where}.retrieved_passages",
                         "required key is missing" if missing else f"expected a list of passages, found {_kind(passages)}",
                         NO_VALUE if missing else passages)
            continue
        read = [_passage(item, f"{where}.retrieved_passages[{j}]", problems) for j, item in enumerate(passages)]
        if bad or any(p is None for p in read):
            continue
        n_spans += sum(p[1] is not None for p in read)
        predictions.append((query, read))
    if problems:
        raise InputError(str(path), problems)
    return predictions, n_spans


def read_gold(path: str | Path) -> list[tuple[str, list]]:
    """The gold file's tests as ``(query, snippets)`` pairs (each snippet ``(answer, file_path,
    start, end)``), in file order."""
    path = Path(path)
    data = _load(path)
    problems = _Problems()
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        found = _kind(data) if not isinstance(data, dict) else ("no `tests` key" if "tests" not in data else f"`tests` is {_kind(data['tests'])}")
        raise InputError(str(path), Problem("tests" if isinstance(data, dict) else None, None, NO_VALUE,
                                            f'expected an object {{"tests": [...]}}, found {found}'))
    if not data["tests"]:
        raise InputError(str(path), Problem("tests", None, NO_VALUE, "no gold test: `tests` is an empty list"))
    tests = []
    for i, test in enumerate(data["tests"]):
        if len(problems) >= MAX_PROBLEMS:
            break
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            problems.add(where, f"expected an object with `query` and `snippets`, found {_kind(test)}")
            continue
        query, snippets = test.get("query"), test.get("snippets")
        if not isinstance(query, str):
            problems.add(f"{where}.query", "required key is missing" if "query" not in test else f"expected a string, found {_kind(query)}",
                         NO_VALUE if "query" not in test else query)
        if not isinstance(snippets, list) or not snippets:
            message = ("required key is missing" if "snippets" not in test else
                       "needs at least one snippet (recall and nDCG divide by the number of gold answers)" if snippets == []
                       else f"expected a list of snippets, found {_kind(snippets)}")
            problems.add(f"{where}.snippets", message)
            continue
        read = []
        for j, snippet in enumerate(snippets):
            at = f"{where}.snippets[{j}]"
            if not isinstance(snippet, dict):
                problems.add(at, f"expected an object with `answer`, found {_kind(snippet)}")
                continue
            answer, file_path = snippet.get("answer"), snippet.get("file_path")
            if not isinstance(answer, str):
                problems.add(f"{at}.answer", "required key is missing" if "answer" not in snippet else f"expected a string, found {_kind(answer)}",
                             NO_VALUE if "answer" not in snippet else answer)
                continue
            if file_path is not None and not isinstance(file_path, str):
                problems.add(f"{at}.file_path", f"expected a string, found {_kind(file_path)}", file_path)
                continue
            span = None
            if snippet.get("span") is not None:
                span = _span(snippet["span"], f"{at}.span", problems)
                if span is None:
                    continue
            read.append((answer, file_path, *(span or (None, None))))
        if isinstance(query, str) and len(read) == len(snippets):
            tests.append((query, read))
    if problems:
        raise InputError(str(path), problems)
    return tests


def benchmark_of(file_path: str | None) -> str | None:
    """The first folder of a snippet's path (``cuad/x.txt`` → ``cuad``); None without a folder."""
    if not file_path or "/" not in file_path.replace("\\", "/"):
        return None
    return file_path.replace("\\", "/").split("/", 1)[0]


def read_legal(predictions: str | Path, gold: str | Path, *, system: str | None = None) -> Tables:
    """The tables of a predictions file scored against a gold file (module docstring)."""
    predicted, n_spans = read_predictions(predictions)
    tests = read_gold(gold)
    system = system or Path(predictions).stem
    by_query: dict[str, list] = {}
    repeated = 0
    for query, passages in predicted:
        repeated += query in by_query
        by_query[query] = passages  # the last prediction of a query wins, as in a dict
    gold_queries = {query for query, _ in tests}
    unknown = sum(query not in gold_queries for query in by_query)
    width = len(str(max(len(tests) - 1, 0)))
    query_ids = [str(i).zfill(width) for i in range(len(tests))]

    queries = pl.DataFrame({
        "system": [system] * len(tests),
        "query_id": query_ids,
        "query_text": [query for query, _ in tests],
        "benchmark": [benchmark_of(snippets[0][1]) for _, snippets in tests],
        "top_passage": [by_query[q][0][0] if by_query.get(q) else None for q, _ in tests],
        "gold_answers": [[s[0] for s in snippets] for _, snippets in tests],
    }, schema={"system": pl.String, "query_id": pl.String, "query_text": pl.String, "benchmark": pl.String,
               "top_passage": pl.String, "gold_answers": pl.List(pl.String)})

    rows = [(qid, rank, *passage) for qid, (query, _) in zip(query_ids, tests, strict=True)
            for rank, passage in enumerate(by_query.get(query, ()), start=1)]
    ranking = _long(rows, ["query_id", "rank", "text", "file_path", "span_start", "span_end"], spans=n_spans > 0)
    ranking = ranking.with_columns(system=pl.lit(system), doc_id=pl.format("p{}", pl.col("rank"))).select(
        "system", "query_id", "doc_id", pl.exclude("system", "query_id", "doc_id"))
    judged = [(qid, position, *snippet) for qid, (_, snippets) in zip(query_ids, tests, strict=True)
              for position, snippet in enumerate(snippets)]
    any_gold_span = any(row[4] is not None for row in judged)
    judgments = _long(judged, ["query_id", "position", "text", "file_path", "span_start", "span_end"], spans=any_gold_span)
    judgments = judgments.select("query_id", doc_id=pl.format("a{}", pl.col("position")), relevance=pl.lit(1, dtype=pl.Int64),
                                 *[c for c in judgments.columns if c not in ("query_id", "position")])

    notes = []
    missing = sum(query not in by_query for query, _ in tests)
    if missing:
        notes.append(f"{missing} of {len(tests)} gold tests have no prediction: they have an empty ranking and score 0")
    empty = sum(query in by_query and not by_query[query] for query, _ in tests)
    if empty:
        notes.append(f"{empty} predictions retrieve no passage: they score 0")
    if unknown:
        notes.append(f"{unknown} predicted queries are not in the gold file and were ignored")
    if repeated:
        notes.append(f"{repeated} predictions repeat an earlier query; the last one is used (as score.py's dict does)")
    if n_spans == 0:
        notes.append("the predictions carry no character spans: span_precision@k and span_recall@k are skipped")
    empty_answers = sum(not s[0].strip() for _, snippets in tests for s in snippets)
    if empty_answers:
        notes.append(f"{empty_answers} gold answers are empty: every non-empty passage contains them (score.py's substring rule)")
    return Tables(queries=queries, judgments=judgments, ranking_rows=ranking, n_rows=len(tests),
                  notes=tuple(notes), relevance_rule="text")


def _long(rows: Sequence[tuple], names: list[str], *, spans: bool) -> pl.DataFrame:
    schema = {names[0]: pl.String, names[1]: pl.Int64, "text": pl.String, "file_path": pl.String,
              "span_start": pl.Int64, "span_end": pl.Int64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame if spans else frame.drop("file_path", "span_start", "span_end")
