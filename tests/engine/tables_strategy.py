"""Random evaluation tables for the engine's property tests (hypothesis).

:func:`evidence_tables` draws what a per_query.csv holds: posts × criteria per system, a fold per
post, labels, probabilities (often tied), ranked candidate lists and gold sentences, and a weight
per post (the same for all its queries, as a post unit needs). Helpers rebuild tables from a
subset of posts (:func:`restrict`) or with each post repeated ``weight`` times
(:func:`repeat_by_weight`).
"""

from __future__ import annotations

import polars as pl
from hypothesis import strategies as st

import evalframe as ef


@st.composite
def evidence_tables(draw, *, weights: str = "integer", min_posts: int = 1, max_posts: int = 12) -> ef.Tables:
    n_posts = draw(st.integers(min_posts, max_posts))
    n_criteria = draw(st.integers(1, 4))
    systems = draw(st.sampled_from([["s"], ["a", "b"]]))
    probs = st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.5, 0.7, 0.9, 1.0]) | st.floats(0, 1)
    if weights == "integer":
        weight = st.integers(0, 3).map(float)
    elif weights == "float":
        weight = st.floats(0, 5, allow_nan=False).map(lambda w: round(w, 3))
    else:
        weight = st.just(1.0)
    queries, lists, gold = [], [], {}
    for post in range(n_posts):
        fold = draw(st.integers(0, 2))
        post_weight = draw(weight)
        for criterion in range(n_criteria):
            query_id = f"p{post}|c{criterion}"
            candidates = [f"p{post}_s{i}" for i in range(draw(st.integers(0, 6)))]
            label = draw(st.integers(0, 1)) if candidates else 0
            gold[query_id] = draw(st.lists(st.sampled_from(candidates), min_size=1, unique=True)) if label else []
            for system in systems:
                order = draw(st.permutations(candidates))
                queries.append({
                    "system": system, "query_id": query_id, "post_id": f"p{post}", "criterion_id": f"c{criterion}",
                    "fold": fold, "label": label, "prob": draw(probs), "w": post_weight,
                })
                lists.append({"system": system, "query_id": query_id, "doc_id": list(order)})
    judgments = [{"query_id": q, "doc_id": d, "relevance": 1} for q, docs in gold.items() for d in docs]
    return ef.Tables(
        queries=pl.DataFrame(queries, schema={"system": pl.String, "query_id": pl.String, "post_id": pl.String,
                                              "criterion_id": pl.String, "fold": pl.Int64, "label": pl.Int64,
                                              "prob": pl.Float64, "w": pl.Float64}).sort("system", "query_id"),
        judgments=pl.DataFrame(judgments, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}),
        ranked_lists=pl.DataFrame(lists, schema={"system": pl.String, "query_id": pl.String, "doc_id": pl.List(pl.String)}),
    )


def restrict(tables: ef.Tables, posts: list[str]) -> ef.Tables:
    """The tables of ``posts`` only."""
    queries = tables.queries.filter(pl.col("post_id").is_in(posts))
    ids = queries.get_column("query_id").unique().implode()
    return ef.Tables(
        queries=queries,
        judgments=tables.judgments.filter(pl.col("query_id").is_in(ids)),
        ranked_lists=tables.ranked_lists.filter(pl.col("query_id").is_in(ids)),
    )


def repeat_by_weight(tables: ef.Tables) -> ef.Tables:
    """Each post repeated ``w`` times (copies get new post and query ids), weights dropped."""
    copies = tables.queries.select("query_id", "post_id", "w").unique("query_id").with_columns(
        copy=pl.int_ranges(0, pl.col("w").cast(pl.Int64))
    ).explode("copy").drop_nulls("copy")
    rename = copies.select(
        "query_id",
        new_query=pl.format("{}#{}", "query_id", "copy"),
        new_post=pl.format("{}#{}", "post_id", "copy"),
    )

    def renamed(frame: pl.DataFrame) -> pl.DataFrame:
        joined = frame.join(rename, on="query_id", how="inner")
        out = joined.with_columns(query_id=pl.col("new_query"))
        if "post_id" in frame.columns:
            out = out.with_columns(post_id=pl.col("new_post"))
        return out.select(frame.columns)

    return ef.Tables(
        queries=renamed(tables.queries).drop("w").sort("system", "query_id"),
        judgments=renamed(tables.judgments),
        ranked_lists=renamed(tables.ranked_lists),
    )
