"""Text layout remembered across the report's figures (issue 22): the same bytes, fewer font calls.

Matplotlib lays out a text with FreeType and libraqm each time a figure is drawn: to measure it
(tick labels, titles and legends are placed by their extents) and to draw it (its glyphs and their
positions), once for the PNG (Agg) and again for the SVG (glyphs as paths). A report draws 20–30
figures whose texts repeat (tick labels, axis labels, system names), and a text's layout is a pure
function of the text, the font, its size, the resolution and the hinting settings. Inside
:func:`memoised_text`, the renderers matplotlib creates remember, across figures:

- a plain text's extent (width, height, descent): Agg's, and the SVG's text-to-path one;
- a text's glyphs and their positions (``FT2Font._layout``) for the font object, size and
  resolution it was laid out at, kept only when every glyph comes from that font itself (a glyph
  of a fallback font is laid out anew each time, as its font's size is set by the layout).

Every glyph is still loaded and rendered as matplotlib does, so the bytes are those drawn without
the memo (the report tests compare each plot's PNG and SVG bytes drawn both ways). Math text is
never memoised. Entries are keyed by the matplotlib settings that change a layout (hinting,
hinting factor, kerning factor); the memo holds at most :data:`MAX_ENTRIES` (then it starts over).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib
from matplotlib.backends import backend_agg
from matplotlib.textpath import TextToPath

#: Layouts and extents remembered at most (a report needs a few thousand).
MAX_ENTRIES = 50_000

_memo: dict[tuple, Any] = {}
_swap_lock = threading.RLock()
#: The matplotlib settings a text's layout depends on besides its font (read as a save begins).
_settings: tuple = ()


def _remembered(key: tuple, compute: Callable[[], Any]) -> Any:
    found = _memo.get(key)
    if found is None:
        found = compute()
        if len(_memo) >= MAX_ENTRIES:
            _memo.clear()
        _memo[key] = found
    return found


class _LayoutMemoFont:
    """An ``FT2Font`` set to ``size`` points at ``dpi`` whose ``_layout`` results are remembered;
    every other attribute is the font's own (a ``set_size`` through it is followed)."""

    __slots__ = ("_font", "_size")

    def __init__(self, font, size: float, dpi: float) -> None:
        self._font, self._size = font, (size, dpi)

    def set_size(self, size: float, dpi: float) -> None:
        self._font.set_size(size, dpi)
        self._size = (size, dpi)

    def _layout(self, *args, **kwargs):
        font = self._font
        key = ("layout", id(font), self._size, args, tuple(sorted(kwargs.items())), _settings)
        try:
            items = _memo.get(key)
        except TypeError:  # an argument that cannot be a key (a list of language ranges): not remembered
            return font._layout(*args, **kwargs)
        if items is None:
            items = font._layout(*args, **kwargs)
            # Glyphs of a fallback font: not remembered (that font's size is set by the layout).
            if all(item.ft_object is font for item in items):
                _remembered(key, lambda: items)  # the items keep the font (and its id) alive
        return items

    def __getattr__(self, name: str):
        return getattr(self._font, name)


class MemoRendererAgg(backend_agg.RendererAgg):
    """Matplotlib's Agg renderer, its plain texts' extents and layouts remembered (module docstring)."""

    def get_text_width_height_descent(self, s, prop, ismath):
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        measure = super().get_text_width_height_descent
        return _remembered(("agg extent", s, prop.copy(), self.dpi, _settings), lambda: measure(s, prop, ismath))

    def _prepare_font(self, font_prop):
        return _LayoutMemoFont(super()._prepare_font(font_prop), font_prop.get_size_in_points(), self.dpi)


class MemoTextToPath(TextToPath):
    """Matplotlib's text-to-path conversion (the SVG's glyphs), its plain texts' extents and
    layouts remembered (module docstring)."""

    def get_text_width_height_descent(self, s, prop, ismath):
        if ismath:
            return super().get_text_width_height_descent(s, prop, ismath)
        measure = super().get_text_width_height_descent
        return _remembered(("path extent", s, prop.copy(), _settings), lambda: measure(s, prop, ismath))

    def _get_font(self, prop):
        return _LayoutMemoFont(super()._get_font(prop), self.FONT_SCALE, self.DPI)


@contextmanager
def memoised_text() -> Iterator[None]:
    """The Agg and text-to-path renderers that matplotlib creates meanwhile (one figure's save)
    are :class:`MemoRendererAgg` and :class:`MemoTextToPath`; one save at a time."""
    global _settings
    from matplotlib import text

    with _swap_lock:
        saved = backend_agg.RendererAgg, text.TextToPath, _settings
        params = matplotlib.rcParams
        _settings = params["text.hinting"], params["text.hinting_factor"], params["text.kerning_factor"]
        backend_agg.RendererAgg, text.TextToPath = MemoRendererAgg, MemoTextToPath
        try:
            yield
        finally:
            backend_agg.RendererAgg, text.TextToPath, _settings = saved
