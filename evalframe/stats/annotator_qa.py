"""Annotator quality assurance (seed 004 §21.3.2): gold accuracy, speed, position bias, the filter.

All functions take the validated annotations table of :func:`evalframe.stats.label_agreement.prepare`
(``task_id``, ``annotator_id``, ``rating``, and optionally ``seconds`` or ``started_at`` /
``submitted_at``, ``position``, ``query_id``, ``doc_id``).

- :func:`per_annotator`: per annotator the ratings given, and with gold tasks
  (task → expected rating) ``n_gold``, ``n_correct`` and ``gold_accuracy`` (exact match, the
  chapter's ``check_annotation``; null without a gold task); with durations the median seconds
  per task and the share under ``min_seconds`` (pitfall 5: fast annotators are often less
  accurate; the chapter's mitigation asks for >= 10 s); with positions the Spearman correlation
  of position and rating (pitfall 1: a negative value means earlier items are rated higher).
- :func:`reliable_annotators`: the chapter's ``get_reliable_annotators(min_accuracy, min_tasks)``.
- :func:`filter_annotations`: the chapter's ``filter_annotations``: ratings of reliable annotators
  only, then (``require_agreement``) the tasks with >= 2 of them whose spread ``max − min`` is at
  most ``max_spread`` (the chapter's ±1), labelled with ``int(median)`` (truncated, as the
  chapter's ``int(np.median(values))``), ``confidence = 1 − spread / (scale max − scale min)``
  (the chapter's ``/ 4`` on its 0–4 scale) and ``n_annotators``. As the chapter, the filter asks
  for ``min_tasks`` (default 10) gold tasks per annotator.
- :func:`as_qrels`: the kept labels as a judgments table for the ranking metrics.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evalframe.errors import ConfigError, InputError, Problem
from evalframe.stats.agreement import Scale

#: The chapter's minimum time per task (mitigation strategies of §21.3.2).
MIN_SECONDS = 10.0
#: A Spearman correlation of position and rating at or below this flags position bias.
POSITION_BIAS_RHO = -0.3


def gold_table(gold: pl.DataFrame | dict, scale: Scale, *, source: str = "gold") -> pl.DataFrame:
    """Gold tasks as a table ``task_id``, ``expected`` (from a dict or a table with ``task_id``
    and ``rating``/``expected``); an expected rating outside the scale is an error naming its row."""
    if isinstance(gold, dict):
        gold = pl.DataFrame({"task_id": [str(k) for k in gold], "expected": [str(v) for v in gold.values()]},
                            schema={"task_id": pl.String, "expected": pl.String})
    else:
        column = "expected" if "expected" in gold.columns else "rating"
        missing = [c for c in ("task_id", column) if c not in gold.columns]
        if missing:
            raise InputError(source, [Problem(None, c, None, f"no column `{c}` (columns: {gold.columns})") for c in missing])
        gold = gold.select(pl.col("task_id").cast(pl.String), pl.col(column).cast(pl.String).str.strip_chars().alias("expected"))
    if scale.numeric:
        numbers = gold.get_column("expected").cast(pl.Float64, strict=False)
        allowed = np.array(scale.values, dtype=np.float64)
        bad = np.nonzero((numbers.is_null() | ~numbers.is_in(pl.Series(allowed).implode())).to_numpy())[0]
        expected = numbers.cast(pl.Int64) if all(isinstance(v, int) for v in scale.values) else numbers
    else:
        bad = np.nonzero((~gold.get_column("expected").is_in(pl.Series([str(v) for v in scale.values]).implode())).to_numpy())[0]
        expected = gold.get_column("expected")
    if bad.size:
        raise InputError(source, [Problem(f"row {i + 1}", "expected", gold.get_column("expected")[int(i)],
                                          f"is outside the rating scale {list(scale.values)}") for i in bad[:20]])
    repeated = gold.get_column("task_id").is_duplicated()
    if repeated.any():
        rows = np.nonzero(repeated.to_numpy())[0]
        raise InputError(source, [Problem(f"row {i + 1}", "task_id", gold.get_column("task_id")[int(i)], "is listed twice")
                                  for i in rows[:20]])
    return pl.DataFrame({"task_id": gold.get_column("task_id"), "expected": expected})


def _seconds(table: pl.DataFrame) -> pl.Expr | None:
    if "seconds" in table.columns:
        return pl.col("seconds").cast(pl.Float64, strict=False)
    if "started_at" in table.columns and "submitted_at" in table.columns:
        def moment(name: str) -> pl.Expr:
            column = pl.col(name)
            if table.schema[name] == pl.String:
                column = column.str.to_datetime(strict=False)
            return column
        return (moment("submitted_at") - moment("started_at")).dt.total_milliseconds().cast(pl.Float64) / 1000.0
    return None


def per_annotator(table: pl.DataFrame, gold: pl.DataFrame | None, *, min_seconds: float = MIN_SECONDS) -> pl.DataFrame:
    """One row per annotator (module docstring), sorted by annotator id."""
    frame = table
    aggregations: list[pl.Expr] = [pl.len().cast(pl.Int64).alias("n_ratings"), pl.col("task_id").n_unique().cast(pl.Int64).alias("n_tasks")]
    if gold is not None:
        frame = frame.join(gold, on="task_id", how="left")
        is_gold = pl.col("expected").is_not_null()
        correct = is_gold & (pl.col("rating").cast(pl.String) == pl.col("expected").cast(pl.String))
        aggregations += [is_gold.sum().cast(pl.Int64).alias("n_gold"), correct.sum().cast(pl.Int64).alias("n_correct")]
    seconds = _seconds(frame)
    if seconds is not None:
        frame = frame.with_columns(seconds.alias("_seconds"))
        aggregations += [pl.col("_seconds").median().alias("median_seconds"),
                         (pl.col("_seconds") < min_seconds).mean().alias("share_fast")]
    if "position" in frame.columns:
        frame = frame.with_columns(pl.col("position").cast(pl.Float64, strict=False).alias("_position"))
        rho = pl.corr(pl.col("_position").rank(), pl.col("rating").cast(pl.Float64).rank(), method="pearson")
        aggregations.append(rho.alias("position_rating_spearman"))
    result = frame.group_by("annotator_id").agg(aggregations).sort("annotator_id")
    if gold is not None:
        result = result.with_columns(
            gold_accuracy=pl.when(pl.col("n_gold") > 0).then(pl.col("n_correct") / pl.col("n_gold")))
    flags = []
    if seconds is not None:
        flags.append(pl.when(pl.col("median_seconds") < min_seconds).then(pl.lit(f"fast (median < {min_seconds:g} s)")))
    if "position" in frame.columns:
        flags.append(pl.when(pl.col("position_rating_spearman") <= POSITION_BIAS_RHO)
                     .then(pl.lit("position bias (earlier items rated higher)")))
    if flags:
        result = result.with_columns(pl.concat_str(flags, separator="; ", ignore_nulls=True).alias("flags"))
    return result


def reliable_annotators(per_annotator: pl.DataFrame, min_accuracy: float = 0.7, min_tasks: int = 10) -> list[str]:
    """Annotators with >= ``min_tasks`` gold tasks and gold accuracy >= ``min_accuracy`` (sorted)."""
    if "n_gold" not in per_annotator.columns:
        raise ConfigError("reliable annotators need gold tasks (`gold=` / `--gold`)")
    kept = per_annotator.filter((pl.col("n_gold") >= min_tasks) & (pl.col("gold_accuracy") >= min_accuracy))
    return kept.get_column("annotator_id").to_list()


def filter_annotations(table: pl.DataFrame, per_annotator: pl.DataFrame, scale: Scale, *, min_accuracy: float = 0.7,
                       max_spread: float = 1, require_agreement: bool = True, min_tasks: int = 10) -> pl.DataFrame:
    """The chapter's filter (module docstring) as a table: with ``require_agreement`` one row per
    kept task (``task_id``, ``rating``, ``confidence``, ``n_annotators``, and ``query_id`` /
    ``doc_id`` when given), in order of first appearance; otherwise the reliable annotators' rows."""
    reliable = reliable_annotators(per_annotator, min_accuracy, min_tasks)
    kept = table.filter(pl.col("annotator_id").is_in(pl.Series(reliable, dtype=pl.String).implode()))
    if not require_agreement:
        return kept
    extra = [pl.col(c).first() for c in ("query_id", "doc_id") if c in table.columns]
    if scale.numeric:
        spread = (pl.col("rating").max() - pl.col("rating").min()).cast(pl.Float64)
        label = pl.col("rating").median().cast(pl.Int64)  # int(np.median(values)): truncation
    else:
        spread = (pl.col("rating").n_unique() - 1).cast(pl.Float64)
        label = pl.col("rating").mode().sort().first()
    grouped = kept.group_by("task_id", maintain_order=True).agg(
        label.alias("rating"), spread.alias("_spread"), pl.len().cast(pl.Int64).alias("n_annotators"), *extra)
    return (
        grouped.filter((pl.col("n_annotators") >= 2) & (pl.col("_spread") <= max_spread))
        .with_columns(confidence=1.0 - pl.col("_spread") / scale.width)
        .select("task_id", "rating", "confidence", "n_annotators", *[c for c in ("query_id", "doc_id") if c in table.columns])
    )


def as_qrels(filtered: pl.DataFrame, annotations: pl.DataFrame) -> pl.DataFrame:
    """Kept labels as judgments (``query_id``, ``doc_id``, ``relevance``: the label, a whole grade)."""
    if not {"query_id", "doc_id"} <= set(filtered.columns):
        raise ConfigError("labels become qrels when the annotations have `query_id` and `doc_id` columns "
                          "(the query and the candidate of each task)")
    return filtered.select(pl.col("query_id").cast(pl.String), pl.col("doc_id").cast(pl.String),
                           pl.col("rating").cast(pl.Int64).alias("relevance"))
