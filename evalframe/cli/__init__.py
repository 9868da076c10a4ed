"""The ``evalframe`` command line: one module per command, one place for errors and exit codes.

Commands: ``run`` (a declarative pipeline), ``check-pipeline`` (validate a pipeline spec),
``validate`` (a table contract check), ``trec`` (trec_eval-compatible evaluation), ``score``
(the legal score.py), ``gate`` (quality gates for CI), ``compare`` (paired tests of systems in a
result folder), ``power`` (sample size and minimum detectable effect), ``report`` (re-render a
result folder's report files), ``metrics`` (the registry), ``embeddings`` (embedding quality
and exact-kNN retrieval evaluation), ``agreement`` (human labels) and ``pipelines`` (the bundled
pipelines: list, show, path). Every command exits with
:class:`~evalframe.errors.ExitCode`:
0 success, 1 a quality check or gate failed (outputs still written), 2 bad input or
configuration (one message on stderr, nothing written), 3 an internal error (a short message
and the path of the saved traceback, never a raw traceback).
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import tempfile
import threading
import traceback
from collections.abc import Sequence
from importlib import import_module
from typing import NoReturn

from evalframe.errors import EvalframeError, ExitCode

#: Command name → module (each has ``add_parser(commands)`` and ``main(args) -> (text, exit code)``).
COMMANDS = {
    "run": "evalframe.cli.run",
    "check-pipeline": "evalframe.cli.check_pipeline",
    "validate": "evalframe.cli.validate",
    "trec": "evalframe.cli.trec",
    "score": "evalframe.cli.score",
    "metrics": "evalframe.cli.metrics",
    "gate": "evalframe.cli.gate",
    "compare": "evalframe.cli.compare",
    "power": "evalframe.cli.power",
    "report": "evalframe.cli.report",
    "agreement": "evalframe.cli.agreement",
    "embeddings": "evalframe.cli.embeddings",
    "pipelines": "evalframe.cli.pipelines",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only ``command``'s (the one about to run:
    its arguments parse, and fail, as with every command's parser, without importing and
    building the other twelve, ~0.02 CPU-s before a command can begin its work)."""
    parser = argparse.ArgumentParser(
        prog="evalframe",
        description="Exact, fast, sliceable evaluation of retrieval, RAG and evidence-gating systems.",
        epilog="exit status: 0 success, 1 a check or gate failed, 2 bad input or configuration, 3 internal error",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        if command is None or name == command:
            import_module(module).add_parser(commands)
    return parser


def _save_traceback() -> str:
    handle, path = tempfile.mkstemp(prefix="evalframe-traceback-", suffix=".txt")
    with os.fdopen(handle, "w") as file:
        file.write(traceback.format_exc())
    return path


def _forget_early_reads() -> None:
    """Drop the input reads a command began and did not take (it failed first): nothing of one
    command's input stays in memory after it (:mod:`evalframe.io.early`, imported only by the
    commands that begin reads)."""
    early = sys.modules.get("evalframe.io.early")
    if early is not None:
        early.forget()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    try:
        output, status = import_module(COMMANDS[args.command]).main(args)
    except EvalframeError as error:
        print(f"evalframe: error: {error}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:  # Ctrl-C: outputs are written atomically, so nothing partial is left
        print("evalframe: interrupted (Ctrl-C); nothing written", file=sys.stderr)
        return 130
    except Exception as error:  # a bug, not bad input: say so briefly, keep the details
        if os.environ.get("EVALFRAME_DEBUG"):
            raise
        print(f"evalframe: internal error: {type(error).__name__}: {error}\n"
              f"  the traceback is in {_save_traceback()} (set EVALFRAME_DEBUG=1 to see it here)", file=sys.stderr)
        return int(ExitCode.INTERNAL_ERROR)
    finally:
        _forget_early_reads()
    if output:
        print(output)
    return int(status)


#: OpenBLAS's threads (NumPy's matrix products) wait for work by spinning on a core for about
#: 2^28 cycles (~0.1 s) after they start and after each product before they sleep; 2^4 cycles
#: instead. Started at NumPy's import, beside an input being read, they took ~0.05 CPU-s of
#: the read's two cores from a pipeline run that multiplies no matrices. Products not limited to
#: one thread (exact kNN's score blocks, :mod:`evalframe.engine.knn`) still use a thread per core;
#: the bootstrap and ``compare`` limit theirs to one and were no slower in paired runs.
BLAS_THREAD_TIMEOUT = ("OPENBLAS_THREAD_TIMEOUT", "4")


def _short_blas_spin() -> None:
    """Set :data:`BLAS_THREAD_TIMEOUT` for this process unless NumPy is already imported (its
    BLAS has read the environment) or the user set it."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(*BLAS_THREAD_TIMEOUT)


def console() -> NoReturn:
    """The ``evalframe`` command (``[project.scripts]``, ``python -m evalframe.cli``): :func:`main`,
    then the exit.

    When no other thread runs, the process ends once the output is flushed and the ``atexit``
    handlers have run, without tearing the interpreter down: that teardown (a last garbage
    collection over every object the imports made, then the tables freed one by one) costs
    about 0.15 CPU-s after a pipeline run and frees only memory the system takes back anyway.
    With another thread alive, the usual exit (which waits for it) is taken."""
    _short_blas_spin()
    status = main()
    if threading.active_count() > 1:
        sys.exit(status)
    atexit._run_exitfuncs()  # run once: the usual exit below finds none left
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the usual exit reports it
        sys.exit(status)
    os._exit(status)


if __name__ == "__main__":
    console()
