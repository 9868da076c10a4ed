"""``evalframe report RESULT_DIR [--format md|html|tex|csv] [--out DIR] [--percent]``.

Re-renders the report files from a folder written by ``evalframe run`` (its
``summary.parquet``, ``run.json``, ``curves.parquet`` and ``<table>.csv``), without the input
and without recomputing anything. Without ``--format`` every format is written (``report.md``,
``report.html``, ``report.tex``, ``report_tables.csv``, and ``plots/``); ``md`` writes the plots
too, as the Markdown links to them. Files are written by the results room's writer (each written beside its
target, then renamed; :func:`evalframe.results.writer.update_result`), so a failure leaves the
previous files whole, and a file of the same name that evalframe did not write is never replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalframe.errors import ExitCode

#: ``--format`` → the files it writes.
FORMATS = {
    "md": ("report.md", "plots"),
    "html": ("report.html",),
    "tex": ("report.tex",),
    "csv": ("report_tables.csv",),
}


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report",
        help="re-render report.md/.html/.tex, report_tables.csv and plots/ from a result folder",
        description="Re-render the report files of RESULT_DIR (written by `evalframe run`) without recomputing.",
    )
    report.add_argument("result_dir", metavar="RESULT_DIR", help="folder written by `evalframe run` (summary.parquet, run.json, …)")
    report.add_argument("--format", choices=sorted(FORMATS), action="append",
                        help="format to write (repeatable; default: all)")
    report.add_argument("--out", help="output folder (default: RESULT_DIR)")
    report.add_argument("--percent", action="store_true", help="print rates as percentages")


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.report.outputs import ReportWriter, require_report_extra, written_beside_the_plots
    from evalframe.report.tables import ReportData
    from evalframe.results.writer import update_result

    require_report_extra()
    data = ReportData.from_directory(args.result_dir, percent=args.percent)
    out = Path(args.out) if args.out else Path(args.result_dir)
    names = list(dict.fromkeys(name for fmt in (args.format or sorted(FORMATS)) for name in FORMATS[fmt]))
    report = ReportWriter(data)
    writers = report.writers()
    written_beside_the_plots(report, {name: writers[name] for name in names}, lambda ordered: update_result(out, ordered))
    notes = "" if data.curves is not None else " (no curves.parquet: ROC, PR, reliability and selected-K plots left out)"
    return f"wrote {out}/ ({', '.join(names)}){notes}", ExitCode.OK
