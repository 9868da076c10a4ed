"""``evalframe power RESULT_DIR --metric M --mde D [--paired-with SYSTEM]``: sample size and MDE.

Reads a result folder written by ``evalframe run`` (per-unit values in ``per_query.parquet`` /
``per_unit.parquet``); writes nothing. See :mod:`evalframe.stats.power` for the formulas.
"""

from __future__ import annotations

import argparse

from evalframe.errors import ExitCode

#: The table over a range of MDEs: the requested MDE times these factors.
MDE_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def add_parser(commands) -> None:
    power = commands.add_parser(
        "power",
        help="sample size for a metric change, and the smallest change detectable now",
        description=(
            "From the per-unit values of a result folder (`evalframe run --out DIR`): the units needed to "
            "detect a change of MDE in METRIC (two-sample formula, or the paired formula with --paired-with), "
            "the MDE at the current number of units, and a small table over a range of MDEs."
        ),
    )
    power.add_argument("result_dir", metavar="RESULT_DIR", help="folder written by `evalframe run`")
    power.add_argument("--metric", required=True, help="a per-unit metric of the result, e.g. ndcg@10")
    power.add_argument("--mde", required=True, type=float, help="change to detect (absolute; relative with --relative)")
    power.add_argument("--relative", action="store_true", help="--mde is relative to the baseline mean (0.05 = 5%%)")
    power.add_argument("--paired-with", metavar="SYSTEM", help="compare each system with SYSTEM on the same units (paired formula)")
    power.add_argument("--system", help="only this system (default: every system)")
    power.add_argument("--subset", help="the metric's subset, when it is computed on several")
    power.add_argument("--alpha", type=float, default=0.05, help="two-sided significance level (default 0.05)")
    power.add_argument("--power", type=float, default=0.8, help="power, 1 − β (default 0.8)")


def _format(table, args) -> str:
    lines = []
    for system in table.get_column("system").unique(maintain_order=True).to_list():
        rows = table.filter(system=system).to_dicts()
        first = rows[0]
        if first["design"] == "paired":
            head = (f"{first['metric']}: {system} vs {first['paired_with']} (paired, {first['n']:,} pairs): "
                    f"baseline mean {first['baseline']:.4f}, σ_d of differences {first['sigma']:.4f}")
            needed = "pairs needed"
        else:
            head = (f"{first['metric']}: {system} (two samples, {first['n']:,} units): mean {first['baseline']:.4f}, "
                    f"σ {first['sigma']:.4f}")
            needed = "units per group"
        lines += [head, f"  at α = {args.alpha}, power = {args.power}:"]
        at_n = first["mde_at_n"]
        if at_n is not None:
            lines.append(f"  detectable now (n = {first['n']:,}): {at_n:.4f} absolute"
                         + (f", {first['mde_at_n_relative']:.1%} relative" if first["mde_at_n_relative"] is not None else ""))
        lines.append(f"  {'MDE (absolute)':>15} {'relative':>9} {needed:>16}")
        for row in rows:
            relative = "–" if row["mde_relative"] is None else f"{row['mde_relative']:.1%}"
            required = "–" if row["n_required"] is None else f"{row['n_required']:,}"
            lines.append(f"  {row['mde']:>15.4f} {relative:>9} {required:>16}")
        lines.append("")
    return "\n".join(lines).rstrip()


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    from evalframe.results.reader import read_result
    from evalframe.stats.power import power_table

    data = read_result(args.result_dir).data()
    mdes = sorted({round(args.mde * factor, 12) for factor in MDE_FACTORS})
    table = power_table(data, metric=args.metric, mde=mdes, paired_with=args.paired_with, system=args.system,
                        alpha=args.alpha, power=args.power, relative=args.relative, subset=args.subset)
    return _format(table, args), ExitCode.OK
