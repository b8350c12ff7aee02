"""The live console on one big VSQS or ddmq queue, driven through Textual's Pilot, with live clients.

    .venv/bin/python benchmarks/bench_tui.py [--layout vsqs|ddmq] [--messages 100000] [--root DIR]
                                              [--clients real|none] [--steady 20] [--keys 60] [--generic]

Builds (or reuses, with ``--root``) a root whose queue ``big`` holds N messages (1% in flight;
ddmq: priority 999 as the client's default, in flight in ``work/``), then measures in one run:

- ``qconsole stats --json`` on the root (a subprocess, as an operator runs it) and the same
  count in process (``Backend.scan``): the baseline;
- the console: time from start to the root screen's first counts of ``big`` (the ratio to
  ``stats`` is the figure), then ``enter``: time to the first rows painted, and to the whole
  list (the first rows may come from a listing still under way);
- with live clients (``--clients real``: vsqs 0.3's own QueueManager, or ddmq 0.9.14's broker,
  in a subprocess, one producer and two consumers, as fast as the client goes on a queue this
  size), after a
  warm-up: the console process's CPU over ``--steady`` seconds (all its threads; the clients'
  CPU is theirs), then key presses (down/up, every 0.15 s) timed from the press to the next
  screen refresh, p50/p90/max, also counted apart while a rescan runs;
- resident memory: after the list is complete, and the peak while the clients run.

``--generic`` (ddmq): the console lists the queue the way it did before ddmq had its own
columns (a collected scan, one Message object per message), for a before/after in one tree.

Figures only (no pass/fail but the issue's targets printed beside them); the machine is shared,
so the load average is printed too. The count of stats and the TUI's root screen run before
the clients start, on the same tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from qconsole.backends import open_target as Root  # noqa: E402

QUEUE = "big"

#: the issue's targets (13, item 2)
TARGET_COUNTS_RATIO = 1.5
TARGET_FIRST_ROWS_S = 1.0
TARGET_STEADY_1M = 0.20
TARGET_IDLE_100K = 0.05
TARGET_KEY_P90_S = 0.100
TARGET_RSS_MB = 250


def rss_mb() -> float:
    """Resident memory of this process now (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def build_ddmq(base: str, n: int) -> str:
    """``n`` messages in ``base/big`` as ddmq 0.9.14 names them (priority 999, the default; 1% in
    ``work/`` with a deadline an hour ahead: none expires while a root is reused for a few runs), a small
    JSON body each, and an empty queue ``small``."""
    import uuid

    now = time.time()
    os.makedirs(base, exist_ok=True)  # (--root names a directory that may not exist yet)
    with open(os.path.join(base, "ddmq.yaml"), "w"):
        pass
    for q in (QUEUE, "small"):
        os.makedirs(os.path.join(base, q, "work"))
        with open(os.path.join(base, q, "ddmq.yaml"), "w") as fh:
            fh.write("message_timeout: 600\npriority: 999\nrequeue: true\nrequeue_prio: 0\ncleaned: 0\n")
    q = os.path.join(base, QUEUE)
    held = n // 100
    for i in range(n):
        qn = str(round(now - 3600 + i * 0.001, 6)).replace(".", "")
        uid = uuid.uuid4().hex
        name = f"999.{qn}.ddmq{uid}"
        body = json.dumps({"message": "bench", "priority": 999, "queue_number": int(qn), "id": uid, "queue": QUEUE,
                           "filename": name, "timeout": None, "requeue": False, "requeue_counter": 0,
                           "requeue_limit": None})
        path = os.path.join(q, "work", f"{int(now + 3600 + i % 300)}.{name}") if i < held else os.path.join(q, name)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, body.encode())
        os.close(fd)
    return base


def build(base: str, n: int) -> str:
    """``n`` messages in ``base/big`` (1% in flight), µs ids as vsqs 0.3 writes them, and an
    empty queue ``small``."""
    q = os.path.join(base, QUEUE)
    os.makedirs(q)
    now = time.time()
    start = int((now - 3600) * 1_000_000)
    held = n // 100
    for i in range(n):
        mid = start + i * 1000
        name = f"{mid}.{int((now + 600 + i % 300) * 1_000_000)}" if i < held else str(mid)
        fd = os.open(os.path.join(q, name), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"{}")
        os.close(fd)
    os.makedirs(os.path.join(base, "small"))
    return base


CLIENTS = r'''
import os, sys, threading, time
from vsqs.queue import QueueManager
root, queue, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
m = QueueManager(root)
q = m.get_queue(queue)
counts = {"published": 0, "consumed": 0}

def producer():
    while not os.path.exists(stop_file):
        q.publish(b'{"bench": true}')
        counts["published"] += 1
        time.sleep(0.2)

def consumer():
    while not os.path.exists(stop_file):
        mid, _data = q.receive(visibility_timeout=60, timeout=1)
        if mid is not None:
            time.sleep(0.05)  # the work
            q.delete(mid)
            counts["consumed"] += 1

threads = [threading.Thread(target=f) for f in (producer, consumer, consumer)]
for t in threads:
    t.start()
for t in threads:
    t.join()
m.close()
print(counts["published"], counts["consumed"])
'''


CLIENTS_DDMQ = r'''
import os, sys, threading, time
import yaml
_load = yaml.load
yaml.load = lambda stream, Loader=None: _load(stream, Loader=Loader or yaml.SafeLoader)  # DESIGN.md §1's shim
import ddmq
root, queue, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
sys.stdout = open(os.devnull, "w")  # ddmq prints a warning for each race it loses
out = sys.__stdout__
counts = {"published": 0, "consumed": 0}

def producer():
    b = ddmq.broker(root)
    while not os.path.exists(stop_file):
        try:
            b.publish(queue, '{"bench": true}')
            counts["published"] += 1
        except OSError:  # its clean() raced another thread's on ddmq.yaml.intermediate
            pass
        time.sleep(0.2)

def consumer():
    b = ddmq.broker(root)
    while not os.path.exists(stop_file):
        try:
            msg = b.consume(queue)
        except OSError:  # the other consumer renamed it first
            continue
        if msg is None:
            time.sleep(1)
            continue
        time.sleep(0.05)  # the work
        try:
            b.ack(queue, msg.filename)
            counts["consumed"] += 1
        except OSError:
            pass

threads = [threading.Thread(target=f) for f in (producer, consumer, consumer)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(counts["published"], counts["consumed"], file=out)
'''


def stats_time(root: str) -> tuple[float, float]:
    """(wall s of `qconsole stats --json` as a subprocess, wall s of the same count in process)."""
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    cmd = [exe, "stats", "--json", root] if os.path.exists(exe) else [sys.executable, "-m", "qconsole", "stats", "--json", root]
    walls = []
    for _ in range(2):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - t)
        json.loads(out.stdout)
    t = time.perf_counter()
    Root(root).scan()
    return min(walls), time.perf_counter() - t


class Stalls:
    """``--stalls``: a thread that notes the main thread's stack whenever the event loop has not
    run for over 150 ms (what held it: a diagnosis, not a figure)."""

    def __init__(self) -> None:
        import collections
        import threading

        self.beat = time.perf_counter()
        self.seen: collections.Counter[str] = collections.Counter()
        self.main = threading.get_ident()
        self.running = True
        threading.Thread(target=self._watch, daemon=True).start()

    async def heartbeat(self) -> None:
        while self.running:
            self.beat = time.perf_counter()
            await asyncio.sleep(0.01)

    def _watch(self) -> None:
        import traceback

        while self.running:
            time.sleep(0.03)
            if time.perf_counter() - self.beat > 0.15:
                for tid, frame in sys._current_frames().items():
                    stack = traceback.extract_stack(frame)[-6:]
                    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}" for f in reversed(stack))
                    self.seen[("main  " if tid == self.main else "other ") + where] += 1

    def report(self) -> None:
        self.running = False
        print("stalls over 150 ms, sampled every 30 ms (count, thread, innermost first):")
        for where, n in self.seen.most_common(12):
            print(f"  {n:4d} {where}")


def press(app: object, key: str) -> None:
    """Send a key as the terminal driver does, without Pilot's wait for the whole process to go
    idle (``Pilot.press`` waits until CPU time stops advancing, up to a second, which would
    time our listing thread, not the key)."""
    from textual import events

    event = events.Key(key, None)
    event.set_sender(app)  # type: ignore[arg-type]
    app._driver.send_message(event)  # type: ignore[attr-defined]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


async def run(root: str, clients: str, steady_s: float, keys: int, stalls: Stalls | None = None,
              interval: float = 2.0, layout: str = "vsqs") -> dict[str, float]:
    from qconsole.screens.app import QConsoleApp
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.queue_screen import QueueScreen
    from qconsole.screens.root_screen import RootScreen

    out: dict[str, float] = {}
    if stalls is not None:
        beat = asyncio.create_task(stalls.heartbeat())  # noqa: F841 (kept alive till the end)
    rss0 = rss_mb()
    t0 = time.perf_counter()
    handle = Root(root)
    # as `qconsole ROOT` starts it: the first counts forked off before the app (cli/tui.py)
    app = QConsoleApp(handle, interval=interval, live_countdown=True, audit_log=os.devnull,
                      first_counts=[handle.start_first_count()])
    async with app.run_test(size=(100, 30)) as pilot:
        rs = app.screen
        assert isinstance(rs, RootScreen)
        while not any(k.endswith(":" + QUEUE) for k in rs.scans):
            await asyncio.sleep(0.005)
        done: list[float] = []
        rs.call_after_refresh(lambda: done.append(time.perf_counter()))
        while not done:
            await asyncio.sleep(0.005)
        out["first_counts_s"] = done[0] - t0
        await pilot.pause()
        t1 = time.perf_counter()
        await pilot.press("enter")  # "big" sorts first
        qs = app.screen
        assert isinstance(qs, QueueScreen)
        lst = qs.query_one(MessageList)
        while not len(lst.messages):
            await asyncio.sleep(0.002)
        done = []
        qs.call_after_refresh(lambda: done.append(time.perf_counter()))
        while not done:
            await asyncio.sleep(0.002)
        out["first_rows_s"] = done[0] - t1
        out["first_rows_n"] = len(lst.messages)

        def complete() -> bool:
            if hasattr(qs, "listing"):
                return qs.listing is not None
            return qs.scan is not None

        while not complete():
            await asyncio.sleep(0.005)
        done = []
        qs.call_after_refresh(lambda: done.append(time.perf_counter()))
        while not done:
            await asyncio.sleep(0.002)
        out["complete_s"] = done[0] - t1
        out["messages"] = len(lst.messages)
        out["rss_complete_mb"] = rss_mb()
        out["rss_growth_mb"] = out["rss_complete_mb"] - rss0

        stop_file = os.path.join(tempfile.gettempdir(), f"qconsole-bench-stop-{os.getpid()}")
        proc = None
        if clients == "real":
            script = CLIENTS_DDMQ if layout == "ddmq" else CLIENTS
            proc = subprocess.Popen([sys.executable, "-c", script, root, QUEUE, stop_file],
                                    stdout=subprocess.PIPE, text=True)
        peak = [out["rss_complete_mb"]]
        sampling = True

        async def sample() -> None:
            while sampling:
                peak[0] = max(peak[0], rss_mb())
                await asyncio.sleep(0.2)

        sampler = asyncio.create_task(sample())
        try:
            await asyncio.sleep(5.0)  # warm-up: the clients start, a rescan or two
            listings = getattr(qs, "listings", 0)
            c0, w0 = time.process_time(), time.perf_counter()
            await asyncio.sleep(steady_s)
            out["steady_cpu"] = (time.process_time() - c0) / (time.perf_counter() - w0)
            out["steady_rescans"] = getattr(qs, "listings", 0) - listings
            lat: list[float] = []
            lat_busy: list[float] = []
            handled: list[float] = []
            lst.cursor = 0
            for i in range(keys):
                busy = any(w.group == "queue-scan" and w.is_running for w in qs.workers)
                t = time.perf_counter()
                before = lst.cursor
                press(app, "down")
                while lst.cursor == before and time.perf_counter() - t < 2:
                    await asyncio.sleep(0.001)
                handled.append(time.perf_counter() - t)
                done = []
                qs.call_after_refresh(lambda: done.append(time.perf_counter()))
                while not done:
                    await asyncio.sleep(0.001)
                lat.append(done[0] - t)
                if busy or any(w.group == "queue-scan" and w.is_running for w in qs.workers):
                    lat_busy.append(done[0] - t)
                await asyncio.sleep(0.15)
            out["key_handled_p90_s"] = pct(handled, 90)
            out["key_p50_s"] = statistics.median(lat)
            out["key_p90_s"] = pct(lat, 90)
            out["key_max_s"] = max(lat)
            out["key_busy_n"] = len(lat_busy)
            out["key_busy_p90_s"] = pct(lat_busy, 90)
        finally:
            sampling = False
            await sampler
            if proc is not None:
                open(stop_file, "w").close()
                try:
                    text, _ = proc.communicate(timeout=120)
                    pub, con = (int(x) for x in text.split()[-2:])
                    out["published"], out["consumed"] = pub, con
                except (subprocess.TimeoutExpired, ValueError):
                    proc.kill()
                os.unlink(stop_file)
        out["rss_peak_mb"] = peak[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layout", choices=("vsqs", "ddmq"), default="vsqs")
    ap.add_argument("--generic", action="store_true",
                    help="ddmq: list the queue as before its own columns (a collected scan of Message objects)")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--root", help="reuse this root (built there first when it has no queue 'big')")
    ap.add_argument("--clients", choices=("real", "none"), default="real")
    ap.add_argument("--steady", type=float, default=20.0, help="seconds of steady CPU measure")
    ap.add_argument("--keys", type=int, default=60, help="key presses timed")
    ap.add_argument("--interval", type=float, default=2.0, help="the console's rescan period (0: none)")
    ap.add_argument("--stalls", action="store_true", help="also print what held the event loop over 150 ms")
    args = ap.parse_args()
    base = args.root or tempfile.mkdtemp(prefix="qconsole-bench-tui-")
    try:
        if not os.path.isdir(os.path.join(base, QUEUE)):
            t = time.perf_counter()
            (build_ddmq if args.layout == "ddmq" else build)(base, args.messages)
            print(f"built {args.messages} messages in {time.perf_counter() - t:.1f} s")
        if args.generic:
            from qconsole.backends.ddmq.backend import DdmqBackend

            DdmqBackend.columns_lister = lambda self: None  # type: ignore[method-assign]
        stats_cli, stats_inproc = stats_time(base)
        stalls = Stalls() if args.stalls else None
        r = asyncio.run(run(base, args.clients, args.steady, args.keys, stalls, args.interval, args.layout))
    finally:
        if not args.root:
            shutil.rmtree(base, ignore_errors=True)
    n = int(r["messages"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.layout} queue of {n} messages"
          + (" (generic listing)" if args.generic else ""))
    print(f"stats --json (subprocess):           {stats_cli:.2f} s   (in process: {stats_inproc:.2f} s)")
    ratio = r["first_counts_s"] / stats_cli
    print(f"console start -> root counts:        {r['first_counts_s']:.2f} s = {ratio:.2f}x stats "
          f"(target <= {TARGET_COUNTS_RATIO}x)")
    print(f"enter -> first rows painted:         {r['first_rows_s']:.2f} s ({int(r['first_rows_n'])} rows) "
          f"(target < {TARGET_FIRST_ROWS_S:.0f} s)")
    print(f"enter -> whole list painted:         {r['complete_s']:.2f} s")
    target = TARGET_STEADY_1M if n >= 500_000 else TARGET_IDLE_100K
    print(f"steady CPU, clients {args.clients:>4}:         {r['steady_cpu'] * 100:.1f}% of a core over "
          f"{args.steady:.0f} s, {int(r['steady_rescans'])} listing(s) (target < {target * 100:.0f}%)")
    print(f"key press -> screen:                 p50 {r['key_p50_s'] * 1000:.0f} ms, p90 {r['key_p90_s'] * 1000:.0f} ms, "
          f"max {r['key_max_s'] * 1000:.0f} ms (target p90 < {TARGET_KEY_P90_S * 1000:.0f} ms)")
    print(f"  key handled (cursor moved), p90:   {r['key_handled_p90_s'] * 1000:.0f} ms")
    print(f"  of which during a rescan:          {int(r['key_busy_n'])} presses, p90 {r['key_busy_p90_s'] * 1000:.0f} ms")
    print(f"resident memory:                     {r['rss_complete_mb']:.0f} MB with the list "
          f"(+{r['rss_growth_mb']:.0f} MB for the console), peak {r['rss_peak_mb']:.0f} MB (target < {TARGET_RSS_MB} MB)")
    if "published" in r:
        who = "ddmq 0.9.14" if args.layout == "ddmq" else "vsqs 0.3"
        print(f"clients ({who}) meanwhile:{' ' * (11 - len(who))} {int(r['published'])} published, "
              f"{int(r['consumed'])} consumed")
    if stalls is not None:
        stalls.report()


if __name__ == "__main__":
    main()
