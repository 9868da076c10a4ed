"""Plain pandas + scikit-learn recomputation of ``pipelines/evidence_contract.yaml``: the benchmark's side.

The reference of ``benchmarks/bench_pipeline.py``. Every metric, statistic and check comes from
``tests/pipeline_reference.py``, the one reference of the metrics contract, which the tests use
too and which imports neither evalframe nor polars (see its docstring for what it computes and
the conventions it follows). This module only drives it the way the benchmark needs:

- :func:`recompute` runs the stages one after the other and times each one: reading, parsing
  and checking the CSV; the per-query metrics (``groupby(query).apply`` or a plain loop, see
  ``--per-query``); the slices overall, per fold and per criterion, each per config, with the
  confusion family from scikit-learn's functions (``recall_score``, ``precision_score``, …, as
  a verification script would call them); the per-post multi-label metrics (contract §6) per
  slice that groups whole posts; then the across-fold rows and the row order;
- :func:`write_outputs` writes the tidy tables the benchmark compares with evalframe's.

Usage::

    python benchmarks/pandas_reference.py data_samples/per_query.csv --out /tmp/reference
    # writes summary.csv, summary.parquet and per_query.parquet (one row per query and config)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

# The reference lives with the tests (it is their oracle); the benchmark reads it from there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pipeline_reference as reference  # noqa: E402

SUMMARY_COLUMNS = ["grouping", "system", "fold", "criterion_id", "metric", "subset",
                   "n", "n_skipped", "value", "std", "median", "p25", "p75"]
#: The subset each metric is computed on, as pipelines/evidence_contract.yaml names it.
SUBSETS = {
    **dict.fromkeys([*reference.CLASSIFICATION_METRICS, *reference.CALIBRATION_METRICS], "all queries"),
    **dict.fromkeys(reference.RANKING_METRICS, "queries with has_evidence_gold = 1"),
    **dict.fromkeys(reference.MULTILABEL_METRICS, "all posts"),
}
#: per_query.parquet: the reference's column names → the names of per_query.csv.
PER_QUERY_NAMES = {"system": "config", "label": "has_evidence_gold", "prob": "p_has_evidence"}


def summary_frame(rows: list[reference.Row], groupings: list[str]) -> pd.DataFrame:
    """The reference's rows as one tidy table, in the pipeline's order; NaN where undefined.

    Rows are ordered by grouping (in the order of ``groupings``), system, fold, criterion and
    metric (in the order of the pipeline's YAML).
    """
    summary = pd.DataFrame(
        [{**{column: getattr(row, column) for column in SUMMARY_COLUMNS if column != "subset"},
          "subset": SUBSETS[row.metric]} for row in rows],
        columns=SUMMARY_COLUMNS,
    )
    for column in ("value", "std", "median", "p25", "p75"):
        summary[column] = summary[column].astype(float)  # None → NaN
    summary["fold"] = summary["fold"].astype("Int64")
    summary[["n", "n_skipped"]] = summary[["n", "n_skipped"]].astype("int64")
    metric_order = {metric: position for position, metric in enumerate([*reference.ALL_METRICS, *reference.MULTILABEL_METRICS])}
    grouping_order = {name: position for position, name in enumerate(groupings)}
    summary = summary.assign(_g=summary["grouping"].map(grouping_order), _m=summary["metric"].map(metric_order))
    summary = summary.sort_values(["_g", "system", "fold", "criterion_id", "_m"], na_position="last")
    return summary[SUMMARY_COLUMNS].reset_index(drop=True)


def recompute(path: str | Path, *, per_query_mode: str = "groupby", timings: dict | None = None):
    """Read ``path`` and return ``(summary, per_query)``; stage times go into ``timings`` if given.

    ``summary`` has one row per (grouping, system, fold, criterion_id, metric), ``per_query``
    one row per query and config: its keys, fold, label, probability, the Brier term and every
    ranking metric (NaN on queries without evidence).
    """
    timings = {} if timings is None else timings
    started = time.perf_counter()
    queries = reference.load_queries(path)
    timings["read_parse_check"] = time.perf_counter() - started

    started = time.perf_counter()
    table = reference.per_query_table(queries, mode=per_query_mode)
    timings["per_query_metrics"] = time.perf_counter() - started

    started = time.perf_counter()
    rows = reference.slice_rows(table, reference.CONTRACT_SLICES, confusion=reference.sklearn_confusion_values)
    timings["slices"] = time.perf_counter() - started

    started = time.perf_counter()
    rows += reference.multilabel_rows(table, reference.CONTRACT_SLICES)
    timings["per_post"] = time.perf_counter() - started

    started = time.perf_counter()
    rows += reference.across_fold_rows(rows)
    summary = summary_frame(rows, [*reference.CONTRACT_SLICES, "across_folds"])
    timings["across_folds_and_order"] = time.perf_counter() - started
    per_query = table.drop(columns=["gold", "ranked"]).rename(columns=PER_QUERY_NAMES)
    return summary, per_query


def write_outputs(summary: pd.DataFrame, per_query: pd.DataFrame, out_dir: str | Path) -> None:
    """summary.csv and summary.parquet (tidy), per_query.parquet (one row per query and config)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out_dir / "summary.csv", index=False)
    summary.to_parquet(out_dir / "summary.parquet", index=False)
    per_query.to_parquet(out_dir / "per_query.parquet", index=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="per_query.csv")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--per-query", choices=("groupby", "loop"), default="groupby",
                        help="apply the per-query functions with groupby().apply (default) or a plain loop")
    args = parser.parse_args(argv)
    timings: dict[str, float] = {}
    summary, per_query = recompute(args.input, per_query_mode=args.per_query, timings=timings)
    write_outputs(summary, per_query, args.out)
    overall = summary[(summary["grouping"] == "overall")].pivot(index="metric", columns="system", values="value")
    print(overall.reindex(reference.ALL_METRICS).to_string(float_format=lambda value: f"{value:.4f}"))
    print("stage seconds:", json.dumps({name: round(value, 3) for name, value in timings.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
