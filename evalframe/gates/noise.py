"""Is a drop noise? The paired bootstrap interval of the change of a per-query mean metric.

One function, :func:`paired_delta_ci`, on the engine's bootstrap arithmetic
(:func:`evalframe.engine.bootstrap.weighted_means` and :func:`~evalframe.engine.bootstrap.intervals`,
the rule of every CI evalframe reports). The two runs are two result folders, so the gate pairs
their per-query values itself.

Two runs of one gold set are paired by ``query_id``: ``d_u = candidate_u − baseline_u`` per case.
A bootstrap replicate is a weight vector over cases (:func:`evalframe.engine.replicates.poisson_counts`:
Poisson(1) counts, a pure function of the seed and the case's id, so both runs get the same
weights and the result does not depend on row order)::

    delta   = mean(d)
    delta_r = Σ_u w_ur · d_u / Σ_u w_ur          (replicate r; one with Σ w = 0 is left out)
    CI      = [q_(α/2), q_(1−α/2)] of the delta_r   (percentile interval, α = 1 − confidence)

Cases whose value is null on both sides (skipped by the metric on both, e.g. no gold id) are
left out; a case present (with a value) on one side only is an error naming how many there are,
since a paired interval needs the same cases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.engine.bootstrap import intervals, weighted_means
from evalframe.engine.replicates import poisson_counts


@dataclass(frozen=True)
class DeltaInterval:
    """The change ``candidate − baseline`` of a per-query mean and its bootstrap interval."""

    delta: float
    low: float
    high: float
    n: int
    resamples: int
    confidence: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def paired_delta_ci(
    baseline: pl.DataFrame,
    candidate: pl.DataFrame,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    what: str = "cases",
) -> DeltaInterval:
    """The paired bootstrap interval of ``mean(candidate) − mean(baseline)`` (module docstring).

    ``baseline`` and ``candidate`` have columns ``query_id`` and ``value`` (one metric, one slice).

    >>> base = pl.DataFrame({"query_id": ["a", "b", "c", "d"], "value": [1.0, 0.0, 1.0, 1.0]})
    >>> cand = base.with_columns(pl.col("value") * 0)
    >>> interval = paired_delta_ci(base, cand, resamples=200)
    >>> interval.delta, interval.high < 0
    (-0.75, True)
    """
    pairs = baseline.select("query_id", base="value").join(
        candidate.select("query_id", cand="value"), on="query_id", how="full", coalesce=True
    ).filter(pl.col("base").is_not_null() | pl.col("cand").is_not_null())
    only_base = pairs.filter(pl.col("cand").is_null()).height
    only_cand = pairs.filter(pl.col("base").is_null()).height
    if only_base or only_cand:
        examples = pairs.filter(pl.col("base").is_null() | pl.col("cand").is_null()).sort("query_id").get_column("query_id").head(5).to_list()
        msg = (f"a paired comparison needs the same {what} on both sides: {only_base} have a value in the baseline only, "
               f"{only_cand} in the candidate only (e.g. {', '.join(map(repr, examples))})")
        raise InputError("per-query values", Problem(None, "query_id", NO_VALUE, msg))
    if pairs.height == 0:
        raise InputError("per-query values", Problem(None, "value", NO_VALUE, f"no {what} with a value to compare"))
    pairs = pairs.sort("query_id")
    differences = (pairs.get_column("cand") - pairs.get_column("base")).to_numpy().astype(np.float64)
    weights = poisson_counts(pairs.select("query_id"), resamples, seed).astype(np.float64)
    # The engine's bootstrap arithmetic: replicate means (nan where a replicate draws no case,
    # left out) and its percentile interval.
    replicates = weighted_means(differences[:, None], np.ones((pairs.height, 1)), weights)
    delta = float(differences.mean())
    found = intervals(replicates, np.array([delta]), confidence)
    return DeltaInterval(delta=delta, low=float(found.low[0]), high=float(found.high[0]), n=pairs.height,
                         resamples=resamples, confidence=confidence)
