"""Modules imported on first use: ``np = lazy_module("numpy")`` instead of ``import numpy as np``;
a package's names imported on first use: :func:`lazy_names`.

``import evalframe`` is meant to be cheap (NumPy alone is a third of it): a module that needs
NumPy only inside its functions holds a stand-in that imports the real module the first time
one of its attributes is read, then takes on the real module's attributes, so later reads are
plain attribute reads. Only what is read at call time may go through it (not module-level
constants).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from collections.abc import Callable, Mapping
from typing import Any


class _LazyModule(ModuleType):
    def __getattr__(self, name: str) -> Any:  # called only for attributes not copied yet
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it when an attribute is first read."""
    return _LazyModule(name)


def lazy_names(package: str, names: Mapping[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) for ``names`` (name → the module
    that defines it): a name is imported the first time it is read, then kept in ``namespace``
    (the package's ``globals()``), so later reads are plain attribute reads.

    >>> __getattr__, __dir__ = lazy_names(__name__, {"dumps": "json"}, globals())  # doctest: +SKIP
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
