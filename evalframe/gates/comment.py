"""The PR comment of ``evalframe gate``: plain words for reviewers who are not ML engineers.

Layout: a one-line verdict ("❌ 1 blocking check failed" / "✅ all checks passed, 1 warning"),
one sentence per gate ("retrieval recall@5 dropped from 87% to 81% (−6.0 points; the limit is
−3.0) — blocks merge"), the tag-level breakdown of the gated metrics (the largest drops, with
case counts), a note when a tag's drop exceeds the limit although the overall number passes
(masking), and how to reproduce.

Numbers come from the shared formatter (:mod:`evalframe.report.formatting`): rates
(``Metric.is_rate``: recall, precision, hit rate) as whole percentages and changes in points with
one decimal, other metrics with two decimals; rounding is half up on the printed decimal
(0.8650 → 87%). When two numbers a sentence compares (a value and its floor, a drop and its
limit) differ but would print alike, both get more decimals until they print differently, so
a sentence never reads "85% is below its floor of 85%".
"""

from __future__ import annotations

from collections.abc import Callable

from evalframe.gates.outcome import TOLERANCE, GateReport, GateResult, SliceChange
from evalframe.metrics.base import Metric
from evalframe.report.formatting import decimal, percent, points, signed_decimal

TITLE = "### Quality gate"
#: Display spellings of metric names in plain text.
DISPLAY = {"mrr": "MRR", "ndcg": "nDCG", "map": "MAP", "r_precision": "R-precision"}
#: Extra decimals tried so that two different numbers never print alike.
MAX_EXTRA_PLACES = 3


def display_metric(metric: Metric) -> str:
    """``recall@5``, ``MRR``, ``nDCG@10``."""
    head, at, tail = metric.name.partition("@")
    return DISPLAY.get(head, head) + at + tail


def gate_label(result: GateResult) -> str:
    """``retrieval recall@5`` (from the gate's name), with the slice when it is not overall."""
    gate = result.gate
    if gate.name.startswith("retrieval_"):
        label = f"retrieval {display_metric(gate.metric)}"
    else:
        label = f"{gate.name} ({display_metric(gate.metric)})"
    if gate.slice.keys:
        label += " on " + ", ".join(f"{column} {value}" for column, value in gate.slice.keys.items())
    return label


def _formatters(metric: Metric, extra: int) -> tuple[Callable, Callable, str]:
    """(value formatter, change formatter, unit of a change) for ``metric`` with ``extra`` places."""
    if metric.is_rate:
        return (lambda v: percent(v, extra)), (lambda d: points(d, 1 + extra)), " points"
    return (lambda v: decimal(v, 2 + extra)), (lambda d: signed_decimal(d, 2 + extra)), ""


def _places(metric: Metric, pairs: list[tuple[float | None, float | None]], *, changes: bool = False) -> int:
    """The fewest extra decimals at which each pair of different numbers prints differently."""
    for extra in range(MAX_EXTRA_PLACES + 1):
        value_format, change_format, _ = _formatters(metric, extra)
        shown = change_format if changes else value_format
        if all(a is None or b is None or abs(a - b) <= TOLERANCE or shown(a) != shown(b) for a, b in pairs):
            return extra
    return MAX_EXTRA_PLACES


def _tail(result: GateResult) -> str:
    if not result.failed:
        return "passes"
    return "blocks merge" if result.blocks else "warning, does not block"


def _interval_text(result: GateResult, change_format: Callable) -> str:
    interval = result.interval
    if interval is None:
        return ""
    level = percent(interval.confidence)
    return f", {level} CI {change_format(interval.low)} to {change_format(interval.high)}"


def gate_sentence(result: GateResult) -> str:
    """One plain sentence for one gate (module docstring)."""
    gate, metric = result.gate, result.gate.metric
    label = gate_label(result)
    higher = gate.higher_is_better
    bound_word = "floor" if higher else "ceiling"
    value_extra = _places(metric, [(result.value, gate.threshold)] if result.floor_failed else [])
    value_format, _, _ = _formatters(metric, value_extra)
    # Changes compare the drop with its limit: both printed as signed changes in the bad direction.
    bad = -1.0 if higher else 1.0
    limit = None if gate.regression_max is None else bad * gate.regression_max
    change_extra = _places(metric, [(result.delta, limit)], changes=True)
    _, change_format, unit = _formatters(metric, change_extra)
    floor_clause = ""
    if result.floor_failed:
        side = "below" if higher else "above"
        floor_clause = f"{side} its {bound_word} of {value_format(gate.threshold)}"
    if result.regression_exceeded:
        verb = "dropped" if higher else "rose"
        sentence = (f"{label} {verb} from {value_format(result.baseline)} to {value_format(result.value)} "
                    f"({change_format(result.delta)}{unit}{_interval_text(result, change_format)}; "
                    f"the limit is {change_format(limit)})")
        if not result.regression_failed:
            sentence += ", but the change is within noise (the interval includes 0)"
        if floor_clause:
            sentence += f" and is {floor_clause}"
        return f"{sentence} — {_tail(result)}"
    context = []
    if result.baseline is not None:
        context.append(f"baseline {value_format(result.baseline)}")
        if result.interval is not None:
            context[-1] += f", {change_format(result.delta)}{unit}{_interval_text(result, change_format)}"
    elif result.baseline_note is not None:
        context.append("no baseline; the regression limit was not checked")
    elif gate.regression_max is None and result.baseline is None:
        pass
    sentence = f"{label} is {value_format(result.value)}"
    if context:
        sentence += f" ({'; '.join(context)})"
    if floor_clause:
        sentence += f", {floor_clause}"
    return f"{sentence} — {_tail(result)}"


def verdict_line(report: GateReport) -> str:
    """"❌ 1 blocking check failed" / "✅ all checks passed, 1 warning"."""
    blocking, warnings = len(report.blocking_failures), len(report.warnings)
    warned = f", {warnings} warning" + ("" if warnings == 1 else "s") if warnings else ""
    if blocking:
        return f"❌ {blocking} blocking check{'' if blocking == 1 else 's'} failed{warned}"
    return f"✅ all checks passed{warned}"


def _change_line(change: SliceChange, metric: Metric) -> str:
    limit = change.gate.regression_max
    extra = _places(metric, [(change.drop, limit)], changes=True)
    value_format, change_format, unit = _formatters(metric, extra)
    verb = "dropped" if change.gate.higher_is_better else "rose"
    cases = f"{change.n:,} case" + ("" if change.n == 1 else "s")
    return (f"`{change.label}` ({cases}): {verb} from {value_format(change.baseline)} to "
            f"{value_format(change.value)} ({change_format(change.value - change.baseline)}{unit})")


def breakdown_lines(report: GateReport) -> list[str]:
    """The largest drops per gated metric, and the masking notes."""
    if report.breakdown_grouping is None or not report.breakdown:
        return []
    metrics = {r.gate.metric.name: r.gate.metric for r in report.results}
    top = report.criteria.breakdown_top if report.criteria else 5
    heading = (f"**By {report.breakdown_grouping}** (largest drops against the baseline, up to {top}; "
               "a case with several tags counts in each):")
    lines = [heading, ""]
    for name, changes in report.breakdown.items():
        metric = metrics[name]
        if not changes:
            lines.append(f"- {display_metric(metric)}: no {report.breakdown_grouping} dropped")
            continue
        lines.append(f"- {display_metric(metric)}:")
        lines += [f"  - {_change_line(change, metric)}" for change in changes]
    lines.append("")
    for result, change in report.masked:
        metric = result.gate.metric
        _, change_format, unit = _formatters(metric, _places(metric, [(change.drop, result.gate.regression_max)], changes=True))
        verb = "dropped" if result.gate.higher_is_better else "rose"
        amount, limit = change_format(change.drop).lstrip("+"), change_format(result.gate.regression_max).lstrip("+")
        lines.append(
            f"⚠️ {gate_label(result)} passes overall, but on {report.breakdown_grouping} `{change.label}` "
            f"({change.n:,} cases) it {verb} by {amount}{unit}, more than the limit of {limit}{unit}: "
            "the overall number hides a per-task regression."
        )
    if report.masked:
        lines.append("")
    return lines


def render_comment(report: GateReport, *, reproduce: list[str] | None = None) -> str:
    """The whole PR comment (Markdown)."""
    lines = [TITLE, "", f"**{verdict_line(report)}**", ""]
    lines += [f"- {gate_sentence(result)}" for result in report.results]
    lines.append("")
    lines += breakdown_lines(report)
    if reproduce:
        lines.append("<sub>How to reproduce: " + "; then ".join(f"`{command}`" for command in reproduce) + "</sub>")
    return "\n".join(lines).rstrip() + "\n"
