"""`qconsole report --master spark://...` on a real Spark standalone cluster: a master and one
worker started from the installed PySpark (spark-class) on loopback, stopped by pid."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from qconsole.backends import open_target as Root
from report_roots import build_ddmq_root

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: str, text: str, proc: subprocess.Popen, timeout: float) -> None:
    """Until ``text`` appears in the log at ``path``; fail with the log if the process dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as fh:
            if text in fh.read():
                return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    with open(path, errors="replace") as fh:
        pytest.fail(f"no {text!r} within {timeout}s (exit {proc.poll()}):\n{fh.read()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """spark-class execs java, so the pid is the JVM's: TERM it, KILL it if it lingers."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A Spark standalone master and one worker (2 cores, 2 GiB) on 127.0.0.1."""
    pytest.importorskip("pyspark")
    from pyspark.find_spark_home import _find_spark_home

    from qconsole.report import spark_job

    if spark_job.java_missing():
        pytest.skip("Java (17 or 21) not found: cluster test skipped")
    home = _find_spark_home()
    spark_class = os.path.join(home, "bin", "spark-class")
    tmp = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=str(tmp),
               SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable)
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = str(tmp / "master.log"), str(tmp / "worker.log")
    procs: list[subprocess.Popen] = []
    try:
        with open(master_log, "w") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui)],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp),
            ))
        _wait_for(master_log, "I have been elected leader", procs[0], 90)
        with open(worker_log, "w") as log:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                 "--webui-port", str(_free_port()), "--cores", "2", "--memory", "2g",
                 "--work-dir", str(tmp / "work")],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp),
            ))
        _wait_for(worker_log, "Successfully registered with master", procs[1], 90)
        yield {"url": url, "env": env, "master_log": master_log, "worker_log": worker_log}
    finally:
        for proc in reversed(procs):  # worker first, then master; always, by pid
            _stop(proc)


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """The summary without what depends on the clock or the engine (ages move between runs)."""
    doc = json.loads(json.dumps(doc))
    for key in ("generated_at", "engine", "outputs", "oldest_backlog"):
        doc.pop(key)
    for q in doc["queues"]:
        q["percentiles"].pop("age_s")
        q.pop("oldest_ready_age_s")
    return doc


def test_report_on_a_standalone_cluster_equals_the_local_run(standalone, spark, tmp_path):
    from qconsole.report import spark_job

    root = str(tmp_path / "dd")
    build_ddmq_root(root)
    out = str(tmp_path / "cluster-out")
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "qconsole", "report", root, "--master", standalone["url"], "--out", out],
        env=standalone["env"], capture_output=True, text=True, timeout=300,
    )
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    on_cluster = json.load(open(os.path.join(out, "summary.json")))
    assert on_cluster["engine"]["master"] == standalone["url"]
    # the work really ran on the worker's executor, not in the driver
    with open(standalone["worker_log"]) as fh:
        assert "Asked to launch executor" in fh.read()
    assert "listing: 9 file(s) in 2 queue(s)" in proc.stderr and "summarising:" in proc.stderr

    handle = Root(root)
    names, errors = handle.queue_names()
    local = spark_job.run_report(spark, root=handle.path, layout=handle.layout, queues=names,
                                 root_errors=errors, out_dir=str(tmp_path / "local-out"), now=time.time())
    assert _comparable(on_cluster) == _comparable(local)
    assert on_cluster["totals"]["total"] == 8
    print(f"cluster report took {took:.1f}s")
