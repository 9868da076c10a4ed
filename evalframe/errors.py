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

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """The exit status of every ``evalframe`` command (module docstring)."""

    OK = 0
    CHECK_FAILED = 1
    BAD_INPUT = 2
    INTERNAL_ERROR = 3

#: How many problems an error message lists before it says "and N more".
MAX_LISTED_PROBLEMS = 20


class EvalframeError(Exception):
    """Base class: a problem with the user's input or configuration (exit status 2)."""

    exit_code = ExitCode.BAD_INPUT


@dataclass(frozen=True)
class Problem:
    """One failing cell or line.

    ``location`` is human-readable ("line 7", "row 3"), ``column`` the column name as the
    user wrote it (or ``None`` for a whole line), ``value`` the offending value.
    """

    location: str | None
    column: str | None
    value: object
    message: str

    def render(self) -> str:
        where = ", ".join(
            part
            for part in (self.location, f"column `{self.column}`" if self.column else None)
            if part
        )
        value = "" if self.value is _NO_VALUE else f" (value: {_show(self.value)})"
        return f"{where}: {self.message}{value}" if where else f"{self.message}{value}"


_NO_VALUE = object()
NO_VALUE = _NO_VALUE


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def render_problems(source: str, problems: Sequence[Problem]) -> str:
    """``<source>: N problems`` and one indented line per problem (the first 20)."""
    count = len(problems)
    head = f"{source}: " + ("1 problem" if count == 1 else f"{count} problems")
    lines = [f"  {p.render()}" for p in problems[:MAX_LISTED_PROBLEMS]]
    if count > MAX_LISTED_PROBLEMS:
        lines.append(f"  ... and {count - MAX_LISTED_PROBLEMS} more")
    return "\n".join([head, *lines])


class InputError(EvalframeError):
    """Input data that breaks its contract; lists every problem found."""

    def __init__(self, source: str, problems: list[Problem] | Problem) -> None:
        self.source = source
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__(render_problems(source, self.problems))


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
