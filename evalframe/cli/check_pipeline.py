"""``evalframe check-pipeline SPEC [--input F] [overrides]``: validate a pipeline without running it.

Every problem of the spec is reported at once with its key path (exit 2). With ``--input`` (or
when the spec's own input file exists) the input is read too and the checks that ``evalframe
run`` makes before computing (:func:`evalframe.pipeline.preflight.preflight`) run on it: the
same problems, the same skipped parts, nothing computed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalframe.errors import ExitCode


def add_parser(commands) -> None:
    check = commands.add_parser(
        "check-pipeline",
        help="validate a pipeline spec (keys, types, metrics, subsets, columns); exit 0 or 2",
        description="Validate SPEC as a whole, reporting every problem with its key path; nothing is computed.",
    )
    check.add_argument("spec", help="pipeline YAML file, or the name of a bundled pipeline")
    check.add_argument("--input", help="also check the columns the spec names against this input file")
    check.add_argument("--gold", help="gold file of input formats that read one (legal)")
    from evalframe.cli.run import add_override_arguments

    add_override_arguments(check)


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.cli.run import overrides_of
    from evalframe.pipeline import load_pipeline
    from evalframe.pipeline.preflight import preflight
    from evalframe.pipeline.run import default_input, gold_file, read_input
    from evalframe.pipeline.scanned import checked_scan, scans_input

    pipeline = load_pipeline(args.spec, **overrides_of(args))
    plan = pipeline.plan
    lines = [
        f"{args.spec}: ok: pipeline `{pipeline.name}`, {len(plan.metrics)} metrics in {len(plan.groups)} metric groups, "
        f"slices {', '.join(plan.slices)}"
    ]
    source = args.input or default_input(pipeline)
    if source is not None and scans_input(pipeline, source):  # --buckets: the input is scanned, as `run` scans it
        checked, _ = checked_scan(pipeline, source)
        lines.append(f"{source}: ok: the pipeline runs on it (every check `evalframe run` makes before splitting it into buckets)")
        lines += [f"note: {part.note()}" for part in checked.skipped]
    elif source is not None and Path(source).is_file():
        checked = preflight(pipeline, read_input(pipeline.input, source, gold_file(pipeline, args.gold)))
        lines.append(f"{source}: ok: the pipeline runs on it (every check `evalframe run` makes before computing)")
        lines += [f"note: {part.note()}" for part in checked.skipped]
    elif args.input is None:
        lines.append("columns not checked: no input (pass --input FILE)")
    else:
        lines.append(f"{source}: not found, columns not checked")
        return "\n".join(lines), ExitCode.BAD_INPUT
    return "\n".join(lines), ExitCode.OK
