"""Is a drop noise? The bootstrap interval of the change of a gate's metric, from the engine.

**From the runs' own replicates** (:func:`replicate_delta_ci`, the default whenever both runs
ran the bootstrap with the same draw: resamples, seed, unit and strata). The engine's replicate
``r`` is a weight vector over the resampled units, a pure function of the seed and each unit's
key values (:func:`evalframe.engine.replicates.poisson_counts`), so two runs over the same
units get the same weights in replicate ``r``, user weights included. The change's replicates
are then the difference of the runs' replicate values of the gate's summary row::

    delta_r = candidate_r − baseline_r          (left out where either is undefined)
    CI      = [q_(α/2), q_(1−α/2)] of the delta_r   (the summary's interval rule, engine.bootstrap.intervals)

For a per-unit mean with the same cases on both sides this is the paired bootstrap of
``Σ_q W_{u(q)r} · w_q · d_q / Σ_q W_{u(q)r} · w_q`` (``d_q = candidate_q − baseline_q``), with
the run's unit, weights, seed and percentile rule, and it holds for set metrics too: no
resampling happens here. The replicates come from ``replicates.parquet`` or, for a folder
written without it, are recomputed from the run's input by the engine
(:attr:`evalframe.results.data.ResultData.recompute_replicates`).

**Without them** (a run without a bootstrap, runs whose draws differ, or an input that cannot be
re-read), :func:`paired_delta_ci` pairs the per-query values of ``per_query.parquet`` under the
engine's draw (:func:`evalframe.engine.bootstrap.unit_weight_matrix`, with the candidate run's
settings, else the criteria's ``noise:``) and the engine's weighting (each case weighs its
unit's weight ``w_q``, the run's ``weight`` column, 1 without one)::

    delta   = Σ_q w_q · d_q / Σ_q w_q                             (the summary's weighted mean)
    delta_r = Σ_q W_{u(q)r} · w_q · d_q / Σ_q W_{u(q)r} · w_q       (replicate r; one with no weight is left out)

The per-query files carry no weight: a weighted run's weights are re-read from its input by the
engine (:attr:`evalframe.results.data.ResultData.rows`, the input's sha256 checked), and a weighted
run whose input cannot be re-read is an error rather than an unweighted interval.

Cases whose value is null on both sides (skipped by the metric on both, e.g. no gold id) are
left out; a case present (with a value) on one side only is an error naming how many there are,
since a paired interval needs the same cases (checked on both paths).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evalframe.errors import NO_VALUE, InputError, Problem
from evalframe.engine.bootstrap import Bootstrap, intervals, unit_weight_matrix, weighted_means


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
    unit: tuple[str, ...] = ("query_id",),
    strata: str | None = None,
    weight: str | None = None,
    what: str = "cases",
) -> DeltaInterval:
    """The paired bootstrap interval of ``mean(candidate) − mean(baseline)`` (module docstring).

    ``baseline`` and ``candidate`` have columns ``query_id`` and ``value`` (one metric, one slice),
    and the candidate the ``unit`` columns (each case's resampled unit), ``strata`` (the run's
    ``bootstrap.strata`` column, when it has one: each stratum keeps its size, as in the engine)
    and ``weight`` (each case's unit weight, when the run has one; the means are then weighted
    as the engine's).

    >>> base = pl.DataFrame({"query_id": ["a", "b", "c", "d"], "value": [1.0, 0.0, 1.0, 1.0]})
    >>> cand = base.with_columns(pl.col("value") * 0)
    >>> interval = paired_delta_ci(base, cand, resamples=200)
    >>> interval.delta, interval.high < 0
    (-0.75, True)
    """
    pairs = paired_cases(baseline, candidate, carry=(*unit, *([strata] if strata else []), *([weight] if weight else [])),
                         what=what)
    differences = (pairs.get_column("cand") - pairs.get_column("base")).to_numpy().astype(np.float64)
    case_weights = (pairs.get_column(weight).cast(pl.Float64).to_numpy() if weight is not None
                    else np.ones(pairs.height))
    if not case_weights.sum() > 0:
        raise InputError("per-query values", Problem(None, weight, NO_VALUE, f"every one of the {what} weighs 0"))
    units = pairs.select(list(unit)).unique().sort(list(unit), nulls_last=True)
    index = pairs.select(list(unit)).join(units.with_row_index("_unit"), on=list(unit), how="left", nulls_equal=True,
                                          maintain_order="left").get_column("_unit").to_numpy()
    settings = Bootstrap(resamples=resamples, seed=seed, confidence=confidence)
    strata_of = None
    if strata is not None:
        strata_of = pairs.select(*unit, strata).unique(list(unit)).sort(list(unit), nulls_last=True).get_column(strata)
        strata_of = strata_of.cast(pl.String).fill_null("").to_numpy()
    weights = unit_weight_matrix(units, settings, strata_of)[index]
    # The engine's bootstrap arithmetic: replicate means (nan where a replicate draws no weight,
    # left out) and its percentile interval.
    replicates = weighted_means((case_weights * differences)[:, None], case_weights[:, None], weights)
    delta = float((case_weights * differences).sum() / case_weights.sum()) if weight is not None else float(differences.mean())
    found = intervals(replicates, np.array([delta]), confidence)
    return DeltaInterval(delta=delta, low=float(found.low[0]), high=float(found.high[0]), n=pairs.height,
                         resamples=resamples, confidence=confidence)


def paired_cases(baseline: pl.DataFrame, candidate: pl.DataFrame, *, carry: tuple[str, ...] = (),
                 what: str = "cases") -> pl.DataFrame:
    """The cases with a value on either side (``query_id``, ``base``, ``cand`` and the candidate's
    ``carry`` columns), sorted by ``query_id``; a case with a value on one side only is an
    :class:`~evalframe.errors.InputError` (module docstring)."""
    carried = [c for c in dict.fromkeys(carry) if c != "query_id"]
    pairs = baseline.select("query_id", base="value").join(
        candidate.select("query_id", *carried, cand="value"), on="query_id", how="full", coalesce=True
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
    return pairs.sort("query_id")


def replicate_delta_ci(baseline: np.ndarray, candidate: np.ndarray, *, delta: float, n: int,
                       confidence: float) -> DeltaInterval:
    """The interval of ``candidate − baseline`` from the two runs' replicate values of one summary
    row (R each, nan where undefined; the same draw on both sides): the engine's interval rule
    over ``candidate_r − baseline_r`` (module docstring).

    >>> base, cand = np.array([0.5, 0.6, 0.55, np.nan]), np.array([0.4, 0.5, 0.5, 0.45])
    >>> found = replicate_delta_ci(base, cand, delta=-0.08, n=40, confidence=0.9)
    >>> round(found.low, 3), round(found.high, 3), found.resamples
    (-0.1, -0.055, 4)
    """
    deltas = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    found = intervals(deltas[None, :], np.array([delta]), confidence)
    return DeltaInterval(delta=delta, low=float(found.low[0]), high=float(found.high[0]), n=n,
                         resamples=deltas.size, confidence=confidence)
