"""``evalframe embeddings quality|retrieve``: embedding quality and exact-kNN retrieval evaluation.

    evalframe embeddings quality a.parquet b.parquet --labels label --out reports/emb
    evalframe embeddings retrieve --queries q.parquet --corpus c.parquet --qrels qrels.txt -m recall@10 -m ndcg@10

``quality`` prints one row per metric and a column per model (value, and its verdict against the
chapter's thresholds), and with ``--out`` writes ``embedding_quality.csv`` / ``.parquet``, the
spectra and per-dimension variances, and the plots. ``retrieve`` runs :func:`evalframe.knn_run`
(one system per model) into the ranking engine and prints the engine's overview; ``--out`` writes
the engine's outputs and the recall@k plot. Bad input exits 2 naming file, row and value; nothing
is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalframe.errors import ExitCode

DEFAULT_METRICS = ("recall@1", "recall@5", "recall@10", "recall@20", "recall@50", "recall@100", "ndcg@10", "mrr", "map@100")
_MARKS = {"good": "✓", "fair": "~", "warning": "!"}
_COUNTS = {"embedding_dim", "dead_dimensions", "labels_with_one_vector"}


def _columns(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--id", default="id", help="id column of the embedding tables (default id)")
    parser.add_argument("--vector", default="vector", help="vector column: list or fixed-size array (default vector)")
    parser.add_argument("--model-column", default="model", help="column naming the model of each row, when a file holds several (default model)")


def add_parser(commands) -> None:
    embeddings = commands.add_parser(
        "embeddings",
        help="embedding quality (isotropy, uniformity, collapse) and exact-kNN retrieval evaluation",
        description="Intrinsic quality of embedding models, or their exact nearest-neighbour retrieval evaluated "
                    "with the ranking metrics.",
    )
    actions = embeddings.add_subparsers(dest="action", required=True, metavar="ACTION")
    quality = actions.add_parser("quality", help="intrinsic metrics of one or more models, side by side",
                                 description="Isotropy, cosine mean, alignment, uniformity and collapse of each model, "
                                             "with the chapter's good / warning thresholds.")
    quality.add_argument("files", nargs="+", help="embedding tables (.parquet, .csv, .ndjson) or .npy matrices; "
                                                  "a file's stem names its model unless it has a model column")
    quality.add_argument("--labels", help="label column: positive pairs for alignment (within a label) and per-label slices")
    quality.add_argument("--pairs", help="positive pairs file (id_a, id_b), instead of pairs within labels")
    quality.add_argument("--by-label", action="store_true", help="also compute every metric per label")
    quality.add_argument("--no-bootstrap", action="store_true", help="no bootstrap intervals")
    quality.add_argument("--resamples", type=int, default=1000, help="bootstrap replicates (default 1000)")
    quality.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of uniformity's pair sample (default 0)")
    quality.add_argument("--pair-budget", type=int, default=None, help="uniformity over every pair up to this many (default 50,000,000)")
    quality.add_argument("--sample-size", type=int, default=None, help="pairs drawn for uniformity past the budget (default 1,000,000)")
    quality.add_argument("--dead-threshold", type=float, default=0.01, help="variance below which a dimension is dead (default 0.01)")
    quality.add_argument("--out", help="output folder (tables, plots); nothing is written without it")
    quality.add_argument("--force", action="store_true", help="write into an --out folder that holds other files")
    _columns(quality)

    retrieve = actions.add_parser("retrieve", help="exact kNN retrieval from embeddings, evaluated with ranking metrics",
                                  description="Retrieve each query's top k corpus vectors (exact, blocked) and evaluate "
                                              "the run against qrels: one system per model.")
    retrieve.add_argument("--queries", required=True, help="query embedding table (ids match the qrels)")
    retrieve.add_argument("--corpus", required=True, help="corpus embedding table (one model, or a model column)")
    retrieve.add_argument("--qrels", required=True, help="qrels: TREC text or a query_id, doc_id, relevance table")
    retrieve.add_argument("-m", "--metric", dest="metrics", action="append", metavar="METRIC",
                          help=f"ranking metric (repeatable; default {', '.join(DEFAULT_METRICS)})")
    retrieve.add_argument("-k", type=int, default=100, help="documents retrieved per query (default 100)")
    retrieve.add_argument("--similarity", choices=("cosine", "dot"), default="cosine", help="score (default cosine)")
    retrieve.add_argument("--bootstrap", action="store_true", help="bootstrap CIs over queries")
    retrieve.add_argument("--resamples", type=int, default=1000, help="bootstrap replicates (default 1000)")
    retrieve.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    retrieve.add_argument("--out", help="output folder (the engine's outputs and the recall@k plot)")
    retrieve.add_argument("--force", action="store_true", help="write into an --out folder that holds other files")
    _columns(retrieve)


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    return (_quality if args.action == "quality" else _retrieve)(args)


def _quality(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.analyses.embedding_quality import embedding_report, load_models
    from evalframe.engine.bootstrap import Bootstrap

    models = load_models(list(args.files), label=args.labels, id=args.id, vector=args.vector, model_column=args.model_column)
    options = {key: value for key, value in (("pair_budget", args.pair_budget), ("sample_size", args.sample_size))
               if value is not None}
    bootstrap = None if args.no_bootstrap else Bootstrap(resamples=args.resamples, seed=args.seed)
    report = embedding_report(models, labels=args.labels, pairs=args.pairs, by_label=args.by_label, bootstrap=bootstrap,
                              dead_threshold=args.dead_threshold, seed=args.seed, **options)
    text = quality_text(report.quality)
    if args.out:
        written = _write_quality(report, Path(args.out), args.dead_threshold, force=args.force)
        text += f"\n\nwrote {args.out}/ ({', '.join(written)})"
    return text, ExitCode.OK


def quality_text(quality) -> str:
    """The overall rows as a terminal table: metric, then per model ``value mark`` (✓ good, ~ fair,
    ! warning), then the target."""
    import polars as pl

    from evalframe.report.formatting import format_number

    rows = quality.filter(pl.col("slice") == "overall")
    models = rows.get_column("model").unique(maintain_order=True).to_list()
    metrics = rows.get_column("metric").unique(maintain_order=True).to_list()
    cells = {(r["model"], r["metric"]): r for r in rows.iter_rows(named=True)}
    header = ["metric", *models, "good if"]
    body = []
    for metric in metrics:
        line = [metric]
        target = ""
        for model in models:
            row = cells.get((model, metric))
            if row is None or row["value"] is None:
                line.append("—")
                continue
            value = (("yes" if row["value"] else "no") if metric == "collapse_detected"
                     else f"{row['value']:.0f}" if metric in _COUNTS else format_number(row["value"]))
            if row["ci_low"] is not None:
                value += f" [{format_number(row['ci_low'])}, {format_number(row['ci_high'])}]"
            line.append(f"{value} {_MARKS.get(row['verdict'], ' ')}".rstrip())
            target = row["target"] or ""
        body.append([*line, target])
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *body]]
    notes = rows.filter(pl.col("note").is_not_null()).select("model", "metric", "note").unique(maintain_order=True)
    lines += ["", "✓ good, ~ fair, ! warning (seed 004 §21.1 thresholds); [95% bootstrap CI]"]
    lines += [f"{model} · {metric}: {note}" for model, metric, note in notes.iter_rows()]
    return "\n".join(lines)


def _write_quality(report, out: Path, threshold: float, *, force: bool = False) -> list[str]:
    """The tables and plots, through the one atomic writer (:func:`evalframe.results.writer.write_result`)."""
    from importlib.util import find_spec

    from evalframe.results.writer import write_result

    writers = {f"{name}.csv": (lambda path, table=table: table.write_csv(path, float_precision=10))
               for name, table in report.tables.items()}
    writers["embedding_quality.parquet"] = lambda path: report.quality.write_parquet(path, statistics=False)
    written = list(writers)
    if find_spec("matplotlib") is not None:
        from evalframe.report.embedding_plots import dimension_variance, spectrum
        from evalframe.report.plots import write_plots

        figures = {"embedding_spectrum": spectrum(report.spectrum),
                   "embedding_dimension_variance": dimension_variance(report.dimensions, threshold)}
        writers["plots"] = lambda path: write_plots(figures, path)
        written += [f"plots/{stem}.png" for stem in figures]
    else:
        print("evalframe: note: plots need matplotlib (pip install 'evalframe[report]'); tables written", file=sys.stderr)
    write_result(out, writers, force=force)
    return written


def knn_table(tables) -> "pl.DataFrame":
    """One row per model: how many queries were run, the documents retrieved per query."""
    import polars as pl

    return (tables.ranking.group_by("system", maintain_order=True)
            .agg(queries=pl.col("query_id").n_unique(), retrieved=pl.len()).rename({"system": "model"}))


def _retrieve(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.engine.evaluation import evaluate
    from evalframe.pipeline.embeddings import read_embedding_input
    from evalframe.pipeline.spec import InputSpec
    from evalframe.engine.bootstrap import Bootstrap

    spec = InputSpec(path=args.corpus, format="embeddings",
                     columns={"id": args.id, "vector": args.vector, "model": args.model_column},
                     knn={"queries": args.queries, "k": args.k, "similarity": args.similarity})
    tables = read_embedding_input(spec, args.corpus, args.qrels)
    bootstrap = Bootstrap(resamples=args.resamples, seed=args.seed) if args.bootstrap else None
    evaluation = evaluate(tables, metrics=args.metrics or list(DEFAULT_METRICS), missing="zero", bootstrap=bootstrap)
    for note in evaluation.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    text = evaluation.overview()
    if args.out:
        from importlib.util import find_spec

        from evalframe.report.outputs import default_outputs

        # The knn table says how the run was made; with it the report's plots add recall@k over k.
        evaluation = evaluation.with_tables(knn=knn_table(tables))
        outputs = (*default_outputs(evaluation), *(("plots",) if find_spec("matplotlib") is not None else ()))
        evaluation.write(args.out, outputs, force=args.force)
        text += f"\n\nwrote {args.out}/ ({', '.join(outputs)}, knn.csv)"
    return text, ExitCode.OK
