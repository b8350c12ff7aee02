"""`qconsole demo` with RSMQ: a private redis-server on a unix socket in the demo's directory,
producers and consumers by rsmq's own protocol (some die holding a message, so it expires and is
received again; some sends are delayed), the server stopped and its directory removed on exit,
SIGTERM and SIGHUP; with no server the demo runs with the file layouts and says so in one line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qconsole.backends import backend_class, open_target
from qconsole.demo import demo_session

from redis_peer import missing

KIT = backend_class("rsmq").demo()


@pytest.fixture(autouse=True)
def _server_binary(redis_server) -> None:  # the shared server's fixture checks redis-server and redis-py
    if KIT.find_server() is None:
        missing("no redis-server for the demo")


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR short enough for the demo's unix socket (at most 107 bytes): pytest's own
    directory under xdist (``.../popen-gw0/<test name>/``) is not, and the demo then rightly
    runs without RSMQ."""
    path = Path(tempfile.mkdtemp(prefix="qcd-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def server_pids(sock: str) -> list[int]:
    """Processes whose command line names ``sock`` (the demo's redis-server)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if sock.encode() in cmd and b"redis-server" in cmd.split(b"\0")[0]:
            out.append(int(pid))
    return out


def test_session_runs_rsmq_beside_the_file_layouts_and_stops_its_server(tmp_path: Path) -> None:
    notes: list[str] = []
    with demo_session(str(tmp_path / "demo"), note=notes.append) as (roots, sim):
        assert notes == []
        assert roots[:2] == [str(tmp_path / "demo" / "ddmq"), str(tmp_path / "demo" / "vsqs")]
        target = roots[2]
        sock = str(tmp_path / "demo" / "rsmq" / "redis.sock")
        assert target == f"unix://{sock}"
        assert len(server_pids(sock)) == 1
        handle = open_target(target)
        assert handle.queue_names()[0] == sorted(KIT.QUEUES)
        # a real server of our own: no TCP port, nothing saved
        cfg = handle.client.config_get("port")
        assert cfg["port"] == "0"
        assert handle.client.config_get("save")["save"] == "" and handle.client.config_get("appendonly")["appendonly"] == "no"
        seen: dict[str, int] = {"delayed": 0, "inflight": 0, "redelivered": 0, "expired": 0}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not all(seen.values()):
            time.sleep(1)
            for q in handle.scan().queues:
                for state in ("delayed", "inflight", "expired"):
                    seen[state] += q.counts[state]
                seen["redelivered"] += q.extras["received_more_than_once"] or 0
        assert all(seen.values()), (seen, sim.errors)
        assert sim.errors == []
        handle.close()
    assert server_pids(sock) == [] and not os.path.exists(sock)


def test_without_a_server_the_demo_has_the_file_layouts_and_says_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KIT.ENV, "off")
    notes: list[str] = []
    with demo_session(str(tmp_path / "demo"), note=notes.append) as (roots, _sim):
        assert [os.path.basename(r) for r in roots] == ["ddmq", "vsqs"]
    assert len(notes) == 1 and "no RSMQ in this demo" in notes[0] and "QCONSOLE_DEMO_REDIS" in notes[0]
    monkeypatch.setenv(KIT.ENV, str(tmp_path / "no-such-redis-server"))
    notes.clear()
    with demo_session(str(tmp_path / "demo2"), note=notes.append) as (roots, _sim):
        assert len(roots) == 2
    assert len(notes) == 1 and "not an executable redis-server" in notes[0]


def test_fixture_writes_every_state_as_rsmq_leaves_it(tmp_path: Path) -> None:
    target = KIT.make_root(str(tmp_path / "r"))
    try:
        handle = open_target(target)
        KIT.seed_fixture(target, handle.now())
        doc = {q.name: q for q in handle.scan().queues}
        c = doc["payments"].counts
        assert (c["ready"], c["inflight"], c["expired"], c["delayed"]) == (4, 2, 1, 2)
        c = doc["scheduled"].counts
        assert (c["ready"], c["inflight"], c["expired"], c["delayed"]) == (1, 0, 0, 3)
        assert doc["payments"].extras["received_more_than_once"] == 2
        # a consumer takes by rsmq's receive: the oldest visible, rc + 1; the ack deletes it whole
        ack = KIT.take(target, "scheduled", 30)
        assert ack is not None
        assert handle.scan_queue("scheduled").counts["inflight"] == 1
        ack()
        fields = handle.client.hkeys("rsmq:scheduled:Q")
        assert not [f for f in fields if f.endswith((b":rc", b":fr"))]  # the received one left nothing behind
        assert handle.scan_queue("scheduled").total == 3
        handle.close()
    finally:
        KIT.stop_root(target)


def drain(fd: int, seconds: float) -> None:
    """Read the demo's terminal for ``seconds``: a TUI nobody reads blocks on its writes."""
    import select

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_cli_demo_stops_its_redis_server_on_sigterm_and_sighup(short_tmp: Path, sig: int) -> None:
    import pty

    tmp_path = short_tmp
    pid, fd = pty.fork()
    if pid == 0:  # the child: a demo on a terminal of its own
        os.environ["TMPDIR"] = str(tmp_path)
        os.environ["TERM"] = "xterm"
        os.execv(sys.executable, [sys.executable, "-m", "qconsole", "demo"])
    sock = None
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            socks = list(tmp_path.glob("qconsole-demo-*/rsmq/redis.sock"))
            if socks:
                sock = str(socks[0])
                break
            drain(fd, 0.1)
        assert sock is not None, "the demo started no redis-server"
        assert len(server_pids(sock)) == 1
        drain(fd, 2)
        os.kill(pid, sig)
        if sig == signal.SIGHUP:
            os.close(fd)  # the terminal is gone, as with an SSH drop
        deadline = time.time() + 30
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if sig == signal.SIGHUP:
                time.sleep(0.1)
            else:
                drain(fd, 0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the demo did not end")
    finally:
        if sig != signal.SIGHUP:
            os.close(fd)
    # SIGTERM unwinds through the app (exit 143); a hang-up dies of the signal
    assert (os.WEXITSTATUS(status) == 128 + sig) if sig == signal.SIGTERM else os.WTERMSIG(status) == sig
    deadline = time.time() + 10
    while time.time() < deadline and server_pids(sock):
        time.sleep(0.1)
    assert server_pids(sock) == []
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


def test_readme_first_command_shows_all_three_kinds() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    first = readme[readme.index("```"):]
    block = first[:first.index("```", 3)]
    assert "qconsole demo" in block
    intro = readme[:readme.index("```") + len(block) + 400]
    for word in ("VSQS", "ddmq", "RSMQ"):
        assert word in intro, word


# A child that hangs itself up inside the demo session, and again while the clean-up stops the
# server (as closing the terminal does after an SSH drop's SIGHUP): every removal of the demo's
# tree is logged with whether the server still runs.
DOUBLE_HANGUP = r"""
import json, os, shutil, signal, sys, time
import qconsole.backends.rsmq.demo as rdemo
from qconsole.demo import demo_session

log = open(sys.argv[1], "a", buffering=1)
servers = []
real_stop, real_rmtree = rdemo._stop, shutil.rmtree

def stop(proc):
    servers.append(proc)
    os.kill(os.getpid(), signal.SIGHUP)  # the second hang-up, while the first clean-up runs
    time.sleep(0.2)
    real_stop(proc)

def rmtree(path, *args, **kwargs):
    log.write(json.dumps({"rm": path, "server_running": [p.poll() is None for p in servers]}) + "\n")
    real_rmtree(path, *args, **kwargs)

rdemo._stop = stop
shutil.rmtree = rmtree
with demo_session(kinds=("vsqs", "rsmq"), note=None) as (roots, sim):
    log.write(json.dumps({"roots": roots}) + "\n")
    os.kill(os.getpid(), signal.SIGHUP)
    time.sleep(30)
log.write(json.dumps({"survived": True}) + "\n")
"""


def test_a_second_hang_up_during_the_clean_up_does_not_remove_the_tree_under_a_running_server(
        short_tmp: Path) -> None:
    tmp_path = short_tmp
    log = tmp_path / "events.jsonl"
    out = subprocess.run([sys.executable, "-c", DOUBLE_HANGUP, str(log)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == -signal.SIGHUP, out.stderr  # died of the hang-up, after cleaning
    events = [json.loads(line) for line in log.read_text().splitlines()]
    sock = events[0]["roots"][1][len("unix://"):]
    removals = [e for e in events if "rm" in e]
    assert removals, events
    # one clean-up, run to its end: the tree goes only once the server is stopped
    assert {e["rm"] for e in removals} == {os.path.dirname(os.path.dirname(sock))}
    assert all(e["server_running"] == [False] for e in removals), removals
    assert server_pids(sock) == []
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []
