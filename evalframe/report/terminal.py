"""The compact table of overall results printed after a pipeline run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalframe.report.formatting import fold_cell, number, overall_rows

if TYPE_CHECKING:
    from evalframe.pipeline import PipelineResult


def render_overview(result: PipelineResult) -> str:
    """One block per system: metric, n, value, std and the across-fold mean ± std."""
    summed = {m.name for m in result.pipeline.metrics if m.summary == "sum"}
    systems = result.info["tables"]["systems"]
    lines = []
    for system in systems:
        name = system["system"]
        header = f"{result.pipeline.name} · system {name}: {system['queries']:,} queries"
        if system.get("with_evidence") is not None:
            header += f", {system['with_evidence']:,} with evidence"
        lines += [header, f"{'metric':<20} {'n':>7} {'value':>10} {'std':>8}  {'across folds':>17}"]
        for row in overall_rows(result.summary, name):
            value = number(row["value"], count=row["metric"] in summed)
            lines.append(
                f"{row['metric']:<20} {row['n']:>7,} {value:>10} {number(row['std']):>8}  {fold_cell(row):>17}"
                + (f"  ({row['note']})" if row["note"] and row["value"] is None else "")
            )
        lines.append("")
    return "\n".join(lines).rstrip()
