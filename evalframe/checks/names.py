"""Fixed K and dynamic K kept apart (Appendix A.3).

A metric named with a fixed cutoff (``recall@10``) must not read the per-query dynamic K
(``selected_k``, ``extracted_sent_uids``, ``ranked_scores``); a metric that does must say so in
its name (``…@selected_k``) (``must``); a metric named ``…@selected_k`` should declare a
dynamic-K column among its ``required_columns`` (``should``). Two rows for the whole evaluation.
"""

from __future__ import annotations

import re

from evalframe.checks.table import FAIL, MUST, PASS, SHOULD, row

NAME = "fixed_and_dynamic_k_apart"
DYNAMIC_COLUMNS = ("selected_k", "extracted_sent_uids", "ranked_scores")
FIXED_CUTOFF = re.compile(r"@\d+\b")


def name_checks(evaluation) -> list[dict]:
    misnamed, unread = [], []
    for metric in evaluation.plan.metrics:
        columns = {c for table in metric.required_columns.values() for c in table}
        dynamic = bool(columns & set(DYNAMIC_COLUMNS))
        if dynamic and FIXED_CUTOFF.search(metric.name):
            misnamed.append(f"{metric.name} reads a dynamic K but is named with a fixed cutoff")
        if not dynamic and "@selected_k" in metric.name:
            unread.append(f"{metric.name} is named for a dynamic K but declares no dynamic-K column")
    count = f"{len(evaluation.plan.metrics)} metrics"
    return [
        row(NAME, severity=MUST, status=FAIL if misnamed else PASS, observed="; ".join(misnamed) or count,
            expected="fixed-K names only on fixed-K metrics", message="no dynamic-K metric has a fixed-K name"),
        row(NAME, severity=SHOULD, status=FAIL if unread else PASS, observed="; ".join(unread) or count,
            expected="dynamic-K names only on metrics that read a dynamic K",
            message="a metric named for a dynamic K declares the column it reads"),
    ]
