"""`qconsole report` on Spark against a single-process pure-Python pass over the same root.

    .venv/bin/python benchmarks/bench_report.py [--messages 100000] [--keep DIR] [--masters local[2],local[1]]

Builds a ddmq root (benchmarks/report_root.py: 4 queues, one holding 70 % of the messages)
unless DIR/root exists, then times, each in its own process so memory figures are its own:

* the pure-Python pass: the same listing and reading functions (inventory.list_chunks /
  read_chunk) and the same summary (summary.queue_stats_columns) in ONE process, twice
  (first and warm);
* for each master: Spark session start, then ``run_report`` exactly as ``qconsole report``
  runs it, timed by its stage lines: the inventory job (list + read + Parquet, one job) and
  the summaries (one aggregation query), with the driver's peak RSS (Python) and the JVM's
  peak RSS (in local mode the JVM is driver and executors at once).

Prints the load average (other jobs share the machine) before and after, every step, and the
ratios against the warm Python pass. Spark's summaries must equal the Python pass's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from qconsole.report import inventory, summary  # noqa: E402
from qconsole.backends import open_target as Root  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _jvm_peak_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def child_python(root_dir: str, now: float, out: str) -> None:
    root = Root(root_dir)
    names, _errors = root.queue_names()
    redelivery = inventory.redelivery_field(root.layout)
    times = []
    for _ in range(2):
        t = time.perf_counter()
        chunks = inventory.scan_root_columns(root.layout, root.path, names, now)
        stats = summary.queue_stats_columns(chunks, [(q, root.layout, redelivery) for q in names], now,
                                            summary.DEFAULT_POISON_THRESHOLD)
        times.append(time.perf_counter() - t)
    with open(out, "w") as fh:
        json.dump({"first": times[0], "warm": times[1], "rss_mb": _peak_rss_mb(), "stats": stats}, fh)


class _Clock:
    """run_report's progress, timestamped: when each stage line was printed."""

    def __init__(self) -> None:
        import threading

        self.start = time.perf_counter()
        self.at: dict[str, float] = {}
        self._fn = None
        threading.Thread(target=self._poll, daemon=True).start()

    def _poll(self) -> None:
        while True:  # as JobProgress does: the detail prints the listing line when it is done
            fn = self._fn
            if fn is not None:
                fn()
            time.sleep(0.1)

    def phase(self, text: str) -> None:
        return None

    def detail(self, fn) -> None:  # noqa: ANN001
        self._fn = fn

    def line(self, text: str) -> None:
        self.at[text.split(":", 1)[0]] = time.perf_counter() - self.start


def child_spark(root_dir: str, now: float, master: str, out: str, work: str) -> None:
    """The report exactly as `qconsole report` runs it (run_report), timed per stage."""
    master, _slash, how = master.partition("/")
    no_spool = how == "executors"  # list on the executors (as on a cluster), not beside the session
    from qconsole.report import spark_job

    root = Root(root_dir)
    names, errors = root.queue_names()
    from qconsole.report import spool

    report_dir = os.path.join(work, "out-" + master.replace("[", "").replace("]", "").replace("*", "all"))
    t = time.perf_counter()
    listing = None
    if spark_job.is_local(master) and root.layout in spool.STORES and not no_spool:
        listing = spool.SpoolListing(root.layout, root.path, names, now, report_dir)  # as the CLI does
    spark, _created = spark_job.start_session(master)
    session = time.perf_counter() - t
    sc = spark.sparkContext
    jvm_pid = int(spark._jvm.ProcessHandle.current().pid())
    clock = _Clock()
    doc = spark_job.run_report(spark, root=root.path, layout=root.layout, queues=names, root_errors=errors,
                               out_dir=report_dir, now=now, progress=clock, listing=listing)
    # the listing helper (waited for by now; the JVM is still running): its peak RSS
    helper_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 if listing is not None else None
    files = [f for f in os.listdir(os.path.join(report_dir, "messages")) if f.endswith(".parquet")]
    result = {
        "master": sc.master + ("" if listing is not None else " (listing on the executors)"), "parallelism": sc.defaultParallelism, "version": spark.version,
        "session": session, "listing": clock.at["listing"], "inventory": clock.at["reading"],
        "summaries": clock.at["summarising"] - clock.at["reading"],
        "files": len(files), "rows": doc["totals"]["total"] + doc["totals"]["foreign"],
        "driver_rss_mb": _peak_rss_mb(), "jvm_peak_mb": _jvm_peak_mb(jvm_pid), "helper_mb": helper_mb, "stats": doc["queues"],
    }
    spark.stop()
    shutil.rmtree(report_dir, ignore_errors=True)
    with open(out, "w") as fh:
        json.dump(result, fh)


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def _child(args: list[str]) -> dict:
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run([sys.executable, os.path.abspath(__file__), *args, "--out", out], check=True)
        with open(out) as fh:
            return json.load(fh)
    finally:
        os.unlink(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--masters", default="local[2]", help="comma-separated; e.g. local[2],local[1] for the scaling")
    ap.add_argument("--keep", help="build the root in DIR/root (or reuse it) and keep it")
    ap.add_argument("--child", choices=("python", "spark"), help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--now", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--master", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "python":
        return child_python(args.root, args.now, args.out)
    if args.child == "spark":
        return child_spark(args.root, args.now, args.master, args.out, os.path.dirname(args.root))

    from report_root import build_root

    work = args.keep or tempfile.mkdtemp(prefix="qconsole-bench-")
    root_dir = os.path.join(work, "root")
    if not os.path.exists(root_dir):
        t = time.perf_counter()
        build_root(root_dir, args.messages)
        print(f"built {args.messages} messages in {time.perf_counter() - t:.1f}s: {root_dir}")
    now = time.time()
    common = ["--root", root_dir, "--now", repr(now)]
    load_before = _load()
    py = _child(["--child", "python", *common])
    runs = [_child(["--child", "spark", *common, "--master", m]) for m in args.masters.split(",")]
    load_after = _load()

    total = sum(s["counts"]["total"] for s in py["stats"])
    print(f"root: {total} messages in {len(py['stats'])} queues; {os.cpu_count()} CPUs; load average {load_before} before, {load_after} after")
    print(f"pure Python, one process: first {py['first']:.2f}s, warm {py['warm']:.2f}s, peak RSS {py['rss_mb']:.0f} MB")
    warm = py["warm"]
    for r in runs:
        assert r["stats"] == py["stats"], f"Spark ({r['master']}) and Python summaries differ"
        job = r["inventory"] + r["summaries"]
        print(f"spark {r['version']} {r['master']} (parallelism {r['parallelism']}):")
        print(f"  session start           {r['session']:7.2f}s")
        print(f"  listing + reading      {r['inventory']:7.2f}s  {r['rows']} rows in {r['files']} Parquet files"
              f" (listing done at {r['listing']:.2f}s)")
        print(f"  summaries (in the job)  {r['summaries']:7.2f}s")
        print(f"  inventory + summaries   {job:7.2f}s  = {job / warm:.2f}x python warm")
        print(f"  whole, session included {job + r['session']:7.2f}s  = {(job + r['session']) / warm:.2f}x python warm")
        jvm = f"{r['jvm_peak_mb']:.0f} MB" if r["jvm_peak_mb"] else "?"
        helper = f", listing helper {r['helper_mb']:.0f} MB" if r.get("helper_mb") else ""
        print(f"  peak RSS: driver (Python) {r['driver_rss_mb']:.0f} MB, JVM {jvm}{helper}")
    if len(runs) == 2:
        a, b = runs
        ja, jb = a["inventory"] + a["summaries"], b["inventory"] + b["summaries"]
        print(f"scaling {b['master']} -> {a['master']}: {jb / ja:.2f}x (inventory + summaries), "
              f"{(jb + b['session']) / (ja + a['session']):.2f}x with the session")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
