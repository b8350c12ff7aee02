#!/usr/bin/env python3
"""How fast is ``qconsole stats --json`` on a big root, against ``find`` and ddmq's own listing?

Builds one root per layout (default 200,000 messages across 20 queues, one big queue holding
about half of them; a realistic mix of ready / in-flight / expired / being-written), then prints
medians over several repetitions of:

* ``qconsole stats --json ROOT`` -- a subprocess of the installed console script (startup included),
  as operators run it (a big root is scanned by up to 4 processes, see qconsole/parallel.py),
  again with ``--jobs 1`` (one process), and with ``--check-types`` (entry types read too);
* ``find ROOT -type f | wc -l`` -- a subprocess through ``sh -c``;
* ddmq only: ``broker.get_message_list(q)`` over every queue, timed two ways -- in a subprocess
  (``python -c``: interpreter start + ``import ddmq`` + listing, the fair match for the CLI)
  and in-process (listing alone, already imported);

and the ratios qconsole/find and qconsole/ddmq. Targets: <= 1.5x find, faster than ddmq.

ddmq files are written directly, in ddmq 0.9.14's naming scheme and with its JSON bodies
(generating 200k through the client is far too slow); a small sample is validated with the
real client before timing. Run: ``.venv/bin/python benchmarks/bench_stats.py [--messages N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))  # the PyYAML shim for ddmq (peers.py)

BIN = os.path.dirname(sys.executable)
QCONSOLE = os.path.join(BIN, "qconsole")

#: share of messages per state (the rest is ready)
INFLIGHT, EXPIRED, WRITING = 0.10, 0.05, 0.002


def _sizes(total: int, queues: int) -> list[int]:
    """One big queue with about half the messages, the rest spread unevenly."""
    big = total // 2
    rest = total - big
    weights = [random.uniform(0.5, 1.5) for _ in range(queues - 1)]
    scale = rest / sum(weights)
    sizes = [int(w * scale) for w in weights]
    sizes[-1] += rest - sum(sizes)
    return [big, *sizes]


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def build_vsqs(root: str, total: int, queues: int) -> None:
    now_us = int(time.time() * 1_000_000)
    for qi, n in enumerate(_sizes(total, queues)):
        qdir = os.path.join(root, f"queue{qi:02d}")
        os.makedirs(qdir)
        base = now_us - n * 1000 - 3_600_000_000
        for i in range(n):
            mid = base + i * 1000 + qi
            r = random.random()
            body = b'{"job": %d, "queue": %d}' % (i, qi)
            if r < INFLIGHT:
                name = f"{mid}.{now_us + random.randint(1, 600) * 1_000_000}"
            elif r < INFLIGHT + EXPIRED:
                name = f"{mid}.{now_us - random.randint(1, 600) * 1_000_000}"
            elif r < INFLIGHT + EXPIRED + WRITING:
                name = f"{mid}.new"
            else:
                name = str(mid)
            _write(os.path.join(qdir, name), body)


def _ddmq_body(queue: str, text: str, prio: int, qn: str, uid: str, fname: str) -> bytes:
    # exactly message.msg2json(): json.dumps(message.__dict__) in ddmq's attribute order
    return json.dumps({
        "message": text, "queue": queue, "timeout": None, "id": uid, "priority": prio,
        "queue_number": qn, "filename": fname, "requeue": False, "requeue_counter": 0,
        "requeue_limit": None,
    }).encode()


def build_ddmq(root: str, total: int, queues: int) -> None:
    import yaml

    defaults = {"message_timeout": 600, "cleaned": 0, "priority": 999, "requeue": True, "requeue_prio": 0}
    os.makedirs(root)
    open(os.path.join(root, "ddmq.yaml"), "w").close()
    now = time.time()
    for qi, n in enumerate(_sizes(total, queues)):
        q = f"queue{qi:02d}"
        qdir = os.path.join(root, q)
        os.makedirs(os.path.join(qdir, "work"))
        with open(os.path.join(qdir, "ddmq.yaml"), "w") as fh:
            fh.write(yaml.dump(defaults, default_flow_style=False))
        for i in range(n):
            prio = random.choice((999, 999, 999, 10, 9, 1))
            qn = str(now - 3600 + i * 0.001).replace(".", "")
            uid = uuid.uuid4().hex
            fname = f"{prio}.{qn}.ddmq{uid}"
            body = _ddmq_body(q, f"job {i} of {q}", prio, qn, uid, fname)
            r = random.random()
            if r < INFLIGHT + EXPIRED:
                deadline = int(now) + (random.randint(1, 600) if r < INFLIGHT else -random.randint(1, 600))
                _write(os.path.join(qdir, "work", f"{deadline}.{fname}"), body)
            else:
                _write(os.path.join(qdir, fname), body)


def validate_ddmq_sample(root: str) -> str:
    """The real client reads our files, and what it writes itself looks like what we wrote."""
    from peers import ddmq_module

    ddmq = ddmq_module()
    b = ddmq.broker(root)
    queues = b.list_queues()
    waiting, work = b.get_message_list(queues[-1])
    for name in sorted(waiting)[:20]:
        msg = b.get_message(os.path.join(root, queues[-1], name))
        assert msg.filename == name and msg.id in name and msg.queue == queues[-1], name
    for name in work[:20]:
        msg = b.get_message(os.path.join(root, queues[-1], "work", name))
        assert name.endswith(msg.filename)
    first = sorted(waiting)[0]
    got = b.consume(queues[-1], clean=False)  # the real consumer takes the first in text order
    assert got.filename.endswith(first), (got.filename, first)
    os.rename(os.path.join(root, queues[-1], "work", got.filename), os.path.join(root, queues[-1], first))
    scratch = tempfile.mkdtemp(prefix="qc-bench-ref-")
    try:
        ref = ddmq.broker(scratch, create=True)
        pub = ref.publish("ref", "hello", priority=9)
        real = json.loads(open(os.path.join(scratch, "ref", pub.filename)).read())
        mine = json.loads(_ddmq_body("ref", "hello", 9, pub.queue_number, pub.id, pub.filename))
        assert list(real) == list(mine) and real == mine, (real, mine)
    finally:
        shutil.rmtree(scratch)
    return f"validated with ddmq {ddmq.broker.version(b)}: 40 files read, 1 consumed, JSON shape identical"


def _time_cmd(argv: list[str], reps: int, check=None) -> list[float]:
    subprocess.run(argv, capture_output=True, check=True)  # warm-up (page cache, .pyc)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
        if check:
            check(out.stdout)
    return times


DDMQ_LIST = (
    "import sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "n = 0\n"
    "for q in b.list_queues():\n"
    "    w, k = b.get_message_list(q)\n"
    "    n += len(w) + len(k)\n"
    "print(n)\n"
)


def _time_call(fn, reps: int):
    """(median seconds over ``reps`` calls after one warm-up, the last result)."""
    times = []
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:]), result


def bench(layout: str, root: str, total: int, reps: int) -> dict[str, float]:
    res: dict[str, float] = {}

    def check_qc(stdout: bytes) -> None:
        doc = json.loads(stdout)
        t = doc["totals"]
        assert t["total"] + t["foreign"] == total, t

    res["qconsole"] = statistics.median(_time_cmd([QCONSOLE, "stats", "--json", root], reps, check_qc))
    # the same in one process (no forked share): what a 1-CPU job slot gets
    res["qconsole_j1"] = statistics.median(
        _time_cmd([QCONSOLE, "stats", "--json", "--jobs", "1", root], reps, check_qc)
    )
    # entry types read from the listing too (FIFOs/symlinks named like messages flagged)
    res["qconsole_typed"] = statistics.median(
        _time_cmd([QCONSOLE, "stats", "--json", "--check-types", root], reps, check_qc)
    )

    def check_find(stdout: bytes) -> None:
        assert int(stdout) >= total

    res["find"] = statistics.median(_time_cmd(["sh", "-c", f"find '{root}' -type f | wc -l"], reps, check_find))
    if layout == "ddmq":
        tests = os.path.join(HERE, "..", "tests")
        code = DDMQ_LIST.format(tests=tests, root=root)
        res["ddmq_subprocess"] = statistics.median(_time_cmd([sys.executable, "-c", code], reps))
        from peers import ddmq_module

        b = ddmq_module().broker(root)

        def ddmq_listing() -> int:
            return sum(len(w) + len(k) for w, k in (b.get_message_list(q) for q in b.list_queues()))

        res["ddmq_inprocess"], n = _time_call(ddmq_listing, reps)
        assert n == total
    # qconsole's own scan in-process (one process), the like-for-like match for the line above
    from qconsole.backends import open_target as Root

    res["qconsole_inprocess"], _scan = _time_call(lambda: Root(root).scan(), reps)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--queues", type=int, default=20)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", help="build the roots here (default: a temporary directory, removed after)")
    ap.add_argument("--layout", choices=("vsqs", "ddmq", "both"), default="both")
    args = ap.parse_args()
    random.seed(42)
    base = args.dir or tempfile.mkdtemp(prefix="qc-bench-")
    os.makedirs(base, exist_ok=True)
    layouts = ("vsqs", "ddmq") if args.layout == "both" else (args.layout,)
    print(f"qconsole stats benchmark: {args.messages:,} messages x {args.queues} queues per layout, "
          f"median of {args.reps}, {os.cpu_count()} CPUs, root under {base}")
    try:
        for layout in layouts:
            root = os.path.join(base, layout)
            if not os.path.exists(root):
                t0 = time.perf_counter()
                (build_vsqs if layout == "vsqs" else build_ddmq)(root, args.messages, args.queues)
                if layout == "vsqs":
                    pass
                print(f"[{layout}] built in {time.perf_counter() - t0:.1f}s")
            if layout == "ddmq":
                print(f"[ddmq] {validate_ddmq_sample(root)}")
            r = bench(layout, root, args.messages, args.reps)
            print(f"[{layout}] qconsole stats --json (subprocess)   {r['qconsole'] * 1000:8.1f} ms")
            print(f"[{layout}] find -type f | wc -l (subprocess)     {r['find'] * 1000:8.1f} ms")
            print(f"[{layout}] qconsole stats --json --jobs 1         {r['qconsole_j1'] * 1000:8.1f} ms")
            print(f"[{layout}] qconsole stats --json --check-types    {r['qconsole_typed'] * 1000:8.1f} ms")
            print(f"[{layout}] qconsole scan (in-process, 1 process)  {r['qconsole_inprocess'] * 1000:8.1f} ms")
            print(f"[{layout}]   ratio qconsole / find                {r['qconsole'] / r['find']:8.2f}x  (target <= 1.5x)")
            print(f"[{layout}]   ratio qconsole --jobs 1 / find       {r['qconsole_j1'] / r['find']:8.2f}x")
            if layout == "ddmq":
                print(f"[ddmq] ddmq get_message_list, all queues (subprocess) {r['ddmq_subprocess'] * 1000:8.1f} ms")
                print(f"[ddmq] ddmq get_message_list, all queues (in-process) {r['ddmq_inprocess'] * 1000:8.1f} ms")
                print(f"[ddmq]   ratio qconsole / ddmq (subprocess)   {r['qconsole'] / r['ddmq_subprocess']:8.2f}x  (target < 1)")
                print(f"[ddmq]   ratio --jobs 1 / ddmq (subprocess)   {r['qconsole_j1'] / r['ddmq_subprocess']:8.2f}x")
                print(f"[ddmq]   ratio qconsole / ddmq (in-process)   {r['qconsole_inprocess'] / r['ddmq_inprocess']:8.2f}x")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
