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
- :func:`dynamic_k`: histograms of the selected K, overall and by state.
- :func:`fold_spread`: per-fold values of the headline metrics with the across-fold mean ± std.
- :func:`forest`: deltas with CIs of a comparison table.

Colours come from the Okabe–Ito palette (safe for colour-blind readers), one colour per system
in the summary's order, the same in every plot. Files are byte-identical across runs
(:func:`save`: no dates, no software tag, a fixed SVG hash salt).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

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
    from matplotlib.figure import Figure

    with _style():
        return Figure(figsize=(width, height), layout="constrained")


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
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return fig


def roc(data: ReportData, systems: list[str] | None = None):
    """ROC curves with 95% bootstrap bands (pointwise over the FPR grid)."""
    fig = _figure(6.4, 5.6)
    rows = _curve(data, "roc")
    if rows.height == 0:
        return _no_data(fig, "no ROC data (the run has no label and prob)")
    with _style():
        ax = fig.add_subplot()
        palette = colours(data)
        for system in systems or data.systems:
            own = rows.filter(pl.col("system") == system)
            if own.height == 0:
                continue
            x, y = own["x"].to_numpy(), own["y"].to_numpy()
            ax.fill_between(x, own["lower"].to_numpy(), own["upper"].to_numpy(), color=palette[system], alpha=0.2,
                            linewidth=0, label=f"{system}: 95% bootstrap band", gid=f"band-{system}")
            ax.plot(x, y, color=palette[system], linewidth=1.8, label=f"{system}: {_value_label(data, 'auroc', system)}",
                    gid=f"roc-{system}")
        ax.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=1, label="random (AUROC 0.5)")
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="False positive rate (false alarms among no-evidence queries)",
               ylabel="True positive rate (evidence cases caught)", title=f"ROC curve — {data.name}")
        ax.legend(loc="lower right", fontsize=8)
    return fig


def pr(data: ReportData, systems: list[str] | None = None):
    """Precision–recall curves with each system's random baseline (its positive rate)."""
    fig = _figure(6.4, 5.6)
    rows = _curve(data, "pr")
    if rows.height == 0:
        return _no_data(fig, "no precision-recall data (the run has no label and prob)")
    with _style():
        ax = fig.add_subplot()
        palette = colours(data)
        for system in systems or data.systems:
            own = rows.filter(pl.col("system") == system)
            if own.height == 0:
                continue
            ax.plot(own["x"].to_numpy(), own["y"].to_numpy(), color=palette[system], linewidth=1.6,
                    drawstyle="steps-post", label=f"{system}: {_value_label(data, 'auprc', system)}", gid=f"pr-{system}")
            baseline = _curve(data, "pr_baseline", system)
            if baseline.height:
                rate = baseline["y"][0]
                ax.axhline(rate, color=palette[system], linestyle=":", linewidth=1.2,
                           label=f"{system}: random baseline (positive rate {rate:.4f})", gid=f"baseline-{system}")
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="Recall (share of evidence cases flagged)",
               ylabel="Precision (share of flags that are evidence)", title=f"Precision–recall curve — {data.name}")
        ax.legend(loc="upper right", fontsize=8)
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
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
        top.plot([0, 1], [0, 1], linestyle="--", color="#777777", linewidth=1, label="perfect calibration")
        top.plot(rows["x"].to_numpy(), rows["y"].to_numpy(), marker="o", color=colour, linewidth=1.6,
                 label=f"{system}", gid=f"reliability-{system}")
        top.set(xlim=(0, 1), ylim=(0, 1), ylabel="Observed frequency of evidence")
        row = _overall(data, "ece", system) or _first_ece(data, system)
        ece = f"ECE {row['value']:.4f}" if row and row.get("value") is not None else "ECE —"
        if row and data.has_ci and row.get("ci_low") is not None:
            ece += f" (95% CI [{row['ci_low']:.4f}, {row['ci_high']:.4f}])"
        top.set_title(f"Reliability — {system}: {ece}, {n_bins} bins")
        top.legend(loc="upper left", fontsize=8)
        edges = [b / n_bins for b in range(n_bins)]
        counts = dict(zip(rows["group"].cast(pl.Int64).to_list(), rows["count"].to_list()))
        bottom.bar(edges, [counts.get(b, 0) for b in range(n_bins)], width=1 / n_bins, align="edge", color=colour,
                   alpha=0.7, edgecolor="white", gid=f"bins-{system}")
        bottom.set(xlabel="Mean predicted probability", ylabel="Queries per bin")
    return fig


def _ece_bins(data: ReportData) -> int:
    for name, metric in data.metrics.items():
        if name == "ece" or name.startswith("ece("):
            return getattr(metric, "bins", 10)
    if data.curves is not None:
        return 10
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
    with _style():
        ax = fig.add_subplot()
        for i, system in enumerate(systems):
            own = {str(r[key]): r for r in rows.filter(pl.col("system") == system).iter_rows(named=True)}
            values = np.array([own[c]["value"] if c in own and own[c]["value"] is not None else np.nan for c in criteria])
            positions = np.arange(len(criteria)) + (i - (len(systems) - 1) / 2) * width
            errors = None
            if data.has_ci:
                low = np.array([own[c].get("ci_low") if c in own and own[c].get("ci_low") is not None else np.nan for c in criteria])
                high = np.array([own[c].get("ci_high") if c in own and own[c].get("ci_high") is not None else np.nan for c in criteria])
                errors = np.vstack([np.clip(values - low, 0, None), np.clip(high - values, 0, None)])
            ax.bar(positions, values, width=width, color=palette[system], label=system, yerr=errors,
                   capsize=2 if errors is not None else 0, error_kw={"linewidth": 0.8}, gid=f"bars-{system}")
        ax.set_xticks(range(len(criteria)), criteria, rotation=0 if len(criteria) <= 12 else 45)
        ci = "95% CI error bars" if data.has_ci else "no CI (run without bootstrap)"
        ax.set(xlabel=key.replace("_", " "), ylabel=metric, title=f"{metric} per criterion — {ci}")
        ax.legend(fontsize=8)
    return fig


def dynamic_k(data: ReportData, system: str | None = None):
    """Histograms of the selected K: overall (every system) and by state (one system, default the first)."""
    rows = _curve(data, "selected_k")
    fig = _figure(10.0, 4.2)
    if rows.height == 0:
        return _no_data(fig, "no selected_k column in this run")
    system = system or data.systems[0]
    palette = colours(data)
    with _style():
        left, right = fig.subplots(1, 2)
        overall = rows.filter(pl.col("group") == "all")
        systems = [s for s in data.systems if s in set(overall.get_column("system").to_list())]
        width = 0.8 / max(len(systems), 1)
        for i, name in enumerate(systems):
            own = overall.filter(pl.col("system") == name)
            left.bar(own["x"].to_numpy() + (i - (len(systems) - 1) / 2) * width, own["count"].to_numpy(), width=width,
                     color=palette[name], label=name, gid=f"k-all-{name}")
        left.set(xlabel="Selected K (sentences extracted)", ylabel="Queries", title="Selected K, all queries")
        left.legend(fontsize=8)
        states = rows.filter((pl.col("system") == system) & (pl.col("group") != "all"))
        names = states.get_column("group").unique(maintain_order=True).to_list()
        width = 0.8 / max(len(names), 1)
        for i, state in enumerate(names):
            own = states.filter(pl.col("group") == state)
            right.bar(own["x"].to_numpy() + (i - (len(names) - 1) / 2) * width, own["count"].to_numpy(), width=width,
                      color=PALETTE[(i + 2) % len(PALETTE)], label=state, gid=f"k-state-{state}")
        right.set(xlabel="Selected K (sentences extracted)", ylabel="Queries", title=f"Selected K by state — {system}")
        if names:
            right.legend(fontsize=8, title="state")
    return fig


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
        for i, system in enumerate(systems):
            for j, metric in enumerate(metrics):
                values = rows.filter((pl.col("system") == system) & (pl.col("metric") == metric)).get_column("value")
                values = values.drop_nulls().to_numpy()
                if values.size == 0:
                    continue
                x = j + (i - (len(systems) - 1) / 2) * width
                ax.scatter(np.full(values.size, x), values, color=palette[system], s=14, alpha=0.8,
                           label=system if j == 0 else None, gid=f"folds-{system}-{metric}")
                std = values.std(ddof=1) if values.size > 1 else 0.0
                ax.errorbar([x + width * 0.25], [values.mean()], yerr=[std], color=palette[system], capsize=3,
                            marker="_", markersize=10, linewidth=1)
        ax.set_xticks(range(len(metrics)), metrics)
        ax.set(ylabel="value per fold", title=f"Per-fold spread (dots: folds; bar: mean ± std) — {data.name}")
        ax.legend(fontsize=8)
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
    fig.set_size_inches(7.5, max(2.5, 0.35 * len(labels) + 1.2))
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
        ax.set(xlabel="Delta (candidate − baseline)" + (" with 95% CI" if errors is not None else ""),
               title=f"Comparison — {data.name}")
    return fig


# --- the report's set of plots and their files ---------------------------------------------


def report_figures(data: ReportData) -> dict[str, object]:
    """Every plot of a report, by file stem, in report order (plots without data are left out)."""
    figures: dict[str, object] = {}
    if data.curves is not None and data.curves.height:
        if _curve(data, "roc").height:
            figures["roc"] = roc(data)
        if _curve(data, "pr").height:
            figures["pr"] = pr(data)
        for system in data.systems:
            if _curve(data, "reliability", system).height:
                figures[f"reliability_{_safe(system)}"] = reliability(data, system)
    if criterion_grouping(data) is not None:
        present = set(data.summary.get_column("metric").to_list())
        for metric in HEADLINE_METRICS:
            if metric in present:
                figures[f"criterion_{_safe(metric)}"] = criterion_bars(data, metric)
    if data.curves is not None and _curve(data, "selected_k").height:
        for system in data.systems:
            figures[f"dynamic_k_{_safe(system)}"] = dynamic_k(data, system)
    fold = data.fold_key
    if fold and any(keys == [fold] for keys in data.slices.values()):
        figures["fold_spread"] = fold_spread(data)
    comparison = data.tables.get("comparison")
    if comparison is not None and "delta" in comparison.columns and comparison.height:
        figures["forest"] = forest(data)
    return figures


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def save(figure, format: str, *, dpi: int = 110) -> bytes:
    """The figure's bytes as ``png`` or ``svg``, the same bytes on every run (no dates or
    software tags; SVG ids from a fixed salt)."""
    buffer = io.BytesIO()
    metadata = {"Software": None} if format == "png" else {"Date": None, "Creator": None}
    with _style():
        figure.savefig(buffer, format=format, dpi=dpi, metadata=metadata)
    return buffer.getvalue()


def write_plots(figures: dict[str, object], folder: Path, *, png: dict[str, bytes] | None = None) -> list[str]:
    """Write every figure as ``<stem>.png`` and ``<stem>.svg`` under ``folder`` (``png``: PNG
    bytes already drawn); return the PNG paths relative to the folder's parent (``plots/roc.png``)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, figure in figures.items():
        (folder / f"{stem}.png").write_bytes(png[stem] if png and stem in png else save(figure, "png"))
        (folder / f"{stem}.svg").write_bytes(save(figure, "svg"))
        written.append(f"{folder.name}/{stem}.png")
    return written


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
