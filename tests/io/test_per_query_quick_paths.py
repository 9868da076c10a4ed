"""The reader's quick paths give what the general ones give, and step aside when they cannot.

- :func:`evalframe.io.per_query._json_number_lists` parses number lists spelled as JSON arrays
  without a per-list evaluation; on any cell it cannot vouch for it returns None, and the
  cell-by-cell parse (which words the problems) runs instead;
- :func:`evalframe.data.conform._may_increase` screens the ``non_increasing`` rule: it may say
  "maybe" too often, never "no" where the rule finds a row;
- :func:`evalframe.data.conform._stretch_length` gives up on stretches shorter than two rows
  (the key check then counts every hash) and still finds repeated keys.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.data.conform import _keys_distinct, _may_increase, _stretch_length
from evalframe.errors import InputError
from evalframe.io.per_query import _json_number_lists, _number_lists_cell_by_cell, parse_number_lists, read_per_query

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
number_lists = st.lists(finite, max_size=6)


def _spelled(numbers: list[float], style: str) -> str:
    if style == "compact":
        return json.dumps(numbers, separators=(",", ":"))
    if style == "spaced":
        return json.dumps(numbers)  # "[0.5, 0.25]"
    return " [ " + " ,\t".join(repr(x) for x in numbers) + " ] "  # whitespace around every token


def _cell_by_cell(frame: pl.DataFrame) -> tuple[pl.Series, list]:
    parsed, problems = _number_lists_cell_by_cell(frame, ["scores"], locate=lambda i: f"row {i + 1}", labels={})
    return parsed["scores"], problems


@settings(max_examples=20)
@given(st.lists(st.tuples(number_lists, st.sampled_from(["compact", "spaced", "loose"])), min_size=1, max_size=8),
       st.sampled_from([None, "", "[]", " [ ] "]))
def test_json_number_lists_equal_the_cell_by_cell_parse_bit_for_bit(cells, empty):
    texts = [_spelled(numbers, style) for numbers, style in cells] + [empty]
    frame = pl.DataFrame({"scores": texts}, schema={"scores": pl.String})
    quick = _json_number_lists(frame, ["scores"])
    assert quick is not None
    general, problems = _cell_by_cell(frame)
    assert problems == []
    assert quick["scores"].dtype == general.dtype == pl.List(pl.Float64)
    assert quick["scores"].to_list() == general.to_list() == [[*numbers] for numbers, _ in cells] + [[]]
    # bit for bit (0.0 and -0.0 compare equal above)
    as_bits = lambda series: series.list.explode(empty_as_null=False, keep_nulls=False).to_numpy().view("u8").tolist()
    assert as_bits(quick["scores"]) == as_bits(general)


@settings(max_examples=20)
@given(st.lists(st.lists(finite, min_size=1, max_size=6), min_size=1, max_size=8))
def test_compact_number_lists_without_an_empty_cell_equal_the_cell_by_cell_parse_bit_for_bit(lists):
    # No cell is null, "" or "[]": the quick path splits without its choice per cell (issue 22).
    frame = pl.DataFrame({"scores": [_spelled(numbers, "compact") for numbers in lists]}, schema={"scores": pl.String})
    quick = _json_number_lists(frame, ["scores"])
    general, problems = _cell_by_cell(frame)
    assert quick is not None and problems == []
    assert quick["scores"].to_list() == general.to_list() == lists
    as_bits = lambda series: series.list.explode(empty_as_null=False, keep_nulls=False).to_numpy().view("u8").tolist()
    assert as_bits(quick["scores"]) == as_bits(general)


@pytest.mark.parametrize("bad", ["[0.9, nan]", "[1e999]", "[0.9, x]", "0.9;0.4", "[0.9,,0.4]", "[\"0.9\"]", "[-inf]"])
def test_json_number_lists_step_aside_and_the_general_parse_words_the_cell(bad):
    frame = pl.DataFrame({"scores": ["[0.9, 0.4]", bad]})
    assert _json_number_lists(frame, ["scores"]) is None
    parsed, problems = parse_number_lists(frame, ["scores"], locate=lambda i: f"row {i + 1}", labels={"scores": "s"})
    general, general_problems = _cell_by_cell(frame)
    assert parsed["scores"].equals(general)  # NaN equal to NaN
    if bad == "0.9;0.4":  # a valid spelling, just not JSON
        assert problems == [] and parsed["scores"].to_list() == [[0.9, 0.4], [0.9, 0.4]]
    else:
        assert [(p.location, p.column, p.value) for p in problems] == [("row 2", "s", bad)]
        assert "is not a list of finite numbers" in problems[0].message


def test_json_number_lists_of_no_column_are_none_needed():
    assert _json_number_lists(pl.DataFrame({"a": [1]}), []) == {}


def _increases_by_the_rule(lists: list) -> bool:
    frame = pl.DataFrame({"scores": lists}, schema={"scores": pl.List(pl.Float64)})
    return bool(frame.select(pl.col("scores").list.eval(pl.element().diff() > 0).list.any().fill_null(False).any()).item())


scores_or_odd = st.one_of(finite, st.sampled_from([math.nan, math.inf, -math.inf, None]))


@settings(max_examples=30)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(finite.map(lambda x: round(x, 1) % 5), scores_or_odd), max_size=5)),
                min_size=1, max_size=8))
def test_the_increase_screen_never_misses_a_row_the_rule_finds(lists):
    series = pl.Series("scores", lists, dtype=pl.List(pl.Float64))
    if _increases_by_the_rule(lists):
        assert _may_increase(series)
    finite_only = all(x is not None and math.isfinite(x) for one in lists if one for x in one)
    if finite_only:  # exact on finite numbers: a list boundary is never an increase
        assert _may_increase(series) == _increases_by_the_rule(lists)


def test_the_increase_screen_ignores_the_step_between_two_lists():
    assert not _may_increase(pl.Series([[0.2, 0.1], [], None, [0.9, 0.5], [0.7]], dtype=pl.List(pl.Float64)))
    assert _may_increase(pl.Series([[0.2, 0.1], [0.5, 0.6]], dtype=pl.List(pl.Float64)))
    assert not _may_increase(pl.Series([[0.2]], dtype=pl.List(pl.Float64)))


def test_stretches_of_one_row_count_every_hash_and_still_find_a_repeated_key():
    # (post, criterion) changes on every row: no stretch to sort within.
    frame = pl.DataFrame({"post_id": ["p1", "p1", "p2", "p1"], "criterion_id": ["A", "B", "A", "A"],
                          "config": ["x", "x", "x", "x"]})
    assert _stretch_length(frame, ["post_id", "criterion_id"]) is None
    assert not _keys_distinct(frame, ["post_id", "criterion_id", "config"])
    assert _keys_distinct(frame.head(3), ["post_id", "criterion_id", "config"])
    # Stretches of two rows per (post, criterion) are still sorted one by one.
    paired = pl.DataFrame({"post_id": ["p1", "p1", "p2", "p2"], "criterion_id": ["A", "A", "A", "A"],
                           "config": ["x", "y", "x", "x"]})
    assert _stretch_length(paired, ["post_id", "criterion_id"]) == 2
    assert not _keys_distinct(paired, ["post_id", "criterion_id", "config"])


@settings(max_examples=15)
@given(st.lists(number_lists, min_size=1, max_size=8), st.sampled_from([None, "", "[]"]))
def test_compact_number_lists_equal_the_cell_by_cell_parse(lists, empty):
    frame = pl.DataFrame({"scores": [_spelled(numbers, "compact") for numbers in lists] + [empty]}, schema={"scores": pl.String})
    quick = _json_number_lists(frame, ["scores"])
    general, problems = _cell_by_cell(frame)
    assert quick is not None and problems == []
    assert quick["scores"].to_list() == general.to_list() == [*lists, []]


def _scored_frame(**changes) -> pl.DataFrame:
    """Two queries of one config, with scores and an extracted set; ``changes`` replace columns."""
    columns = {
        "post_id": ["p1", "p1"], "criterion_id": ["A.1", "A.2"], "fold": [0, 0],
        "has_evidence_gold": [1, 0], "p_has_evidence": [0.8, 0.1],
        "gold_sent_uids": ['["s2"]', "[]"],
        "ranked_sent_uids": ['["s1","s2","s3"]', '["s3","s1"]'],
        "ranked_scores": ["[0.9,0.5,0.1]", "[0.7,0.2]"],
        "extracted_sent_uids": ['["s1"]', '["s3"]'],
    }
    return pl.DataFrame(columns | changes)


def _problems(frame: pl.DataFrame) -> list[tuple]:
    with pytest.raises(InputError) as raised:
        read_per_query(frame)
    return [(p.location, p.column, p.value, p.message) for p in raised.value.problems]


def test_rules_the_screens_pass_still_word_each_failing_row():
    assert _problems(_scored_frame(ranked_scores=["[0.9,0.5,0.1]", "[0.7]"])) == [
        ("row 2", "ranked_scores", [0.7],
         "needs one score per ranked sentence (has 1 items, `ranked_sent_uids` has 2)")]
    (where, column, value, message), = _problems(_scored_frame(ranked_scores=["[0.9,0.5,0.1]", "[0.2,0.7]"]))
    assert (where, column, value) == ("row 2", "ranked_scores", [0.2, 0.7]) and message.startswith("scores must be non-increasing")
    (where, column, value, message), = _problems(_scored_frame(extracted_sent_uids=['["s1","s9"]', '["s3"]']))
    assert (where, column, value) == ("row 1", "extracted_sent_uids", ["s9"]) and "not among the query's candidates" in message


def test_a_clean_scored_frame_reads_with_every_rule_screened():
    tables = read_per_query(_scored_frame())
    assert tables.queries.get_column("n_extracted").to_list() == [1, 1]


# --- the plain id lists and the checks beside the split (issue 22) -----------------------------

plain_ids = st.lists(st.text(st.characters(blacklist_characters='"\\,', blacklist_categories=("Cc", "Cs")), max_size=5), max_size=6)


@settings(max_examples=25)
@given(st.lists(plain_ids, min_size=1, max_size=6))
def test_plain_id_lists_split_as_json_decodes_them(lists):
    from evalframe.io.per_query import _PLAIN_JSON_ARRAY, _plain_items

    cells = [json.dumps(ids, separators=(",", ":"), ensure_ascii=False) for ids in lists]  # ["a","b"], [], [""], ["é"]
    frame = pl.DataFrame({"ids": cells})
    assert frame.select(pl.col("ids").str.contains(_PLAIN_JSON_ARRAY).all()).item()
    assert frame.select(_plain_items(pl.col("ids"))).to_series().to_list() == [json.loads(cell) for cell in cells]


def test_side_by_side_raises_as_one_after_the_other_would():
    # The reader's two passes run side by side through _threads.in_order: its errors come as if in sequence.
    from evalframe._threads import in_order

    def fails(message):
        def run():
            raise ValueError(message)
        return run

    def side_by_side(first, second):
        return tuple(in_order([first, second]))

    assert side_by_side(lambda: 1, lambda: 2) == (1, 2)
    with pytest.raises(ValueError, match="first"):
        side_by_side(fails("first"), fails("second"))  # both fail: the first one's error, as in sequence
    with pytest.raises(ValueError, match="second"):
        side_by_side(lambda: 1, fails("second"))


PER_QUERY_HEADER = "post_id,criterion_id,has_evidence_gold,p_has_evidence,gold_sent_uids,ranked_sent_uids,config\n"


@pytest.mark.parametrize(("rows", "expected"), [
    # a sentence listed twice in a ranking (line 3)
    (['p1,A.1,1,0.9,"[""s1""]","[""s1"",""s2""]",a', 'p1,A.2,0,0.2,[],"[""s2"",""s2""]",a'],
     "line 3, column `ranked_sent_uids`: lists the same sentence id more than once"),
    # the same query with another gold list in config b (line 3)
    (['p1,A.1,1,0.9,"[""s1""]","[""s1"",""s2""]",a', 'p1,A.1,1,0.8,"[""s2""]","[""s1"",""s2""]",b'],
     "line 3, column `gold_sent_uids`: query ('p1', 'A.1') has a different gold list than at line 2"),
    # both: the repeated id is the error (the checks keep their order while the split runs beside them)
    (['p1,A.1,1,0.9,"[""s1""]","[""s1"",""s1""]",a', 'p1,A.1,1,0.8,"[""s2""]","[""s1"",""s2""]",b'],
     "line 2, column `ranked_sent_uids`: lists the same sentence id more than once"),
])
def test_the_checks_beside_the_split_still_stop_the_read(tmp_path, rows, expected):
    path = tmp_path / "per_query.csv"
    path.write_text(PER_QUERY_HEADER + "\n".join(rows) + "\n")
    with pytest.raises(InputError) as raised:
        read_per_query(path)
    assert expected in str(raised.value)


# Number tokens: the pattern's own (which a cast reads), and others a cast may or may not read
# (signs, exponents, bare dots, inf/nan, other digits).
_numbers = ["0.97", "1", "-0", "00.1", "1.", ".5", "-.5", "1e5", "1E-5", "1e-400"]
_others = ["1e+5", "+1", "+.5", "inf", "-inf", "nan", "Infinity", "1e400", ".", "-", "1e", "e5", "", "0x1", "1_0",
           "\u0661", "1.5e+", " 1", "1\t"]
_odd_cells = ["", "[]", "[ ]", "[\u00a00.5]", "[0.5,\u20030.25]", "[0.5]]", "[[0.5]]", "0.5;0.25", "[0.5", "0.5]"]


def _same_as_the_checked_path(cells: list) -> None:
    # The look without the pattern (no `+`, no whitespace: split, cast, all finite) takes a column
    # exactly when the checked path does, with the same numbers bit for bit; and what it takes,
    # the cell-by-cell parse reads the same, with no problem.
    from evalframe.io.per_query import _checked_number_lists

    frame = pl.DataFrame({"scores": cells}, schema={"scores": pl.String})
    quick, checked = _json_number_lists(frame, ["scores"]), _checked_number_lists(frame, ["scores"])
    assert (quick is None) == (checked is None), cells
    general, problems = _cell_by_cell(frame)
    as_bits = lambda series: series.list.explode(empty_as_null=False, keep_nulls=False).to_numpy().view("u8").tolist()
    if quick is not None:
        assert problems == []
        assert as_bits(quick["scores"]) == as_bits(checked["scores"]) == as_bits(general)
        assert quick["scores"].list.len().to_list() == general.list.len().to_list()


@pytest.mark.parametrize("odd", [*_others, *(f"]{cell}" for cell in _odd_cells)])
def test_json_number_lists_without_the_pattern_refuse_what_the_checked_path_refuses(odd):
    # One odd token (or, after "]", one odd cell) in a column of compact arrays.
    cells = ["[0.5,0.25]", odd[1:]] if odd.startswith("]") else ["[0.5,0.25]", f"[0.75,{odd}]", None]
    _same_as_the_checked_path(cells)


@settings(max_examples=30)
@given(st.lists(st.one_of(st.none(), st.sampled_from(_odd_cells),
                          st.lists(st.sampled_from(_numbers * 4 + _others), min_size=1, max_size=3)
                          .map(lambda tokens: "[" + ",".join(tokens) + "]")), min_size=1, max_size=4))
def test_json_number_lists_without_the_pattern_equal_the_checked_path(cells):
    _same_as_the_checked_path(cells)
