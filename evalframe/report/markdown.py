"""``summary.md``: the report tables (contract §10.2: metric, value mean ± std, subset, meaning)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from evalframe.report.formatting import fold_cell, meaning, number, overall_rows

if TYPE_CHECKING:
    from evalframe.pipeline import PipelineResult


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def render_markdown(result: PipelineResult) -> str:
    pipeline, info, summary = result.pipeline, result.info, result.summary
    metrics = {m.name: m for m in pipeline.metrics}
    summed = {name for name, m in metrics.items() if m.summary == "sum"}
    lines = [f"# {pipeline.name}", ""]
    if pipeline.description:
        lines += [pipeline.description, ""]
    source = info["input"]
    lines += [
        f"Input: `{source['path']}` ({source['rows']:,} rows, sha256 `{(source['sha256'] or '')[:12]}`).",
        "Values are means over the queries of the subset (counts: sums); set-level metrics "
        "(AUROC, ECE, …) are computed on the whole slice and have no std or quantiles. "
        "std is the sample standard deviation (ddof = 1); quantiles interpolate linearly. "
        "`across folds` is the mean ± std of the per-fold values.",
        "",
    ]
    for system in info["tables"]["systems"]:
        name = system["system"]
        lines += [f"## Overall — system `{name}` ({system['queries']:,} queries)", ""]
        rows = []
        for row in overall_rows(summary, name):
            count = row["metric"] in summed
            rows.append([
                f"`{row['metric']}`", row["subset"] or "", f"{row['n']:,}", f"{row['n_skipped']:,}",
                number(row["value"], count=count), number(row["std"]), number(row["median"]),
                f"[{number(row['p25'])}, {number(row['p75'])}]", fold_cell(row),
                (row["note"] if row["value"] is None and row["note"] else meaning(metrics[row["metric"]])),
            ])
        lines += _table(
            ["metric", "subset", "n", "skipped", "value", "std", "median", "[p25, p75]", "across folds", "meaning"], rows
        )
        lines.append("")
        for grouping, keys in pipeline.slices.items():
            if not keys:
                continue
            lines += _slice_table(summary, grouping, list(keys), name, summed)
    return "\n".join(lines).rstrip() + "\n"


def _slice_table(summary: pl.DataFrame, grouping: str, keys: list[str], system: str, summed: set[str]) -> list[str]:
    """Metric rows × slice columns of values (n in the header's second line is per metric, so omitted)."""
    rows = summary.filter((pl.col("grouping") == grouping) & (pl.col("system") == system))
    if rows.height == 0:
        return []
    label = pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator=" × ").alias("slice")
    rows = rows.with_columns(label)
    slices = rows.get_column("slice").unique(maintain_order=True).to_list()
    cells = {(r["metric"], r["slice"]): r["value"] for r in rows.select("metric", "slice", "value").to_dicts()}
    body = [
        [f"`{metric}`", *(number(cells.get((metric, s)), count=metric in summed) for s in slices)]
        for metric in rows.get_column("metric").unique(maintain_order=True).to_list()
    ]
    title = " × ".join(keys)
    return [f"### By {title} — system `{system}`", "", *_table(["metric", *(f"{title} {s}" for s in slices)], body), ""]
