"""A qconsole killed (kill -9) in the middle of a bulk change, then the operator's next
commands: nothing may be hidden without a word (DESIGN §6, README "Crash recovery")."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness import qconsole_bin

KILL_AT_RENAME = '''
import os, signal
_rename, _seen = os.rename, [0]
def rename(*a, **kw):
    out = _rename(*a, **kw)
    _seen[0] += 1
    if _seen[0] == int(os.environ["QC_TEST_KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)  # kill -9 half-way through the bulk change
    return out
os.rename = rename
'''


def _fill(root, layout: str, n: int) -> set[str]:
    qdir = root / "jobs"
    (qdir / "work").mkdir(parents=True) if layout == "ddmq" else qdir.mkdir(parents=True)
    if layout == "ddmq":
        (root / "ddmq.yaml").write_text("")
        (qdir / "ddmq.yaml").write_text("")
    out = set()
    for i in range(n):
        text = f"m-{i}"
        out.add(text)
        if layout == "vsqs":
            (qdir / str(1_700_000_000_000_000 + i)).write_text(text)
        else:
            uid, qn = f"{i:032x}", f"1700000000{i:06d}"
            (qdir / f"999.{qn}.ddmq{uid}").write_text(json.dumps(
                {"message": text, "queue": "jobs", "timeout": None, "id": uid, "priority": 999, "queue_number": qn,
                 "filename": f"999.{qn}.ddmq{uid}", "requeue": True, "requeue_counter": 0, "requeue_limit": None}))
    return out


def _run(tmp_path, root, *argv, kill_at: int | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), HOME=str(tmp_path))
    if kill_at is not None:
        hook = tmp_path / "hook"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(KILL_AT_RENAME)
        env.update(PYTHONPATH=str(hook), QC_TEST_KILL_AT=str(kill_at))
    return subprocess.run([qconsole_bin(), *argv, "-r", str(root)], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_trash_list_and_restore_after_a_killed_purge_point_at_recover(tmp_path, layout):
    """kill -9 of a purge half-way: its messages are in a batch still under its hidden fill
    name. `trash list` said "the trash is empty" and `trash restore` "the trash is empty":
    hundreds of messages gone from the queue and, by every trash command, from the trash."""
    root = tmp_path / "root"
    expected = _fill(root, layout, 600)
    res = _run(tmp_path, root, "purge", "jobs", "--yes", kill_at=250)
    assert res.returncode == -9, (res.returncode, res.stderr)
    left = {n for n in os.listdir(root / "jobs") if not n.startswith(".") and n not in ("work", "ddmq.yaml")}
    assert 0 < len(left) < 600  # stopped half-way
    listed = _run(tmp_path, root, "trash", "list")
    assert listed.returncode == 0 and "recover" in listed.stdout + listed.stderr, (listed.stdout, listed.stderr)
    restored = _run(tmp_path, root, "trash", "restore")
    assert restored.returncode == 2 and "recover" in restored.stderr, restored.stderr
    assert len(restored.stderr.strip().splitlines()) == 1, restored.stderr
    # and what it points at puts things right
    assert _run(tmp_path, root, "recover").returncode == 0
    assert _run(tmp_path, root, "trash", "restore").returncode == 0
    qdir = root / "jobs"
    names = [n for n in os.listdir(qdir) if not n.startswith(".") and n not in ("work", "ddmq.yaml")]
    texts = [(qdir / n).read_text() if layout == "vsqs" else json.loads((qdir / n).read_text())["message"]
             for n in names]
    assert sorted(texts) == sorted(expected)


def test_a_killed_purges_batch_is_recovered_when_its_pid_runs_another_process(tmp_path):
    """kill -9 of a purge, and its pid now another process's (pids are reused: a container
    restarted, a busy host wrapped pid_max). The half-filled batch was judged by the pid alone:
    "being filled by a purge still running" for as long as that other process ran, and
    `recover` said "0 problems" and left it hidden. The process's start time tells them apart,
    as it does for recover's and a trash batch's locks."""
    import re
    import time

    root = tmp_path / "root"
    expected = _fill(root, "vsqs", 600)
    assert _run(tmp_path, root, "purge", "jobs", "--yes", kill_at=250).returncode == -9
    trash = root / ".qconsole" / "trash"
    (fill,) = [n for n in os.listdir(trash) if n.startswith(".fill-")]
    other = subprocess.Popen(["sleep", "600"])  # started after the purge made its batch
    try:
        # the batch named as made ten minutes ago, by the pid the sleep now has
        m = re.fullmatch(r"\.fill-([0-9a-f]{6})-[0-9]+-([0-9]{8}T[0-9]{6})-([0-9a-f]{6})", fill)
        then = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() - 600))
        os.rename(trash / fill, trash / f".fill-{m.group(1)}-{other.pid}-{then}-{m.group(3)}")
        rec = _run(tmp_path, root, "recover")
        assert rec.returncode == 0 and "0 finished moves" not in rec.stdout, rec.stdout
        restored = _run(tmp_path, root, "trash", "restore")
        assert restored.returncode == 0, restored.stderr
    finally:
        other.kill()
        other.wait()
    assert sorted((root / "jobs" / n).read_text() for n in os.listdir(root / "jobs")) == sorted(expected)


def _process_with_pid(pid: int) -> subprocess.Popen | None:
    """A new process that gets ``pid`` (the killed qconsole's, reused): root writes the pid
    before it to ns_last_pid, as CRIU does; None when that cannot be done here."""
    for _ in range(20):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as fh:
                fh.write(str(pid - 1))
        except OSError:
            return None
        p = subprocess.Popen(["sleep", "600"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_killed_moves_claims_are_recovered_when_its_pid_runs_another_process(tmp_path, layout):
    """kill -9 of a move, and its pid now another process's: recover took that process for the
    move ("N left to a running qconsole") and left the claimed messages hidden from every
    consumer for as long as it ran. A process that started after the claim was made is not
    the qconsole that made it."""
    import time

    root = tmp_path / "root"
    expected = _fill(root, layout, 600)
    if layout == "vsqs":
        (root / "dlq").mkdir()
    else:
        (root / "dlq" / "work").mkdir(parents=True)
        (root / "dlq" / "ddmq.yaml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILL_AT_RENAME)
    env.update(PYTHONPATH=str(hook), QC_TEST_KILL_AT="300", XDG_STATE_HOME=str(tmp_path / "state"))
    p = subprocess.Popen([qconsole_bin(), "move", "jobs", "dlq", "--all", "-r", str(root)], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert p.wait(timeout=120) == -9
    left = [n for d in ("jobs", "jobs/work") if (root / d).is_dir() for n in os.listdir(root / d)
            if n.startswith(".qconsole-claim-")]
    assert left
    time.sleep(6)  # the new process starts well after the claims were made (claims.PID_REUSE_SLACK)
    other = _process_with_pid(p.pid)
    if other is None:
        pytest.skip("cannot give a new process a chosen pid here (needs root and ns_last_pid)")
    try:
        rec = _run(tmp_path, root, "recover")
        assert rec.returncode == 0 and " 0 left to a running qconsole" in rec.stdout, rec.stdout
    finally:
        other.kill()
        other.wait()
    found = []
    for q in ("jobs", "dlq"):
        for d in (root / q, root / q / "work"):
            for n in os.listdir(d) if d.is_dir() else ():
                if n.startswith(".") or n in ("work", "ddmq.yaml"):
                    continue
                text = (d / n).read_text()
                found.append(text if layout == "vsqs" else json.loads(text)["message"])
    assert sorted(found) == sorted(expected)
