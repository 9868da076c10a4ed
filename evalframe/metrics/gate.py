"""Three-state gate metrics (contract §5): workload, screening and alert rates of NEG / UNCERTAIN / POS.

Every query of a slice is in one of three states (contract §5.1): ``NEG`` (skipped: likely no
evidence), ``UNCERTAIN`` (conservative review) or ``POS`` (a high-confidence alert). The state
comes from one of two places, and the metric's parameters say which:

- the ``state`` column of the queries table (the system's own decision), when neither ``tau_neg``
  nor ``tau_pos`` is given (the default);
- the contract's rule over ``prob`` when both are given (``p < tau_neg`` → NEG, else
  ``p < tau_pos`` → UNCERTAIN, else POS); ``tau_neg > tau_pos``, or only one of the two, is a
  configuration error. In a pipeline: ``parameters: {tau_neg: 0.05, tau_pos: 0.6}``.

**State** (shared by all seven metrics at the same thresholds, ``state_id`` ``("gate", τn, τp)``):
per slice, the rows used ``n`` (a label and a state present) and six weighted counts,
state × gold label: ``neg_pos`` (NEG with evidence: a screening false negative), ``neg_neg``,
``unc_pos``, ``unc_neg``, ``pos_pos`` (POS with evidence: a true alert), ``pos_neg`` (a false
alert). They add up over disjoint parts, so the metrics merge exactly.

**Formulas** (:data:`FORMULAS`, written once over the counts and evaluated both as Polars
expressions here and as NumPy arrays by :mod:`evalframe.analyses.tuning`), with
``total = Σ counts`` (the slice's weighted number of queries, the contract's 14,770):

================================  ==================================================  =========
metric                            formula                                             null when
================================  ==================================================  =========
``neg_rate``                      (neg_pos + neg_neg) / total                         total = 0
``uncertain_rate``                (unc_pos + unc_neg) / total                         total = 0
``pos_rate``                      (pos_pos + pos_neg) / total                         total = 0
``alert_rate_per_1000``           1000 · (pos_pos + pos_neg) / total                  total = 0
``screening_sensitivity``         (unc_pos + pos_pos) / (neg_pos + unc_pos + pos_pos)  no positive
``screening_fn_per_1000``         1000 · neg_pos / total                              total = 0
``alert_precision``               pos_pos / (pos_pos + pos_neg)                       no POS state
================================  ==================================================  =========

A null value carries its reason in the summary's ``note``; nothing is made up.

>>> import polars as pl
>>> rows = pl.LazyFrame({"label": [1, 1, 0, 0, 0], "state": ["POS", "NEG", "POS", "UNCERTAIN", "NEG"]})
>>> AlertPrecision().compute(rows, by=[]).collect().rows()
[(5, 0.5, None)]
>>> ScreeningSensitivity().compute(rows, by=[]).collect().rows()
[(5, 0.5, None)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import polars as pl

from evalframe.errors import ConfigError
from evalframe.metrics.base import SetMetric, TargetCategory, safe_divide
from evalframe.metrics.params import param, params_of
from evalframe.metrics.set_values import NO_POSITIVE, Reason, finalized
from evalframe.metrics.curves import weighted_counts

STATES = ("NEG", "UNCERTAIN", "POS")
#: The state's weighted counts, state × label (module docstring).
COUNTS = ("neg_pos", "neg_neg", "unc_pos", "unc_neg", "pos_pos", "pos_neg")

NO_GATED_QUERY = "no query with a label and a gate state in the slice"
NO_POS_STATE = "no POS state in the slice"


@dataclass(frozen=True)
class GateFormula:
    """``scale · numerator(counts) / denominator(counts)``; undefined (``note``) when the denominator is 0.

    ``counts`` maps each name of :data:`COUNTS` to a value that supports ``+`` and ``*``: a
    Polars expression (the metric) or a NumPy array (every grid point of a threshold search).
    """

    numerator: Callable[[Mapping[str, Any]], Any]
    denominator: Callable[[Mapping[str, Any]], Any]
    scale: float
    undefined_note: str


def total(c: Mapping[str, Any]) -> Any:
    """Weighted number of gated queries of the slice."""
    return c["neg_pos"] + c["neg_neg"] + c["unc_pos"] + c["unc_neg"] + c["pos_pos"] + c["pos_neg"]


def positives(c: Mapping[str, Any]) -> Any:
    """Weighted number of queries with evidence."""
    return c["neg_pos"] + c["unc_pos"] + c["pos_pos"]


def alerts(c: Mapping[str, Any]) -> Any:
    """Weighted number of POS states."""
    return c["pos_pos"] + c["pos_neg"]


#: The contract's formulas (module docstring), by metric name; the one definition of each.
FORMULAS: dict[str, GateFormula] = {
    "neg_rate": GateFormula(lambda c: c["neg_pos"] + c["neg_neg"], total, 1.0, NO_GATED_QUERY),
    "uncertain_rate": GateFormula(lambda c: c["unc_pos"] + c["unc_neg"], total, 1.0, NO_GATED_QUERY),
    "pos_rate": GateFormula(alerts, total, 1.0, NO_GATED_QUERY),
    "alert_rate_per_1000": GateFormula(alerts, total, 1000.0, NO_GATED_QUERY),
    "screening_sensitivity": GateFormula(lambda c: c["unc_pos"] + c["pos_pos"], positives, 1.0, NO_POSITIVE),
    "screening_fn_per_1000": GateFormula(lambda c: c["neg_pos"], total, 1000.0, NO_GATED_QUERY),
    "alert_precision": GateFormula(lambda c: c["pos_pos"], alerts, 1.0, NO_POS_STATE),
}


def check_thresholds(tau_neg: float | None, tau_pos: float | None, *, where: str = "gate") -> None:
    """Both thresholds or neither; each in [0, 1]; ``tau_neg <= tau_pos`` (else :class:`ConfigError`)."""
    if (tau_neg is None) != (tau_pos is None):
        msg = f"`{where}`: give both `tau_neg` and `tau_pos` (the state from prob) or neither (the `state` column)"
        raise ConfigError(msg)
    for name, value in (("tau_neg", tau_neg), ("tau_pos", tau_pos)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 1:
            raise ConfigError(f"`{where}`: `{name}` must be a number in [0, 1], got {value!r}")
    if tau_neg is not None and tau_pos is not None and tau_neg > tau_pos:
        raise ConfigError(f"`{where}`: tau_neg ({tau_neg!r}) > tau_pos ({tau_pos!r}); the NEG band must lie below the POS band")


def assign_state(tau_neg: float, tau_pos: float, prob: pl.Expr | None = None) -> pl.Expr:
    """The contract's rule (§5.1): ``p < tau_neg`` → NEG, ``p < tau_pos`` → UNCERTAIN, else POS (null p → null)."""
    p = pl.col("prob") if prob is None else prob
    return (
        pl.when(p.is_null()).then(pl.lit(None, dtype=pl.String))
        .when(p < tau_neg).then(pl.lit("NEG"))
        .when(p < tau_pos).then(pl.lit("UNCERTAIN"))
        .otherwise(pl.lit("POS"))
    )


def gate_counts(rows: pl.LazyFrame, by: Sequence[str], state: pl.Expr) -> pl.LazyFrame:
    """The gate state: per slice ``n`` (rows with a label and a state) and the weighted :data:`COUNTS`."""
    used = pl.col("label").is_not_null() & state.is_not_null()
    positive = pl.col("label") == 1
    cells = {"neg": "NEG", "unc": "UNCERTAIN", "pos": "POS"}
    conditions = {}
    for short, name in cells.items():
        conditions[f"{short}_pos"] = used & (state == name) & positive
        conditions[f"{short}_neg"] = used & (state == name) & ~positive
    return weighted_counts(rows, by, conditions, used=used)


@dataclass(frozen=True)
class GateMetric(SetMetric):
    """Base of the three-state gate metrics (module docstring); ``key`` names its formula."""

    tau_neg: float | None = param(None, "NEG when prob < tau_neg (with tau_pos; neither: the `state` column)",
                                  low=0, high=1, shared=True)
    tau_pos: float | None = param(None, "POS when prob >= tau_pos (with tau_neg; neither: the `state` column)",
                                  low=0, high=1, shared=True)
    target: ClassVar[TargetCategory] = TargetCategory.CLASSIFICATION
    subset: ClassVar[str] = "all queries"
    value_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    state_kinds: ClassVar[Mapping[str, str] | None] = {"n": "count", **dict.fromkeys(COUNTS, "sum")}
    key: ClassVar[str]

    def __post_init__(self) -> None:
        check_thresholds(self.tau_neg, self.tau_pos, where=self.key)  # the pair's rule, then each value's
        super().__post_init__()

    @property
    def from_column(self) -> bool:
        """Whether the state is read from the ``state`` column (no thresholds given)."""
        return self.tau_neg is None

    @property
    def required_columns(self) -> Mapping[str, tuple[str, ...]]:  # type: ignore[override]
        return {"queries": ("label", "state")} if self.from_column else {"queries": ("label", "prob")}

    @property
    def name(self) -> str:
        if self.from_column:
            return self.key
        return f"{self.key}(tau_neg={self.tau_neg!r},tau_pos={self.tau_pos!r})"

    @property
    def state_id(self) -> object:
        return ("gate", self.tau_neg, self.tau_pos)

    def state_expr(self) -> pl.Expr:
        """The row's gate state (``state`` column, or the contract's rule over ``prob``)."""
        if self.from_column:
            return pl.col("state")
        return assign_state(self.tau_neg, self.tau_pos)

    def state(self, rows: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        return gate_counts(rows, by, self.state_expr())

    def finalize(self, state: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
        formula = FORMULAS[self.key]
        counts = {name: pl.col(name) for name in COUNTS}
        value = safe_divide(formula.numerator(counts), formula.denominator(counts)) * formula.scale
        reasons: list[Reason] = [
            (pl.col("n") == 0, NO_GATED_QUERY),
            (formula.denominator(counts) == 0, formula.undefined_note),
        ]
        return finalized(state, by, value, reasons)


#: The parameters that derive the ``state`` column from ``prob``: those :class:`GateMetric` declares.
STATE_PARAMETERS = tuple(declared.name for declared in params_of(GateMetric))


class NegRate(GateMetric):
    """NEG rate: the fraction of queries skipped, ``n_NEG / n`` (contract §5.2); a workload share."""

    key = "neg_rate"


class UncertainRate(GateMetric):
    """UNCERTAIN rate: the fraction of queries sent to conservative review, ``n_UNCERTAIN / n``."""

    key = "uncertain_rate"
    higher_is_better = False


class PosRate(GateMetric):
    """POS rate: the fraction of queries flagged as high-confidence alerts, ``n_POS / n``."""

    key = "pos_rate"
    higher_is_better = False


class AlertRatePer1000(GateMetric):
    """Alerts per 1000 queries: ``1000 · n_POS / n`` (contract §5.4); lower means less review."""

    key = "alert_rate_per_1000"
    higher_is_better = False
    value_range = (0.0, 1000.0)


class ScreeningSensitivity(GateMetric):
    """Screening sensitivity: queries with evidence screened in (not NEG) / queries with evidence (§5.3).

    ``(TP_screen) / (TP_screen + FN_screen)`` with TP_screen = evidence and state ≠ NEG,
    FN_screen = evidence and state = NEG. Null ("no positive in the slice") without evidence.
    """

    key = "screening_sensitivity"


class ScreeningFNPer1000(GateMetric):
    """Missed evidence per 1000 queries: ``1000 · FN_screen / n`` (contract §5.3); lower is better."""

    key = "screening_fn_per_1000"
    higher_is_better = False
    value_range = (0.0, 1000.0)


class AlertPrecision(GateMetric):
    """Alert precision: POS states with evidence / POS states, ``TP_alert / (TP_alert + FP_alert)`` (§5.4).

    Null ("no POS state in the slice") when no query is POS.
    """

    key = "alert_precision"


GATE_METRICS: tuple[type[GateMetric], ...] = (
    NegRate,
    UncertainRate,
    PosRate,
    AlertRatePer1000,
    ScreeningSensitivity,
    ScreeningFNPer1000,
    AlertPrecision,
)


def _specs():
    from evalframe.metrics.registry import MetricSpec

    # What each metric means for a reader (reports, `evalframe metrics`), and its kind of number.
    meanings = {
        "neg_rate": ("Share of queries the gate skips (NEG): workload saved.", "rate"),
        "uncertain_rate": ("Share of queries sent to conservative review (UNCERTAIN).", "rate"),
        "pos_rate": ("Share of queries raised as high-confidence alerts (POS).", "rate"),
        "alert_rate_per_1000": ("Alerts (POS) per 1000 queries: how many a reviewer must look at.", "score"),
        "screening_sensitivity": ("Of 100 queries with evidence, how many the gate does not skip.", "rate"),
        "screening_fn_per_1000": ("Queries with evidence the gate skips, per 1000 queries: missed evidence.", "score"),
        "alert_precision": ("Of 100 alerts (POS), how many truly have evidence.", "rate"),
    }
    return [
        MetricSpec(metric.key, metric, (metric.__doc__ or "").strip().splitlines()[0],
                   meaning=meanings[metric.key][0], kind=meanings[metric.key][1])
        for metric in GATE_METRICS
    ]


SPECS = _specs()
