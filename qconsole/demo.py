"""A demo: roots of every kind, a fixed fixture for tests and screenshots, and a live simulation.

Layer 2 (beside the operations). What is specific to a store (its queues, how a root is made
and seeded, how its consumer takes a message) is the backend's own ``demo`` module
(:meth:`qconsole.backends.base.Backend.demo`); this module only runs them. Producers publish
through :class:`qconsole.ops.Operations`; consumers take messages by the clients' own
protocols, acknowledge, and some of them "die" holding a message, so it expires.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .backends import backend_class, open_target

#: a fixed instant (2024-05-01 12:00:00 UTC) for the fixture, snapshots and screenshots
FIXED_NOW = 1714564800.0
#: a demo queue's producer pauses while the queue holds this many messages: a queue with too
#: few consumers (by design: a backlog to watch) would otherwise grow for as long as the demo
#: runs (5/s is 18k files an hour), and every listing of it with it
BACKLOG_CAP = 3000
#: the producer looks at its queue's size every this many messages (a count is one listing)
BACKLOG_EVERY = 50

#: the kinds of store the demo always shows (they need nothing but a directory)
FILE_KINDS = ("ddmq", "vsqs")
#: kinds the demo adds when it can start their server (RSMQ: a private redis-server); a kit
#: whose make_root cannot raises QConsoleError, and the demo goes on without it, saying so
SERVER_KINDS = ("rsmq",)
DDMQ_QUEUES = backend_class("ddmq").demo().QUEUES
VSQS_QUEUES = backend_class("vsqs").demo().QUEUES


def make_root(kind: str, path: str) -> str:
    return backend_class(kind).demo().make_root(path)


def make_ddmq_root(path: str) -> str:
    return make_root("ddmq", path)


def make_vsqs_root(path: str) -> str:
    return make_root("vsqs", path)


def build_fixture(base: str, now: float = FIXED_NOW) -> tuple[str, str]:
    """Two roots (ddmq, vsqs) with fixed ids, payloads and timestamps around ``now``.

    Deterministic, so snapshot tests and screenshots always show the same thing.
    """
    roots = []
    for kind in FILE_KINDS:
        kit = backend_class(kind).demo()
        root = kit.make_root(os.path.join(base, kind))
        kit.seed_fixture(root, now)
        roots.append(root)
    return roots[0], roots[1]


# -- live simulation -------------------------------------------------------------------------


class _PacingEvent(threading.Event):
    """The simulation's stop event. Every loop of a simulated client waits on it, so each wait
    also notes the CPU its thread has used so far (read without touching another thread)."""

    def __init__(self) -> None:
        super().__init__()
        #: thread ident -> its CPU seconds at its last wait
        self.used: dict[int, float] = {}

    def wait(self, timeout: float | None = None) -> bool:
        self.used[threading.get_ident()] = time.thread_time()
        return super().wait(timeout)


class Simulation:
    """Producers and consumers in threads over the given roots (any kind); ``stop()`` ends them."""

    def __init__(self, *roots: str, seed: int = 7) -> None:
        self.roots = list(roots)
        self.seed = seed
        self.stop_event = _PacingEvent()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def start(self) -> "Simulation":
        n = 0
        for root in self.roots:
            kit = open_target(root).demo()
            for queue, rate, consumers, work_s, die, timeout in kit.PLANS:
                self._spawn(self._producer, root, kit, queue, rate, random.Random(self.seed + n))
                for c in range(consumers):
                    self._spawn(self._consumer, root, kit, queue, work_s, die, timeout,
                                random.Random(self.seed * 31 + n * 7 + c))
                n += 1
        self._spawn(self._janitor)
        return self

    def cpu_seconds(self) -> float:
        """CPU the simulated clients have used so far (as of each one's last wait). They run in
        the console's process: the queue screen spaces its rescans by the process's CPU, and
        counted theirs as its own (a demo queue of 50 messages was listed every 12 s, not 2)."""
        return sum(list(self.stop_event.used.values()))

    def stop(self, wait_s: float = 5.0) -> None:
        """End the threads, waiting at most ``wait_s`` in all (not per thread: there are ~20)."""
        self.stop_event.set()
        deadline = time.monotonic() + wait_s
        for t in self.threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def _spawn(self, target: Any, *args: Any) -> None:
        t = threading.Thread(target=self._guard, args=(target, *args), daemon=True, name=f"demo-{target.__name__}")
        self.threads.append(t)
        t.start()

    def _guard(self, target: Any, *args: Any) -> None:
        try:
            target(*args)
        except Exception as err:  # noqa: BLE001 (a demo thread must not kill the console)
            self.errors.append(f"{target.__name__}: {err}")

    @staticmethod
    def _ops(root: str) -> Any:
        from .ops import Operations

        return Operations(open_target(root), audit_log=os.devnull, user_action_source="demo")

    def _producer(self, root: str, kit: Any, queue: str, rate: float, rng: random.Random) -> None:
        ops = self._ops(root)
        n = 0
        while not self.stop_event.wait(rng.expovariate(rate)):
            if n % BACKLOG_EVERY == 0 and self._backlog(ops, queue) >= BACKLOG_CAP:
                self.stop_event.wait(5.0)  # until its consumers (or the operator) take some
                continue
            n += 1
            body = json.dumps({"queue": queue, "n": n, "at": round(time.time(), 3)}).encode()
            ops.publish(queue, [body], **kit.publish_options(rng))

    @staticmethod
    def _backlog(ops: Any, queue: str) -> int:
        """Messages in ``queue`` now, any state (0 when it cannot be counted: keep producing)."""
        try:
            return ops.root.scan([queue]).queues[0].total
        except Exception:  # noqa: BLE001 (a demo thread goes on)
            return 0

    def _consumer(self, root: str, kit: Any, queue: str, work_s: float, die: float, timeout: int,
                  rng: random.Random) -> None:
        while not self.stop_event.is_set():
            ack = kit.take(root, queue, timeout)
            if ack is None:
                self.stop_event.wait(0.5)
                continue
            if rng.random() < die:
                # this consumer "dies" holding the message: it stays in flight until it expires
                self.stop_event.wait(rng.uniform(2, 6))
                continue
            self.stop_event.wait(rng.uniform(0.5, 1.5) * work_s)
            ack()

    def _janitor(self) -> None:
        """Every 25 s put expired messages back, as the clients' own cleaners do."""
        while not self.stop_event.wait(25):
            for root in self.roots:
                with contextlib.suppress(Exception):
                    ops = self._ops(root)
                    try:
                        for q in ops.root.queue_names()[0]:
                            with contextlib.suppress(Exception):
                                ops.requeue(q, expired_only=True)
                    finally:
                        ops.root.close()  # an RSMQ root holds a connection


def make_roots(base: str, kinds: tuple[str, ...] | None = None, note: Any = None,
               stops: list[Callable[[], None]] | None = None) -> tuple[list[str], list[Callable[[], None]]]:
    """The demo's roots under ``base`` (the file layouts, then every server kind that can start)
    and what stops them (appended to ``stops`` as each starts, so a signal meanwhile finds
    it). ``note(line)`` hears why a server kind is left out (one line each)."""
    from .errors import QConsoleError

    roots: list[str] = []
    stops = [] if stops is None else stops
    for kind in kinds or (*FILE_KINDS, *SERVER_KINDS):
        kit = backend_class(kind).demo()
        try:
            root = kit.make_root(os.path.join(base, kind))
        except QConsoleError as err:
            if kind in FILE_KINDS:
                raise
            if note is not None:
                note(f"no {backend_class(kind).title} in this demo: {err}")
            continue
        roots.append(root)
        stop = getattr(kit, "stop_root", None)
        if stop is not None:
            stops.append(functools.partial(stop, root))
    return roots, stops


def _say(line: str) -> None:
    import sys

    sys.stderr.write(f"qconsole demo: {line}\n")
    sys.stderr.flush()


#: how long a session told to stop (SIGTERM) may take to unwind before it is ended outright
_EXIT_GRACE_S = 10.0


def _remove_tree(path: str, tries: int = 5) -> None:
    """Remove the demo's temp dir, again if something wrote into it meanwhile (a thread that
    outlived its join on a loaded machine, a server's last log line)."""
    for attempt in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.05 * (attempt + 1))


@contextlib.contextmanager
def demo_session(directory: str | None = None, kinds: tuple[str, ...] | None = None,
                 note: Any = _say) -> Iterator[tuple[list[str], Simulation]]:
    """Create the demo roots (in ``directory``, kept; or a temp dir, removed), run the simulation.

    Roots of every kind: the file layouts' directories, and an RSMQ target (a private
    redis-server on a unix socket in the demo's directory) when a server binary is found.
    The temp dir is removed and the servers stopped on a normal exit and also when the terminal
    goes away (SIGHUP, an SSH drop) or the process is told to stop (SIGTERM): no
    ``qconsole-demo-*`` and no redis-server is left behind.
    """
    import signal

    base: str | None = None
    sim: Simulation | None = None
    stops: list[Callable[[], None]] = []

    busy = False  # a clean-up is running
    deferred: int | None = None  # a signal that came meanwhile
    told: int | None = None  # the SIGTERM this session was ended by

    def clean_up() -> None:
        """Stop the simulation, then the servers, then remove the tree: each step whatever the
        ones before met (an error, a handler raising in it), and idempotent."""
        nonlocal busy
        busy = True
        failure: BaseException | None = None
        steps: list[Callable[[], None]] = [sim.stop] if sim is not None else []
        steps += reversed(stops)
        stops.clear()
        if not directory and base is not None:
            # last, and twice: once more if an interrupt cut the first removal short
            steps += [functools.partial(_remove_tree, base)] * 2
        for step in steps:
            try:
                step()
            except BaseException as err:  # noqa: BLE001 (the tree still goes; raised after)
                failure = failure or err
        busy = False
        if failure is not None and not isinstance(failure, Exception):
            raise failure  # (an interrupt, an exit: after the clean-up, not instead of it)

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal deferred, told
        if busy:
            # a second signal during the clean-up (closing the terminal hangs up the session
            # again): a nested clean-up would remove the tree while the first still stops a
            # server that writes there; it is acted on once the first has ended
            deferred = deferred or signum
            return
        clean_up()
        hung_up, deferred = signal.SIGHUP in (signum, deferred), None  # (this handler acts on both)
        for sig in (signal.SIGTSTP, signal.SIGCONT):  # the app's, which need its loop: not while it ends
            signal.signal(sig, signal.SIG_DFL)
        if not hung_up:
            # an exit raised where Python drops it (a finalizer, a weakref callback: ~1 in 2,000
            # here) would leave the app running over a removed tree: end it anyway, later
            ender = threading.Timer(_EXIT_GRACE_S, os._exit, (128 + signum,))
            ender.daemon = True  # (a process that does end is not kept waiting for it)
            ender.start()
            told = signum
            raise SystemExit(128 + signum)  # unwinds through the app, which restores the terminal
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGHUP)  # hung up: no terminal to restore; die of the signal as before

    previous = {}
    if threading.current_thread() is threading.main_thread():
        # before the directory exists: a hang-up at any moment finds the handler in place
        # (a signal ignored by whoever started us, as nohup does, stays ignored)
        for sig in (signal.SIGHUP, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, on_signal)
    # held back while the directory is made: one that came inside mkdtemp would find no base
    held = signal.pthread_sigmask(signal.SIG_BLOCK, previous) if previous else None
    try:
        base = os.path.abspath(directory) if directory else tempfile.mkdtemp(prefix="qconsole-demo-")
    finally:
        if held is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    try:
        roots, _stops = make_roots(base, kinds, note, stops)
        sim = Simulation(*roots).start()
        yield roots, sim
    finally:
        try:
            clean_up()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if deferred is not None:  # told to stop during the clean-up of a normal exit: stop as told
                os.kill(os.getpid(), deferred)
        if told is not None:  # (the app may have swallowed the exit, raised in one of its tasks)
            raise SystemExit(128 + told)
