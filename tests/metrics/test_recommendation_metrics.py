"""Beyond-accuracy recommendation metrics against the chapter's RecommendationMetrics (§21.4.2)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.data.catalog import catalog
from evalframe.data.tables import Tables
from evalframe.errors import ConfigError, InputError
from evalframe.metrics.base import merge_states, with_unit_weights
from evalframe.metrics.recommendation import RECOMMENDED, Gini
from evalframe.metrics.registry import resolve


# --- the chapter's code, as written (the plain-Python reference) ----------------------------------


def chapter_hit_rate(recommendations, ground_truth, k):
    hits = sum(1 for recs, truth in zip(recommendations, ground_truth) if set(recs[:k]) & set(truth))
    return hits / len(recommendations)


def chapter_gini(counts):
    counts = np.array(sorted(counts))
    n = len(counts)
    index = np.arange(1, n + 1)
    return (2 * np.sum(index * counts) - (n + 1) * np.sum(counts)) / (n * np.sum(counts))


def chapter_report(recommendations, item_categories, item_popularity, k):
    all_recs = [item for rec in recommendations for item in rec[:k]]
    rec_counts = Counter(all_recs)
    return {
        "catalog_coverage": len(set(all_recs)) / len(item_popularity),
        "gini_coefficient": chapter_gini(list(rec_counts.values())),
        "category_coverage": len({item_categories.get(i, "unk") for i in set(all_recs)}) / len(set(item_categories.values())),
        "popularity_bias": np.mean([item_popularity.get(i, 0) for i in all_recs]) / np.mean(list(item_popularity.values())),
        "unique_items_recommended": len(set(all_recs)),
    }


def chapter_serendipity(recommendations, user_history, item_similarity, k):
    values = []
    for recs, history in zip(recommendations, user_history):
        per_rec = []
        for rec in recs[:k]:
            nearest = min(item_similarity.get((rec, h), item_similarity.get((h, rec), 0.5)) for h in history) if history else 1.0
            per_rec.append(1 - nearest)
        values.append(np.mean(per_rec) if per_rec else 0)
    return np.mean(values)


def tables_of(recommendations, ground_truth=None, items=None, history=None, similarity=None) -> Tables:
    users = [f"u{u}" for u in range(len(recommendations))]
    run = pl.DataFrame({"query_id": [u for u, r in zip(users, recommendations) for _ in r],
                        "doc_id": [i for r in recommendations for i in r],
                        "rank": [p + 1 for r in recommendations for p in range(len(r))]},
                       schema={"query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64})
    truth = ground_truth or [[] for _ in recommendations]
    qrels = pl.DataFrame({"query_id": [u for u, g in zip(users, truth) for _ in g], "doc_id": [i for g in truth for i in g]},
                         schema={"query_id": pl.String, "doc_id": pl.String}).with_columns(relevance=pl.lit(1, dtype=pl.Int64))
    queries = pl.DataFrame({"query_id": users})
    tables = Tables(queries=queries, judgments=qrels, ranking_rows=run.with_columns(system=pl.lit("default")), n_rows=run.height)
    history_table = None if history is None else pl.DataFrame(
        {"query_id": [u for u, h in zip(users, history) for _ in h], "item_id": [i for h in history for i in h]},
        schema={"query_id": pl.String, "item_id": pl.String})
    return replace(tables, catalog=catalog(items, history=history_table, similarity=similarity))


def values(ev) -> dict:
    return dict(ev.summary.select("metric", "value").iter_rows())


CHAPTER_RECS = [["item_1", "item_2", "item_3"], ["item_1", "item_4", "item_5"], ["item_1", "item_2", "item_6"]]
CHAPTER_TRUTH = [["item_2", "item_7"], ["item_4"], ["item_6", "item_8"]]
CHAPTER_ITEMS = pl.DataFrame({"item_id": [f"item_{i}" for i in range(1, 11)], "popularity": [100 - i * 10 for i in range(1, 11)],
                              "category": [f"cat_{i % 3}" for i in range(1, 11)]})


def test_the_chapters_example():
    tables = tables_of(CHAPTER_RECS, CHAPTER_TRUTH, CHAPTER_ITEMS)
    ev = ef.evaluate(tables, metrics=["hit_rate@3", "catalog_coverage@3", "gini@3", "category_coverage@3",
                                      "popularity_bias@3", "unique_items@3"])
    printed = {m: f"{v:.2f}" for m, v in values(ev).items()}
    assert printed == {"hit_rate@3": "1.00", "catalog_coverage@3": "0.60", "gini@3": "0.24", "category_coverage@3": "1.00",
                       "popularity_bias@3": "1.60", "unique_items@3": "6.00"}


@st.composite
def recommendation_sets(draw):
    n_items = draw(st.integers(2, 12))
    n_users = draw(st.integers(1, 8))
    recs = [[f"i{j}" for j in draw(st.lists(st.integers(0, n_items - 1), min_size=1, max_size=6))] for _ in range(n_users)]
    popularity = draw(st.lists(st.integers(1, 100), min_size=n_items, max_size=n_items))
    categories = draw(st.lists(st.integers(0, 3), min_size=n_items, max_size=n_items))
    truth = [[f"i{j}" for j in draw(st.lists(st.integers(0, n_items - 1), min_size=1, max_size=3, unique=True))] for _ in range(n_users)]
    k = draw(st.integers(1, 6))
    return recs, truth, popularity, categories, k


@settings(max_examples=60, deadline=None)
@given(recommendation_sets())
def test_random_sets_equal_the_chapters_code(case):
    recs, truth, popularity, categories, k = case
    items = pl.DataFrame({"item_id": [f"i{j}" for j in range(len(popularity))], "popularity": popularity,
                          "category": [f"c{c}" for c in categories]})
    # The chapter ranks a user's list as given; duplicates in one list are kept (Counter counts them).
    dedup = [list(dict.fromkeys(r)) for r in recs]
    ev = ef.evaluate(tables_of(dedup, truth, items), metrics=[f"{m}@{k}" for m in (
        "hit_rate", "catalog_coverage", "gini", "category_coverage", "popularity_bias", "unique_items")])
    got = values(ev)
    expected = chapter_report(dedup, dict(zip(items["item_id"], items["category"])), dict(zip(items["item_id"], popularity)), k)
    assert got[f"hit_rate@{k}"] == pytest.approx(chapter_hit_rate(dedup, truth, k))
    assert got[f"catalog_coverage@{k}"] == pytest.approx(expected["catalog_coverage"])
    assert got[f"gini@{k}"] == pytest.approx(expected["gini_coefficient"], abs=1e-12)
    assert got[f"category_coverage@{k}"] == pytest.approx(expected["category_coverage"])
    assert got[f"popularity_bias@{k}"] == pytest.approx(expected["popularity_bias"])
    assert got[f"unique_items@{k}"] == expected["unique_items_recommended"]


def test_gini_over_the_whole_catalog_and_novelty_by_hand():
    tables = tables_of(CHAPTER_RECS, CHAPTER_TRUTH, CHAPTER_ITEMS)
    got = values(ef.evaluate(tables, metrics=["gini@3(over=catalog)", "novelty@3"]))
    counts = Counter(i for r in CHAPTER_RECS for i in r)
    whole = [counts.get(f"item_{i}", 0) for i in range(1, 11)]
    assert got["gini@3(over=catalog)"] == pytest.approx(chapter_gini(whole))
    popularity = dict(zip(CHAPTER_ITEMS["item_id"], CHAPTER_ITEMS["popularity"]))
    total = sum(popularity.values())
    expected = np.mean([-np.log2(popularity[i] / total) for r in CHAPTER_RECS for i in r])
    assert got["novelty@3"] == pytest.approx(expected)
    with pytest.raises(ConfigError, match="over"):
        resolve("gini@3(over=everything)")


def test_without_a_catalog_coverage_is_skipped_with_a_note():
    tables = tables_of(CHAPTER_RECS, CHAPTER_TRUTH)
    ev = ef.evaluate(tables, metrics=["catalog_coverage@3", "popularity_bias@3", "gini@3", "unique_items@3"])
    rows = {m: (v, note) for m, v, note in ev.summary.select("metric", "value", "note").iter_rows()}
    assert rows["catalog_coverage@3"][0] is None and "no item catalog" in rows["catalog_coverage@3"][1]
    assert rows["popularity_bias@3"][0] is None
    assert rows["gini@3"][0] == pytest.approx(chapter_gini(list(Counter(i for r in CHAPTER_RECS for i in r).values())))
    assert rows["unique_items@3"][0] == 6


def test_states_merge_and_slices_and_bootstrap():
    metric = Gini(k=2)
    rows = pl.LazyFrame({"part": ["a", "a", "b"], RECOMMENDED: [["x", "y"], ["x", "z"], ["x", "x"]]})
    whole = metric.compute(rows, by=[]).collect()
    parts = [metric.state(with_unit_weights(rows.filter(pl.col("part") == p)), []) for p in ("a", "b")]
    merged = metric.finalize(merge_states(parts, [], metric.state_keys), []).collect()
    assert merged.get_column("value").item() == pytest.approx(whole.get_column("value").item())
    assert whole.get_column("value").item() == pytest.approx(chapter_gini([4, 1, 1]))
    # values_under equals the normal path under each weight column (here integer weights).
    frame = rows.collect()
    weights = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 0.0], [1.0, 3.0, 1.0]])
    under = metric.values_under(frame, weights)
    for column in range(3):
        weighted = rows.with_columns(pl.Series("_weight", weights[:, column]))
        assert under[column] == pytest.approx(metric.compute(weighted, by=[]).collect().get_column("value").item())
    tables = tables_of(CHAPTER_RECS * 4, None, CHAPTER_ITEMS)
    ev = ef.evaluate(tables, metrics=["catalog_coverage@3", "gini@3"], bootstrap=ef.Bootstrap(resamples=30))
    for low, value, high in ev.summary.select("ci_low", "value", "ci_high").iter_rows():
        assert low <= value + 1e-12 and value <= high + 1e-12


def test_serendipity_equals_the_chapter_with_a_similarity_table_and_embeddings():
    recs = [["a", "b", "c"], ["b", "d"], ["c"], []]
    history = [["a", "x"], ["c"], [], ["a"]]
    similarity = {("a", "a"): 1.0, ("b", "a"): 0.2, ("x", "c"): 0.9, ("d", "c"): 0.4, ("a", "x"): 0.3}
    table = pl.DataFrame({"item_a": [a for a, _ in similarity], "item_b": [b for _, b in similarity], "similarity": list(similarity.values())})
    users = [f"u{u}" for u in range(len(recs))]
    tables = tables_of(recs, None, None, history, table)
    ev = ef.evaluate(tables, metrics=["serendipity@2"])
    assert ev.summary.get_column("value").item() == pytest.approx(chapter_serendipity(recs, history, similarity, 2))
    assert users  # user ids u0..u3
    # Embeddings: the cosine of the two items' vectors, 0.5 for an item without one.
    rng = np.random.default_rng(0)
    vectors = {i: rng.normal(size=4) for i in "abcdx"}
    cosine = {(p, q): float(vectors[p] @ vectors[q] / np.linalg.norm(vectors[p]) / np.linalg.norm(vectors[q]))
              for p in vectors for q in vectors}
    items = pl.DataFrame({"item_id": list(vectors), "embedding": [v.tolist() for v in vectors.values()]})
    ev = ef.evaluate(tables_of(recs, None, items, history), metrics=["serendipity@3"])
    assert ev.summary.get_column("value").item() == pytest.approx(chapter_serendipity(recs, history, cosine, 3))
    missing = ef.evaluate(tables_of(recs), metrics=["serendipity@3"]).summary
    assert missing.get_column("value").item() is None


def test_bad_catalogs_name_the_row():
    with pytest.raises(InputError, match="row 2.*popularity"):
        catalog(pl.DataFrame({"item_id": ["a", "b"], "popularity": ["3", "-1"]}))
    with pytest.raises(InputError, match="listed twice"):
        catalog(pl.DataFrame({"item_id": ["a", "a"]}))
    with pytest.raises(ConfigError, match="cutoff"):
        resolve("catalog_coverage@0")


@pytest.mark.parametrize("order", ["by user and rank", "users interleaved", "ranks reversed", "ranks tied"])
def test_recommended_lists_are_the_same_however_the_ranking_is_ordered(order):
    """Each user's list, best first: the one-pass path over rows already grouped by user and
    ordered by rank, and the group-by when they are not, give the same lists."""
    import evalframe as ef
    from evalframe.engine.recommended import _lists_of_ordered_runs, with_recommended
    from evalframe.metrics.recommendation import RECOMMENDED

    rows = [("u1", "a", 1), ("u1", "b", 2), ("u1", "c", 3), ("u2", "c", 1), ("u2", "a", 2), ("u3", "b", 1)]
    if order == "users interleaved":
        rows = [rows[i] for i in (0, 3, 1, 4, 2, 5)]
    elif order == "ranks reversed":
        rows = rows[::-1]
    elif order == "ranks tied":
        rows = [("u1", "a", 1), ("u1", "b", 1), ("u2", "c", 1)]
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "rank"], orient="row")
    tables = ef.read_recommendations(frame)
    assert (_lists_of_ordered_runs(tables.ranking) is not None) == (order == "by user and rank")  # which path
    queries = pl.DataFrame({"system": ["default"] * 3, "query_id": ["u1", "u2", "u3"]})
    got = dict(with_recommended(tables, queries).select("query_id", RECOMMENDED).iter_rows())
    if order == "ranks tied":
        assert sorted(got["u1"]) == ["a", "b"] and got["u2"] == ["c"] and got["u3"] == []
    else:
        assert got == {"u1": ["a", "b", "c"], "u2": ["c", "a"], "u3": ["b"]}
