"""Bulk changes on a real Redis: ids piped from ``ls --ids`` into requeue/move/delete (the Node
client receives what qconsole changed), and members no line can carry."""

from __future__ import annotations

import os
import subprocess
import sys

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
    assert res.returncode == 0 and "move jobs: 2 done" in res.stdout, res.stdout + res.stderr
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
