"""Ids on stdin: ``qconsole ls QUEUE --ids | qconsole requeue|delete|move ... -`` through a real
shell pipe on roots the real clients built, and what ``-`` refuses (a terminal, ``-`` beside
other ids, ``delete`` without ``--yes``). Ids on stdin are a selection listed earlier: one the
queue's own client consumed in between is skipped and the rest done; the same ids typed on the
command line still fail whole. Hostile stdin (NUL, huge lines, bad UTF-8, paths as ids) is
judged by the hostile suite (``tests/hostile``, the ``stdin-*`` cases)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
import uuid

import pytest
from typer.testing import CliRunner

from ops_inventory import inventory, tree
from qconsole.backends import open_target
from qconsole.cli import app, register_all
from qconsole.ops.result import NOT_IN_QUEUE
from redis_peer import missing, shared_server

register_all()
runner = CliRunner()
QC = os.path.join(os.path.dirname(sys.executable), "qconsole")
CONSUME_BETWEEN = os.path.join(os.path.dirname(__file__), "consume_between.py")
#: the held state a requeue by ids picks (an expired RSMQ message is visible already)
HELD = {"vsqs": "expired", "ddmq": "expired", "rsmq": "inflight"}
#: how a held message is taken away between listing and change: its consumer acks it, or for
#: vsqs (whose client cannot ack a message another process received) another operator deletes it
ACK = {"vsqs": "qconsole", "ddmq": "ack", "rsmq": "ack"}


def run(*args: str, stdin: bytes | None = None):
    return runner.invoke(app, list(args), input=stdin)


def shell(line: str, root: str, extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """``line`` through ``sh -c`` with ``$QC`` the console script, as an operator types it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(QC=QC, QCONSOLE_ROOT=root, **(extra or {}))
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=120, **kw)


def counts(root: str, queue: str) -> dict:
    return open_target(root).scan_queue(queue).counts


@pytest.fixture
def vsqs_jobs(vsqs_root):
    """VSQS jobs: 3 ready, 3 expired (received with a 1 s timeout that has passed), queue dlq."""
    root, m = vsqs_root
    q = m.get_queue("jobs")
    m.get_queue("dlq")
    for i in range(6):
        q.publish(b"v%d" % i)
    for _ in range(3):
        q.receive(visibility_timeout=1)
    time.sleep(1.1)
    return root


@pytest.fixture
def ddmq_jobs(ddmq_root):
    """ddmq jobs: 3 ready, 3 expired (consumed with a timeout in the past), queue dlq."""
    root, b = ddmq_root
    b.create_queue("dlq")
    for i in range(3):
        b.publish("jobs", f"job-{i}", timeout=-50, clean=False)
    b.consume("jobs", n=3, clean=False)
    for i in range(3, 6):
        b.publish("jobs", f"job-{i}", clean=False)
    return root


@pytest.fixture
def rsmq_jobs():
    """RSMQ jobs (PyRSMQ, a real server): 3 ready, 3 in flight (received, hidden 1000 s), queue dlq."""
    try:
        from rsmq import RedisSMQ
    except ImportError:
        missing("PyRSMQ is not installed (the test extra pins PyRSMQ==0.6.1)")
    server = shared_server()
    ns = "t" + uuid.uuid4().hex[:10]
    client = RedisSMQ(host="127.0.0.1", port=server.port, ns=ns)
    for q in ("jobs", "dlq"):
        client.createQueue(qname=q).execute()
    for i in range(6):
        client.sendMessage(qname="jobs", message=f"r{i}").execute()
    for _ in range(3):
        assert client.receiveMessage(qname="jobs", vt=1000, quiet=True).execute()
    return server.url(ns)


def snapshot(root: str, layout: str) -> object:
    """Everything a change could touch: the tree, or every key of the namespace (raw Redis)."""
    if layout != "rsmq":
        return tree(root)
    backend = open_target(root)
    client = backend.client
    keys = sorted(client.scan_iter(f"{backend.ns}:*"))
    out = {k: client.zrange(k, 0, -1, withscores=True) if client.type(k) == b"zset" else
           client.hgetall(k) if client.type(k) == b"hash" else client.smembers(k) for k in keys}
    backend.close()
    return out


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_ls_ids_piped_into_requeue_move_and_delete(layout, request):
    root = request.getfixturevalue(f"{layout}_jobs")
    payloads = set(inventory(root, layout)[0])
    assert counts(root, "jobs")["expired"] == 3

    res = shell('"$QC" ls jobs --state expired --ids | "$QC" requeue jobs -', root)
    assert res.returncode == 0 and "requeue jobs: 3 done" in res.stdout, res.stdout + res.stderr
    assert counts(root, "jobs")["ready"] == 6 and counts(root, "jobs")["expired"] == 0

    res = shell('"$QC" ls jobs --ids --limit 2 | "$QC" move jobs dlq -', root)
    assert res.returncode == 0 and "move jobs to dlq: 2 done" in res.stdout, res.stdout + res.stderr
    assert counts(root, "dlq")["ready"] == 2 and counts(root, "jobs")["ready"] == 4

    res = shell('"$QC" ls jobs --ids | "$QC" delete jobs - --yes', root)
    assert res.returncode == 0 and "delete jobs: 4 done" in res.stdout, res.stdout + res.stderr
    assert not any(counts(root, "jobs").values())
    res = shell('"$QC" trash restore', root)
    assert res.returncode == 0 and "4 done" in res.stdout
    found, odd = inventory(root, layout)
    assert not odd and set(found) == payloads and set(found.values()) == {1}  # none lost, none twice


def test_ls_ids_is_one_full_id_a_line_in_delivery_order(ddmq_jobs):
    doc = json.loads(run("ls", "jobs", "-r", ddmq_jobs, "--json").stdout)
    res = run("ls", "jobs", "-r", ddmq_jobs, "--ids")
    assert res.exit_code == 0 and res.stderr == ""
    assert res.stdout.splitlines() == [m["id"] for m in doc["messages"]]  # full 32-digit ids
    res = run("ls", "jobs", "-r", ddmq_jobs, "--ids", "--state", "ready", "--limit", "2")
    ready = [m["id"] for m in doc["messages"] if m["state"] == "ready"]
    assert res.stdout == "".join(f"{m}\n" for m in ready[:2]) and res.stderr == "2 of 3 shown (--limit)\n"
    found = json.loads(run("ls", "jobs", "-r", ddmq_jobs, "--json", "--grep", "job-4").stdout)["messages"]
    assert len(found) == 1
    assert run("ls", "jobs", "-r", ddmq_jobs, "--ids", "--grep", "job-4").stdout == found[0]["id"] + "\n"
    res = run("ls", "jobs", "-r", ddmq_jobs, "--ids", "--json")
    assert res.exit_code == 2 and "--ids or --json" in res.stderr


def test_grep_finds_json_as_the_file_and_the_list_preview_hold_it(vsqs_root):
    """The console's list shows a JSON payload compacted ({"i":4999}); peek shows it indented.
    Text copied from either finds the message (the compact form, often the file's very bytes,
    found nothing: only the indented text was searched)."""
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    q.publish(b'{"i":4999,"to":"ada"}')
    q.publish(b'{"i": 5000, "to": "bob"}')
    q.publish(b"plain text, no json")
    for needle, want in (('{"i":4999', 1), ('"i": 4999', 1), ('"to":"bob"', 1), ('"to": "bob"', 1),
                         ('"i":', 2), ("no json", 1), ('"i":4998', 0)):
        res = run("ls", "jobs", "-r", root, "--json", "--grep", needle)
        assert res.exit_code == 0, res.stderr
        assert json.loads(res.stdout)["count"] == want, (needle, res.stdout)


def test_ls_ids_imports_no_rich_even_on_a_terminal(ddmq_jobs):
    probe = ("import sys, runpy; sys.argv = ['qconsole', 'ls', 'jobs', '--ids', '-r', %r]\n"
             "try:\n    runpy.run_module('qconsole', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('rich', 'typer') if m in sys.modules), file=sys.stderr)\n") % ddmq_jobs
    env = {**os.environ, "TTY_COMPATIBLE": "1"}  # what makes plain `ls` draw Rich's table
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert len(out.stdout.splitlines()) == 6 and out.stderr.strip() == "[]", out.stderr


def test_stdin_ids_strip_only_the_line_end_skip_blanks_and_take_repeats_once(ddmq_jobs):
    ids = run("ls", "jobs", "-r", ddmq_jobs, "--ids", "--state", "expired").stdout.split()
    data = f"{ids[0]}\r\n\n   \n{ids[0]}\n{ids[1]}".encode()  # CRLF, blank lines, a repeat, no final newline
    res = run("requeue", "jobs", "-", "-r", ddmq_jobs, stdin=data)
    assert res.exit_code == 0 and "requeue jobs: 2 done" in res.stdout, res.output
    res = run("requeue", "jobs", "-", "-r", ddmq_jobs, stdin=f" {ids[2]}\n".encode())  # a blank kept: not an id
    assert res.exit_code == 0 and res.stdout.splitlines() == [
        f"requeue jobs: 0 done, 1 skipped (1 {NOT_IN_QUEUE})", f"  skipped  {ids[2]}: {NOT_IN_QUEUE}"]
    assert counts(ddmq_jobs, "jobs")["expired"] == 1


def test_empty_stdin_is_nothing_to_do(ddmq_jobs):
    before = tree(ddmq_jobs)
    for cmd in (["requeue", "jobs", "-", "--expired"], ["delete", "jobs", "-", "--yes"], ["move", "jobs", "dlq", "-"]):
        res = run(*cmd, "-r", ddmq_jobs, stdin=b"\n\n")
        assert res.exit_code == 0 and f"{cmd[0]} jobs: 0 done (no ids on stdin)" in res.stdout, res.output
    res = run("move", "jobs", "nosuch", "-", "-r", ddmq_jobs, stdin=b"")
    assert res.exit_code == 2 and "no queue" in res.stderr
    assert tree(ddmq_jobs) == before


@pytest.mark.parametrize("cmd", [["requeue", "jobs", "-", "x"], ["requeue", "jobs", "x", "-"],
                                 ["delete", "jobs", "-", "-", "--yes"], ["move", "jobs", "dlq", "x", "-"]])
def test_dash_beside_other_ids_is_refused(ddmq_jobs, cmd):
    before = tree(ddmq_jobs)
    res = run(*cmd, "-r", ddmq_jobs, stdin=b"1\n")
    assert res.exit_code == 2 and res.stderr == "qconsole: give '-' alone (ids on stdin) or the ids themselves, not both\n"
    assert tree(ddmq_jobs) == before


def test_move_refuses_dash_beside_all_or_state(ddmq_jobs):
    before = tree(ddmq_jobs)
    for extra in (["--all"], ["--state", "ready"]):
        res = run("move", "jobs", "dlq", "-", *extra, "-r", ddmq_jobs, stdin=b"")  # even with nothing on stdin
        assert res.exit_code == 2 and "one of them" in res.stderr
    assert tree(ddmq_jobs) == before


def test_delete_from_stdin_needs_yes(ddmq_jobs):
    before = tree(ddmq_jobs)
    ids = run("ls", "jobs", "-r", ddmq_jobs, "--ids").stdout.encode()
    res = run("delete", "jobs", "-", "-r", ddmq_jobs, stdin=ids)
    assert res.exit_code == 2
    assert res.stderr == "qconsole: refusing to delete ids from stdin without a terminal to confirm: add --yes\n"
    assert tree(ddmq_jobs) == before


@pytest.mark.parametrize("cmd", [["requeue", "jobs", "-"], ["delete", "jobs", "-", "--yes"], ["move", "jobs", "dlq", "-"]])
def test_dash_refuses_a_terminal_on_stdin(ddmq_jobs, cmd):
    before = tree(ddmq_jobs)
    master, slave = pty.openpty()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
        res = subprocess.run([QC, *cmd, "-r", ddmq_jobs], stdin=slave, capture_output=True, text=True, env=env,
                             timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("qconsole: '-' reads ids from stdin, which is a terminal: pipe them in "
                          "(e.g. qconsole ls QUEUE --ids | ...)\n")
    assert tree(ddmq_jobs) == before


@pytest.mark.parametrize("layout", ["vsqs", "ddmq", "rsmq"])
def test_ids_on_stdin_consumed_since_listed_are_skipped_and_the_rest_done(layout, request, tmp_path):
    """On a live queue the client consumes some of a listed selection before the change runs:
    those are skipped (said in the summary, one line each, in the audit log), the rest done."""
    root = request.getfixturevalue(f"{layout}_jobs")
    audit, gone_file = str(tmp_path / "audit.log"), str(tmp_path / "gone")
    extra = {"PY": sys.executable, "CB": CONSUME_BETWEEN, "AUDIT": audit, "GONE": gone_file}

    def pipeline(listing: str, mode: str, k: int, change: str) -> tuple[subprocess.CompletedProcess, list[str]]:
        line = (f'"$QC" ls jobs --ids {listing} | "$PY" "$CB" {layout} "$QCONSOLE_ROOT" {mode} {k} "$GONE" | '
                f'"$QC" {change} --audit-log "$AUDIT"')
        res = shell(line, root, extra)
        with open(gone_file) as fh:
            gone = fh.read().split()
        assert len(gone) == k and "qconsole:" not in res.stderr, res.stdout + res.stderr  # (ls's notes only)
        return res, gone

    def said(res: subprocess.CompletedProcess, head: str, gone: list[str]) -> None:
        lines = res.stdout.splitlines()
        assert res.returncode == 0 and lines[0].startswith(head), res.stdout
        assert sorted(lines[1:]) == sorted(f"  skipped {g}: {NOT_IN_QUEUE}" for g in gone), res.stdout

    # the consumer holding the first of the 3 listed held messages acks it before the requeue
    res, gone = pipeline(f"--state {HELD[layout]}", ACK[layout], 1, "requeue jobs -")
    said(res, f"requeue jobs: 2 done, 1 skipped (1 {NOT_IN_QUEUE})", gone)
    now = counts(root, "jobs")  # all visible; a requeued RSMQ message counts as expired (received before)
    assert now["ready"] + now["expired"] == 5 and sum(now.values()) == 5
    assert now["expired"] == (2 if layout == "rsmq" else 0)

    # of the 3 oldest listed, a consumer receives (the oldest) and acks one before the move
    listed = run("ls", "jobs", "-r", root, "--ids").stdout.split()
    res, gone = pipeline("--limit 3", "take", 1, "move jobs dlq -")
    said(res, f"move jobs to dlq: 2 done, 1 skipped (1 {NOT_IN_QUEUE})", gone)
    assert gone == listed[:1]
    assert counts(root, "dlq")["ready"] == 2  # (vsqs gives a moved message a new id in DEST)
    assert run("ls", "jobs", "-r", root, "--ids").stdout.split() == listed[3:]

    # two listed, one consumed before the delete: one into the trash, and back
    res, gone = pipeline("", "take", 1, "delete jobs - --yes")
    said(res, f"delete jobs: 1 done, 1 skipped (1 {NOT_IN_QUEUE}); trash batch ", gone)
    assert gone == listed[3:4] and run("ls", "jobs", "-r", root, "--ids").stdout == ""
    res = shell('"$QC" trash restore --audit-log "$AUDIT"', root, extra)
    assert res.returncode == 0 and "1 done" in res.stdout
    assert run("ls", "jobs", "-r", root, "--ids").stdout.split() == listed[4:]

    # the audit log records these skips as it records the others: outcome partial, each id, why
    with open(audit) as fh:
        docs = [json.loads(line) for line in fh]
    assert [(d["action"], d["outcome"], d["count"]) for d in docs] == [
        ("requeue", "partial", 2), ("move", "partial", 2), ("delete", "partial", 1), ("trash restore", "ok", 1)]
    assert docs[1]["skipped"] == [[listed[0], NOT_IN_QUEUE]]


@pytest.mark.parametrize("layout", ["vsqs", "ddmq", "rsmq"])
def test_the_same_ids_typed_still_fail_whole_and_change_nothing(layout, request, tmp_path):
    """Typed on the command line, an id not in the queue is a mistake to say, not to skip."""
    root = request.getfixturevalue(f"{layout}_jobs")
    listed = run("ls", "jobs", "-r", root, "--ids", "--state", HELD[layout]).stdout
    gone_file = str(tmp_path / "gone")
    out = subprocess.run([sys.executable, CONSUME_BETWEEN, layout, root, ACK[layout], "1", gone_file], input=listed,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ids = listed.split()
    before = snapshot(root, layout)
    audit = str(tmp_path / "audit.log")
    for cmd in (["requeue", "jobs"], ["delete", "jobs", "--yes"], ["move", "jobs", "dlq"]):
        res = subprocess.run([QC, *cmd, *ids, "-r", root, "--audit-log", audit], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 2 and res.stdout == "", res.stdout
        assert res.stderr == f"qconsole: no message '{ids[0]}' in queue 'jobs'\n", res.stderr
    assert snapshot(root, layout) == before
    assert not os.path.exists(audit)  # refused before anything: nothing to log


def test_missing_takes_fail_or_skip(ddmq_jobs):
    from qconsole.ops import Operations
    from qconsole.ops.result import OperationError

    ops = Operations(open_target(ddmq_jobs), audit_log=os.devnull)
    before = tree(ddmq_jobs)
    with pytest.raises(OperationError, match="missing= takes one of fail, skip"):
        ops.requeue("jobs", ["x"], missing="ignore")
    result = ops.move("jobs", "dlq", ["0" * 32, "0" * 32], missing="skip")  # a repeat is one skip
    assert result.done == [] and result.skipped == [("0" * 32, NOT_IN_QUEUE)]
    assert tree(ddmq_jobs) == before
