"""The report tests' ONE session-scoped local SparkSession (roots: report_roots.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """local[1], UI and console progress off, one shuffle partition, log level ERROR."""
    pytest.importorskip("pyspark")
    from qconsole.report import spark_job

    if spark_job.java_missing():
        pytest.skip("Java (17 or 21) not found: Spark tests skipped")
    old = os.environ.get("SPARK_LOCAL_IP")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session, _created = spark_job.start_session(
        "local[1]",
        app_name="qconsole-tests",
        conf={
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "1",
            "spark.local.dir": str(tmp_path_factory.mktemp("spark-local")),
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        if old is None:
            os.environ.pop("SPARK_LOCAL_IP", None)
        else:
            os.environ["SPARK_LOCAL_IP"] = old
