"""``evalframe run PIPELINE [--input F] [--gold G] [--out D]``: run a pipeline and write its outputs."""

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
    run.add_argument("--gold", help="gold file of input formats that score against one (legal; default: the pipeline's input.gold)")
    run.add_argument("--out", help="output folder (default: reports/<pipeline name>/); a folder holding files evalframe "
                                   "did not write is refused unless --force")
    run.add_argument("--force", action="store_true",
                     help="write into an --out folder that holds other files (only evalframe's own files are ever replaced)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar or progress lines on stderr")


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe._progress import set_quiet, step
    from evalframe.pipeline import load_pipeline
    from evalframe.results.writer import check_out_dir

    set_quiet(args.quiet)
    pipeline = load_pipeline(args.pipeline)
    out = Path(args.out) if args.out else Path("reports") / pipeline.name
    check_out_dir(out, force=args.force, names=pipeline.outputs)  # before computing: a refused --out costs nothing
    with step("reading the input and computing the metrics", quiet=args.quiet):
        evaluation = pipeline.run(args.input, gold=args.gold)
    with step(f"writing {out}/ (report tables and plots included when listed)", quiet=args.quiet):
        evaluation.write(out, pipeline.outputs, force=args.force)
    for note in evaluation.notes:
        print(_wrapped(f"evalframe: note: {note}"), file=sys.stderr)
    written = [*pipeline.outputs, *(f"{name}.csv" for name in evaluation.tables)]
    # The overview ends with the checks' counts and the failed checks, when the pipeline ran them.
    wrote = _wrapped(f"wrote {out}/ ({', '.join(written)})")
    report = f"{evaluation.overview()}\n\n{wrote}"
    return report, _checks_outcome(evaluation)


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
