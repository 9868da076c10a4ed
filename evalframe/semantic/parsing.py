"""A judge's answer as a score in [0, 1], or a parse failure (never a made-up value).

Accepted answers, in this order:

1. a JSON object with a numeric ``score`` (also inside a ```json fence or amid other text);
2. the whole answer a number, optionally written ``N/HIGH`` (``4``, ``0.8``, ``4/5``);
3. a line ``score: N``.

The number is read on the metric's ``scale`` ``LOW-HIGH`` (``0-1`` default, ``1-5``) and
normalised to ``(N − LOW) / (HIGH − LOW)``; a number outside the scale, or an answer of any other
shape, is a parse failure: the score is None and the reason :data:`PARSE_FAILURE`.
"""

from __future__ import annotations

import json
import math
import re

from evalframe.errors import ConfigError

#: The skip reason of a sample whose judge answer has no score.
PARSE_FAILURE = "judge_parse_failure"
#: The skip reason of a sample whose judge call failed (after its retries).
CALL_FAILURE = "judge_call_failure"

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_WHOLE = re.compile(rf"^\s*\**\s*(?P<n>{_NUMBER})\s*(?:/\s*(?P<of>{_NUMBER}))?\s*\**\s*\.?\s*$")
_LINE = re.compile(rf"(?im)^\s*\**\s*score\s*\**\s*[:=]\s*\**\s*(?P<n>{_NUMBER})\s*(?:/\s*(?P<of>{_NUMBER}))?")
_OBJECT = re.compile(r"\{[^{}]*\}", re.S)


def parse_scale(text: str) -> tuple[float, float]:
    """``"1-5"`` → ``(1.0, 5.0)``; an error for anything else."""
    match = re.fullmatch(rf"\s*({_NUMBER})\s*-\s*({_NUMBER})\s*", str(text))
    if match is None or float(match[1]) >= float(match[2]):
        raise ConfigError(f"`scale` must be LOW-HIGH with LOW < HIGH (e.g. 0-1, 1-5), got {text!r}")
    return float(match[1]), float(match[2])


def _from_json(answer: str) -> float | None:
    for candidate in [answer.strip().removeprefix("```json").removeprefix("```").removesuffix("```"), *_OBJECT.findall(answer)]:
        try:
            found = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(found, dict) and isinstance(found.get("score"), (int, float)) and not isinstance(found["score"], bool):
            return float(found["score"])
    return None


def raw_number(answer: str | None) -> float | None:
    """The number an answer gives (module docstring), before scaling; None when it gives none."""
    if answer is None:
        return None
    value = _from_json(answer)
    if value is None:
        match = _WHOLE.match(answer) or _LINE.search(answer)
        if match is None:
            return None
        value = float(match["n"])
    return value if math.isfinite(value) else None


def parse_score(answer: str | None, scale: tuple[float, float] = (0.0, 1.0)) -> tuple[float | None, str | None]:
    """``(score in [0, 1], None)`` or ``(None, PARSE_FAILURE)``."""
    value = raw_number(answer)
    low, high = scale
    if value is None or not low <= value <= high:
        return None, PARSE_FAILURE
    return (value - low) / (high - low), None
