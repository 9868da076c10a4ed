"""trec_eval compatibility: its measure names, parameter syntax and output lines.

``evalframe trec QRELS RUN -m P.5,10 -m ndcg_cut.10 -q`` prints what trec_eval prints for the
measures evalframe supports, computed by evalframe's own metrics with trec_eval's conventions:
nDCG with linear gain, every judged query evaluated (``empty="zero"``: a query without
relevant items scores 0), a judged query absent from the run is an error unless ``-c``.

Measures (trec_eval name, parameters → evalframe metric):

==============  ==============================  ==========================
``num_q``       —                               number of evaluated queries
``num_ret``     —                               ``num_ret``
``num_rel``     —                               ``num_rel``
``num_rel_ret`` —                               ``num_rel_ret``
``map``         —                               ``map``
``Rprec``       —                               ``r_precision``
``recip_rank``  —                               ``mrr``
``P``           cutoffs (5,10,15,20,30,100,...) ``precision@k``
``recall``      cutoffs (5,10,15,20,30,100,...) ``recall@k``
``ndcg``        —                               ``ndcg(gain=linear)``
``ndcg_cut``    cutoffs (5,10,15,20,30,100,...) ``ndcg@k(gain=linear)``
``map_cut``     cutoffs (5,10,15,20,30,100,...) ``map@k``
``success``     cutoffs (1,5,10)                ``hit_rate@k``
==============  ==============================  ==========================

``all_trec`` selects all of them (with ``runid``), ``official`` (the default) the supported
part of trec_eval's default set. Lines come in trec_eval's measure order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from evalframe.data.tables import Tables
from evalframe.errors import ConfigError
from evalframe.engine.evaluation import evaluate
from evalframe.engine.result import Evaluation
from evalframe.metrics.base import Metric
from evalframe.metrics.registry import resolve

DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclass(frozen=True)
class TrecMeasure:
    """A trec_eval measure: its name, default cutoffs and the evalframe metric it maps to."""

    name: str
    #: evalframe metric, with ``{k}`` where a cutoff goes; None for num_q and runid.
    metric: str | None
    cutoffs: tuple[int, ...] | None = None


#: Supported measures in trec_eval's own order (the order its output lines follow).
MEASURES = (
    TrecMeasure("runid", None),
    TrecMeasure("num_q", None),
    TrecMeasure("num_ret", "num_ret"),
    TrecMeasure("num_rel", "num_rel"),
    TrecMeasure("num_rel_ret", "num_rel_ret"),
    TrecMeasure("map", "map"),
    TrecMeasure("Rprec", "r_precision"),
    TrecMeasure("recip_rank", "mrr"),
    TrecMeasure("P", "precision@{k}", DEFAULT_CUTOFFS),
    TrecMeasure("recall", "recall@{k}", DEFAULT_CUTOFFS),
    TrecMeasure("ndcg", "ndcg(gain=linear)"),
    TrecMeasure("ndcg_cut", "ndcg@{k}(gain=linear)", DEFAULT_CUTOFFS),
    TrecMeasure("map_cut", "map@{k}", DEFAULT_CUTOFFS),
    TrecMeasure("success", "hit_rate@{k}", (1, 5, 10)),
)
_BY_NAME = {measure.name: measure for measure in MEASURES}
_ORDER = {measure.name: position for position, measure in enumerate(MEASURES)}

MEASURE_SETS = {
    "all_trec": tuple(measure.name for measure in MEASURES),
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "P"),
}

#: trec_eval measures evalframe knows of but does not compute (a clear error, not "unknown").
UNSUPPORTED = (
    "gm_map", "bpref", "iprec_at_recall", "relstring", "infAP", "gm_bpref", "Rprec_mult", "utility",
    "11pt_avg", "binG", "G", "ndcg_rel", "Rndcg", "relative_P", "set_P", "set_recall", "set_map",
    "set_F", "set_relative_P", "num_nonrel_judged_ret", "unj", "rbp", "rbp_resid", "prefs_num_prefs_poss",
)


@dataclass(frozen=True)
class Selected:
    """One output line kind: trec_eval's printed name and the evalframe metric behind it."""

    measure: str
    printed: str
    metric: Metric | None


def parse_measures(specs: Sequence[str]) -> list[Selected]:
    """Parse ``-m`` arguments (``P.5,10``, ``ndcg_cut.10``, ``all_trec``) in trec_eval's order.

    Cutoffs are whole numbers (``23.4`` is read as 23, as trec_eval does) and print sorted.
    """
    cutoffs: dict[str, set[int] | None] = {}
    for spec in specs or ("official",):
        name, dot, params = spec.partition(".")
        if name in MEASURE_SETS and not dot:
            for member in MEASURE_SETS[name]:
                measure = _BY_NAME[member]
                _add(cutoffs, member, set(measure.cutoffs) if measure.cutoffs else None)
            continue
        measure = _BY_NAME.get(name)
        if measure is None:
            raise _unknown_measure(name)
        if dot and measure.cutoffs is None:
            msg = f"trec measure `{name}` takes no parameters in evalframe (got `{spec}`)"
            raise ConfigError(msg)
        values = _parse_cutoffs(spec, params) if dot else set(measure.cutoffs or ())
        _add(cutoffs, name, values if measure.cutoffs else None)

    selected = []
    for name in sorted(cutoffs, key=_ORDER.__getitem__):
        measure = _BY_NAME[name]
        if measure.metric is None:
            selected.append(Selected(name, name, None))
        elif measure.cutoffs is None:
            selected.append(Selected(name, name, resolve(measure.metric)))
        else:
            for k in sorted(cutoffs[name] or ()):
                selected.append(Selected(name, f"{name}_{k}", resolve(measure.metric.format(k=k))))
    return selected


def _add(cutoffs: dict[str, set[int] | None], name: str, values: set[int] | None) -> None:
    if values is None:
        cutoffs.setdefault(name, None)
    else:
        cutoffs[name] = (cutoffs.get(name) or set()) | values


def _parse_cutoffs(spec: str, params: str) -> set[int]:
    values = set()
    for text in params.split(","):
        try:
            value = int(float(text))
        except ValueError:
            raise ConfigError(f"trec measure `{spec}`: cutoff {text!r} is not a number") from None
        if value < 1:
            raise ConfigError(f"trec measure `{spec}`: cutoffs must be >= 1, got {text!r}")
        values.add(value)
    return values


def _unknown_measure(name: str) -> ConfigError:
    import difflib

    if name in UNSUPPORTED:
        supported = ", ".join(_BY_NAME)
        return ConfigError(f"trec measure `{name}` is not supported by evalframe (supported: {supported}, all_trec, official)")
    close = difflib.get_close_matches(name, [*_BY_NAME, *MEASURE_SETS], n=3)
    hint = f"; did you mean {', '.join(f'`{c}`' for c in close)}?" if close else ""
    return ConfigError(f"unknown trec measure `{name}`{hint}")


def evaluate_trec(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    selected: Sequence[Selected],
    *,
    relevance_threshold: int = 1,
    complete: bool = False,
    max_depth: int | None = None,
    source: str = "run",
    buckets: int | str | None = None,
    memory: int | str | None = None,
    bucket_dir: str | None = None,
) -> Evaluation:
    """Evaluate with trec_eval's conventions: every judged query counts (``-c``: also those absent
    from the run), scores compared as 32-bit floats as trec_eval stores them (a score beyond
    float32's range is an error naming ``source``). ``run`` and
    ``qrels`` are frames, or scans (:func:`evalframe.scan_run`) evaluated out of core in
    ``buckets`` (:func:`evalframe.evaluate`)."""
    metrics = [item.metric for item in selected if item.metric is not None]
    if buckets is not None:
        data, qrels_given = run, qrels
    else:
        data, qrels_given = Tables.from_run(run, qrels, source=source), None
    return evaluate(
        data,
        qrels_given,
        metrics,
        buckets=buckets,
        memory=memory,
        bucket_dir=bucket_dir,
        relevance_threshold=relevance_threshold,
        empty="zero",
        missing="zero" if complete else "error",
        max_depth=max_depth,
        score_precision="float32",
    )


def format_output(result: Evaluation, selected: Sequence[Selected], *, per_query: bool) -> str:
    """trec_eval's output: lines ``%-22s\\t%s\\t%6.4f`` (counts as integers), each system's
    per-topic lines first (topics in the order of the per-query table, measures in ``selected``'s
    order), then its ``all`` lines; one string, lines joined by newlines (none at the end).

    The values' text is made a column at a time (:mod:`evalframe.compat.number_text`): byte for
    byte what Python's ``f"{value:6.4f}"`` and ``f"{round(value)}"`` print."""
    metric_items = [item for item in selected if item.metric is not None]
    blocks = []
    for (system,), summary in result.summary.partition_by("system", as_dict=True, maintain_order=True).items():
        if per_query and metric_items:
            table = result.per_query.filter(pl.col("system") == system).select("query_id", "metric", "value")
            lines = _lines(table, metric_items)
            if lines:  # no topic: no line
                blocks.append(lines)
        totals = summary.select(pl.lit("all").alias("query_id"), "metric", "value")
        all_lines = iter(_lines(totals, metric_items).split("\n") if metric_items else ())
        for item in selected:
            if item.measure == "runid":
                blocks.append(f"{'runid':<22}\tall\t{system}")
            elif item.measure == "num_q":  # the long per-query table is built only when asked for
                n_queries = (result.per_unit_lazy().filter((pl.col("unit") == "query") & (pl.col("system") == system))
                             .select(pl.col("query_id").n_unique()).collect(engine="streaming").item())
                blocks.append(f"{'num_q':<22}\tall\t{n_queries}")
            else:
                blocks.append(next(all_lines))
    return "\n".join(blocks)


def _lines(table: pl.DataFrame, items: Sequence[Selected]) -> str:
    """The lines of ``table`` (long: ``query_id, metric, value``) for ``items``, joined by
    newlines: topics in order of first appearance, each with one line per item in ``items``'
    order. Every topic must have exactly one value of every item's metric (the engine's
    per-query table and summary do); anything else is an error, never a shifted line.

    The values are placed in a matrix (item × topic) by their row's item and topic number, each
    item's row is made text at once (as a count or ``%6.4f``), and each topic's lines are one
    concatenation of columns: no sort and no gather of the long table's strings."""
    import numpy as np

    from evalframe.compat.number_text import count_text, fixed4_text

    position = {item.metric.name: index for index, item in enumerate(items)}
    rows = (
        table.lazy()
        .with_row_index("_first")
        .select(
            pl.col("_first").min().over("query_id"),  # the topic's first row
            pl.col("metric").replace_strict(position, default=None, return_dtype=pl.Int64).alias("_item"),
            "value",
        )
        .filter(pl.col("_item").is_not_null())
        .collect()
    )
    first = rows.get_column("_first").to_numpy()
    is_first = np.zeros(table.height, dtype=bool)
    is_first[first] = True
    topic = (np.cumsum(is_first) - 1)[first]  # topics numbered in order of first appearance
    firsts = np.flatnonzero(is_first)
    n_topics, n_items = firsts.size, len(items)
    cell = rows.get_column("_item").to_numpy() * n_topics + topic
    if not (rows.height == n_items * n_topics and rows.get_column("value").null_count() == 0
            and np.bincount(cell, minlength=rows.height).max(initial=1) == 1):
        msg = "trec output: the values are not exactly one per topic and measure"
        raise ValueError(msg)
    matrix = np.empty(rows.height)
    matrix[cell] = rows.get_column("value").to_numpy()
    matrix = matrix.reshape(n_items, n_topics)
    shown = {}
    for is_count, make_text in ((True, count_text), (False, fixed4_text)):
        which = [index for index, item in enumerate(items) if (item.metric.summary == "sum") == is_count]
        if which:
            text = make_text(matrix[which].ravel())
            shown.update({index: text.slice(at * n_topics, n_topics) for at, index in enumerate(which)})
    columns = pl.DataFrame([table.get_column("query_id").gather(firsts), *(shown[i].alias(f"_{i}") for i in range(n_items))])
    parts = []
    for index, item in enumerate(items):
        parts += [pl.lit(f"{item.printed:<22}\t"), pl.col("query_id"), pl.lit("\t"), pl.col(f"_{index}"), pl.lit("\n")]
    return columns.select(pl.concat_str(parts[:-1]).str.join("\n")).item()
