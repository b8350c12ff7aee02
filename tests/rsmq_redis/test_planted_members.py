"""What anyone who can write the namespace may plant, against a real redis-server and the real
clients (Node rsmq 0.12.4, PyRSMQ 0.6.1): sorted-set members named like a field of the queue's
hash (``vt``, ``totalrecv``) or holding ``:`` (another message's ``:rc``), trash batches holding
such ids or keys of the wrong type, a queue named ``QUEUES``, and a body far past peek's cap.

None of them may cost the queue its settings, a client its queue, or the operator the trash.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qconsole.backends import open_target
from qconsole.backends.rsmq import backend as rsmq_backend
from qconsole.backends.rsmq.backend import RsmqMessage
from qconsole.states import READY

from .conftest import qconsole

#: every field rsmq 0.12.4 keeps in a queue's hash (createQueue, sendMessage, receiveMessage)
RSMQ_FIELDS = ("vt", "delay", "maxsize", "totalrecv", "totalsent", "created", "modified")


def one_line_error(res: subprocess.CompletedProcess) -> None:
    assert res.returncode != 0 and res.stderr.count("\n") == 1, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr


def node_still_works(node, queue: str = "jobs") -> None:
    """Every call of the Node client on ``queue`` answers (none says queueNotFound or fails)."""
    res = node.run(("getQueueAttributes", {"qname": queue}), ("sendMessage", {"qname": queue, "message": "after"}),
                   ("receiveMessage", {"qname": queue, "vt": 0}), ("setQueueAttributes", {"qname": queue, "vt": 31}))
    assert all("ok" in x for x in res), res


@pytest.fixture
def audit(tmp_path) -> list[str]:
    """Changes are audited to a file of the test's own."""
    return ["--audit-log", str(tmp_path / "audit.log")]


@pytest.fixture
def planted(node, r, ns):
    """Queue jobs by Node: one ready message, one received (in flight); then members ``vt``,
    ``totalrecv``, ``maxsize`` (fields of the queue's hash) and ``<held>:rc`` (the held message's
    receive count)."""
    node.call("createQueue", qname="jobs")
    sent = {node.call("sendMessage", qname="jobs", message=f"m{i}") for i in range(2)}
    held = node.call("receiveMessage", qname="jobs", vt=1000)["id"]
    (ready,) = sent - {held}
    r.zadd(f"{ns}:jobs", {"vt": 0, "totalrecv": 1, "maxsize": 3, f"{held}:rc": 2})
    return ready, held


def test_planted_members_are_foreign_never_listed(planted, url, ns):
    ready, held = planted
    res = qconsole("stats", url, "--json")
    assert res.returncode == 0, res.stderr
    q = json.loads(res.stdout)["queues"][0]
    assert (q["ready"], q["inflight"], q["foreign"], q["total"]) == (1, 1, 4, 2), q
    assert any("4 member(s)" in e and "foreign" in e for e in q["errors"]), q["errors"]
    res = qconsole("ls", "jobs", "-r", url, "--ids")
    assert res.returncode == 0 and sorted(res.stdout.split()) == sorted([ready, held]), res.stdout


def test_report_inventory_rows_planted_members_as_foreign(planted, url):
    """The Spark report's executors read the same members: foreign rows, no body, no message."""
    from qconsole.report import inventory

    handle = open_target(url)
    location = inventory.location_of("rsmq", url, handle)
    chunks = list(inventory.list_chunks("rsmq", location, "jobs", handle.now(), size=2))
    names = inventory.COLUMN_NAMES
    rows = [dict(zip(names, row)) for c in chunks for row in zip(*inventory.read_chunk(c))]
    assert sorted((x["state"], x["id"]) for x in rows if x["state"] != "foreign") == sorted(
        [("ready", planted[0]), ("inflight", planted[1])])
    foreign = [x for x in rows if x["state"] == "foreign"]
    assert sorted(x["file"] for x in foreign) == sorted(["vt", "totalrecv", "maxsize", f"{planted[1]}:rc"])
    assert all(x["id"] is None and x["payload_sha256"] is None and x["error"] for x in foreign)


def test_hlen_count_leaves_planted_members_out(planted, url, r, ns, monkeypatch):
    """The count by HLEN arithmetic (a big visible range) subtracts the members named like a
    field (found by ZSCORE); one holding ':' makes the fields not add up: counted exactly then."""
    monkeypatch.setattr(rsmq_backend, "EXACT_VISIBLE", 0)
    scan = open_target(url).scan_queue("jobs")
    assert scan.extras["counted"] == "exact" and "do not account for" in scan.warnings[0], scan.warnings
    assert (scan.counts[READY], scan.counts["inflight"], scan.counts["foreign"]) == (1, 1, 4), scan.counts
    r.zrem(f"{ns}:jobs", f"{planted[1]}:rc")
    scan = open_target(url).scan_queue("jobs")
    assert scan.extras["counted"] == "hlen" and not scan.warnings, scan.warnings
    assert (scan.counts[READY], scan.counts["inflight"], scan.counts["foreign"]) == (1, 1, 3), scan.counts
    assert scan.oldest_ready_created is not None  # the first ready one found past the planted ones


def test_purge_and_restore_leave_the_queue_hash_alone(audit, planted, node, url, r, ns):
    before = r.hgetall(f"{ns}:jobs:Q")
    res = qconsole("purge", "jobs", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "purge jobs: 2 done" in res.stdout, res.stdout + res.stderr
    fields = r.hgetall(f"{ns}:jobs:Q")
    assert all(f.encode() in fields for f in RSMQ_FIELDS), fields
    assert sorted(r.zrange(f"{ns}:jobs", 0, -1)) == sorted([b"vt", b"totalrecv", b"maxsize",
                                                           f"{planted[1]}:rc".encode()])
    res = qconsole("trash", "restore", "-r", url, *audit)
    assert res.returncode == 0 and "2 done" in res.stdout, res.stdout + res.stderr
    assert r.hgetall(f"{ns}:jobs:Q") == before  # each message back with body, rc and fr
    node_still_works(node)


@pytest.mark.parametrize("which", ["maxsize", "vt", "held:rc"])
def test_delete_of_a_planted_member_is_refused(audit, planted, node, url, r, ns, which):
    mid = f"{planted[1]}:rc" if which == "held:rc" else which
    before = r.hgetall(f"{ns}:jobs:Q")
    one_line_error(qconsole("delete", "jobs", mid, "--yes", "-r", url, *audit))
    assert r.hgetall(f"{ns}:jobs:Q") == before
    node_still_works(node)


def test_every_script_refuses_a_field_name_or_colon_id(planted, url, r, ns):
    """Server-side, whatever the caller sends: each script answers ``foreign`` and touches nothing."""
    b = open_target(url)
    trash = [f"{ns}:qconsole:trash:x:m", f"{ns}:qconsole:trash:x:o"]
    bad = [*RSMQ_FIELDS, "createdby", f"{planted[1]}:rc", f"{planted[1]}:fr", "a:b"]
    for mid in bad:  # a trash batch holding them (as a planted one would)
        r.hset(trash[0], mapping={mid: "planted", f"{mid}:s": "0"})
        r.zadd(trash[1], {mid: 0})
    b.create_queue("dest")
    snapshot = {k: r.dump(k) for k in r.scan_iter(f"{ns}:*")}
    q = [b.zkey("jobs"), b.hkey("jobs")]
    for mid in bad:
        seen = [mid.encode(), "0.0", "0"]
        for name, keys, args in (("REQUEUE", q, seen), ("trash.REMOVE", q + trash + [f"{ns}:qconsole:trash:x:"], [*seen, "", 0, ""]),
                                 ("MOVE", q + [b.zkey("dest"), b.hkey("dest")], seen),
                                 ("RESTORE", q + trash, [mid.encode()]), ("PEEK", q[1:], [mid.encode(), 10])):
            assert b._run_script(name, keys, args) == b"foreign", (name, mid)
    assert {k: r.dump(k) for k in r.scan_iter(f"{ns}:*")} == snapshot
    # and through the backend's own calls, messages made up by a caller
    fake = [RsmqMessage("jobs", "rsmq", mid, READY, mid, score=0.0, rc=0) for mid in bad]
    out, batch = b.remove("purge", "jobs", fake, use_trash=True, user="t")
    assert batch is None and all(why and "no message" in why for _m, why in out), out
    assert all(why and "no message" in why for _m, why in b.move("jobs", "dest", fake))
    assert {k: r.dump(k) for k in r.scan_iter(f"{ns}:*")} == snapshot


def test_restore_of_a_planted_batch_skips_field_names(audit, node, url, r, ns):
    """A batch (made by a real delete) with ``totalrecv`` and a live message's ``:rc`` planted in
    it, on a queue never received from (neither field exists yet): the real message comes back,
    the planted ids stay in the trash, and the Node client still receives (HINCRBY of both)."""
    node.call("createQueue", qname="fresh")
    gone, live = (node.call("sendMessage", qname="fresh", message=f"m{i}") for i in range(2))
    res = qconsole("delete", "fresh", gone, "--yes", "-r", url, *audit)
    assert res.returncode == 0, res.stderr
    batch = json.loads(qconsole("trash", "list", "-r", url, "--json").stdout)[-1]["batch"]
    _meta, tmsgs, torder = open_target(url)._trash_keys(batch)
    for mid in ("totalrecv", f"{live}:rc"):
        r.hset(tmsgs, mapping={mid: "not a number", f"{mid}:s": "0"})
        r.zadd(torder, {mid: 99})
    res = qconsole("trash", "restore", batch, "-r", url, *audit)
    assert "1 done" in res.stdout and "2 skipped" in res.stdout, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert r.hmget(f"{ns}:fresh:Q", ["totalrecv", f"{live}:rc"]) == [None, None]
    assert r.zscore(f"{ns}:fresh", gone) is not None and r.zcard(torder) == 2
    res = node.run(*[("receiveMessage", {"qname": "fresh", "vt": 0})] * 3)
    assert all("ok" in x and x["ok"].get("id") for x in res), res
    node_still_works(node, "fresh")


def test_pyrsmq_messages_still_purge_and_restore(audit, pyrsmq, url, r, ns):
    """PyRSMQ's ids (base36 µs and 22 random characters, as Node's) are messages as before."""
    pyrsmq.createQueue(qname="py").execute()
    ids = [pyrsmq.sendMessage(qname="py", message=f"m{i}").execute() for i in range(3)]
    assert pyrsmq.receiveMessage(qname="py", vt=1000, quiet=True).execute()
    res = qconsole("purge", "py", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "3 done" in res.stdout, res.stdout + res.stderr
    res = qconsole("trash", "restore", "-r", url, *audit)
    assert res.returncode == 0 and "3 done" in res.stdout, res.stdout + res.stderr
    assert sorted(m.decode() for m in r.zrange(f"{ns}:py", 0, -1)) == sorted(ids)
    got = [pyrsmq.receiveMessage(qname="py", vt=0, quiet=True).execute() for _ in range(2)]
    assert all(got), got


# ---- the trash


def test_a_wrong_type_batch_is_listed_broken_and_the_others_still_work(audit, node, url, r, ns):
    node.call("createQueue", qname="jobs")
    sent = [node.call("sendMessage", qname="jobs", message=f"m{i}") for i in range(2)]
    res = qconsole("purge", "jobs", "--yes", "-r", url, *audit)
    assert res.returncode == 0, res.stderr
    good = json.loads(qconsole("trash", "list", "-r", url, "--json").stdout)[0]["batch"]
    later = time.time() + 60  # newer than the real batch: the default restore must pass it by
    b = open_target(url)
    zzz, yyy = "20990101T000000-000001", "20990101T000000-000002"  # named as qconsole names batches
    r.sadd(b._trash_keys(zzz)[2], "x")
    r.zadd(b.trash_index, {zzz: later})
    r.set(b._trash_keys(yyy)[1], "x")  # the hash of bodies a string
    r.zadd(b.trash_index, {yyy: later + 1})
    res = qconsole("trash", "list", "-r", url)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 3 and sum("broken" in x for x in lines) == 2 and good in res.stdout, res.stdout
    res = qconsole("trash", "list", "-r", url, "--json")
    assert res.returncode == 0 and {b["action"] for b in json.loads(res.stdout)} == {"purge", "broken"}
    for name in (zzz, yyy):
        res = qconsole("trash", "restore", name, "-r", url, *audit)
        one_line_error(res)
        assert "broken" in res.stderr, res.stderr
    res = qconsole("trash", "restore", "-r", url, *audit)
    assert res.returncode == 0 and "2 done" in res.stdout, res.stdout + res.stderr
    assert sorted(m.decode() for m in r.zrange(f"{ns}:jobs", 0, -1)) == sorted(sent)
    res = qconsole("trash", "restore", "-r", url, *audit)
    one_line_error(res)
    assert "no restorable batch" in res.stderr
    res = qconsole("trash", "empty", "--yes", "-r", url, *audit)
    assert res.returncode == 0 and "2 done" in res.stdout, res.stdout + res.stderr
    assert not list(r.scan_iter(f"{ns}:qconsole:*"))
    node_still_works(node)


# ---- queue names


def test_queue_named_queues_is_refused(audit, node, url, r, ns):
    one_line_error(qconsole("create", "QUEUES", "-r", url, *audit))
    assert not r.exists(f"{ns}:QUEUES:Q")
    # Node rsmq makes it (its rule allows the name): qconsole reads around it, never deletes the set
    node.call("createQueue", qname="jobs")
    node.call("createQueue", qname="QUEUES")
    res = qconsole("stats", url, "--json")
    assert res.returncode == 0 and [q["name"] for q in json.loads(res.stdout)["queues"]] == ["jobs"], res.stdout
    one_line_error(qconsole("delete-queue", "QUEUES", "--force", "--yes", "-r", url, *audit))
    assert r.smembers(f"{ns}:QUEUES") == {b"jobs", b"QUEUES"}
    b = open_target(url)  # the script too: no DEL of a key that is not the queue's type
    assert b._run_script("DELETE_QUEUE", [b.hkey("QUEUES"), f"{ns}:QUEUES", b.queues_key], ["QUEUES", "1"]) == -2
    assert r.smembers(f"{ns}:QUEUES") == {b"jobs", b"QUEUES"}
    node_still_works(node)


# ---- peek of a huge body

_MAXRSS = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
           "sys.stdout.write(f'{r.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss} '"
           "f'{len(r.stdout)}')")


def _peek_rss(url: str, mid: str, *extra: str) -> tuple[int, int, int]:
    """(exit code, peak RSS in KiB, bytes printed) of ``qconsole peek`` run from a small parent."""
    exe = str(Path(sys.executable).with_name("qconsole"))
    out = subprocess.run([sys.executable, "-c", _MAXRSS, exe, "peek", "jobs", mid, "-r", url, *extra],
                         capture_output=True, text=True, timeout=120)
    code, rss, size = map(int, out.stdout.split())
    return code, rss, size


def test_peek_of_a_huge_body_reads_only_what_it_shows(node, url, r, ns):
    node.call("createQueue", qname="jobs")
    small = node.call("sendMessage", qname="jobs", message='{"a": 1}')
    big = node.call("sendMessage", qname="jobs", message="x")
    r.hset(f"{ns}:jobs:Q", big, b'{"a": "' + b"x" * (96 << 20) + b'"}')  # 96 MiB (no client checks maxsize here)
    code, base_rss, _ = _peek_rss(url, small)
    assert code == 0
    code, rss, printed = _peek_rss(url, big)
    assert code == 0 and printed < 1 << 20
    assert rss < base_rss + 32 * 1024, (base_rss, rss)  # the whole body would be 96 MiB, and twice that
    res = qconsole("peek", "jobs", big, "-r", url)
    # the first 64 KiB shown, and the whole body's size
    assert res.returncode == 0 and "96.0 MiB" in res.stdout and len(res.stdout) < 1 << 20, res.stdout[-200:]
    r.hdel(f"{ns}:jobs:Q", big)


def test_peek_of_a_listed_member_without_a_body_says_so_not_gone(node, r, ns, url):
    """A member planted in the sorted set with no body in the hash: ls lists it, so peek must
    not call it consumed; it says the body is missing, in one line."""
    node.call("createQueue", qname="jobs")
    node.call("sendMessage", qname="jobs", message="real")
    r.zadd(f"{ns}:jobs", {"bodiless0000000000000000000000ab": 1})
    assert "bodiless0000000000000000000000ab" in qconsole("ls", "jobs", "--root", url, "--ids").stdout
    res = qconsole("peek", "jobs", "bodiless0000000000000000000000ab", "--root", url)
    one_line_error(res)
    assert "has no body" in res.stderr and "gone" not in res.stderr, res.stderr
    r.zrem(f"{ns}:jobs", "bodiless0000000000000000000000ab")  # now it is gone: said as before
    res = qconsole("peek", "jobs", "bodiless0000000000000000000000ab", "--root", url)
    one_line_error(res)
    assert "no body" not in res.stderr, res.stderr


def test_delete_queue_takes_away_a_name_listed_without_settings(node, r, ns, url, audit):
    """A name in QUEUES whose settings are gone (stats: 'listed ... has no settings') was 'no
    queue' to delete-queue, so it stayed listed for good. It goes now, as Node's deleteQueue
    takes it; one whose sorted set still holds members needs --force, as any queue holding some."""
    node.call("createQueue", qname="keep")
    r.sadd(f"{ns}:QUEUES", "stale", "stale2")
    r.zadd(f"{ns}:stale2", {"abcdefabcdefabcdefabcdefabcdefab": 1})
    res = qconsole("delete-queue", "stale", "--root", url, "--yes", *audit)
    assert res.returncode == 0, res.stderr
    res = qconsole("delete-queue", "stale2", "--root", url, "--yes", *audit)
    one_line_error(res)
    assert "--force" in res.stderr and r.exists(f"{ns}:stale2")
    assert qconsole("delete-queue", "stale2", "--root", url, "--yes", "--force", *audit).returncode == 0
    assert sorted(node.call("listQueues")) == ["keep"] and not r.exists(f"{ns}:stale2")
    one_line_error(qconsole("delete-queue", "never", "--root", url, "--yes", *audit))  # no queue: as before
    node_still_works(node, "keep")
