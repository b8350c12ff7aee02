"""``qconsole demo``'s clean-up against signals that come at awkward moments (file layouts only;
the RSMQ server's part is in tests/rsmq_redis/test_demo_rsmq.py): a hang-up during the clean-up
of a normal exit, a step of the clean-up that raises, and a SIGTERM whose exit was lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ENV = {**os.environ, "QCONSOLE_DEMO_REDIS": "off"}

# The session ends normally; while the simulation stops, the terminal closes (a SIGHUP) and a
# handler left by the app raises in the middle of the clean-up (as Textual's SIGCONT one did).
HANGUP_DURING_EXIT = r"""
import os, signal, sys, time
from qconsole.demo import Simulation, demo_session

real_stop = Simulation.stop

def stop(self, *args, **kwargs):
    real_stop(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGHUP)
    time.sleep(0.2)
    raise RuntimeError("no running event loop")

Simulation.stop = stop
with demo_session(kinds=("vsqs", "ddmq"), note=None) as (roots, sim):
    print(os.path.dirname(roots[0]), flush=True)
print("survived", flush=True)
"""


def test_a_hang_up_during_the_clean_up_of_a_normal_exit_is_obeyed_once_the_tree_is_gone(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", HANGUP_DURING_EXIT], capture_output=True, text=True, timeout=120,
                         env={**ENV, "TMPDIR": str(tmp_path)})
    lines = out.stdout.split()
    assert out.returncode == -signal.SIGHUP, (out.returncode, out.stdout, out.stderr)  # told to stop: stopped
    assert "survived" not in lines
    assert lines and lines[0].startswith(str(tmp_path))
    assert not os.path.exists(lines[0])  # the step after the one that raised still ran
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


# A SIGTERM handled while a finalizer runs: Python drops the SystemExit raised there, so the
# session goes on (cleaned up); a second SIGTERM must still end it.
LOST_EXIT = r"""
import os, signal, sys, threading, time
import qconsole.demo
from qconsole.demo import demo_session

qconsole.demo._EXIT_GRACE_S = float(sys.argv[1])

class Slow:
    def __del__(self):
        time.sleep(1.0)  # the SIGTERM is handled in here

with demo_session(kinds=("vsqs",), note=None) as (roots, sim):
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
    slow = Slow()
    del slow
    print("first exit lost", flush=True)
    time.sleep(60)
print("left the session", flush=True)
"""


def test_a_second_sigterm_ends_a_session_whose_first_exit_was_lost(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", LOST_EXIT, "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**ENV, "TMPDIR": str(tmp_path)})
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "first exit lost"
        proc.send_signal(signal.SIGTERM)
        deadline = time.time() + 20
        while proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert proc.poll() is not None, "a second SIGTERM was ignored"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read() if proc.stderr else ""
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


def test_a_session_whose_exit_was_lost_still_ends_on_its_own(tmp_path: Path) -> None:
    """With no second signal: the first one's grace runs out and the process ends, status 143."""
    started = time.time()
    out = subprocess.run([sys.executable, "-c", LOST_EXIT, "1.5"], capture_output=True, text=True, timeout=60,
                         env={**ENV, "TMPDIR": str(tmp_path)})
    assert out.stdout.split("\n")[0] == "first exit lost"
    assert out.returncode == 128 + signal.SIGTERM, out.stderr
    assert time.time() - started < 30  # the session's own sleep is 60 s
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


def test_a_sigterm_ends_the_session_at_once_not_after_the_grace(tmp_path: Path) -> None:
    """The fallback that ends a session whose exit was lost never holds up one that ends."""
    code = ("import os, signal, time\nimport qconsole.demo\nfrom qconsole.demo import demo_session\n"
            "qconsole.demo._EXIT_GRACE_S = 30.0\n"
            "with demo_session(kinds=('vsqs',), note=None):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(60)\n")
    started = time.time()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**ENV, "TMPDIR": str(tmp_path)})
    assert out.returncode == 128 + signal.SIGTERM, out.stderr
    assert time.time() - started < 20
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


# a hang-up that lands while the temp directory is being made (inside mkdtemp)
HANGUP_IN_MKDTEMP = r"""
import os, signal, tempfile
from qconsole.demo import demo_session

real = tempfile.mkdtemp

def mkdtemp(*args, **kwargs):
    path = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGHUP)  # the directory exists, its name is not returned yet
    return path

tempfile.mkdtemp = mkdtemp
with demo_session(kinds=("vsqs",), note=None):
    pass
print("survived", flush=True)
"""


def test_a_hang_up_while_the_directory_is_made_still_removes_it(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", HANGUP_IN_MKDTEMP], capture_output=True, text=True, timeout=60,
                         env={**ENV, "TMPDIR": str(tmp_path)})
    assert out.returncode == -signal.SIGHUP, out.stderr
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


def test_a_hang_up_ignored_by_whoever_started_the_demo_stays_ignored(tmp_path: Path) -> None:
    """As under nohup: the session goes on, and its normal end still removes its directory."""
    code = ("import os, signal, time\nfrom qconsole.demo import demo_session\n"
            "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "with demo_session(kinds=('vsqs',), note=None):\n"
            "    os.kill(os.getpid(), signal.SIGHUP)\n    time.sleep(0.3)\n"
            "print('survived', flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**ENV, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0 and out.stdout.strip() == "survived", out.stderr
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []
