"""Two `qconsole recover` at once (review A #4): each reported hundreds of false problems
("not a regular file", "its id is live in the queue already") for leftovers the other one had
just settled, and both exited 1. Now one recover runs at a time per root (a lock in
``.qconsole/``, :class:`qconsole.backends.fs.claims.RecoverLock`), and a leftover gone since
the listing counts as settled by someone else. A dead, stale or planted lock never blocks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from harness import DEAD_PID, HOST, qconsole_bin
from ops_inventory import inventory
from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.fs import batches, claims
from qconsole.errors import OperationError
from qconsole.ops import Operations

QC = ".qconsole-"


def _ops(root: str) -> Operations:
    return Operations(open_target(root), audit_log=os.path.join(root, "..", "audit.log"))


def _lock_path(root: str) -> str:
    return os.path.join(root, ".qconsole", "recover.lock")


def _root(tmp_path, layout: str, n: int) -> tuple[str, set[str], list[str]]:
    """A root whose queue ``a`` holds ``n`` messages (ddmq: all taken by a real consumer) and
    the qconsole command that moves them in batches."""
    root = str(tmp_path / layout)
    expected = {f"P{i}" for i in range(n)}
    if layout == "ddmq":
        broker = ddmq_broker(root, "a", "b")
        for i in range(n):
            broker.publish("a", f"P{i}", clean=False)
        broker.consume("a", n=n, clean=False)  # held in a/work: `requeue --all` puts them back
        return root, expected, ["requeue", "a", "--all"]
    for q in ("a", "b"):
        os.makedirs(os.path.join(root, q))
    _ops(root).publish("a", [f"P{i}".encode() for i in range(n)])
    return root, expected, ["move", "a", "b", "--all"]


def _leftovers(root: str) -> list[str]:
    out = []
    for d, _dirs, files in os.walk(root):
        out += [os.path.join(d, f) for f in files if f.startswith(QC)]
    return out


def _kill_mid_change(root: str, argv: list[str], want: int = 100) -> int:
    """Start the real qconsole on ``argv``, SIGKILL it once it holds ``want`` claims; how
    many leftovers it left (0: it finished first)."""
    qdirs = [os.path.join(root, q, s) for q in ("a", "b") for s in ("", "work")]
    p = subprocess.Popen([qconsole_bin(), *argv, "-r", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while p.poll() is None:
            n = sum(1 for d in qdirs if os.path.isdir(d) for f in os.listdir(d) if f.startswith(QC + "claim"))
            if n >= want:
                break
            time.sleep(0.002)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    return len(_leftovers(root))


def _recover_cmd(root: str) -> subprocess.Popen:
    return subprocess.Popen([qconsole_bin(), "recover", "-r", root], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _counts(line: str) -> dict[str, int]:
    # "recover: 224 put back, 0 finished moves, 224 temp files removed, 0 left to a running qconsole, 0 problems"
    parts = line.split(": ", 1)[1].split(", ")
    return {p.split(" ", 1)[1]: int(p.split(" ", 1)[0]) for p in parts}


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_two_recovers_at_once_after_a_kill_report_no_false_problems(tmp_path, layout):
    """kill -9 of a real bulk requeue/move, then two real `qconsole recover` at the same
    moment: both exit 0 with no problem line, between them they put back every claim, and
    every message is in exactly one place."""
    for attempt in range(3):
        root, expected, argv = _root(tmp_path / str(attempt), layout, 4000)
        left = _kill_mid_change(root, argv)
        if left >= 100:
            break
    else:
        pytest.fail("the bulk change never got killed with leftovers")
    claimed = sum(1 for p in _leftovers(root) if os.path.basename(p).startswith(QC + "claim"))
    a, b = _recover_cmd(root), _recover_cmd(root)  # started together
    outs = [p.communicate(timeout=120) for p in (a, b)]
    for p, (out, err) in zip((a, b), outs):
        assert p.returncode == 0, (p.returncode, out[-2000:], err[-2000:])
        assert "problem:" not in out and err == "", (out[-2000:], err)
    counts = [_counts(out.splitlines()[0]) for out, _err in outs]
    assert all(c["problems"] == 0 and c["left to a running qconsole"] == 0 for c in counts), counts
    # each claim settled once, by one of the two
    assert sum(c["put back"] + c["finished moves"] for c in counts) == claimed, (counts, claimed)
    found, odd = inventory(root, layout)
    assert not odd, odd[:5]
    assert set(found) == expected and set(found.values()) == {1}
    assert not os.path.lexists(_lock_path(root))


def _write_lock(root: str, text: str) -> str:
    path = _lock_path(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    return path


def _claimed_root(tmp_path) -> tuple[str, set[str]]:
    """A VSQS root with three messages claimed by a dead qconsole (no journal), one not."""
    root = str(tmp_path / "v")
    os.makedirs(os.path.join(root, "a"))
    _ops(root).publish("a", [b"x0", b"x1", b"x2", b"x3"])
    qdir = os.path.join(root, "a")
    for i, name in enumerate(sorted(os.listdir(qdir))[1:]):
        os.rename(os.path.join(qdir, name),
                  os.path.join(qdir, f"{QC}claim-{HOST}-{DEAD_PID}-0000000{i}-{claims.encode_rel(name)}"))
    return root, {"x0", "x1", "x2", "x3"}


def test_a_second_recover_waits_for_the_running_one(tmp_path):
    """While a live recover holds the lock, a real `qconsole recover` waits; it runs once the
    lock is released, and reports what it did itself."""
    root, expected = _claimed_root(tmp_path)
    lock = _write_lock(root, f"{HOST} {os.getpid()} {time.time():.0f} recover {claims._proc_start(os.getpid())}\n")  # this test: alive
    t0 = time.monotonic()
    p = _recover_cmd(root)
    time.sleep(1.5)
    assert p.poll() is None, p.communicate()  # still waiting
    assert len(_leftovers(root)) == 3  # and nothing done meanwhile
    os.unlink(lock)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == "", (out, err)
    assert time.monotonic() - t0 >= 1.5
    assert _counts(out.splitlines()[0])["put back"] == 3
    found, odd = inventory(root, "vsqs")
    assert not odd and set(found) == expected and set(found.values()) == {1}


def test_a_recover_still_running_after_the_wait_is_one_line_exit_2(tmp_path, monkeypatch):
    root, _expected = _claimed_root(tmp_path)
    _write_lock(root, f"{HOST} {os.getppid()} {time.time():.0f} recover {claims._proc_start(os.getppid())}\n")  # a running process, not us
    monkeypatch.setattr(claims, "RECOVER_LOCK_WAIT", 0.3)
    with pytest.raises(OperationError, match="another qconsole recover is running on this root") as err:
        _ops(root).recover()
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert len(_leftovers(root)) == 3  # untouched
    # another host's fresh lock holds as well (its owner cannot be asked)
    _write_lock(root, "abcdef 12 0 recover\n")
    with pytest.raises(OperationError, match="on host abcdef"):
        _ops(root).recover()


def _plant_dead(root: str) -> None:
    _write_lock(root, f"{HOST} {DEAD_PID} {time.time():.0f} recover\n")


def _plant_symlink(root: str) -> None:
    os.makedirs(os.path.join(root, ".qconsole"), exist_ok=True)
    os.symlink(os.path.join(root, "..", "outside.txt"), _lock_path(root))


def _plant_fifo(root: str) -> None:
    os.makedirs(os.path.join(root, ".qconsole"), exist_ok=True)
    os.mkfifo(_lock_path(root))


def _plant_garbage(root: str) -> None:
    _write_lock(root, "\x00\xff garbage " * 1000)


@pytest.mark.parametrize("plant", [_plant_dead, _plant_symlink, _plant_fifo, _plant_garbage],
                         ids=["dead-pid", "symlink-outside", "fifo", "garbage-stale"])
def test_a_dead_stale_or_planted_lock_does_not_block(tmp_path, monkeypatch, plant):
    root, expected = _claimed_root(tmp_path)
    outside = os.path.join(str(tmp_path), "outside.txt")
    with open(outside, "w") as fh:
        fh.write("not yours")
    plant(root)
    if plant is _plant_garbage:  # fresh, it is waited on; once stale (by ctime), broken
        monkeypatch.setattr(claims, "FOREIGN_HOST_GRACE", 0.2)
        time.sleep(0.3)
    monkeypatch.setattr(claims, "RECOVER_LOCK_WAIT", 0.0)
    rep = _ops(root).recover()
    assert len(rep.restored) == 3 and not rep.problems, rep.problems
    assert not os.path.lexists(_lock_path(root))
    assert open(outside).read() == "not yours"  # the link's target: never followed
    found, odd = inventory(root, "vsqs")
    assert not odd and set(found) == expected


def test_a_live_pid_that_stopped_renewing_its_lock_is_broken(tmp_path, monkeypatch):
    """A lock naming a running pid of this host (a planted one naming pid 1, or a recover
    stopped for good) holds only while it is renewed."""
    root, _expected = _claimed_root(tmp_path)
    _write_lock(root, f"{HOST} 1 0 recover {claims._proc_start(1)}\n")  # (pid 1 as it runs now)
    monkeypatch.setattr(claims, "RECOVER_LOCK_WAIT", 0.0)
    with pytest.raises(OperationError):
        _ops(root).recover()
    monkeypatch.setattr(claims, "FOREIGN_HOST_GRACE", 0.2)
    time.sleep(0.3)
    assert len(_ops(root).recover().restored) == 3


def test_a_planted_directory_lock_is_reported_and_recover_still_runs(tmp_path):
    root, _expected = _claimed_root(tmp_path)
    os.makedirs(os.path.join(_lock_path(root), "x"))
    rep = _ops(root).recover()
    assert len(rep.restored) == 3
    assert len(rep.problems) == 1 and "recover.lock" in rep.problems[0], rep.problems
    assert os.path.isdir(os.path.join(_lock_path(root), "x"))


def _kill_after_first_commit(root: str) -> None:
    """A real batched move (batches of 3) dies right after its first commit: a journal, claims."""
    pid = os.fork()
    if pid == 0:
        try:
            real = batches._unlink_all

            def dies(at):
                if any(".qconsole-claim-" in name for _fd, name in at):
                    os._exit(9)
                return real(at)

            batches._unlink_all = dies
            type(open_target(root)).MOVE_BATCH = 3  # several batches: one is committed
            _ops(root).move("a", "b", all_=True)
        finally:
            os._exit(0)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_leftovers_settled_by_someone_else_after_the_listing_are_no_problem(tmp_path, monkeypatch, layout):
    """Whatever lists the leftovers, then finds them settled (by a recover that had no lock to
    take, say), reports nothing for them: no problem line, exit 0."""
    root, expected, _argv = _root(tmp_path, layout, 20)
    if layout == "ddmq":
        _ops(root).requeue("a", all_held=True)  # all ready again, to be moved
    _kill_after_first_commit(root)
    left = _leftovers(root)
    assert any(".qconsole-batch-" in p for p in left) and any(".qconsole-claim-" in p for p in left), left
    # per-token leftovers too (no journal names them)
    a = os.path.join(root, "a")
    victim = sorted(n for n in os.listdir(a) if not n.startswith("."))[0]
    os.rename(os.path.join(a, victim),
              os.path.join(a, f"{QC}claim-{HOST}-{DEAD_PID}-0badcafe-{claims.encode_rel(victim)}"))
    real_scan = claims._scan_dirs

    def stale_listing(c, dirs):
        found = real_scan(c, dirs)
        # someone else settles everything between this listing and its use
        other = claims.RecoverReport()
        copy = {k: list(v) for k, v in found.items()}
        ids = _ops(root).root
        batches.recover_batches(c, c.root, copy, force=False, now=time.time(), is_message=lambda n: ids.message_id(n) is not None,
                                id_live=ids.id_live, msg_id=ids.message_id if ids.moves_keep_ids else None,
                                report=other)
        for items in copy.values():
            claims._recover_token(c, c.root, items, False, time.time(), lambda n: ids.message_id(n) is not None,
                                  ids.id_live, other, ids.message_id if ids.moves_keep_ids else None)
        assert not other.problems and (other.restored or other.completed), other
        assert not _leftovers(root)
        return found

    monkeypatch.setattr(claims, "_scan_dirs", stale_listing)
    rep = _ops(root).recover()
    assert not rep.problems and not rep.restored and not rep.completed, rep.problems[:5]
    found, odd = inventory(root, layout)
    assert not odd and set(found) == expected and set(found.values()) == {1}


@pytest.mark.parametrize("start", ["", "12345"], ids=["no-start-time", "another-start-time"])
def test_a_lock_naming_a_running_pid_that_did_not_write_it_does_not_block(tmp_path, monkeypatch, start):
    """A killed recover's pid soon belongs to another process, and a planted lock can name any
    running pid: each recover waited 20 s and exited 2 saying 'another qconsole recover is
    running' for 300 s (review D). Only the process that wrote the lock (its start time) holds it."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        root, _expected = _claimed_root(tmp_path)
        _write_lock(root, f"{HOST} {sleeper.pid} {time.time():.0f} recover {start}\n")
        monkeypatch.setattr(claims, "RECOVER_LOCK_WAIT", 0.0)
        assert len(_ops(root).recover().restored) == 3
    finally:
        sleeper.kill()
        sleeper.wait()


def test_an_empty_lock_left_by_a_recover_killed_before_writing_it_does_not_block(tmp_path, monkeypatch):
    """A recover killed between the lock's exclusive create and its write left an empty lock:
    every later recover waited 20 s, then said 'another qconsole recover is running ... (its
    lock is fresh)' and exited 2, for five minutes. An empty lock holds only while it may be
    being written."""
    root, expected = _claimed_root(tmp_path)
    _write_lock(root, "")
    monkeypatch.setattr(claims, "RECOVER_LOCK_WAIT", 0.0)
    with pytest.raises(OperationError):  # just made: its writer may be about to write it
        _ops(root).recover()
    monkeypatch.setattr(claims, "LOCK_WRITE_S", 0.2)
    time.sleep(0.3)
    rep = _ops(root).recover()
    assert len(rep.restored) == 3 and not rep.problems, rep.problems
    found, odd = inventory(root, "vsqs")
    assert not odd and set(found) == expected
