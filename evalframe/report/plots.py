"""The contract's plots (§10.3), drawn with matplotlib's Agg renderer from a :class:`ReportData`.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (so nothing is
ever shown and no global figure state is kept) and reads only the report data: the summary
(values, CIs) and ``curves.parquet``'s points (:mod:`evalframe.report.curve_data`), so
``evalframe report`` redraws them without the input.

- :func:`roc`: ROC curve per system with its pointwise 95% bootstrap band; AUROC (and its CI
  when the run has one) in the legend.
- :func:`pr`: precision–recall curve per system with the random baseline at the positive rate.
- :func:`reliability`: observed frequency against mean predicted probability per ECE bin, the
  diagonal, the bin counts as a histogram below; the ECE in the title.
- :func:`criterion_bars`: one bar per system and criterion with CI error bars.
- :func:`dynamic_k`: histograms of the selected K, overall and by state; the report draws the
  overall one once (:func:`dynamic_k_overall`) and each system's by state (:func:`dynamic_k_states`).
- :func:`fold_spread`: per-fold values of the headline metrics with the across-fold mean ± std.
- :func:`forest`: deltas with CIs of a comparison table.

Layout (issue 20 part 4, issue 22): every figure has a fixed layout, computed once from measured
text (no constrained-layout solver at each save): the axes keep their size, a title that does not
fit the width wraps and the figure grows by its lines (a title never clips); a legend goes in the
first corner of the axes where it covers no data point, else below the axes, outside (the figure
grows by its height); the PR plot draws one random baseline when every system has the same
positive rate. :func:`render_report_plots` draws a report's figures, in a pool of worker
processes when there are many (the PNG and SVG bytes are the same either way).

Colours come from the Okabe–Ito palette (safe for colour-blind readers), one colour per system
in the summary's order, the same in every plot. Files are byte-identical across runs
(:func:`save`: no dates, no software tag, a fixed SVG hash salt).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import polars as pl

from evalframe.report.curve_data import NO_BAND
from evalframe.report.tables import ReportData

#: Okabe & Ito (2008), colour-blind-safe; black last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: Metrics shown by the per-criterion and per-fold plots, when the run has them (contract §7, §8).
HEADLINE_METRICS = ("auroc", "auprc", "sensitivity", "precision", "recall@10", "ndcg@10", "mrr", "ece")
#: Matplotlib settings of every plot: a bundled font, glyphs as paths, a fixed SVG salt.
STYLE = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "svg.fonttype": "path",
    "svg.hashsalt": "evalframe",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def _figure(width: float = 6.4, height: float = 4.8):
    """A figure of ``width`` × ``height`` inches (before a wrapped title or an outside legend
    adds to its height) without a layout engine: :func:`_arrange` places its parts once."""
    from matplotlib.figure import Figure

    with _style():
        return Figure(figsize=(width, height))


# --- fixed layout: measured text, margins in inches ---------------------------------------------

#: Margins around the axes, in inches: tick labels and axis labels fit in them.
LEFT, RIGHT, BOTTOM, TOP = 0.85, 0.25, 0.62, 0.12
#: Space between two panels side by side (room for the right one's y label), and stacked.
PANEL_GAP_X, PANEL_GAP_Y = 0.95, 0.2
#: Font sizes (points) of titles and legends, and the height of a text line in multiples of it.
TITLE_SIZE, LEGEND_SIZE, LINE_SPACING = STYLE["axes.titlesize"], 8, 1.45


def _text_width(text: str, size: float) -> float:
    """Width of ``text`` in inches at ``size`` points (the plots' font, measured, not drawn)."""
    return _measure(text, size)[0]


@lru_cache(maxsize=4096)
def _measure(text: str, size: float) -> tuple[float, float]:
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    width, height, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(family=STYLE["font.family"], size=size), ismath=False
    )
    return width / 72, height / 72


def _wrapped_lines(text: str, size: float, width: float) -> int:
    """How many lines matplotlib's ``wrap=True`` breaks ``text`` into at ``width`` inches (the
    same greedy rule over spaces; measured a little narrow, so the count errs on the safe side)."""
    lines = 0
    for paragraph in text.split("\n"):
        words, current = paragraph.split(" "), ""
        lines += 1
        for word in words:
            candidate = f"{current} {word}" if current else word
            if current and _text_width(candidate, size) > 0.96 * width:
                lines += 1
                candidate = word
            current = candidate
    return lines


def _line_height(size: float) -> float:
    return size * LINE_SPACING / 72


@dataclass
class _Legend:
    """A legend to place: its handles and labels, the corners to try (in order) and the data it
    must not cover (``x``, ``y`` arrays in data coordinates, ``boxes`` as (x0, x1, y0, y1))."""

    handles: list
    labels: list[str]
    corners: tuple[str, ...] = ("upper right", "upper left", "lower right", "lower left")
    points: list = field(default_factory=list)
    boxes: list = field(default_factory=list)
    title: str | None = None

    def size(self, width_available: float) -> tuple[float, float, int]:
        """Width and height (inches) of the legend box and its number of columns."""
        entry = max(_text_width(label, LEGEND_SIZE) for label in self.labels) + 2.6 * LEGEND_SIZE / 72
        columns = max(1, min(len(self.labels), int((width_available - 0.15) // (entry + 0.1)))) if width_available else 1
        rows = -(-len(self.labels) // columns) + (1 if self.title else 0)
        return columns * (entry + 0.1) + 0.15, rows * _line_height(LEGEND_SIZE) + 0.12, columns


_CORNER_SIDES = {
    "upper right": (1, 1), "upper left": (0, 1), "lower right": (1, 0), "lower left": (0, 0),
    "upper center": (0.5, 1), "lower center": (0.5, 0),
}


def _covers_data(ax, legend: _Legend, corner: str, box: tuple[float, float]) -> bool:
    """Whether ``legend`` (``box``: its size as fractions of the axes) in ``corner`` of ``ax``
    would cover a data point or overlap a data box."""
    import numpy as np

    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    width, height = box
    pad = 0.02
    side_x, side_y = _CORNER_SIDES[corner]
    left = pad if side_x == 0 else (1 - pad - width if side_x == 1 else 0.5 - width / 2)
    bottom = pad if side_y == 0 else 1 - pad - height
    right, top = left + width, bottom + height

    def fx(x):
        return (np.asarray(x, dtype=float) - x0) / (x1 - x0)

    def fy(y):
        return (np.asarray(y, dtype=float) - y0) / (y1 - y0)

    for x, y in legend.points:
        px, py = fx(x), fy(y)
        if np.any((px >= left) & (px <= right) & (py >= bottom) & (py <= top)):
            return True
    for bx0, bx1, by0, by1 in legend.boxes:
        lo_x, hi_x = sorted((float(fx(bx0)), float(fx(bx1))))
        lo_y, hi_y = sorted((float(fy(by0)), float(fy(by1))))
        if lo_x < right and hi_x > left and lo_y < top and hi_y > bottom:
            return True
    return False


def _arrange(fig, panels: list[list], *, titles: dict | None = None, legends: dict | None = None,
             left: float = LEFT, bottom: float = BOTTOM, heights: tuple[float, ...] | None = None) -> None:
    """Place the axes of ``fig`` once, with fixed margins, in a grid of ``panels`` (rows of axes).

    The figure's size on entry is the size without title lines beyond the first and without
    outside legends. ``titles`` maps an axes of the top row to its title, which wraps (matplotlib's
    ``wrap=True``) and adds its extra lines to the top margin; ``legends`` maps an axes to its
    :class:`_Legend`, placed in a free corner or, failing that, below the bottom row (the figure
    grows by the tallest such legend). ``heights`` gives the rows' relative heights.
    """
    titles, legends = titles or {}, legends or {}
    width, height = fig.get_size_inches()
    n_rows, n_cols = len(panels), max(len(row) for row in panels)
    panel_w = (width - left - RIGHT - PANEL_GAP_X * (n_cols - 1)) / n_cols
    first_line = _line_height(TITLE_SIZE) + 0.12
    top = TOP + first_line
    title_lines = {ax: _wrapped_lines(text, TITLE_SIZE, panel_w + (LEFT if n_cols == 1 else PANEL_GAP_X) - 0.1)
                   for ax, text in titles.items()}
    extra_top = max((lines - 1 for lines in title_lines.values()), default=0) * _line_height(TITLE_SIZE)
    grid_h = height - top - bottom - PANEL_GAP_Y * (n_rows - 1)
    ratios = heights or (1,) * n_rows
    row_h = [grid_h * r / sum(ratios) for r in ratios]
    # Legends: a free corner of their axes, else outside, below the bottom row.
    outside: dict = {}
    inside: dict = {}
    for ax, legend in legends.items():
        row = next(i for i, r in enumerate(panels) if ax in r)
        box_w, box_h, columns = legend.size(panel_w)
        box_w1, box_h1, _ = legend.size(0)  # one column, inside the axes
        fraction = (box_w1 / panel_w, box_h1 / row_h[row])
        corner = next((c for c in legend.corners if fraction[0] < 0.9 and fraction[1] < 0.9
                       and not _covers_data(ax, legend, c, fraction)), None)
        if corner is None:
            outside[ax] = (box_h, columns)
        else:
            inside[ax] = corner
    extra_bottom = max((h for h, _ in outside.values()), default=0.0)
    total_h = height + extra_top + extra_bottom
    fig.set_size_inches(width, total_h)
    y = total_h - top - extra_top
    for i, row in enumerate(panels):
        y -= row_h[i]
        for j, ax in enumerate(row):
            x = left + j * (panel_w + PANEL_GAP_X)
            ax.set_position([x / width, y / total_h, panel_w / width, row_h[i] / total_h])
        y -= PANEL_GAP_Y
    for ax, text in titles.items():
        ax.set_title(text, wrap=True)
    for ax, legend in legends.items():
        options = {"fontsize": LEGEND_SIZE, "title": legend.title, "title_fontsize": LEGEND_SIZE}
        if ax in inside:
            ax.legend(legend.handles, legend.labels, loc=inside[ax], **options)
        else:
            _, columns = outside[ax]
            position = ax.get_position()
            ax.legend(legend.handles, legend.labels, loc="lower center", ncols=columns, frameon=False,
                      bbox_to_anchor=((position.x0 + position.x1) / 2, 0.04 / total_h),
                      bbox_transform=fig.transFigure, **options)


def colours(data: ReportData) -> dict[str, str]:
    """System → colour, in the summary's order (the same in every plot)."""
    return {system: PALETTE[i % len(PALETTE)] for i, system in enumerate(data.systems)}


def _curve(data: ReportData, curve: str, system: str | None = None) -> pl.DataFrame:
    if data.curves is None:
        return pl.DataFrame()
    rows = data.curves.filter(pl.col("curve") == curve)
    return rows if system is None else rows.filter(pl.col("system") == system)


def _overall(data: ReportData, metric: str, system: str) -> dict | None:
    overall = next(iter(data.slices), "overall")
    rows = data.summary.filter((pl.col("grouping") == overall) & (pl.col("system") == system) & (pl.col("metric") == metric))
    return rows.row(0, named=True) if rows.height else None


def _value_label(data: ReportData, metric: str, system: str) -> str:
    from evalframe.report.formatting import ci_text, format_number

    row = _overall(data, metric, system)
    if row is None:
        return ""
    text = f"{metric.upper() if metric in ('auroc', 'auprc', 'ece') else metric} {format_number(row['value'])}"
    if data.has_ci and row.get("ci_low") is not None:
        text += f" (95% CI {ci_text(row['ci_low'], row['ci_high'])})"
    return text


def _no_data(fig, message: str):
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return fig


def _diagonal(n: int = 60):
    import numpy as np

    line = np.linspace(0.0, 1.0, n)
    return line, line


def roc(data: ReportData, systems: list[str] | None = None):
    """ROC curves, each with its pointwise 95% bootstrap band when the run has one."""
    import numpy as np
    from matplotlib.patches import Patch

    fig = _figure(6.4, 5.6)
    rows = _curve(data, "roc")
    if rows.height == 0:
        return _no_data(fig, "no ROC data (the run has no label and prob)")
    with _style():
        ax = fig.add_subplot()
        palette = colours(data)
        handles, labels, points = [], [], []
        banded = False
        for system in systems or data.systems:
            own = rows.filter(pl.col("system") == system)
            if own.height == 0:
                continue
            x, y = own["x"].to_numpy(), own["y"].to_numpy()
            lower, upper = own["lower"].cast(pl.Float64).to_numpy(), own["upper"].cast(pl.Float64).to_numpy()
            line, = ax.plot(x, y, color=palette[system], linewidth=1.8, gid=f"roc-{system}")
            handle = line
            if np.isfinite(lower).any() and np.isfinite(upper).any():
                band = ax.fill_between(x, lower, upper, color=palette[system], alpha=0.2, linewidth=0, gid=f"band-{system}")
                handle, banded = (band, line), True
                points += [(x, lower), (x, upper)]
            handles.append(handle)
            labels.append(f"{system}: {_value_label(data, 'auroc', system)}")
            points.append((x, y))
        (diagonal,) = ax.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=1)
        handles.append(diagonal)
        labels.append("random (AUROC 0.5)")
        points.append(_diagonal())
        if banded:
            handles.append(Patch(color="#777777", alpha=0.2, linewidth=0))
            labels.append("shaded: 95% bootstrap band")
        else:  # said in the legend, where it covers no curve
            (no_band,) = ax.plot([], [], linestyle="none", gid="no-band")
            handles.append(no_band)
            labels.append(NO_BAND)
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="False positive rate (false alarms among no-evidence queries)",
               ylabel="True positive rate (evidence cases caught)")
        legend = _Legend(handles, labels, corners=("lower right", "upper left"), points=points)
        _arrange(fig, [[ax]], titles={ax: f"ROC curve — {data.name}"}, legends={ax: legend})
    return fig


def pr(data: ReportData, systems: list[str] | None = None):
    """Precision–recall curves with the random baseline (the positive rate): one line when every
    system has the same positive rate (the same queries), else one per system."""
    fig = _figure(6.4, 5.6)
    rows = _curve(data, "pr")
    if rows.height == 0:
        return _no_data(fig, "no precision-recall data (the run has no label and prob)")
    with _style():
        ax = fig.add_subplot()
        palette = colours(data)
        handles, labels, points, rates = [], [], [], {}
        shown = [s for s in (systems or data.systems) if rows.filter(pl.col("system") == s).height]
        for system in shown:
            own = rows.filter(pl.col("system") == system)
            x, y = own["x"].to_numpy(), own["y"].to_numpy()
            (line,) = ax.plot(x, y, color=palette[system], linewidth=1.6, drawstyle="steps-post", gid=f"pr-{system}")
            handles.append(line)
            labels.append(f"{system}: {_value_label(data, 'auprc', system)}")
            points.append((x, y))
            baseline = _curve(data, "pr_baseline", system)
            if baseline.height:
                rates[system] = baseline["y"][0]
        if rates and len(set(rates.values())) == 1:
            rate = next(iter(rates.values()))
            line = ax.axhline(rate, color="#777777", linestyle=":", linewidth=1.2, gid="baseline")
            handles.append(line)
            labels.append(f"random baseline (positive rate {rate:.4f}){', every system' if len(rates) > 1 else ''}")
            points.append(([0.0, 0.5, 1.0], [rate] * 3))
        else:
            for system, rate in rates.items():
                line = ax.axhline(rate, color=palette[system], linestyle=":", linewidth=1.2, gid=f"baseline-{system}")
                handles.append(line)
                labels.append(f"{system}: random baseline (positive rate {rate:.4f})")
                points.append(([0.0, 0.5, 1.0], [rate] * 3))
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="Recall (share of evidence cases flagged)",
               ylabel="Precision (share of flags that are evidence)")
        legend = _Legend(handles, labels, corners=("upper right", "lower left", "upper left"), points=points)
        _arrange(fig, [[ax]], titles={ax: f"Precision–recall curve — {data.name}"}, legends={ax: legend})
    return fig


def reliability(data: ReportData, system: str | None = None):
    """Reliability diagram of one system (default the first): observed frequency against mean
    predicted probability per ECE bin, the diagonal, and the bin counts below."""
    system = system or (data.systems[0] if data.systems else None)
    fig = _figure(6.0, 6.4)
    rows = _curve(data, "reliability", system).sort(pl.col("group").cast(pl.Int64))
    if rows.height == 0:
        return _no_data(fig, "no calibration data (the run has no label and prob)")
    colour = colours(data).get(system, PALETTE[0])
    n_bins = _ece_bins(data)
    with _style():
        top, bottom = fig.subplots(2, 1, sharex=True)
        (diagonal,) = top.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=1)
        x, y = rows["x"].to_numpy(), rows["y"].to_numpy()
        (points,) = top.plot(x, y, marker="o", color=colour, linewidth=1.6, gid=f"reliability-{system}")
        top.set(xlim=(0, 1), ylim=(0, 1), ylabel="Observed frequency of evidence")
        row = _overall(data, "ece", system) or _first_ece(data, system)
        ece = f"ECE {row['value']:.4f}" if row and row.get("value") is not None else "ECE —"
        if row and data.has_ci and row.get("ci_low") is not None:
            ece += f" (95% CI [{row['ci_low']:.4f}, {row['ci_high']:.4f}])"
        edges = [b / n_bins for b in range(n_bins)]
        counts = dict(zip(rows["group"].cast(pl.Int64).to_list(), rows["count"].to_list()))
        bottom.bar(edges, [counts.get(b, 0) for b in range(n_bins)], width=1 / n_bins, align="edge", color=colour,
                   alpha=0.7, edgecolor="white", gid=f"bins-{system}")
        bottom.set(xlabel="Mean predicted probability", ylabel="Queries per bin")
        legend = _Legend([diagonal, points], ["perfect calibration", f"{system}"],
                         corners=("upper left", "lower right"), points=[(x, y), _diagonal()])
        _arrange(fig, [[top], [bottom]], titles={top: f"Reliability — {system}: {ece}, {n_bins} bins"},
                 legends={top: legend}, heights=(3, 1))
    return fig


def _ece_bins(data: ReportData) -> int:
    for name, metric in data.metrics.items():
        if name == "ece" or name.startswith("ece("):
            return getattr(metric, "bins", 10)
    return 10


def _first_ece(data: ReportData, system: str) -> dict | None:
    rows = data.summary.filter((pl.col("system") == system) & pl.col("metric").str.starts_with("ece"))
    return rows.row(0, named=True) if rows.height else None


def criterion_grouping(data: ReportData) -> tuple[str, str] | None:
    """The grouping by criterion (``criterion`` or a single ``criterion*`` key) and its key."""
    for name, keys in data.slices.items():
        if len(keys) == 1 and (name == "criterion" or keys[0].startswith("criterion")):
            return name, keys[0]
    return None


def _bar_boxes(positions, width: float, values, errors) -> list[tuple[float, float, float, float]]:
    """Each bar (with its error bar) as a data box ``(x0, x1, y0, y1)``."""
    import numpy as np

    tops = values if errors is None else values + np.nan_to_num(errors[1])
    return [(p - width / 2, p + width / 2, 0.0, t) for p, t in zip(positions, tops) if np.isfinite(t)]


def criterion_bars(data: ReportData, metric: str = "auroc"):
    """``metric`` per criterion, one bar per system, with 95% CI error bars when the run has CIs."""
    import numpy as np

    fig = _figure(9.0, 4.6)
    found = criterion_grouping(data)
    if found is None:
        return _no_data(fig, "no per-criterion grouping in this run")
    grouping, key = found
    rows = data.summary.filter((pl.col("grouping") == grouping) & (pl.col("metric") == metric))
    if rows.height == 0:
        return _no_data(fig, f"no per-criterion values of {metric}")
    criteria = [str(c) for c in rows.get_column(key).unique(maintain_order=True).to_list()]
    systems = [s for s in data.systems if s in set(rows.get_column("system").to_list())]
    palette = colours(data)
    width = 0.8 / max(len(systems), 1)
    boxes = []
    with _style():
        ax = fig.add_subplot()
        handles = []
        for i, system in enumerate(systems):
            own = {str(r[key]): r for r in rows.filter(pl.col("system") == system).iter_rows(named=True)}
            values = np.array([own[c]["value"] if c in own and own[c]["value"] is not None else np.nan for c in criteria])
            positions = np.arange(len(criteria)) + (i - (len(systems) - 1) / 2) * width
            errors = None
            if data.has_ci:
                low = np.array([own[c].get("ci_low") if c in own and own[c].get("ci_low") is not None else np.nan for c in criteria])
                high = np.array([own[c].get("ci_high") if c in own and own[c].get("ci_high") is not None else np.nan for c in criteria])
                errors = np.vstack([np.clip(values - low, 0, None), np.clip(high - values, 0, None)])
            bars = ax.bar(positions, values, width=width, color=palette[system], yerr=errors,
                          capsize=2 if errors is not None else 0, error_kw={"linewidth": 0.8}, gid=f"bars-{system}")
            handles.append(bars)
            boxes += _bar_boxes(positions, width, values, errors)
        rotated = len(criteria) > 12
        ax.set_xticks(range(len(criteria)), criteria, rotation=45 if rotated else 0, ha="right" if rotated else "center")
        ci = "95% CI error bars" if data.has_ci else "no CI (run without bootstrap)"
        ax.set(xlabel=key.replace("_", " "), ylabel=metric)
        label_room = max((_text_width(c, STYLE["font.size"]) for c in criteria), default=0) * 0.71 if rotated else 0
        _arrange(fig, [[ax]], titles={ax: f"{metric} per criterion — {ci}"},
                 legends={ax: _Legend(handles, systems, boxes=boxes)}, bottom=BOTTOM + label_room)
    return fig


def dynamic_k(data: ReportData, system: str | None = None):
    """Histograms of the selected K: overall (every system) and by state (one system, default the first)."""
    return _k_figure(data, 10.0, overall=True, system=system or (data.systems[0] if data.systems else None))


def dynamic_k_overall(data: ReportData):
    """The report's histogram of the selected K of every system (:func:`dynamic_k`'s left panel,
    drawn once for the report rather than beside each system's states)."""
    return _k_figure(data, 6.4, overall=True, system=None)


def dynamic_k_states(data: ReportData, system: str | None = None):
    """The report's histogram of one system's selected K by state (:func:`dynamic_k`'s right panel)."""
    return _k_figure(data, 6.4, overall=False, system=system or (data.systems[0] if data.systems else None))


def _k_figure(data: ReportData, width: float, *, overall: bool, system: str | None):
    """A figure of the selected-K panels side by side: every system's (``overall``), then
    ``system``'s by state (when given)."""
    rows = _curve(data, "selected_k")
    fig = _figure(width, 4.2)
    if rows.height == 0:
        return _no_data(fig, "no selected_k column in this run")
    with _style():
        axes = list(fig.subplots(1, 2)) if overall and system is not None else [fig.add_subplot()]
        titles, legends = {}, {}
        if overall:
            titles[axes[0]] = "Selected K, all queries"
            legends[axes[0]] = _k_overall_panel(axes[0], data, rows)
        if system is not None:
            titles[axes[-1]] = f"Selected K by state — {system}"
            by_state = _k_state_panel(axes[-1], data, rows, system)
            if by_state is not None:
                legends[axes[-1]] = by_state
        _arrange(fig, [axes], titles=titles, legends=legends)
    return fig


def _k_overall_panel(ax, data: ReportData, rows: pl.DataFrame) -> _Legend:
    """Bars of the selected K of every system (``curves.parquet``'s ``selected_k`` group ``all``) on ``ax``."""
    palette = colours(data)
    overall = rows.filter(pl.col("group") == "all")
    systems = [s for s in data.systems if s in set(overall.get_column("system").to_list())]
    handles, boxes = _k_bars(ax, [(overall.filter(pl.col("system") == name), palette[name], f"k-all-{name}")
                                  for name in systems])
    return _Legend(handles, systems, boxes=boxes)


def _k_state_panel(ax, data: ReportData, rows: pl.DataFrame, system: str) -> _Legend | None:
    """Bars of ``system``'s selected K per gate state on ``ax``; its legend (None without states)."""
    states = rows.filter((pl.col("system") == system) & (pl.col("group") != "all"))
    names = states.get_column("group").unique(maintain_order=True).to_list()
    handles, boxes = _k_bars(ax, [(states.filter(pl.col("group") == state), PALETTE[(i + 2) % len(PALETTE)], f"k-state-{state}")
                                  for i, state in enumerate(names)])
    return _Legend(handles, [str(n) for n in names], boxes=boxes, title="state") if names else None


def _k_bars(ax, groups: list[tuple[pl.DataFrame, str, str]]) -> tuple[list, list]:
    """Grouped bars on ``ax``, one set per ``(rows with x and count, colour, gid)``, side by side
    around each K; the bars' handles and label boxes."""
    width = 0.8 / max(len(groups), 1)
    handles, boxes = [], []
    for i, (own, colour, gid) in enumerate(groups):
        positions = own["x"].to_numpy() + (i - (len(groups) - 1) / 2) * width
        counts = own["count"].to_numpy()
        handles.append(ax.bar(positions, counts, width=width, color=colour, gid=gid))
        boxes += _bar_boxes(positions, width, counts.astype(float), None)
    ax.set(xlabel="Selected K (sentences extracted)", ylabel="Queries")
    return handles, boxes


def fold_spread(data: ReportData, metrics: list[str] | None = None):
    """Per-fold values of the headline metrics (dots) with the across-fold mean ± std (bar)."""
    import numpy as np

    fold = data.fold_key
    grouping = next((name for name, keys in data.slices.items() if keys == [fold]), None) if fold else None
    fig = _figure(10.0, 4.2)
    if grouping is None:
        return _no_data(fig, "no per-fold grouping in this run")
    rows = data.summary.filter(pl.col("grouping") == grouping)
    present = rows.get_column("metric").unique(maintain_order=True).to_list()
    metrics = [m for m in (metrics or HEADLINE_METRICS) if m in present][:6]
    if not metrics:
        return _no_data(fig, "none of the headline metrics has per-fold values")
    palette = colours(data)
    systems = data.systems
    width = 0.8 / max(len(systems), 1)
    with _style():
        ax = fig.add_subplot()
        handles, labels, points = [], [], []
        for i, system in enumerate(systems):
            for j, metric in enumerate(metrics):
                values = rows.filter((pl.col("system") == system) & (pl.col("metric") == metric)).get_column("value")
                values = values.drop_nulls().to_numpy()
                if values.size == 0:
                    continue
                x = j + (i - (len(systems) - 1) / 2) * width
                dots = ax.scatter(np.full(values.size, x), values, color=palette[system], s=14, alpha=0.8,
                                  gid=f"folds-{system}-{metric}")
                if system not in labels:
                    handles.append(dots)
                    labels.append(system)
                std = values.std(ddof=1) if values.size > 1 else 0.0
                ax.errorbar([x + width * 0.25], [values.mean()], yerr=[std], color=palette[system], capsize=3,
                            marker="_", markersize=10, linewidth=1)
                points.append((np.full(values.size, x), values))
                points.append(([x, x], [values.mean() - std, values.mean() + std]))
        ax.set_xticks(range(len(metrics)), metrics)
        ax.set(ylabel="value per fold")
        _arrange(fig, [[ax]], titles={ax: f"Per-fold spread (dots: folds; bar: mean ± std) — {data.name}"},
                 legends={ax: _Legend(handles, labels, points=points)})
    return fig


def forest(data: ReportData, table: str = "comparison"):
    """Forest plot of a comparison: each row's delta with its CI, and the line of no difference."""
    import numpy as np

    fig = _figure(7.5, 4.0)
    comparison = data.tables.get(table)
    if comparison is None or comparison.height == 0 or "delta" not in comparison.columns:
        return _no_data(fig, "no comparison table in this run")
    low = next((c for c in ("ci_low", "delta_ci_low") if c in comparison.columns), None)
    high = next((c for c in ("ci_high", "delta_ci_high") if c in comparison.columns), None)
    text_columns = [c for c, t in comparison.schema.items() if t == pl.String]
    labels = [" · ".join(str(r[c]) for c in text_columns if r[c] is not None) for r in comparison.iter_rows(named=True)]
    delta = comparison.get_column("delta").cast(pl.Float64).to_numpy()
    # The tick labels set the left margin (measured); the rows set the height.
    label_room = max((_text_width(label, STYLE["font.size"]) for label in labels), default=0.0) + 0.25
    width = max(7.5, label_room + 4.0)
    fig.set_size_inches(width, max(2.5, 0.35 * len(labels) + 1.2))
    with _style():
        ax = fig.add_subplot()
        y = np.arange(len(labels))[::-1]
        errors = None
        if low and high:
            lo = comparison.get_column(low).cast(pl.Float64).to_numpy()
            hi = comparison.get_column(high).cast(pl.Float64).to_numpy()
            errors = np.vstack([np.clip(delta - lo, 0, None), np.clip(hi - delta, 0, None)])
        ax.errorbar(delta, y, xerr=errors, fmt="o", color=PALETTE[0], capsize=3, gid="deltas")
        ax.axvline(0, color="#777777", linestyle="--", linewidth=1)
        ax.set_yticks(y, labels)
        ax.set(xlabel="Delta (candidate − baseline)" + (" with 95% CI" if errors is not None else ""))
        _arrange(fig, [[ax]], titles={ax: f"Comparison — {data.name}"}, left=max(LEFT, label_room))
    return fig


# --- the report's set of plots and their files ---------------------------------------------


def report_plots(data: ReportData) -> dict[str, tuple[str, tuple]]:
    """Every plot of a report, by file stem, in report order, as ``(function name, arguments)``
    (plots without data are left out); nothing is drawn. Worked out once per ``data`` (a frozen
    :class:`ReportData`; the writers of one report ask several times) and returned as a new dict."""
    known = data.__dict__.get(_REPORT_PLOTS)
    if known is None:
        known = _report_plots(data)
        data.__dict__[_REPORT_PLOTS] = known  # not a field: equality and repr unchanged
    return dict(known)


_REPORT_PLOTS = "_report_plots"


def _report_plots(data: ReportData) -> dict[str, tuple[str, tuple]]:
    plots: dict[str, tuple[str, tuple]] = {}
    if data.curves is not None and data.curves.height:
        if _curve(data, "roc").height:
            plots["roc"] = ("roc", ())
        if _curve(data, "pr").height:
            plots["pr"] = ("pr", ())
        for system in data.systems:
            if _curve(data, "reliability", system).height:
                plots[f"reliability_{_safe(system)}"] = ("reliability", (system,))
    if criterion_grouping(data) is not None:
        present = set(data.summary.get_column("metric").to_list())
        for metric in HEADLINE_METRICS:
            if metric in present:
                plots[f"criterion_{_safe(metric)}"] = ("criterion_bars", (metric,))
    selected_k = _curve(data, "selected_k")
    if selected_k.height:
        # every system's histogram once, then each system's by state where the run has states
        # (no stem of a system's figure is `dynamic_k` alone)
        plots["dynamic_k"] = ("dynamic_k_overall", ())
        with_states = set(selected_k.filter(pl.col("group") != "all").get_column("system").to_list())
        for system in data.systems:
            if system in with_states:
                plots[f"dynamic_k_{_safe(system)}"] = ("dynamic_k_states", (system,))
    fold = data.fold_key
    if fold and any(keys == [fold] for keys in data.slices.values()):
        plots["fold_spread"] = ("fold_spread", ())
    comparison = data.tables.get("comparison")
    if comparison is not None and "delta" in comparison.columns and comparison.height:
        plots["forest"] = ("forest", ())
    return plots


_DRAW = {"roc": roc, "pr": pr, "reliability": reliability, "criterion_bars": criterion_bars,
         "dynamic_k_overall": dynamic_k_overall, "dynamic_k_states": dynamic_k_states,
         "fold_spread": fold_spread, "forest": forest}


def report_figures(data: ReportData) -> dict[str, object]:
    """Every plot of a report (:func:`report_plots`) drawn, by file stem, in report order."""
    return {stem: _DRAW[name](data, *args) for stem, (name, args) in report_plots(data).items()}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def save(figure, format: str, *, dpi: int = 110) -> bytes:
    """The figure's bytes as ``png`` or ``svg`` (or :data:`HTML_PNG`), the same bytes on every
    run (no dates or software tags; SVG ids from a fixed salt)."""
    return save_formats(figure, (format,), dpi=dpi)[format]


def save_formats(figure, formats: tuple[str, ...], *, dpi: int = 110) -> dict[str, bytes]:
    """The figure's bytes in each of ``formats`` (``png``, ``svg``, :data:`HTML_PNG`), as
    :func:`save` and :func:`compact_png` give them: the figure is drawn once per renderer, and
    the page's palette PNG made from the PNG's own pixels (not decoded again)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    files: dict[str, bytes] = {}
    with _style():
        if "png" in formats or HTML_PNG in formats:
            shown_on = figure.canvas
            canvas = FigureCanvasAgg(figure)  # the canvas savefig would switch to, kept for its pixels
            try:
                files["png"] = _saved(figure, "png", dpi)
                pixels = _rgb(canvas)
            finally:
                figure.set_canvas(shown_on)
            if HTML_PNG in formats:
                files[HTML_PNG] = _palette_png(pixels)
        if "svg" in formats:
            files["svg"] = _saved(figure, "svg", dpi)
    return {format: files[format] for format in formats}


def _saved(figure, format: str, dpi: int) -> bytes:
    buffer = io.BytesIO()
    metadata = {"Software": None} if format == "png" else {"Date": None, "Creator": None}
    figure.savefig(buffer, format=format, dpi=dpi, metadata=metadata)
    return buffer.getvalue()


def _rgb(canvas):
    """The RGB image of an Agg canvas' last drawing (the pixels its PNG holds, alpha dropped)."""
    from PIL import Image  # a dependency of matplotlib

    pixels = canvas.buffer_rgba()  # rows × columns × RGBA, as the PNG was written from
    height, width, _ = pixels.shape
    return Image.frombuffer("RGBA", (width, height), pixels, "raw", "RGBA", 0, 1).convert("RGB")


def compact_png(png: bytes, colours: int = 128) -> bytes:
    """``png`` with a palette of ``colours`` (median cut, deterministic): a plot's few colours and
    their anti-aliasing survive, and the page is about three times smaller (plots/ keeps the originals)."""
    from PIL import Image  # a dependency of matplotlib

    return _palette_png(Image.open(io.BytesIO(png)).convert("RGB"), colours)


def _palette_png(image, colours: int = 128) -> bytes:
    """:func:`compact_png` of an RGB image."""
    from PIL import Image  # a dependency of matplotlib

    out = io.BytesIO()
    image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(out, "PNG", optimize=True)
    return out.getvalue()


#: Formats every report plot is written in.
FORMATS = ("png", "svg")
#: A further "format" of :func:`render_report_plots`: the PNG with a reduced palette that
#: ``report.html`` embeds (:func:`compact_png`); never written to ``plots/``.
HTML_PNG = "html.png"
#: A report with fewer plots than this draws them in this process (a worker's start costs more).
POOL_MIN_PLOTS = 6
#: The niceness of the plot processes (the fork server and the workers it forks, on Unix): they
#: draw with the CPU the main process leaves, so the stages on the run's critical path (the
#: analyses, the other files) keep their core while the plots are drawn; once those are done,
#: the plots have every core.
PLOT_NICENESS = 10
#: The plot kinds from the costliest to draw to the cheapest (measured on the bundled pipeline's
#: report): the workers take the plots in this order, so the pool ends with short ones.
COST_ORDER = ("fold_spread", "roc", "pr", "criterion_bars", "reliability", "forest", "dynamic_k_overall",
              "dynamic_k_states")

_worker_data: ReportData | None = None


def _worker_init(data: ReportData) -> None:
    import gc

    global _worker_data
    _worker_data = data
    lower_priority()  # forked from a fork server whose priority was lowered already: no change
    gc.freeze()  # the imported modules and the report data live as long as the worker: no collection scans them


def lower_priority(pid: int = 0) -> None:
    """Lower the scheduling priority of process ``pid`` (0: this one) to :data:`PLOT_NICENESS`
    (a process already nicer keeps its niceness; nothing where the system has no such call)."""
    import os

    try:
        os.setpriority(os.PRIO_PROCESS, pid, max(os.getpriority(os.PRIO_PROCESS, pid), PLOT_NICENESS))
    except (AttributeError, OSError):
        pass


def _render_one(name: str, args: tuple, formats: tuple[str, ...], data: ReportData | None = None) -> dict[str, bytes]:
    figure = _DRAW[name](data if data is not None else _worker_data, *args)
    return save_formats(figure, formats)  # the page's PNG made where the figure is drawn (a worker)


def costliest_first(plots: dict[str, tuple[str, tuple]]) -> list[str]:
    """The stems of ``plots`` (:func:`report_plots`) by :data:`COST_ORDER` of their kinds (report
    order within a kind; a kind not listed there last): the order the workers take them in, so the
    pool ends with short ones."""
    rank = {kind: place for place, kind in enumerate(COST_ORDER)}
    return sorted(plots, key=lambda stem: rank.get(plots[stem][0], len(COST_ORDER)))


def plot_workers(n_plots: int) -> int:
    """Worker processes for ``n_plots`` plots: one per core the process may use, at most one per
    plot; 0 (draw here) below :data:`POOL_MIN_PLOTS` plots, on one core, or when
    ``EVALFRAME_PLOT_WORKERS`` says so (a number; 0 turns the pool off)."""
    import os

    setting = os.environ.get("EVALFRAME_PLOT_WORKERS")
    if setting is not None and setting.strip().isdigit():
        cores = int(setting)
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2 or n_plots < POOL_MIN_PLOTS:
        return 0
    return min(cores, n_plots)


class PendingPlots:
    """A report's plots being drawn (:func:`start_report_plots`): in worker processes, which
    draw while the caller writes other files, or here, on :meth:`result`."""

    def __init__(self, data: ReportData, formats: tuple[str, ...], workers: int, stems=None) -> None:
        import multiprocessing

        self._data, self._formats = data, formats
        self._plots = {stem: plot for stem, plot in report_plots(data).items() if stems is None or stem in stems}
        self.parallel = False
        self._pool, self._futures, self._done = None, {}, None
        if workers <= 1 or "forkserver" not in multiprocessing.get_all_start_methods():  # e.g. Windows: here
            return
        from concurrent.futures import ProcessPoolExecutor

        self.parallel = True
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=_worker_context(), initializer=_worker_init,
                                         initargs=(data,))
        self._futures = {stem: self._pool.submit(_render_one, *self._plots[stem], formats)
                         for stem in costliest_first(self._plots)}

    def result(self) -> dict[str, dict[str, bytes]]:
        """Every plot's bytes by stem, in report order (waits for the workers; draws here without them)."""
        if self._done is None:
            if self._pool is None:
                self._done = {stem: _render_one(name, args, self._formats, self._data)
                              for stem, (name, args) in self._plots.items()}
            else:
                try:
                    self._done = {stem: self._futures[stem].result() for stem in self._plots}
                finally:
                    self.close()
        return self._done

    def close(self) -> None:
        """Stop the workers (plots not yet drawn are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


#: What the fork server of the plot workers imports once, before forking each worker.
WORKER_PRELOAD = ["evalframe.report.plots", "matplotlib.figure", "matplotlib.backends.backend_agg",
                  "matplotlib.backends.backend_svg"]


def _worker_context():
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def warm_plot_workers() -> None:
    """Start the fork server of the plot workers now (it imports matplotlib once), so that its
    start-up overlaps the work before the plots, at a lower priority (:data:`PLOT_NICENESS`, as
    the workers it forks); nothing where plots are drawn in this process (one core,
    ``EVALFRAME_PLOT_WORKERS=0``, no fork server)."""
    import multiprocessing

    if plot_workers(POOL_MIN_PLOTS) > 1 and "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        _worker_context()
        forkserver.ensure_running()
        server = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
        if server is not None:  # its imports beside the read and the engine, then the workers it forks
            lower_priority(server)


def start_report_plots(data: ReportData, formats: tuple[str, ...] = FORMATS, *,
                       workers: int | None = None, stems=None) -> PendingPlots:
    """Start drawing every report plot (or those of ``stems``) in each of ``formats``: with
    ``workers`` (default :func:`plot_workers`) in that many processes (a fork server that has
    imported matplotlib once; each worker receives the report data once), which work while the
    caller goes on; without, on :meth:`PendingPlots.result`. The bytes are the same either way."""
    plots = [stem for stem in report_plots(data) if stems is None or stem in stems]
    return PendingPlots(data, formats, plot_workers(len(plots)) if workers is None else workers, stems)


def render_report_plots(data: ReportData, formats: tuple[str, ...] = FORMATS, *,
                        workers: int | None = None) -> dict[str, dict[str, bytes]]:
    """Every report plot's bytes in each of ``formats``, by stem, in report order
    (:func:`start_report_plots`, waited for)."""
    return start_report_plots(data, formats, workers=workers).result()


def write_plot_files(rendered: dict[str, dict[str, bytes]], folder: Path) -> list[str]:
    """Write each plot's bytes (:func:`render_report_plots`) as ``<stem>.<format>`` under
    ``folder``; return the PNG paths relative to the folder's parent (``plots/roc.png``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, files in rendered.items():
        for fmt, content in files.items():
            if fmt != HTML_PNG:
                (folder / f"{stem}.{fmt}").write_bytes(content)
    return [f"{folder.name}/{stem}.png" for stem in rendered]


def write_plots(figures: dict[str, object], folder: Path, *, png: dict[str, bytes] | None = None) -> list[str]:
    """Write every figure as ``<stem>.png`` and ``<stem>.svg`` under ``folder`` (``png``: PNG
    bytes already drawn); return the PNG paths relative to the folder's parent (``plots/roc.png``)."""
    rendered = {stem: {"png": png[stem], "svg": save(figure, "svg")} if png and stem in png else save_formats(figure, FORMATS)
                for stem, figure in figures.items()}
    return write_plot_files(rendered, folder)


class PlotAccessor:
    """``ev.plot.<name>(...)``: each of this module's plots of one result, as a Figure."""

    def __init__(self, data: ReportData) -> None:
        self._data = data

    def roc(self, systems: list[str] | None = None):
        return roc(self._data, systems)

    def pr(self, systems: list[str] | None = None):
        return pr(self._data, systems)

    def reliability(self, system: str | None = None):
        return reliability(self._data, system)

    def criterion_bars(self, metric: str = "auroc"):
        return criterion_bars(self._data, metric)

    def dynamic_k(self, system: str | None = None):
        return dynamic_k(self._data, system)

    def fold_spread(self, metrics: list[str] | None = None):
        return fold_spread(self._data, metrics)

    def forest(self, table: str = "comparison"):
        return forest(self._data, table)
