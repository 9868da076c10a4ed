"""Pipeline specs, validated strictly and as a whole before anything runs (DESIGN §7).

A spec is a YAML file in ``pipelines/`` (or a mapping built in Python) in the format that
``schemas/pipeline.yaml`` declares. :func:`check_spec` finds every problem at once, each naming
its key path (``metrics[1].subest``) with a "did you mean":

1. the structure, against the declarative format (:mod:`evalframe.pipeline.format`): unknown
   keys at any depth, wrong types, values outside their allowed set, missing required keys;
2. the meaning: unknown metrics or metric parameters, a metric group naming an unknown subset, a
   subset condition that does not parse, a ``parameters:`` key that no metric reads, an
   ``across_folds`` key without a slice of its own, a unit named ``query``;
3. when the input is known, the columns: slices, weight, unit keys, subset conditions and
   metrics must name columns the queries table has (checked by the engine, same messages).

``parameters:`` reaches only the metrics that declare they read a parameter (``threshold`` for
the confusion family), plus the engine's ``relevance_threshold``; a metric's cutoff comes only
from its name, so ``mrr`` stays ``mrr`` whatever ``parameters:`` holds.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from evalframe.data.contracts import load_yaml
from evalframe.data.subsets import ALL_QUERIES, EVERY_QUERY, Subset
from evalframe.engine.plan import MetricGroup, Plan, slice_keys_problem
from evalframe.errors import NO_VALUE, ConfigError, Problem
from evalframe.metrics.registry import canonical_name, expanded, resolve, shared_parameters
from evalframe.engine.derive import STATE_PARAMETERS, split_state_parameters
from evalframe.pipeline.format import check as check_format
from evalframe.pipeline.format import load_format
from evalframe.pipeline.input_spec import InputSpec, normalized
from evalframe.pipeline.requires import Skipped
from evalframe.engine.bootstrap import Bootstrap
from evalframe.metrics.targets import Target

#: Input formats that read a second file, the gold standard (``input.gold``; qrels for ``embeddings``).
GOLD_FORMATS = ("legal", "embeddings")
#: The outputs of a pipeline that does not list its own (``per_unit.parquet`` is added by listing it).
DEFAULT_OUTPUTS = ("per_query.parquet", "summary.parquet", "summary.csv", "summary.md", "run.json")
#: Parameters of the engine itself (not of a metric) that ``parameters:`` may set.
ENGINE_PARAMETERS = {"relevance_threshold": "items with relevance >= this grade are relevant (ranking metrics)"}


@dataclass(frozen=True)
class PipelineSpec:
    """A validated pipeline spec: its plan for the engine, its input and its outputs.

    :class:`evalframe.pipeline.run.Pipeline` is the same with a ``run`` method.
    """

    name: str
    plan: Plan
    input: InputSpec = InputSpec()
    outputs: tuple[str, ...] = DEFAULT_OUTPUTS
    description: str = ""
    source: str | None = None
    #: The stages after the engine (keyword arguments of :func:`evalframe.analyses.ablation`,
    #: :func:`evalframe.analyses.tune_thresholds` and :func:`evalframe.checks.check`); None: not run.
    ablation: Mapping[str, Any] | None = None
    tuning: Mapping[str, Any] | None = None
    checks: Mapping[str, Any] | None = None
    #: Parameters of the dynamic-K γ sweep (``dynamic_k_sweep:`` block), None when not asked for.
    dynamic_k_sweep: Mapping[str, Any] | None = None
    #: Options of :func:`evalframe.stats.compare.compare` (the ``compare:`` block), or None.
    compare: Mapping[str, Any] | None = None
    #: The validated mapping the pipeline was built from (``requires:`` included): what
    #: :mod:`evalframe.pipeline.requires` adapts to the data and overrides layer onto.
    raw: Mapping[str, Any] | None = None
    #: Parts skipped because the data lacks what they require (:class:`~evalframe.pipeline.requires.Skipped`).
    skipped: tuple[Skipped, ...] = ()
    #: The overrides layered on the file (``--config`` files, ``--set`` values, flags), for run.json.
    overrides: Mapping[str, Any] | None = None
    #: Options of the embedding quality analysis (``embedding_quality:`` block, format ``embeddings``), or None.
    embedding_quality: Mapping[str, Any] | None = None
    #: How the engine runs (``execution:`` block: ``buckets``, ``memory``, ``bucket_dir``), or None: in memory.
    execution: Mapping[str, Any] | None = None

    @classmethod
    def from_yaml(cls, path: str | Path) -> PipelineSpec:
        path = Path(path)
        try:
            spec = load_yaml(path.read_text())
        except OSError as error:
            raise ConfigError(f"{path}: cannot read the pipeline: {error.strerror or error}") from None
        except yaml.YAMLError as error:
            raise ConfigError(yaml_error_text(path, error)) from None
        return cls.from_mapping(spec, origin=str(path))

    @classmethod
    def from_mapping(cls, spec: Any, *, origin: str = "pipeline") -> PipelineSpec:
        """Validate ``spec`` (every problem at once, :func:`check_spec`) and build the pipeline."""
        problems = check_spec(spec)
        if problems:
            raise ConfigError.of(problems, source=origin)
        return cls(**_parts(normalized(spec), origin), raw=spec)

    @property
    def groups(self) -> tuple[MetricGroup, ...]:
        return self.plan.groups

    @property
    def metrics(self) -> list:
        return self.plan.metrics

    @property
    def slices(self) -> Mapping[str, tuple[str, ...]]:
        return self.plan.slices

    def sweep_arguments(self) -> dict[str, Any]:
        """The keyword arguments of :func:`evalframe.analyses.dynamic_k_sweep.dynamic_k_sweep` from
        the ``dynamic_k_sweep:`` block, its ``slices`` names resolved to the plan's slices (None:
        the default)."""
        from evalframe.analyses.dynamic_k_sweep import sweep_arguments

        arguments = sweep_arguments(self.dynamic_k_sweep or {})
        names = arguments["slices"]
        arguments["slices"] = None if names is None else {name: self.plan.slices[name] for name in names}
        return arguments


def yaml_error_text(path: str | Path, error: yaml.YAMLError) -> str:
    """``file:line:col: what is wrong`` for a YAML syntax error (1-based, as editors count),
    without PyYAML's internals (``<unicode string>``, its quoted excerpt)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    return f"{where}: YAML syntax error: {problem}" + (f" ({context})" if context else "")


def _parameter_cause(name: str, parameters: Mapping[str, Any]) -> str | None:
    """The one entry of ``parameters:`` that alone makes metric ``name`` fail to build (the metric
    builds without it), else None: its error is then the parameter's, said once for every metric."""
    try:
        resolve(name)
    except ConfigError:
        return None
    for key, value in parameters.items():
        try:
            resolve(name, defaults={key: value})
        except ConfigError:
            return key
    return None


def _near(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean `{close[0]}`?" if close else f" (known: {', '.join(f'`{k}`' for k in known) or 'none'})"


def _mapping(value: Any) -> dict:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list:
    return list(value) if isinstance(value, list) else []


def _pipeline_format():
    """The pipeline format, its ``input.format`` allowing every reader's format (bundled and
    registered: :func:`evalframe.io.readers.register_reader`)."""
    from types import MappingProxyType

    from evalframe.io.readers import BUNDLED_FORMATS, reader_formats

    loaded = load_format("pipeline")
    formats = reader_formats()
    if formats == BUNDLED_FORMATS:
        return loaded
    document = loaded.document
    keys = document["keys"]
    source = keys["input"]
    node = MappingProxyType({**source["keys"]["format"], "allowed": formats})
    source = MappingProxyType({**source, "keys": MappingProxyType({**source["keys"], "format": node})})
    document = MappingProxyType({**document, "keys": MappingProxyType({**keys, "input": source})})
    return replace(loaded, document=document)


def check_spec(spec: Any) -> list[Problem]:
    """Every problem of a pipeline spec (module docstring, steps 1 and 2); [] when it is valid.

    The meaning is checked wherever the structure allows (a malformed part is reported once,
    by the structure check), so one pass reports both kinds.
    """
    problems = check_format(spec, _pipeline_format())
    if not isinstance(spec, Mapping) or any(p.location == "version" or p.location is None for p in problems):
        return problems  # not a pipeline of this version: its meaning cannot be read
    spec = normalized(spec)  # tolerant of a malformed part, which the format check reported
    source = _mapping(spec.get("input"))
    if "gold" in source and source.get("format", "per_query") not in GOLD_FORMATS:
        problems.append(Problem("input.gold", None, NO_VALUE,
                                f"format `{source.get('format', 'per_query')}` reads one file; a gold file goes with "
                                f"{', '.join(f'`{f}`' for f in GOLD_FORMATS)}"))
    if "samples" in source and source.get("format", "per_query") != "rag":
        problems.append(Problem("input.samples", None, NO_VALUE, "a samples file goes with format `rag` (its two-file form)"))
    embedding_format = source.get("format") == "embeddings"
    if embedding_format and "knn" not in source:
        problems.append(Problem("input.knn", None, NO_VALUE, "format `embeddings` needs `knn.queries`, the query vectors"))
    if "knn" in source and not embedding_format:
        problems.append(Problem("input.knn", None, NO_VALUE, "goes with format `embeddings`"))
    problems += _execution_problems(_mapping(spec.get("execution")))
    if "embedding_quality" in spec and not embedding_format:
        problems.append(Problem("embedding_quality", None, NO_VALUE, "goes with input format `embeddings`"))
    if source.get("format") == "legal" and source.get("columns"):
        problems.append(Problem("input.columns", None, NO_VALUE, "the `legal` format has no columns to map"))
    parameters = _mapping(spec.get("parameters"))
    readers = shared_parameters()
    known_parameters = sorted({*readers, *ENGINE_PARAMETERS})
    for key in parameters:
        if key not in known_parameters:
            problems.append(Problem(f"parameters.{key}", None, NO_VALUE,
                                    f"no metric reads parameter `{key}`{_near(str(key), known_parameters)} "
                                    "(a cutoff such as k belongs in the metric's name: `recall@10`)"))
    relevance = parameters.get("relevance_threshold", 1)
    if isinstance(relevance, bool) or not isinstance(relevance, int) or relevance < 1:
        problems.append(Problem("parameters.relevance_threshold", None, relevance, "must be a whole number >= 1"))
    try:
        split_state_parameters(parameters)
    except ConfigError as error:
        problems.append(Problem("parameters", None, NO_VALUE, str(error)))
    metric_parameters = {key: value for key, value in parameters.items() if key in readers and key not in STATE_PARAMETERS}

    subsets = _mapping(spec.get("subsets"))
    for name, body in subsets.items():
        where = _mapping(body).get("where")
        if isinstance(where, str):
            try:
                _subset(name, _mapping(body)).condition()
            except ConfigError as error:
                problems.append(Problem(f"subsets.{name}.where", None, where, str(error)))
    subset_names = sorted({ALL_QUERIES, *subsets})
    reported: set[str] = set()
    by_parameter: dict[tuple[str, str], list[str]] = {}  # (parameter, what is wrong) → the metrics it breaks
    for position, group in enumerate(_list(spec.get("metrics"))):
        group = _mapping(group)
        subset_name = group.get("subset", ALL_QUERIES)
        if isinstance(subset_name, str) and subset_name not in subset_names:
            problems.append(Problem(f"metrics[{position}].subset", None, subset_name,
                                    f"names an unknown subset{_near(subset_name, subset_names)}"))
        for index, name in enumerate(_list(group.get("names"))):
            if not isinstance(name, str):
                continue
            try:
                resolve(name, defaults=metric_parameters)
            except ConfigError as error:
                cause = _parameter_cause(name, metric_parameters)
                if cause is not None:  # one message per bad parameter, listing the metrics it affects
                    by_parameter.setdefault((cause, re.sub(r"^`[^`]+` ", "", str(error))), []).append(name)
                    continue
                if str(error) in reported:
                    continue  # one bad shared parameter (tau_neg > tau_pos) is reported once
                reported.add(str(error))
                problems.append(Problem(f"metrics[{position}].names[{index}]", None, NO_VALUE, str(error)))
    for (parameter, message), names in by_parameter.items():
        affected = ", ".join(f"`{n}`" for n in names[:6]) + (f", … ({len(names)} in all)" if len(names) > 6 else "")
        problems.append(Problem(f"parameters.{parameter}", None, NO_VALUE, f"{message} (read by {affected})"))
    problems += _target_problems(spec, metric_parameters)
    if "query" in _mapping(spec.get("units")):
        problems.append(Problem("units.query", None, NO_VALUE, "`query` is the built-in unit (one row of the queries table)"))
    bootstrap = spec.get("bootstrap")
    malformed = any(str(p.location or "").startswith("bootstrap") for p in problems)
    if isinstance(bootstrap, Mapping) and not malformed:  # a malformed block is reported once, above
        try:
            Bootstrap(**bootstrap)
        except ConfigError as error:
            problems.append(Problem("bootstrap", None, NO_VALUE, str(error)))
    slices = _mapping(spec.get("slices")) or {"overall": []}
    for name, keys in slices.items():
        keys = _list(keys)  # (a name or key that is not a string: the structure check's, reported once)
        problem = slice_keys_problem(keys) if isinstance(name, str) and all(isinstance(key, str) for key in keys) else None
        if problem is not None:
            problems.append(Problem(f"slices.{name}", None, NO_VALUE, problem))
    problems += _check_sweep(spec.get("dynamic_k_sweep"), slices)
    for index, name in enumerate(_list(_mapping(spec.get("report")).get("slices"))):
        if isinstance(name, str) and name not in slices:
            problems.append(Problem(f"report.slices[{index}]", None, name, f"is not a slice of the pipeline{_near(name, sorted(slices))}"))
    problems += _check_compare(_mapping(spec.get("compare")), spec, slices)
    fold_key = spec.get("across_folds")
    if isinstance(fold_key, str) and [fold_key] not in [_list(keys) for keys in slices.values()]:
        # a slice meant as the fold slice, grouping by a misspelt column (`fold: [folds]`): name that column
        single = {name: _list(keys)[0] for name, keys in slices.items() if len(_list(keys)) == 1}
        meant = [(name, column) for name, column in single.items()
                 if isinstance(column, str) and (name == fold_key or difflib.get_close_matches(fold_key, [column], cutoff=0.6))]
        hint = ""
        if meant:
            name, column = meant[0]
            hint = (f" (slice `{name}` groups by `{column}`: if `{column}` is your fold column, write "
                    f"`across_folds: {column}`; else group that slice by `{fold_key}`)")
        problems.append(Problem("across_folds", None, fold_key, f"needs a slice that groups by [{fold_key}] alone{hint}"))
    problems += _check_analyses(spec, metric_parameters)
    return problems


def _check_analyses(spec: Mapping[str, Any], metric_parameters: Mapping[str, Any]) -> list[Problem]:
    """The meaning of the ``ablation:`` and ``tuning:`` blocks (their structure is the format's)."""
    problems = []
    if isinstance(spec.get("ablation"), Mapping):
        if not isinstance(spec.get("across_folds"), str):
            problems.append(Problem("ablation", None, NO_VALUE, "needs `across_folds` (its cells are mean ± std across folds)"))
        listed, unresolved = set(), False
        for group in _list(spec.get("metrics")):
            for name in _list(_mapping(group).get("names")):
                try:
                    listed.add(resolve(name, defaults=metric_parameters).name)
                except (ConfigError, TypeError):
                    unresolved = True  # reported under `metrics`; what is listed is then unknown
        for index, name in enumerate(_list(spec["ablation"].get("metrics"))):
            if not isinstance(name, str):
                continue
            try:
                canonical = resolve(name, defaults=metric_parameters).name
            except ConfigError as error:
                problems.append(Problem(f"ablation.metrics[{index}]", None, NO_VALUE, str(error)))
                continue
            if canonical not in listed and not unresolved:
                problems.append(Problem(f"ablation.metrics[{index}]", None, name, "is not listed under `metrics`"))
    tuning = spec.get("tuning")
    if isinstance(tuning, Mapping):
        grid = tuning.get("grid", 0.01)
        step_ok = isinstance(grid, int | float) and not isinstance(grid, bool) and 0 < grid <= 1
        if grid != "distinct" and not (step_ok and abs(round(1 / grid) * grid - 1) < 1e-9):
            problems.append(Problem("tuning.grid", None, grid, "must be a step in (0, 1] that divides 1 (e.g. 0.01), or `distinct`"))
        for key in ("min_screening_sensitivity", "min_alert_precision"):
            value = tuning.get(key, 0.5)
            if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value <= 1:
                problems.append(Problem(f"tuning.{key}", None, value, "must be in [0, 1]"))
        target = _mapping(tuning.get("threshold")).get("target_sensitivity", 0.5)
        if isinstance(target, int | float) and not isinstance(target, bool) and not 0 <= target <= 1:
            problems.append(Problem("tuning.threshold.target_sensitivity", None, target, "must be in [0, 1]"))
    return problems


def _check_sweep(block: Any, slices: Mapping[str, Any]) -> list[Problem]:
    """Meaning of the ``dynamic_k_sweep`` block: γ in (0, 1], k_min <= k_max, known slices."""
    if not isinstance(block, Mapping):
        return []
    from evalframe.analyses.dynamic_k_sweep import check_sweep_parameters, sweep_arguments

    arguments = sweep_arguments(block)
    problems = []
    typed = all(isinstance(arguments[key], int) for key in ("k_min", "k_max")) and all(
        isinstance(gamma, (int, float)) for gamma in _list(arguments["gammas"]))
    if typed and arguments["normalize"] in (None, "softmax"):  # else the format check said so
        problems += check_sweep_parameters(arguments["gammas"], arguments["k_min"], arguments["k_max"], arguments["normalize"])
    for index, name in enumerate(_list(block.get("slices"))):
        if isinstance(name, str) and name not in slices:
            problems.append(Problem(f"dynamic_k_sweep.slices[{index}]", None, name,
                                    f"names an unknown slice{_near(name, sorted(slices))}"))
    return problems


def _check_compare(block: Mapping[str, Any], spec: Mapping[str, Any], slices: Mapping[str, Any]) -> list[Problem]:
    """The ``compare:`` block's names: its metrics must be listed (under any spelling: ``P@5`` is
    ``precision@5``), its groupings be slices, its levels in (0, 1). (Whether the baseline is a
    system is known once the input is read.)"""
    problems = []
    listed = sorted({canonical_name(name) for group in _list(spec.get("metrics"))
                     for name in _list(_mapping(group).get("names")) if isinstance(name, str)})
    for index, name in enumerate(_list(block.get("metrics"))):
        if isinstance(name, str) and canonical_name(name) not in listed:
            problems.append(Problem(f"compare.metrics[{index}]", None, name, f"is not a metric of the pipeline{_near(name, listed)}"))
    for index, name in enumerate(_list(block.get("groupings"))):
        if isinstance(name, str) and name not in slices:
            problems.append(Problem(f"compare.groupings[{index}]", None, name, f"is not a slice of the pipeline{_near(name, sorted(slices))}"))
    for key in ("alpha", "confidence"):
        value = block.get(key)
        if isinstance(value, float) and not 0.0 < value < 1.0:
            problems.append(Problem(f"compare.{key}", None, value, "must be between 0 and 1"))
    for key in ("permutations", "set_permutations"):
        value = block.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            problems.append(Problem(f"compare.{key}", None, value, "must be >= 1"))
    return problems


def _target_problems(spec: Mapping[str, Any], metric_parameters: Mapping[str, Any]) -> list[Problem]:
    """``targets:`` must name metrics the pipeline computes, each with a well-formed target."""
    computed: list[str] = []
    complete = True  # every metric name resolves: only then is "not computed" worth saying
    for group in _list(spec.get("metrics")):
        for name in _list(_mapping(group).get("names")):
            try:
                computed.append(resolve(name, defaults=metric_parameters).name)
            except (ConfigError, TypeError):
                complete = False
    problems = []
    for key, text in _mapping(spec.get("targets")).items():
        try:
            Target.parse(text, where=f"targets.{key}")
        except ConfigError as error:
            problems.append(Problem(f"targets.{key}", None, text, str(error)))
        try:
            name = resolve(str(key), defaults=metric_parameters).name
        except ConfigError as error:
            problems.append(Problem(f"targets.{key}", None, NO_VALUE, str(error)))
            continue
        if complete and name not in computed:
            problems.append(Problem(f"targets.{key}", None, NO_VALUE,
                                    f"names a metric the pipeline does not compute{_near(name, sorted(set(computed)))}"))
    return problems


def _targets(spec: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, str]:
    """``targets:`` keyed by canonical metric name, each target in its printed form (``>= 0.85``)."""
    return {
        resolve(str(key), defaults=parameters).name: str(Target.parse(text))
        for key, text in (spec.get("targets") or {}).items()
    }


def _subset(name: str, body: Mapping[str, Any] | None) -> Subset:
    body = body or {}
    return Subset(name, body.get("description", name), body.get("where"))


def _parts(spec: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """The fields of :class:`PipelineSpec` for a spec that :func:`check_spec` passed."""
    parameters = dict(spec.get("parameters") or {})
    relevance_threshold = parameters.pop("relevance_threshold", 1)
    state_thresholds, parameters = split_state_parameters(parameters)
    subsets = {name: _subset(name, body) for name, body in (spec.get("subsets") or {}).items()}
    subsets.setdefault(ALL_QUERIES, EVERY_QUERY)
    groups = tuple(
        MetricGroup(
            subsets[group.get("subset", ALL_QUERIES)],
            tuple(dict.fromkeys(m for name in group["names"] for m in expanded(resolve(name, defaults=parameters)))),
        )
        for group in spec["metrics"]
    )
    policies = spec.get("policies") or {}
    bootstrap = spec.get("bootstrap")
    name = spec.get("name") or Path(origin).stem
    description = " ".join(str(spec.get("description", "")).split())
    plan = Plan(
        groups=groups,
        slices={grouping: tuple(keys or ()) for grouping, keys in (spec.get("slices") or {"overall": []}).items()},
        units={unit: tuple(keys) for unit, keys in (spec.get("units") or {}).items()},
        weight=spec.get("weight"),
        across_folds=spec.get("across_folds"),
        bootstrap=Bootstrap(**bootstrap) if bootstrap is not None else None,
        relevance_threshold=relevance_threshold,
        empty=policies.get("empty", "skip"),
        missing=policies.get("missing", "error"),
        parameters=parameters,
        state_thresholds=state_thresholds,
        about={"name": name, "description": description, "source": origin,
               "targets": _targets(spec, {k: v for k, v in parameters.items() if k in shared_parameters()}),
               **({"report": dict(spec["report"])} if spec.get("report") else {})},
    )
    return {
        "name": name,
        "plan": plan,
        "input": InputSpec(**(spec.get("input") or {})),
        "outputs": tuple(spec.get("outputs") or DEFAULT_OUTPUTS),
        "description": description,
        "source": origin,
        "ablation": dict(spec["ablation"]) if spec.get("ablation") is not None else None,
        "tuning": dict(spec["tuning"]) if spec.get("tuning") is not None else None,
        "checks": dict(spec["checks"]) if spec.get("checks") is not None else None,
        "dynamic_k_sweep": dict(spec["dynamic_k_sweep"]) if spec.get("dynamic_k_sweep") is not None else None,
        "compare": dict(spec["compare"]) if spec.get("compare") else None,
        "embedding_quality": dict(spec["embedding_quality"]) if spec.get("embedding_quality") is not None else None,
        "execution": dict(spec["execution"]) if spec.get("execution") else None,
    }


def _execution_problems(execution: Mapping[str, Any]) -> list[Problem]:
    """``execution.buckets`` (>= 1 or auto) and ``execution.memory`` (a positive size)."""
    from evalframe.engine.buckets import check_buckets, parse_memory

    problems = []
    for key, check in (("buckets", check_buckets), ("memory", parse_memory)):
        if execution.get(key) is not None:
            try:
                check(execution[key], key=f"execution.{key}")
            except ConfigError as error:
                problems.append(Problem(f"execution.{key}", None, execution[key], str(error)))
    return problems
