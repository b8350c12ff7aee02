"""The RSMQ trash against a hostile review (review C, findings 1, 2, 3 and 8), on a real
redis-server and the real Node client: a purge whose round trip times out, `trash empty`/`restore`
beside a purge still filling its batch, a purge killed half-way, another namespace whose queue
is named like qconsole's keys, and a purge stopped by ctrl+c or a lost connection.

A stalled network is a small TCP proxy in front of the server (:class:`StallProxy`); nothing is
mocked.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from qconsole.backends import open_target
from qconsole.backends.rsmq import scripts
from qconsole.errors import QConsoleError

from .conftest import qconsole

BATCH = re.compile(r"trash batch ([0-9]{8}T[0-9]{6}-[0-9a-f]{6})")


@pytest.fixture
def audit(tmp_path) -> list[str]:
    return ["--audit-log", str(tmp_path / "audit.log")]


def last_audit(tmp_path) -> dict:
    return json.loads((tmp_path / "audit.log").read_text().splitlines()[-1])


def seed(r, ns: str, q: str, n: int) -> None:
    """``n`` ready messages in rsmq's own format (as Node's sendMessage writes them), fast."""
    sec, usec = r.time()
    base = sec * 1_000_000 + usec - n * 1000
    r.hset(f"{ns}:{q}:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536, "created": sec, "modified": sec,
                                   "totalsent": n, "totalrecv": 0})
    r.sadd(f"{ns}:QUEUES", q)
    rnd = random.Random(n)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        t, b36 = base + i * 1000, ""
        while t:
            b36, t = digits[t % 36] + b36, t // 36
        mid = b36 + "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(22))
        pipe.zadd(f"{ns}:{q}", {mid: (base + i * 1000) // 1000})
        pipe.hset(f"{ns}:{q}:Q", mid, f"body{i}")
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def trash_keys(r, ns: str) -> list[bytes]:
    return sorted(r.scan_iter(f"{ns}:qconsole:*"))


def in_trash(r, b, batch: str) -> int:
    return r.zcard(b._trash_keys(batch)[2])


# ---------------------------------------------------------------- finding 3: keys no client reaches

NODE_QNAME = re.compile(r"[a-zA-Z0-9_-]{1,160}")


def pyrsmq_qname(q: str) -> bool:
    return 0 < len(q) <= 64 and ":" not in q  # PyRSMQ 0.6.1 _validate_qname


def client_can_reach(key: str) -> list[str]:
    """Every (namespace, queue) of Node rsmq or PyRSMQ whose keys include ``key``."""
    out = []
    cands = [("", key)] + [(key[:i], key[i + 1:]) for i, ch in enumerate(key) if ch == ":"]
    for ns, rest in cands:  # ns "": PyRSMQ without a namespace (no prefix at all)
        for q in (rest, rest[:-2] if rest.endswith(":Q") else None):
            if q and (NODE_QNAME.fullmatch(q) or pyrsmq_qname(q)):
                out.append(f"ns={ns!r} queue={q!r}")
        if rest == "QUEUES":
            out.append(f"ns={ns!r} QUEUES")
    return out


def test_qconsole_keys_are_no_client_queue_and_leave_other_namespaces_alone(audit, node_ready, redis_server,
                                                                          url, r, ns, pyrsmq):
    from .conftest import NodePeer

    other = NodePeer(redis_server.port, f"{ns}:qconsole")  # the namespace the old keys lived in
    other.call("createQueue", qname="trash")
    kept = {other.call("sendMessage", qname="trash", message=f"important{i}") for i in range(2)}
    node = NodePeer(redis_server.port, ns)
    node.call("createQueue", qname="jobs")
    node.call("sendMessage", qname="jobs", message="j")
    before = {k: r.dump(k) for k in r.scan_iter(f"{ns}:qconsole:*") if not k.endswith(b":")}
    res = qconsole("trash", "list", "-r", url)
    assert res.returncode == 0 and "the trash is empty" in res.stdout + res.stderr, res.stdout + res.stderr
    res = qconsole("purge", "jobs", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "1 done" in res.stdout, res.stdout + res.stderr
    mine = [k.decode() for k in trash_keys(r, ns) if k.endswith(b":")]
    assert len(mine) == 4, mine  # index, meta, messages, order
    for key in mine:
        assert not client_can_reach(key), (key, client_can_reach(key))
    res = qconsole("trash", "list", "-r", url, "--json")
    assert [b["action"] for b in json.loads(res.stdout)] == ["purge"], res.stdout
    res = qconsole("trash", "empty", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "1 done" in res.stdout, res.stdout + res.stderr
    # the other namespace's queue: untouched, its messages still delivered by Node
    assert {k: r.dump(k) for k in r.scan_iter(f"{ns}:qconsole:*") if not k.endswith(b":")} == before
    got = {other.call("receiveMessage", qname="trash", vt=0)["id"] for _ in range(2)}
    assert got == kept
    # PyRSMQ's rule is "anything but ':'": '!' and '.' make queue keys, so they would not do
    assert pyrsmq.createQueue(qname="trash!x.y", quiet=True).execute()
    assert r.exists(f"{ns}:trash!x.y:Q")


def test_old_key_names_are_left_alone(audit, node, url, r, ns):
    """Pre-release trash under ``{ns}:qconsole:trash`` is neither read nor deleted."""
    r.zadd(f"{ns}:qconsole:trash", {"20200101T000000-abcdef": 1})
    r.hset(f"{ns}:qconsole:trash:20200101T000000-abcdef", "queue", "jobs")
    res = qconsole("trash", "list", "-r", url)
    assert "the trash is empty" in res.stdout + res.stderr, res.stdout
    qconsole("trash", "empty", "--yes", "-r", url, *audit)
    assert r.zcard(f"{ns}:qconsole:trash") == 1 and r.exists(f"{ns}:qconsole:trash:20200101T000000-abcdef")


def test_a_broken_batch_does_not_stop_trash_empty(audit, node, url, r, ns):
    """A planted batch whose meta key is a string: TAKE's HMGET failed with WRONGTYPE and the
    whole `trash empty` stopped with a raw pipeline error, emptying nothing (review D)."""
    node.call("createQueue", qname="jobs")
    for i in range(3):
        node.call("sendMessage", qname="jobs", message=f"m{i}")
    assert qconsole("purge", "jobs", "--yes", "-r", url, *audit).returncode == 0
    planted = "20260101T000000-abcdef"
    r.set(f"{ns}:qconsole:trash:{planted}:", "planted")
    r.zadd(f"{ns}:qconsole:trash:", {planted: 1})
    listed = qconsole("trash", "list", "-r", url)
    assert planted in listed.stdout and "broken" in listed.stdout, listed.stdout
    res = qconsole("trash", "empty", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "trash empty: 2 done" in res.stdout, (res.stdout, res.stderr)
    assert r.zcard(f"{ns}:qconsole:trash:") == 0 and not r.exists(f"{ns}:qconsole:trash:{planted}:")


# ---------------------------------------------------------------- finding 2: a batch being filled


def test_list_empty_restore_pass_by_a_batch_being_filled(audit, node, url, r, ns):
    """`trash list/empty/restore` run (other processes) while a purge fills its batch: none
    takes it; the purge then finishes, and its printed undo works."""
    seed(r, ns, "big", 2000)
    seen: dict[str, subprocess.CompletedProcess] = {}
    b = open_target(url)

    def beside(done: int, total: int) -> None:
        if seen or done >= total:
            return
        seen["list"] = qconsole("trash", "list", "-r", url, "--json")
        seen["empty"] = qconsole("trash", "empty", "--yes", "-r", url, *audit)
        seen["restore"] = qconsole("trash", "restore", "-r", url, *audit)
        (batch,) = [m.decode() for m in r.zrange(b.trash_index, 0, -1)]
        seen["named"] = qconsole("trash", "restore", batch, "-r", url, *audit)

    b.progress = beside
    from qconsole.ops import Operations

    result = Operations(b, audit_log=audit[1]).purge("big")
    assert len(result.done) == 2000 and result.batch
    assert json.loads(seen["list"].stdout or "[]") == [], seen["list"].stdout
    assert seen["empty"].returncode == 0 and "0 done" in seen["empty"].stdout, seen["empty"].stdout
    for k in ("restore", "named"):
        assert seen[k].returncode == 2 and "being filled" in seen[k].stderr, (k, seen[k].stderr)
    assert r.zcard(f"{ns}:big") == 0 and in_trash(r, b, result.batch) == 2000
    res = qconsole("trash", "restore", result.batch, "-r", url, *audit)
    assert res.returncode == 0 and "2000 done" in res.stdout, res.stdout + res.stderr
    assert r.zcard(f"{ns}:big") == 2000 and not trash_keys(r, ns)
    assert node.call("receiveMessage", qname="big", vt=0)["id"]


def test_a_killed_purge_s_batch_is_taken_after_the_grace(audit, node, url, r, ns):
    """A purge killed (SIGKILL) half-way: its batch is left out while fresh, then listed and
    restored; nothing is lost."""
    seed(r, ns, "big", 30000)
    b = open_target(url)
    p = subprocess.Popen([str(Path(sys.executable).with_name("qconsole")), "purge", "big", "--yes", "-r", url,
                          *audit], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        index = r.zrange(b.trash_index, 0, -1)
        if index and in_trash(r, b, index[0].decode()) >= 512:
            break
        time.sleep(0.005)
    p.kill()
    p.communicate()
    (batch,) = [m.decode() for m in r.zrange(b.trash_index, 0, -1)]
    held = in_trash(r, b, batch)
    assert 0 < held < 30000 and r.zcard(f"{ns}:big") + held == 30000
    res = qconsole("trash", "list", "-r", url)
    assert batch not in res.stdout, res.stdout
    res = qconsole("trash", "restore", batch, "-r", url, *audit)
    assert res.returncode == 2 and "being filled" in res.stderr, res.stderr
    late = open_target(url)
    late.fill_grace_s = 1.0  # (the operator waits 5 minutes; the test one second)
    time.sleep(1.2)
    assert [x.batch for x in late.trash_list()] == [batch]
    done, skipped = late.trash_restore(batch)
    assert len(done) == held and not skipped
    assert r.zcard(f"{ns}:big") == 30000 and not trash_keys(r, ns)


def test_a_purge_whose_batch_is_emptied_meanwhile_stops_and_orphans_nothing(audit, node, url, r, ns):
    """Another qconsole empties the batch (taking it for a dead purge's): the purge's next
    message is refused by the script, the purge stops with one line, nothing is left in keys no
    command sees, and the rest stays in the queue."""
    seed(r, ns, "big", 2000)
    b = open_target(url)
    other = open_target(url)
    other.fill_grace_s = 0.0  # it takes every batch as abandoned

    def beside(done: int, total: int) -> None:
        if done == 256:
            assert [x[1] for x in other.trash_empty(None)] == [None]

    b.progress = beside
    from qconsole.ops import Operations

    with pytest.raises(QConsoleError) as info:
        Operations(b, audit_log=audit[1]).purge("big")
    assert "emptied, restored or taken over meanwhile" in str(info.value)
    assert info.value.partial.done and len(info.value.partial.done) == 256 and info.value.partial.batch is None
    assert r.zcard(f"{ns}:big") == 2000 - 256  # the emptied batch's 256 are gone (that is what empty does)
    assert not trash_keys(r, ns)


# ---------------------------------------------------------------- finding 1: a round trip that times out


class StallProxy:
    """127.0.0.1:port -> the server. The first client->server chunk that holds a ``needle`` is held
    ``hold`` s (a stalled network); with ``everything``, so is all other traffic until then."""

    def __init__(self, upstream: int, needle: tuple[bytes, ...], hold: float, everything: bool = False) -> None:
        self.upstream, self.needle, self.hold, self.everything = upstream, needle, hold, everything
        self.release = None
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(50)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, c2s: bool) -> None:
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                if c2s:
                    with self.lock:
                        hit = any(n in d for n in self.needle)
                        if self.release is None and hit:
                            self.release = time.monotonic() + self.hold
                        wait = self.release and (self.everything or hit) and self.release - time.monotonic()
                    if wait and wait > 0:
                        time.sleep(wait)
                dst.sendall(d)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()


def _remove_calls() -> tuple[bytes, ...]:
    """A call of a REMOVE script itself (not redis-py's SCRIPT EXISTS/LOAD of it before a pipeline)."""
    texts = [scripts.REMOVE] if hasattr(scripts, "REMOVE") else []  # (gone: the trash's own replaced it)
    try:
        from qconsole.backends.rsmq import trash_scripts
    except ImportError:  # (the code before the trash had scripts of its own)
        pass
    else:
        texts.append(trash_scripts.REMOVE)
    return tuple(b"EVALSHA\r\n$40\r\n" + hashlib.sha1(t.encode()).hexdigest().encode() for t in texts)


REMOVE_SHA = _remove_calls()


def test_a_timed_out_round_is_sealed_never_orphaned(audit, redis_server, node, r, ns, tmp_path):
    """The first round of REMOVE scripts is held 7 s (the client gives up after 5 s): the purge
    stops with one line, seals (or drops) its batch at once on a new connection, and the held
    scripts, run late, touch nothing: every message is in the queue or in a listed batch."""
    seed(r, ns, "q", 300)
    proxy = StallProxy(redis_server.port, REMOVE_SHA, 7.0)
    url = f"redis://127.0.0.1:{proxy.port}?ns={ns}"
    try:
        res = qconsole("purge", "q", "--yes", "-r", url, *audit)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "stopped after: purge q: 0 done" in res.stderr, res.stderr
        time.sleep(3)  # the held round reaches the server now
    finally:
        proxy.close()
    b = open_target(redis_server.url(ns))
    listed = {x.batch: x.count for x in b.trash_list()}
    assert r.zcard(f"{ns}:q") + sum(listed.values()) == 300, (r.zcard(f"{ns}:q"), listed)
    assert r.zcard(f"{ns}:q") == 300 and not trash_keys(r, ns)  # sealed empty: dropped; late scripts refused
    rec = last_audit(tmp_path)
    assert rec["outcome"] == "error" and rec["count"] == 0


def test_a_purge_cut_off_before_its_seal_keeps_its_batch_and_says_so(audit, redis_server, node, r, ns, tmp_path):
    """All traffic stalls 12 s from the first round of REMOVE scripts: the seal cannot be sent
    either. The line says the purge may have partly happened and names the batch; the held
    scripts run later into that batch, which is taken (listed, restored) after the grace."""
    seed(r, ns, "q", 300)
    proxy = StallProxy(redis_server.port, REMOVE_SHA, 12.0, everything=True)
    url = f"redis://127.0.0.1:{proxy.port}?ns={ns}"
    try:
        res = qconsole("purge", "q", "--yes", "-r", url, *audit, timeout=60)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "may have partly happened" in res.stderr and "up to 256 more may have been done" in res.stderr
        batch = BATCH.search(res.stderr).group(1)
        deadline = time.monotonic() + 20
        b = open_target(redis_server.url(ns))
        while time.monotonic() < deadline and r.zcard(f"{ns}:q") == 300:
            time.sleep(0.1)
        time.sleep(1.5)  # (the proxy forwards what the client had sent before it hung up)
    finally:
        proxy.close()
    assert [m.decode() for m in r.zrange(b.trash_index, 0, -1)] == [batch]
    held = in_trash(r, b, batch)
    assert 0 < held <= 256 and r.zcard(f"{ns}:q") + held == 300  # the late scripts went into the batch
    rec = last_audit(tmp_path)
    assert rec["batch"] == batch and rec["unknown"] == 256 and rec["count"] == 0
    assert batch not in qconsole("trash", "list", "-r", redis_server.url(ns)).stdout  # fresh: still filling
    b.fill_grace_s = 0.5
    time.sleep(0.6)
    assert [(x.batch, x.count) for x in b.trash_list()] == [(batch, held)]
    done, _skipped = b.trash_restore(batch)
    assert len(done) == held and r.zcard(f"{ns}:q") == 300 and not trash_keys(r, ns)


# ---------------------------------------------------------------- finding 8: what a stopped purge did


def _purge_until(url: str, r, ns: str, audit: list[str], extra: tuple[str, ...] = ()) -> subprocess.Popen:
    p = subprocess.Popen([str(Path(sys.executable).with_name("qconsole")), "purge", "big", "--yes", "-r", url,
                          *audit, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and r.zcard(f"{ns}:big") > 40000:
        time.sleep(0.005)
    return p


@pytest.mark.parametrize("trash", [True, False], ids=["trash", "no-trash"])
def test_an_interrupted_purge_says_and_logs_what_it_did(audit, node, url, r, ns, tmp_path, trash):
    seed(r, ns, "big", 60000)
    p = _purge_until(url, r, ns, audit, () if trash else ("--no-trash",))
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    gone = 60000 - r.zcard(f"{ns}:big")
    rec = last_audit(tmp_path)
    assert rec["outcome"] == "interrupted", rec
    m = re.search(r"interrupted: purge big: (\d+) done", err)
    assert m and int(m.group(1)) == rec["count"], err
    if trash:  # sealed: exact, and the undo brings every one back
        batch = BATCH.search(err).group(1)
        assert rec["count"] == gone > 0 and rec["batch"] == batch and f"undo: qconsole trash restore {batch}" in err
        res = qconsole("trash", "restore", batch, "-r", url, *audit)
        assert res.returncode == 0 and f"{gone} done" in res.stdout, res.stdout + res.stderr
        assert r.zcard(f"{ns}:big") == 60000
    else:  # never less than was done; at most a round trip's worth more may have been
        assert rec["count"] <= gone <= rec["count"] + rec["unknown"] and rec["count"] > 0, (rec["count"], gone)
        assert rec["batch"] is None


def test_a_purge_that_loses_its_connection_says_what_it_did(audit, node, url, r, ns, tmp_path):
    """Another client kills qconsole's connection (CLIENT KILL) mid-purge: the error line says
    how many were done and the batch that undoes them, as does the audit line."""
    seed(r, ns, "big", 60000)
    p = _purge_until(url, r, ns, audit)
    # killed again until a kill lands while a round is in flight: redis-py connects afresh,
    # without a word, for a connection killed while idle between two rounds (nothing lost there);
    # never again within 0.2 s, so the batch's FINISH on a fresh connection is not killed too
    deadline = time.monotonic() + 30
    while p.poll() is None and time.monotonic() < deadline:
        r.client_kill_filter(_type="normal", skipme=True)
        try:
            p.wait(0.2)
        except subprocess.TimeoutExpired:
            pass
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and err.count("\n") == 1, err
    gone = 60000 - r.zcard(f"{ns}:big")
    batch = BATCH.search(err).group(1)
    assert f"stopped after: purge big: {gone} done" in err, err
    rec = last_audit(tmp_path)
    assert rec["outcome"] == "error" and rec["count"] == gone and rec["batch"] == batch
    res = qconsole("trash", "restore", batch, "-r", url, *audit)
    assert res.returncode == 0 and r.zcard(f"{ns}:big") == 60000, res.stdout + res.stderr
