"""Fixed K and dynamic K kept apart (Appendix A.3).

A metric named with a fixed cutoff (``recall@10``) must not read the per-query dynamic K
(``selected_k``, ``extracted_sent_uids``, ``ranked_scores``); a metric that does must say so in
its name (``…@selected_k``). One row for the whole evaluation.
"""

from __future__ import annotations

import re

from evalframe.checks.table import FAIL, MUST, PASS, row

NAME = "fixed_and_dynamic_k_apart"
DYNAMIC_COLUMNS = ("selected_k", "extracted_sent_uids", "ranked_scores")
FIXED_CUTOFF = re.compile(r"@\d+\b")


def name_checks(evaluation) -> list[dict]:
    bad = []
    for metric in evaluation.plan.metrics:
        columns = {c for table in metric.required_columns.values() for c in table}
        dynamic = bool(columns & set(DYNAMIC_COLUMNS))
        if dynamic and FIXED_CUTOFF.search(metric.name):
            bad.append(f"{metric.name} reads a dynamic K but is named with a fixed cutoff")
        if not dynamic and "selected_k" in metric.name and "@selected_k" in metric.name:
            bad.append(f"{metric.name} is named for a dynamic K but reads none")
    return [row(NAME, severity=MUST, status=FAIL if bad else PASS, observed="; ".join(bad) or f"{len(evaluation.plan.metrics)} metrics",
                expected="fixed-K names only on fixed-K metrics", message="fixed and dynamic K are named apart")]
