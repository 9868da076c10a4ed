"""The compact table of overall results printed after a run (at most :data:`WIDTH` columns).

Per system: metric, n, value ± std, the 95% CI when the run computed one, the across-fold
mean ± std and the target mark (✓ met / ✗ missed) when the pipeline declares targets; numbers
right-aligned with the report's formatter; a null value prints as "—" with a numbered note
below. When the result has a checks table, its failed checks are listed at the end.
"""

from __future__ import annotations

from evalframe.report.formatting import (
    Footnotes,
    ci_text,
    mean_std_text,
    metric_label,
    overall_rows,
    parameters_line,
    repeated_metrics,
    superscript,
)

#: The widest line of the overview (a terminal of 100 columns shows it unwrapped).
WIDTH = 100


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_overview(evaluation) -> str:
    """One block per system (module docstring)."""
    from evalframe.metrics.interpretation import describe
    from evalframe.report.tables import failed_checks, has_intervals
    from evalframe.metrics.targets import Target

    summary = evaluation.summary
    kinds = {m.name: describe(m).kind for m in evaluation.metrics}
    targets = {name: Target.parse(text) for name, text in (evaluation.plan.about.get("targets") or {}).items()}
    has_ci = has_intervals(summary)
    name = evaluation.plan.about.get("name", "evaluation")
    overall = next(iter(evaluation.plan.slices))
    repeated = repeated_metrics(summary)
    footnotes = Footnotes()
    columns = [("metric", "<"), ("n", ">"), ("value ± std", ">")]
    if has_ci:
        columns.append(("95% CI", ">"))
    columns.append(("across folds", ">"))
    if targets:
        columns.append(("target", "<"))

    blocks: list[tuple[str, list[list[str]], list[str]]] = []
    for system in evaluation.info["tables"]["systems"]:
        header = f"{name} · system {system['system']}: {system['queries']:,} queries"
        if system.get("with_evidence") is not None:
            header += f", {system['with_evidence']:,} with evidence"
        rows = list(overall_rows(summary, system["system"], overall))
        table = []
        for row in rows:
            kind = kinds.get(row["metric"], "score")
            # a count's std of per-unit values (0 or 1 each) says nothing; its sum is the number
            value = mean_std_text(row["value"], row["std"] if kind != "count" else None, kind)
            if row["value"] is None:
                value += superscript(footnotes.number(row["note"] or "undefined"))
            cells = [metric_label(row, repeated), f"{row['n']:,}", value]
            if has_ci:
                cells.append(ci_text(row.get("ci_low"), row.get("ci_high"), kind, value=row["value"]))
            cells.append(mean_std_text(row["fold_mean"], row["fold_std"], kind) if row.get("fold_mean") is not None else "—")
            if targets:
                target = targets.get(row["metric"])
                met = target.met(row["value"]) if target else None
                shown = str(target).replace(">=", "≥").replace("<=", "≤")
                cells.append("" if target is None else f"{'✓' if met else '✗' if met is False else ' '} {shown}")
            table.append(cells)
        blocks.append((header, table, _outside_lines(rows)))

    # Each column as wide as its widest cell; a metric name longer than the room left for it
    # gets a line of its own (never cut), its numbers on the next line.
    every = [cells for _, table, _ in blocks for cells in table] + [[title for title, _ in columns]]
    widths = [max(len(cells[i]) for cells in every) for i in range(len(columns))]
    room = WIDTH - sum(widths[1:]) - 2 * (len(columns) - 1)
    widths[0] = max(min(widths[0], room), len("metric"))

    def line(cells: list[str]) -> str:
        return "  ".join(f"{cell:{align}{width}}" for cell, width, (_, align) in zip(cells, widths, columns)).rstrip()

    lines = [_fit(parameters_line(evaluation.plan), WIDTH), ""]
    for header, table, outside in blocks:
        lines += [_fit(header, WIDTH), line([title for title, _ in columns])]
        for cells in table:
            if len(cells[0]) > widths[0]:
                lines.append(cells[0])
                cells = ["", *cells[1:]]
            lines.append(line(cells))
        lines += [_fit(text, WIDTH) for text in outside]
        lines.append("")
    for number, reason in enumerate(footnotes.reasons, 1):
        lines.append(_fit(f"{superscript(number)} {reason}", WIDTH))
    failed = failed_checks(evaluation.tables)
    checks = evaluation.tables.get("checks")
    if checks is not None and failed is not None:
        if "status" in checks.columns:  # the checks table of evalframe.checks
            statuses = checks.get_column("status")
            counts = (f"{(statuses == 'pass').sum()} passed, {(statuses == 'fail').sum()} failed, "
                      f"{(statuses == 'not_applicable').sum()} not applicable")
        else:
            counts = f"{checks.height - failed.height} of {checks.height} passed"
        lines += ["", f"checks: {counts}"]
        for row in failed.iter_rows(named=True):
            scope = ", ".join(f"{k} {row[k]}" for k in ("system", "fold", "criterion_id") if row.get(k) is not None)
            if "message" in row:  # the checks table of evalframe.checks
                rest = f"{row.get('severity') or ''}: {row['message']}"
                if row.get("observed") is not None:
                    rest += f" (observed {row['observed']}, expected {row.get('expected')})"
            else:
                rest = " · ".join(str(v) for k, v in row.items() if v is not None
                                  and k not in ("check", "passed", "status", "grouping", "system", "fold", "criterion_id"))
            lines.append(_fit(f"  ✗ FAILED {row.get('check', '')}{f' [{scope}]' if scope else ''} {rest}", WIDTH))
    return "\n".join(lines).rstrip()


def _outside_lines(rows: list[dict]) -> list[str]:
    """Per subset, how many units lie outside it: not scored there, which is not a failure
    (``n`` counts the units inside; the summary's ``n_outside_subset`` the others)."""
    outside: dict[tuple[str, int, str], list[str]] = {}
    for row in rows:
        if row.get("n_outside_subset"):
            outside.setdefault((row["subset"] or "", row["n_outside_subset"], row["unit"]), []).append(row["metric"])
    return [
        f"outside subset: {count:,} {_plural(unit, count)} not in \"{subset}\" "
        f"({len(metrics)} metric{'s' if len(metrics) != 1 else ''}: {', '.join(metrics[:3])}{', …' if len(metrics) > 3 else ''})"
        for (subset, count, unit), metrics in outside.items()
    ]



def _plural(unit: str, count: int) -> str:
    if count == 1:
        return unit
    return "queries" if unit == "query" else f"{unit}s"
