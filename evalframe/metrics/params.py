"""A metric's parameters, declared once: on the metric class, next to the field they set.

A parameter (``k``, ``threshold``, ``bins``, ``fpr``, ``fp_cost`` …) is a dataclass field of the
metric whose default is :func:`param`::

    @dataclass(frozen=True)
    class ExpectedCalibrationError(SetMetric):
        bins: int = param(10, "number of equal-width bins on [0, 1]", low=1)

That one declaration (name, type, default, allowed values or range, description, whether a
pipeline's ``parameters:`` block may set it) is what every reader uses:

- the metric's own constructor checks its values (:func:`check_parameters`, called by
  :class:`~evalframe.metrics.base.Metric`'s ``__post_init__``), so ``ECE(bins=0)`` in Python
  and ``ece(bins=0)`` in a pipeline fail alike;
- the registry's spec takes its :class:`Param` list from the class (:func:`params_of`), so
  parsing a metric string (``ece(bins=20)``) converts and checks with it, and the parameters a
  pipeline's ``parameters:`` may set are those declared ``shared=True``;
- ``evalframe metrics`` lists them (name, default, choices) and the reports' interpretation
  templates read the fields (``{bins}``).

A bad value is a :class:`~evalframe.errors.ConfigError` naming where it came from: the metric
string; a pipeline adds the key path it came from (``parameters.threshold``, ``metrics[0].names[3]``).

Rules: a ``float`` parameter takes an int or float (not a bool) and stores a float; an ``int``
one takes a whole number (not a bool); a ``bool`` one (a flag; its choices are True and False)
takes True/False or the words ``true``/``false`` (any case; a metric string spells it so) and
stores a bool; ``low``/``high``
bound the value (inclusive unless ``low_open``/``high_open``); ``choices`` lists the allowed
values; a default of None means "not set" and is always allowed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from evalframe.errors import ConfigError

#: A parameter without a default (it must be given, e.g. ``k`` of ``recall@k``).
REQUIRED = dataclasses.MISSING

_KINDS = {"int": int, "float": float, "str": str, "bool": bool}


@dataclass(frozen=True)
class Param:
    """A metric parameter: its name, type, default, allowed values or range, and meaning."""

    name: str
    kind: type
    default: Any = None
    choices: tuple[Any, ...] | None = None
    doc: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    #: Whether a pipeline's ``parameters:`` block may set it for every metric that declares it.
    shared: bool = False
    #: Whether it must be given (no default, e.g. the ``k`` of ``recall@k``).
    required: bool = False
    #: What the parameter is, in a word, for messages ("cutoff": "needs a cutoff k >= 1").
    noun: str = ""

    def parse(self, text: str, metric: str) -> Any:
        """The value a metric string spells (``bins=20`` in ``ece(bins=20)``), of the parameter's type."""
        try:
            value = _flag(text) if self.kind is bool else self.kind(text)
        except ValueError:
            wanted = "true or false" if self.kind is bool else self.kind.__name__
            msg = f"`{metric}`: parameter `{self.name}` must be {wanted}, got {text!r}"
            raise ConfigError(msg) from None
        if self.choices is not None and value not in self.choices:
            msg = f"`{metric}`: parameter `{self.name}` must be one of {list(self.choices)}, got {text!r}"
            raise ConfigError(msg)
        return value  # its range is checked where the metric is built (check_parameters)

    def rule(self) -> str:
        """The allowed values in words: ``a threshold in [0, 1]``, ``a bins >= 1 (a whole number)``."""
        named = f"{self.noun} {self.name}" if self.noun else self.name
        if self.kind is bool:
            return f"a {named} (true or false)"
        if self.choices is not None:
            return f"a {named} one of {list(self.choices)}"
        bounds = ""
        if self.low is not None and self.high is not None:
            bounds = f" in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"
        elif self.low is not None:
            bounds = f" {'>' if self.low_open else '>='} {self.low:g}"
        elif self.high is not None:
            bounds = f" {'<' if self.high_open else '<='} {self.high:g}"
        kind = {int: " (a whole number)", float: " (a number)" if not bounds else ""}.get(self.kind, f" (a {self.kind.__name__})")
        return f"a {named}{bounds}{kind}"

    def shown(self, value: Any) -> str:
        """``value`` as a metric string spells it: ``null`` for None, ``true``/``false`` for a flag."""
        if value is None:
            return "null"
        return str(value).lower() if isinstance(value, bool) else str(value)

    def check(self, value: Any, where: str) -> Any:
        """``value`` converted to the parameter's type (an int for a float parameter becomes a
        float), or a :class:`ConfigError` naming ``where`` (the metric, in backticks), what is
        allowed and what was given: "`tp` needs a threshold in [0, 1], got 1.5". A pipeline
        names the key path around it (``parameters.threshold``, ``metrics[0].names[3]``)."""
        if value is None and self.default is None and not self.required:
            return None
        problem = f"{where} needs {self.rule()}, got {value!r}"
        if self.kind is bool:
            try:
                return value if isinstance(value, bool) else _flag(value)
            except (TypeError, ValueError, AttributeError):
                raise ConfigError(problem) from None
        if self.choices is not None:
            if value not in self.choices:
                raise ConfigError(problem)
            return value
        if self.kind in (int, float):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or (self.kind is int and not isinstance(value, int)) or not math.isfinite(value):
                raise ConfigError(problem)
            value = self.kind(value)
            too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
            too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
            if too_low or too_high:
                raise ConfigError(problem)
            return value
        if not isinstance(value, self.kind):
            raise ConfigError(problem)
        return value


def _flag(text: str) -> bool:
    """``true``/``false`` (any case) as a bool; anything else is a ValueError."""
    word = text.strip().lower()
    if word not in ("true", "false"):
        raise ValueError(text)
    return word == "true"


def param(default: Any = REQUIRED, doc: str = "", *, kind: type | None = None, choices: tuple[Any, ...] | None = None,
          low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False,
          shared: bool = False, noun: str = "") -> Any:
    """A metric dataclass field that is a parameter (module docstring); its type is the field's
    annotation (``int``, ``float``, ``str``, ``bool``) unless ``kind`` says otherwise."""
    rules = {"doc": doc, "kind": kind, "choices": choices, "low": low, "high": high, "low_open": low_open,
             "high_open": high_open, "shared": shared, "noun": noun}
    return dataclasses.field(default=default, metadata={"param": rules})


def cutoff(default: Any = REQUIRED, doc: str = "cutoff rank", *, low: int = 1) -> Any:
    """The declaration of a cutoff ``k`` (a whole number >= ``low``; ``@`` sets it in a metric's name)."""
    return param(default, doc, kind=int, low=low, noun="cutoff")


def _kind(field: dataclasses.Field, given: type | None) -> type:
    if given is not None:
        return given
    annotation = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    base = annotation.replace(" ", "").removesuffix("|None")
    if base not in _KINDS:
        msg = f"parameter `{field.name}`: annotate it int, float, str or bool, or give param(kind=...)"
        raise TypeError(msg)
    return _KINDS[base]


@cache
def params_of(metric_class: type) -> tuple[Param, ...]:
    """The parameters ``metric_class`` declares with :func:`param`, in field order (read once per class)."""
    if not dataclasses.is_dataclass(metric_class):
        return ()
    found = []
    for field in dataclasses.fields(metric_class):
        rules = field.metadata.get("param")
        if rules is None:
            continue
        rules = dict(rules)
        kind = _kind(field, rules.pop("kind"))
        if kind is bool and rules["choices"] is None:
            rules["choices"] = (True, False)  # a flag's two values (listed, and tried by the registry's tests)
        default = None if field.default is REQUIRED else field.default
        found.append(Param(field.name, kind, default, **rules, required=field.default is REQUIRED))
    return tuple(found)


def declared(metric_class: type, *names: str) -> tuple[Param, ...]:
    """The declarations of ``names`` on ``metric_class`` (all of them when none is named), for a
    spec whose ``build`` is a function (``rouge1_answer`` builds ``Rouge`` with its variant fixed
    and lets a metric string set ``use_stemmer`` only): the spec reads the class's declaration,
    it never declares a parameter again."""
    found = {param.name: param for param in params_of(metric_class)}
    missing = [name for name in names if name not in found]
    if missing:
        msg = f"{metric_class.__name__} declares no parameter {', '.join(missing)}"
        raise TypeError(msg)  # a programming error in a family module, found at import
    return tuple(found[name] for name in names) if names else tuple(found.values())


def check_parameters(metric: Any, name: str | None = None) -> None:
    """Check (and convert in place) every declared parameter of ``metric``; a bad value is a
    :class:`ConfigError` naming the metric (``name``, else its class's key or name)."""
    declared = params_of(type(metric))
    if not declared:
        return
    label = name or getattr(type(metric), "key", None)
    if label is None:
        try:
            label = metric.name
        except (TypeError, ValueError):
            label = type(metric).__name__
    for declaration in declared:
        value = getattr(metric, declaration.name)
        checked = declaration.check(value, f"`{label}`")
        if checked is not value:
            object.__setattr__(metric, declaration.name, checked)
