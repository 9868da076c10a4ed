"""``read_per_query``: per_query.csv → queries / ranking / judgments, and its declared errors.

The contract is ``schemas/per_query.yaml``: list columns hold JSON arrays or ``a;b;c``
text; (post_id, criterion_id, config) is the key; a post sits in one fold; a query with
evidence has gold sentences. Every broken rule is an :class:`evalframe.InputError` naming the
file, the line, the column and the value.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from pipeline_reference import BAD_FILES, GOOD_PER_QUERY_LINES, PER_QUERY_HEADER, BadFile

import evalframe as ef
from evalframe.io.per_query import read_per_query


@pytest.fixture
def good_csv(tmp_path):
    path = tmp_path / "per_query.csv"
    path.write_text("\n".join([PER_QUERY_HEADER, *GOOD_PER_QUERY_LINES]) + "\n")
    return path


def _two_config_frame() -> pl.DataFrame:
    """Two configs over the same two queries; the gold lists agree, the rankings differ."""
    return pl.DataFrame({
        "post_id": ["p1", "p1", "p1", "p1"],
        "criterion_id": ["A.1", "A.2", "A.1", "A.2"],
        "fold": [3, 3, 3, 3],
        "has_evidence_gold": [1, 0, 1, 0],
        "p_has_evidence": [0.8, 0.1, 0.4, 0.3],
        "gold_sent_uids": ['["p1_s2", "p1_s3"]', "[]", "p1_s3; p1_s2", ""],
        "ranked_sent_uids": ['["p1_s3","p1_s1","p1_s2"]', "p1_s1;p1_s2", "p1_s2;p1_s1;p1_s3", '["p1_s2"]'],
        "selected_k": [2, 1, 3, 1],
        "state": ["POS", "NEG", "UNCERTAIN", "UNCERTAIN"],
        "config": ["full", "full", "base", "base"],
    })


# --- reading ------------------------------------------------------------------------------------


def test_splits_into_queries_ranking_and_judgments():
    tables = read_per_query(_two_config_frame())
    assert tables.n_rows == 4
    queries = tables.queries
    assert queries.select("system", "query_id", "post_id", "criterion_id", "fold", "label", "prob", "n_gold",
                          "n_ranked", "selected_k", "state").rows() == [
        ("base", "p1|A.1", "p1", "A.1", 3, 1, 0.4, 2, 3, 3, "UNCERTAIN"),
        ("base", "p1|A.2", "p1", "A.2", 3, 0, 0.3, 0, 1, 1, "UNCERTAIN"),
        ("full", "p1|A.1", "p1", "A.1", 3, 1, 0.8, 2, 3, 2, "POS"),
        ("full", "p1|A.2", "p1", "A.2", 3, 0, 0.1, 0, 2, 1, "NEG"),
    ]
    ranking = tables.ranking.sort("system", "query_id", "rank")
    assert ranking.select("system", "query_id", "doc_id", "rank").rows() == [
        ("base", "p1|A.1", "p1_s2", 1), ("base", "p1|A.1", "p1_s1", 2), ("base", "p1|A.1", "p1_s3", 3),
        ("base", "p1|A.2", "p1_s2", 1),
        ("full", "p1|A.1", "p1_s3", 1), ("full", "p1|A.1", "p1_s1", 2), ("full", "p1|A.1", "p1_s2", 3),
        ("full", "p1|A.2", "p1_s1", 1), ("full", "p1|A.2", "p1_s2", 2),
    ]
    # Judgments belong to the query, not the config: each gold sentence once.
    assert sorted(tables.judgments.select("query_id", "doc_id", "relevance").rows()) == [
        ("p1|A.1", "p1_s2", 1), ("p1|A.1", "p1_s3", 1),
    ]


def test_csv_file_reads_like_the_same_rows_in_memory(good_csv):
    from_file = read_per_query(good_csv)
    from_frame = read_per_query(pl.read_csv(good_csv, infer_schema=False))
    assert from_file.queries.equals(from_frame.queries)
    assert from_file.ranking.equals(from_frame.ranking)
    assert from_file.judgments.equals(from_frame.judgments)
    assert from_file.queries.get_column("system").unique().to_list() == ["s1"]
    # The empty gold cell of line 4 is an empty list; `b2` alone is a one-item list.
    assert dict(from_file.queries.select("query_id", "n_gold").iter_rows()) == {"a|X": 1, "a|Y": 0, "b|X": 0, "b|Y": 1}


def test_parquet_with_native_list_columns_reads_like_csv(good_csv, tmp_path):
    native = pl.DataFrame({
        "post_id": ["a", "a", "b", "b"],
        "criterion_id": ["X", "Y", "X", "Y"],
        "fold": [0, 0, 1, 1],
        "has_evidence_gold": [1, 0, 0, 1],
        "p_has_evidence": [0.9, 0.2, 0.6, 0.3],
        "gold_sent_uids": [["a1"], [], [], ["b2"]],
        "ranked_sent_uids": [["a2", "a1"], ["a1", "a2"], ["b1", "b2"], ["b2", "b1"]],
        "config": ["s1"] * 4,
    })
    path = tmp_path / "per_query.parquet"
    native.write_parquet(path)
    from_parquet, from_csv = read_per_query(path), read_per_query(good_csv)
    assert from_parquet.queries.equals(from_csv.queries)
    assert from_parquet.ranking.equals(from_csv.ranking)
    assert from_parquet.judgments.equals(from_csv.judgments)


def test_list_cells_json_semicolons_integers_and_spaces():
    frame = pl.DataFrame({
        "post_id": ["p", "p", "p"],
        "criterion_id": ["c1", "c2", "c3"],
        "fold": [0, 0, 0],
        "has_evidence_gold": [1, 1, 0],
        "p_has_evidence": [0.5, 0.5, 0.5],
        "gold_sent_uids": ["[7, 12]", " s1 ; s2 ", " [] "],
        "ranked_sent_uids": ['[12, "x", 7]', "s2;;s1;", ""],
    })
    tables = read_per_query(frame)
    gold = tables.judgments.group_by("query_id").agg(pl.col("doc_id").sort()).sort("query_id")
    assert gold.rows() == [("p|c1", ["12", "7"]), ("p|c2", ["s1", "s2"])]
    ranked = tables.ranking.sort("query_id", "rank").group_by("query_id", maintain_order=True).agg("doc_id")
    # Integers in JSON arrays are ids as text; empty `;` parts are dropped; an empty cell is [].
    assert ranked.rows() == [("p|c1", ["12", "x", "7"]), ("p|c2", ["s2", "s1"])]
    assert tables.queries.get_column("system").unique().to_list() == ["default"]  # no config column
    assert tables.queries.get_column("n_ranked").to_list() == [3, 2, 0]


def test_json_arrays_with_inner_whitespace_are_lists():
    # `[ ]` and `[ "a" ]` are valid JSON arrays (json.dumps(..., indent=1) writes such spacing).
    frame = pl.DataFrame({
        "post_id": ["p", "p"], "criterion_id": ["c1", "c2"], "fold": [0, 0],
        "has_evidence_gold": [0, 1], "p_has_evidence": [0.5, 0.5],
        "gold_sent_uids": ["[ ]", '[ "s1" ]'], "ranked_sent_uids": ['[\n "s1",\n "s2"\n]', "[ ]"],
    })
    tables = read_per_query(frame)
    assert tables.queries.get_column("n_gold").to_list() == [0, 1]
    assert tables.queries.get_column("n_ranked").to_list() == [2, 0]


def test_column_mapping_renames_and_errors_use_the_users_names(tmp_path):
    renamed = PER_QUERY_HEADER.replace("p_has_evidence", "prob_x").replace("post_id", "pid")
    good = tmp_path / "renamed.csv"
    good.write_text("\n".join([renamed, *GOOD_PER_QUERY_LINES]) + "\n")
    mapping = {"p_has_evidence": "prob_x", "post_id": "pid"}
    tables = read_per_query(good, columns=mapping)
    assert tables.queries.get_column("prob").to_list() == [0.9, 0.2, 0.6, 0.3]
    assert tables.queries.get_column("post_id").to_list() == ["a", "a", "b", "b"]

    bad = tmp_path / "renamed_bad.csv"
    bad.write_text("\n".join([renamed, GOOD_PER_QUERY_LINES[0], GOOD_PER_QUERY_LINES[1].replace("0.2", "-0.5")]) + "\n")
    with pytest.raises(ef.InputError) as caught:
        read_per_query(bad, columns=mapping)
    message = str(caught.value)
    assert "line 3" in message and "`prob_x`" in message and "-0.5" in message
    assert "p_has_evidence" not in message

    with pytest.raises(ef.InputError, match="prob_missing"):
        read_per_query(good, columns={"p_has_evidence": "prob_missing"})


# --- the declared error cases ----------------------------------------------------------------


def assert_names_the_problem(error: ef.InputError, bad: BadFile, path) -> None:
    message = str(error)
    assert message.startswith(f"{path}: "), message
    assert "Traceback" not in message
    if bad.location is not None:
        assert bad.location in message, message
    if bad.column is not None:
        assert bad.column in message, message
    if bad.value is not None:
        assert bad.value in message, message
    for text in bad.also:
        assert text in message, message


@pytest.mark.parametrize("bad", BAD_FILES, ids=lambda bad: bad.name)
def test_declared_error_cases_name_file_line_column_and_value(bad, tmp_path):
    path = bad.write(tmp_path)
    with pytest.raises(ef.InputError) as caught:
        read_per_query(path)
    assert_names_the_problem(caught.value, bad, path)
    assert caught.value.source == str(path)
    assert len(caught.value.problems) == 1
    problem = caught.value.problems[0]
    assert problem.location == bad.location


@pytest.mark.parametrize("bad", [b for b in BAD_FILES if b.location is not None], ids=lambda bad: bad.name)
def test_error_cases_in_memory_name_the_row(bad, tmp_path):
    frame = pl.read_csv(bad.write(tmp_path), infer_schema=False)
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame)
    line = int(bad.location.removeprefix("line "))
    assert f"row {line - 1}" in str(caught.value)  # data row i sits on line i + 1 of a CSV


def test_probability_nan_and_infinity_are_rejected():
    frame = pl.DataFrame({
        "post_id": ["a", "b", "c"], "criterion_id": ["X", "X", "X"], "fold": [0, 0, 0],
        "has_evidence_gold": [0, 0, 0], "p_has_evidence": [math.nan, math.inf, 0.5],
        "gold_sent_uids": ["", "", ""], "ranked_sent_uids": ["", "", ""],
    })
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame)
    message = str(caught.value)
    assert "row 1" in message and "row 2" in message and "row 3" not in message
    assert "nan" in message and "inf" in message


def test_every_problem_is_reported_at_once(tmp_path):
    lines = [
        PER_QUERY_HEADER,
        GOOD_PER_QUERY_LINES[0],
        GOOD_PER_QUERY_LINES[1].replace("0.2", "1.7"),
        GOOD_PER_QUERY_LINES[2].replace("b,X,1,0", "b,X,1,3"),
        GOOD_PER_QUERY_LINES[3],
    ]
    path = tmp_path / "two_problems.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ef.InputError) as caught:
        read_per_query(path)
    message = str(caught.value)
    assert "2 problems" in message
    assert "line 3, column `p_has_evidence`" in message and "1.7" in message
    assert "line 4, column `has_evidence_gold`" in message and "(value: 3)" in message


def test_gold_list_must_agree_across_configs():
    frame = _two_config_frame().with_columns(
        gold_sent_uids=pl.Series(['["p1_s2", "p1_s3"]', "[]", "p1_s3", ""])  # base lost one gold sentence
    )
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame)
    message = str(caught.value)
    assert "row 3" in message and "gold_sent_uids" in message and "'p1'" in message and "'A.1'" in message


@pytest.mark.parametrize(
    ("base_gold", "row"),
    [
        (["p1_s3"], "row 3"),              # a sentence lost
        (["p1_s3", "p1_s9"], "row 3"),     # same count, another sentence
        (["p1_s2", "p1_s3", "p1_s9"], "row 3"),  # one more sentence
    ],
)
def test_gold_lists_compared_as_sets_across_configs(base_gold, row):
    frame = _two_config_frame().with_columns(
        gold_sent_uids=pl.Series(['["p1_s2", "p1_s3"]', "[]", json_list(base_gold), ""])
    )
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame)
    assert row in str(caught.value) and "'A.1'" in str(caught.value)


def test_gold_empty_in_one_config_only_is_an_error():
    frame = _two_config_frame().with_columns(
        gold_sent_uids=pl.Series(['["p1_s2", "p1_s3"]', '["p1_s1"]', '["p1_s3", "p1_s2"]', ""])
    )
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame)
    assert "'A.2'" in str(caught.value)


def test_gold_in_another_order_agrees_across_configs():
    frame = _two_config_frame().with_columns(
        gold_sent_uids=pl.Series(['["p1_s2", "p1_s3"]', "[]", '["p1_s3","p1_s2"]', ""])
    )
    assert read_per_query(frame).judgments.height == 2


def json_list(items: list[str]) -> str:
    import json

    return json.dumps(items)


def test_plain_json_cells_split_exactly_as_json_decodes():
    """Cells in the plain spelling are split on `","`; they must give what a JSON decoder gives."""
    import json

    cells = ['[]', '[""]', '["a"]', '["a b","c"]', '[" a ","","  "]', '["é","日本","a;b"]', '["[x]","y]"]', '  ["s1","s2"]  ']
    frame = pl.DataFrame({
        "post_id": [f"p{i}" for i in range(len(cells))], "criterion_id": ["c"] * len(cells), "fold": [0] * len(cells),
        "has_evidence_gold": [0] * len(cells), "p_has_evidence": [0.5] * len(cells),
        "gold_sent_uids": ["[]"] * len(cells), "ranked_sent_uids": cells,
    })
    ranked = read_per_query(frame).ranking.group_by("query_id", maintain_order=True).agg(pl.col("doc_id"))
    got = dict(ranked.iter_rows())
    for i, cell in enumerate(cells):
        assert got.get(f"p{i}|c", []) == json.loads(cell), cell


def test_a_column_mixing_plain_and_other_spellings_decodes_every_cell():
    frame = pl.DataFrame({
        "post_id": ["p", "p", "p", "p"], "criterion_id": ["c1", "c2", "c3", "c4"], "fold": [0] * 4,
        "has_evidence_gold": [0] * 4, "p_has_evidence": [0.5] * 4, "gold_sent_uids": ["[]"] * 4,
        "ranked_sent_uids": ['["a","b"]', '["a\\"q", "b,c"]', "x;y", '["\\u00e9"]'],
    })
    ranked = read_per_query(frame).ranking.group_by("query_id", maintain_order=True).agg(pl.col("doc_id"))
    assert dict(ranked.iter_rows()) == {"p|c1": ["a", "b"], "p|c2": ['a"q', "b,c"], "p|c3": ["x", "y"], "p|c4": ["é"]}


def test_ranking_of_a_subset_equals_those_rows_of_the_whole_ranking():
    tables = read_per_query(_two_config_frame())
    pairs = pl.DataFrame({"system": ["full", "base"], "query_id": ["p1|A.2", "p1|A.1"]})
    whole = tables.ranking.join(pairs, on=["system", "query_id"], how="semi")
    assert tables.ranking_of(pairs).equals(whole)
    assert tables.n_ranking_rows == tables.ranking.height == 9


def test_the_cast_made_beside_the_list_parsing_is_conforms_own_or_nothing():
    from evalframe.data.contracts import conform, load_contract
    from evalframe.io.per_query import _cast_beside

    contract = load_contract("per_query")
    frame = _two_config_frame().with_columns(pl.col("fold").cast(pl.String), pl.col("p_has_evidence").cast(pl.String))
    cast = _cast_beside(frame, contract, decimal_comma=False)
    assert {name: series.dtype for name, series in cast.items()} == {
        "post_id": pl.String, "criterion_id": pl.String, "fold": pl.Int64, "has_evidence_gold": pl.Int64,
        "p_has_evidence": pl.Float64, "selected_k": pl.Int64, "state": pl.String, "config": pl.String}
    lists = frame.select("gold_sent_uids", "ranked_sent_uids").with_columns(pl.all().str.split(";"))
    conformed = conform(frame.with_columns(lists), contract, source="x")
    assert all(series.equals(conformed.get_column(name)) for name, series in cast.items())
    # A value that does not convert: nothing cast, conform words it.
    assert _cast_beside(frame.with_columns(fold=pl.lit("x")), contract, decimal_comma=False) == {}


def test_a_list_problem_still_comes_before_a_cast_problem_and_a_cast_problem_is_worded_as_before():
    frame = _two_config_frame().with_columns(pl.col("fold").cast(pl.String))
    both = frame.with_columns(fold=pl.Series(["3", "x", "3", "3"]), ranked_sent_uids=pl.Series(["[", "a", "b", "c"]))
    with pytest.raises(ef.InputError) as caught:
        read_per_query(both)
    assert [(p.location, p.column, p.value) for p in caught.value.problems] == [("row 1", "ranked_sent_uids", "[")]
    with pytest.raises(ef.InputError) as caught:
        read_per_query(frame.with_columns(fold=pl.Series(["3", "x", "3", "3"])))
    assert [(p.location, p.column, p.value, p.message) for p in caught.value.problems] == [
        ("row 2", "fold", "x", "is not an integer")]
