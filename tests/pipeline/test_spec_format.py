"""The pipeline format (schemas/pipeline.yaml) and its checker (evalframe.pipeline.format)."""

from __future__ import annotations

import copy
import datetime as dt
import doctest
import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from evalframe.pipeline import format as spec_format
from evalframe.data.contracts import load_yaml
from evalframe.errors import NO_VALUE, Problem
from evalframe.pipeline.format import FILE_WORDS, NODE_WORDS, TYPES, Format, check, load_format

REPO_ROOT = Path(__file__).resolve().parents[2]
PIPELINE_FORMAT = REPO_ROOT / "schemas" / "pipeline.yaml"
EVIDENCE = REPO_ROOT / "pipelines" / "evidence_contract.yaml"


def rendered(spec, schema=None) -> list[str]:
    return [problem.render() for problem in check(spec, schema or load_format())]


def evidence_spec() -> dict:
    return load_yaml(EVIDENCE.read_text())


# --- the bundled pipelines -----------------------------------------------------------------------


def bundled_pipelines() -> list[Path]:
    paths = sorted((REPO_ROOT / "pipelines").glob("*.yaml"))
    assert paths, "no bundled pipeline found"
    return paths


@pytest.mark.parametrize("path", bundled_pipelines(), ids=lambda path: path.stem)
def test_bundled_pipelines_conform(path):
    assert check(load_yaml(path.read_text()), load_format()) == []


def test_evidence_pipeline_is_checked_deeply():
    # Guards against a format so loose that everything passes: one change deep inside fails.
    spec = evidence_spec()
    spec["metrics"][1]["names"][3] = 10
    assert rendered(spec) == ["metrics[1].names[3]: expected a string, found an integer; quote the value to make it a string (value: 10)"]


# --- every problem at once ------------------------------------------------------------------------

MULTI_ERROR_SPEC = """
version: 1
name: broken
input: {format: csv}
policies: {empty: skp}
metrics:
  - subset: all_queries
    names: [auroc]
  - subest: has_evidence
    names: [mrr]
slices: {overall: [], fold: fold}
outputs: [summary.xlsx]
bootstrp: {n: 1000}
"""


def test_all_problems_reported_with_key_paths_and_hints():
    assert rendered(load_yaml(MULTI_ERROR_SPEC)) == [
        "input.format: is not one of `per_query`, `retrieval_results`, `legal`, `rag`, `recommendations`, `scores`, `embeddings` (value: 'csv')",
        "policies.empty: is not one of `skip`, `zero`; did you mean `skip`? (value: 'skp')",
        "metrics[1].subest: unknown key; did you mean `subset`?",
        "slices.fold: expected a list of strings or a mapping, found a string; write `[fold]` for a list of one (value: 'fold')",
        "outputs[0]: is not one of `per_query.parquet`, `per_unit.parquet`, `summary.parquet`, `summary.csv`, "
        "`summary.md`, `run.json`, `replicates.parquet`, `curves.parquet`, `report.md`, `report.html`, `report.tex`, "
        "`report_tables.csv`, `plots`; did you mean `summary.csv`? (value: 'summary.xlsx')",
        "bootstrp: unknown key; did you mean `bootstrap`?",
    ]


def test_problem_fields():
    problems = check(load_yaml(MULTI_ERROR_SPEC), load_format())
    by_location = {problem.location: problem for problem in problems}
    assert by_location["policies.empty"] == Problem(
        "policies.empty", None, "skp", "is not one of `skip`, `zero`; did you mean `skip`?"
    )
    assert by_location["metrics[1].subest"].value is NO_VALUE
    assert by_location["slices.fold"].value == "fold"
    assert all(problem.column is None for problem in problems)


def test_missing_required_keys_at_every_depth():
    spec = {"version": 1, "metrics": [{"subset": "all_queries"}, {"names": ["mrr"]}, {}]}
    assert rendered(spec) == ["metrics[0].names: required key is missing", "metrics[2].names: required key is missing"]
    assert rendered({"version": 1}) == ["metrics: required key is missing"]


def test_empty_lists_where_items_are_needed():
    spec = {"version": 1, "metrics": [{"names": []}], "units": {"post": []}, "slices": {"overall": []}}
    assert rendered(spec) == [
        "metrics[0].names: needs at least 1 item, found none (value: [])",
        "units.post: needs at least 1 item, found none (value: [])",
    ]
    assert rendered({"version": 1, "metrics": []}) == ["metrics: needs at least 1 item, found none (value: [])"]


def test_nullable_weight():
    assert rendered({**evidence_spec(), "weight": None}) == []
    assert rendered({**evidence_spec(), "weight": "traffic"}) == []
    assert rendered({**evidence_spec(), "across_folds": None}) == [
        "across_folds: expected a string, found null",
    ]


def test_free_names_must_be_strings():
    spec = {**evidence_spec(), "slices": {"overall": [], 2024: ["fold"]}}
    assert rendered(spec) == ["slices.2024: a name must be a string, found an integer; quote the name to make it a string"]


def test_key_paths_quote_names_that_are_not_plain_words():
    spec = {**evidence_spec(), "input": {"columns": {"prob": "p", "label": 1, "my col": ["x"]}}}
    assert [problem.location for problem in check(spec, load_format())] == [
        "input.columns.label",
        'input.columns["my col"]',
    ]


def test_unknown_key_hints():
    spec = {**evidence_spec(), "Slices": {}, "across-folds": "fold", "policies": {"missng": "zero"}}
    assert sorted(rendered(spec)) == sorted([
        "Slices: unknown key; did you mean `slices`?",
        "across-folds: unknown key; did you mean `across_folds`?",
        "policies.missng: unknown key; did you mean `missing`?",
    ])
    # Nothing close: the known keys of that mapping, in the format's order.
    assert rendered({**evidence_spec(), "policies": {"zzz": 1}}) == [
        "policies.zzz: unknown key; known keys: `empty`, `missing`"
    ]


# --- the document and its version -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "a pipeline must be a mapping of keys, found null (is the file empty?)"),
        ("- version: 1", "a pipeline must be a mapping of keys, found a list (value: [{'version': 1}])"),
        ("pipeline", "a pipeline must be a mapping of keys, found a string (value: 'pipeline')"),
    ],
)
def test_document_must_be_a_mapping(text, expected):
    assert rendered(load_yaml(text)) == [expected]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2", "version: unsupported pipeline version; this evalframe reads version 1; nothing else was checked (value: 2)"),
        ("'1'", "version: expected an integer, found a string; remove the quotes; nothing else was checked (value: '1')"),
        ("true", "version: expected an integer, found a boolean (`true`); a boolean is not a number; "
                 "nothing else was checked (value: True)"),
        ("1.0", "version: expected an integer, found a float; nothing else was checked (value: 1.0)"),
    ],
)
def test_wrong_version_is_the_only_problem(version, expected):
    # The rest of this document is full of errors, but against a format that may not apply.
    text = f"version: {version}\nmetrics: 3\nbootstrp: 1\n"
    assert rendered(load_yaml(text)) == [expected]


def test_missing_version_is_the_only_problem():
    assert rendered({"metrics": 3, "name": ["x"]}) == [
        "version: required key is missing; this evalframe reads version 1; nothing else was checked"
    ]


def test_version_is_not_reported_as_unknown_or_twice():
    assert rendered({"version": 1, "metrics": [{"names": ["mrr"]}]}) == []


# --- node types -----------------------------------------------------------------------------------


def scalar_node(kind: str, **words) -> dict:
    return {"type": kind, **words}


ACCEPTED = {
    "string": ["", "fold", "1"],
    "int": [0, -3, 10**20],
    "float": [0.5, 1.0, -0.0, math.inf, math.nan],
    "number": [0, 7, 0.5, math.inf],
    "bool": [True, False],
    "scalar": ["x", 0, 0.5, False],
    "mapping": [{}, {"a": 1}],
    "list": [[], [1], (1, 2)],
}
REJECTED = {
    "string": [(1, "an integer"), (True, "a boolean (`true`)"), (["a"], "a list"), ({}, "an empty mapping"),
               (dt.date(2024, 1, 1), "a date")],
    "int": [(True, "a boolean (`true`)"), (1.0, "a float"), ("1", "a string"), ([1], "a list")],
    "float": [(1, "an integer"), (False, "a boolean (`false`)"), ("0.5", "a string")],
    "number": [(True, "a boolean (`true`)"), ("0.5", "a string"), ([], "an empty list")],
    "bool": [(1, "an integer"), (0, "an integer"), ("yes", "a string"), ("true", "a string")],
    "scalar": [([], "an empty list"), ({"a": 1}, "a mapping"), (dt.datetime(2024, 1, 1, 12), "a timestamp"),
               (b"\x00", "binary data")],
    "mapping": [([], "an empty list"), ("a: 1", "a string"), (1, "an integer")],
    "list": [("a", "a string"), ({}, "an empty mapping"), (1, "an integer")],
}
EXPECTED_WORDS = {
    "string": "a string", "int": "an integer", "float": "a float", "number": "a number", "bool": "a boolean",
    "scalar": "a scalar (string, number or boolean)", "mapping": "a mapping of names to integers",
    "list": "a list of integers",
}


def node_of(kind: str, **words) -> dict:
    if kind == "mapping":
        return {"type": "mapping", "values": {"type": "int"}, **words}
    if kind == "list":
        return {"type": "list", "items": {"type": "int"}, **words}
    return {"type": kind, **words}


def test_every_type_has_cases():
    assert set(ACCEPTED) == set(REJECTED) == set(EXPECTED_WORDS) == set(TYPES)


@pytest.mark.parametrize(("kind", "value"), [(kind, value) for kind, values in ACCEPTED.items() for value in values])
def test_type_accepts(kind, value):
    assert check({"key": value}, {"type": "mapping", "keys": {"key": node_of(kind)}}) == []


@pytest.mark.parametrize(
    ("kind", "value", "found"), [(kind, value, found) for kind, cases in REJECTED.items() for value, found in cases]
)
def test_type_rejects(kind, value, found):
    problems = check({"key": value}, {"type": "mapping", "keys": {"key": node_of(kind)}})
    assert len(problems) == 1
    assert problems[0].location == "key"
    assert problems[0].value == value
    assert problems[0].message.startswith(f"expected {EXPECTED_WORDS[kind]}, found {found}")


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_null_only_when_nullable(kind):
    schema = {"type": "mapping", "keys": {"key": node_of(kind)}}
    [problem] = check({"key": None}, schema)
    assert problem.message.startswith(f"expected {EXPECTED_WORDS[kind]}, found null")
    assert problem.value is NO_VALUE
    nullable = {"type": "mapping", "keys": {"key": node_of(kind, nullable=True)}}
    assert check({"key": None}, nullable) == []
    [problem] = check({"key": object()}, nullable)
    assert f"expected {EXPECTED_WORDS[kind]} or null, found a value of type `object`" in problem.message


def test_nested_expectations_are_worded():
    node = {"type": "mapping", "values": {"type": "list", "items": {"type": "string"}}}
    assert rendered({"x": 1}, {"type": "mapping", "keys": {"x": node}}) == [
        "x: expected a mapping of names to lists of strings, found an integer (value: 1)"
    ]


@pytest.mark.parametrize(
    ("yaml_text", "node", "expected"),
    [
        # YAML 1.1: unquoted yes/no/on/off are booleans.
        ("key: yes", {"type": "string"},
         "key: expected a string, found a boolean (`true`); YAML reads unquoted yes/no/on/off/true/false as "
         "booleans; quote the value (value: True)"),
        ("key: on", {"type": "int"},
         "key: expected an integer, found a boolean (`true`); a boolean is not a number (value: True)"),
        # PyYAML reads an exponent without a dot as text.
        ("key: 1e-3", {"type": "number"},
         "key: expected a number, found a string; YAML reads `1e-3` as text; write `1.0e-3` (value: '1e-3')"),
        ("key: '0.5'", {"type": "float"}, "key: expected a float, found a string; remove the quotes (value: '0.5')"),
        ("key: '3'", {"type": "int"}, "key: expected an integer, found a string; remove the quotes (value: '3')"),
        # Removing the quotes would not give an integer: no hint.
        ("key: '0.5'", {"type": "int"}, "key: expected an integer, found a string (value: '0.5')"),
        ("key: 1e3", {"type": "int"}, "key: expected an integer, found a string (value: '1e3')"),
        ("key: 1", {"type": "float"}, "key: expected a float, found an integer; write `1.0` for a float (value: 1)"),
        ("key: 2024-01-01", {"type": "scalar"},
         "key: expected a scalar (string, number or boolean), found a date; YAML reads an unquoted date as a date; "
         "quote the value (value: datetime.date(2024, 1, 1))"),
        ("key:", {"type": "list", "items": {"type": "string"}},
         "key: expected a list of strings, found null; write `[]` for an empty list"),
        ("key:", {"type": "mapping", "values": {"type": "string"}},
         "key: expected a mapping of names to strings, found null; write `{}` for an empty mapping"),
    ],
)
def test_yaml_gotchas_get_a_hint(yaml_text, node, expected):
    assert rendered(load_yaml(yaml_text), {"type": "mapping", "keys": {"key": node}}) == [expected]


def test_boolean_keys_get_a_hint():
    schema = {"type": "mapping", "keys": {"on": {"type": "string"}, "name": {"type": "string"}}}
    assert rendered(load_yaml("on: push\nNo: 1"), schema) == [
        "true: unknown key; YAML reads unquoted yes/no/on/off/true/false as booleans; quote the key; "
        "did you mean `on`?",
        "false: unknown key; YAML reads unquoted yes/no/on/off/true/false as booleans; quote the key; "
        "known keys: `on`, `name`",
    ]
    assert check(load_yaml("'on': push"), schema) == []


def test_allowed_values():
    schema = {"type": "mapping", "keys": {
        "level": {"type": "int", "allowed": [1, 2]},
        "mode": {"type": "string", "allowed": ["skip", "zero"]},
        "modes": {"type": "list", "items": {"type": "string", "allowed": ["skip", "zero"]}},
    }}
    assert check({"level": 2, "mode": "zero", "modes": ["skip", "zero"]}, schema) == []
    assert rendered({"level": 3, "mode": "Zero", "modes": ["skip", "none", "Skip"]}, schema) == [
        "level: is not one of `1`, `2` (value: 3)",
        "mode: is not one of `skip`, `zero`; did you mean `zero`? (value: 'Zero')",
        "modes[1]: is not one of `skip`, `zero` (value: 'none')",
        "modes[2]: is not one of `skip`, `zero`; did you mean `skip`? (value: 'Skip')",
    ]
    # Python says True == 1; an enumeration of ints still rejects a boolean.
    scalar = {"type": "mapping", "keys": {"x": {"type": "scalar", "allowed": [1, "a"]}}}
    assert rendered({"x": True}, scalar) == ["x: is not one of `1`, `a` (value: True)"]
    assert check({"x": 1}, scalar) == []


def test_list_indices_are_zero_based_at_every_depth():
    schema = {"type": "list", "items": {"type": "list", "items": {"type": "int"}}}
    assert [p.location for p in check([[1], [2, "x"], ["y"]], schema)] == ["[1][1]", "[2][0]"]


def test_min_items_counts():
    schema = {"type": "mapping", "keys": {"k": {"type": "list", "min_items": 2, "items": {"type": "int"}}}}
    assert rendered({"k": [1]}, schema) == ["k: needs at least 2 items, found 1 (value: [1])"]
    assert check({"k": [1, 2]}, schema) == []


def test_check_does_not_modify_the_document():
    spec = load_yaml(MULTI_ERROR_SPEC)
    before = copy.deepcopy(spec)
    check(spec, load_format())
    assert spec == before


# --- loading formats ------------------------------------------------------------------------------


def test_load_format_is_cached_and_read_only():
    fmt = load_format()
    assert isinstance(fmt, Format)
    assert load_format("pipeline") is fmt
    assert fmt.name == "pipeline"
    assert fmt.path is not None and Path(fmt.path).name == "pipeline.yaml"
    with pytest.raises(TypeError):
        fmt.document["keys"]["version"] = {}


GOOD_NODE = "document:\n  type: mapping\n  description: d\n  values: {type: int, description: d}\n"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("version: 1\nformat: broken\ndescription: x\ndocument: [\n", "cannot read"),
        ("version: 2\nformat: broken\ndescription: x\n" + GOOD_NODE, "`version` must be 1"),
        ("version: 1\nformat: other\ndescription: x\n" + GOOD_NODE, "`format` must be the file's name `broken`"),
        ("version: 1\nformat: broken\ndescription: x\ntable: q\n" + GOOD_NODE, "unknown top-level word `table`"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, keys: {a: {type: int}}}\n", "document.a: `description` is missing"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, keys: {a: {type: str, description: d}}}\n",
         "document.a: `type` must be one of"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, keys: {a: {type: list, description: d}}}\n",
         "document.a: a list needs `items`"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, keys: {a: {type: int, description: d, allowed: [x]}}}\n",
         "document.a: allowed value 'x' is not an integer"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, keys: {a: {type: int, description: d, requird: true}}}\n",
         "document.a: unknown word `requird`"),
        ("version: 1\nformat: broken\ndescription: x\n"
         "document: {type: mapping, description: d, values: {type: int, description: d, required: true}}\n",
         "document.values: `required` only applies to a node under `keys`"),
    ],
)
def test_broken_format_file_is_our_bug(tmp_path, monkeypatch, text, complaint):
    (tmp_path / "broken.yaml").write_text(text)
    monkeypatch.setattr(spec_format, "bundled_dir", lambda name: tmp_path)
    spec_format._load_format.cache_clear()
    try:
        with pytest.raises(RuntimeError) as raised:
            load_format("broken")
    finally:
        spec_format._load_format.cache_clear()
    assert str(tmp_path / "broken.yaml") in str(raised.value)
    assert complaint in str(raised.value)


def test_missing_format_file_is_our_bug(tmp_path, monkeypatch):
    monkeypatch.setattr(spec_format, "bundled_dir", lambda name: tmp_path)
    spec_format._load_format.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="nothing.yaml"):
            load_format("nothing")
    finally:
        spec_format._load_format.cache_clear()


def test_broken_bare_node_is_our_bug():
    with pytest.raises(RuntimeError, match="`min_items` only applies to a list"):
        check({}, {"type": "mapping", "values": {"type": "int", "min_items": 1}})


# --- the format file itself cannot rot --------------------------------------------------------------


def test_node_vocabulary_is_the_documented_one():
    assert set(NODE_WORDS) == {"type", "description", "keys", "values", "items", "required", "nullable", "allowed",
                               "min_items", "or"}
    assert set(TYPES) == {"mapping", "list", "string", "int", "float", "number", "bool", "scalar"}
    header = PIPELINE_FORMAT.read_text().split("\nversion:")[0]
    for word in NODE_WORDS:
        assert re.search(rf"^#\s+{word}\b", header, re.MULTILINE), f"schemas/pipeline.yaml header omits `{word}`"
        assert f"``{word}``" in spec_format.__doc__, f"the module docstring omits `{word}`"
    for kind in TYPES:
        assert kind in header and f"``{kind}``" in spec_format.__doc__


def walk_nodes(node, path):
    yield path, node
    for key, child in (node.get("keys") or {}).items():
        yield from walk_nodes(child, f"{path}.{key}")
    for word in ("values", "items"):
        if isinstance(node.get(word), dict):
            yield from walk_nodes(node[word], f"{path}.{word}")


def test_every_node_of_the_pipeline_format_is_documented_and_in_the_vocabulary():
    raw = yaml.safe_load(PIPELINE_FORMAT.read_text())  # read directly, not through the checked loader
    assert set(raw) == set(FILE_WORDS)
    assert raw["version"] == 1 and raw["format"] == "pipeline" and raw["description"].strip()
    nodes = list(walk_nodes(raw["document"], "document"))
    assert len(nodes) > 30  # the walk reached the leaves
    for path, node in nodes:
        assert set(node) <= set(NODE_WORDS), f"{path}: unknown words {set(node) - set(NODE_WORDS)}"
        assert node.get("type") in TYPES, f"{path}: type {node.get('type')!r}"
        assert isinstance(node.get("description"), str) and len(node["description"].split()) >= 2, (
            f"{path}: no description"
        )


def test_pipeline_format_top_level():
    keys = load_format().document["keys"]
    required = {key for key, node in keys.items() if node.get("required")}
    assert required == {"version", "metrics"}
    assert {"version", "name", "description", "input", "parameters", "policies", "units", "weight", "subsets",
            "metrics", "slices", "across_folds", "outputs"} <= set(keys)


def test_module_doctest():
    result = doctest.testmod(spec_format, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0


# --- properties -----------------------------------------------------------------------------------

FORMAT_WORDS = sorted(
    {key for _, node in walk_nodes(yaml.safe_load(PIPELINE_FORMAT.read_text())["document"], "") for key in
     (node.get("keys") or {})}
)
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.dates()
    | st.sampled_from(["per_query", "skip", "zero", "summary.csv", "all_queries", "fold"])
)
keys = (
    st.sampled_from(FORMAT_WORDS) | st.text(max_size=6) | st.integers() | st.floats() | st.booleans() | st.none()
    | st.dates()
)
documents = st.recursive(
    scalars, lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5), max_leaves=30
)
top_levels = st.dictionaries(st.sampled_from(FORMAT_WORDS) | st.text(max_size=6), documents, max_size=8)


def assert_problem_list(problems):
    assert isinstance(problems, list)
    for problem in problems:
        assert isinstance(problem, Problem)
        assert problem.location is None or (isinstance(problem.location, str) and problem.location)
        assert isinstance(problem.message, str) and problem.message
        assert isinstance(problem.render(), str)


@given(documents)
def test_random_documents_never_crash(spec):
    assert_problem_list(check(spec, load_format()))


@given(top_levels)
def test_random_documents_past_the_version_never_crash(body):
    spec = {**body, "version": 1}
    before = copy.deepcopy(spec) if not _has_nan(spec) else None
    problems = check(spec, load_format())
    assert_problem_list(problems)
    assert problems == check(spec, load_format())  # deterministic
    if before is not None:
        assert spec == before


def _has_nan(value) -> bool:
    if isinstance(value, float):
        return value != value
    if isinstance(value, dict):
        return any(_has_nan(k) or _has_nan(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nan(item) for item in value)
    return False


@given(
    st.sampled_from(["", "input", "metrics[0]", "metrics[1]", "subsets.has_evidence", "subsets.all_queries"]),
    st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(lambda key: key not in FORMAT_WORDS),
    documents,
)
def test_one_unknown_key_anywhere_is_one_problem_at_its_path(where, key, value):
    spec = evidence_spec()
    target = spec
    for part in re.findall(r"[a-z_]+|\[\d+\]", where):
        target = target[int(part[1:-1])] if part.startswith("[") else target[part]
    target[key] = value
    [problem] = check(spec, load_format())
    assert problem.location == (f"{where}.{key}" if where else key)
    assert problem.message.startswith("unknown key; ")
