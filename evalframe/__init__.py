"""evalframe: exact, fast, sliceable evaluation of retrieval, RAG and evidence-gating systems.

>>> import evalframe as ef
>>> run = ef.read_run("run.trec")              # doctest: +SKIP
>>> qrels = ef.read_qrels("qrels.trec")        # doctest: +SKIP
>>> result = ef.evaluate(run, qrels, metrics=["recall@5", "ndcg@10", "mrr", "map@100"])  # doctest: +SKIP
"""

from __future__ import annotations

from evalframe.errors import ConfigError, EvalframeError, InputError
from evalframe.evaluate import Result, evaluate
from evalframe.io import read_qrels, read_run, read_table
from evalframe.pipeline import Pipeline, PipelineResult, load_pipeline, run_pipeline
from evalframe.io.per_query import read_per_query
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

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "EvalframeError",
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
    "PipelineResult",
    "PrecisionAtK",
    "RPrecision",
    "RecallAtK",
    "Result",
    "TargetCategory",
    "evaluate",
    "load_pipeline",
    "read_per_query",
    "run_pipeline",
    "read_qrels",
    "read_run",
    "read_table",
    "resolve_metric",
]
