"""Declarative pipelines: a YAML file (or a mapping) that names the same stages ``evaluate()`` runs.

:mod:`~evalframe.pipeline.spec` validates a spec strictly and turns it into a
:class:`~evalframe.engine.evaluation.Plan`; :mod:`~evalframe.pipeline.run` reads the input and
runs the plan through the engine.

>>> import evalframe as ef
>>> ev = ef.run_pipeline("pipelines/evidence_contract.yaml", input="data_samples/per_query.csv")  # doctest: +SKIP
>>> ev.summary.filter(grouping="fold", metric="ndcg@10")                                          # doctest: +SKIP

The names below are imported on first use (PEP 562): a module of this package is imported
without the others, so ``evalframe run`` reads its pipeline file and begins reading the input
(:mod:`evalframe.io.early`) before the engine and the analyses are imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalframe._lazy import lazy_names

if TYPE_CHECKING:
    from evalframe.pipeline.run import Pipeline, load_pipeline, run_pipeline, with_input
    from evalframe.pipeline.spec import InputSpec, PipelineSpec, check_spec

_LAZY = {
    "Pipeline": "evalframe.pipeline.run",
    "load_pipeline": "evalframe.pipeline.run",
    "run_pipeline": "evalframe.pipeline.run",
    "with_input": "evalframe.pipeline.run",
    "InputSpec": "evalframe.pipeline.spec",
    "PipelineSpec": "evalframe.pipeline.spec",
    "check_spec": "evalframe.pipeline.spec",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

__all__ = ["InputSpec", "Pipeline", "PipelineSpec", "check_spec", "load_pipeline", "run_pipeline", "with_input"]
