"""Leakage checks: folds disjoint by post (Appendix A.4), tuning never saw its test fold (A.2).

- ``folds_disjoint``: per system, no ``post_id`` in more than one fold;
- ``tuning_without_leakage``: for each fold row of a tuning table (``tuning``,
  ``threshold_tuning``), the test fold is not among the folds it was tuned on (``tuned_on``) and
  no post is both in its tuning rows and in its test rows (``shared_posts`` = 0), as the tuning
  stage recorded them.
"""

from __future__ import annotations

import polars as pl

from evalframe.checks.table import FAIL, MUST, NOT_APPLICABLE, PASS, row
from evalframe.data.units import SYSTEM

TUNING_TABLES = ("tuning", "threshold_tuning")


def fold_checks(evaluation) -> list[dict]:
    name = "folds_disjoint"
    queries = evaluation.queries
    if not {"fold", "post_id"} <= set(queries.columns):
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="needs fold and post_id columns")]
    rows = []
    spread = queries.group_by(SYSTEM, "post_id").agg(pl.col("fold").n_unique().alias("_folds"))
    for system in queries.get_column(SYSTEM).unique(maintain_order=True).to_list():
        bad = spread.filter((pl.col(SYSTEM) == system) & (pl.col("_folds") > 1)).sort("post_id")
        rows.append(row(name, severity=MUST, status=FAIL if bad.height else PASS, scope={"system": system},
                        observed=f"{bad.height} posts in several folds" + (f" (e.g. {bad['post_id'][0]})" if bad.height else ""),
                        expected="0 posts in several folds", message="no post appears in more than one fold"))
    return rows


def tuning_checks(evaluation) -> list[dict]:
    name = "tuning_without_leakage"
    fold = evaluation.plan.across_folds or "fold"
    present = [t for t in TUNING_TABLES if t in evaluation.tables]
    if not present:
        return [row(name, severity=MUST, status=NOT_APPLICABLE, message="no threshold was tuned")]
    rows = []
    for table_name in present:
        table = evaluation.tables[table_name].filter(pl.col("row") == "fold")
        for r in table.iter_rows(named=True):
            seen = [part.strip() for part in str(r["tuned_on"]).split(",")]
            in_own_fold = str(r[fold]) in seen
            shared = r["shared_posts"] or 0
            leaked = in_own_fold or shared > 0
            observed = f"tuned on {r['tuned_on']}; {shared} posts shared with the test fold"
            rows.append(row(name, severity=MUST, status=FAIL if leaked else PASS,
                            scope={"grouping": table_name, "system": r[SYSTEM], "fold": r[fold]}, observed=observed,
                            expected="not its own test fold; 0 shared posts",
                            message=f"{table_name}: thresholds for test fold {r[fold]} chosen without its rows"))
    return rows
