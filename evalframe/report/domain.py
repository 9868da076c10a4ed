"""Report tables and plots of human labels and domain metrics (seed 004 §21.3, §21.4).

Plots (matplotlib figures built without pyplot, with :mod:`evalframe.report.plots`' style,
palette and byte-stable :func:`~evalframe.report.plots.save`):

- :func:`annotator_accuracy`: gold accuracy per annotator, bars with the gold-task count, and the
  reliability threshold as a line;
- :func:`kappa_heatmap`: Cohen's κ of every annotator pair as a symmetric matrix;
- :func:`lorenz`: the Lorenz curve of the recommendation counts behind ``gini@k`` (share of
  recommendations against share of items, least recommended first) with the equality line;
- :func:`cost_curve`: total cost against threshold, with the minimum marked.

:func:`agreement_markdown` renders an :class:`~evalframe.stats.label_agreement.Agreement` as the
``report.md`` of ``evalframe agreement``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evalframe.report.plots import PALETTE, _figure, _no_data, _style


def annotator_accuracy(per_annotator: pl.DataFrame, min_accuracy: float = 0.7):
    """Gold accuracy per annotator (bars, labelled with ``correct/gold``) and the threshold line."""
    fig = _figure(7.0, 4.2)
    if "gold_accuracy" not in per_annotator.columns:
        return _no_data(fig, "no gold tasks given (--gold)")
    rows = per_annotator.filter(pl.col("n_gold") > 0)
    if rows.height == 0:
        return _no_data(fig, "no annotator rated a gold task")
    names = rows.get_column("annotator_id").to_list()
    accuracy = rows.get_column("gold_accuracy").to_numpy()
    with _style():
        ax = fig.add_subplot()
        colours = [PALETTE[0] if a >= min_accuracy else PALETTE[3] for a in accuracy]
        bars = ax.bar(range(len(names)), accuracy, color=colours)
        for bar, correct, gold in zip(bars, rows.get_column("n_correct"), rows.get_column("n_gold"), strict=True):
            ax.annotate(f"{correct}/{gold}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8)
        ax.axhline(min_accuracy, color="black", linewidth=0.8, linestyle="--", label=f"min accuracy {min_accuracy:g}")
        ax.set_xticks(range(len(names)), names, rotation=0 if len(names) <= 10 else 45, ha="center" if len(names) <= 10 else "right")
        ax.set(ylim=(0, 1.08), ylabel="accuracy on gold tasks", xlabel="annotator", title="Annotator accuracy on gold tasks")
        ax.legend(loc="lower right", fontsize=8)
    return fig


def kappa_matrix(pairwise: pl.DataFrame, weights: str = "quadratic") -> tuple[list[str], np.ndarray]:
    """Annotators and the symmetric κ matrix (1 on the diagonal, nan where undefined)."""
    rows = pairwise.filter(pl.col("weights") == weights)
    names = sorted(set(rows.get_column("annotator_a").to_list()) | set(rows.get_column("annotator_b").to_list()))
    position = {name: i for i, name in enumerate(names)}
    matrix = np.eye(len(names))
    for a, b, value in rows.select("annotator_a", "annotator_b", "kappa").iter_rows():
        matrix[position[a], position[b]] = matrix[position[b], position[a]] = np.nan if value is None else value
    return names, matrix


def kappa_heatmap(pairwise: pl.DataFrame, weights: str = "quadratic"):
    """Cohen's κ (``weights``) of every annotator pair as a heat map, values printed in the cells."""
    fig = _figure(6.0, 5.2)
    names, matrix = kappa_matrix(pairwise, weights)
    if len(names) < 2:
        return _no_data(fig, "fewer than two annotators share a task")
    with _style():
        ax = fig.add_subplot()
        image = ax.imshow(np.ma.masked_invalid(matrix), vmin=-1, vmax=1, cmap="RdBu")
        ax.grid(False)
        if len(names) <= 15:
            for i in range(len(names)):
                for j in range(len(names)):
                    text = "–" if np.isnan(matrix[i, j]) else f"{matrix[i, j]:.2f}"
                    dark = not np.isnan(matrix[i, j]) and abs(matrix[i, j]) > 0.6
                    ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_yticks(range(len(names)), names)
        ax.set_title(f"Cohen's κ per annotator pair ({weights} weights)")
        fig.colorbar(image, ax=ax, shrink=0.8, label="κ")
    return fig


def lorenz_points(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative share of items and of recommendations, least recommended first, from (0, 0)."""
    ordered = np.sort(np.asarray(counts, dtype=np.float64))
    total = ordered.sum()
    items = np.arange(ordered.size + 1) / max(ordered.size, 1)
    shares = np.r_[0.0, np.cumsum(ordered) / total] if total > 0 else np.zeros(ordered.size + 1)
    return items, shares


def lorenz(counts: np.ndarray, gini: float | None = None, label: str = "recommendations"):
    """The Lorenz curve of item counts behind ``gini@k``; the Gini is twice the area between curve and diagonal."""
    fig = _figure(5.2, 5.0)
    if np.asarray(counts).size == 0:
        return _no_data(fig, "no recommendation")
    items, shares = lorenz_points(counts)
    with _style():
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, 1], color="black", linewidth=0.8, linestyle="--", label="equality")
        ax.plot(items, shares, color=PALETTE[0], label=label)
        ax.fill_between(items, shares, items, color=PALETTE[0], alpha=0.15)
        title = "Lorenz curve of recommendation counts" + (f" — Gini {gini:.3f}" if gini is not None else "")
        ax.set(xlabel="share of items (least recommended first)", ylabel=f"share of {label}", xlim=(0, 1), ylim=(0, 1), title=title)
        ax.legend(loc="upper left", fontsize=8)
    return fig


def cost_curve(curve: pl.DataFrame, *, title: str = "Total cost by threshold"):
    """Total cost against threshold (from :func:`evalframe.metrics.detection.cost_curve`), minimum marked."""
    fig = _figure(7.0, 4.2)
    points = curve.filter(pl.col("threshold").is_not_null())
    if points.height == 0:
        return _no_data(fig, "no scored case")
    with _style():
        ax = fig.add_subplot()
        ax.plot(points.get_column("threshold").to_numpy(), points.get_column("cost").to_numpy(), color=PALETTE[0], label="flag score ≥ threshold")
        nothing = curve.filter(pl.col("threshold").is_null()).get_column("cost")
        if nothing.len():
            ax.axhline(nothing.item(), color=PALETTE[3], linewidth=0.8, linestyle="--", label="flag nothing (baseline)")
        best = points.sort("cost", "threshold", descending=[False, True]).row(0, named=True)
        ax.scatter([best["threshold"]], [best["cost"]], color="black", zorder=3, label=f"minimum {best['cost']:,.0f} at {best['threshold']:.3g}")
        ax.set(xlabel="threshold", ylabel="total cost", title=title)
        ax.legend(fontsize=8, loc="best")
    return fig


def domain_figures(data) -> dict[str, object]:
    """The Lorenz curve and cost curve of each system whose result has their tables
    (:mod:`evalframe.analyses.domain_tables`); none otherwise."""
    from evalframe.report.plots import _safe

    figures: dict[str, object] = {}
    counts = data.tables.get("item_counts")
    if counts is not None and counts.height:
        for (system,), rows in counts.partition_by("system", as_dict=True, maintain_order=True).items():
            values = rows.get_column("count").to_numpy()
            k = rows.get_column("k").first() if "k" in rows.columns else None
            gini = _gini_of(data, system, k)
            figures[f"lorenz_{_safe(str(system))}"] = lorenz(values, gini, label=f"top-{k} recommendations" if k else "recommendations")
    curve = data.tables.get("cost_curve")
    if curve is not None and curve.height:
        for (system,), rows in curve.partition_by("system", as_dict=True, maintain_order=True).items():
            figures[f"cost_curve_{_safe(str(system))}"] = cost_curve(rows, title=f"Total cost by threshold — {system}")
    return figures


def _gini_of(data, system, k) -> float | None:
    if k is None:
        return None
    rows = data.summary.filter((pl.col("metric") == f"gini@{k}") & (pl.col("system") == system))
    return rows.get_column("value").first() if rows.height else None


def _cell(value, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(frame: pl.DataFrame) -> list[str]:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * frame.width]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return lines


def agreement_markdown(agreement, *, filtered: pl.DataFrame | None = None, plots: list[str] = (), min_accuracy: float = 0.7,
                       min_tasks: int = 10) -> str:
    """``report.md`` of ``evalframe agreement``: the summary with Landis–Koch words and CIs,
    κ per pair, the annotators, the widest disagreements and the filter's outcome."""
    confidence = agreement.bootstrap.confidence if agreement.bootstrap else None
    ci = f"{confidence:.0%} CI (bootstrap over tasks, {agreement.bootstrap.resamples} replicates)" if confidence else "no CI"
    lines = ["# Label agreement", "", f"Scale: {list(agreement.scale.values)} ({'numeric' if agreement.scale.numeric else 'nominal'}); "
             f"{ci}. Words: Landis & Koch (1977).", ""]
    lines += [f"- {note}" for note in agreement.notes] + ([""] if agreement.notes else [])
    lines += ["## Agreement", "", *_table(agreement.summary.select("metric", "n_tasks", "value", "ci_low", "ci_high", "interpretation")), ""]
    lines += ["## Cohen's κ per annotator pair", "",
              *_table(agreement.pairwise.select("annotator_a", "annotator_b", "weights", "n_tasks", "kappa", "ci_low", "ci_high", "interpretation")), ""]
    lines += ["## Annotators", "", *_table(agreement.per_annotator), ""]
    if filtered is not None:
        reliable = agreement.reliable_annotators(min_accuracy, min_tasks)
        lines += ["## Filtered labels", "",
                  f"{len(reliable)} reliable annotators (>= {min_tasks} gold tasks, accuracy >= {min_accuracy:g}): "
                  f"{', '.join(reliable) or 'none'}; {filtered.height:,} tasks kept.", ""]
    lines += ["## Widest disagreements (for review)", "", *_table(agreement.disagreements), ""]
    lines += [f"![{p}]({p})" for p in plots]
    return "\n".join(lines).rstrip() + "\n"
