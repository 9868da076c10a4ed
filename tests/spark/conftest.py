"""One SparkSession for every Spark test of a test process: ``local[2]``, few shuffle
partitions, no UI, quiet logs, the executors on this test's Python (so they import the same
evalframe), JVM settings for a short life. Starting a JVM costs seconds: never start a second one."""

from __future__ import annotations

import os
import signal
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    # The Python workers must be this interpreter (the venv's evalframe and pyarrow), not `python3`.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    # SparkContext installs its own SIGINT handler (cancel the jobs, then KeyboardInterrupt) and stop()
    # leaves it: a SIGINT later in this worker's session (once, at its shutdown on a busy machine) ran it
    # on the stopped context, an AttributeError that pytest reported as an unraisable exception. The
    # previous handler comes back after stop().
    interrupt_handler = signal.getsignal(signal.SIGINT)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("evalframe-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # a short-lived JVM on tiny data: the quick JIT tier, one GC thread, no generated code (its compilation
        # costs more CPU than these rows: neither whole stages nor single expressions, which are then
        # interpreted), no adaptive re-planning — about half the CPU of a default session. Spark's own jars are
        # not re-verified as they load (the JDK's are not either): with the expressions interpreted, the JVM's
        # CPU in the Spark test went from about 13.6 to 11.2 s (issue 20)
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=ERROR -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    signal.signal(signal.SIGINT, interrupt_handler)
