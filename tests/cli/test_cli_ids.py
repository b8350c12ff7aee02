"""Ids on stdin: ``qconsole ls QUEUE --ids | qconsole requeue|delete|move ... -`` through a real
shell pipe on roots the real clients built, and what ``-`` refuses (a terminal, ``-`` beside
other ids, ``delete`` without ``--yes``). Hostile stdin (NUL, huge lines, bad UTF-8, paths as
ids) is judged by the hostile suite (``tests/hostile``, the ``stdin-*`` cases)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from ops_inventory import inventory, tree
from qconsole.backends import open_target
from qconsole.cli import app, register_all

register_all()
runner = CliRunner()
QC = os.path.join(os.path.dirname(sys.executable), "qconsole")


def run(*args: str, stdin: bytes | None = None):
    return runner.invoke(app, list(args), input=stdin)


def shell(line: str, root: str, **kw) -> subprocess.CompletedProcess:
    """``line`` through ``sh -c`` with ``$QC`` the console script, as an operator types it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(QC=QC, QCONSOLE_ROOT=root)
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


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_ls_ids_piped_into_requeue_move_and_delete(layout, request):
    root = request.getfixturevalue(f"{layout}_jobs")
    payloads = set(inventory(root, layout)[0])
    assert counts(root, "jobs")["expired"] == 3

    res = shell('"$QC" ls jobs --state expired --ids | "$QC" requeue jobs -', root)
    assert res.returncode == 0 and "requeue jobs: 3 done" in res.stdout, res.stdout + res.stderr
    assert counts(root, "jobs")["ready"] == 6 and counts(root, "jobs")["expired"] == 0

    res = shell('"$QC" ls jobs --ids --limit 2 | "$QC" move jobs dlq -', root)
    assert res.returncode == 0 and "move jobs: 2 done" in res.stdout, res.stdout + res.stderr
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
    assert res.exit_code == 2 and f"no message ' {ids[2]}'" in res.stderr
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


def test_an_unknown_id_among_many_changes_nothing(ddmq_jobs):
    before = tree(ddmq_jobs)
    ids = run("ls", "jobs", "-r", ddmq_jobs, "--ids").stdout
    for cmd in (["requeue", "jobs", "-"], ["delete", "jobs", "-", "--yes"], ["move", "jobs", "dlq", "-"]):
        res = run(*cmd, "-r", ddmq_jobs, stdin=(ids + "0" * 32 + "\n").encode())
        assert res.exit_code == 2 and f"no message '{'0' * 32}'" in res.stderr, res.output
    assert tree(ddmq_jobs) == before
