"""A demo: roots of both layouts, a fixed fixture for tests and screenshots, and a live simulation.

Layer 2 (beside the operations). Producers publish through :class:`qconsole.ops.Operations`
when it is available; consumers take messages with the clients' own rename protocols (VSQS
``<id>`` -> ``<id>.<deadline>``, ddmq ``<q>/<name>`` -> ``<q>/work/<deadline>.<name>``),
acknowledge by unlinking, and some of them "die" holding a message, so it expires.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from .backends.ddmq import layout as ddmq_layout
from .backends.fs.listing import QC_TEMP_PREFIX

#: a fixed instant (2024-05-01 12:00:00 UTC) for the fixture, snapshots and screenshots
FIXED_NOW = 1714564800.0

DDMQ_QUEUES = ("emails", "reports", "thumbnails")
VSQS_QUEUES = ("ingest", "orders", "webhooks")


def _write_atomic(path: str, data: bytes) -> None:
    """Temp name (never listed by a client: starts with .qconsole-, no .ddmq), fsync, rename."""
    d = os.path.dirname(path)
    tmp = os.path.join(d, f"{QC_TEMP_PREFIX}demo-{os.getpid()}-{threading.get_ident()}-{random.getrandbits(32):08x}")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def _ddmq_doc(queue: str, name: str, message: str, priority: int, qn: str, uid: str, timeout: int,
              counter: int = 0) -> bytes:
    doc = {"message": message, "priority": priority, "queue_number": int(qn), "id": uid, "queue": queue,
           "filename": name, "timeout": timeout, "requeue": True, "requeue_counter": counter,
           "requeue_limit": None}
    return json.dumps(doc).encode()


def make_ddmq_root(path: str, queues: tuple[str, ...] = DDMQ_QUEUES) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "ddmq.yaml"), "w") as fh:
        fh.write("message_timeout: 30\n")
    for q in queues:
        os.makedirs(os.path.join(path, q, "work"), exist_ok=True)
        with open(os.path.join(path, q, "ddmq.yaml"), "w") as fh:
            fh.write("priority: 5\n" if q == "reports" else "")
    return path


def make_vsqs_root(path: str, queues: tuple[str, ...] = VSQS_QUEUES) -> str:
    for q in queues:
        os.makedirs(os.path.join(path, q), exist_ok=True)
    return path


def build_fixture(base: str, now: float = FIXED_NOW) -> tuple[str, str]:
    """Two roots (ddmq, vsqs) with fixed ids, payloads and timestamps around ``now``.

    Deterministic, so snapshot tests and screenshots always show the same thing.
    """
    droot = make_ddmq_root(os.path.join(base, "ddmq"))
    vroot = make_vsqs_root(os.path.join(base, "vsqs"))
    payloads = [
        json.dumps({"to": "ada@example.org", "template": "welcome", "n": i}) for i in range(6)
    ] + ["[@click=app.quit] plain text with markup", "report \x1b]52;c;aGk=\x07 done"]
    # ddmq: ready messages with mixed priorities, two in flight, one expired
    for i, text in enumerate(payloads):
        prio = (1, 5, 5, 10, 9, 5, 5, 5)[i]
        created = now - 600 + i * 37
        qn = f"{int(created)}{i:06d}"
        uid = f"{i:02x}" + "c0ffee" * 5
        name = ddmq_layout.waiting_name(prio, qn, uid)
        _write_atomic(os.path.join(droot, "emails", name), _ddmq_doc("emails", name, text, prio, qn, uid, 30))
    for j, left in enumerate((25.0, 7.0, -40.0)):
        created = now - 300 - j
        qn = f"{int(created)}{j:06d}"
        uid = f"f{j}" + "5eed" * 7 + "ab"
        name = ddmq_layout.waiting_name(5, qn, uid)
        deadline = int(now + left)
        wname = ddmq_layout.work_name(deadline, 5, qn, uid)
        _write_atomic(os.path.join(droot, "emails", "work", wname),
                      _ddmq_doc("emails", name, f"job {j}", 5, qn, uid, 30, counter=j))
    for i in range(3):
        created = now - 120 + i
        qn = f"{int(created)}{i:06d}"
        uid = f"{i:02x}" + "0ddba11" * 4 + "ff"
        name = ddmq_layout.waiting_name(5, qn, uid)
        _write_atomic(os.path.join(droot, "reports", name), _ddmq_doc("reports", name, f"report {i}", 5, qn, uid, 30))
    # VSQS: µs ids as vsqs 0.3 writes them
    for i in range(12):
        mid = int((now - 900 + i * 61) * 1_000_000)
        _write_atomic(os.path.join(vroot, "orders", str(mid)), json.dumps({"order": 1000 + i, "sku": "A-7"}).encode())
    for j, left in enumerate((95.0, 18.0, -5.0)):
        mid = int((now - 1000 - j) * 1_000_000)
        dl = int((now + left) * 1_000_000)
        _write_atomic(os.path.join(vroot, "orders", f"{mid}.{dl}"), f"order held {j}".encode())
    for i in range(2):
        mid = int((now - 30 + i) * 1_000_000)
        _write_atomic(os.path.join(vroot, "ingest", str(mid)), bytes(range(0, 256, 7)))
    return droot, vroot


# -- live simulation -------------------------------------------------------------------------


@dataclass
class Simulation:
    """Producers and consumers in threads; ``stop()`` ends them."""

    ddmq_root: str
    vsqs_root: str
    seed: int = 7
    stop_event: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def start(self) -> "Simulation":
        plans = [
            # (layout, queue, produce per s, consumers, processing s, die probability, timeout s)
            ("ddmq", "emails", 3.0, 2, 0.6, 0.10, 20),
            ("ddmq", "reports", 0.8, 1, 2.5, 0.05, 15),
            ("ddmq", "thumbnails", 5.0, 1, 0.3, 0.02, 12),
            ("vsqs", "ingest", 4.0, 3, 0.5, 0.05, 15),
            ("vsqs", "orders", 1.5, 1, 1.2, 0.15, 10),
            ("vsqs", "webhooks", 2.0, 0, 0.0, 0.0, 0),  # no consumer: a growing backlog
        ]
        for n, (layout, queue, rate, consumers, work_s, die, timeout) in enumerate(plans):
            self._spawn(self._producer, layout, queue, rate, random.Random(self.seed + n))
            for c in range(consumers):
                self._spawn(self._consumer, layout, queue, work_s, die, timeout, random.Random(self.seed * 31 + n * 7 + c))
        self._spawn(self._janitor)
        return self

    def stop(self) -> None:
        self.stop_event.set()
        for t in self.threads:
            t.join(timeout=3)

    def _spawn(self, target, *args) -> None:  # noqa: ANN001
        t = threading.Thread(target=self._guard, args=(target, *args), daemon=True, name=f"demo-{target.__name__}")
        self.threads.append(t)
        t.start()

    def _guard(self, target, *args) -> None:  # noqa: ANN001
        try:
            target(*args)
        except Exception as err:  # noqa: BLE001 (a demo thread must not kill the console)
            self.errors.append(f"{target.__name__}: {err}")

    def _root(self, layout: str) -> str:
        return self.ddmq_root if layout == "ddmq" else self.vsqs_root

    def _ops(self, layout: str):  # noqa: ANN202
        try:
            from .ops import Operations
            from .backends import open_target
        except ImportError:
            return None
        return Operations(open_target(self._root(layout)), audit_log=os.devnull, user_action_source="demo")

    # producers ---------------------------------------------------------------------------
    def _producer(self, layout: str, queue: str, rate: float, rng: random.Random) -> None:
        ops = self._ops(layout)
        n = 0
        while not self.stop_event.wait(rng.expovariate(rate)):
            n += 1
            body = json.dumps({"queue": queue, "n": n, "at": round(time.time(), 3)}).encode()
            prio = rng.choice((1, 5, 5, 5, 9)) if layout == "ddmq" else None
            if ops is not None:
                ops.publish(queue, [body], priority=prio)
            else:
                self._publish_fallback(layout, queue, body, prio or 5)

    def _publish_fallback(self, layout: str, queue: str, body: bytes, prio: int) -> None:
        """Used only while qconsole.ops is absent: the same atomic create-then-rename."""
        qdir = os.path.join(self._root(layout), queue)
        if layout == "vsqs":
            mid = str(time.time_ns() // 1000)
            _write_atomic(os.path.join(qdir, mid), body)
            return
        qn = str(time.time()).replace(".", "")
        uid = os.urandom(16).hex()
        name = ddmq_layout.waiting_name(prio, qn, uid)
        _write_atomic(os.path.join(qdir, name), _ddmq_doc(queue, name, body.decode(), prio, qn, uid, 20))

    # consumers: the clients' rename protocols -------------------------------------------
    def _consumer(self, layout: str, queue: str, work_s: float, die: float, timeout: int, rng: random.Random) -> None:
        qdir = os.path.join(self._root(layout), queue)
        while not self.stop_event.is_set():
            held = self._take(layout, qdir, timeout)
            if held is None:
                self.stop_event.wait(0.5)
                continue
            if rng.random() < die:
                # this consumer "dies" holding the message: it stays in flight until it expires
                self.stop_event.wait(rng.uniform(2, 6))
                continue
            self.stop_event.wait(rng.uniform(0.5, 1.5) * work_s)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(held)  # acknowledge

    def _take(self, layout: str, qdir: str, timeout: int) -> str | None:
        try:
            names = os.listdir(qdir)
        except FileNotFoundError:
            return None
        if layout == "vsqs":
            ready = sorted((n for n in names if n.isdigit()), key=int)
            for n in ready[:5]:
                dl = int((time.time() + timeout) * 1_000_000)
                dest = os.path.join(qdir, f"{n}.{dl}")
                try:
                    os.rename(os.path.join(qdir, n), dest)
                    return dest
                except FileNotFoundError:
                    continue  # another consumer won the race
            return None
        ready = sorted(n for n in names if ddmq_layout.parse_waiting(n))
        for n in ready[:5]:
            dest = os.path.join(qdir, "work", f"{int(time.time() + timeout)}.{n}")
            try:
                os.rename(os.path.join(qdir, n), dest)
                return dest
            except FileNotFoundError:
                continue
        return None

    def _janitor(self) -> None:
        """Every 25 s put expired messages back, as the clients' own cleaners do."""
        while not self.stop_event.wait(25):
            for layout, queues in (("ddmq", DDMQ_QUEUES), ("vsqs", VSQS_QUEUES)):
                ops = self._ops(layout)
                if ops is None:
                    continue
                for q in queues:
                    with contextlib.suppress(Exception):
                        ops.requeue(q, expired_only=True)


@contextlib.contextmanager
def demo_session(directory: str | None = None) -> Iterator[tuple[list[str], Simulation]]:
    """Create the demo roots (in ``directory``, kept; or a temp dir, removed), run the simulation.

    The temp dir is removed on a normal exit and also when the terminal goes away (SIGHUP, an
    SSH drop) or the process is told to stop (SIGTERM): no ``qconsole-demo-*`` is left behind.
    """
    import signal

    base: str | None = None
    sim: Simulation | None = None

    def clean_up() -> None:
        if sim is not None:
            sim.stop()
        if not directory and base is not None:
            shutil.rmtree(base, ignore_errors=True)

    def on_signal(signum: int, _frame: object) -> None:
        clean_up()
        if signum == signal.SIGTERM:
            raise SystemExit(128 + signum)  # unwinds through the app, which restores the terminal
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # hung up: no terminal to restore; die of the signal as before

    previous = {}
    if threading.current_thread() is threading.main_thread():
        # before the directory exists: a hang-up at any moment finds the handler in place
        for sig in (signal.SIGHUP, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    base = os.path.abspath(directory) if directory else tempfile.mkdtemp(prefix="qconsole-demo-")
    try:
        droot = make_ddmq_root(os.path.join(base, "ddmq"))
        vroot = make_vsqs_root(os.path.join(base, "vsqs"))
        sim = Simulation(droot, vroot).start()
        yield [droot, vroot], sim
    finally:
        clean_up()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
