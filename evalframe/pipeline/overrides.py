"""Overrides of a pipeline: overlay files (``--config``), ``--set dotted.key=value`` and flags.

Every override changes the pipeline's mapping *before* it is validated, so an override is
checked exactly as the file is (an unknown key is an error naming its path, a wrong type says
what was expected):

- an overlay file (``--config FILE``, e.g. ``data_samples/evidence_contract.sample.yaml``) is
  merged key by key into the pipeline: mappings merge, any other value (a list, a number)
  replaces the pipeline's;
- ``--set a.b.c=VALUE`` sets one key; ``VALUE`` is read as YAML (``[fold]`` a list, ``0.2`` a
  number); ``null`` removes the key (absent means null everywhere: ``--set across_folds=null``);
  missing mappings on the way are created; ``metrics[2].names`` indexes a list;
- ``--no-bootstrap`` is ``--set bootstrap=null``, ``--outputs a,b`` is ``--set outputs=[a,b]``;
- ``--baseline NAME`` names the system every comparison starts from: it is the compare block's
  baseline and the ablation's first row.

:func:`apply_overrides` returns the new mapping and what was overridden (for ``run.json``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from evalframe.data.contracts import load_yaml
from evalframe.errors import ConfigError

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"a.b=VALUE"`` → ``("a.b", VALUE read as YAML)``; a ConfigError without ``=``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: write `--set dotted.key=value` (e.g. `--set slices.domain=[domain]`)")
    try:
        parsed = load_yaml(value) if value.strip() else None
    except yaml.YAMLError as error:
        raise ConfigError(f"--set {text!r}: the value is not YAML: {str(error).splitlines()[0]}") from None
    return key.strip(), parsed


def _path(key: str) -> list[str | int]:
    """``metrics[2].names`` → ``["metrics", 2, "names"]``."""
    steps: list[str | int] = []
    for part in key.split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            raise ConfigError(f"--set {key}: `{part}` is not a key (write `a.b.c` or `a[0].b`)")
        steps.append(match.group(1))
        steps += [int(index) for index in re.findall(r"\[(\d+)\]", match.group(2))]
    return steps


def set_value(spec: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` (a dotted path) of ``spec`` to ``value`` in place (module docstring)."""
    steps = _path(key)
    node: Any = spec
    where = ""
    for step, following in zip(steps, [*steps[1:], None]):
        last = following is None
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                size = len(node) if isinstance(node, list) else 0
                raise ConfigError(f"--set {key}: `{where}` has no item [{step}] ({size} items)")
            if last:
                node[step] = value
            else:
                node = node[step]
            where += f"[{step}]"
            continue
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: `{where}` is not a mapping, so it has no key `{step}`")
        if last and value is None:
            node.pop(step, None)  # `null` removes the key: absent is what null means everywhere
        elif last:
            node[step] = value
        else:
            if not isinstance(node.get(step), (dict, list)):
                node[step] = [] if isinstance(following, int) else {}
            node = node[step]
        where = f"{where}.{step}" if where else step


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` merged into ``base``: mappings key by key, anything else replaced."""
    merged = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def read_overlay(path: str | Path) -> dict[str, Any]:
    """An overlay file: a mapping of pipeline keys (``version`` may be omitted)."""
    path = Path(path)
    try:
        overlay = load_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: cannot read the overlay: {str(error).splitlines()[0]}") from None
    if not isinstance(overlay, Mapping):
        raise ConfigError(f"{path}: an overlay is a mapping of pipeline keys (like the pipeline file itself)")
    return dict(overlay)


def apply_overrides(
    spec: Mapping[str, Any],
    *,
    configs: Sequence[str | Path] = (),
    set: Mapping[str, Any] | Sequence[str] | None = None,  # noqa: A002 (the CLI's and the API's word)
    bootstrap: bool | None = None,
    outputs: Sequence[str] | None = None,
    baseline: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pipeline mapping with the overrides applied (module docstring), and a record of them.

    ``set`` is a mapping of dotted keys to values (Python) or ``key=value`` texts (CLI);
    ``bootstrap=False`` turns the bootstrap off; ``outputs`` replaces the outputs.
    """
    result = copy.deepcopy(dict(spec))
    record: dict[str, Any] = {}
    for path in configs:
        result = merge(result, read_overlay(path))
        record.setdefault("config", []).append(str(path))
    assignments = [parse_assignment(text) for text in set] if isinstance(set, (list, tuple)) else list((set or {}).items())
    for key, value in assignments:
        set_value(result, key, copy.deepcopy(value))  # later keys must not change the caller's value
        record.setdefault("set", {})[key] = value
    if bootstrap is False:
        result["bootstrap"] = None
        record["bootstrap"] = False
    if outputs is not None:
        result["outputs"] = list(outputs)
        record["outputs"] = list(outputs)
    if baseline is not None:
        if isinstance(result.get("compare"), dict):
            result["compare"]["baseline"] = baseline
        ablation = result.get("ablation")
        if isinstance(ablation, dict) and isinstance(ablation.get("order"), list):
            ablation["order"] = [baseline, *(name for name in ablation["order"] if name != baseline)]
        record["baseline"] = baseline
    return result, record
