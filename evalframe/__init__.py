"""evalframe: exact, fast, sliceable evaluation of retrieval, RAG and evidence-gating systems.

>>> import evalframe as ef
>>> run = ef.read_run("run.trec")              # doctest: +SKIP
>>> qrels = ef.read_qrels("qrels.trec")        # doctest: +SKIP
>>> ev = ef.evaluate(run, qrels, metrics=["recall@5", "ndcg@10", "mrr", "map@100"])  # doctest: +SKIP
>>> ev = ef.run_pipeline("evidence_contract", input="per_query.csv")                  # doctest: +SKIP
>>> ev.summary; ev.per_query; ev.per_unit("post"); ev.write("reports/x")            # doctest: +SKIP
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from evalframe.data.subsets import Subset
from evalframe.data.tables import Tables
from evalframe.engine.evaluation import evaluate
from evalframe.engine.plan import Plan
from evalframe.engine.result import Evaluation
from evalframe.errors import ConfigError, EvalframeError, ExitCode, InputError
from evalframe.io import read_qrels, read_run, read_table
from evalframe.stats.bootstrap import Bootstrap
from evalframe.metrics import (
    HitRateAtK,
    Level,
    MeanAveragePrecision,
    Metric,
    MRRAtK,
    NDCGAtK,
    NumRelevant,
    NumRelevantRetrieved,
    NumRetrieved,
    PrecisionAtK,
    RecallAtK,
    RPrecision,
    TargetCategory,
    resolve_metric,
)

if TYPE_CHECKING:
    from evalframe.io.per_query import read_per_query
    from evalframe.pipeline import Pipeline, load_pipeline, run_pipeline

#: Names imported on first use (PEP 562): ranking evaluation does not pay for the pipeline.
_LAZY = {
    "Pipeline": "evalframe.pipeline",
    "load_pipeline": "evalframe.pipeline",
    "run_pipeline": "evalframe.pipeline",
    "read_per_query": "evalframe.io.per_query",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'evalframe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "EvalframeError",
    "Evaluation",
    "ExitCode",
    "HitRateAtK",
    "InputError",
    "Level",
    "MRRAtK",
    "MeanAveragePrecision",
    "Metric",
    "NDCGAtK",
    "NumRelevant",
    "NumRelevantRetrieved",
    "NumRetrieved",
    "Pipeline",
    "Plan",
    "PrecisionAtK",
    "RPrecision",
    "RecallAtK",
    "Subset",
    "Tables",
    "TargetCategory",
    "evaluate",
    "load_pipeline",
    "read_per_query",
    "read_qrels",
    "read_run",
    "read_table",
    "resolve_metric",
    "run_pipeline",
]
