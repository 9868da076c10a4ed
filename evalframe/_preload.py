"""Import, in the background, modules that a later stage needs.

A pipeline reads its CSV in Polars with the GIL released; importing NumPy (about 0.1 s) in a
thread meanwhile takes it off the path the user waits on. (For ``read_run`` on Parquet it does
not pay: the import then competes with the contract check.) A module that fails to import is
left for the stage that needs it to report.
"""

from __future__ import annotations

import importlib
import threading

#: Modules the ranking engine imports on first use (NumPy sorts its keys).
LATER_IMPORTS = ("numpy",)


def preload(names: tuple[str, ...] = LATER_IMPORTS) -> None:
    """Start importing ``names`` in a daemon thread; returns at once."""
    threading.Thread(target=_import_all, args=(names,), name="evalframe-preload", daemon=True).start()


def _import_all(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
