"""trec output text made a column at a time, against Python's own formatting (the oracle).

`evalframe trec` used to print each value with ``f"{value:6.4f}"`` (counts ``f"{round(value)}"``)
in a Python loop; :mod:`evalframe.compat.number_text` makes the same text in 64-bit integer
arithmetic. Every value here is compared byte for byte with the f-string: arbitrary doubles,
values in [0, 1], the neighbours of the rounding boundaries x.xxxx5 (a few ulps each side, and
exact binary ties such as 0.03125), 0, -0.0, subnormals, the magnitudes where the exact path
ends (2^48) and nan/±inf (Python's path).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.compat.number_text import count_text, fixed4_text
from evalframe.compat.trec import _lines, parse_measures

ANY_DOUBLE = st.floats(allow_nan=True, allow_infinity=True, width=64)
UNIT = st.floats(min_value=0.0, max_value=1.0)


@st.composite
def near_boundaries(draw):
    """A double a few ulps from k/10⁴ + 5·10⁻⁵ (where ``%6.4f`` rounds one way or the other)."""
    whole = draw(st.integers(min_value=-(10**9), max_value=10**9))
    boundary = (whole + 0.5) / 10_000
    steps = draw(st.integers(min_value=-3, max_value=3))
    value = boundary
    for _ in range(abs(steps)):
        value = math.nextafter(value, math.inf if steps > 0 else -math.inf)
    return value


def python_fixed4(values) -> list[str]:
    return [f"{value:6.4f}" for value in values]


EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.5, 0.00005, 0.00015, 0.03125, 0.09375, 0.99995, 9.99995, 0.999949999,
    5e-324, -5e-324, 2.2250738585072014e-308, 1e-300, 1e-5, 5e-5, 123456.78905,
    2.0**47 + 0.5, 2.0**48 - 0.5, 2.0**48, 2.0**52 + 1, 1e20, -1e20, 1.7976931348623157e308,
    math.nan, -math.nan, math.inf, -math.inf,
]


def test_fixed4_on_edge_values():
    values = np.array(EDGES)
    assert fixed4_text(values).to_list() == python_fixed4(values)


def test_fixed4_on_every_boundary_of_the_unit_interval():
    """Each k/10⁴ + 5·10⁻⁵ in [0, 1] and its two neighbouring doubles (30,003 values)."""
    boundaries = (np.arange(10_001) + 0.5) / 10_000
    values = np.concatenate([boundaries, np.nextafter(boundaries, 0), np.nextafter(boundaries, 2)])
    assert fixed4_text(values).to_list() == python_fixed4(values)


@settings(max_examples=30, deadline=None)
@given(st.lists(ANY_DOUBLE, max_size=50), st.lists(UNIT, max_size=50), st.lists(near_boundaries(), max_size=50))
def test_fixed4_is_pythons_text(anything, unit, boundary):
    values = np.array([*anything, *unit, *boundary], dtype=np.float64)
    assert fixed4_text(values).to_list() == python_fixed4(values)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**70), 2**70).map(float)
                | st.integers(-1000, 1000).map(lambda k: k / 2), max_size=50))
def test_count_text_is_pythons_round(values):
    values = np.array(values, dtype=np.float64)
    assert count_text(values).to_list() == [f"{round(value)}" for value in values]


@pytest.mark.parametrize(("value", "error"), [(math.nan, ValueError), (math.inf, OverflowError)])
def test_count_text_raises_as_round_does(value, error):
    with pytest.raises(error):
        count_text(np.array([1.0, value]))


def python_lines(table: pl.DataFrame, items) -> str:
    """The loop this replaced: a dict over every (topic, metric) value, an f-string per line."""
    values = {(q, m): v for q, m, v in table.select("query_id", "metric", "value").iter_rows()}
    lines = []
    for query_id in table.get_column("query_id").unique(maintain_order=True):
        for item in items:
            value = values[(query_id, item.metric.name)]
            shown = f"{round(value)}" if item.metric.summary == "sum" else f"{value:6.4f}"
            lines.append(f"{item.printed:<22}\t{query_id}\t{shown}")
    return "\n".join(lines)


ITEMS = [item for item in parse_measures(["num_ret", "map", "P.5,10", "num_rel", "recip_rank"]) if item.metric]


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_lines_follow_the_topics_first_appearance_and_the_items_order(data):
    """Topics in any order, rows shuffled, extra metrics in the table: the loop's lines exactly."""
    topics = data.draw(st.lists(st.text("abc0123", min_size=1, max_size=4), min_size=1, max_size=8, unique=True))
    names = [item.metric.name for item in ITEMS] + ["ndcg@3"]
    rows = [(topic, name, data.draw(ANY_DOUBLE.filter(math.isfinite) | UNIT | near_boundaries()))
            for topic in topics for name in names]
    order = data.draw(st.permutations(range(len(rows))))
    table = pl.DataFrame([rows[i] for i in order], schema=["query_id", "metric", "value"], orient="row")
    counts = pl.col("metric").is_in(["num_ret", "num_rel"])
    table = table.with_columns(pl.when(counts).then(pl.col("value").abs().clip(0, 1e6).round()).otherwise("value"))
    assert _lines(table, ITEMS) == python_lines(table, ITEMS)


@pytest.mark.parametrize("change", ["drop", "repeat", "null"])
def test_lines_refuse_a_table_without_exactly_one_value_per_topic_and_item(change):
    table = pl.DataFrame({
        "query_id": [q for q in ("q1", "q2") for _ in ITEMS],
        "metric": [item.metric.name for _ in ("q1", "q2") for item in ITEMS],
        "value": [0.25] * (2 * len(ITEMS)),
    })
    table = {"drop": table.slice(1), "repeat": pl.concat([table, table.slice(0, 1)]),
             "null": table.with_columns(value=pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise("value"))}[change]
    with pytest.raises(ValueError, match="one per topic and measure"):
        _lines(table, ITEMS)


def python_output(result, selected, *, per_query: bool) -> str:
    """The whole output as the loop made it (per system: topics, then the ``all`` lines)."""
    lines = []
    items = [item for item in selected if item.metric is not None]
    for (system,), summary in result.summary.partition_by("system", as_dict=True, maintain_order=True).items():
        if per_query:
            lines += [text for text in (python_lines(result.per_query.filter(pl.col("system") == system), items),) if text]
        totals = dict(summary.select("metric", "value").iter_rows())
        for item in selected:
            if item.measure == "runid":
                lines.append(f"{'runid':<22}\tall\t{system}")
            elif item.measure == "num_q":
                n_queries = result.per_query.filter(pl.col("system") == system).get_column("query_id").n_unique()
                lines.append(f"{'num_q':<22}\tall\t{n_queries}")
            else:
                value = totals[item.metric.name]
                shown = f"{round(value)}" if item.metric.summary == "sum" else f"{value:6.4f}"
                lines.append(f"{item.printed:<22}\tall\t{shown}")
    return "\n".join(lines)


@pytest.mark.parametrize("per_query", [True, False])
def test_output_of_two_run_tags_is_the_loops(tmp_path, per_query):
    """Two systems (run tags) with topics in different orders, all_trec: the loop's text exactly."""
    rng = np.random.default_rng(7)
    run, qrels = [], []
    for tag, topics in (("b_sys", ["q3", "q1", "q10", "q2"]), ("a_sys", ["q2", "q10", "q3"])):
        for topic in topics:
            for doc in range(int(rng.integers(1, 30))):
                run.append(f"{topic} Q0 d{doc} 0 {rng.integers(0, 8) / 4} {tag}")
    for topic in ("q1", "q2", "q3", "q10"):
        qrels += [f"{topic} 0 d{doc} {int(rng.integers(0, 3))}" for doc in range(0, 40, 3)]
    (tmp_path / "run.txt").write_text("\n".join(run) + "\n")
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    from evalframe.compat.trec import evaluate_trec, format_output
    from evalframe.io import read_qrels, read_run

    selected = parse_measures(["all_trec"])
    result = evaluate_trec(read_run(tmp_path / "run.txt"), read_qrels(tmp_path / "qrels.txt"), selected, complete=True)
    text = format_output(result, selected, per_query=per_query)
    assert text == python_output(result, selected, per_query=per_query)
    assert text.count("runid") == 2 and (text.count("\tq10\t") == 2 * 46) == per_query
