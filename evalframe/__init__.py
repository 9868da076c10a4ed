"""evalframe: exact, fast, sliceable evaluation of retrieval, RAG and evidence-gating systems.

>>> import evalframe as ef
>>> run = ef.read_run("run.trec")              # doctest: +SKIP
>>> qrels = ef.read_qrels("qrels.trec")        # doctest: +SKIP
>>> ev = ef.evaluate(run, qrels, metrics=["recall@5", "ndcg@10", "mrr", "map@100"])  # doctest: +SKIP
>>> ev = ef.run_pipeline("evidence_contract", input="per_query.csv")                  # doctest: +SKIP
>>> ev.summary; ev.per_query; ev.per_unit("post"); ev.write("reports/x")            # doctest: +SKIP
>>> saved = ef.load("reports/x")                                                     # doctest: +SKIP

This module is also where the layers are wired together: the engine's result gets the report
side's views (:mod:`evalframe.report.views`), and the results room gets the pipeline's way of
re-reading a run's input (:func:`evalframe.pipeline.rerun.input_rows`). Every
``import evalframe.<module>`` runs this first, so no lower layer imports an upper one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalframe._lazy import lazy_names as _lazy_names
from evalframe.errors import ConfigError, EvalframeError, ExitCode, InputError
from evalframe.engine.result import Evaluation

from evalframe.report import views as _views  # noqa: F401  (attaches ev.write, ev.plot, … to Evaluation)
from evalframe.results.reader import use_input_loader as _use_input_loader


def _input_rows(info, source):
    """A result folder's input rows, re-read by the pipeline layer (imported on first use)."""
    from evalframe.pipeline.rerun import input_rows

    return input_rows(info, source)


def _input_replicates(info, source, groupings):
    """A result folder's bootstrap replicates, recomputed by the pipeline layer."""
    from evalframe.pipeline.rerun import input_replicates

    return input_replicates(info, source, groupings)


_use_input_loader(_input_rows, _input_replicates)

if TYPE_CHECKING:
    from evalframe.data.subsets import Subset
    from evalframe.data.tables import Tables
    from evalframe.engine.bootstrap import Bootstrap
    from evalframe.engine.evaluation import evaluate
    from evalframe.engine.plan import Plan
    from evalframe.io import read_qrels, read_run, read_table
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
    from evalframe.io.legal import read_legal
    from evalframe.analyses.dynamic_k_sweep import dynamic_k_sweep
    from evalframe.io.per_query import read_per_query
    from evalframe.io.retrieval_results import read_retrieval_results
    from evalframe.io.rag import read_rag
    from evalframe.analyses import ablation, tune_thresholds
    from evalframe.checks import check
    from evalframe.io.readers import register_reader
    from evalframe.metrics.listing import list_metrics
    from evalframe.metrics.params import param
    from evalframe.metrics.registry import MetricSpec, Param, register_metric
    from evalframe.results import ResultFolder, load
    from evalframe.pipeline import Pipeline, load_pipeline, run_pipeline
    from evalframe.stats.compare import compare
    from evalframe.stats.corrections import adjust_pvalues
    from evalframe.stats.power import minimum_detectable_effect, sample_size
    from evalframe.stats.sampling import StratifiedSample, stratified_estimate, stratified_sample
    from evalframe.stats.label_agreement import agreement
    from evalframe.io.recommendations import read_recommendations
    from evalframe.data.catalog import catalog
    from evalframe.io.embeddings import read_embeddings
    from evalframe.engine.knn import knn_run, relevance_judgments, score_run
    from evalframe.analyses.embedding_quality import embedding_quality, embedding_report
    from evalframe.semantic.critic import LLMCritic, OpenAICompatibleCritic
    from evalframe.semantic.judge_cache import JudgeCache
    from evalframe.metrics.judged import LLMAnswerQuality, LLMFaithfulnessScore
    from evalframe.metrics.semantic import BertScore, EmbeddingSimilarity

#: Names imported on first use (PEP 562): ``import evalframe`` costs Polars and the wiring above,
#: so a command begins reading its input before the engine is imported (:mod:`evalframe.io.early`),
#: and ranking evaluation does not pay for the pipeline.
_LAZY = {
    "Subset": "evalframe.data.subsets",
    "Tables": "evalframe.data.tables",
    "Bootstrap": "evalframe.engine.bootstrap",
    "evaluate": "evalframe.engine.evaluation",
    "Plan": "evalframe.engine.plan",
    "read_qrels": "evalframe.io",
    "read_run": "evalframe.io",
    "read_table": "evalframe.io",
    "HitRateAtK": "evalframe.metrics",
    "Level": "evalframe.metrics",
    "MeanAveragePrecision": "evalframe.metrics",
    "Metric": "evalframe.metrics",
    "MRRAtK": "evalframe.metrics",
    "NDCGAtK": "evalframe.metrics",
    "NumRelevant": "evalframe.metrics",
    "NumRelevantRetrieved": "evalframe.metrics",
    "NumRetrieved": "evalframe.metrics",
    "PrecisionAtK": "evalframe.metrics",
    "RecallAtK": "evalframe.metrics",
    "RPrecision": "evalframe.metrics",
    "TargetCategory": "evalframe.metrics",
    "resolve_metric": "evalframe.metrics",
    "Pipeline": "evalframe.pipeline",
    "load_pipeline": "evalframe.pipeline",
    "run_pipeline": "evalframe.pipeline",
    "read_per_query": "evalframe.io.per_query",
    "scan_run": "evalframe.io.scan",
    "scan_qrels": "evalframe.io.scan",
    "read_retrieval_results": "evalframe.io.retrieval_results",
    "read_legal": "evalframe.io.legal",
    "read_rag": "evalframe.io.rag",
    "ablation": "evalframe.analyses",
    "tune_thresholds": "evalframe.analyses",
    "check": "evalframe.checks",
    "load": "evalframe.results",
    "register_metric": "evalframe.metrics.registry",
    "register_reader": "evalframe.io.readers",
    "MetricSpec": "evalframe.metrics.registry",
    "Param": "evalframe.metrics.registry",
    "param": "evalframe.metrics.params",
    "list_metrics": "evalframe.metrics.listing",
    "ResultFolder": "evalframe.results",
    "dynamic_k_sweep": "evalframe.analyses.dynamic_k_sweep",
    "compare": "evalframe.stats.compare",
    "adjust_pvalues": "evalframe.stats.corrections",
    "sample_size": "evalframe.stats.power",
    "minimum_detectable_effect": "evalframe.stats.power",
    "StratifiedSample": "evalframe.stats.sampling",
    "agreement": "evalframe.stats.label_agreement",
    "read_recommendations": "evalframe.io.recommendations",
    "catalog": "evalframe.data.catalog",
    "stratified_sample": "evalframe.stats.sampling",
    "stratified_estimate": "evalframe.stats.sampling",
    "read_embeddings": "evalframe.io.embeddings",
    "knn_run": "evalframe.engine.knn",
    "score_run": "evalframe.engine.knn",
    "relevance_judgments": "evalframe.engine.knn",
    "embedding_quality": "evalframe.analyses.embedding_quality",
    "embedding_report": "evalframe.analyses.embedding_quality",
    "LLMCritic": "evalframe.semantic.critic",
    "OpenAICompatibleCritic": "evalframe.semantic.critic",
    "JudgeCache": "evalframe.semantic.judge_cache",
    "LLMFaithfulnessScore": "evalframe.metrics.judged",
    "LLMAnswerQuality": "evalframe.metrics.judged",
    "EmbeddingSimilarity": "evalframe.metrics.semantic",
    "BertScore": "evalframe.metrics.semantic",
}


__getattr__, __dir__ = _lazy_names(__name__, _LAZY, globals())


__version__ = "0.1.0"

__all__ = [
    "BertScore",
    "Bootstrap",
    "ConfigError",
    "EmbeddingSimilarity",
    "EvalframeError",
    "Evaluation",
    "ExitCode",
    "HitRateAtK",
    "InputError",
    "JudgeCache",
    "LLMAnswerQuality",
    "LLMCritic",
    "LLMFaithfulnessScore",
    "Level",
    "MRRAtK",
    "MetricSpec",
    "MeanAveragePrecision",
    "Metric",
    "NDCGAtK",
    "NumRelevant",
    "NumRelevantRetrieved",
    "NumRetrieved",
    "OpenAICompatibleCritic",
    "Param",
    "Pipeline",
    "Plan",
    "PrecisionAtK",
    "RPrecision",
    "RecallAtK",
    "ResultFolder",
    "StratifiedSample",
    "Subset",
    "Tables",
    "TargetCategory",
    "ablation",
    "adjust_pvalues",
    "check",
    "compare",
    "dynamic_k_sweep",
    "embedding_quality",
    "embedding_report",
    "evaluate",
    "knn_run",
    "load",
    "load_pipeline",
    "minimum_detectable_effect",
    "param",
    "read_legal",
    "read_embeddings",
    "read_per_query",
    "scan_qrels",
    "scan_run",
    "read_qrels",
    "read_rag",
    "read_retrieval_results",
    "read_run",
    "read_table",
    "register_metric",
    "register_reader",
    "relevance_judgments",
    "resolve_metric",
    "run_pipeline",
    "sample_size",
    "score_run",
    "stratified_estimate",
    "stratified_sample",
    "tune_thresholds",
]
