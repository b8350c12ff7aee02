"""Bulk changes on a real Redis: ids piped from ``ls --ids`` into requeue/move/delete (the Node
client receives what qconsole changed), members no line can carry, and the progress a bulk
change reports per batch of pipelined scripts (drawn only on a terminal)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from qconsole.backends import open_target
from qconsole.backends.rsmq import backend as rsmq_backend
from qconsole.cli import ops as cli_ops
from qconsole.errors import RootError
from qconsole.ops import Operations

from .conftest import qconsole

QC = os.path.join(os.path.dirname(sys.executable), "qconsole")


def shell(line: str, url: str, audit: str) -> subprocess.CompletedProcess:
    """``line`` through ``sh -c`` with ``$QC`` the console script, as an operator types it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(QC=QC, QCONSOLE_ROOT=url, AUDIT=audit)
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=120)


def test_ls_ids_piped_into_requeue_move_and_delete(node, url, r, ns, tmp_path):
    audit = str(tmp_path / "audit.log")
    node.call("createQueue", qname="jobs")
    node.call("createQueue", qname="dlq")
    sent = [node.call("sendMessage", qname="jobs", message=f"m{i}") for i in range(6)]
    held = [node.call("receiveMessage", qname="jobs", vt=1000)["id"] for _ in range(3)]
    # (an expired RSMQ message is visible already: requeue leaves it, so the in-flight ones are piped)
    res = shell('"$QC" ls jobs --state inflight --ids | "$QC" requeue jobs - --audit-log "$AUDIT"', url, audit)
    assert res.returncode == 0 and "requeue jobs: 3 done" in res.stdout, res.stdout + res.stderr
    secs, micros = r.time()
    assert r.zcount(f"{ns}:jobs", "-inf", secs * 1000 + micros // 1000) == 6  # all visible: none hidden for 1000 s
    got = [node.call("receiveMessage", qname="jobs", vt=1000)["id"] for _ in range(6)]
    assert sorted(got) == sorted(sent) and set(got[3:]) == set(held)  # the requeued last: received most recently

    order = qconsole("ls", "jobs", "-r", url, "--ids").stdout.splitlines()
    res = shell('"$QC" ls jobs --ids --limit 2 | "$QC" move jobs dlq - --audit-log "$AUDIT"', url, audit)
    assert res.returncode == 0 and "move jobs to dlq: 2 done" in res.stdout, res.stdout + res.stderr
    assert sorted(m.decode() for m in r.zrange(f"{ns}:dlq", 0, -1)) == sorted(order[:2])

    res = shell('"$QC" ls jobs --ids | "$QC" delete jobs - --yes --audit-log "$AUDIT"', url, audit)
    assert res.returncode == 0 and "delete jobs: 4 done" in res.stdout, res.stdout + res.stderr
    assert r.zcard(f"{ns}:jobs") == 0
    res = shell('"$QC" trash restore --audit-log "$AUDIT"', url, audit)
    assert res.returncode == 0 and "4 done" in res.stdout
    live = [m.decode() for m in r.zrange(f"{ns}:jobs", 0, -1) + r.zrange(f"{ns}:dlq", 0, -1)]
    assert sorted(live) == sorted(sent)  # none lost, none twice


def test_ls_ids_leaves_out_members_no_line_can_carry(node, url, r, ns):
    """Members are any bytes: anyone can ZADD them. Those with a line end, another control
    character, undecodable bytes or only blanks are left out with a warning, never written raw."""
    node.call("createQueue", qname="odd")
    good = node.call("sendMessage", qname="odd", message="fine")
    for member in (b"two\nlines", b"cr\r", b"\x1b]0;title\x07", b"\xff\xfe", b"  ", b""):
        r.zadd(f"{ns}:odd", {member: 1})
        r.hset(f"{ns}:odd:Q", member, b"planted")
    res = qconsole("ls", "odd", "-r", url, "--ids")
    assert res.returncode == 0 and res.stdout == good + "\n"
    assert "warning: 6 id(s) left out" in res.stderr and "\x1b" not in res.stderr


def _held(pyrsmq, url: str, n: int) -> None:
    """``n`` messages in queue q, every one received by PyRSMQ (in flight for 1000 s)."""
    pyrsmq.createQueue(qname="q").execute()
    Operations(open_target(url), audit_log=os.devnull).publish("q", [b"x"] * n)
    for _ in range(n):
        assert pyrsmq.receiveMessage(qname="q", vt=1000, quiet=True).execute()


def test_bulk_changes_report_progress_per_batch(pyrsmq, url, r, ns):
    n = 3 * rsmq_backend.SCRIPT_BATCH + 17  # three full batches and a partial one
    _held(pyrsmq, url, n)
    for what, run in (("requeue", lambda ops: ops.requeue("q", all_held=True)),
                      ("purge", lambda ops: ops.purge("q")),
                      ("trash restore", lambda ops: ops.trash_restore()),
                      ("delete", lambda ops: ops.delete("q", [m.decode() for m in r.zrange(f"{ns}:q", 0, -1)])),
                      ("trash empty", lambda ops: ops.trash_empty())):
        backend = open_target(url)
        seen: list[tuple[int, int]] = []
        backend.progress = lambda done, total: seen.append((done, total))
        result = run(Operations(backend, audit_log=os.devnull))
        backend.close()
        if what == "trash empty":
            assert seen == [(1, 1)], seen  # one per trash batch dropped (the restored one is gone)
            continue
        assert len(result.done) == n and not result.skipped, (what, result.summary())
        B = rsmq_backend.SCRIPT_BATCH
        assert seen == [(B, n), (2 * B, n), (3 * B, n), (n, n)], (what, seen)  # per batch, not per message
    assert r.zcard(f"{ns}:q") == 0 and not list(r.scan_iter(f"{ns}:qconsole*"))
    backend = open_target(url)
    seen = []
    backend.progress = lambda done, total: seen.append((done, total))
    Operations(backend, audit_log=os.devnull).publish("q", [b"p"] * 3)  # one script a message: no batch to wait for
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_cli_draws_progress_only_on_a_terminal(pyrsmq, url, monkeypatch, tmp_path):
    for tty, want in ((True, cli_ops.Progress), (False, type(None))):
        monkeypatch.setattr(cli_ops.sys.stderr, "isatty", lambda tty=tty: tty, raising=False)
        ops = cli_ops._ops(url, "auto", False, os.devnull, refuse="requeue")
        assert isinstance(ops.root.progress, want)
        ops.root.close()
    monkeypatch.undo()
    _held(pyrsmq, url, 2000)
    out = qconsole("requeue", "q", "--all", "--root", url, "--audit-log", str(tmp_path / "audit.log"))
    assert out.returncode == 0 and out.stdout == "requeue q: 2000 done\n"
    assert out.stderr == ""  # stderr is a pipe here: no progress line, no erase sequence


def test_an_error_reply_in_a_batch_is_one_line(pyrsmq, url, r, ns):
    """A queue's hash replaced by a string between the scan and the change (anyone can SET it):
    every script of the batch answers WRONGTYPE; the change ends with one RootError line."""
    _held(pyrsmq, url, 10)
    backend = open_target(url)
    held = backend.scan_queue("q", collect=True).held_messages()
    r.delete(f"{ns}:q:Q")
    r.set(f"{ns}:q:Q", "not a hash")
    with pytest.raises(RootError, match="WRONGTYPE") as err:
        backend.requeue("q", held)
    assert "\n" not in str(err.value) and r.zcard(f"{ns}:q") == 10
    backend.close()
