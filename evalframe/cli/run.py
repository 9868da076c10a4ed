"""``evalframe run PIPELINE [--input F] [--gold G] [--out D] [--judge MODE] [overrides]``: run a pipeline and write its outputs.

``--judge record|replay|live`` runs the LLM judge metrics (:mod:`evalframe.metrics.judged`) on the
server the environment names; their answers are cached beside the results (``--judge-cache``).

Overrides (:mod:`evalframe.pipeline.overrides`), validated with the file and recorded in run.json:
``--config FILE`` (an overlay, repeatable), ``--set dotted.key=VALUE`` (YAML value, repeatable),
``--no-bootstrap``, ``--outputs a,b``, ``--baseline NAME``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalframe.errors import ExitCode


def add_parser(commands) -> None:
    run = commands.add_parser(
        "run",
        help="run a declarative pipeline (e.g. pipelines/evidence_contract.yaml)",
        description="Run PIPELINE (a YAML file or a bundled pipeline name) and write its outputs.",
    )
    run.add_argument("pipeline", help="pipeline YAML file, or the name of a bundled pipeline (evidence_contract)")
    run.add_argument("--input", help="input file (default: the pipeline's input path)")
    run.add_argument("--gold", help="gold file of input formats that score against one (legal; default: the pipeline's input.gold); "
                     "for `recommendations`, the held-out items (input.tables.ground_truth)")
    run.add_argument("--samples", help="samples file of the rag format's two-file form (then --input is the outputs file)")
    run.add_argument("--out", help="output folder (default: reports/<pipeline name>/); a folder holding files evalframe "
                                   "did not write is refused unless --force")
    run.add_argument("--force", action="store_true",
                     help="write into an --out folder that holds other files (only evalframe's own files are ever replaced)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar or progress lines on stderr")
    run.add_argument("--catalog", help="item catalog of the `recommendations` format (its input.tables.items; "
                     "with --input, the pipeline's own catalog, history and similarity are not used)")
    run.add_argument("--costs", metavar="fp=C,fn=C", help="costs of a false positive and a false negative (parameters fp_cost, fn_cost)")
    run.add_argument("--judge", choices=("live", "record", "replay"),
                     help="run the LLM judge metrics on the chat completions server of OPENAI_BASE_URL, model "
                          "EVALFRAME_JUDGE_MODEL: record (call on a cache miss, keep the answer), replay (no call; a miss "
                          "is an error), live (call, keep nothing)")
    run.add_argument("--judge-cache", metavar="FILE", help="the judge's cache (default: judge_cache.parquet beside the --out folder)")
    run.add_argument("--embedding-cache", metavar="FILE",
                     help="embeddings kept between runs (default: embedding_cache.parquet beside the --out folder)")
    add_override_arguments(run)


def add_override_arguments(parser) -> None:
    """The override flags of ``run`` and ``check-pipeline`` (:func:`overrides_of`)."""
    group = parser.add_argument_group("overrides (validated like the file, recorded in run.json)")
    group.add_argument("--config", action="append", default=[], metavar="FILE",
                       help="a YAML overlay merged into the pipeline (repeatable), e.g. data_samples/evidence_contract.sample.yaml")
    group.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="set_values",
                       help="set one key of the pipeline, VALUE read as YAML (repeatable): --set slices.domain=[domain]")
    group.add_argument("--no-bootstrap", action="store_true", help="no confidence intervals (quick numbers)")
    group.add_argument("--outputs", metavar="A,B", help="write only these outputs, e.g. summary.csv,report.html")
    group.add_argument("--baseline", metavar="NAME", help="the system comparisons start from (compare's baseline, the ablation's first row)")
    add_bucket_arguments(group)


def add_bucket_arguments(parser) -> None:
    """``--buckets``, ``--memory``, ``--bucket-dir`` (out of core, :mod:`evalframe.engine.buckets`)."""
    parser.add_argument("--buckets", metavar="N|auto",
                        help="evaluate out of core: split the input by unit into N bucket files (or `auto`: from the "
                             "input's size and --memory) and merge the buckets' partials (the same results)")
    parser.add_argument("--memory", metavar="SIZE", help="memory budget of --buckets auto, e.g. 8GB (default a third of the machine's)")
    parser.add_argument("--bucket-dir", metavar="DIR", help="folder of the temporary bucket files (default the system's temp folder)")


def overrides_of(args: argparse.Namespace) -> dict:
    """Keyword arguments of :func:`evalframe.pipeline.load_pipeline` from the override flags."""
    execution = [f"execution.{key}={value}" for key, value in
                 (("buckets", args.buckets), ("memory", args.memory), ("bucket_dir", args.bucket_dir)) if value is not None]
    return {
        "config": args.config,
        "set": [*args.set_values, *execution],
        "bootstrap": False if args.no_bootstrap else None,
        "outputs": [name.strip() for name in args.outputs.split(",") if name.strip()] if args.outputs else None,
        "baseline": args.baseline,
    }


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe._progress import quiet_while

    with quiet_while(args.quiet):  # -q for this command only (an in-process caller's later work shows progress)
        return _run(args)


def _run(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.pipeline.early import begin_reading_input

    overrides = overrides_of(args)
    if args.samples is None:
        # The input is read from here on, beside the engine's imports and the pipeline's checks.
        begin_reading_input(args.pipeline, input=args.input, **overrides)
    from evalframe.pipeline.run import load_pipeline, run_resources
    from evalframe._progress import step
    from evalframe.results.writer import check_out_dir
    from evalframe.semantic import session

    pipeline = load_pipeline(args.pipeline, **overrides)
    if args.catalog or args.costs or pipeline.input.format == "recommendations":
        pipeline = _with_catalog_and_costs(pipeline, args.catalog, args.costs)
    if pipeline.input.format == "recommendations" and (args.input or args.gold):
        # The pipeline's own side tables go with its own input: with another input, only those given here.
        from dataclasses import replace

        given = {"items": args.catalog, "ground_truth": args.gold}
        tables = {k: v for k, v in given.items() if v} if args.input else {**pipeline.input.tables, **{k: v for k, v in given.items() if v}}
        pipeline = replace(pipeline, input=replace(pipeline.input, tables=tables))
        args.gold = None
    out = Path(args.out) if args.out else Path("reports") / pipeline.name
    check_out_dir(out, force=args.force, names=pipeline.outputs)  # before computing: a refused --out costs nothing
    resources = run_resources(judge=args.judge, judge_cache=args.judge_cache, out=out,
                              embedding_cache=args.embedding_cache or out.resolve().parent / "embedding_cache.parquet")
    from evalframe.report.outputs import start_plots, warm_up

    warm_up(pipeline.outputs)  # the plot workers' fork server starts beside the computing
    _import_ahead()
    early = []  # the report plots, begun from the engine's result while the analyses run
    try:
        with step("reading the input and computing the metrics", quiet=args.quiet), session.use(resources):
            evaluation = pipeline.run(args.input, gold=args.gold, samples=args.samples,
                                      on_engine=lambda result: early.append(start_plots(result, pipeline.outputs)))
    except BaseException:
        for plots in early:
            if plots is not None:
                plots.close()
        raise
    with step(f"writing {out}/ (report tables and plots included when listed)", quiet=args.quiet):
        evaluation.write(out, pipeline.outputs, force=args.force, early=early[0] if early else None)
    for note in evaluation.notes:
        print(_wrapped(f"evalframe: note: {note}"), file=sys.stderr)
    written = [*pipeline.outputs, *(f"{name}.csv" for name in evaluation.tables)]
    # The overview ends with the checks' counts and the failed checks, when the pipeline ran them.
    wrote = _wrapped(f"wrote {out}/ ({', '.join(written)})")
    report = f"{evaluation.overview()}\n\n{wrote}"
    return report, _checks_outcome(evaluation)


def _import_ahead() -> None:
    """Import, while the input is still being read on its own thread (this thread would only wait
    for it), two modules the run imports after the read, on its path: NumPy's masked arrays, which
    Polars imports the first time it makes a Series of a NumPy array (in the derive stage, ~0.02
    CPU-s), and the checks (:func:`_checks_outcome`, ~0.02 CPU-s). A read that already ended
    loses nothing: the same imports, earlier."""
    import numpy.ma  # noqa: F401
    import evalframe.checks  # noqa: F401


def parse_costs(text: str) -> dict[str, float]:
    """``fp=100,fn=10000`` → ``{"fp_cost": 100.0, "fn_cost": 10000.0}`` (numbers >= 0, both given)."""
    from evalframe.errors import ConfigError

    found: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, equals, value = part.partition("=")
        key = key.strip().removesuffix("_cost")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not equals or key not in ("fp", "fn") or not number >= 0:
            raise ConfigError(f"--costs: expected fp=COST,fn=COST with costs >= 0, got {part!r}")
        found[f"{key}_cost"] = number
    if set(found) != {"fp_cost", "fn_cost"}:
        raise ConfigError(f"--costs needs both fp= and fn= (got {text!r})")
    return found


def _with_catalog_and_costs(pipeline, catalog: str | None, costs: str | None):
    """The pipeline with ``--catalog`` as its ``input.tables.items`` and ``--costs`` as its
    ``parameters`` (the spec is rebuilt, so the cost metrics read them and are checked again)."""
    from dataclasses import replace

    from evalframe.data.contracts import load_yaml
    from evalframe.errors import ConfigError
    from evalframe.pipeline import Pipeline

    if catalog and pipeline.input.format != "recommendations":
        raise ConfigError(f"--catalog goes with the `recommendations` input format; pipeline `{pipeline.name}` reads "
                          f"`{pipeline.input.format}`")
    if costs:
        spec = load_yaml(Path(pipeline.source).read_text())
        spec["parameters"] = {**(spec.get("parameters") or {}), **parse_costs(costs)}
        pipeline = Pipeline.from_mapping(spec, origin=pipeline.source)
    if catalog:
        pipeline = replace(pipeline, input=replace(pipeline.input, tables={**pipeline.input.tables, "items": catalog}))
    return pipeline


def _wrapped(text: str, width: int = 100) -> str:
    """``text`` in lines of at most ``width`` columns (a terminal's), later lines indented."""
    import textwrap

    return textwrap.fill(text, width=width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def _checks_outcome(evaluation) -> ExitCode:
    """Warn about failed `should` checks; exit 1 (outputs already written) when a `must` check failed."""
    from evalframe.checks import MUST, SHOULD, failed

    for severity in (SHOULD, MUST):
        for check in failed(evaluation, severity).iter_rows(named=True):
            scope = ", ".join(f"{key} {check[key]}" for key in ("grouping", "system", "fold", "criterion_id") if check[key])
            kind = "warning" if severity == SHOULD else "check failed"
            detail = f": {check['observed']} (expected {check['expected']})" if check["observed"] else ""
            print(f"evalframe: {kind}: {check['check']} [{scope}] {check['message']}{detail}", file=sys.stderr)
    return ExitCode.CHECK_FAILED if failed(evaluation, MUST).height else ExitCode.OK
