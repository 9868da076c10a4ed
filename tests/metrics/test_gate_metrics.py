"""Three-state gate metrics (contract §5) against a plain-Python transcription of the contract's code.

The reference below follows the contract text line by line (``assign_state``, the §5.2–5.4
formulas with ``n`` the slice's number of queries), with weights as repeated rows, on every
slice of every system, including slices without positives and without POS states.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.errors import ConfigError
from evalframe.metrics.base import merge_states, with_unit_weights
from evalframe.metrics.gate import (
    GATE_METRICS,
    NO_GATED_QUERY,
    NO_POS_STATE,
    AlertPrecision,
    NegRate,
    ScreeningSensitivity,
)
from evalframe.metrics.set_values import NO_POSITIVE
from evalframe.metrics.registry import resolve

NAMES = [metric.key for metric in GATE_METRICS]


def reference_state(prob: float, tau_neg: float, tau_pos: float) -> str:
    """The contract's ``assign_state`` (§5.1), verbatim."""
    if prob < tau_neg:
        return "NEG"
    elif prob < tau_pos:
        return "UNCERTAIN"
    else:
        return "POS"


def reference_gate(labels: list[int], states: list[str], weights: list[int] | None = None) -> dict[str, float | None]:
    """§5.2–5.4 on one slice; a weight w counts the row w times."""
    weights = weights or [1] * len(labels)
    rows = [(label, state) for label, state, w in zip(labels, states, weights) for _ in range(w)]
    n = len(rows)
    n_neg = sum(1 for _, s in rows if s == "NEG")
    n_unc = sum(1 for _, s in rows if s == "UNCERTAIN")
    n_pos = sum(1 for _, s in rows if s == "POS")
    tp_screen = sum(1 for y, s in rows if y == 1 and s != "NEG")
    fn_screen = sum(1 for y, s in rows if y == 1 and s == "NEG")
    tp_alert = sum(1 for y, s in rows if y == 1 and s == "POS")
    fp_alert = sum(1 for y, s in rows if y == 0 and s == "POS")

    def ratio(a, b, scale=1.0):
        return None if b == 0 else a / b * scale

    return {
        "neg_rate": ratio(n_neg, n),
        "uncertain_rate": ratio(n_unc, n),
        "pos_rate": ratio(n_pos, n),
        "alert_rate_per_1000": ratio(n_pos, n, 1000.0),
        "screening_sensitivity": ratio(tp_screen, tp_screen + fn_screen),
        "screening_fn_per_1000": ratio(fn_screen, n, 1000.0),
        "alert_precision": ratio(tp_alert, tp_alert + fp_alert),
    }


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def per_query_frame(rows: list[tuple[str, str, int, int, float, str, int]]) -> pl.DataFrame:
    """A per_query.csv frame from (config, post, fold, label, prob, state, weight) rows."""
    return pl.DataFrame(
        {
            "config": [r[0] for r in rows],
            "post_id": [r[1] for r in rows],
            "criterion_id": [f"A.{i}" for i in range(len(rows))],
            "fold": [r[2] for r in rows],
            "has_evidence_gold": [r[3] for r in rows],
            "p_has_evidence": [r[4] for r in rows],
            "gold_sent_uids": [[f"{r[1]}_s1"] if r[3] else [] for r in rows],
            "ranked_sent_uids": [[f"{r[1]}_s1"] for r in rows],
            "state": [r[5] for r in rows],
            "w": [float(r[6]) for r in rows],
        },
        schema_overrides={"gold_sent_uids": pl.List(pl.String), "ranked_sent_uids": pl.List(pl.String)},
    )


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["p1", "p2", "p3"]),
        st.just(0),
        st.integers(0, 1),
        st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
        st.sampled_from(["NEG", "UNCERTAIN", "POS"]),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=30)
@given(rows=rows_strategy, weighted=st.booleans())
def test_gate_metrics_match_the_reference_per_system_and_slice(rows, weighted):
    # A post stays in one fold: fold = post's number.
    rows = [(c, p, int(p[1]), y, prob, s, w) for c, p, _, y, prob, s, w in rows]
    frame = per_query_frame(rows)
    tables = ef.read_per_query(frame)
    ev = ef.evaluate(tables, metrics=NAMES, slices={"overall": [], "fold": ["fold"]},
                     weight="w" if weighted else None)
    for row in ev.summary.iter_rows(named=True):
        chosen = [r for r in rows if r[0] == row["system"] and (row["fold"] is None or r[2] == row["fold"])]
        weights = [r[6] for r in chosen] if weighted else None
        expected = reference_gate([r[3] for r in chosen], [r[5] for r in chosen], weights)[row["metric"]]
        assert close(row["value"], expected), (row, expected)


@settings(max_examples=30)
@given(rows=rows_strategy, taus=st.tuples(st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5]),
                                         st.sampled_from([0.5, 0.7, 0.9, 1.0])))
def test_states_from_thresholds_follow_assign_state(rows, taus):
    tau_neg, tau_pos = taus
    rows = [(c, p, int(p[1]), y, prob, s, 1) for c, p, _, y, prob, s, _ in rows]
    tables = ef.read_per_query(per_query_frame(rows).drop("state"))
    ev = ef.evaluate(tables, metrics=NAMES, slices={"overall": []},
                     parameters={"tau_neg": tau_neg, "tau_pos": tau_pos})
    for row in ev.summary.iter_rows(named=True):
        chosen = [r for r in rows if r[0] == row["system"]]
        states = [reference_state(r[4], tau_neg, tau_pos) for r in chosen]
        key = row["metric"].split("(")[0]
        assert close(row["value"], reference_gate([r[3] for r in chosen], states)[key]), row


def test_slices_without_positives_or_pos_states_are_null_with_a_reason():
    rows = pl.LazyFrame({"fold": [0, 0, 1, 1], "label": [0, 0, 1, 0], "state": ["NEG", "POS", "UNCERTAIN", "NEG"]})
    sens = ScreeningSensitivity().compute(rows, by=["fold"]).collect()
    assert sens.rows() == [(0, 2, None, NO_POSITIVE), (1, 2, 1.0, None)]
    precision = AlertPrecision().compute(rows, by=["fold"]).collect()
    assert precision.rows() == [(0, 2, 0.0, None), (1, 2, None, NO_POS_STATE)]
    empty = NegRate().compute(rows.filter(pl.col("fold") == 0).with_columns(state=pl.lit(None, pl.String)), by=[]).collect()
    assert empty.rows() == [(0, None, NO_GATED_QUERY)]


def test_states_merge_exactly():
    rows = with_unit_weights(pl.LazyFrame({"label": [1, 0, 1, 0, 1], "state": ["NEG", "POS", "POS", "UNCERTAIN", "POS"]}))
    metric = AlertPrecision()
    parts = [metric.state(rows.slice(0, 2), []), metric.state(rows.slice(2, 3), [])]
    merged = metric.finalize(merge_states(parts, [], ()), []).collect()
    assert merged.rows() == metric.finalize(metric.state(rows, []), []).collect().rows()
    assert merged.get_column("value").item() == pytest.approx(2 / 3)


@pytest.mark.parametrize(("text", "message"), [
    ("neg_rate(tau_neg=0.7,tau_pos=0.3)", "tau_neg (0.7) > tau_pos (0.3)"),
    ("neg_rate(tau_neg=0.2)", "give both `tau_neg` and `tau_pos`"),
    ("neg_rate(tau_neg=-0.1,tau_pos=0.3)", "must be a number in [0, 1]"),
])
def test_bad_thresholds_are_config_errors(text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        resolve(text)


def test_names_and_required_columns_say_where_the_state_comes_from():
    assert resolve("alert_precision").name == "alert_precision"
    assert resolve("alert_precision").required_columns == {"queries": ("label", "state")}
    with_taus = resolve("alert_precision", defaults={"tau_neg": 0.1, "tau_pos": 0.6})
    assert with_taus.name == "alert_precision(tau_neg=0.1,tau_pos=0.6)"
    assert with_taus.required_columns == {"queries": ("label", "prob")}


def test_a_missing_state_column_is_a_config_error_naming_it():
    tables = ef.read_per_query(per_query_frame([("a", "p1", 1, 1, 0.5, "POS", 1)]).drop("state"))
    with pytest.raises(ConfigError, match="state"):
        ef.evaluate(tables, metrics=["neg_rate"])


def test_the_sample_per_system_fold_and_criterion_matches_the_reference():
    from pathlib import Path

    sample = Path(__file__).resolve().parents[2] / "data_samples" / "per_query.csv"
    raw = pl.read_csv(sample, columns=["config", "fold", "criterion_id", "has_evidence_gold", "state"])
    ev = ef.evaluate(ef.read_per_query(sample), metrics=NAMES,
                     slices={"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]})
    groups = {}
    for config, fold, criterion, label, state in raw.iter_rows():
        for key in ((config, None, None), (config, fold, None), (config, None, criterion)):
            groups.setdefault(key, ([], []))
            groups[key][0].append(label)
            groups[key][1].append(state)
    assert ev.summary.height == len(groups) * len(NAMES)
    for row in ev.summary.iter_rows(named=True):
        labels, states = groups[(row["system"], row["fold"], row["criterion_id"])]
        assert close(row["value"], reference_gate(labels, states)[row["metric"]]), row
