"""Modules imported on first use: ``np = lazy_module("numpy")`` instead of ``import numpy as np``.

``import evalframe`` is meant to be cheap (NumPy alone is a third of it): a module that needs
NumPy only inside its functions holds a stand-in that imports the real module the first time
one of its attributes is read, then takes on the real module's attributes, so later reads are
plain attribute reads. Only what is read at call time may go through it (not module-level
constants).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class _LazyModule(ModuleType):
    def __getattr__(self, name: str) -> Any:  # called only for attributes not copied yet
        real = importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


def lazy_module(name: str) -> Any:
    """A stand-in for the module ``name`` that imports it when an attribute is first read."""
    return _LazyModule(name)
