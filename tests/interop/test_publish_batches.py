"""`publish -n N` a batch at a time (fs/publish_batches.py): the clients read every message once,
in order, beside a live vsqs publisher and consumer; the clash check of a batch re-places an
id another name carries; a failure half-way takes back what was not published."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from peers import vsqs_manager
from qconsole.backends import open_target
from qconsole.backends.fs.publish_batches import PUBLISH_BATCH
from qconsole.ops import Operations
from sync_hooks import SYNC_MODES, fail_files, hook_sync

N = PUBLISH_BATCH * 3 + 17  # three full batches and a short one


def _ops(root: str) -> Operations:
    return Operations(open_target(root), audit_log=os.path.join(root, "..", "audit.log"))


def test_vsqs_batches_are_received_once_each_in_order(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    payloads = [b"m%05d" % i for i in range(N)]
    res = _ops(root).publish("jobs", payloads)
    assert len(res.done) == N and res.done == sorted(res.done, key=int) and len(set(res.done)) == N
    got = [q.receive(visibility_timeout=300, timeout=1) for _ in range(N)]
    assert [p for _i, p in got] == payloads and [i for i, _p in got] == res.done
    assert q.receive(visibility_timeout=300, timeout=0.2) == (None, None)
    assert not [n for n in os.listdir(os.path.join(root, "jobs")) if n.endswith(".new")]


LIVE_VSQS = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from peers import vsqs_manager
    m = vsqs_manager({root!r})
    q = m.get_queue("jobs")
    role, n = sys.argv[1], int(sys.argv[2])
    if role == "publish":
        for i in range(n):
            q.publish(b"peer%05d" % i)
    else:
        got, idle = [], 0
        while idle < 30:
            mid, data = q.receive(visibility_timeout=300, timeout=0.1)
            if mid is None:
                idle += 1
                continue
            idle = 0
            got.append(data.decode())
            q.delete(mid)
        print("\\n".join(got))
    m.close()
""")


def test_vsqs_publish_beside_a_live_vsqs_publisher_and_consumer_loses_and_doubles_nothing(vsqs_root, tmp_path):
    root, manager = vsqs_root
    manager.get_queue("jobs")
    script = tmp_path / "peer.py"
    script.write_text(LIVE_VSQS.format(tests=os.path.dirname(os.path.dirname(__file__)), root=root))
    peer_n = 600
    publisher = subprocess.Popen([sys.executable, str(script), "publish", str(peer_n)])
    consumer = subprocess.Popen([sys.executable, str(script), "consume", "0"], stdout=subprocess.PIPE, text=True)
    try:
        ours = [b"ours%05d" % i for i in range(N)]
        res = _ops(root).publish("jobs", ours)
        assert publisher.wait(timeout=120) == 0
        out, _ = consumer.communicate(timeout=120)
    finally:
        for p in (publisher, consumer):
            if p.poll() is None:
                p.kill()
    assert len(res.done) == N == len(set(res.done))
    got = out.split()
    expected = [p.decode() for p in ours] + ["peer%05d" % i for i in range(peer_n)]
    assert sorted(got) == sorted(expected)  # each exactly once (the order is the first test's:
    # here a message whose id the peer took meanwhile is placed again, under a later id)
    assert os.listdir(os.path.join(root, "jobs")) == []


def test_vsqs_batch_clash_check_never_reuses_an_id_another_name_carries(vsqs_root, monkeypatch):
    """An id a consumer holds (<id>.<deadline>) is what the clock gives for one message of the
    batch: the batch's one listing finds it, and that message gets a new id."""
    from qconsole.backends.vsqs import writes

    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    held = "1700000000000005"
    with open(os.path.join(root, "jobs", f"{held}.1"), "w") as fh:
        fh.write("held-by-a-consumer")
    real, calls = writes.IdClock.next, [0]

    def clashing(self):
        calls[0] += 1
        if calls[0] == 3:  # the third message of the first batch
            return held
        return real(self)

    monkeypatch.setattr(writes.IdClock, "next", clashing)
    res = _ops(root).publish("jobs", [b"a", b"b", b"c", b"d"])
    assert held not in res.done and len(set(res.done)) == 4
    names = sorted(os.listdir(os.path.join(root, "jobs")))
    assert f"{held}.1" in names and held not in names and not [n for n in names if n.endswith(".new")]
    os.unlink(os.path.join(root, "jobs", f"{held}.1"))
    got = sorted(q.receive(visibility_timeout=300, timeout=1)[1] for _ in range(4))
    assert got == [b"a", b"b", b"c", b"d"]


@pytest.mark.parametrize("mode", SYNC_MODES)
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_failed_fsync_takes_back_the_batch_and_keeps_what_was_published(tmp_path, monkeypatch, layout, mode):
    """The second batch's barrier fails (a full disk, an I/O error: the batch's syncfs, then its
    own files' fsyncs): the first batch stays published and reported, the second's written copies
    are removed, the error is said."""
    from qconsole.errors import QConsoleError

    root = str(tmp_path / "r")
    os.makedirs(os.path.join(root, "q", "work") if layout == "ddmq" else os.path.join(root, "q"))
    if layout == "ddmq":
        open(os.path.join(root, "q", "ddmq.yaml"), "w").close()
    full = [False]

    def before(batch: int, _fd: int) -> None:
        if batch > 1:
            full[0] = True
            raise OSError(28, "No space left on device")

    hook_sync(monkeypatch, mode, PUBLISH_BATCH, before)
    if mode == "syncfs":
        fail_files(monkeypatch, lambda _fd: full[0], OSError(28, "No space left on device"))
    with pytest.raises((OSError, QConsoleError)) as info:
        _ops(root).publish("q", [b'"x"'] * N)
    assert "No space left" in str(info.value)
    left = [n for n in os.listdir(os.path.join(root, "q")) if n not in ("work", "ddmq.yaml")]
    assert len(left) == PUBLISH_BATCH and not [n for n in left if n.endswith(".new") or n.startswith(".")]
    partial = getattr(info.value, "partial", None)
    assert partial is not None and len(partial.done) == PUBLISH_BATCH


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_publish_killed_mid_batch_leaves_nothing_after_recover(tmp_path, layout):
    """kill -9 while a batch is written: the VSQS <id>.new files of the batch are second links
    of qconsole temp files, so recover (the killed owner's temp files) removes them too; before,
    up to a batch of .new files stayed 'writing' for good (review of 32eac71). What was
    published stays, and the clients read it."""
    import signal
    import time

    root = str(tmp_path / "r")
    qdir = os.path.join(root, "q")
    os.makedirs(os.path.join(qdir, "work") if layout == "ddmq" else qdir)
    if layout == "ddmq":
        open(os.path.join(qdir, "ddmq.yaml"), "w").close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    p = subprocess.Popen([sys.executable, "-m", "qconsole", "publish", "q", '"x"', "-n", "200000", "-r", root,
                          "--audit-log", str(tmp_path / "audit.log")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = os.listdir(qdir)
            if sum(n.endswith(".new") or n.startswith(".qconsole-tmp-") for n in names) > 10 and len(names) > 600:
                break
            time.sleep(0.005)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=30)
    leftovers = [n for n in os.listdir(qdir) if n.endswith(".new") or n.startswith(".")]
    res = subprocess.run([sys.executable, "-m", "qconsole", "recover", root, "--audit-log",
                          str(tmp_path / "audit.log")], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    left = [n for n in os.listdir(qdir) if n not in ("work", "ddmq.yaml")]
    assert not [n for n in left if n.endswith(".new") or n.startswith(".")], (leftovers[:4], left[:4], res.stdout)
    scan = open_target(root).scan_queue("q")
    assert scan.counts["writing"] == 0 and scan.counts["ready"] == len(left) > 0


def test_vsqs_publish_on_a_file_system_without_hard_links_creates_its_new_files_itself(vsqs_root, monkeypatch):
    """link() refused (EPERM: a file system without hard links): the batch falls back on the
    protocol's own O_EXCL create of <id>.new, and the client reads every message once."""
    from qconsole.backends.fs import safety

    root, manager = vsqs_root
    q = manager.get_queue("jobs")

    def no_links(self, src, dst):
        raise PermissionError(1, "Operation not permitted", dst)

    monkeypatch.setattr(safety.Confined, "link", no_links)
    payloads = [b"n%03d" % i for i in range(300)]
    res = _ops(root).publish("jobs", payloads)
    assert len(res.done) == 300
    assert [q.receive(visibility_timeout=300, timeout=1)[1] for _ in range(300)] == payloads
    assert os.listdir(os.path.join(root, "jobs")) and not [n for n in os.listdir(os.path.join(root, "jobs"))
                                                          if not n[0].isdigit() or n.endswith(".new")]
