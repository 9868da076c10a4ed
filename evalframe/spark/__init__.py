"""evalframe on Apache Spark: :func:`evaluate` takes Spark DataFrames and returns the same
:class:`~evalframe.engine.result.Evaluation` as :func:`evalframe.evaluate` on the same rows.

>>> from evalframe.spark import evaluate                                  # doctest: +SKIP
>>> ev = evaluate(run_sdf, qrels_sdf, metrics=["recall@10", "ndcg@10"],   # doctest: +SKIP
...               slices={"overall": [], "topic": ["topic"]}, queries=queries_sdf,
...               bootstrap=ef.Bootstrap(resamples=1000))

Needs ``pip install 'evalframe[spark]'`` (pyspark 4) and a Java runtime (17 or 21). The Spark
tasks import evalframe, so it must be importable on every executor: installed on the cluster's
Python, or shipped with the job (``spark-submit --py-files evalframe.zip`` / a packed virtual
environment with ``--archives``). How it runs: :mod:`evalframe.spark.driver` (the job) and
:mod:`evalframe.spark.tasks` (what each task computes).
"""

from evalframe.spark.driver import evaluate

__all__ = ["evaluate"]
