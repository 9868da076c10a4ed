"""The same metric on the same subset reported in two places has the same value (contract §9.3).

- ``across_folds_matches_folds``: an ``across_folds`` row's value and std are the mean and the
  sample std of the metric's per-fold rows (recomputed here);
- ``overall_matches_folds``: for per-unit metrics of an unweighted evaluation, the overall mean
  is the n-weighted mean of the fold means, and the overall n the sum of the fold n's (the folds
  partition the queries); for counts, the overall sum is the sum over folds;
- ``ablation_matches_summary``: every cell of the ablation table equals the summary's
  ``across_folds`` row of that system and metric;
- ``duplicate_rows_agree``: rows of the summary with the same scope, metric and subset agree.

Metrics computed on different subsets are told apart by the summary's ``subset`` column and
never compared (AUPRC on all queries vs per criterion are different slices, not a conflict).
"""

from __future__ import annotations

import polars as pl

from evalframe.analyses.ablation import ACROSS_FOLDS
from evalframe.checks.table import FAIL, MUST, NOT_APPLICABLE, PASS, row, same
from evalframe.metrics.base import SetMetric

KEY = ["system", "metric", "unit", "subset"]


def consistency_checks(evaluation) -> list[dict]:
    return [*_across_folds(evaluation), *_overall(evaluation), *_ablation(evaluation), *_duplicates(evaluation)]


def _across_folds(evaluation) -> list[dict]:
    name = "across_folds_matches_folds"
    plan, summary = evaluation.plan, evaluation.summary
    if plan.across_folds is None:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="no across_folds rows")]
    folds = summary.filter(pl.col("grouping") == plan.fold_grouping).group_by(KEY, maintain_order=True).agg(
        pl.col("value").mean().alias("_mean"), pl.col("value").std(ddof=1).alias("_std"))
    across = summary.filter(pl.col("grouping") == ACROSS_FOLDS).join(folds, on=KEY, how="left", nulls_equal=True, maintain_order="left")
    rows = []
    for system in across.get_column("system").unique(maintain_order=True).to_list():
        mine = across.filter(pl.col("system") == system)
        bad = [r for r in mine.iter_rows(named=True) if not (same(r["value"], r["_mean"]) and same(r["std"], r["_std"]))]
        observed = "; ".join(f"{r['metric']}: {r['value']} ± {r['std']} vs folds {r['_mean']} ± {r['_std']}" for r in bad[:5])
        rows.append(row(name, severity=MUST, status=FAIL if bad else PASS, scope={"grouping": ACROSS_FOLDS, "system": system},
                        observed=observed or f"{mine.height} metrics", expected="mean ± std of the fold rows",
                        message=f"{len(bad)} of {mine.height} across-folds rows differ from their folds"))
    return rows


def _overall(evaluation) -> list[dict]:
    name = "overall_matches_folds"
    plan, summary = evaluation.plan, evaluation.summary
    overall = next((g for g, keys in plan.slices.items() if not keys), None)
    if overall is None or plan.across_folds is None:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="needs an overall slice and a fold slice")]
    if plan.weight is not None:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="weighted means: fold n's are not the weights")]
    per_unit = [m.name for m in plan.metrics if not isinstance(m, SetMetric)]
    counts = [m.name for m in plan.metrics if m.summary == "sum"]
    folds = summary.filter((pl.col("grouping") == plan.fold_grouping) & pl.col("metric").is_in(per_unit + counts))
    combined = folds.group_by(KEY, maintain_order=True).agg(
        pl.col("n").sum().alias("_n"),
        ((pl.col("value") * pl.col("n")).sum() / pl.col("n").sum()).alias("_mean"),
        pl.col("value").sum().alias("_sum"),
        pl.col("value").is_null().all().alias("_all_null"),
    )
    top = summary.filter(pl.col("grouping") == overall).join(combined, on=KEY, how="inner", nulls_equal=True, maintain_order="left")
    rows = []
    for system in top.get_column("system").unique(maintain_order=True).to_list():
        bad = []
        mine = top.filter(pl.col("system") == system)
        for r in mine.iter_rows(named=True):
            expected = r["_sum"] if r["metric"] in counts else (None if r["_all_null"] else r["_mean"])
            if r["n"] != r["_n"] or not same(r["value"], expected):
                bad.append(f"{r['metric']}: {r['value']} (n {r['n']}) vs folds {expected} (n {r['_n']})")
        rows.append(row(name, severity=MUST, status=FAIL if bad else PASS, scope={"grouping": overall, "system": system},
                        observed="; ".join(bad[:5]) or f"{mine.height} metrics", expected="the folds combined",
                        message=f"{len(bad)} of {mine.height} overall per-unit values differ from their folds combined"))
    return rows


def _ablation(evaluation) -> list[dict]:
    name = "ablation_matches_summary"
    table = evaluation.tables.get("ablation")
    if table is None:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="no ablation table")]
    across = evaluation.summary.filter(pl.col("grouping") == ACROSS_FOLDS)
    metrics = [c for c in table.columns if c not in ("position", "system") and not c.endswith(("_std", "_vs_previous", "_vs_first"))]
    rows = []
    for r in table.iter_rows(named=True):
        bad = []
        for metric in metrics:
            found = across.filter((pl.col("system") == r["system"]) & (pl.col("metric") == metric))
            if found.height == 0:
                bad.append(f"{metric}: not in the summary")
                continue
            if not (same(r[metric], found["value"][0]) and same(r[f"{metric}_std"], found["std"][0])):
                bad.append(f"{metric}: {r[metric]} ± {r[f'{metric}_std']} vs summary {found['value'][0]} ± {found['std'][0]}")
        rows.append(row(name, severity=MUST, status=FAIL if bad else PASS, scope={"grouping": ACROSS_FOLDS, "system": r["system"]},
                        observed="; ".join(bad) or f"{len(metrics)} metrics", expected="the summary's across_folds rows",
                        message=f"ablation row {r['position']}: {len(bad)} of {len(metrics)} cells differ from the summary"))
    return rows


def _duplicates(evaluation) -> list[dict]:
    name = "duplicate_rows_agree"
    summary = evaluation.summary
    keys = ["grouping", "system", *evaluation.plan.slice_keys, "metric", "unit", "subset"]
    groups = summary.group_by(keys, maintain_order=True).agg(pl.len().alias("_rows"), pl.col("value").min().alias("_low"),
                                        pl.col("value").max().alias("_high")).filter(pl.col("_rows") > 1)
    if groups.height == 0:
        return [row(name, severity=MUST, status=PASS, observed="no metric reported twice on one subset",
                    message="each (slice, metric, subset) is reported once")]
    bad = [r for r in groups.iter_rows(named=True) if not same(r["_low"], r["_high"])]
    return [row(name, severity=MUST, status=FAIL if bad else PASS,
                observed="; ".join(f"{r['metric']} ({r['grouping']}, {r['system']}): {r['_low']} vs {r['_high']}" for r in bad[:5])
                or f"{groups.height} repeated rows agree",
                expected="equal values", message="a metric reported twice on the same subset has one value")]
