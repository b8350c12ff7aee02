"""The Spark side of ``qconsole report``: session, inventory job, summaries, trends.

Importing this module imports PySpark: only the ``report`` command's run path (and tests)
do. Listing and reading happen on the executors: the queue names are parallelised, each
queue is listed once by the core's scanner in a flatMap, its messages cut into chunks that a
partitionBy spreads over the partitions, and a mapPartitions reads the files.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import QConsoleError
from ..states import MESSAGE_STATES, READY, STATES
from . import history as history_mod
from . import inventory, summary

PYSPARK_HINT = "report needs PySpark 4 with pyarrow: pip install 'qconsole[spark]' (about 0.5 GB)"
JAVA_HINT = (
    "report needs Java 17 or 21 for Spark: install a JRE (e.g. apt install openjdk-17-jre-headless) "
    "and put java on PATH or set JAVA_HOME"
)

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""

Progress = Callable[[str], None]


class SparkMissing(QConsoleError):
    """PySpark or Java is not installed: the line says what to install."""


def _noop(_text: str) -> None:
    return None


def java_missing() -> bool:
    """What spark-class does: $JAVA_HOME/bin/java when JAVA_HOME is set, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return not os.access(os.path.join(home, "bin", "java"), os.X_OK)
    return shutil.which("java") is None


def import_pyspark() -> Any:
    try:
        import pyspark
        from pyspark.sql import SparkSession  # noqa: F401
    except ImportError:
        raise SparkMissing(PYSPARK_HINT) from None
    return pyspark


@contextlib.contextmanager
def _quiet_fd2(enabled: bool) -> Iterator[None]:
    """Point fd 2 at /dev/null while the JVM starts: it inherits it, so the launcher's and
    the JVM's own stderr (log lines, warnings) never reach the terminal."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def is_local(master: str) -> bool:
    return master.startswith("local")


def start_session(
    master: str, *, verbose: bool = False, conf: dict[str, str] | None = None, app_name: str = "qconsole report"
) -> tuple[Any, bool]:
    """``(SparkSession, created)``; ``created`` is False when one was already running (tests).

    Raises SparkMissing with one line when PySpark or Java is missing.
    """
    import_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if java_missing():
        raise SparkMissing(JAVA_HINT)
    # Workers run PYSPARK_PYTHON (read from the environment only), else whatever python3 is on
    # PATH: make them run this interpreter, unless the operator chose one (a cluster's path).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if is_local(master):
        builder = builder.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
    if not verbose:
        props = os.path.join(tempfile.mkdtemp(prefix="qconsole-spark-"), "log4j2.properties")
        with open(props, "w") as fh:
            fh.write(_LOG4J2)
        opt = f"-Dlog4j2.configurationFile=file:{props}"
        builder = builder.config("spark.driver.extraJavaOptions", opt).config("spark.executor.extraJavaOptions", opt)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    try:
        with _quiet_fd2(not verbose):
            spark = builder.getOrCreate()
    except Exception as err:
        cls = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)
        condition = cls() if callable(cls) else None
        if condition == "JAVA_GATEWAY_EXITED" or "JAVA_GATEWAY_EXITED" in str(err):
            raise SparkMissing(JAVA_HINT) from None
        raise
    spark.sparkContext.setLogLevel("INFO" if verbose else "ERROR")
    return spark, True


def ship_package(spark: Any) -> None:
    """On a cluster, send qconsole (pure Python, stdlib-only on the executors) with the job,
    so the nodes need PySpark and Python but not qconsole installed."""
    import qconsole

    pkg = os.path.dirname(os.path.abspath(qconsole.__file__))
    path = os.path.join(tempfile.mkdtemp(prefix="qconsole-py-"), "qconsole.zip")
    with zipfile.ZipFile(path, "w") as zf:
        for dirpath, _dirs, files in os.walk(pkg):
            for name in files:
                if name.endswith(".py"):
                    full = os.path.join(dirpath, name)
                    zf.write(full, os.path.relpath(full, os.path.dirname(pkg)))
    spark.sparkContext.addPyFile(path)


def _spark_type(word: str) -> Any:
    from pyspark.sql import types as T

    return {
        "string": T.StringType(), "long": T.LongType(), "double": T.DoubleType(),
        "timestamp": T.TimestampType(),
    }[word]


def schema_of(columns: Sequence[tuple[str, str]]) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, _spark_type(t), True) for n, t in columns])


def inventory_schema() -> Any:
    return schema_of(inventory.COLUMNS)


def file_uri(path: str) -> str:
    """An explicit file: URI, so a cluster whose default FS is HDFS still writes to the shared mount."""
    return "file://" + os.path.abspath(path)


def inventory_frame(spark: Any, root: str, layout: str, queues: Sequence[str], now: float) -> Any:
    """The inventory DataFrame (lazy): one row per file, listed and read on the executors."""
    sc = spark.sparkContext
    parts = max(1, sc.defaultParallelism * 2)
    specs = [(root, layout, q, now) for q in queues]
    rdd = (
        sc.parallelize(specs, max(1, min(len(specs), parts)))
        .mapPartitions(functools.partial(inventory.keyed_chunks, partitions=parts))
        .partitionBy(parts, lambda key: key)
        .mapPartitions(inventory.rows_of_partition)
    )
    return spark.createDataFrame(rdd, inventory_schema(), verifySchema=False)


def queue_summaries(spark: Any, msgs: Any, queues: Sequence[tuple[str, str]], now: float, threshold: int) -> list[dict[str, Any]]:
    """Per-queue stats (the shape of summary.queue_stats) computed by Spark from the inventory."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    state = F.col("state")
    is_msg = state.isin(*MESSAGE_STATES)
    # greatest() skips nulls: keep a missing created_at null instead of an age of 0
    age = F.when(
        F.col("created_at").isNotNull(),
        F.greatest(F.lit(0.0), F.lit(float(now)) - F.col("created_at").cast("double")),
    )
    pcts = list(summary.PERCENTILES)
    per_queue = msgs.groupBy("queue").agg(
        *[F.sum(F.when(state == s, 1).otherwise(0)).alias(f"n_{s}") for s in STATES],
        F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("errors"),
        F.sum(F.when(is_msg, F.col("file_bytes"))).alias("bytes"),
        F.percentile(F.when(is_msg, age), pcts).alias("age_p"),
        F.max(F.when(is_msg, age)).alias("age_max"),
        F.percentile(F.when(is_msg, F.col("size_bytes")), pcts).alias("size_p"),
        F.max(F.when(is_msg, F.col("size_bytes"))).alias("size_max"),
        F.max(F.when(state == READY, age)).alias("oldest_ready"),
        F.sum(F.when(is_msg & (F.col("requeue_counter") >= threshold), 1).otherwise(0)).alias("poison_count"),
    )
    dup_groups = (
        msgs.where(is_msg & F.col("payload_sha256").isNotNull())
        .groupBy("queue", "payload_sha256").count().where(F.col("count") > 1)
        .groupBy("queue").agg(F.sum("count").alias("duplicates"))
    )
    ranked = Window.partitionBy("queue").orderBy(F.col("requeue_counter").desc(), F.col("id").asc())
    poison_rows = (
        msgs.where(is_msg & (F.col("requeue_counter") >= threshold))
        .select("queue", "id", "requeue_counter", F.row_number().over(ranked).alias("rank"))
        .where(F.col("rank") <= summary.POISON_LIST_CAP)
    )
    stats = {name: summary.empty_stats(name, layout) for name, layout in queues}
    for row in per_queue.collect():
        st = stats.get(row["queue"])
        if st is None:
            continue
        counts = st["counts"]
        for s in STATES:
            counts[s] = int(row[f"n_{s}"] or 0)
        counts["total"] = sum(counts[s] for s in MESSAGE_STATES)
        age_p = row["age_p"] or [None, None]
        size_p = row["size_p"] or [None, None]
        st["percentiles"] = {
            "age_s": summary.spread(age_p[0], age_p[1], row["age_max"]),
            "size_bytes": summary.spread(size_p[0], size_p[1], row["size_max"]),
        }
        st["oldest_ready_age_s"] = summary._r(row["oldest_ready"])
        st["bytes"] = int(row["bytes"] or 0)
        st["errors"] = int(row["errors"] or 0)
        st["poison_count"] = int(row["poison_count"] or 0)
    for row in dup_groups.collect():
        if row["queue"] in stats:
            stats[row["queue"]]["duplicates"] = int(row["duplicates"])
    poison: dict[str, list[tuple[str | None, int]]] = {}
    for row in poison_rows.collect():
        poison.setdefault(row["queue"], []).append((row["id"], int(row["requeue_counter"])))
    for name, items in poison.items():
        if name in stats:
            stats[name]["poison"] = summary.poison_list(items)
    return list(stats.values())


def trends_frame(spark: Any, samples: list[tuple]) -> Any:
    """Hourly backlog trends per queue from history samples."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(samples, schema_of(history_mod.SAMPLE_COLUMNS))
    return (
        frame.groupBy("queue", F.date_trunc("hour", "at").alias("hour"))
        .agg(
            F.count(F.lit(1)).alias("samples"),
            F.min("ready").alias("ready_min"),
            F.round(F.avg("ready"), 3).alias("ready_avg"),
            F.max("ready").alias("ready_max"),
            F.round(F.avg("oldest_ready_age_s"), 3).alias("oldest_ready_age_avg_s"),
            F.round(F.max("oldest_ready_age_s"), 3).alias("oldest_ready_age_max_s"),
        )
        .orderBy("queue", "hour")
    )


def trend_docs(rows: Sequence[Any]) -> list[dict[str, Any]]:
    from ..output.stats_json import iso_utc

    out = []
    for r in rows:
        d = {k: r[k] for k in history_mod.TREND_COLUMNS}
        d["hour"] = iso_utc(r["hour"].timestamp()) if r["hour"] is not None else None
        out.append(d)
    return out


def run_report(
    spark: Any,
    *,
    root: str,
    layout: str,
    queues: Sequence[str],
    root_errors: Sequence[str],
    out_dir: str,
    now: float,
    threshold: int = summary.DEFAULT_POISON_THRESHOLD,
    history_files: Sequence[str] = (),
    progress: Progress = _noop,
) -> dict[str, Any]:
    """Run the whole report on ``spark``; writes DIR/messages/, DIR/trends/, DIR/summary.json."""
    import json

    os.makedirs(out_dir, exist_ok=True)
    messages_dir = os.path.join(out_dir, "messages")
    samples: list[tuple] | None = None
    hist_info: dict[str, Any] | None = None
    if history_files:  # read first: a missing file fails before the long job
        samples, hist_info = history_mod.read_history(history_files)

    progress(f"listing and reading {len(queues)} queue(s) on the executors")
    frame = inventory_frame(spark, root, layout, queues, now)
    frame.write.mode("overwrite").parquet(file_uri(messages_dir))

    progress("summarising per queue")
    msgs = spark.read.parquet(file_uri(messages_dir))
    stats = queue_summaries(spark, msgs, [(q, layout) for q in queues], now, threshold)

    trends: list[dict[str, Any]] | None = None
    trends_dir = None
    if samples is not None:
        progress(f"backlog trends from {len(samples)} history sample(s)")
        trends_dir = os.path.join(out_dir, "trends")
        tf = trends_frame(spark, samples)
        tf.write.mode("overwrite").parquet(file_uri(trends_dir))
        trends = trend_docs(spark.read.parquet(file_uri(trends_dir)).orderBy("queue", "hour").collect())

    sc = spark.sparkContext
    doc = summary.report_document(
        root=root, layout=layout, stats=stats,
        engine={"name": "spark", "spark_version": spark.version, "master": sc.master},
        generated_at=now, threshold=threshold,
        outputs={"messages": messages_dir, "trends": trends_dir},
        root_errors=root_errors, trends=trends, history=hist_info,
    )
    target = os.path.join(out_dir, "summary.json")
    tmp = os.path.join(out_dir, ".qconsole-summary.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=True)
        fh.write("\n")
    os.replace(tmp, target)
    return doc
