"""Consistency checks (contract §9, Appendix A) as an output: a pure function of the result.

:func:`run_checks` turns an :class:`~evalframe.engine.result.Evaluation` (after its analyses) into
the checks table (:mod:`evalframe.checks.table`); :func:`check` adds it as ``ev.tables["checks"]``
(``checks.csv`` and a section of ``summary.md``). One module per family:

- :mod:`~evalframe.checks.ranges`: every value within its metric's declared range (§9.1);
- :mod:`~evalframe.checks.confusion`: confusion invariants on every slice (§9.2);
- :mod:`~evalframe.checks.expectations`: declared ``n_queries``, ``n_positive``, ``posts_per_fold``;
- :mod:`~evalframe.checks.consistency`: one value per metric and subset wherever reported (§9.3);
- :mod:`~evalframe.checks.denominators`: ranking metrics over the queries with evidence (A.1);
- :mod:`~evalframe.checks.leakage`: tuning never saw its test fold (A.2), folds disjoint (A.4);
- :mod:`~evalframe.checks.names`: fixed-K and dynamic-K names apart (A.3).

A failed ``must`` check makes ``evalframe run`` exit 1 after writing every output
(:func:`failed`); a failed ``should`` check is a warning.

>>> import evalframe as ef
>>> ev = ef.check(ef.run_pipeline("evidence_contract"))          # doctest: +SKIP
>>> ev.checks.filter(status="fail")                               # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from evalframe.checks.confusion import confusion_checks
from evalframe.checks.consistency import consistency_checks
from evalframe.checks.denominators import denominator_checks
from evalframe.checks.expectations import expectation_checks
from evalframe.checks.leakage import fold_checks, tuning_checks
from evalframe.checks.names import name_checks
from evalframe.checks.ranges import range_checks
from evalframe.checks.table import FAIL, MUST, SHOULD, frame


def run_checks(evaluation, *, expect: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """The checks table of ``evaluation`` (module docstring)."""
    return frame([
        *range_checks(evaluation),
        *confusion_checks(evaluation),
        *expectation_checks(evaluation, expect),
        *consistency_checks(evaluation),
        *denominator_checks(evaluation),
        *fold_checks(evaluation),
        *tuning_checks(evaluation),
        *name_checks(evaluation),
    ])


def check(evaluation, *, expect: Mapping[str, Any] | None = None):
    """``evaluation`` with ``tables["checks"]`` (:func:`run_checks`); run it after the analyses."""
    from evalframe.engine.result import Evaluation
    from evalframe.errors import ConfigError

    if not isinstance(evaluation, Evaluation):
        raise ConfigError(f"check() takes an evaluation (ef.evaluate / ef.run_pipeline), got {evaluation!r}")
    return evaluation.with_tables(checks=run_checks(evaluation, expect=expect))


def failed(evaluation, severity: str = MUST) -> pl.DataFrame:
    """The failed checks of ``severity`` (empty when the evaluation ran no checks)."""
    checks = evaluation.checks
    if checks is None:
        return frame([])
    return checks.filter((pl.col("status") == FAIL) & (pl.col("severity") == severity))


__all__ = ["MUST", "SHOULD", "check", "failed", "run_checks"]
