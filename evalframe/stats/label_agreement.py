"""Agreement of human judgments and annotator QA (seed 004 §21.3): the qrels every metric trusts.

``agreement(annotations, rater=…, item=…, rating=…)`` reads a long table (one row per task and
annotator) and returns an :class:`Agreement`:

- ``summary``: the chapter's ``exact_agreement_rate``, ``pairwise_agreement_rate`` and
  ``tasks_with_multiple_annotations``, Fleiss' κ and Krippendorff's α (nominal, ordinal, interval),
  each with a bootstrap CI over tasks and its Landis–Koch words (:mod:`evalframe.stats.agreement`
  for the formulas);
- ``pairwise``: Cohen's κ of every annotator pair (unweighted, linear, quadratic) with CIs;
- ``disagreements``: the tasks with the widest spread of ratings, for review;
- ``per_annotator``: ratings, gold accuracy (with ``gold``), speed and position-bias checks
  (:mod:`evalframe.stats.annotator_qa`);
- ``filtered(…)`` / ``reliable_annotators(…)`` / ``qrels(…)``: the chapter's filter as a table and
  the labels it keeps as qrels for the ranking metrics.

The bootstrap is the engine's: replicate ``r`` gives task ``u`` the Poisson count
:func:`~evalframe.engine.replicates.poisson_counts` draws for its ``task_id`` (the same counts the
engine would give a unit with that key), and every statistic is recomputed as a weighted sum
(:mod:`evalframe.stats.agreement`), in blocks of replicates; the interval is
:func:`~evalframe.engine.bootstrap.intervals` (percentile). A rating outside the declared scale, a
missing rating or an annotator rating a task twice is an :class:`~evalframe.errors.InputError`
naming the file, row and value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import polars as pl
from threadpoolctl import threadpool_limits

from evalframe._sorting import sorted_codes
from evalframe.stats import annotator_qa
from evalframe.errors import ConfigError, InputError, Problem
from evalframe.stats import agreement as kernels
from evalframe.stats.agreement import Scale
from evalframe.engine.bootstrap import Bootstrap, intervals
from evalframe.engine.replicates import poisson_counts

#: At most this many task × replicate cells of weights at once (256 MB of float64; the pair
#: features are rebuilt per block, so fewer, larger blocks are cheaper).
_BLOCK_CELLS = 1 << 25
#: How many rows of each kind an input error lists.
_LISTED = 20


RELEVANCE_SCALE = Scale((0, 1, 2, 3, 4))


def parse_scale(text: str | Sequence | Scale | None) -> Scale | None:
    """``"0-4"``, ``"0,1,2,3,4"``, ``"bad,ok,good"`` or a sequence → :class:`Scale` (order kept)."""
    if text is None or isinstance(text, Scale):
        return text
    if isinstance(text, str):
        low, dash, high = text.partition("-")
        if dash and low.strip().lstrip("-").isdigit() and high.strip().isdigit():
            return Scale(tuple(range(int(low), int(high) + 1)))
        items = [part.strip() for part in text.split(",") if part.strip()]
    else:
        items = list(text)
    if len(items) < 2 or len(set(items)) != len(items):
        raise ConfigError(f"a rating scale needs at least two distinct values, got {text!r}")
    numbers = []
    for item in items:
        try:
            numbers.append(float(item))
        except (TypeError, ValueError):
            return Scale(tuple(str(i) for i in items), numeric=False)
    if numbers != sorted(numbers):
        raise ConfigError(f"a numeric rating scale is listed in increasing order, got {text!r}")
    return Scale(tuple(int(n) if float(n).is_integer() else n for n in numbers))


@dataclass
class Agreement:
    """Agreement tables of one annotations table (module docstring)."""

    annotations: pl.DataFrame  # columns task_id, annotator_id, rating (+ optional ones), validated
    scale: Scale
    summary: pl.DataFrame
    pairwise: pl.DataFrame
    disagreements: pl.DataFrame
    gold: pl.DataFrame | None = None
    bootstrap: Bootstrap | None = None
    notes: list[str] = field(default_factory=list)

    @cached_property
    def per_annotator(self) -> pl.DataFrame:
        """One row per annotator: ratings, gold accuracy, speed and position checks."""
        return annotator_qa.per_annotator(self.annotations, self.gold)

    def reliable_annotators(self, min_accuracy: float = 0.7, min_tasks: int = 10) -> list[str]:
        """The chapter's ``get_reliable_annotators``: at least ``min_tasks`` gold tasks and gold
        accuracy >= ``min_accuracy``."""
        return annotator_qa.reliable_annotators(self.per_annotator, min_accuracy, min_tasks)

    def filtered(self, min_accuracy: float = 0.7, max_spread: float = 1, *, require_agreement: bool = True,
                 min_tasks: int = 10) -> pl.DataFrame:
        """The chapter's ``filter_annotations`` as a table (:func:`annotator_qa.filter_annotations`)."""
        return annotator_qa.filter_annotations(
            self.annotations, self.per_annotator, self.scale, min_accuracy=min_accuracy, max_spread=max_spread,
            require_agreement=require_agreement, min_tasks=min_tasks)

    def qrels(self, filtered: pl.DataFrame | None = None) -> pl.DataFrame:
        """The kept labels as a judgments table (``query_id``, ``doc_id``, ``relevance``)."""
        return annotator_qa.as_qrels(self.filtered() if filtered is None else filtered, self.annotations)


# --- validation -----------------------------------------------------------------------------


def _locate(frame: pl.DataFrame, locator, rows: np.ndarray) -> list[str]:
    return [locator(int(i)) for i in rows[:_LISTED]]


def _infer_scale(observed: list[str]) -> Scale:
    """The sorted distinct values found: numbers when all of them are, text otherwise."""
    try:
        numbers = sorted({float(v) for v in observed})
    except ValueError:
        return Scale(tuple(sorted(set(observed))), numeric=False)
    return Scale(tuple(int(n) if n.is_integer() else n for n in numbers))


def prepare(annotations: pl.DataFrame, *, rater: str, item: str, rating: str, scale: Scale | None,
            source: str = "annotations", locator=None) -> tuple[pl.DataFrame, Scale]:
    """The table with columns ``task_id``, ``annotator_id``, ``rating`` (and the optional
    ``query_id``, ``doc_id``, ``seconds``, ``position``, ``started_at``, ``submitted_at``),
    checked: every named column exists, no rating is missing or outside ``scale``, no annotator
    rates a task twice. Problems name ``source``, the row (``locator``) and the value."""
    locator = locator or (lambda index: f"row {index + 1}")
    missing = [c for c in (rater, item, rating) if c not in annotations.columns]
    if missing:
        raise InputError(source, [Problem(None, c, None, f"no column `{c}` (columns: {annotations.columns})") for c in missing])
    problems: list[Problem] = []
    raw = annotations.get_column(rating)
    # Whole-number ratings on a numeric scale are read as numbers (the same values as their
    # text, without a text copy of a million ratings); anything else through its text.
    numeric_input = raw.dtype.is_integer() and (scale is None or scale.numeric)
    text = None if numeric_input else raw.cast(pl.String).str.strip_chars()
    given = raw.is_not_null() if numeric_input else text.is_not_null() & (text != "")
    absent = np.nonzero((~given).to_numpy())[0]
    for index in absent[:_LISTED]:
        problems.append(Problem(locator(int(index)), rating, None, "has no rating"))
    if scale is None:
        scale = _infer_scale((raw if numeric_input else text).filter(given).unique().to_list())
    if scale.numeric:
        numbers = raw.cast(pl.Float64) if numeric_input else text.cast(pl.Float64, strict=False)
        bad = numbers.is_null() | ~numbers.is_in(pl.Series(np.array(scale.values, dtype=np.float64)).implode())
    else:
        bad = ~text.is_in(pl.Series([str(v) for v in scale.values]).implode())
    outside = np.nonzero((bad & given).to_numpy())[0]
    for index in outside[:_LISTED]:
        problems.append(Problem(locator(int(index)), rating, raw[int(index)], f"is outside the rating scale {list(scale.values)}"))
    if outside.size > _LISTED:
        problems.append(Problem.unlisted(rating, f"is outside the rating scale {list(scale.values)}", int(outside.size - _LISTED)))
    keys = annotations.select(pl.col(item).cast(pl.String).alias("task_id"), pl.col(rater).cast(pl.String).alias("annotator_id"))
    hashes = np.sort(keys.select(pl.struct("task_id", "annotator_id").hash(seed=0)).to_series().to_numpy())
    may_repeat = hashes.size > 1 and bool((hashes[1:] == hashes[:-1]).any())  # exact check only then
    repeated = np.nonzero(keys.is_duplicated().to_numpy())[0] if may_repeat else np.zeros(0, np.int64)
    if repeated.size:
        first_seen = keys.with_row_index("_row").group_by("task_id", "annotator_id").agg(pl.col("_row").min())
        lookup = keys.with_row_index("_row").join(first_seen, on=["task_id", "annotator_id"], suffix="_first")
        later = lookup.filter(pl.col("_row") != pl.col("_row_first")).sort("_row")
        for row, task, annotator, first in later.select("_row", "task_id", "annotator_id", "_row_first").head(_LISTED).iter_rows():
            problems.append(Problem(locator(int(row)), rater, annotator,
                                    f"rates task {task!r} a second time (first at {locator(int(first))})"))
    if problems:
        raise InputError(source, problems, hint="one rating per task and annotator, on the declared scale (--scale)")
    if scale.numeric:
        codes = np.searchsorted(np.array(scale.values, dtype=np.float64), numbers.to_numpy())
        whole = all(isinstance(v, int) for v in scale.values)
        kept = numbers.cast(pl.Int64) if whole else numbers
    else:
        codes = text.replace_strict({str(v): code for code, v in enumerate(scale.values)}, return_dtype=pl.Int64).to_numpy()
        kept = text
    extra = [c for c in ("query_id", "doc_id", "seconds", "position", "started_at", "submitted_at") if c in annotations.columns
             and c not in (item, rater, rating)]
    table = pl.DataFrame({
        "task_id": keys.get_column("task_id"),
        "annotator_id": keys.get_column("annotator_id"),
        "rating": kept,
        "code": pl.Series(np.asarray(codes, dtype=np.int64)),
    }).hstack(annotations.select(extra))
    return table, scale


# --- the statistics -------------------------------------------------------------------------

SUMMARY_METRICS = ("exact_agreement", "pairwise_agreement", "fleiss_kappa", "krippendorff_alpha_nominal",
                   "krippendorff_alpha_ordinal", "krippendorff_alpha_interval")
#: Coefficients that get Landis–Koch words (chance-corrected ones).
CHANCE_CORRECTED = {"fleiss_kappa", "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal",
                    "krippendorff_alpha_interval", "cohen_kappa"}


def _encode(table: pl.DataFrame, scale: Scale) -> tuple[kernels.Ratings, pl.DataFrame, pl.DataFrame]:
    # Each id's position among the sorted distinct ids (one categorical cast, no join).
    task_ids, task = sorted_codes(table.get_column("task_id"))
    rater_ids, rater = sorted_codes(table.get_column("annotator_id"))
    tasks, raters = task_ids.to_frame("task_id"), rater_ids.to_frame("annotator_id")
    values = np.array(scale.values, dtype=np.float64) if scale.numeric else np.arange(len(scale.values), dtype=np.float64)
    ratings = kernels.Ratings(task.astype(np.int64), rater.astype(np.int64), table.get_column("code").to_numpy(),
                              values, tasks.height, raters.height)
    return ratings, tasks, raters


def _summary_rows(sums: dict[str, np.ndarray], values: np.ndarray, levels: Sequence[str]) -> np.ndarray:
    """The summary statistics (len(SUMMARY_METRICS) × C) from the summed per-task columns."""
    return np.vstack([
        kernels.exact_agreement(sums),
        kernels.pairwise_agreement(sums),
        kernels.fleiss_kappa(sums),
        *(kernels.krippendorff_alpha(sums, level, values) if level in levels
          else np.full(next(iter(sums.values())).shape[-1], np.nan) for level in kernels.ALPHA_LEVELS),
    ])


def agreement(annotations: pl.DataFrame, *, rater: str = "annotator_id", item: str = "task_id", rating: str = "rating",
              scale: str | Sequence | Scale | None = None, gold: pl.DataFrame | dict | None = None,
              bootstrap: Bootstrap | None = Bootstrap(), widest: int = 20, source: str = "annotations",
              locator=None, gold_source: str = "gold") -> Agreement:
    """Agreement statistics, per-pair κ, widest disagreements and annotator QA (module docstring).

    ``scale`` declares the rating scale (``"0-4"``, a list; default: the sorted values found);
    interval α and weighted κ use a numeric scale's values and positions, a nominal scale
    (strings) gives the nominal statistics only. ``gold`` maps task to expected rating (a dict,
    or a table with ``task_id`` and ``rating``). ``bootstrap=None`` skips the CIs.

    >>> import polars as pl
    >>> table = pl.DataFrame({"task_id": ["t1", "t1", "t2", "t2"], "annotator_id": ["a", "b", "a", "b"],
    ...                       "rating": [3, 3, 1, 2]})
    >>> ag = agreement(table, bootstrap=None)
    >>> ag.summary.filter(pl.col("metric") == "exact_agreement").get_column("value").item()
    0.5
    """
    table, parsed = prepare(annotations, rater=rater, item=item, rating=rating, scale=parse_scale(scale),
                            source=source, locator=locator)
    ratings, tasks, raters = _encode(table, parsed)
    counts = ratings.counts()
    pairs = kernels.rater_pairs(raters.height)
    levels = kernels.ALPHA_LEVELS if parsed.numeric else ("nominal",)
    task_sums = kernels.TaskSums(counts)
    pair_sums = kernels.PairSums(ratings, pairs)

    ones = np.ones((tasks.height, 1))
    values = _summary_rows(task_sums.sums(ones), ratings.values, levels)
    estimates, kappa_estimates = values[:, 0], pair_sums.estimates()
    summary_ci = pair_ci = None
    if bootstrap is not None:
        resamples = bootstrap.resamples
        summary_reps = np.empty((values.shape[0], resamples))
        pair_reps = np.empty((len(pairs), 3, resamples))
        # The replicate counts as drawn (uint8: 1 byte per task and replicate), then blocks of
        # columns: float64 for the per-task sums; the pair sums convert their own chunks.
        counts_drawn = poisson_counts(tasks.select("task_id"), resamples, bootstrap.seed)
        block = max(1, _BLOCK_CELLS // max(1, tasks.height))
        blocks = [(start, min(resamples, start + block)) for start in range(0, resamples, block)]
        with threadpool_limits(limits=1, user_api="blas"):
            for start, stop in blocks:
                sums = task_sums.sums(counts_drawn[:, start:stop].astype(np.float64))
                summary_reps[:, start:stop] = _summary_rows(sums, ratings.values, levels)
            pair_reps[:] = pair_sums.kappas(counts_drawn)
        summary_ci = intervals(summary_reps, estimates, bootstrap.confidence)
        pair_ci = intervals(pair_reps.reshape(-1, resamples), kappa_estimates.reshape(-1), bootstrap.confidence)
    m = counts.sum(axis=1)
    n_multi = int((m >= 2).sum())
    summary = _summary_table(estimates, summary_ci, n_multi, tasks.height, table.height, raters.height, levels)
    pairwise = _pair_table(ratings, raters, pairs, kappa_estimates, pair_ci)
    disagreements = _disagreements(table, ratings, counts, tasks, parsed, widest)
    gold_table = annotator_qa.gold_table(gold, parsed, source=gold_source) if gold is not None else None
    notes = []
    if n_multi < tasks.height:
        notes.append(f"{tasks.height - n_multi:,} of {tasks.height:,} tasks have one rating only: left out of agreement")
    return Agreement(table, parsed, summary, pairwise, disagreements, gold_table, bootstrap, notes)


def _nan_to_none(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _summary_table(estimates, ci, n_multi, n_tasks, n_ratings, n_raters, levels) -> pl.DataFrame:
    rows = []
    for position, metric in enumerate(SUMMARY_METRICS):
        level = metric.rpartition("_")[2]
        if metric.startswith("krippendorff") and level not in levels:
            continue
        value = _nan_to_none(estimates[position])
        note = None
        if value is None:
            note = "undefined: no task with two or more ratings, or one rating value only (no chance-expected disagreement)"
        rows.append({
            "metric": metric, "n_tasks": n_multi, "value": value,
            "se": _nan_to_none(ci.se[position]) if ci else None,
            "ci_low": _nan_to_none(ci.low[position]) if ci else None,
            "ci_high": _nan_to_none(ci.high[position]) if ci else None,
            "interpretation": kernels.landis_koch(value) if metric in CHANCE_CORRECTED else None,
            "note": note,
        })
    rows.append({"metric": "tasks_with_multiple_annotations", "n_tasks": n_tasks, "value": float(n_multi),
                 "se": None, "ci_low": None, "ci_high": None, "interpretation": None,
                 "note": f"{n_ratings:,} ratings by {n_raters:,} annotators on {n_tasks:,} tasks"})
    schema = {"metric": pl.String, "n_tasks": pl.Int64, "value": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "interpretation": pl.String, "note": pl.String}
    return pl.DataFrame(rows, schema=schema)


def _pair_table(ratings, raters, pairs, estimates, ci) -> pl.DataFrame:
    names = raters.get_column("annotator_id").to_list()
    grid = np.zeros((ratings.n_tasks, ratings.n_raters), dtype=bool)
    grid[ratings.task, ratings.rater] = True
    rows = []
    for p, (a, b) in enumerate(pairs.tolist()):
        shared = int((grid[:, a] & grid[:, b]).sum())
        for w, kind in enumerate(kernels.KAPPA_WEIGHTS):
            flat = p * 3 + w
            value = _nan_to_none(estimates[p, w])
            rows.append({
                "annotator_a": names[a], "annotator_b": names[b], "weights": kind, "n_tasks": shared,
                "kappa": value,
                "se": _nan_to_none(ci.se[flat]) if ci else None,
                "ci_low": _nan_to_none(ci.low[flat]) if ci else None,
                "ci_high": _nan_to_none(ci.high[flat]) if ci else None,
                "interpretation": kernels.landis_koch(value),
                "note": None if value is not None else (
                    "no shared task" if shared == 0 else "undefined: both gave one and the same rating throughout"),
            })
    schema = {"annotator_a": pl.String, "annotator_b": pl.String, "weights": pl.String, "n_tasks": pl.Int64,
              "kappa": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "interpretation": pl.String, "note": pl.String}
    return pl.DataFrame(rows, schema=schema)


def _disagreements(table: pl.DataFrame, ratings: kernels.Ratings, counts: np.ndarray, tasks: pl.DataFrame,
                   scale: Scale, widest: int) -> pl.DataFrame:
    """The ``widest`` tasks with >= 2 ratings by spread (max − min of a numeric scale's values,
    distinct values − 1 otherwise), then by the ratings' standard deviation, then task id.
    Ranked from the count matrix; only the listed tasks' ratings are gathered."""
    present = counts > 0
    m = counts.sum(axis=1)
    positions = np.arange(counts.shape[1])
    values = ratings.values if scale.numeric else positions.astype(np.float64)
    low = np.where(present, values[None, :], np.inf).min(axis=1)
    high = np.where(present, values[None, :], -np.inf).max(axis=1)
    spread = high - low if scale.numeric else present.sum(axis=1) - 1.0
    mean = (counts * values).sum(axis=1) / np.maximum(m, 1)
    std = np.sqrt(np.maximum((counts * (values - mean[:, None]) ** 2).sum(axis=1), 0) / np.maximum(m - 1, 1))
    multi = np.nonzero(m >= 2)[0]
    ids = tasks.get_column("task_id").to_numpy()
    # task ids are sorted (tasks come sorted), so the position breaks ties by id
    order = multi[np.lexsort((multi, -std[multi], -spread[multi]))][:widest]
    chosen = pl.DataFrame({"task_id": ids[order], "n_ratings": m[order].astype(np.int64), "spread": spread[order],
                           "std": std[order]}, schema={"task_id": pl.String, "n_ratings": pl.Int64, "spread": pl.Float64, "std": pl.Float64})
    listed = (
        table.filter(pl.col("task_id").is_in(chosen.get_column("task_id").implode()))
        .sort("annotator_id")
        .group_by("task_id")
        .agg(ratings=pl.col("rating").cast(pl.String).str.join(", "), annotators=pl.col("annotator_id").str.join(", "))
    )
    return chosen.join(listed, on="task_id", how="left", maintain_order="left")
