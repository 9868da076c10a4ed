"""Notebook conveniences on ef.Evaluation (issue 9, part 5).

wide() for every result (per unit and summary), by_system() with a baseline, select() by slice
values (fold as text or number; our errors, never Polars'), natural order of text keys in the
summary and the rendered tables, read_run of several files, metric aliases found by select().
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe._sorting import natural_key, natural_sorted, sort_naturally
from evalframe.report.markdown import render_markdown

CRITERIA = [f"A.{i}" for i in (10, 2, 1, 3)]


def small_tables() -> ef.Tables:
    """Two systems (``s10``, ``s2``), four criteria A.1, A.2, A.3, A.10, two folds."""
    rows = []
    for system, shift in (("s10", 0.0), ("s2", 0.1)):
        for post in range(4):
            for c, criterion in enumerate(CRITERIA):
                label = (post + c) % 2
                rows.append({
                    "post_id": f"p{post}", "criterion_id": criterion, "fold": post % 2, "has_evidence_gold": label,
                    "p_has_evidence": min(1.0, 0.2 + 0.5 * label + shift), "gold_sent_uids": ["g"] if label else [],
                    "ranked_sent_uids": ["x", "g"] if (post + c) % 3 else ["g", "x"], "config": system,
                })
    from evalframe.io.per_query import read_per_query

    return read_per_query(pl.DataFrame(rows))


@pytest.fixture(scope="module")
def ev() -> ef.Evaluation:
    return ef.evaluate(
        small_tables(), metrics=["auroc", "P@1", "mrr", "tp"], subsets={"has_evidence": "label = 1"},
        slices={"overall": [], "fold": ["fold"], "criterion": ["criterion_id"]},
    )


def test_wide_works_when_a_metric_is_on_several_subsets(ev):
    wide = ev.wide()
    assert {"mrr [all_queries]", "mrr [has_evidence]", "precision@1 [has_evidence]"} <= set(wide.columns)
    assert wide.height == ev.queries.height
    long = ev.per_query.filter((pl.col("metric") == "mrr") & (pl.col("subset") == "has_evidence"))
    joined = long.join(wide, on=["system", "query_id"])
    assert joined.select((pl.col("value").eq_missing(pl.col("mrr [has_evidence]"))).all()).item()


def test_wide_of_the_summary_has_one_column_per_metric_set_metrics_too(ev):
    wide = ev.wide(summary=True)
    assert {"grouping", "system", "fold", "criterion_id"} <= set(wide.columns)
    assert "auroc [all queries]" in wide.columns
    overall = wide.filter((pl.col("grouping") == "overall") & (pl.col("system") == "s2"))
    expected = ev.select(grouping="overall", system="s2", metric="auroc", subset="all queries").get_column("value").item()
    assert overall.get_column("auroc [all queries]").item() == expected
    stds = ev.wide(summary=True, stat="std")
    assert stds.height == wide.height
    with pytest.raises(ef.ConfigError, match="unknown summary column"):
        ev.wide(summary=True, stat="mean")


def test_by_system_side_by_side_with_differences_to_the_baseline(ev):
    side = ev.by_system(baseline="s2")
    assert side.columns == ["metric", "subset", "s2", "s10", "s10 - s2"]
    overall = ev.select(grouping="overall")
    for metric, subset, base, other, diff in side.iter_rows():
        values = dict(overall.filter((pl.col("metric") == metric) & (pl.col("subset") == subset)).select("system", "value").iter_rows())
        assert (base, other) == (values["s2"], values["s10"])
        assert diff == (None if base is None or other is None else pytest.approx(other - base))
    assert ev.by_system().columns == ["metric", "subset", "s2", "s10"]  # natural order of systems
    by_fold = ev.by_system(grouping="fold")
    assert by_fold.columns[:1] == ["fold"] and by_fold.get_column("fold").unique().sort().to_list() == [0, 1]
    with pytest.raises(ef.ConfigError, match="baseline `bm25` is not a system"):
        ev.by_system(baseline="bm25")


def test_select_by_slice_values_and_by_the_slice_column_name(ev):
    rows = ev.select(criterion_id="A.3", metric="mrr")
    assert set(rows.get_column("grouping")) == {"criterion"} and set(rows.get_column("criterion_id")) == {"A.3"}
    assert rows.height == 4  # 2 systems x 2 subsets
    assert ev.select(grouping="criterion_id").equals(ev.select(grouping="criterion"))
    assert ev.select(grouping="criterion_id").height > 0


@pytest.mark.parametrize("fold", [1, "1", " 1", 1.0])
def test_select_fold_as_text_or_number(ev, fold):
    rows = ev.select(fold=fold)
    assert rows.height > 0 and set(rows.get_column("fold")) == {1}
    assert rows.equals(ev.select(fold=1))


@pytest.mark.parametrize(
    ("filters", "fragment"),
    [({"fold": "one"}, "`fold` holds integers; 'one' is not one"), ({"fold": 7}, "no fold 7"),
     ({"criterion_id": "A.11"}, "'A.1', 'A.2', 'A.3', 'A.10'"), ({"post": "p1"}, "`post` is not a slice column"),
     ({"metric": "ndgc@10"}, "no metric"), ({"grouping": "criteria"}, "`criterion` (or `criterion_id`)")],
)
def test_select_raises_our_error_never_a_polars_one(ev, filters, fragment):
    with pytest.raises(ef.ConfigError) as caught:
        ev.select(**filters)
    assert fragment in str(caught.value)


def test_an_alias_is_found_under_its_canonical_name(ev):
    assert set(ev.summary.get_column("metric")) >= {"precision@1"}  # names are canonical
    assert ev.select(metric="P@1").equals(ev.select(metric="precision@1"))
    assert ef.resolve_metric("P@1").name == "precision@1"  # how to map a spelling to the reported name


def test_natural_order_in_summary_markdown_and_csv(ev, tmp_path):
    criteria = ev.select(grouping="criterion", system="s2", metric="tp", subset="all queries").get_column("criterion_id").to_list()
    assert criteria == ["A.1", "A.2", "A.3", "A.10"]
    systems = ev.select(grouping="overall", metric="tp", subset="all queries").get_column("system").to_list()
    assert systems == ["s2", "s10"]
    markdown = render_markdown(ev)
    assert markdown.index("## Overall — system `s2`") < markdown.index("## Overall — system `s10`")
    assert "| metric | criterion_id A.1 | criterion_id A.2 | criterion_id A.3 | criterion_id A.10 |" in markdown
    ev.write(tmp_path / "out")
    csv = pl.read_csv(tmp_path / "out" / "summary.csv", infer_schema=False)
    assert csv.filter(pl.col("grouping") == "criterion").get_column("criterion_id").unique(maintain_order=True).to_list() == ["A.1", "A.2", "A.3", "A.10"]


def test_natural_key_orders_numbers_inside_text():
    assert natural_sorted(["q10", "q9", "q1", "q01", None, "b"]) == ["b", "q01", "q1", "q9", "q10", None]
    assert natural_key("A.2") < natural_key("A.10")
    frame = pl.DataFrame({"k": ["A.10", "A.2", None, "A.1"], "v": [1, 2, 3, 4]})
    assert sort_naturally(frame, ["k"]).get_column("k").to_list() == ["A.1", "A.2", "A.10", None]


def write_run(path: Path, tag: str, lines: list[tuple[str, str, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} 1 {s} {tag}\n" for q, d, s in lines))
    return path


def test_read_run_of_several_files(tmp_path):
    a = write_run(tmp_path / "bm25.run", "bm25", [("q1", "d1", 2.0), ("q1", "d2", 1.0)])
    b = write_run(tmp_path / "dense.run", "dense", [("q1", "d2", 2.0), ("q1", "d1", 1.0)])
    run = ef.read_run([a, b])
    assert run.height == 4 and set(run.get_column("system")) == {"bm25", "dense"}
    qrels = ef.read_qrels(pl.DataFrame({"query_id": ["q1"], "doc_id": ["d2"], "relevance": [1]}))
    side = ef.evaluate(run, qrels, ["mrr"]).by_system(baseline="bm25")
    assert side.row(0) == ("mrr", "queries with at least one relevant item", 0.5, 1.0, 0.5)
    assert ef.evaluate([str(a), str(b)], qrels, ["mrr"]).summary.height == 2
    wide = ef.evaluate(run, qrels, ["mrr", "P@1"]).wide()  # one subset: plain metric names
    assert wide.columns == ["system", "query_id", "mrr", "precision@1"]
    assert wide.sort("system").get_column("mrr").to_list() == [0.5, 1.0]


def test_read_run_of_one_system_split_in_two_files(tmp_path):
    a = write_run(tmp_path / "part1.run", "bm25", [("q1", "d1", 2.0)])
    b = write_run(tmp_path / "part2.run", "bm25", [("q2", "d1", 2.0)])
    assert ef.read_run([a, b]).height == 2


def test_read_run_same_query_and_doc_in_two_files_is_an_error_naming_both(tmp_path):
    a = write_run(tmp_path / "a.run", "bm25", [("q1", "d1", 2.0)])
    b = write_run(tmp_path / "b.run", "bm25", [("q1", "d1", 1.0)])
    with pytest.raises(ef.InputError) as caught:
        ef.read_run([a, b])
    text = str(caught.value)
    assert f"system 'bm25', query 'q1', doc 'd1' is in {a} and {b}" in text
    assert "run tags" in text
