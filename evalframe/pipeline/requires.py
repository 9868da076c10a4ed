"""Parts of a pipeline that need something of the data (``requires:``), and skipping them.

A metric group, a slice or a stage (``dynamic_k_sweep``, ``ablation``, ``tuning``, ``compare``,
``checks``) may declare what it needs:

- a list of columns: ``requires: [state]`` (all of them);
- a mapping: ``requires: {columns: [fold], any_of: [selected_k, extracted_sent_uids], configs: 2}``
  (all of ``columns``, at least one of ``any_of``, at least ``configs`` systems), and
  ``resources: [semantic | embedder | judge]``: what the run must have besides data (the
  ``evalframe[semantic]`` extra; an ``embed_fn`` or that extra; an LLM judge), so that a bundled
  pipeline listing model-backed metrics still runs on a core install (:data:`RESOURCES`).

A column is *available* when the input file has it (under its contract name, after
``input.columns``) or the queries table has it (derived columns included: the ``state`` that
``parameters: {tau_neg, tau_pos}`` derives from ``prob``), and not when the reader added it only
as nulls (``Tables.absent_columns``: a RAG file's ``scenario`` without labels). A reader may name
more than columns (``Tables.source_columns``: a RAG record's ``relevant_docs``, a recommender's
``ground_truth``); the item catalog gives ``catalog``, its columns (``popularity``, ``category``,
``embedding``), ``history`` and ``similarity`` (:data:`SOURCES` says how to give each). When the
data lacks what a part needs,
:func:`adapt` removes the part from the pipeline's mapping and says so in one :class:`Skipped`
(what was skipped, what is missing, what would enable it). What depended on a skipped part goes
with it: ``targets`` and ``ablation.metrics`` / ``compare.metrics`` entries of its metrics,
``across_folds`` of a skipped fold slice, ``dynamic_k_sweep.slices`` naming a skipped slice.
A part without ``requires:`` is never skipped: a missing column is then an error before anything
is computed (:mod:`evalframe.pipeline.preflight`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Stages (top-level blocks) that may declare ``requires:``.
STAGES = ("dynamic_k_sweep", "ablation", "tuning", "compare", "checks")
#: Another way to get a column than adding it to the input.
ENABLERS = {
    "state": "or derive it from p_has_evidence: `--set parameters.tau_neg=0.2 --set parameters.tau_pos=0.7`",
}
#: How to give what a part needs when it is not a column of one table: the fields of a RAG record
#: (``evalframe/io/rag.py``), the side tables of a recommender's output (``evalframe/data/catalog.py``).
SOURCES = {
    "relevant_docs": "give `relevant_docs` in the records",
    "retrieved": "give `retrieved` in the records",
    "reference_answer": "give `reference_answer` in the records",
    "query": "give `query` in the records",
    "latency_end_to_end": "give `timings: {end_to_end: seconds}` in the records",
    "retrieved_embeddings": "give an `embedding` for every retrieved document",
    "scenario": "give `labels: {scenario: ...}` in the records",
    "variant_of": "give `labels: {variant_of: PARENT_SAMPLE_ID}` in the records of variants",
    "topic": "give `labels: {topic: ...}` in the records",
    "ground_truth": "give the held-out items (`--gold FILE` or `input.tables.ground_truth`)",
    "catalog": "give the item catalog (`--catalog FILE` or `input.tables.items`)",
    "popularity": "give the item catalog with a `popularity` column (`--catalog FILE`)",
    "category": "give the item catalog with a `category` column (`--catalog FILE`)",
    "history": "give the users' history (`input.tables.history`: query_id, item_id)",
    "similarity": "give item similarities (`input.tables.similarity`: item_a, item_b, similarity)",
    "embedding": "give the item catalog with an `embedding` column",
}
#: Stages in words.
STAGE_NAMES = {
    "dynamic_k_sweep": "dynamic-K γ sweep (`dynamic_k_sweep`)",
    "ablation": "ablation table (`ablation`)",
    "tuning": "threshold tuning (`tuning`)",
    "compare": "comparison of systems (`compare`)",
    "checks": "checks (`checks`)",
}


def _resource_missing(name: str) -> tuple[str, str] | None:
    """``(what is missing, what would enable it)`` for a resource the run lacks, else None."""
    from evalframe.semantic import session
    from evalframe.semantic.models import EMBEDDER_MODULES, INSTALL_HINT, missing_modules

    if name == "judge":
        if session.current().critic is None:
            return ("no LLM judge configured",
                    "`--judge record` with OPENAI_BASE_URL and EVALFRAME_JUDGE_MODEL (Python: `judge=`)")
        return None
    if name == "embedder" and session.current().embed_fn is not None:
        return None
    modules = EMBEDDER_MODULES if name == "embedder" else None
    missing = missing_modules(modules) if modules else missing_modules()
    if missing:
        extra = " (or pass `embed_fn=` in Python)" if name == "embedder" else ""
        return f"the semantic extra is not installed ({', '.join(missing)})", f"`{INSTALL_HINT}`{extra}"
    return None


#: What ``resources:`` may name.
RESOURCES = ("semantic", "embedder", "judge")


@dataclass(frozen=True)
class Requirement:
    """What a part needs: every column of ``columns``, one of ``any_of``, ``configs`` systems,
    every resource of ``resources``."""

    columns: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    configs: int = 0
    resources: tuple[str, ...] = ()

    @classmethod
    def parse(cls, value: Any) -> Requirement:
        if isinstance(value, Mapping):
            return cls(tuple(value.get("columns") or ()), tuple(value.get("any_of") or ()), int(value.get("configs") or 0),
                       tuple(value.get("resources") or ()))
        return cls(tuple(value or ()))

    def unmet(self, available: set[str], n_configs: int) -> list[str]:
        """What is missing, in words (empty when the requirement is met)."""
        missing = [found[0] for found in map(_resource_missing, self.resources) if found is not None]
        missing += [f"no `{c}` column" for c in self.columns if c not in available]
        if self.any_of and not any(c in available for c in self.any_of):
            missing.append("none of the columns " + ", ".join(f"`{c}`" for c in self.any_of))
        if self.configs and n_configs < self.configs:
            missing.append(f"{n_configs} config{'s' if n_configs != 1 else ''} (needs {self.configs} or more)")
        return missing

    def enable(self, available: set[str], n_configs: int) -> str:
        """What would enable the part, in words."""
        hints = [found[1] for found in map(_resource_missing, self.resources) if found is not None]
        needed = [c for c in self.columns if c not in available]
        alternatives = list(self.any_of) if self.any_of and not any(c in available for c in self.any_of) else []
        for wanted, joiner in ((needed, " and "), (alternatives, " or ")):
            told = [SOURCES[c] for c in wanted if c in SOURCES]
            if told:
                hints.append(joiner.join(told) if joiner == " or " else "; ".join(told))
            columns = [c for c in wanted if c not in SOURCES]
            if columns:
                joined = joiner.join(f"`{c}`" for c in columns)
                hints.append(f"add {joined} to the input (a column of yours under another name: "
                             f"`--set input.columns.{columns[0]}=YOURS`)")
                hints += [ENABLERS[c] for c in columns if c in ENABLERS]
        if self.configs and n_configs < self.configs:
            hints.append(f"give {self.configs} or more configs (a `config` column)")
        return "; ".join(hints)


@dataclass(frozen=True)
class Skipped:
    """One skipped part: ``part`` its key path, ``what`` it is in words, ``missing``, ``enable``."""

    part: str
    what: str
    missing: str
    enable: str

    def note(self) -> str:
        return f"{self.what} skipped: {self.missing}; to enable: {self.enable}"

    def describe(self) -> dict[str, str]:
        return {"part": self.part, "what": self.what, "missing": self.missing, "enable": self.enable}


def slice_keys(value: Any) -> list:
    """The key columns of a slice written as a list or as ``{by: [...], requires: ...}``."""
    if isinstance(value, Mapping):
        value = value.get("by")
    return list(value) if isinstance(value, (list, tuple)) else []


def has_requires(spec: Mapping[str, Any], part: str) -> bool:
    """Whether the stage ``part`` (a top-level block) declares ``requires:``."""
    block = spec.get(part)
    return isinstance(block, Mapping) and "requires" in block


def without_requires(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with every ``requires:`` removed and slices as plain key lists (what runs)."""
    spec = copy.deepcopy(dict(spec))
    if isinstance(spec.get("metrics"), list):
        spec["metrics"] = [{k: v for k, v in g.items() if k not in ("requires", "name")} if isinstance(g, Mapping) else g
                           for g in spec["metrics"]]
    if isinstance(spec.get("slices"), Mapping):
        spec["slices"] = {name: slice_keys(keys) for name, keys in spec["slices"].items()}
    for stage in STAGES:
        if isinstance(spec.get(stage), Mapping):
            spec[stage] = {k: v for k, v in spec[stage].items() if k != "requires"}
    return spec


def _group_label(position: int, group: Mapping[str, Any]) -> str:
    names = [n for n in group.get("names") or () if isinstance(n, str)]
    shown = ", ".join(names[:2]) + (f", … ({len(names)} metrics)" if len(names) > 2 else "")
    if isinstance(group.get("name"), str):
        return f"{group['name']} metrics ({shown})"
    return f"metrics[{position}] ({shown})"


def adapt(spec: Mapping[str, Any], available: set[str], n_configs: int) -> tuple[dict[str, Any], list[Skipped]]:
    """The pipeline mapping without the parts whose ``requires:`` the data does not meet, and
    one :class:`Skipped` per removed part (module docstring). ``spec`` is not modified."""
    spec = copy.deepcopy(dict(spec))
    skipped: list[Skipped] = []

    def unmet(block: Any) -> tuple[str, str] | None:
        if not isinstance(block, Mapping) or "requires" not in block:
            return None
        requirement = Requirement.parse(block["requires"])
        missing = requirement.unmet(available, n_configs)
        return ("; ".join(missing), requirement.enable(available, n_configs)) if missing else None

    kept_groups, dropped_metrics = [], set()
    for position, group in enumerate(spec.get("metrics") or []):
        found = unmet(group)
        if found is None:
            kept_groups.append(group)
            continue
        skipped.append(Skipped(f"metrics[{position}]", _group_label(position, group), *found))
        dropped_metrics |= {n for n in group.get("names") or () if isinstance(n, str)}
    kept_metrics = {n for g in kept_groups for n in g.get("names") or () if isinstance(n, str)}
    dropped_metrics -= kept_metrics
    spec["metrics"] = kept_groups

    slices = spec.get("slices")
    dropped_slices = set()
    if isinstance(slices, Mapping):
        for name, value in list(slices.items()):
            found = unmet(value)
            if found is not None:
                skipped.append(Skipped(f"slices.{name}", f"slice `{name}`", *found))
                dropped_slices.add(name)
                del slices[name]
        if not slices:
            spec["slices"] = {"overall": []}
    fold = spec.get("across_folds")
    if isinstance(fold, str) and isinstance(slices, Mapping) and dropped_slices:
        if not any(slice_keys(v) == [fold] for v in spec["slices"].values()):
            spec.pop("across_folds")
            dropped_slices.add("across_folds")

    for stage in STAGES:
        block = spec.get(stage)
        found = unmet(block)
        if found is not None:
            skipped.append(Skipped(stage, STAGE_NAMES[stage], *found))
            spec.pop(stage)
    _prune_references(spec, dropped_metrics, dropped_slices, skipped)
    if not spec["metrics"]:
        spec["metrics"] = []  # every group skipped: the spec check says there is no metric
    return spec, skipped


def _prune_references(spec: dict, metrics: set[str], slices: set[str], skipped: list[Skipped]) -> None:
    """Remove what names a skipped metric or slice; a stage left without metrics is skipped too."""
    from evalframe.metrics.registry import canonical_name as _canonical_name

    canonical = {_canonical_name(m) for m in metrics}

    def gone(name: Any) -> bool:
        return isinstance(name, str) and _canonical_name(name) in canonical

    if isinstance(spec.get("targets"), Mapping):
        spec["targets"] = {k: v for k, v in spec["targets"].items() if not gone(str(k))}
    for stage in ("ablation", "compare"):
        block = spec.get(stage)
        if isinstance(block, Mapping) and isinstance(block.get("metrics"), list):
            kept = [m for m in block["metrics"] if not gone(m)]
            if not kept:
                skipped.append(Skipped(stage, STAGE_NAMES[stage], "every metric it lists was skipped",
                                       "enable the metric groups above"))
                spec.pop(stage)
            else:
                block["metrics"] = kept
    if "across_folds" in slices and isinstance(spec.get("ablation"), Mapping):
        skipped.append(Skipped("ablation", STAGE_NAMES["ablation"], "no across-folds rows (its cells are mean ± std across folds)",
                               "add a `fold` column"))
        spec.pop("ablation")
    sweep = spec.get("dynamic_k_sweep")
    if isinstance(sweep, Mapping) and isinstance(sweep.get("slices"), list):
        sweep["slices"] = [s for s in sweep["slices"] if s not in slices] or None
        if sweep["slices"] is None:
            sweep.pop("slices")
    block = spec.get("compare")
    if isinstance(block, Mapping) and isinstance(block.get("groupings"), list):
        block["groupings"] = [s for s in block["groupings"] if s not in slices]
        if not block["groupings"]:
            block.pop("groupings")


def columns_named(requirements: Sequence[Any]) -> set[str]:
    """Every column the given ``requires:`` values name (for messages)."""
    found: set[str] = set()
    for value in requirements:
        requirement = Requirement.parse(value)
        found |= {*requirement.columns, *requirement.any_of}
    return found
