"""Errors a user can act on.

Every error evalframe raises for bad input or bad configuration derives from
:class:`EvalframeError`. The command line turns it into one message on stderr and exit
status 2, never a traceback. :class:`InputError` carries the individual problems
(file, line or row, column, value) so that every failure is reported at once.
"""

from __future__ import annotations

from dataclasses import dataclass

#: How many problems an error message lists before it says "and N more".
MAX_LISTED_PROBLEMS = 20


class EvalframeError(Exception):
    """Base class: a problem with the user's input or configuration (exit status 2)."""

    exit_code = 2


class ConfigError(EvalframeError):
    """A metric name, option or pipeline definition that cannot be used."""


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


class InputError(EvalframeError):
    """Input data that breaks its contract; lists every problem found."""

    def __init__(self, source: str, problems: list[Problem] | Problem) -> None:
        self.source = source
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.problems)
        head = f"{self.source}: " + ("1 problem" if count == 1 else f"{count} problems")
        lines = [f"  {p.render()}" for p in self.problems[:MAX_LISTED_PROBLEMS]]
        if count > MAX_LISTED_PROBLEMS:
            lines.append(f"  ... and {count - MAX_LISTED_PROBLEMS} more")
        return "\n".join([head, *lines])
