"""Declarative pipelines: a YAML file (or a mapping) that names the same stages ``evaluate()`` runs.

:mod:`~evalframe.pipeline.spec` validates a spec strictly and turns it into a
:class:`~evalframe.engine.evaluation.Plan`; :mod:`~evalframe.pipeline.run` reads the input and
runs the plan through the engine.

>>> import evalframe as ef
>>> ev = ef.run_pipeline("pipelines/evidence_contract.yaml", input="data_samples/per_query.csv")  # doctest: +SKIP
>>> ev.summary.filter(grouping="fold", metric="ndcg@10")                                          # doctest: +SKIP
"""

from __future__ import annotations

from evalframe.pipeline.run import Pipeline, load_pipeline, run_pipeline, with_input
from evalframe.pipeline.spec import InputSpec, PipelineSpec, check_spec

__all__ = ["InputSpec", "Pipeline", "PipelineSpec", "check_spec", "load_pipeline", "run_pipeline", "with_input"]
