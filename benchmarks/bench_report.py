"""`qconsole report` on Spark against a single-process pure-Python pass, on a 100k-message root.

    .venv/bin/python benchmarks/bench_report.py [--messages 100000] [--master local[*]] [--keep DIR]

Builds a ddmq root (4 queues, one holding 70% of the messages) by writing the files the way
ddmq names and fills them (the real client fsyncs nothing but re-reads its settings per
publish, minutes for 100k), then times:
  * Spark start-up (session creation: JVM, gateway) -- a fixed cost, printed apart;
  * the Spark job: inventory (mapPartitions) + Parquet write, then the summaries;
  * the pure-Python pass: the same scanner and the same summary in this one process,
    once cold-ish (first read of the files after building them) and once warm.
Prints both and the ratio. The Spark job and the Python pass must agree on every count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from qconsole.report import inventory, summary  # noqa: E402
from qconsole.backends import open_target as Root  # noqa: E402


def build_root(root: str, n: int) -> None:
    os.makedirs(root)
    open(os.path.join(root, "ddmq.yaml"), "w").close()
    shares = {"big": 0.70, "orders": 0.15, "mail": 0.10, "audit": 0.05}
    rnd = random.Random(7)
    base = time.time() - 3 * 86400
    for q, share in shares.items():
        qdir = os.path.join(root, q)
        os.makedirs(os.path.join(qdir, "work"))
        open(os.path.join(qdir, "ddmq.yaml"), "w").close()
        for i in range(int(n * share)):
            created = base + i * 0.5
            qn = f"{created:.6f}".replace(".", "")
            uid = uuid.UUID(int=rnd.getrandbits(128)).hex
            rc = rnd.choice((0, 0, 0, 0, 1, 2, 3, 5))
            body = "payload-%d" % rnd.randrange(n // 2)  # some duplicates
            doc = {"message": body, "priority": 999, "queue_number": qn, "id": uid, "queue": q,
                   "timeout": None, "requeue": False, "requeue_counter": rc, "requeue_limit": None}
            if i % 50 == 0:  # consumed: in work/ with a deadline
                name = f"work/{int(time.time()) + 600}.999.{qn}.ddmq{uid}"
            else:
                name = f"999.{qn}.ddmq{uid}"
            doc["filename"] = name.rpartition("/")[2]
            with open(os.path.join(qdir, name), "w") as fh:
                json.dump(doc, fh)


def python_pass(root: Root, names: list[str], now: float) -> tuple[float, list[dict]]:
    t = time.perf_counter()
    rows = inventory.scan_root_rows(root.path, root.layout, names, now)
    stats = summary.queue_stats(rows, [(q, root.layout) for q in names], now, summary.DEFAULT_POISON_THRESHOLD)
    return time.perf_counter() - t, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[*]"))
    ap.add_argument("--keep", help="build the root here and keep it")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="qconsole-bench-")
    root_dir = os.path.join(work, "root")
    if not os.path.exists(root_dir):
        t = time.perf_counter()
        build_root(root_dir, args.messages)
        print(f"built {args.messages} messages in {time.perf_counter() - t:.1f}s: {root_dir}")
    root = Root(root_dir)
    names, errors = root.queue_names()
    now = time.time()

    py_cold, py_stats = python_pass(root, names, now)
    py_warm, _ = python_pass(root, names, now)

    from qconsole.report import spark_job

    t = time.perf_counter()
    spark, _created = spark_job.start_session(args.master)
    startup = time.perf_counter() - t
    sc = spark.sparkContext
    out = os.path.join(work, "out")
    # a tiny job first: JVM classes and Python workers warm up once, as in a long report
    sc.parallelize([1], 1).count()

    t = time.perf_counter()
    frame = spark_job.inventory_frame(spark, root.path, root.layout, names, now)
    frame.write.mode("overwrite").parquet(spark_job.file_uri(os.path.join(out, "messages")))
    job = time.perf_counter() - t
    t = time.perf_counter()
    msgs = spark.read.parquet(spark_job.file_uri(os.path.join(out, "messages")))
    sp_stats = spark_job.queue_summaries(spark, msgs, [(q, root.layout) for q in names], now,
                                         summary.DEFAULT_POISON_THRESHOLD)
    summaries = time.perf_counter() - t
    t = time.perf_counter()
    doc = spark_job.run_report(spark, root=root.path, layout=root.layout, queues=names,
                               root_errors=errors, out_dir=out, now=now)
    full = time.perf_counter() - t
    master, cores = sc.master, sc.defaultParallelism
    spark.stop()

    assert [s["counts"] for s in sp_stats] == [s["counts"] for s in py_stats], "Spark and Python disagree"
    assert sp_stats == py_stats, "Spark and Python summaries differ"
    assert doc["totals"]["total"] == sum(s["counts"]["total"] for s in py_stats)

    spark_total = job + summaries
    print(f"root: {args.messages} messages in {len(names)} queues ({os.cpu_count()} CPUs on this machine)")
    print(f"spark {spark.version} on {master} (default parallelism {cores})")
    print(f"  session start-up (fixed cost):      {startup:7.2f}s")
    print(f"  inventory job (mapPartitions+Parquet): {job:7.2f}s")
    print(f"  summaries (3 aggregations):         {summaries:7.2f}s")
    print(f"  job + summaries:                    {spark_total:7.2f}s")
    print(f"  whole run_report (again, warm):     {full:7.2f}s")
    print("pure Python, one process (same scanner, same summary):")
    print(f"  first pass:                         {py_cold:7.2f}s")
    print(f"  warm pass:                          {py_warm:7.2f}s")
    print(f"ratio spark job+summaries / python warm: {spark_total / py_warm:5.2f}x")
    print(f"ratio incl. start-up / python warm:      {(spark_total + startup) / py_warm:5.2f}x")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
