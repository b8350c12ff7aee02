"""`report` on a real local SparkSession (one per test session) against roots written by the
real clients: Spark's figures equal the core scan's counts, the plain-Python summary and
hand-computed values; the CLI writes summary.json + Parquet; missing Java is one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from qconsole.report import history, inventory, summary
from qconsole.backends import open_target as Root
from qconsole.states import STATES
from report_roots import build_ddmq_root, build_vsqs_root, history_lines

pytestmark = pytest.mark.spark


def _run(spark, root: str, out: str, **kw):
    from qconsole.report import spark_job

    handle = Root(root)
    names, errors = handle.queue_names()
    now = time.time()
    doc = spark_job.run_report(spark, root=handle.path, layout=handle.layout, queues=names,
                               root_errors=errors, out_dir=out, now=now, **kw)
    return handle, names, now, doc


def test_ddmq_report_equals_scan_python_pass_and_hand_values(spark, tmp_path):
    from pyspark.testing import assertDataFrameEqual

    from qconsole.report import spark_job

    build_ddmq_root(str(tmp_path / "dd"))
    hist = str(tmp_path / "stats.jsonl")
    history_lines(hist)
    out = str(tmp_path / "out")
    handle, names, now, doc = _run(spark, str(tmp_path / "dd"), out, history_files=[hist], threshold=3)

    # the inventory Parquet (written by the executors with pyarrow) is exactly what the
    # plain-Python scanner produces, and Spark reads it with the inventory schema
    rows = inventory.scan_root_rows(handle.path, handle.layout, names, now)
    written = spark.read.parquet(os.path.join(out, "messages"))
    assert written.schema == spark_job.inventory_schema()
    assertDataFrameEqual(written, spark.createDataFrame(rows, spark_job.inventory_schema()))
    assert not [f for f in os.listdir(os.path.join(out, "messages")) if f.startswith(".")]  # no temp files left
    # Spark's summaries equal the plain-Python pass over the same rows, field by field
    expected = summary.queue_stats(rows, [(n, handle.layout, "requeue_counter") for n in names], now, 3)
    for got, want in zip(doc["queues"], expected):
        for key in want:
            assert (key, got[key]) == (key, want[key])
    assert doc["queues"] == expected
    # the job summarised on the executors (partials + hash buckets); a Spark SQL query over
    # the Parquet it wrote gives the same figures
    sql = spark_job.queue_summaries(spark, spark_job.read_inventory(spark, os.path.join(out, "messages")),
                                    [(n, handle.layout) for n in names], now, 3, "requeue_counter")
    assert sql == expected
    # and the counts equal the core scan's (what `stats` prints)
    scan = {q.name: q for q in handle.scan(now=now).queues}
    for q in doc["queues"]:
        assert {s: q["counts"][s] for s in STATES} == scan[q["name"]].counts
    jobs = next(q for q in doc["queues"] if q["name"] == "jobs")
    assert jobs["percentiles"]["size_bytes"] == {"p50": 7.5, "p95": 85.0, "p99": 97.0, "max": 100.0}
    assert [p["redeliveries"] for p in jobs["poison"]["top"]] == [4, 3] and jobs["poison"]["count"] == 2
    assert jobs["duplicates"]["messages"] == 2 and jobs["errors"] == 3
    assert [b["count"] for b in jobs["age_histogram"]] == [6, 0, 0, 0, 0, 0, 1]
    assert [b["count"] for b in doc["totals"]["age_histogram"]] == [6, 0, 0, 0, 0, 0, 1]
    assert doc["totals"]["total"] == 8 and doc["totals"]["foreign"] == 1 and doc["totals"]["poison_count"] == 2
    assert doc["oldest_backlog"][0]["name"] == "jobs"
    assert doc["notes"] == ["ddmq does not record who sent a message: no top senders"]

    on_disk = json.load(open(os.path.join(out, "summary.json")))
    assert on_disk == json.loads(json.dumps(doc))
    assert on_disk["schema"] == "qconsole.report/2"
    assert [b["bucket"] for b in on_disk["age_buckets"]] == list(summary.AGE_BUCKET_LABELS)
    assert on_disk["engine"]["spark_version"] == spark.version
    assert on_disk["engine"]["master"] == "local[1]"

    # hourly trends, hand-computed: 10:00 has ready 4, 8, 3 and ages 10, 30, 50
    assert doc["history"]["skipped_lines"] == 1
    assert doc["trends"] == [
        {"queue": "jobs", "hour": "2024-05-01T10:00:00.000Z", "samples": 3, "ready_min": 3,
         "ready_avg": 5.0, "ready_max": 8, "oldest_ready_age_avg_s": 30.0, "oldest_ready_age_max_s": 50.0},
        {"queue": "jobs", "hour": "2024-05-01T11:00:00.000Z", "samples": 1, "ready_min": 0,
         "ready_avg": 0.0, "ready_max": 0, "oldest_ready_age_avg_s": None, "oldest_ready_age_max_s": None},
    ]
    trends = spark.read.parquet(os.path.join(out, "trends"))
    assert trends.columns == list(history.TREND_COLUMNS) and trends.count() == 2


def test_cli_report_on_a_vsqs_root_writes_summary_and_parquet(spark, tmp_path):
    from typer.testing import CliRunner

    from qconsole.cli import app

    build_vsqs_root(str(tmp_path / "vs"))
    out = str(tmp_path / "out")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "vs"), "--out", out, "--poison-threshold", "2"])
    assert result.exit_code == 0, result.output
    assert "jobs" in result.stdout and "summary.json" in result.stdout
    # the terminal summary: the qshape histogram as a table with bars, and what vsqs does not record
    assert "0-5m" in result.stdout and "160m+" in result.stdout and "█" in result.stdout
    assert "vsqs does not count redeliveries" in result.stdout
    # progress on stderr: one line per stage, with its counts
    err = result.stderr
    assert "listing: 6 file(s) in 2 queue(s)" in err, err
    assert "reading: 6 file(s) read into " in err, err
    assert "summarising: 2 queue(s), 5 message(s), 6 inventory row(s)" in err, err
    doc = json.load(open(os.path.join(out, "summary.json")))
    assert doc["poison_threshold"] == 2
    scan = {q.name: q for q in Root(str(tmp_path / "vs")).scan().queues}
    for q in doc["queues"]:
        assert {s: q["counts"][s] for s in STATES} == scan[q["name"]].counts
    jobs = next(q for q in doc["queues"] if q["name"] == "jobs")
    assert jobs["duplicates"]["messages"] == 2 and jobs["errors"] == 2  # binary payload, foreign file: counted, not fatal
    assert jobs["poison"] is None and doc["totals"]["poison_count"] is None
    frame = spark.read.parquet(os.path.join(out, "messages"))
    assert frame.count() == 6  # 5 message files + 1 foreign
    assert frame.where("error = 'binary payload'").count() == 1
    assert spark.getActiveSession() is not None  # the CLI leaves a session it did not start


@pytest.mark.parametrize("how", ["precheck", "gateway"])
def test_missing_java_is_one_line_and_exit_2(tmp_path, how):
    pytest.importorskip("pyspark")
    build_vsqs_root(str(tmp_path / "vs"))
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/nonexistent"
    # "gateway": skip qconsole's own check, so PySpark's JAVA_GATEWAY_EXITED is what is caught
    patch = "import qconsole.report.spark_job as j; j.java_missing = lambda: False; " if how == "gateway" else ""
    code = patch + "import sys; from qconsole.cli import main; sys.argv = ['qconsole', 'report', sys.argv[1], '--out', sys.argv[2]]; main()"
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "vs"), str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Java 17 or 21" in lines[0] and "install" in lines[0]


def test_a_bad_master_url_is_one_line_and_exit_2(tmp_path):
    pytest.importorskip("pyspark")
    build_vsqs_root(str(tmp_path / "vs"))
    proc = subprocess.run(
        [sys.executable, "-m", "qconsole", "report", str(tmp_path / "vs"), "--master", "bogus://nowhere",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "unknown Spark master 'bogus://nowhere'" in lines[0] and "spark://HOST:PORT" in lines[0]
    assert not os.path.exists(tmp_path / "out")  # refused before anything was written


def test_the_class_archive_is_recorded_then_adopted_only_if_a_jvm_starts_with_it(tmp_path, monkeypatch):
    """Driver JVM start-up: the first run records a class-data-sharing archive at exit, a later
    run adopts it once it has settled -- and only if a JVM starts with it (a cut one crashes)."""
    from qconsole.report import spark_job

    if spark_job.java_missing():
        pytest.skip("no Java")
    monkeypatch.delenv(spark_job.CDS_ENV, raising=False)
    cache = tmp_path / "cache"
    (opt,) = spark_job.class_archive_options(str(cache))
    assert opt.startswith("-XX:ArchiveClassesAtExit=")
    recording = opt.split("=", 1)[1]
    archive = recording.rsplit(".", 1)[0]
    java = spark_job._java_binary()
    subprocess.run([java, *spark_job.DRIVER_JVM_OPTIONS, opt, "-version"], check=True, capture_output=True)
    assert os.path.getsize(recording) > 0
    assert spark_job.class_archive_options(str(cache)) == []  # just written: maybe still being written
    old = time.time() - 60
    os.utime(recording, (old, old))
    assert spark_job.class_archive_options(str(cache)) == [f"-XX:SharedArchiveFile={archive}"]
    assert os.listdir(cache) == [os.path.basename(archive)]
    subprocess.run([java, *spark_job.DRIVER_JVM_OPTIONS, f"-XX:SharedArchiveFile={archive}", "-version"], check=True,
                   capture_output=True)

    # a recording cut short (its JVM killed mid-write) is never adopted, and is removed
    data = open(archive, "rb").read()
    os.unlink(archive)
    cut = archive + ".123"
    with open(cut, "wb") as fh:
        fh.write(data[: len(data) // 3])
    os.utime(cut, (old, old))
    (opt,) = spark_job.class_archive_options(str(cache))
    assert opt.startswith("-XX:ArchiveClassesAtExit=") and not os.path.exists(cut) and not os.path.exists(archive)
    assert not [n for n in os.listdir(cache) if n.startswith("hs_err")]

    # not in a directory others can write to, and never when turned off
    os.chmod(cache, 0o777)
    assert spark_job.class_archive_options(str(cache)) == []
    os.chmod(cache, 0o700)
    monkeypatch.setenv(spark_job.CDS_ENV, "0")
    assert spark_job.class_archive_options(str(cache)) == []


@pytest.mark.parametrize("where", ["root", "inside", "above"])
def test_an_out_overlapping_the_root_is_refused_before_anything_is_written(tmp_path, where):
    """A queue named messages (or trends) in the root was replaced by the report's output."""
    pytest.importorskip("pyspark")
    root = tmp_path / "vs"
    build_vsqs_root(str(root))
    os.makedirs(root / "messages")
    with open(root / "messages" / "1700000000000001", "w") as fh:
        fh.write("a message in a queue named messages")
    before = sorted(os.listdir(root / "messages"))
    out = {"root": root, "inside": root / "jobs", "above": tmp_path}[where]
    proc = subprocess.run([sys.executable, "-m", "qconsole", "report", str(root), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "overlaps the queue root" in lines[0], proc.stderr
    assert sorted(os.listdir(root / "messages")) == before
    assert not os.path.exists(out / "summary.json")


def test_a_rerun_replaces_its_own_output_and_nothing_else(spark, tmp_path):
    """messages/ of an earlier run is replaced; one holding a file no report writes is refused
    (kept as it is); a link planted at the summary's tmp name is replaced, never written through."""
    root = str(tmp_path / "vs")
    build_vsqs_root(root)
    out = str(tmp_path / "out")
    _run(spark, root, out)
    first = sorted(os.listdir(os.path.join(out, "messages")))
    assert first and all(n.startswith("part-") for n in first)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, os.path.join(out, ".qconsole-summary.json.tmp"))
    _run(spark, root, out)  # its own output: replaced
    assert victim.read_text() == "precious"
    assert not os.path.islink(os.path.join(out, "summary.json"))
    assert json.load(open(os.path.join(out, "summary.json")))["queues"]
    with open(os.path.join(out, "messages", "notes.txt"), "w") as fh:
        fh.write("the operator's")
    from qconsole.errors import QConsoleError

    with pytest.raises(QConsoleError, match="holds 1 entry no report wrote"):
        _run(spark, root, out)
    assert open(os.path.join(out, "messages", "notes.txt")).read() == "the operator's"


def test_the_driver_jvms_own_warnings_never_reach_stdout(tmp_path):
    """A first run records the class archive as the JVM exits, after qconsole has: its ~150
    "[warning][cds]" lines (classes CDS cannot archive) went to the JVM's stdout, which is
    qconsole's, and landed in a report redirected to a file. The driver's options send the
    JVM's warnings to stderr."""
    from pyspark.find_spark_home import _find_spark_home

    from qconsole.report import spark_job

    if spark_job.java_missing():
        pytest.skip("no Java")
    archive = str(tmp_path / "a.jsa")
    done = subprocess.run([spark_job._java_binary(), *spark_job.DRIVER_JVM_OPTIONS, f"-XX:ArchiveClassesAtExit={archive}",
                           "-cp", os.path.join(_find_spark_home(), "jars", "*"), "org.apache.spark.deploy.SparkSubmit",
                           "--version"], capture_output=True, text=True, timeout=120)
    assert os.path.getsize(archive) > 0  # it did record: the warnings' cause was there
    assert "[warning]" not in done.stdout, done.stdout[:2000]
