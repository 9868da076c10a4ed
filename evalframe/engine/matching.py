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

**Character spans** (:func:`span_coverage`, when a metric reads ``new_span_chars``). Ranked
items and judgments may carry ``file_path``, ``span_start`` and ``span_end`` (characters
``[start, end)`` of a file). For each ranked item, ``new_span_chars`` counts the characters of
its span that no item ranked above it covers, and ``new_gold_chars`` those of them that a
relevant judgment's span (same file) covers: summed over the top k they are the size of the
union of the top-k spans and of its intersection with the union of the gold spans, so no
character counts twice. They are computed once for every k on elementary segments: the
boundaries of every span of a (system, query, file) cut the line into segments, each segment is
covered first by the best-ranked span containing it, and gold-covered or not. The gold side
alone, :func:`gold_span_chars`, is a sort and a running maximum: a judgment's ``gold_new_chars``
is what its span adds to the spans sorted before it.
"""

from __future__ import annotations

import polars as pl

from evalframe.data.text import normalised
from evalframe.data.units import QUERY_KEYS
from evalframe.metrics.base import SPANS_GIVEN

__all__ = ["SPANS_GIVEN", "gold_span_chars", "has_spans", "judge_by_text", "span_coverage"]

#: Columns of a span, in the ranking and judgments tables.
SPAN_COLUMNS = ("file_path", "span_start", "span_end")
#: Columns the stages add to judged item rows.
ITEM_COLUMNS = ("first_matches", "new_span_chars", "new_gold_chars", "has_span")


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


def span_coverage(judged: pl.DataFrame, judgments: pl.DataFrame, *, relevance_threshold: int = 1) -> pl.DataFrame:
    """``judged`` (ranked rows by system, query and rank) with ``has_span``, ``new_span_chars``
    and ``new_gold_chars`` (module docstring). Items without a span add nothing."""
    if not has_spans(judged):
        return judged.with_columns(has_span=pl.lit(False), new_span_chars=pl.lit(0, dtype=pl.Int64),
                                   new_gold_chars=pl.lit(0, dtype=pl.Int64))
    group = [*QUERY_KEYS, "file_path"]
    retrieved = _spans(judged).select(*group, "rank", "span_start", "span_end")
    if has_spans(judgments):
        gold = (
            _spans(judgments).filter(pl.col("relevance") >= relevance_threshold)
            .select("query_id", "file_path", "span_start", "span_end")
            .join(retrieved.select(*group).unique(), on=["query_id", "file_path"], how="inner")
        )
    else:
        gold = retrieved.select(*group, "span_start", "span_end").clear()
    # Elementary segments: consecutive distinct boundaries of every span of the group.
    boundaries = (
        pl.concat([frame.select(*group, _at=pl.col(side)) for frame in (retrieved, gold) for side in ("span_start", "span_end")])
        .unique()
        .sort(*group, "_at")
        .with_columns(_segment=pl.int_range(pl.len(), dtype=pl.Int64).over(group),
                      _length=(pl.col("_at").shift(-1) - pl.col("_at")).over(group))
    )

    def segments_of(spans: pl.LazyFrame, keep: list[str]) -> pl.LazyFrame:
        """One row per (span, elementary segment it covers)."""
        index = boundaries.select(*group, "_at", "_segment")
        located = (
            spans.join(index.rename({"_at": "span_start", "_segment": "_first"}), on=[*group, "span_start"])
            .join(index.rename({"_at": "span_end", "_segment": "_stop"}), on=[*group, "span_end"])
        )
        return located.select(*group, *keep, _segment=pl.int_ranges("_first", "_stop")).explode("_segment")

    first_cover = segments_of(retrieved, ["rank"]).group_by(*group, "_segment").agg(pl.col("rank").min())
    gold_covered = segments_of(gold, []).unique().with_columns(_gold=pl.lit(True))
    per_rank = (
        first_cover.join(boundaries.select(*group, "_segment", "_length"), on=[*group, "_segment"])
        .join(gold_covered, on=[*group, "_segment"], how="left")
        .group_by(*QUERY_KEYS, "rank")
        .agg(new_span_chars=pl.col("_length").sum().cast(pl.Int64),
             new_gold_chars=pl.col("_length").filter(pl.col("_gold").fill_null(False)).sum().cast(pl.Int64))
        .collect(engine="in-memory")
    )
    spanned = pl.col("file_path").is_not_null() & pl.col("span_start").is_not_null() & pl.col("span_end").is_not_null()
    return (
        judged.join(per_rank, on=[*QUERY_KEYS, "rank"], how="left", maintain_order="left")
        .with_columns(pl.col("new_span_chars", "new_gold_chars").fill_null(0), has_span=spanned)
    )
