"""Errors a user can act on, and the exit codes of the command line.

Every error evalframe raises for bad input or bad configuration derives from
:class:`EvalframeError`. The command line turns it into one message on stderr and exit
status 2, never a traceback. :class:`InputError` and :class:`ConfigError` carry the individual
problems (file, line or row or key path, column, value) so that every failure is reported at once.

Exit codes (one table, used by every command):

====  ===========================================================================
0     success (warnings allowed)
1     a quality check or gate failed; every output was still written
2     bad input or configuration; nothing written
3     internal error: a short message and where the traceback was saved
====  ===========================================================================
"""

from __future__ import annotations

import os
import re

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any


class ExitCode(IntEnum):
    """The exit status of every ``evalframe`` command (module docstring)."""

    OK = 0
    CHECK_FAILED = 1
    BAD_INPUT = 2
    INTERNAL_ERROR = 3

#: How many problems an error message lists one by one; past it, the message gives the total of
#: each kind of problem instead ("50,000 values in `score` are not numbers; the first at line 2").
MAX_LISTED_PROBLEMS = 20


class EvalframeError(Exception):
    """Base class: a problem with the user's input or configuration (exit status 2).

    Errors pickle with their message and attributes (a Spark task or a worker process sends
    them to the driver as they are, class and message).
    """

    exit_code = ExitCode.BAD_INPUT

    def __reduce__(self):
        return _rebuilt_error, (type(self), self.args, self.__dict__)


def _rebuilt_error(cls: type[EvalframeError], args: tuple, state: dict) -> EvalframeError:
    """An unpickled error: its class, arguments and attributes, without running ``__init__`` again."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


@dataclass(frozen=True)
class Problem:
    """One failing cell or line.

    ``location`` is human-readable ("line 7", "row 3"), ``column`` the column name as the
    user wrote it (or ``None`` for a whole line), ``value`` the offending value.

    A reader that lists only the first failures of a kind (a column and a message) adds one
    :meth:`unlisted` problem that counts the rest, so that messages can give every kind's total.
    """

    location: str | None
    column: str | None
    value: object
    message: str
    #: For a tally made by :meth:`unlisted`: how many failures of this kind are not listed.
    n_unlisted: int = 0

    @classmethod
    def unlisted(cls, column: str | None, message: str, count: int, first: str | None = None) -> Problem:
        """A tally of ``count`` further failures like the listed ones (same ``column`` and
        ``message``); ``first`` locates the first of them when none of its kind is listed."""
        return cls(first, column, _NO_VALUE, message, n_unlisted=count)

    @property
    def kind(self) -> tuple[str | None, str]:
        return self.column, self.message

    def render(self) -> str:
        where = ", ".join(
            part
            for part in (self.location, f"column `{self.column}`" if self.column else None)
            if part
        )
        value = "" if self.value is _NO_VALUE else f" (value: {_show(self.value)})"
        return f"{where}: {self.message}{value}" if where else f"{self.message}{value}"


class _NoValue:
    """The marker of a problem without a value; one object, also after unpickling."""

    def __reduce__(self) -> str:
        return "_NO_VALUE"

    def __repr__(self) -> str:
        return "NO_VALUE"


_NO_VALUE = _NoValue()
NO_VALUE = _NO_VALUE


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def render_problems(source: str, problems: Sequence[Problem], hint: str | None = None) -> str:
    """``<source>: N problems``, one indented line per problem (the first 20; a problem met on
    :data:`COLLAPSE_AT` lines or more said once with its count and first lines), for problems
    not listed the total of each kind with its first location, and a ``hint:`` line when given.

    >>> listed = [Problem(f"line {i}", "score", "0,5", "is not a number") for i in (2, 3)]
    >>> print(render_problems("run.csv", listed + [Problem.unlisted("score", "is not a number", 49_998)]))
    run.csv: 50,000 problems
      line 2, column `score`: is not a number (value: '0,5')
      line 3, column `score`: is not a number (value: '0,5')
      in all: 50,000 values in `score` are not numbers; the first at line 2
    """
    listed = [p for p in problems if not p.n_unlisted]
    count = len(listed) + sum(p.n_unlisted for p in problems)
    head = f"{source}: " + ("1 problem" if count == 1 else f"{count:,} problems")
    totals: dict[tuple[str | None, str], int] = {}
    first: dict[tuple[str | None, str], str | None] = {}
    for problem in problems:
        totals[problem.kind] = totals.get(problem.kind, 0) + (problem.n_unlisted or 1)
        if problem.location:
            first.setdefault(problem.kind, problem.location)
    lines, collapsed, shown = _collapsed_lines(listed, totals)
    lines = lines[:MAX_LISTED_PROBLEMS]
    if count > shown:
        tallies = [_tally(column, message, total, first.get((column, message)))
                   for (column, message), total in totals.items() if (column, message) not in collapsed]
        if tallies:
            lines.append(f"  in all: {tallies[0]}" if len(tallies) == 1 else "  in all:")
        if len(tallies) > 1:
            lines += [f"    {tally}" for tally in tallies]
    if hint:
        lines.append(f"  hint: {hint}")
    return "\n".join([head, *lines])


#: A kind of problem met on this many lines or more is said once, with its count and first lines.
COLLAPSE_AT = 4
_LINE_LOCATION = re.compile(r"(line|row) (\d[\d,]*)")


def _collapsed_lines(listed: Sequence[Problem], totals: dict) -> tuple[list[str], set, int]:
    """The problem lines, each kind met on :data:`COLLAPSE_AT` lines or more said once
    (``lines 1, 2, 3, 4, 5, … (40 lines): expected 6 fields …, found 5 (first value: '…')``);
    also the collapsed kinds and how many problems the lines account for."""
    groups: dict[tuple[str | None, str], list[Problem]] = {}
    for problem in listed:
        groups.setdefault(problem.kind, []).append(problem)
    lines: list[str] = []
    collapsed: set = set()
    shown = 0
    for kind, group in groups.items():
        where = [_LINE_LOCATION.fullmatch(p.location or "") for p in group]
        if len(group) < COLLAPSE_AT or not all(where):
            lines += [f"  {p.render()}" for p in group]
            shown += len(group)
            continue
        unit, total = where[0].group(1), totals[kind]
        numbers = ", ".join(match.group(2) for match in where[:5]) + (", …" if total > 5 else "")
        column = f", column `{kind[0]}`" if kind[0] else ""
        value = "" if group[0].value is _NO_VALUE else f" (first value: {_show(group[0].value)})"
        lines.append(f"  {unit}s {numbers} ({total:,} {unit}s){column}: {kind[1]}{value}")
        collapsed.add(kind)
        shown += total
    return lines, collapsed, shown


def _tally(column: str | None, message: str, total: int, first: str | None) -> str:
    """``50,000 values in `score` are not numbers; the first at line 2``."""
    where = f"; the first at {first}" if first else ""
    unit = (first or "").split(" ")[0] or "problem"  # "line", "row"
    if column is None:
        return f"{total:,} {unit}{'' if total == 1 else 's'}: {message}{where}"
    subject = f"{total:,} value{'' if total == 1 else 's'} in `{column}`"
    return f"{subject} {_plural(message) if total != 1 else message}{where}"


def _plural(message: str) -> str:
    """A problem's message said of several values: "is not a number" → "are not numbers"."""
    words = message.split(" ")
    if words[:2] == ["is", "not"] and len(words) >= 4 and words[2] in ("a", "an") and words[3].isalpha():
        return " ".join(["are", "not", words[3] + "s", *words[4:]])
    verbs = {"is": "are", "has": "have", "lists": "list", "must": "must"}
    if words[0] in verbs:
        return " ".join([verbs[words[0]], *words[1:]])
    return f"(each) {message}"


class InputError(EvalframeError):
    """Input data that breaks its contract; lists every problem found."""

    def __init__(self, source: str, problems: list[Problem] | Problem, *, hint: str | None = None) -> None:
        self.source = source
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        self.hint = hint
        super().__init__(render_problems(source, self.problems, hint))


class ConfigError(EvalframeError):
    """A metric name, option or pipeline definition that cannot be used.

    Raised with one message, or with every problem found (:meth:`of`), each naming its key path.
    """

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        self.problems = list(problems)
        super().__init__(message)

    @classmethod
    def of(cls, problems: Sequence[Problem], source: str = "configuration") -> ConfigError:
        """One error listing ``problems`` under ``source`` (a file or ``configuration``)."""
        return cls(render_problems(source, problems), problems)


def path_argument(value: Any, what: str) -> Path:
    """``value`` (a ``str`` or path-like) as a :class:`~pathlib.Path`; anything else is a
    :class:`ConfigError` naming ``what`` (``ef.load(5)``, ``run_pipeline(input=5)``), never a
    TypeError from deep inside (issue 21 part 5)."""
    if isinstance(value, str | os.PathLike):
        return Path(value)
    raise ConfigError(f"{what} must be a path (a string or pathlib.Path), got {value!r}")
