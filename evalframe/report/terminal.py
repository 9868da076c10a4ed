"""The compact table of overall results printed after a run."""

from __future__ import annotations


from evalframe.report.formatting import (
    fold_cell,
    metric_label,
    number,
    overall_rows,
    parameters_line,
    repeated_metrics,
)


def render_overview(evaluation) -> str:
    """One block per system: metric, n, value, std and the across-fold mean ± std."""
    summed = {m.name for m in evaluation.metrics if m.summary == "sum"}
    name = evaluation.plan.about.get("name", "evaluation")
    overall = next(iter(evaluation.plan.slices))
    repeated = repeated_metrics(evaluation.summary)
    lines = [parameters_line(evaluation.plan), ""]
    for system in evaluation.info["tables"]["systems"]:
        header = f"{name} · system {system['system']}: {system['queries']:,} queries"
        if system.get("with_evidence") is not None:
            header += f", {system['with_evidence']:,} with evidence"
        rows = overall_rows(evaluation.summary, system["system"], overall)
        width = max([20, *(len(metric_label(row, repeated)) for row in rows)])
        lines += [header, f"{'metric':<{width}} {'n':>7} {'value':>10} {'std':>8}  {'across folds':>17}"]
        for row in rows:
            value = number(row["value"], count=row["metric"] in summed)
            lines.append(
                f"{metric_label(row, repeated):<{width}} {row['n']:>7,} {value:>10} {number(row['std']):>8}  {fold_cell(row):>17}"
                + (f"  ({row['note']})" if row["note"] and row["value"] is None else "")
            )
        lines.append("")
    return "\n".join(lines).rstrip()
