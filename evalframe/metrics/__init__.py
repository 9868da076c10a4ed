"""Metric families (one module each) and the registry that resolves metric names."""

from __future__ import annotations

from evalframe.metrics.base import ItemMetric, Level, Metric, QueryMetric, SetMetric, TargetCategory
from evalframe.metrics.registry import available, resolve as resolve_metric, resolve_all
from evalframe.metrics.retrieval_basic import (
    HitRateAtK,
    NumRelevant,
    NumRelevantRetrieved,
    NumRetrieved,
    PrecisionAtK,
    RecallAtK,
)
from evalframe.metrics.retrieval_ranking import MeanAveragePrecision, MRRAtK, NDCGAtK, RPrecision

__all__ = [
    "HitRateAtK",
    "ItemMetric",
    "Level",
    "MRRAtK",
    "MeanAveragePrecision",
    "Metric",
    "NDCGAtK",
    "NumRelevant",
    "NumRelevantRetrieved",
    "NumRetrieved",
    "PrecisionAtK",
    "QueryMetric",
    "RPrecision",
    "RecallAtK",
    "SetMetric",
    "TargetCategory",
    "available",
    "resolve_all",
    "resolve_metric",
]
