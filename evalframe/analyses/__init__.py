"""Analyses that run on an evaluation's result (stage "analyses", after the engine, before the checks).

Each takes an :class:`~evalframe.engine.result.Evaluation` and returns it with a named result
table added (``ev.tables["ablation"]``, ``ev.tables["tuning"]``), written as ``<name>.csv`` and
rendered as a section of ``summary.md``. Pipelines run them from their ``ablation:`` and
``tuning:`` blocks (:mod:`evalframe.pipeline.run`); Python calls the same functions.
"""

from __future__ import annotations

from evalframe.analyses.ablation import ablation, ablation_table
from evalframe.analyses.tuning import tune_thresholds

__all__ = ["ablation", "ablation_table", "tune_thresholds"]
