"""``evalframe run PIPELINE [--input F] [--out D]``: run a pipeline and write its outputs."""

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
    run.add_argument("--out", help="output folder (default: reports/<pipeline name>/)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.pipeline import load_pipeline

    from evalframe.cli.progress import step

    pipeline = load_pipeline(args.pipeline)
    with step("reading the input and computing the metrics", quiet=args.quiet):
        evaluation = pipeline.run(args.input)
    out = Path(args.out) if args.out else Path("reports") / pipeline.name
    with step(f"writing {out}/ (report tables and plots included when listed)", quiet=args.quiet):
        evaluation.write(out, pipeline.outputs)
    for note in evaluation.notes:
        print(f"evalframe: note: {note}", file=sys.stderr)
    return f"{evaluation.overview()}\n\nwrote {out}/ ({', '.join(pipeline.outputs)})", ExitCode.OK
