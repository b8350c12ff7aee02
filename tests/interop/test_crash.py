"""Crash safety: SIGKILL qconsole at random points of requeue/move/purge, many times; after
`recover`, every message is in exactly one place (a queue, its work/ or the trash) and no
qconsole temp or claim file is left."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from ops_inventory import inventory
from peers import ddmq_broker, vsqs_manager
from qconsole.ops import Operations
from qconsole.backends import open_target as Root

#: counted by the tests, printed in the summary (pytest -s) and asserted non-trivial
STATS: dict[str, int] = {}


def _ops(root: str) -> Operations:
    return Operations(Root(root), audit_log=os.path.join(root, "..", "audit.log"))


def _kill_during(fn, delay: float) -> bool:
    """Run ``fn`` in a forked child, SIGKILL it after ``delay`` s; True when it was killed."""
    pid = os.fork()
    if pid == 0:  # child
        try:
            fn()
        finally:
            os._exit(0)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    _pid, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


def _check(root: str, layout: str, expected: set[str]) -> None:
    rep = _ops(root).recover()
    assert not rep.problems and not rep.live, (rep.problems, rep.live)
    STATS["restored"] = STATS.get("restored", 0) + len(rep.restored)
    STATS["completed"] = STATS.get("completed", 0) + len(rep.completed)
    STATS["temp_removed"] = STATS.get("temp_removed", 0) + len(rep.removed_temp)
    found, odd = inventory(root, layout)
    assert not odd, odd
    assert set(found) == expected, (expected - set(found), set(found) - expected)
    dup = {k: n for k, n in found.items() if n != 1}
    assert not dup, dup


def _restore_all(root: str) -> None:
    ops = _ops(root)
    for b in ops.trash_list():
        ops.trash_restore(b.batch)


def test_sigkill_ddmq_requeue_move_purge(tmp_path):
    root = str(tmp_path / "d")
    broker = ddmq_broker(root, "src", "dst")
    expected = {f"msg-{i}" for i in range(40)}
    for text in sorted(expected):
        broker.publish(random.choice(["src", "dst"]), text, priority=random.choice([5, 50, 999]))
    rng = random.Random(1234)
    kills = 0
    iterations = 70
    for it in range(iterations):
        b = ddmq_broker(root)
        for q in ("src", "dst"):
            for _ in range(rng.randint(0, 4)):  # real consumers hold some messages
                b.consume(q, clean=False)
        action = rng.choice(["requeue", "move", "move_back", "purge"])
        ops = _ops(root)
        fn = {
            "requeue": lambda: ops.requeue("src", all_held=True),
            "move": lambda: ops.move("src", "dst", all_=True),
            "move_back": lambda: ops.move("dst", "src", all_=True),
            "purge": lambda: ops.purge(rng.choice(["src", "dst"])),
        }[action]
        kills += _kill_during(fn, rng.uniform(0.0, 0.01))
        _check(root, "ddmq", expected)
        _restore_all(root)
        _check(root, "ddmq", expected)
    STATS["ddmq_iterations"] = iterations
    STATS["ddmq_kills"] = kills
    # timing-based: on an idle machine many operations finish before the kill; the
    # exhaustive kill-before-every-call test below covers every point deterministically
    assert kills >= iterations // 6


def test_sigkill_vsqs_requeue_move_purge(tmp_path):
    root = str(tmp_path / "v")
    for q in ("a", "b"):
        os.makedirs(os.path.join(root, q))
    manager = vsqs_manager(root)
    try:
        expected = {f"v-{i}" for i in range(40)}
        qa, qb = manager.get_queue("a"), manager.get_queue("b")
        for text in sorted(expected):
            (qa if random.random() < 0.5 else qb).publish(text.encode())
    finally:
        manager.close()
    rng = random.Random(99)
    kills = 0
    iterations = 70
    for it in range(iterations):
        for q in ("a", "b"):  # consume a few the way vsqs does: rename <id> -> <id>.<deadline>
            qdir = os.path.join(root, q)
            ready = sorted(n for n in os.listdir(qdir) if n.isdigit())
            for n in ready[: rng.randint(0, 4)]:
                deadline = int(time.time() * 1e6) + rng.choice([-5_000_000, 300_000_000])
                os.rename(os.path.join(qdir, n), os.path.join(qdir, f"{n}.{deadline}"))
        ops = _ops(root)
        action = rng.choice(["requeue", "move", "move_back", "purge"])
        fn = {
            "requeue": lambda: ops.requeue("a", all_held=True),
            "move": lambda: ops.move("a", "b", all_=True),
            "move_back": lambda: ops.move("b", "a", all_=True),
            "purge": lambda: ops.purge(rng.choice(["a", "b"])),
        }[action]
        kills += _kill_during(fn, rng.uniform(0.0, 0.01))
        _check(root, "vsqs", expected)
        _restore_all(root)
        _check(root, "vsqs", expected)
    STATS["vsqs_iterations"] = iterations
    STATS["vsqs_kills"] = kills
    assert kills >= iterations // 6


def test_sigkill_the_real_cli_then_recover_command(tmp_path):
    """The documented path: a killed `qconsole move` process, then `qconsole recover`."""
    root = str(tmp_path / "d")
    broker = ddmq_broker(root, "src", "dst")
    expected = {f"c-{i}" for i in range(300)}
    for text in sorted(expected):
        broker.publish("src", text)
    exe = [sys.executable, "-m", "qconsole.cli.app"]
    qc = os.path.join(os.path.dirname(sys.executable), "qconsole")
    rng = random.Random(7)
    for i in range(4):
        src, dst = ("src", "dst") if i % 2 == 0 else ("dst", "src")
        proc = subprocess.Popen([qc, "move", src, dst, "--all", "-r", root], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 0.9))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        out = subprocess.run([qc, "recover", "-r", root], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("recover:")
        found, odd = inventory(root, "ddmq")
        assert not odd and set(found) == expected and set(found.values()) == {1}
    del exe
    STATS["cli_kills"] = 4


@pytest.fixture(scope="module", autouse=True)
def _print_stats():
    yield
    sys.stderr.write(f"\ncrash-test stats: {STATS}\n")


def _die_at(n: int, fn) -> bool:
    """Run ``fn`` in a child that dies (os._exit) just before its n-th file-system call; True if it died."""
    pid = os.fork()
    if pid == 0:
        calls = [0]

        def wrap(real):
            def inner(*a, **k):
                calls[0] += 1
                if calls[0] == n:
                    os._exit(9)
                return real(*a, **k)
            return inner

        for name in ("rename", "link", "unlink", "open", "write", "fsync"):
            setattr(os, name, wrap(getattr(os, name)))
        try:
            fn()
        finally:
            os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) == 9


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_crash_at_every_file_system_call(tmp_path, layout):
    """Deterministic: kill before the 1st, 2nd, ... file-system call of a requeue and a move."""
    root = str(tmp_path / layout)
    if layout == "ddmq":
        broker = ddmq_broker(root, "src", "dst")
        for i in range(3):
            broker.publish("src", f"d-{i}")
    else:
        for q in ("src", "dst"):
            os.makedirs(os.path.join(root, q))
        for i in range(3):
            _ops(root).publish("src", [f"d-{i}".encode()])
    expected = {f"d-{i}" for i in range(3)}
    points = 0
    for action in ("requeue", "move", "move_back"):
        n = 1
        while True:
            if layout == "ddmq":
                ddmq_broker(root).consume("src", n=2, clean=False)
            else:
                qdir = os.path.join(root, "src")
                for name in sorted(x for x in os.listdir(qdir) if x.isdigit())[:2]:
                    os.rename(os.path.join(qdir, name), os.path.join(qdir, f"{name}.{int(time.time() * 1e6) + 10**9}"))
            ops = _ops(root)
            fn = {"requeue": lambda: ops.requeue("src", all_held=True),
                  "move": lambda: ops.move("src", "dst", all_=True),
                  "move_back": lambda: ops.move("dst", "src", all_=True)}[action]
            died = _die_at(n, fn)
            _check(root, layout, expected)
            points += 1
            if not died:
                break
            n += 1
    STATS[f"{layout}_crash_points"] = points
    assert points > 20
