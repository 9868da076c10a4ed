"""The report-table model (contract §10.2): what every report format renders, built once.

:class:`ReportData` gathers what a report needs: the summary, the run description
(``run.json``), the metrics (for their interpretation), the targets, the further result
tables and the plot data (``curves.parquet``). It is built from an
:class:`~evalframe.engine.result.Evaluation` (:meth:`ReportData.from_evaluation`) or from a
result folder written by ``evalframe run`` (:meth:`ReportData.from_directory`), so
``evalframe report`` re-renders without recomputing.

:func:`report_rows` is the one table every format renders: for each grouping (overall, each
slice, and the across-folds rows after the fold grouping) and each system, one row per metric
and slice with::

    metric | value (mean ± std) | 95% CI | subset | n | interpretation | target (met / not met)

plus the raw numbers, so ``report_tables.csv`` is the same table. A null value prints as "—"
with a numbered footnote giving its reason (the summary's ``note``). The 95% CI comes from the
summary's ``ci_low`` / ``ci_high`` columns when the run computed them (bootstrap), else "—"
and a report note says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import Metric
from evalframe.metrics.interpretation import Interpretation, describe
from evalframe.report.formatting import NULL_MARK, Footnotes, ci_text, format_number, mean_std_text
from evalframe.metrics.targets import Target

#: The grouping of the across-folds rows (mean ± std of the per-fold values).
ACROSS_FOLDS = "across_folds"
#: Summary columns of a bootstrap confidence interval, used when present.
CI_COLUMNS = ("ci_low", "ci_high")


def has_intervals(summary: pl.DataFrame) -> bool:
    """Whether the run computed confidence intervals: the columns are there (they always are)
    and a bootstrap filled some of them."""
    return all(column in summary.columns for column in CI_COLUMNS) and summary.get_column(CI_COLUMNS[0]).null_count() < summary.height
#: Columns of :func:`report_rows` (and of ``report_tables.csv``), in order.
REPORT_COLUMNS = (
    "table", "system", "slice", "metric", "value_text", "ci_text", "subset", "n", "interpretation",
    "direction", "target", "target_met", "value", "std", "ci_low", "ci_high", "note", "footnote",
)
#: The printed header of each column that a rendered table shows.
HEADERS = {
    "system": "system", "slice": "slice", "metric": "metric", "value_text": "value (mean ± std)",
    "ci_text": "95% CI", "subset": "subset", "n": "n", "interpretation": "interpretation", "target": "target",
}


@dataclass(frozen=True)
class ReportData:
    """Everything a report renders (see the module docstring)."""

    summary: pl.DataFrame
    info: Mapping[str, Any]
    metrics: Mapping[str, Metric]
    targets: Mapping[str, str] = field(default_factory=dict)
    tables: Mapping[str, pl.DataFrame] = field(default_factory=dict)
    curves: pl.DataFrame | None = None
    #: Print rates as percentages.
    percent: bool = False

    @classmethod
    def from_evaluation(cls, evaluation, *, curves: pl.DataFrame | None = None, percent: bool = False) -> ReportData:
        """The report data of a result; ``curves`` (the plot data) is computed when not given."""
        if curves is None:
            from evalframe.report.curve_data import curve_table

            curves = curve_table(evaluation)
        return cls(
            summary=evaluation.summary,
            info=evaluation.info,
            metrics={metric.name: metric for metric in evaluation.metrics},
            targets=dict(evaluation.plan.about.get("targets") or {}),
            tables=dict(evaluation.tables),
            curves=curves,
            percent=percent,
        )

    @classmethod
    def from_directory(cls, directory: str | Path, *, percent: bool = False) -> ReportData:
        """The report data of a folder written by ``evalframe run`` (``summary.parquet`` and
        ``run.json`` needed; ``curves.parquet`` and ``<table>.csv`` used when there)."""
        from evalframe.metrics.registry import resolve, shared_parameters
        from evalframe.results.reader import read_result

        folder = read_result(directory)
        info = folder.info
        shared = shared_parameters()
        defaults = {key: value for key, value in (info.get("parameters") or {}).items() if key in shared}
        metrics = {}
        for name in folder.summary.get_column("metric").unique(maintain_order=True).to_list():
            try:
                metrics[name] = resolve(name, defaults=defaults)
            except ConfigError:
                continue  # a metric the registry no longer knows: rendered without interpretation
        return cls(
            summary=folder.summary,
            info=info,
            metrics=metrics,
            targets=dict((info.get("pipeline") or {}).get("targets") or {}),
            tables=folder.tables,
            curves=folder.curves,
            percent=percent,
        )

    # --- derived facts ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return (self.info.get("pipeline") or {}).get("name") or "evaluation"

    @property
    def slices(self) -> dict[str, list[str]]:
        """Grouping name → slice keys, in the pipeline's order (``run.json``'s ``slices``)."""
        declared = self.info.get("slices") or {}
        if declared:
            return {name: list(keys) for name, keys in declared.items()}
        groupings = self.summary.get_column("grouping").unique(maintain_order=True).to_list()
        return {name: [] for name in groupings if name != ACROSS_FOLDS}

    @property
    def systems(self) -> list[str]:
        return self.summary.get_column("system").unique(maintain_order=True).to_list()

    @property
    def has_ci(self) -> bool:
        return has_intervals(self.summary)

    def interpretation(self, metric: str) -> Interpretation:
        known = self.metrics.get(metric)
        if known is not None:
            return describe(known)
        return Interpretation("", "score", True)

    def groupings(self) -> list[tuple[str, list[str]]]:
        """(grouping, slice keys) in report order: the declared slices, with the across-folds
        rows right after the slice that groups by the fold key alone."""
        present = set(self.summary.get_column("grouping").unique().to_list())
        order: list[tuple[str, list[str]]] = []
        for name, keys in self.slices.items():
            if name in present:
                order.append((name, keys))
            if ACROSS_FOLDS in present and keys and len(keys) == 1 and keys[0] == self.fold_key:
                order.append((ACROSS_FOLDS, []))
        if ACROSS_FOLDS in present and all(name != ACROSS_FOLDS for name, _ in order):
            order.append((ACROSS_FOLDS, []))
        return order

    @property
    def fold_key(self) -> str | None:
        return self.info.get("across_folds") or _fold_key(self)

    def notes(self) -> list[str]:
        """Report-level notes printed under the header of every format."""
        notes = [
            "value (mean ± std): the value over the subset's units, ± the sample std (ddof = 1) of the "
            "per-unit values; set-level metrics (AUROC, ECE, …) have no std. Across folds: mean ± std of "
            "the per-fold values. n counts units (queries, or posts for the per-post metrics)."
        ]
        if not self.has_ci:
            notes.append("95% CI: not computed in this run (no bootstrap), shown as —.")
        else:
            notes.append("95% CI: bootstrap percentile interval.")
        for part in self.info.get("skipped") or []:  # parts of the pipeline the data could not run
            if isinstance(part, dict) and "what" in part:
                notes.append(f"Skipped: {part['what']}: {part['missing']} (to enable: {part['enable']}).")
        return notes


def _fold_key(data: ReportData) -> str | None:
    """The fold key when only the summary tells: the single-key grouping named ``fold``."""
    keys = data.slices.get("fold")
    return keys[0] if keys and len(keys) == 1 else None


def grouping_title(grouping: str, keys: list[str]) -> str:
    if grouping == ACROSS_FOLDS:
        return "Across folds (mean ± std of the per-fold values)"
    if not keys:
        return grouping.replace("_", " ").capitalize()
    return "By " + " × ".join(keys)


def slice_label(row: Mapping[str, Any], keys: list[str]) -> str:
    """``1`` for one key, ``fold=1 × criterion_id=A.1`` for several; "" for the overall rows."""
    if not keys:
        return ""
    if len(keys) == 1:
        return str(row.get(keys[0]))
    return " × ".join(f"{key}={row.get(key)}" for key in keys)


def report_rows(data: ReportData, *, footnotes: Footnotes | None = None) -> pl.DataFrame:
    """The report table (:data:`REPORT_COLUMNS`), every grouping and system, in report order.

    ``footnotes`` collects the reasons of null values (numbered in the order met); pass one to
    share numbering with further tables.
    """
    footnotes = footnotes if footnotes is not None else Footnotes()
    rows, reasons = _numbered_rows(data)
    if not reasons:
        return rows
    # Numbered as if counted into ``footnotes``: the reasons in their order of first use.
    numbers = {position: footnotes.number(reason) for position, reason in enumerate(reasons, 1)}
    return rows.with_columns(pl.col("footnote").replace_strict(numbers, default=None, return_dtype=pl.Int64))


def _numbered_rows(data: ReportData) -> tuple[pl.DataFrame, list[str]]:
    """:func:`report_rows` with footnotes numbered from 1, and their reasons; built once per
    report data (every format renders the same rows)."""
    cached = data.__dict__.get("_report_rows")
    if cached is None:
        footnotes = Footnotes()
        cached = (_report_rows(data, footnotes), list(footnotes.reasons))
        object.__setattr__(data, "_report_rows", cached)  # a cache beside the frozen fields
    return cached


def _report_rows(data: ReportData, footnotes: Footnotes) -> pl.DataFrame:
    summary = data.summary
    targets = {name: Target.parse(text) for name, text in data.targets.items()}
    has_ci = data.has_ci
    meanings: dict[str, Interpretation] = {}  # one interpretation per metric, not per row
    records: list[dict[str, Any]] = []
    for grouping, keys in data.groupings():
        title = grouping_title(grouping, keys)
        rows = summary.filter(pl.col("grouping") == grouping)
        for row in rows.iter_rows(named=True):
            meaning = meanings.get(row["metric"])
            if meaning is None:
                meaning = meanings[row["metric"]] = data.interpretation(row["metric"])
            value = row["value"]
            target = targets.get(row["metric"])
            footnote = None
            if value is None or value != value:
                footnote = footnotes.number(row.get("note") or "undefined")
            low, high = (row.get("ci_low"), row.get("ci_high")) if has_ci else (None, None)
            records.append({
                "table": title,
                "system": row["system"],
                "slice": slice_label(row, keys),
                "metric": row["metric"],
                # a count's std of per-unit values (0 or 1 each) says nothing; across folds it does
                "value_text": mean_std_text(value, row.get("std") if meaning.kind != "count" or grouping == ACROSS_FOLDS
                                            else None, meaning.kind, percent=data.percent),
                "ci_text": ci_text(low, high, meaning.kind, percent=data.percent, value=value),
                "subset": row.get("subset") or "",
                "n": row.get("n"),
                "interpretation": meaning.text,
                "direction": meaning.direction,
                "target": str(target) if target else "",
                "target_met": target.met(value) if target else None,
                "value": value,
                "std": row.get("std"),
                "ci_low": low,
                "ci_high": high,
                "note": row.get("note"),
                "footnote": footnote,
            })
    schema = {
        "table": pl.String, "system": pl.String, "slice": pl.String, "metric": pl.String, "value_text": pl.String,
        "ci_text": pl.String, "subset": pl.String, "n": pl.Int64, "interpretation": pl.String, "direction": pl.String,
        "target": pl.String, "target_met": pl.Boolean, "value": pl.Float64, "std": pl.Float64, "ci_low": pl.Float64,
        "ci_high": pl.Float64, "note": pl.String, "footnote": pl.Int64,
    }
    return pl.DataFrame(records, schema=schema, orient="row")


def target_text(target: str, met: bool | None) -> str:
    """``≥ 0.85 ✓ met`` / ``< 0.05 ✗ not met``; "" without a target, the target alone for a null value."""
    if not target:
        return ""
    target = target.replace(">=", "≥").replace("<=", "≤")
    if met is None:
        return target
    return f"{target} ✓ met" if met else f"{target} ✗ not met"


def shown_columns(rows: pl.DataFrame) -> list[str]:
    """Columns a rendered grouping table shows: ``slice`` only for slice groupings."""
    columns = ["system", "slice", "metric", "value_text", "ci_text", "subset", "n", "interpretation", "target"]
    if rows.height == 0 or (rows.get_column("slice") == "").all():
        columns.remove("slice")
    return columns


# --- further result tables (ablation, tuning, checks, sweep, comparison) -----------------


#: A checks table's ``status`` as printed.
_STATUS_MARKS = {"pass": "✓ pass", "fail": "✗ fail", "not_applicable": "— not applicable"}


#: Result tables that only feed plots (written as CSV, drawn, not rendered as report sections):
#: the embedding spectra and per-dimension variances have one row per dimension.
PLOT_DATA_TABLES = frozenset({"embedding_spectrum", "embedding_dimensions"})


def section_tables(tables) -> dict:
    """The result tables that reports render as sections (all but :data:`PLOT_DATA_TABLES`)."""
    return {name: table for name, table in tables.items() if name not in PLOT_DATA_TABLES}


def result_table_view(table: pl.DataFrame, data: ReportData | None = None) -> pl.DataFrame:
    """A further result table as text, formatted like the report table.

    Floats by :func:`format_number` (columns named ``n`` or ``n_*`` as counts), a ``std`` beside
    a ``value`` / ``mean`` / ``delta`` folded into ``mean ± std``, every ``ci_low``/``ci_high``
    pair (or ``X_ci_low``/``X_ci_high``) folded into one ``95% CI`` column, booleans as ✓ / ✗
    (``✗ failed`` in a ``passed`` column; a checks ``status`` as ✓ pass / ✗ fail), nulls as "—",
    and the metric's interpretation added
    when the table has a ``metric`` column.
    """
    columns = list(table.columns)
    out: dict[str, list[str]] = {}
    rows = table.to_dicts()
    folded: set[str] = set()
    for column in columns:
        if column.endswith("ci_low") and column[:-6] + "ci_high" in columns:
            folded |= {column, column[:-6] + "ci_high"}
    main = next((c for c in ("value", "mean", "delta") if c in columns), None)
    if main and "std" in columns:
        folded.add("std")

    def kind_of(column: str, row: dict) -> str:
        if column == "n" or column.startswith("n_"):
            return "count"
        metric = row.get("metric")
        if data is not None and isinstance(metric, str) and column in ("value", "mean", "delta", "ci_low", "ci_high"):
            return data.interpretation(metric).kind
        return "score"

    percent = data.percent if data is not None else False
    for column in columns:
        if column in folded and not column.endswith("ci_low"):
            continue
        if column.endswith("ci_low") and column in folded:
            prefix = column[:-6]
            name = (prefix.rstrip("_") + " 95% CI").strip() if prefix else "95% CI"
            out[name] = [ci_text(r[column], r[prefix + "ci_high"], kind_of("ci_low", r), percent=percent) for r in rows]
            continue
        values = []
        for r in rows:
            value = r[column]
            if isinstance(value, bool):
                values.append(("✓" if value else "✗ failed") if column == "passed" else ("✓" if value else "✗"))
            elif column == "status" and value in _STATUS_MARKS:
                values.append(_STATUS_MARKS[value])
            elif value is None:
                values.append(NULL_MARK)
            elif isinstance(value, float):
                if column == main and "std" in folded:
                    values.append(mean_std_text(value, r["std"], kind_of(column, r), percent=percent))
                else:
                    values.append(format_number(value, kind_of(column, r), percent=percent))
            elif isinstance(value, int):
                values.append(f"{value:,}" if column == "n" or column.startswith("n_") else str(value))
            else:
                values.append(str(value))
        out[column if not (column == main and "std" in folded) else f"{column} (mean ± std)"] = values
    if "metric" in columns and data is not None:
        out["interpretation"] = [data.interpretation(str(r["metric"])).text for r in rows]
    return pl.DataFrame(out, schema={name: pl.String for name in out})


def failed_checks(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame | None:
    """Rows of the checks table that failed (a false ``passed``, or a ``status`` of fail/failed)."""
    checks = tables.get("checks")
    if checks is None or checks.height == 0:
        return None
    if "passed" in checks.columns:
        return checks.filter(pl.col("passed").cast(pl.Boolean, strict=False) == False)  # noqa: E712
    if "status" in checks.columns:
        return checks.filter(pl.col("status").cast(pl.String).str.to_lowercase().is_in(["fail", "failed", "error"]))
    return None


# --- report.md / report.html layout (issue 20): a report people read ---------------------
#
# report_tables.csv keeps every grouping in long form (report_rows); the rendered reports show
# the overall values with the systems side by side, the across-folds rows the same way, and each
# reported slice as one metric × slice-value table per system, so a report stays readable (and
# under 1,000 Markdown lines for the demo's 6 systems × 70 metrics).

#: How many of the pipeline's slices a report shows when it does not choose (`report: {slices: …}`).
DEFAULT_REPORT_SLICES = 2


@dataclass(frozen=True)
class Section:
    """One rendered table of a report: a title and its cells as text (first column the metric)."""

    title: str
    table: pl.DataFrame
    #: The section's HTML anchor and Markdown heading level.
    level: int = 2


def report_slices(data: ReportData) -> list[str]:
    """The slices a report renders: the pipeline's ``report: {slices: [...]}``, else its first
    :data:`DEFAULT_REPORT_SLICES` slices (every slice stays in ``report_tables.csv`` and the summary)."""
    chosen = ((data.info.get("pipeline") or {}).get("report") or {}).get("slices")
    names = list(data.slices)
    return [name for name in names if name in chosen] if chosen else names[:DEFAULT_REPORT_SLICES]


def report_notes(data: ReportData) -> list[str]:
    """The notes under a rendered report's header: :meth:`ReportData.notes` and the slices left out."""
    others = [name for name in data.slices if name not in report_slices(data)]
    hidden = [f"Slices not shown here (they are in report_tables.csv and the summary): {', '.join(others)}."] if others else []
    return [*data.notes(), *hidden]


def _marked_value(row: Mapping[str, Any], with_ci: bool) -> str:
    """``value ± std [CI]`` with the footnote mark of a null value and the target mark (✓ / ✗)."""
    from evalframe.report.formatting import superscript

    text = row["value_text"] + (superscript(row["footnote"]) if row["footnote"] is not None else "")
    if with_ci and row["ci_text"] != NULL_MARK:
        text += f" {row['ci_text']}"
    if row["target_met"] is not None:
        text += " ✓" if row["target_met"] else " ✗"
    return text


def _systems_side_by_side(rows: pl.DataFrame, systems: list[str], with_ci: bool) -> pl.DataFrame:
    """Metric rows × system columns: ``metric ↑ | subset | n | <system>… | target | interpretation``."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    ns: dict[tuple[str, str], list[str]] = {}
    for row in rows.iter_rows(named=True):
        key = (row["metric"], row["subset"])
        arrow = "↑" if row["direction"] == "higher is better" else "↓"
        cells = out.setdefault(key, {"metric": f"{row['metric']} {arrow}", "subset": row["subset"], "n": ""})
        cells[row["system"]] = _marked_value(row, with_ci)
        cells["target"] = target_text(row["target"], None)
        cells["interpretation"] = row["interpretation"]
        n = f"{row['n']:,}" if row["n"] is not None else NULL_MARK
        if n not in ns.setdefault(key, []):
            ns[key].append(n)
    for key, cells in out.items():
        cells["n"] = " / ".join(ns[key])
    columns = ["metric", "subset", "n", *systems, "target", "interpretation"]
    if all(not cells.get("target") for cells in out.values()):
        columns.remove("target")
    return pl.DataFrame([{c: cells.get(c, NULL_MARK) for c in columns} for cells in out.values()],
                        schema={c: pl.String for c in columns}, orient="row")


def _slice_values(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One system's metric rows × slice-value columns (``value ± std`` with footnote marks)."""
    from evalframe.report.formatting import superscript

    labels = rows.get_column("slice").unique(maintain_order=True).to_list()
    head = " × ".join(keys)
    out: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows.iter_rows(named=True):
        cells = out.setdefault((row["metric"], row["subset"]), {"metric": row["metric"], "subset": row["subset"]})
        mark = superscript(row["footnote"]) if row["footnote"] is not None else ""
        cells[f"{head} {row['slice']}"] = row["value_text"] + mark
    columns = ["metric", "subset", *(f"{head} {label}" for label in labels)]
    return pl.DataFrame([{c: cells.get(c, NULL_MARK) for c in columns} for cells in out.values()],
                        schema={c: pl.String for c in columns}, orient="row")


def report_sections(data: ReportData, footnotes: Footnotes) -> list[Section]:
    """The sections of ``report.md`` / ``report.html`` (see the comment above), then the further
    result tables (the checks as counts per check and the failed rows; ``checks.csv`` has all)."""
    rows = report_rows(data, footnotes=footnotes)
    systems = data.systems
    shown = set(report_slices(data))
    sections: list[Section] = []
    for grouping, keys in data.groupings():
        title = grouping_title(grouping, keys)
        part = rows.filter(pl.col("table") == title)
        if part.height == 0 or (grouping != ACROSS_FOLDS and grouping not in shown):
            continue
        if not keys:
            sections.append(Section(title, _systems_side_by_side(part, systems, data.has_ci)))
            continue
        for system in systems:
            mine = part.filter(pl.col("system") == system)
            if mine.height:
                sections.append(Section(f"{title} — system `{system}`", _slice_values(mine, keys), level=3))
    for name, table in section_tables(data.tables).items():
        title = name.replace("_", " ").capitalize()
        if name == "checks" and {"check", "severity", "status"} <= set(table.columns):
            counts = table.group_by("check", "severity", maintain_order=True).agg(
                *((pl.col("status") == status).sum().cast(pl.String).alias(status.replace("_", " "))
                  for status in ("pass", "fail", "not_applicable")))
            sections.append(Section(title, counts))
            failures = table.filter(pl.col("status") == "fail")
            if failures.height:
                sections.append(Section("Failed checks", result_table_view(failures, data), level=3))
            continue
        sections.append(Section(title, result_table_view(table, data)))
    return sections
