"""The compact table of overall results printed after a run."""

from __future__ import annotations


from evalframe.report.formatting import (
    fold_cell,
    format_value,
    metric_label,
    outside_cell,
    overall_rows,
    parameters_line,
    repeated_metrics,
)


def render_overview(evaluation) -> str:
    """One block per system: metric, n, the units outside the metric's subset, value, std and
    the across-fold mean ± std."""
    metrics = {m.name: m for m in evaluation.metrics}
    name = evaluation.plan.about.get("name", "evaluation")
    overall = next(iter(evaluation.plan.slices))
    repeated = repeated_metrics(evaluation.summary)
    lines = [parameters_line(evaluation.plan), ""]
    for system in evaluation.info["tables"]["systems"]:
        header = f"{name} · system {system['system']}: {format_value(system['queries'], kind='count')} queries"
        if system.get("with_evidence") is not None:
            header += f", {format_value(system['with_evidence'], kind='count')} with evidence"
        rows = overall_rows(evaluation.summary, system["system"], overall)
        width = max([20, *(len(metric_label(row, repeated)) for row in rows)])  # long names keep the columns aligned
        lines += [header, f"{'metric':<{width}} {'n':>7} {'outside subset':>14} {'value':>10} {'std':>8}  {'across folds':>17}"]
        for row in rows:
            metric = metrics.get(row["metric"])
            lines.append(
                f"{metric_label(row, repeated):<{width}} {format_value(row['n'], kind='count'):>7} {outside_cell(row):>14} "
                f"{format_value(row['value'], metric=metric):>10} {format_value(row['std'], metric=metric):>8}  "
                f"{fold_cell(row, metric):>17}"
                + (f"  ({row['note']})" if row["note"] and row["value"] is None else "")
            )
        lines.append("")
    return "\n".join(lines).rstrip()
