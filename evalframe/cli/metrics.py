"""``evalframe metrics``: every registered metric with its level, unit, range, direction,
definition, meaning and parameters, grouped by target category (the table of
:func:`evalframe.metrics.listing.list_metrics`, which ``ef.list_metrics()`` returns)."""

from __future__ import annotations

import argparse

from evalframe.errors import ExitCode


def add_parser(commands) -> None:
    commands.add_parser("metrics", help="list the registered metrics: level, unit, range, meaning and parameters")


_ARROWS = {"higher is better": "↑", "lower is better": "↓"}


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.metrics.listing import list_metrics

    table = list_metrics()
    width = max(table.get_column("name").str.len_chars().max() or 0, 14)
    lines, current = [], None
    for row in table.iter_rows(named=True):
        if row["target"] != current:
            lines += ([""] if lines else []) + [f"# {row['target']}"]
            current = row["target"]
        aliases = f" (aliases: {', '.join(row['aliases'])})" if row["aliases"] else ""
        shown_range = row["range"] or "—"
        lines.append(f"{row['name']:<{width}} {row['level']:<6} {row['unit']:<6} {shown_range:<9} {_ARROWS[row['direction']]} "
                     f"{row['description']}{aliases}")
        if row["meaning"]:
            lines.append(f"{'':<{width}} means: {row['meaning']}")
        if row["parameters"]:
            lines.append(f"{'':<{width}} params: {row['parameters']}")
    return "\n".join(lines), ExitCode.OK
