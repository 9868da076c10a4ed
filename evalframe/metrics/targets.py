"""Metric targets (``targets: {auroc: ">= 0.85", ece: "< 0.05"}``): parsed once, checked per row.

A target is a comparison operator (``>=``, ``>``, ``<=``, ``<``) and a number; a value meets
it when ``value <op> number`` holds. A null value neither meets nor misses a target (the mark
is left empty). Reports print ``met`` / ``not met`` beside every row of a metric with a target
(:mod:`evalframe.report.tables`).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from evalframe.errors import ConfigError

_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_TARGET = re.compile(r"^\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Target:
    """``value <op> threshold``, e.g. ``>= 0.85``."""

    op: str
    threshold: float

    @classmethod
    def parse(cls, text: object, *, where: str = "target") -> Target:
        """``">= 0.85"`` → ``Target(">=", 0.85)``; anything else is a :class:`ConfigError`."""
        match = _TARGET.match(text) if isinstance(text, str) else None
        if match is None:
            msg = f"`{where}`: a target is an operator (>=, >, <=, <) and a number, e.g. \">= 0.85\"; got {text!r}"
            raise ConfigError(msg)
        return cls(match[1], float(match[2]))

    def met(self, value: float | None) -> bool | None:
        """Whether ``value`` meets the target; None for a missing value."""
        if value is None or value != value:  # null or NaN
            return None
        return bool(_OPERATORS[self.op](value, self.threshold))

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"
