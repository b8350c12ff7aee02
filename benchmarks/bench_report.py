"""`qconsole report` on Spark against a single-process pure-Python pass over the same root.

    .venv/bin/python benchmarks/bench_report.py [--messages 100000] [--keep DIR]
        [--masters local[2],local[1],local[2]/executors] [--rounds 3] [--python-runs 2]

Builds a ddmq root (benchmarks/report_root.py: 4 queues, one holding 70 % of the messages)
unless DIR/root exists, then, for each round (interleaved), times each in its own process so
memory figures are its own:

* the pure-Python pass: the same listing and reading functions (inventory.list_chunks /
  read_chunk) and the same summary code (summary.queue_stats_columns: QueuePartial per queue)
  in ONE process, ``--python-runs`` times (the last, warm one is the baseline);
* for each master: Spark session start (in local mode with the listing helper started
  beside it, as the CLI does; ``MASTER/executors`` lists on the executors instead, as on a
  cluster), then ``run_report`` exactly as ``qconsole report`` runs it, timed by its stage
  lines: listing + reading (one job, which also summarises) and the rest of the summaries
  (duplicate counting and the driver's merge), with the driver's peak RSS (Python), the JVM's
  (in local mode driver and executors at once) and the listing helper's.

Prints the load average (other jobs share the machine) before and after each round, medians
of every step, and the ratios against the warm Python pass. Spark's summaries must equal the
Python pass's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
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


def child_python(root_dir: str, now: float, out: str, runs: int = 2) -> None:
    root = Root(root_dir)
    names, _errors = root.queue_names()
    redelivery = inventory.redelivery_field(root.layout)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        chunks = inventory.scan_root_columns(root.layout, root.path, names, now)
        stats = summary.queue_stats_columns(chunks, [(q, root.layout, redelivery) for q in names], now,
                                            summary.DEFAULT_POISON_THRESHOLD)
        times.append(time.perf_counter() - t)
    with open(out, "w") as fh:
        json.dump({"first": times[0], "warm": times[-1], "rss_mb": _peak_rss_mb(), "stats": stats}, fh)


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
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (Python pass, then each master); medians")
    ap.add_argument("--python-runs", type=int, default=2, help="Python passes (the last one is the baseline); 1 for a root the page cache cannot hold")
    ap.add_argument("--child", choices=("python", "spark"), help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--now", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--master", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "python":
        return child_python(args.root, args.now, args.out, args.python_runs)
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
    masters = args.masters.split(",")
    loads = [_load()]
    pys: list[dict] = []
    runs: dict[str, list[dict]] = {m: [] for m in masters}
    for rnd in range(args.rounds):  # interleaved: each round runs the Python pass and every master
        pys.append(_child(["--child", "python", *common, "--python-runs", str(args.python_runs)]))
        for m in masters:
            runs[m].append(_child(["--child", "spark", *common, "--master", m]))
        loads.append(_load())
        print(f"round {rnd + 1}/{args.rounds} done, load average {loads[-1]}", flush=True)

    med = statistics.median
    py = pys[0]
    total = sum(s["counts"]["total"] for s in py["stats"])
    print(f"root: {total} messages in {len(py['stats'])} queues; {os.cpu_count()} CPUs; "
          f"load average {' | '.join(loads)} (before, after each round)")
    warms = [p["warm"] for p in pys]
    warm = med(warms)
    print(f"pure Python, one process: first {med(p['first'] for p in pys):.2f}s, warm {warm:.2f}s "
          f"(median of {len(pys)}: {', '.join(f'{w:.2f}' for w in warms)}), peak RSS {max(p['rss_mb'] for p in pys):.0f} MB")
    wholes: dict[str, float] = {}
    for m in masters:
        rs = runs[m]
        for r in rs:
            assert r["stats"] == py["stats"], f"Spark ({r['master']}) and Python summaries differ"
        job = [r["inventory"] + r["summaries"] for r in rs]
        whole = [j + r["session"] for j, r in zip(job, rs)]
        wholes[m] = med(whole)
        r0 = rs[0]
        print(f"spark {r0['version']} {r0['master']} (parallelism {r0['parallelism']}), medians of {len(rs)}:")
        print(f"  session start           {med(r['session'] for r in rs):7.2f}s")
        print(f"  listing + reading       {med(r['inventory'] for r in rs):7.2f}s  {r0['rows']} rows in {r0['files']} Parquet files"
              f" (listing done at {med(r['listing'] for r in rs):.2f}s)")
        print(f"  summaries (in the job)  {med(r['summaries'] for r in rs):7.2f}s")
        print(f"  inventory + summaries   {med(job):7.2f}s  = {med(job) / warm:.2f}x python warm")
        print(f"  whole, session included {med(whole):7.2f}s  = {med(whole) / warm:.2f}x python warm"
              f"  (per round: {', '.join(f'{w / p:.2f}x' for w, p in zip(whole, warms))})")
        jvm = max((r["jvm_peak_mb"] or 0) for r in rs)
        helper = f", listing helper {max(r['helper_mb'] for r in rs):.0f} MB" if r0.get("helper_mb") else ""
        print(f"  peak RSS: driver (Python) {max(r['driver_rss_mb'] for r in rs):.0f} MB, JVM {jvm:.0f} MB{helper}")
    if len(masters) >= 2:
        a, b = masters[0], masters[1]
        ja = [r["inventory"] + r["summaries"] for r in runs[a]]
        jb = [r["inventory"] + r["summaries"] for r in runs[b]]
        print(f"scaling {b} -> {a}: {med(jb) / med(ja):.2f}x (inventory + summaries), "
              f"{wholes[b] / wholes[a]:.2f}x with the session")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
