"""``summary.md``: the report tables (contract §10.2: metric, value mean ± std, subset, meaning)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evalframe.report.tables import has_intervals

from evalframe.report.formatting import (
    fold_cell,
    interval_text,
    format_value,
    meaning,
    metric_label,
    outside_cell,
    overall_rows,
    parameters_line,
    repeated_metrics,
    undefined_cell,
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def render_markdown(evaluation) -> str:
    from evalframe.report.tables import section_tables

    plan, info, summary = evaluation.plan, evaluation.info, evaluation.summary
    metrics = {m.name: m for m in plan.metrics}
    repeated = repeated_metrics(summary)
    about = plan.about
    lines = [f"# {about.get('name', 'evaluation')}", ""]
    if about.get("description"):
        lines += [about["description"], ""]
    source = info["input"]
    if source.get("path"):
        lines.append(f"Input: `{source['path']}` ({source['rows']:,} rows, sha256 `{(source['sha256'] or '')[:12]}`).")
    lines += [f"{parameters_line(plan).capitalize()}.", ""]
    lines += [
        "Values are means over the queries of the subset (counts: sums); set-level metrics "
        "(AUROC, ECE, …) are computed on the whole slice and have no std or quantiles. "
        "std is the sample standard deviation (ddof = 1); quantiles interpolate linearly. "
        "`across folds` is the mean ± std of the per-fold values. `n` counts units with a value: "
        "queries, or posts for the per-post metrics; `outside subset` counts the units the metric's "
        "subset leaves out (by design, not failures), `undefined` those inside it without a value "
        "(e.g. a zero denominator).",
        "",
    ]
    overall = next(iter(plan.slices))
    confidence = f"{plan.bootstrap.confidence:.0%}" if plan.bootstrap is not None else "95%"
    with_ci = has_intervals(summary)
    for system in info["tables"]["systems"]:
        name = system["system"]
        lines += [f"## Overall — system `{name}` ({format_value(system['queries'], kind='count')} queries)", ""]
        rows = []
        for row in overall_rows(summary, name, overall):
            metric = metrics.get(row["metric"])
            rows.append([
                f"`{metric_label(row, repeated)}`", row["subset"] or "", format_value(row["n"], kind="count"),
                outside_cell(row), undefined_cell(row),
                format_value(row["value"], metric=metric), format_value(row["std"], metric=metric),
                *([interval_text(row, metric)] if with_ci else []),
                format_value(row["median"], metric=metric),
                f"[{format_value(row['p25'], metric=metric)}, {format_value(row['p75'], metric=metric)}]", fold_cell(row, metric),
                (row["note"] if row["value"] is None and row["note"] else meaning(metric)),
            ])
        lines += _table(
            ["metric", "subset", "n", "outside subset", "undefined", "value", "std", *([f"{confidence} CI"] if with_ci else []),
             "median", "[p25, p75]", "across folds", "meaning"], rows
        )
        lines.append("")
        for grouping, keys in plan.slices.items():
            if not keys:
                continue
            lines += _slice_table(summary, grouping, list(keys), name, metrics, repeated)
    for title, table in section_tables(evaluation.tables).items():
        is_checks = title == "checks" and {"check", "severity", "status"} <= set(table.columns)
        lines += _checks_section(table) if is_checks else _result_table(title, table)
    return "\n".join(lines).rstrip() + "\n"


def _result_table(title: str, table: pl.DataFrame) -> list[str]:
    """A further result table (:attr:`Evaluation.tables`) as a section: one Markdown row per row."""
    def cell(value) -> str:
        if value is None or isinstance(value, float):
            return format_value(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return format_value(value, kind="count")
        return str(value)

    body = [[cell(value) for value in row] for row in table.iter_rows()]
    return [f"## {title.replace('_', ' ').capitalize()}", "", *_table(table.columns, body), ""]


def _checks_section(checks: pl.DataFrame) -> list[str]:
    """The checks (contract §9): per check, how many scopes passed, failed or did not apply;
    then every failed row (checks.csv has them all)."""
    counts = checks.group_by("check", "severity", maintain_order=True).agg(
        *((pl.col("status") == status).sum().alias(status) for status in ("pass", "fail", "not_applicable")))
    body = [[f"`{r['check']}`", r["severity"], str(r["pass"]), str(r["fail"]), str(r["not_applicable"])]
            for r in counts.iter_rows(named=True)]
    lines = ["## Checks", "", *_table(["check", "severity", "pass", "fail", "not applicable"], body), ""]
    failures = checks.filter(pl.col("status") == "fail")
    if failures.height:
        lines += [f"{failures.height} failed:", ""]
        lines += _result_table("failed checks", failures)[2:]
    return lines


def _slice_table(
    summary: pl.DataFrame, grouping: str, keys: list[str], system: str, metrics: dict, repeated: set[str]
) -> list[str]:
    """Metric rows × slice columns of values (n in the header's second line is per metric, so omitted)."""
    rows = summary.filter((pl.col("grouping") == grouping) & (pl.col("system") == system))
    if rows.height == 0:
        return []
    label = pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator=" × ").alias("slice")
    rows = rows.with_columns(label)
    slices = rows.get_column("slice").unique(maintain_order=True).to_list()
    cells = {(metric_label(r, repeated), r["slice"]): r["value"] for r in rows.select("metric", "subset", "slice", "value").to_dicts()}
    labelled = rows.select("metric", "subset").unique(maintain_order=True).to_dicts()
    body = [
        [f"`{metric_label(r, repeated)}`", *(format_value(cells.get((metric_label(r, repeated), s)), metric=metrics.get(r["metric"])) for s in slices)]
        for r in labelled
    ]
    title = " × ".join(keys)
    return [f"### By {title} — system `{system}`", "", *_table(["metric", *(f"{title} {s}" for s in slices)], body), ""]


# --- report.md (issue 12): the report tables of every grouping ----------------------------


def report_header_lines(data) -> list[str]:
    """Pipeline, input file and its sha256, date-free (the same run gives the same bytes)."""
    info = data.info
    pipeline = info.get("pipeline") or {}
    source = info.get("input") or {}
    lines = []
    if pipeline.get("source"):
        lines.append(f"Pipeline: `{pipeline['source']}`")
    if source.get("path"):
        lines.append(f"Input: `{source['path']}` ({source.get('rows') or 0:,} rows), sha256 `{source.get('sha256') or '—'}`")
    return lines


def render_report_markdown(data, plots: list[str] | tuple[str, ...] = ()) -> str:
    """``report.md``: the overall values with the systems side by side (value ± std, 95% CI,
    target mark), the across-folds values the same way, each reported slice as metric × slice
    values per system (:func:`~evalframe.report.tables.report_sections`), the further result
    tables, footnotes for null values and links to ``plots`` (paths relative to the report)."""
    from evalframe.report.formatting import Footnotes, superscript
    from evalframe.report.tables import report_notes, report_sections

    footnotes = Footnotes()
    sections = report_sections(data, footnotes)
    lines = [f"# {data.name} — report", ""]
    description = (data.info.get("pipeline") or {}).get("description")
    if description:
        lines += [description, ""]
    header = report_header_lines(data)
    if header:
        lines += [f"{line}  " for line in header[:-1]] + [header[-1], ""]
    notes = report_notes(data)
    lines += [*(f"- {note}" for note in notes), ""]
    for section in sections:
        cells = [[str(value).replace("|", "\\|") for value in row] for row in section.table.iter_rows()]
        lines += [f"{'#' * section.level} {section.title}", "", *_table(section.table.columns, cells), ""]
    if plots:
        lines += ["## Plots", ""]
        lines += [f"![{Path(plot).stem.replace('_', ' ')}]({plot})  " for plot in plots]
        lines[-1] = lines[-1].rstrip()
        lines.append("")
    if footnotes.reasons:
        lines += ["## Notes", ""]
        lines += [f"{superscript(number)} {reason}  " for number, reason in enumerate(footnotes.reasons, 1)]
        lines[-1] = lines[-1].rstrip()
        lines.append("")
    lines += ["↑ higher is better, ↓ lower is better; ✓ / ✗ a target met / not met.", ""]
    return "\n".join(lines).rstrip() + "\n"
