"""Notebook display: a Figure returned by ``ev.plot.*()`` shows inline in Jupyter with no magic.

evalframe draws its figures without pyplot and never chooses a matplotlib backend, so a bare
:class:`~matplotlib.figure.Figure` would print as ``<Figure size 640x560 with 1 Axes>``. When an
IPython kernel is running, :func:`show_figures_inline` teaches its display formatter to render a
Figure as PNG (what ``%matplotlib inline`` does for pyplot's figures); outside IPython it does
nothing. Nothing is imported that the caller did not already load.
"""

from __future__ import annotations

import sys


def show_figures_inline() -> bool:
    """Register a PNG formatter for matplotlib Figures in the running IPython shell; True when one runs."""
    ipython_module = sys.modules.get("IPython")
    shell = ipython_module.get_ipython() if ipython_module is not None else None
    if shell is None:
        return False
    from matplotlib.figure import Figure

    from evalframe.report.plots import save

    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda figure: save(figure, "png"))
    return True
