"""Plots of embedding quality (seed 004 §21.1, §21.2): one figure each, every model in it.

- :func:`spectrum`: the covariance eigenvalues of each model against their rank, log scale
  (a healthy space decays slowly; a collapsed one drops by orders of magnitude after a few);
- :func:`dimension_variance`: histogram of the per-dimension variances (log-spaced bins; the
  dead-dimension threshold drawn as a line);
- :func:`recall_curve`: recall@k over k per system, from the overall summary rows (with the
  bootstrap interval as error bars when the summary has one).

They take the tables of :func:`evalframe.embedding_report` and an engine summary, so the CLI and
a pipeline's report draw the same figures; :func:`embedding_figures` adds them to a report's
figures (:class:`evalframe.report.outputs.ReportWriter`, :func:`render_embedding_plots`). Style, palette and file writing are
:mod:`evalframe.report.plots`'.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from evalframe.report.plots import FORMATS, PALETTE, _arrange, _figure, _no_data, _style, save_formats

_RECALL_AT = re.compile(r"^recall@(\d+)$")


def _palette(names: list[str]) -> dict[str, str]:
    """Model → colour by sorted name, so a model has one colour in every embedding plot."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}


def spectrum(table: pl.DataFrame, title: str = "Eigenvalue spectrum"):
    """Eigenvalues (``model, component, eigenvalue``) by rank, log y."""
    fig = _figure(6.4, 4.6)
    if table.height == 0:
        return _no_data(fig, "no spectrum")
    models = table.get_column("model").unique(maintain_order=True).to_list()
    colours = _palette(models)
    with _style():
        ax = fig.add_subplot()
        for model in models:
            own = table.filter(pl.col("model") == model)
            values = np.maximum(own["eigenvalue"].to_numpy(), 1e-10)  # clamped as the isotropy metrics
            ax.plot(own["component"].to_numpy(), values, color=colours[model], linewidth=1.8, label=model, gid=f"spectrum-{model}")
        ax.set_yscale("log")
        ax.set(xlabel="Component (eigenvalues in decreasing order)", ylabel="Variance along the component (log scale)")
        ax.legend(loc="best", fontsize=8, title="model")
        _arrange(fig, [[ax]], titles={ax: title})
    return fig


def dimension_variance(table: pl.DataFrame, threshold: float = 0.01, title: str = "Per-dimension variance"):
    """Histogram of per-dimension variances (``model, dimension, variance``), log-spaced bins."""
    fig = _figure(6.4, 4.6)
    if table.height == 0:
        return _no_data(fig, "no dimensions")
    models = table.get_column("model").unique(maintain_order=True).to_list()
    colours = _palette(models)
    positive = table.filter(pl.col("variance") > 0)["variance"]
    low = min(float(positive.min()) if positive.len() else threshold, threshold) / 2
    high = max(float(table["variance"].max()), threshold) * 2
    bins = np.geomspace(low, high, 41)
    with _style():
        ax = fig.add_subplot()
        for model in models:
            values = np.maximum(table.filter(pl.col("model") == model)["variance"].to_numpy(), low)
            ax.hist(values, bins=bins, histtype="step", linewidth=1.8, color=colours[model], label=model, gid=f"variance-{model}")
        ax.axvline(threshold, color="#777777", linestyle="--", linewidth=1, label=f"dead below {threshold:g}")
        ax.set_xscale("log")
        ax.set(xlabel="Variance of a dimension (log scale)", ylabel="Dimensions")
        ax.legend(loc="best", fontsize=8)
        _arrange(fig, [[ax]], titles={ax: title})
    return fig


def recall_points(summary: pl.DataFrame) -> pl.DataFrame:
    """The overall recall@k rows of a summary: ``system, k, value`` (and ``ci_low, ci_high``)."""
    if summary.height == 0:
        return pl.DataFrame({"system": [], "k": [], "value": []}, schema={"system": pl.String, "k": pl.Int64, "value": pl.Float64})
    grouping = summary["grouping"][0] if "grouping" in summary.columns else None
    rows = summary if grouping is None else summary.filter(pl.col("grouping") == grouping)
    rows = rows.filter(pl.col("metric").str.contains(r"^recall@\d+$"))
    keep = [c for c in ("system", "metric", "value", "ci_low", "ci_high") if c in rows.columns]
    return (rows.select(keep).with_columns(k=pl.col("metric").str.extract(r"(\d+)$").cast(pl.Int64))
            .drop("metric").sort("system", "k"))


def recall_curve(summary: pl.DataFrame, title: str = "Recall@k over k"):
    """recall@k over k per system (the summary's first grouping), log-spaced k axis."""
    fig = _figure(6.4, 4.6)
    points = recall_points(summary)
    if points["k"].n_unique() < 2:
        return _no_data(fig, "recall@k needs two cutoffs or more (e.g. recall@1, recall@10, recall@100)")
    systems = points.get_column("system").unique(maintain_order=True).to_list()
    colours = _palette(systems)
    with _style():
        ax = fig.add_subplot()
        for system in systems:
            own = points.filter(pl.col("system") == system)
            k, value = own["k"].to_numpy(), own["value"].to_numpy()
            if "ci_low" in own.columns and own["ci_low"].null_count() == 0:
                error = np.vstack([value - own["ci_low"].to_numpy(), own["ci_high"].to_numpy() - value])
                ax.errorbar(k, value, yerr=error, color=colours[system], linewidth=1.8, marker="o", capsize=3,
                            label=f"{system} (95% CI)", gid=f"recall-{system}")
            else:
                ax.plot(k, value, color=colours[system], linewidth=1.8, marker="o", label=system, gid=f"recall-{system}")
        ax.set_xscale("log")
        cutoffs = sorted(points["k"].unique().to_list())
        ax.set_xticks(cutoffs, [str(k) for k in cutoffs])
        ax.minorticks_off()
        ax.set(xlabel="k (documents retrieved, log scale)", ylabel="Recall@k", ylim=(0, 1.02))
        ax.legend(loc="best", fontsize=8, title="model")
        _arrange(fig, [[ax]], titles={ax: title})
    return fig


def embedding_plot_stems(data) -> list[str]:
    """The stems of :func:`embedding_figures`, without drawing."""
    stems = []
    if data.tables.get("embedding_spectrum") is not None:
        stems += ["embedding_spectrum", "embedding_dimension_variance"]
    if (stems or "knn" in data.tables) and recall_points(data.summary)["k"].n_unique() >= 2:
        stems.append("recall_at_k")
    return stems


def render_embedding_plots(data, formats: tuple[str, ...] = FORMATS) -> dict[str, dict[str, bytes]]:
    """Each embedding plot's bytes in ``formats``, by stem (the report writer's plots)."""
    return {stem: save_formats(figure, formats) for stem, figure in embedding_figures(data).items()}


def embedding_figures(data) -> dict[str, object]:
    """The report's embedding plots: the spectrum and variances when the result has the quality
    tables, recall@k over k when it also has them or comes from a kNN run (its ``knn`` table)."""
    spectrum_table = data.tables.get("embedding_spectrum")
    if spectrum_table is None and "knn" not in data.tables:
        return {}
    figures = {}
    if spectrum_table is not None:
        figures = {"embedding_spectrum": spectrum(spectrum_table),
                   "embedding_dimension_variance": dimension_variance(data.tables["embedding_dimensions"])}
    if recall_points(data.summary)["k"].n_unique() >= 2:
        figures["recall_at_k"] = recall_curve(data.summary)
    return figures


__all__ = ["dimension_variance", "embedding_figures", "embedding_plot_stems", "recall_curve", "recall_points",
           "render_embedding_plots", "spectrum"]
