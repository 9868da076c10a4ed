"""``evalframe metrics``: every registered metric with its level, unit, target and parameters."""

from __future__ import annotations

import argparse

from evalframe.errors import ExitCode


def add_parser(commands) -> None:
    commands.add_parser("metrics", help="list the registered metrics and their parameters")


def _shown(value: object) -> str:
    """A parameter value as a metric name spells it (``null`` for None)."""
    return "null" if value is None else str(value)


def _example_cutoff(param) -> object:
    """A valid ``@`` value of a metric, to build one and read its level and unit."""
    if param.choices:
        return param.choices[0]
    return 10 if param.kind is int else 0.1


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.metrics.registry import available

    # Grouped by target category (seed 000 §2.1), in the taxonomy's order; registration order within.
    from evalframe.metrics.base import TargetCategory

    order = {category: i for i, category in enumerate(TargetCategory)}
    entries = []
    for spec in available():
        example = {spec.at: _example_cutoff(spec.param(spec.at))} if spec.at_required else {}
        metric = spec.build(**example)
        params = ", ".join(
            f"{p.name}={_shown(p.default)}" + (f" {{{'|'.join(map(_shown, p.choices))}}}" if p.choices else "")
            for p in spec.params
        )
        aliases = f" (aliases: {', '.join(spec.aliases)})" if spec.aliases else ""
        entry = [f"{spec.name:<14} {metric.level.value:<6} {metric.unit:<6} {metric.target.value:<22} {spec.doc}{aliases}"]
        if params:
            entry.append(f"{'':<14} params: {params}")
        entries.append((order[metric.target], len(entries), metric.target.value, entry))
    lines, current = [], None
    for _, _, category, entry in sorted(entries):
        if category != current:
            lines += ([""] if lines else []) + [f"# {category}"]
            current = category
        lines += entry
    return "\n".join(lines), ExitCode.OK
