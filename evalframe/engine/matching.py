"""Judging ranked items without shared ids: by text, and by character spans.

Some gold files name no item ids: the legal benchmarks (seed 003) give each query its gold
*answers* (text and a character span in a file), and a system's ranked *passages*. Two stages
bring them to the rows the item metrics read (:mod:`evalframe.engine.per_unit`):

**Text relevance rule** (:func:`judge_by_text`, chosen by ``Tables.relevance_rule = "text"``).
A ranked item *matches* a judgment when, after ``strip().lower()``
(:func:`evalframe.data.text.normalised`), either text contains the other (equal texts
included); an empty item text matches nothing, while an empty judgment text is contained in
every non-empty item text (as Python's ``in`` has it). A ranked item takes the best grade of the
judgments it matches (0, judged non-relevant, when it matches none), and
``first_matches`` counts the relevant judgments (grade >= threshold) that it is the first, in
rank order, to match. ``first_matches`` summed over the top k is the number of relevant
judgments found there (the legal recall@k's numerator); an item with ``first_matches > 0``
credits at least one judgment that no item above it credited (the legal nDCG's ``dedupe``).
Under the id rule an item matches only its own judgment, so ``first_matches = is_relevant``.

**Character spans** (:func:`span_coverage`, when a metric reads ``has_span`` and
:func:`~evalframe.metrics.base.span_columns`). Ranked items and judgments may carry
``file_path``, ``span_start`` and ``span_end`` (characters ``[start, end)`` of a file). For a
cutoff k, ``new_span_chars@k`` of each of the top-k items counts the characters its span adds
to the union of the top-k spans (sorted by start within each system, query and file, an item
adds ``[max(start, reach), end)``, ``reach`` being the running maximum of the ends before it),
and ``new_gold_chars@k`` those of them inside the union of the relevant gold spans of the same
file (read off the merged gold blocks by an as-of join). Summed over the query they are the
size of the union of the top-k spans and of its intersection with the gold union: overlaps
are merged, no character counts twice. The gold side alone, :func:`gold_span_chars`, is the
same sort and running maximum: a judgment's ``gold_new_chars`` is what its span adds to the
spans sorted before it.
"""

from __future__ import annotations

import polars as pl

from evalframe.data.text import normalised
from evalframe.data.units import QUERY_KEYS
from evalframe.metrics.base import SPANS_GIVEN, span_columns, span_cutoffs

__all__ = ["SPANS_GIVEN", "gold_span_chars", "has_spans", "judge_by_text", "span_columns", "span_coverage", "span_cutoffs"]

#: Columns of a span, in the ranking and judgments tables.
SPAN_COLUMNS = ("file_path", "span_start", "span_end")


def judge_by_text(ranked: pl.DataFrame, judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """``ranked`` with ``relevance``, ``is_relevant`` and ``first_matches`` by the text rule.

    ``ranked`` has the query keys, ``rank`` and ``text``; ``judgments`` has ``query_id``,
    ``doc_id``, ``relevance`` and ``text``. Row order is kept.
    """
    items = ranked.lazy().select(*QUERY_KEYS, "rank", _item=normalised(pl.col("text")))
    golds = judgments.lazy().select("query_id", _gold=pl.col("doc_id"), _grade=pl.col("relevance"),
                                    _gold_text=normalised(pl.col("text")))
    item, gold = pl.col("_item"), pl.col("_gold_text")
    matches = (
        items.join(golds, on="query_id", how="inner")
        .filter((item.str.len_chars() > 0) & (item.str.contains(gold, literal=True) | gold.str.contains(item, literal=True)))
        .drop("_item", "_gold_text")
        .collect(engine="in-memory")  # once: the texts are normalised in Python
        .lazy()
    )
    first = (
        matches.filter(pl.col("_grade") >= relevance_threshold)
        .group_by(*QUERY_KEYS, "_gold").agg(pl.col("rank").min())
        .group_by(*QUERY_KEYS, "rank").agg(first_matches=pl.len().cast(pl.Int64))
    )
    grades = matches.group_by(*QUERY_KEYS, "rank").agg(relevance=pl.col("_grade").max())
    found = pl.collect_all([grades, first], engine="in-memory")
    judged = (
        ranked.join(found[0], on=[*QUERY_KEYS, "rank"], how="left", maintain_order="left")
        .join(found[1], on=[*QUERY_KEYS, "rank"], how="left", maintain_order="left")
    )
    return judged.with_columns(
        pl.col("relevance").fill_null(0).cast(judgments.schema["relevance"]),
        pl.col("first_matches").fill_null(0),
    ).with_columns(is_relevant=pl.col("relevance") >= relevance_threshold)


def _spans(frame: pl.DataFrame) -> pl.LazyFrame:
    """Rows whose span is given and not empty."""
    return frame.lazy().filter(
        pl.col("file_path").is_not_null() & pl.col("span_start").is_not_null() & pl.col("span_end").is_not_null()
        & (pl.col("span_end") > pl.col("span_start"))
    )


def has_spans(frame: pl.DataFrame) -> bool:
    return all(column in frame.columns for column in SPAN_COLUMNS)


def gold_span_chars(judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """``judgments`` with ``gold_new_chars``: what each relevant judgment's span adds to the spans
    of the same query and file sorted before it (by start, then end). Their sum over a query is
    the size of the union of its relevant gold spans. 0 for other rows. Row order is kept.
    """
    if not has_spans(judgments):
        return judgments.with_columns(gold_new_chars=pl.lit(0, dtype=pl.Int64))
    group = ["query_id", "file_path"]
    spans = (
        _spans(judgments.with_row_index("_row"))
        .filter(pl.col("relevance") >= relevance_threshold)
        .sort(*group, "span_start", "span_end")
        .with_columns(_reach=pl.col("span_end").cum_max().shift(1).over(group))
        .select("_row", gold_new_chars=(pl.col("span_end") - pl.max_horizontal("span_start", pl.col("_reach").fill_null(pl.col("span_start"))))
                .clip(lower_bound=0).cast(pl.Int64))
        .collect(engine="in-memory")
    )
    return (
        judgments.with_row_index("_row")
        .join(spans, on="_row", how="left", maintain_order="left")
        .drop("_row")
        .with_columns(pl.col("gold_new_chars").fill_null(0))
    )


def _merged_gold(judgments: pl.DataFrame, relevance_threshold: int) -> pl.LazyFrame:
    """The union of each (query, file)'s relevant gold spans as disjoint blocks, with ``_before``:
    the gold characters of the blocks before each (sort, running maximum, running sum)."""
    group = ["query_id", "file_path"]
    return (
        _spans(judgments).filter(pl.col("relevance") >= relevance_threshold)
        .select(*group, "span_start", "span_end")
        .sort(*group, "span_start", "span_end")
        .with_columns(_block=(pl.col("span_start") > pl.col("span_end").cum_max().shift(1)).fill_null(True).cum_sum().over(group))
        .group_by(*group, "_block").agg(_start=pl.col("span_start").min(), _end=pl.col("span_end").max())
        .sort(*group, "_start")
        .with_columns(_before=(pl.col("_end") - pl.col("_start")).cum_sum().shift(1, fill_value=0).over(group))
        .drop("_block")
    )


def span_coverage(
    judged: pl.DataFrame, judgments: pl.DataFrame, cutoffs: list[int], *, relevance_threshold: int = 1
) -> pl.DataFrame:
    """``judged`` (ranked rows) with ``has_span`` and, for each cutoff k, the two
    :func:`span_columns` (0 for items below k or without a span).

    Within each (system, query, file) the top-k spans are sorted by start; an item adds the
    characters of ``[max(start, reach), end)``, ``reach`` being the running maximum of the ends
    before it, so the additions sum to the size of the union. The gold characters of that piece
    are ``F(end) - F(piece start)``, ``F(x)`` the gold characters before position x, read off the
    merged gold blocks by an as-of join.
    """
    spanned = pl.col("file_path").is_not_null() & pl.col("span_start").is_not_null() & pl.col("span_end").is_not_null()
    if not has_spans(judged):
        zeros = [pl.lit(0, dtype=pl.Int64).alias(name) for k in cutoffs for name in span_columns(k)]
        return judged.with_columns(pl.lit(False).alias("has_span"), *zeros)
    group = [*QUERY_KEYS, "file_path"]
    gold = _merged_gold(judgments, relevance_threshold) if has_spans(judgments) else None
    rows = _spans(judged.with_row_index("_row")).select("_row", *group, "rank", "span_start", "span_end")
    found = []
    for k in cutoffs:
        added, inside = span_columns(k)
        pieces = (
            rows.filter(pl.col("rank") <= k)
            .sort(*group, "span_start", "span_end")
            .with_columns(_reach=pl.col("span_end").cum_max().shift(1).over(group))
            .with_columns(_from=pl.max_horizontal("span_start", pl.col("_reach").fill_null(pl.col("span_start")))
                          .clip(upper_bound=pl.col("span_end")))
            .with_columns((pl.col("span_end") - pl.col("_from")).alias(added))
        )
        if gold is None:
            pieces = pieces.with_columns(pl.lit(0, dtype=pl.Int64).alias(inside))
        else:
            pieces = _with_gold_before(_with_gold_before(pieces, "span_end", gold, "_upto_end"), "_from", gold, "_upto_from")
            pieces = pieces.with_columns((pl.col("_upto_end") - pl.col("_upto_from")).alias(inside))
        found.append(pieces.select("_row", pl.col(added).cast(pl.Int64), pl.col(inside).cast(pl.Int64)))
    collected = pl.collect_all(found, engine="in-memory")
    result = judged.with_row_index("_row")
    for frame in collected:
        result = result.join(frame, on="_row", how="left", maintain_order="left")
    return result.drop("_row").with_columns(
        pl.col([name for k in cutoffs for name in span_columns(k)]).fill_null(0), has_span=spanned)


def _with_gold_before(pieces: pl.LazyFrame, at: str, gold: pl.LazyFrame, name: str) -> pl.LazyFrame:
    """``pieces`` with ``name`` = F(``at``): the gold characters of the row's query and file before
    that position (the last merged block starting at or before it, by an as-of join)."""
    keys = ["query_id", "file_path"]
    blocks = gold.with_columns(_at=pl.col("_start")).sort("_at")
    inside_block = (pl.col(at) - pl.col("_start")).clip(lower_bound=0).clip(upper_bound=pl.col("_end") - pl.col("_start"))
    found = (
        pieces.with_columns(_at=pl.col(at)).sort("_at")
        .join_asof(blocks, on="_at", by=keys, strategy="backward", check_sortedness=False)
        .with_columns((pl.col("_before") + inside_block).fill_null(0).alias(name))
    )
    return found.drop("_at", "_start", "_end", "_before")
