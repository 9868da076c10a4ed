"""``evalframe gate RESULT_DIR --baseline DIR --criteria FILE [--no-baseline-ok]``: quality gates for CI.

Reads the saved outputs of ``evalframe run`` (candidate in RESULT_DIR, baseline in DIR), checks
the ship criteria (:mod:`evalframe.gates.check`), writes ``RESULT_DIR/gate/gate.json`` and
``RESULT_DIR/gate/pr_comment.md``, prints the comment, and appends it to
``$GITHUB_STEP_SUMMARY`` when that is set. Exit status: 0 when no error-severity gate fails
(warnings allowed), 1 when one does (outputs still written), 2 for bad input or criteria
(nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path

from evalframe.errors import ExitCode

GATE_FOLDER = "gate"


def add_parser(commands) -> None:
    gate = commands.add_parser(
        "gate",
        help="check ship criteria against saved run outputs (CI quality gate)",
        description="Check the ship criteria FILE against the outputs of `evalframe run` in RESULT_DIR, "
                    "compared with a baseline run; write RESULT_DIR/gate/gate.json and pr_comment.md.",
        epilog="exit status: 0 pass (warnings allowed), 1 an error-severity gate failed, 2 bad input or criteria",
    )
    gate.add_argument("results", metavar="RESULT_DIR", help="output folder of `evalframe run` for the candidate")
    gate.add_argument("--baseline", metavar="DIR", help="output folder of `evalframe run` for the baseline")
    gate.add_argument("--criteria", metavar="FILE", required=True, help="ship criteria YAML (gates: ...)")
    gate.add_argument("--no-baseline-ok", action="store_true",
                      help="without a baseline (none given, or the folder does not exist), skip regression rules "
                           "instead of failing with exit 2")


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.gates.check import check_gates
    from evalframe.gates.outcome import RunOutputs
    from evalframe.gates.comment import render_comment
    from evalframe.gates.criteria import load_criteria

    criteria = load_criteria(args.criteria)
    candidate = RunOutputs.load(args.results, "results")
    baseline = None
    if args.baseline is not None and (Path(args.baseline).exists() or not args.no_baseline_ok):
        baseline = RunOutputs.load(args.baseline, "baseline")
    report = check_gates(criteria, candidate, baseline, no_baseline_ok=args.no_baseline_ok)
    comment = render_comment(report, reproduce=_reproduce(args, candidate, baseline))
    _write(Path(args.results) / GATE_FOLDER, report.to_json(), comment)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as handle:
            handle.write(comment + "\n")
    return comment.rstrip(), report.exit_code


def _run_command(outputs) -> str | None:
    info = outputs.info or {}
    pipeline = (info.get("pipeline") or {}).get("source")
    source = (info.get("input") or {}).get("path")
    if not pipeline or not source:
        return None
    return f"evalframe run {shlex.quote(str(pipeline))} --input {shlex.quote(str(source))} --out {shlex.quote(str(outputs.path))}"


def _reproduce(args: argparse.Namespace, candidate, baseline) -> list[str]:
    commands = [c for c in (_run_command(candidate), _run_command(baseline) if baseline is not None else None) if c]
    gate = f"evalframe gate {shlex.quote(args.results)}"
    if args.baseline is not None:
        gate += f" --baseline {shlex.quote(args.baseline)}"
    gate += f" --criteria {shlex.quote(args.criteria)}"
    if args.no_baseline_ok:
        gate += " --no-baseline-ok"
    return [*commands, gate]


def _write(folder: Path, report: dict, comment: str) -> None:
    """Write the folder ``gate/`` (gate.json and pr_comment.md) into the result folder atomically."""
    from evalframe.results.writer import update_result

    def write_gate(path: Path) -> None:
        path.mkdir()
        (path / "gate.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (path / "pr_comment.md").write_text(comment, encoding="utf-8")

    update_result(folder.parent, {folder.name: write_gate})
