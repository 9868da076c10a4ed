"""Declarative formats of configuration files, and a checker that reports every problem at once.

A *format* is a YAML file in ``schemas/`` (``schemas/pipeline.yaml``) that describes, as data,
what a configuration document may contain: its top level holds ``version: 1`` (of this
vocabulary), ``format`` (the file's name), ``description`` and ``document``, the *node* of the
whole document. A node says what one value may be:

``type``
    ``mapping``, ``list``, ``string``, ``int``, ``float``, ``number`` (int or float), ``bool``
    or ``scalar`` (string, number or bool). YAML decides types before we look: unquoted
    ``true``/``yes``/``on`` are bools, ``1`` is an int, ``1.0`` a float, ``1e3`` a string
    (PyYAML wants ``1.0e3``), ``2024-01-01`` a date. A bool is never an int or a number; an
    int is not a ``float`` (use ``number`` to accept both).
``description``
    What the value means. Every node of a bundled format has one, so the file is the format's
    reference documentation.
``keys``
    (mapping) Its fixed keys, each a node; any other key is an error.
``values``
    (mapping) The node of every value of a mapping whose keys are free names (strings).
``items``
    (list) The node of every item.
``required``
    (a node under ``keys``) The key must be given.
``nullable``
    ``null`` is accepted as well.
``allowed``
    The accepted values (an enumeration).
``min_items``
    (list) The fewest items.
``or``
    Another node the value may match instead, when its type is not ``type`` (a slice is a
    list of keys, or a mapping with its keys and what it ``requires``).

:func:`check` walks a loaded document (plain dicts, lists and scalars) and returns a
:class:`~evalframe.errors.Problem` for every unknown key (with "did you mean" when a known key
is close), missing required key, value of the wrong type, value outside ``allowed`` and list
that is too short. A problem's ``location`` is the key path of the value, with 0-based list
indices as Python and JSON read them: ``metrics[1].names`` is the second metric group's
``names``; names that are not plain words are quoted: ``input.columns["my column"]``. A
problem about the document itself has no location. When the document's node declares a
``version`` key, that key is checked first: a missing or unsupported version is the only
problem reported, since the rest of the format may not apply to it.

The checker knows nothing about pipelines; a new key is a change to the format file only.

>>> schema = {"type": "mapping", "keys": {
...     "version": {"type": "int", "required": True, "allowed": [1]},
...     "outputs": {"type": "list", "items": {"type": "string", "allowed": ["summary.csv", "run.json"]}},
...     "slices": {"type": "mapping", "values": {"type": "list", "items": {"type": "string"}}}}}
>>> spec = {"version": 1, "outputs": ["summary.cvs"], "slices": {"fold": "fold"}, "ouptuts": []}
>>> for problem in check(spec, schema):
...     print(problem.render())
outputs[0]: is not one of `summary.csv`, `run.json`; did you mean `summary.csv`? (value: 'summary.cvs')
slices.fold: expected a list of strings, found a string; write `[fold]` for a list of one (value: 'fold')
ouptuts: unknown key; did you mean `outputs`?
>>> check({"version": 1, "outputs": ["run.json"]}, schema)
[]
>>> [problem.render() for problem in check({"version": 2, "outputs": 7}, schema)]
['version: unsupported document version; this evalframe reads version 1; nothing else was checked (value: 2)']
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

import yaml

from evalframe._resources import bundled_dir
from evalframe.data.contracts import load_yaml
from evalframe.errors import NO_VALUE, Problem

#: Node types and the test a value of each passes. ``bool`` is a subclass of ``int`` in
#: Python; a YAML ``true`` is still never a number here.
TYPES: dict[str, Any] = {
    "mapping": lambda value: isinstance(value, Mapping),
    "list": lambda value: isinstance(value, (list, tuple)),
    "string": lambda value: isinstance(value, str),
    "int": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "float": lambda value: isinstance(value, float),
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "bool": lambda value: isinstance(value, bool),
    "scalar": lambda value: isinstance(value, (str, int, float)),
}
#: The words a node may use.
NODE_WORDS = ("type", "description", "keys", "values", "items", "required", "nullable", "allowed", "min_items", "or")
#: The words at the top of a format file.
FILE_WORDS = ("version", "format", "description", "document")
#: Version of the format-file vocabulary this module reads.
FORMAT_FILE_VERSION = 1

_SCALAR_TYPES = ("string", "int", "float", "number", "bool", "scalar")
_ONE = {
    "mapping": "a mapping", "list": "a list", "string": "a string", "int": "an integer",
    "float": "a float", "number": "a number", "bool": "a boolean",
    "scalar": "a scalar (string, number or boolean)",
}
_MANY = {
    "mapping": "mappings", "list": "lists", "string": "strings", "int": "integers",
    "float": "floats", "number": "numbers", "bool": "booleans",
    "scalar": "scalars (strings, numbers or booleans)",
}
#: What YAML 1.1 (PyYAML) reads as a boolean when unquoted, in any of three cases.
_BOOL_SPELLINGS = {True: ("yes", "on", "true"), False: ("no", "off", "false")}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")
_INT_TEXT = re.compile(r"[-+]?\d+")
_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_EXPONENT_WITHOUT_DOT = re.compile(r"[-+]?\d+[eE][-+]?\d+")


@dataclass(frozen=True)
class Format:
    """A loaded format: its name, description and the (read-only) node of the whole document."""

    name: str
    description: str
    document: Mapping[str, Any]
    path: str | None = None


def load_format(name: str = "pipeline") -> Format:
    """Load the bundled format ``schemas/<name>.yaml`` (once per process).

    The file is checked against the node vocabulary first; a broken format file is a bug in
    evalframe, not in the user's configuration, so it raises :class:`RuntimeError` naming it.
    """
    return _load_format(name)


@cache  # keyed on the name alone: load_format() and load_format("pipeline") share one entry
def _load_format(name: str) -> Format:
    path = bundled_dir("schemas") / f"{name}.yaml"
    try:
        raw = load_yaml(path.read_text())
    except (OSError, UnicodeError, yaml.YAMLError) as error:
        msg = f"{path}: cannot read the `{name}` format: {error}"
        raise RuntimeError(msg) from error
    errors = _format_file_errors(raw, name)
    if errors:
        msg = f"{path}: broken `{name}` format (a bug in evalframe):\n" + "\n".join(f"  {e}" for e in errors)
        raise RuntimeError(msg)
    return Format(name=name, description=raw["description"], document=_freeze(raw["document"]), path=str(path))


def check(spec: Any, schema: Format | Mapping[str, Any]) -> list[Problem]:
    """Every problem of the document ``spec`` against ``schema``, in document order; ``[]`` if none.

    ``schema`` is a :class:`Format` or a bare node (a mapping in the node vocabulary), which
    lets a caller check part of a document against part of a format. A bare node that breaks
    the vocabulary raises :class:`RuntimeError`. ``spec`` is never modified.
    """
    if isinstance(schema, Format):
        name, root = schema.name, schema.document
    else:
        errors = _node_errors(schema, "document", under_keys=False, need_description=False)
        if errors:
            msg = "broken schema node:\n" + "\n".join(f"  {e}" for e in errors)
            raise RuntimeError(msg)
        name, root = None, schema
    if root["type"] == "mapping" and not isinstance(spec, Mapping):
        what = f"a {name}" if name else "the document"
        msg = f"{what} must be a mapping of keys, found {_found(spec)}"
        if spec is None:
            msg += " (is the file empty?)"
        return [Problem(None, None, NO_VALUE if spec is None else spec, msg)]
    if root["type"] == "mapping" and "version" in root.get("keys", {}):
        version_problem = _check_version(spec, root["keys"]["version"], name)
        if version_problem is not None:
            return [version_problem]
        return _check_node(spec, root, "", skip=("version",))
    return _check_node(spec, root, "")


# --- walking a document ----------------------------------------------------------------------


def _check_version(spec: Mapping[str, Any], node: Mapping[str, Any], name: str | None) -> Problem | None:
    """The problem with the document's ``version``, if any; its message says nothing else was checked."""
    allowed = node.get("allowed")
    reads = f"this evalframe reads version {_or_list(allowed)}" if allowed else None
    if "version" not in spec:
        if not node.get("required"):
            return None
        msg = "required key is missing" + (f"; {reads}" if reads else "")
        return Problem("version", None, NO_VALUE, f"{msg}; nothing else was checked")
    value = spec["version"]
    type_problems = _check_node(value, {key: word for key, word in node.items() if key != "allowed"}, "version")
    if type_problems:
        return Problem("version", None, value, f"{type_problems[0].message}; nothing else was checked")
    if allowed is not None and not _is_allowed(value, allowed):
        return Problem("version", None, value, f"unsupported {name or 'document'} version; {reads}; nothing else was checked")
    return None


def _check_node(value: Any, node: Mapping[str, Any], path: str, skip: tuple[str, ...] = ()) -> list[Problem]:
    kind = node["type"]
    if value is None:
        return [] if node.get("nullable") else [_type_problem(value, node, path)]
    if not TYPES[kind](value):
        if "or" in node and TYPES[node["or"]["type"]](value):
            return _check_node(value, node["or"], path)
        return [_type_problem(value, node, path)]
    if "allowed" in node and not _is_allowed(value, node["allowed"]):
        return [_allowed_problem(value, node["allowed"], path)]
    if kind == "list":
        return _check_list(value, node, path)
    if kind == "mapping":
        return _check_mapping(value, node, path, skip)
    return []


def _check_list(value: list | tuple, node: Mapping[str, Any], path: str) -> list[Problem]:
    problems = []
    fewest = node.get("min_items", 0)
    if len(value) < fewest:
        needed = f"{fewest} item" + ("" if fewest == 1 else "s")
        msg = f"needs at least {needed}, found {len(value) or 'none'}"
        problems.append(Problem(path or None, None, list(value), msg))
    for index, item in enumerate(value):
        problems += _check_node(item, node["items"], f"{path}[{index}]")
    return problems


def _check_mapping(value: Mapping, node: Mapping[str, Any], path: str, skip: tuple[str, ...]) -> list[Problem]:
    problems = []
    if "values" in node:
        for key, item in value.items():
            where = _join(path, key)
            if isinstance(key, str):
                problems += _check_node(item, node["values"], where)
            else:
                msg = f"a name must be a string, found {_found(key)}; {_quote_hint(key, 'name')}"
                problems.append(Problem(where, None, NO_VALUE, msg))
        return problems
    known = node.get("keys", {})
    for key, item in value.items():
        if key in skip:
            continue
        where = _join(path, key)
        if isinstance(key, str) and key in known:
            problems += _check_node(item, known[key], where)
        else:
            problems.append(Problem(where, None, NO_VALUE, _unknown_key_message(key, known)))
    for key, child in known.items():
        if child.get("required") and key not in value and key not in skip:
            problems.append(Problem(_join(path, key), None, NO_VALUE, "required key is missing"))
    return problems


# --- messages --------------------------------------------------------------------------------


def _type_problem(value: Any, node: Mapping[str, Any], path: str) -> Problem:
    msg = f"expected {_expected(node)}, found {_found(value)}"
    hint = _type_hint(value, node)
    if hint:
        msg += f"; {hint}"
    return Problem(path or None, None, NO_VALUE if value is None else value, msg)


def _type_hint(value: Any, node: Mapping[str, Any]) -> str | None:
    """A fix for the YAML spellings that give the wrong type."""
    kind = node["type"]
    if value is None and kind == "list":
        return "write `[]` for an empty list"
    if value is None and kind == "mapping":
        return "write `{}` for an empty mapping"
    if isinstance(value, bool) and kind == "string":
        return _quote_hint(value, "value")
    if isinstance(value, bool) and kind in ("int", "float", "number"):
        return "a boolean is not a number"
    if isinstance(value, (int, float, dt.date)) and kind == "string":
        return _quote_hint(value, "value")
    if isinstance(value, dt.date) and kind == "scalar":
        return _quote_hint(value, "value")
    if isinstance(value, int) and kind == "float":
        return f"write `{value}.0` for a float"
    if isinstance(value, str) and kind == "int" and _INT_TEXT.fullmatch(value.strip()):
        return "remove the quotes"
    if isinstance(value, str) and kind in ("float", "number") and _NUMBER_TEXT.fullmatch(value.strip()):
        if _EXPONENT_WITHOUT_DOT.fullmatch(value.strip()):
            mantissa, exponent = re.split("[eE]", value.strip())
            return f"YAML reads `{value}` as text; write `{mantissa}.0e{exponent}`"
        return "remove the quotes"
    if isinstance(value, str) and kind == "list" and node["items"]["type"] in ("string", "scalar"):
        return f"write `[{value}]` for a list of one"
    return None


def _quote_hint(value: Any, what: str) -> str:
    if value is None:
        return f"YAML reads an unquoted null, ~ or nothing as null; quote the {what}"
    if isinstance(value, bool):
        return f"YAML reads unquoted yes/no/on/off/true/false as booleans; quote the {what}"
    if isinstance(value, dt.date):
        return f"YAML reads an unquoted date as a date; quote the {what}"
    return f"quote the {what} to make it a string"


def _expected(node: Mapping[str, Any], *, many: bool = False) -> str:
    kind = node["type"]
    text = (_MANY if many else _ONE)[kind]
    if kind == "list":
        text += " of " + _expected(node["items"], many=True)
    elif kind == "mapping" and "values" in node:
        text += " of names to " + _expected(node["values"], many=True)
    if "or" in node:
        text += " or " + _expected(node["or"], many=many)
    if node.get("nullable"):
        text += " or null"
    return text


def _found(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean (`{json.dumps(value)}`)"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, (list, tuple)):
        return "a list" if value else "an empty list"
    if isinstance(value, Mapping):
        return "a mapping" if value else "an empty mapping"
    if isinstance(value, dt.datetime):
        return "a timestamp"
    if isinstance(value, dt.date):
        return "a date"
    if isinstance(value, bytes):
        return "binary data"
    return f"a value of type `{type(value).__name__}`"


def _unknown_key_message(key: Any, known: Mapping[str, Any]) -> str:
    msg = "unknown key"
    if key is None or isinstance(key, (bool, dt.date)):
        msg += f"; {_quote_hint(key, 'key')}"
    close = _closest(_text(key), list(known))
    if isinstance(key, bool):
        # `on:` written for a key named `on` arrives as True.
        close = next((word for word in known if word.lower() in _BOOL_SPELLINGS[key]), close)
    if close is not None:
        return f"{msg}; did you mean `{close}`?"
    if not known:
        return f"{msg}; this mapping takes no keys"
    return f"{msg}; known keys: {_listing(known)}"


def _allowed_problem(value: Any, allowed: tuple, path: str) -> Problem:
    msg = f"is not one of {_listing(allowed)}"
    close = _closest(_text(value), [_text(choice) for choice in allowed])
    if close is not None:
        msg += f"; did you mean `{close}`?"
    return Problem(path or None, None, value, msg)


def _closest(word: str, choices: list[str]) -> str | None:
    """The choice closest to ``word`` (case-insensitively), or ``None`` when none is close."""
    by_lower = {choice.lower(): choice for choice in choices}
    matches = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def _is_allowed(value: Any, allowed: tuple) -> bool:
    # `True == 1` in Python; an enumeration of ints does not admit a YAML `true`.
    return any(isinstance(choice, bool) == isinstance(value, bool) and choice == value for choice in allowed)


def _text(value: Any) -> str:
    """``value`` as YAML would print a scalar: ``true``, ``null``, ``1``, ``summary.csv``."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _listing(values: Any) -> str:
    return ", ".join(f"`{_text(value)}`" for value in values)


def _or_list(values: tuple) -> str:
    texts = [_text(value) for value in values]
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + f" or {texts[-1]}"


def _join(path: str, key: Any) -> str:
    """The key path of ``key`` inside ``path``: ``metrics[1].names``, ``input.columns["my col"]``."""
    text = _text(key)
    if _PLAIN_NAME.fullmatch(text):
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text, ensure_ascii=False)}]"


# --- the format files themselves -------------------------------------------------------------


def _format_file_errors(raw: Any, name: str) -> list[str]:
    if not isinstance(raw, Mapping):
        return [f"the file must be a mapping, found {_found(raw)}"]
    errors = [f"unknown top-level word `{_text(word)}`" for word in raw if word not in FILE_WORDS]
    if raw.get("version") != FORMAT_FILE_VERSION or isinstance(raw.get("version"), bool):
        errors.append(f"`version` must be {FORMAT_FILE_VERSION}, found {raw.get('version')!r}")
    if raw.get("format") != name:
        errors.append(f"`format` must be the file's name `{name}`, found {raw.get('format')!r}")
    if not isinstance(raw.get("description"), str):
        errors.append("`description` must be a string")
    if "document" not in raw:
        errors.append("`document` (the node of the whole document) is missing")
    else:
        errors += _node_errors(raw["document"], "document", under_keys=False, need_description=True)
    return errors


def _node_errors(node: Any, where: str, *, under_keys: bool, need_description: bool) -> list[str]:
    """What is wrong with ``node`` as a node of the vocabulary (all of it, recursively)."""
    if not isinstance(node, Mapping):
        return [f"{where}: a node must be a mapping, found {_found(node)}"]
    errors = [f"{where}: unknown word `{_text(word)}`" for word in node if word not in NODE_WORDS]
    kind = node.get("type")
    if kind not in TYPES:
        errors.append(f"{where}: `type` must be one of {_listing(TYPES)}, found {kind!r}")
        return errors
    if need_description and not (isinstance(node.get("description"), str) and node["description"].strip()):
        errors.append(f"{where}: `description` is missing")
    elif "description" in node and not isinstance(node["description"], str):
        errors.append(f"{where}: `description` must be a string")
    for word in ("required", "nullable"):
        if word in node and not isinstance(node[word], bool):
            errors.append(f"{where}: `{word}` must be true or false")
    if "required" in node and not under_keys:
        errors.append(f"{where}: `required` only applies to a node under `keys`")
    for word, owner in (("keys", "mapping"), ("values", "mapping"), ("items", "list"), ("min_items", "list")):
        if word in node and kind != owner:
            errors.append(f"{where}: `{word}` only applies to a {owner}")
    if kind == "mapping":
        if ("keys" in node) == ("values" in node):
            errors.append(f"{where}: a mapping has either `keys` (fixed keys) or `values` (free names)")
        if "keys" in node:
            if isinstance(node["keys"], Mapping):
                for key, child in node["keys"].items():
                    if not isinstance(key, str):
                        errors.append(f"{where}.keys: key {key!r} is not a string")
                    errors += _node_errors(child, _join(where, key), under_keys=True, need_description=need_description)
            else:
                errors.append(f"{where}: `keys` must be a mapping of key names to nodes")
        if "values" in node:
            errors += _node_errors(node["values"], f"{where}.values", under_keys=False, need_description=need_description)
    if kind == "list":
        if "items" in node:
            errors += _node_errors(node["items"], f"{where}.items", under_keys=False, need_description=need_description)
        else:
            errors.append(f"{where}: a list needs `items`")
        fewest = node.get("min_items", 0)
        if not (isinstance(fewest, int) and not isinstance(fewest, bool) and fewest >= 0):
            errors.append(f"{where}: `min_items` must be a non-negative integer")
    if "or" in node:
        if node["or"].get("type") == kind if isinstance(node["or"], Mapping) else False:
            errors.append(f"{where}: `or` must name another type than `type`")
        errors += _node_errors(node["or"], f"{where}.or", under_keys=False, need_description=need_description)
    if "allowed" in node:
        allowed = node["allowed"]
        if kind not in _SCALAR_TYPES:
            errors.append(f"{where}: `allowed` only applies to a scalar type")
        elif not isinstance(allowed, (list, tuple)) or not allowed:
            errors.append(f"{where}: `allowed` must be a non-empty list")
        else:
            errors += [
                f"{where}: allowed value {choice!r} is not {_ONE[kind]}" for choice in allowed if not TYPES[kind](choice)
            ]
    return errors


def _freeze(value: Any) -> Any:
    """A read-only copy: the cached format is shared by every caller."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value
