"""``evalframe pipelines list|show NAME|path NAME``: the bundled pipelines, to run or to copy and edit.

The bundled YAML files live in ``pipelines/`` of a checkout and in ``evalframe/_bundled/pipelines/``
of an installed wheel (:func:`evalframe._resources.bundled_dir`); these commands find them either way:

    evalframe pipelines list                                   # name and first description line
    evalframe pipelines show evidence_contract > my.yaml       # the YAML, to edit
    evalframe pipelines path evidence_contract                 # where the file is
"""

from __future__ import annotations

import argparse
from pathlib import Path

from evalframe._resources import bundled_pipelines
from evalframe.errors import ConfigError, ExitCode


def add_parser(commands) -> None:
    pipelines = commands.add_parser(
        "pipelines",
        help="list the bundled pipelines, print one's YAML (to copy and edit) or its path",
        description="The bundled pipelines: `list` them, `show NAME` prints the YAML (redirect it to a file "
                    "to edit a copy), `path NAME` prints where the file is.",
    )
    actions = pipelines.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="name and description of every bundled pipeline")
    for action, text in (("show", "print the pipeline's YAML"), ("path", "print the pipeline file's path")):
        parser = actions.add_parser(action, help=text)
        parser.add_argument("name", help="a bundled pipeline's name (see `evalframe pipelines list`)")


def bundled_pipeline(name: str) -> Path:
    """The path of the bundled pipeline ``name`` (``evidence_contract`` or ``evidence_contract.yaml``)."""
    known = bundled_pipelines()
    stem = Path(name).stem if name.endswith((".yaml", ".yml")) else name
    if stem not in known:
        from difflib import get_close_matches

        near = get_close_matches(stem, list(known), n=1)
        hint = f"; did you mean `{near[0]}`?" if near else ""
        raise ConfigError(f"no bundled pipeline `{name}`{hint} (bundled: {', '.join(known)})")
    return known[stem]


def _description(path: Path) -> str:
    """The first sentence of the pipeline's `description:`, at most 80 characters."""
    from evalframe.data.contracts import load_yaml

    spec = load_yaml(path.read_text()) or {}
    first = " ".join(str(spec.get("description") or "").split()).split(". ")[0].rstrip(".")
    return first if len(first) <= 80 else first[:79] + "…"


def main(args: argparse.Namespace) -> tuple[str, ExitCode]:
    if args.action == "list":
        known = bundled_pipelines()
        width = max(map(len, known), default=0)
        lines = [f"{name:<{width}}  {_description(path)}" for name, path in known.items()]
        lines += ["", "evalframe pipelines show NAME > my.yaml   # a copy to edit; run it with `evalframe run my.yaml`"]
        return "\n".join(lines), ExitCode.OK
    path = bundled_pipeline(args.name)
    if args.action == "path":
        return str(path), ExitCode.OK
    return path.read_text().rstrip("\n"), ExitCode.OK
