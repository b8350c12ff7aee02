"""The Spark side of ``qconsole report``: session, the inventory job, trends.

Importing this module imports PySpark: only the ``report`` command's run path (and tests)
do. Listing and reading happen beside or on the executors, Arrow all the way: in local mode a
helper process lists the root while the JVM starts (spool.py), on a cluster listing tasks cut
each queue into chunk descriptors (inventory.py) that an identity partitioner deals over the
read tasks. Each read task turns its chunks into Arrow record batches, writes them as its own
Parquet file with pyarrow (mapInArrow would need pandas on every node, and the rows would
cross into the JVM only to be written out again) and summarises what it read into mergeable
per-queue partials; its payload hashes go by hash bucket to one more stage that counts the
duplicates. One job, one collect of small records; :func:`queue_summaries` is the same
summary as a Spark SQL query over the Parquet.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import QConsoleError
from ..states import MESSAGE_STATES, READY, STATES
from . import history as history_mod
from . import inventory, outputs, summary
from . import spool as spool_mod

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

#: the driver JVM's start-up flags (in local mode it is the executors' JVM too)
DRIVER_JVM_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                      # the JVM's own warnings go to stderr, not to the report's stdout: a first
                      # run's class archive is written as the JVM exits, after qconsole has, and
                      # its ~150 "[warning][cds]" lines landed in the report redirected to a file
                      "-Xlog:disable", "-Xlog:all=warning:stderr")


#: set to 0 to start the driver JVM without the class archive
CDS_ENV = "QCONSOLE_SPARK_CDS"


def _java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    path = os.path.join(home, "bin", "java") if home else (shutil.which("java") or "java")
    return os.path.realpath(path)


def class_archive_options(cache: str | None = None) -> list[str]:
    """The driver JVM's class-data-sharing archive (AppCDS): about half of Spark's start-up is
    loading and verifying ~10k classes from its 280 jars; the first run records them at exit
    into ``~/.cache/qconsole/`` (``-XX:ArchiveClassesAtExit``), later runs map them in
    (``-XX:SharedArchiveFile``). One archive per Java binary and Spark install (the JVM itself
    ignores one that does not match its class path); a recording is adopted only once a JVM
    starts with it. Only in a cache directory that is
    the user's own and not writable by others. ``QCONSOLE_SPARK_CDS=0`` turns it off."""
    import hashlib

    if os.environ.get(CDS_ENV, "1") == "0":
        return []
    try:
        from pyspark.find_spark_home import _find_spark_home
        import pyspark

        cache = cache or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "qconsole")
        os.makedirs(cache, mode=0o700, exist_ok=True)
        st = os.lstat(cache)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return []
        java = _java_binary()
        jst = os.stat(java)
        key = hashlib.sha256(
            f"{java}\0{jst.st_size}\0{jst.st_mtime_ns}\0{pyspark.__version__}\0{_find_spark_home()}\0{DRIVER_JVM_OPTIONS}".encode()
        ).hexdigest()[:16]
        archive = os.path.join(cache, f"spark-{pyspark.__version__}-{key}.jsa")
        return _archive_options(java, archive, cache)
    except (OSError, ImportError):
        pass
    return []


def _own_file(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _archive_options(java: str, archive: str, cache: str) -> list[str]:
    """Use ``archive``; else adopt one a previous run recorded (``archive.<pid>``: the JVM writes
    it at exit, after its driver has gone on, so only one not written for 20 s, and only if a
    JVM starts with it -- a cut one would crash it); else record one in this run."""
    prefix = os.path.basename(archive) + "."
    pending = []
    for name in os.listdir(cache):
        if name.startswith(prefix):
            path = os.path.join(cache, name)
            st = os.lstat(path)
            pending.append((st.st_mtime, path, st))
    pending.sort(reverse=True)
    settled = [(path, st) for mtime, path, st in pending if time.time() - mtime > 20]
    have = False
    try:
        have = _own_file(os.lstat(archive))
    except FileNotFoundError:
        pass
    for path, st in settled:
        if not have and _own_file(st) and _archive_works(java, path, cache):
            os.replace(path, archive)
            have = True
        else:
            os.unlink(path)  # a spare or broken recording (~150 MB)
    if have:
        return [f"-XX:SharedArchiveFile={archive}"]
    if len(settled) < len(pending):
        return []  # another run's JVM is writing one now
    return [f"-XX:ArchiveClassesAtExit={archive}.{os.getpid()}"]


def _archive_works(java: str, path: str, cache: str) -> bool:
    """Whether ``java`` starts with the archive at ``path`` (a truncated one dies of SIGBUS)."""
    import subprocess

    try:
        done = subprocess.run(
            [java, *DRIVER_JVM_OPTIONS, f"-XX:SharedArchiveFile={path}", "-Xshare:auto",
             f"-XX:ErrorFile={os.path.join(cache, 'hs_err_%p.log')}", "-version"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, cwd=cache,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    for name in os.listdir(cache):
        if name.startswith("hs_err_"):
            os.unlink(os.path.join(cache, name))
    return done.returncode == 0


class SparkMissing(QConsoleError):
    """PySpark or Java is not installed: the line says what to install."""


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


#: what Spark accepts as a master URL (spark-submit exits before its gateway starts otherwise,
#: which would look like a missing Java)
MASTER_PREFIXES = ("local", "spark://", "yarn", "k8s://", "mesos://")


def check_master(master: str) -> None:
    """A QConsoleError (one line, exit 2) for a master URL Spark would refuse."""
    if not master.startswith(MASTER_PREFIXES):
        raise QConsoleError(
            f"unknown Spark master {master!r}: use local[*], local[N], spark://HOST:PORT, yarn or k8s://..."
        )


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
    check_master(master)
    if java_missing():
        raise SparkMissing(JAVA_HINT)
    # Workers run PYSPARK_PYTHON (read from the environment only), else whatever python3 is on
    # PATH: make them run this interpreter, unless the operator chose one (a cluster's path).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # spark-submit first runs a small launcher JVM that only builds the command line
    os.environ.setdefault("SPARK_LAUNCHER_OPTS", " ".join(DRIVER_JVM_OPTIONS))
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if is_local(master):
        builder = builder.config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
    # The driver JVM schedules and shuffles chunk descriptors and hashes; the work is in Python.
    # C1 only and the serial GC start it in about half the time on a busy machine.
    driver_opts = list(DRIVER_JVM_OPTIONS) + class_archive_options()
    executor_opts: list[str] = []
    if not verbose:
        props = os.path.join(tempfile.mkdtemp(prefix="qconsole-spark-"), "log4j2.properties")
        with open(props, "w") as fh:
            fh.write(_LOG4J2)
        opt = f"-Dlog4j2.configurationFile=file:{props}"
        driver_opts.append(opt)
        executor_opts.append(opt)
    builder = builder.config("spark.driver.extraJavaOptions", " ".join(driver_opts))
    if executor_opts:
        builder = builder.config("spark.executor.extraJavaOptions", " ".join(executor_opts))
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


def _buckets(spark: Any) -> int:
    """Duplicate-counting tasks: one per core (a 16-way split of the hashes at most)."""
    return max(1, min(16, spark.sparkContext.defaultParallelism))


def _partitions(spark: Any) -> int:
    """Read tasks: several per core, so a slow chunk does not leave a core idle at the end."""
    return max(1, spark.sparkContext.defaultParallelism * 4)


def write_inventory(
    spark: Any, root: str, layout: str, queues: Sequence[str], now: float, out_dir: str, counters: Any = None,
    summarise: inventory.Summarise | None = None, spool: tuple[str, dict[str, Any]] | None = None,
) -> list[Any]:
    """List, read and write the inventory as Parquet in ONE Spark job; ``(file, rows)`` per task.

    Listing tasks (one per queue, up to the cores) cut each queue into chunk descriptors,
    which an identity partitioner deals over the read tasks (only the descriptors are
    shuffled); each read task turns its chunks into Arrow record batches and writes them as
    its own Parquet file with pyarrow. ``out_dir`` must be on the file system every executor
    mounts at the same path. With ``spool`` (``(directory, index)`` of a spool.SpoolListing:
    local mode) there is no listing stage: the chunks are dealt from the index and each read
    task opens its own from the spool.

    With ``summarise`` the same job also summarises: each read task counts the rows it read
    (summary.QueuePartial per queue) and deals its messages' payload hashes (32 bytes each)
    over ``summarise.buckets`` duplicate tasks by hash, which count the copies; the result is
    the read tasks' ``("m", file, rows, partials)`` and the buckets' ``("d", duplicates)``."""
    outputs.clear_previous(out_dir)  # an earlier report's, and nothing else
    os.makedirs(out_dir, exist_ok=True)
    sc = spark.sparkContext
    parts = _partitions(spark)
    if spool is not None:  # listed already (local mode): the read tasks open their chunks
        spool_dir, index = spool
        chunks = sc.parallelize(spool_mod.deal(index, parts), parts).mapPartitions(functools.partial(
            spool_mod.spooled_chunks, spool_dir=spool_dir, store=layout, location=root))
    else:
        specs = [(layout, root, q, float(now)) for q in queues]
        chunks = (
            sc.parallelize(specs, max(1, len(specs)))
            .mapPartitions(functools.partial(inventory.keyed_chunks, partitions=parts, counters=counters))
            .partitionBy(parts, _identity)
        )
    written = chunks.mapPartitionsWithIndex(functools.partial(
        inventory.write_partition, out_dir=out_dir, counters=counters, summarise=summarise))
    if summarise is not None:
        written = written.partitionBy(summarise.buckets, _identity).mapPartitions(inventory.count_duplicates)
    return written.collect()


def _identity(key: int) -> int:
    return key


def read_inventory(spark: Any, out_dir: str) -> Any:
    return spark.read.schema(inventory_schema()).parquet(file_uri(out_dir))


def queue_summaries(
    spark: Any, msgs: Any, queues: Sequence[tuple[str, str]], now: float, threshold: int, redelivery: str | None
) -> list[dict[str, Any]]:
    """Per-queue stats (the shape of summary.empty_stats) from an inventory DataFrame: ONE action.

    The report itself summarises in its inventory job (cheaper than a first SQL query on a
    fresh JVM); this is the same summary as a Spark SQL query over the Parquet -- for an
    inventory written earlier, and the tests' independent check of the job's figures.
    One groupBy(queue) computes counts by state, the age histogram, percentiles, bytes,
    errors and the poison list (min_by with k: no window); the duplicate payloads need a
    groupBy(queue, hash) first; both are joined and collected together."""
    from pyspark.sql import functions as F

    state = F.col("state")
    is_msg = state.isin(*MESSAGE_STATES)
    # greatest() skips nulls: keep a missing created_at null instead of an age of 0
    age = F.when(
        F.col("created_at").isNotNull(),
        F.greatest(F.lit(0.0), F.lit(float(now)) - F.col("created_at").cast("double")),
    )
    bucket = F.lit(len(summary.AGE_BOUNDS_S))
    for i, bound in reversed(list(enumerate(summary.AGE_BOUNDS_S))):
        bucket = F.when(age < bound, i).otherwise(bucket)
    m_age = F.when(is_msg, age)
    # percentiles over whole seconds: exact, and ~4x cheaper than over ~1M distinct doubles
    # (Spark's percentile keeps a count per distinct value)
    m_age_s = F.when(is_msg, F.floor(age))
    pcts = list(summary.PERCENTILES)
    aggs = [
        *[F.count_if(state == s).alias(f"n_{s}") for s in STATES],
        F.count_if(F.col("error").isNotNull()).alias("errors"),
        F.sum(F.when(is_msg, F.col("file_bytes"))).alias("bytes"),
        F.percentile(m_age_s, pcts).alias("age_p"),
        F.max(m_age).alias("age_max"),
        F.percentile(F.when(is_msg, F.col("size_bytes")), pcts).alias("size_p"),
        F.max(F.when(is_msg, F.col("size_bytes"))).alias("size_max"),
        F.max(F.when(state == READY, age)).alias("oldest_ready"),
        *[F.count_if(is_msg & age.isNotNull() & (bucket == i)).alias(f"h_{i}") for i in range(len(summary.AGE_BOUNDS_S) + 1)],
    ]
    if redelivery is not None:
        rc = F.col(redelivery)
        poisoned = is_msg & (rc >= threshold)
        aggs += [
            F.count_if(poisoned).alias("poison_count"),
            # the k smallest by (-count, id): the top of the list, ties by id, as poison_list sorts
            F.min_by(F.struct(F.col("id"), rc), F.when(poisoned, F.struct(-rc, F.col("id"))), summary.POISON_LIST_CAP).alias("poison_top"),
        ]
    per_queue = msgs.groupBy("queue").agg(*aggs)
    sha = F.col("payload_sha256")
    dups = (
        msgs.where(is_msg & sha.isNotNull()).groupBy("queue", "payload_sha256").agg(F.count(F.lit(1)).alias("n"))
        .where(F.col("n") > 1)
        .groupBy("queue").agg(
            F.sum("n").alias("dup_messages"), F.count(F.lit(1)).alias("dup_payloads"),
            F.min_by(F.struct(sha, F.col("n")), F.struct(-F.col("n"), sha), summary.DUPLICATE_LIST_CAP).alias("dup_top"),
        )
    )
    stats = {name: summary.empty_stats(name, layout, redelivery, threshold) for name, layout in queues}
    for row in per_queue.join(dups, "queue", "left").collect():
        st = stats.get(row["queue"])
        if st is None:
            continue
        counts = st["counts"]
        for s in STATES:
            counts[s] = int(row[f"n_{s}"] or 0)
        counts["total"] = sum(counts[s] for s in MESSAGE_STATES)
        none = [None] * len(pcts)
        st["percentiles"] = {
            "age_s": summary.spread(row["age_p"] or none, row["age_max"]),
            "size_bytes": summary.spread(row["size_p"] or none, row["size_max"]),
        }
        st["age_histogram"] = summary.histogram_doc([int(row[f"h_{i}"]) for i in range(len(summary.AGE_BOUNDS_S) + 1)])
        st["oldest_ready_age_s"] = summary._r(row["oldest_ready"])
        st["bytes"] = int(row["bytes"] or 0)
        st["errors"] = int(row["errors"] or 0)
        if redelivery is not None:
            st["poison"]["count"] = int(row["poison_count"] or 0)
            st["poison"]["top"] = summary.poison_list((p[0], int(p[1])) for p in row["poison_top"] or ())
        if row["dup_messages"] is not None:
            st["duplicates"] = {
                "messages": int(row["dup_messages"]), "payloads": int(row["dup_payloads"]),
                "top": summary.duplicate_list((d[0], int(d[1])) for d in row["dup_top"] or ()),
            }
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


class NoProgress:
    """What run_report tells about its stages; the CLI passes a render.JobProgress."""

    def phase(self, text: str) -> None:
        return None

    def detail(self, fn: Callable[[], str] | None) -> None:
        return None

    def line(self, text: str) -> None:
        return None


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
    progress: Any = None,
    location: str | None = None,
    listing: spool_mod.SpoolListing | None = None,
) -> dict[str, Any]:
    """Run the whole report on ``spark``; writes DIR/messages/, DIR/trends/, DIR/summary.json.

    ONE Spark job lists, reads, writes the inventory and summarises it (plus one for trends with
    ``--history``). The driver holds queue names, one record per written Parquet file (with
    its per-queue partial summaries: counts, the value counts of ages in whole seconds and of
    sizes, the top poison candidates) and one per hash bucket, never the inventory. ``location``: what the
    executors open when it differs from the ``root`` shown (an RSMQ target's URL with its
    parameters but no password). ``listing``: a spool.SpoolListing started before the session
    (local mode): the job reads its chunks instead of listing; it is removed at the end."""
    import json
    import threading
    import time

    progress = progress or NoProgress()
    os.makedirs(out_dir, exist_ok=True)
    messages_dir = os.path.join(out_dir, "messages")
    samples: list[tuple] | None = None
    hist_info: dict[str, Any] | None = None
    if history_files:  # read first: a missing file fails before the long job
        samples, hist_info = history_mod.read_history(history_files)

    sc = spark.sparkContext
    # queues listed, files listed, files read: added by the tasks, seen here as tasks finish
    counters = tuple(sc.accumulator(0) for _ in range(3))
    n = len(queues)
    started = time.monotonic()
    listed: dict[str, float] = {}
    lock = threading.Lock()

    redelivery = inventory.redelivery_field(layout)
    parts = _partitions(spark)

    spooled: tuple[str, dict[str, Any]] | None = None

    def stage_detail(finished: bool = False) -> str:
        q, f, r = (c.value for c in counters)
        if spooled is not None:
            q, f = n, spooled[1]["files_total"]
        if q < n and not finished:
            return f"listing: {q}/{n} queue(s), {f:,} file(s)"
        with lock:
            if "at" not in listed:
                listed["at"] = time.monotonic()
                took = spooled[1]["seconds"] if spooled is not None else listed["at"] - started
                beside = " (beside the session start)" if spooled is not None else ""
                progress.line(f"listing: {f:,} file(s) in {n} queue(s) · {took:.1f}s{beside}")
            if (r >= f or finished) and "read" not in listed:
                listed["read"] = time.monotonic()
                progress.line(f"reading: {r:,} file(s) read into {parts} Parquet file(s) · {listed['read'] - listed['at']:.1f}s")
        if "read" in listed:
            return "summarising: counting duplicate payloads"
        return f"reading: {r:,}/{f:,} file(s)"

    progress.phase("listing, reading and summarising on the executors")
    progress.detail(stage_detail)
    spec = inventory.Summarise(float(now), threshold, redelivery, _buckets(spark))
    try:
        if listing is not None:
            progress.detail(None)
            progress.phase("listing (started beside the session)")
            index = listing.index()
            index["files_total"] = sum(index["files"].values())
            spooled = (listing.dir, index)
            progress.phase("reading and summarising on the executors")
            progress.detail(stage_detail)
            stage_detail()
        out = write_inventory(spark, location or root, layout, queues, now, messages_dir, counters, spec, spooled)
    finally:
        if listing is not None:
            listing.cleanup()
    stage_detail(finished=True)  # the listing and reading lines, if the poll missed the moments
    progress.detail(None)
    partials: dict[str, summary.QueuePartial] = {}
    dup_parts = []
    rows = 0
    for rec in out:
        if rec[0] == "m":
            rows += rec[2]
            for q, part in rec[3].items():
                if q in partials:
                    partials[q].merge(part)
                else:
                    partials[q] = part
        else:
            dup_parts.append(rec[1])
    stats = summary.stats_from_partials(
        partials, summary.merge_duplicates(dup_parts), [(q, layout, redelivery) for q in queues], threshold)
    progress.line(f"summarising: {n} queue(s), {sum(s['counts']['total'] for s in stats):,} message(s), "
                  f"{rows:,} inventory row(s) · {time.monotonic() - listed['read']:.1f}s")

    trends: list[dict[str, Any]] | None = None
    trends_dir = None
    if samples is not None:
        progress.phase(f"backlog trends from {len(samples)} history sample(s)")
        trends_dir = os.path.join(out_dir, "trends")
        tf = trends_frame(spark, samples)
        outputs.clear_previous(trends_dir)  # Spark's own overwrite would remove whatever is there
        tf.write.mode("errorifexists").parquet(file_uri(trends_dir))
        trends = trend_docs(spark.read.parquet(file_uri(trends_dir)).orderBy("queue", "hour").collect())

    doc = summary.report_document(
        root=root, layout=layout, stats=stats,
        engine={"name": "spark", "spark_version": spark.version, "master": sc.master},
        generated_at=now, threshold=threshold,
        outputs={"messages": messages_dir, "trends": trends_dir},
        root_errors=root_errors, trends=trends, history=hist_info,
        notes=summary.store_notes(layout, redelivery, inventory.records_sender(layout)),
    )
    outputs.write_text(os.path.join(out_dir, "summary.json"), json.dumps(doc, indent=2, ensure_ascii=True) + "\n")
    return doc
