"""A queue directory qconsole cannot list (mode 000, another user's): every change refuses in
one line and changes nothing, and ``ls`` fails after what it could show (review: purge said
"1 done" and requeue/move "0 done", exit 0, with the in-flight messages untouched).

Run as root, qconsole runs without the capabilities that let root ignore permission bits
(``setpriv``), so the permission check is the kernel's, as for any operator.
"""

from __future__ import annotations

import os
import time

import pytest

from peers import ddmq_broker
from unprivileged import MISSING, run_qconsole

pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


def _ddmq(tmp_path) -> tuple[str, str]:
    root = str(tmp_path / "d")
    b = ddmq_broker(root, "jobs", "other")
    for i in range(4):
        b.publish("jobs", f"m-{i}", clean=False)
    b.consume("jobs", n=2, clean=False)  # a real consumer holds two: in work/
    return root, os.path.join(root, "jobs", "work")


def _vsqs(tmp_path) -> tuple[str, str]:
    root = str(tmp_path / "v")
    for q in ("jobs", "other"):
        os.makedirs(os.path.join(root, q))
    qdir = os.path.join(root, "jobs")
    for i in range(3):
        with open(os.path.join(qdir, str(1_700_000_000_000_000 + i)), "w") as fh:
            fh.write(f"m-{i}")
    os.rename(os.path.join(qdir, "1700000000000000"), os.path.join(qdir, f"1700000000000000.{int(time.time()) - 5}"))
    return root, qdir


def _tree(root: str) -> dict[str, bytes]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
@pytest.mark.parametrize("argv", [["purge", "jobs", "--yes"], ["purge", "jobs", "--yes", "--no-trash"],
                                  ["requeue", "jobs", "--all"], ["requeue", "jobs", "--expired"],
                                  ["move", "jobs", "other", "--all"], ["ls", "jobs"], ["ls", "jobs", "--ids"],
                                  ["ls", "jobs", "--json"]])
def test_a_queue_that_cannot_be_listed_is_never_changed_by_what_could_be(tmp_path, layout, argv):
    root, locked = (_ddmq if layout == "ddmq" else _vsqs)(tmp_path)
    before = _tree(root)
    os.chmod(locked, 0)
    try:
        res = run_qconsole(*argv, "-r", root, "--audit-log", str(tmp_path / "audit.log"))
    finally:
        os.chmod(locked, 0o755)
    lines = res.stderr.splitlines()
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert len(lines) == 1 and "jobs" in lines[0] and "permission denied" in lines[0].lower(), lines
    assert "Traceback" not in res.stderr
    assert _tree(root) == before  # nothing moved, requeued, trashed or left behind


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_a_queue_directory_that_cannot_be_searched_is_a_counted_failure_not_a_blind_spot(tmp_path, layout):
    """chmod 000 on a whole ddmq queue: its ddmq.yaml cannot even be looked for. ddmq's own
    check_dir() skips it, and so did qconsole: ``stats`` left it out and ``check`` said OK with
    the one queue that needed attention missing (bug hunt). It is now a queue row that failed, as
    a VSQS queue in the same state is, and ``check`` warns."""
    root, _ = (_ddmq if layout == "ddmq" else _vsqs)(tmp_path)
    locked = os.path.join(root, "jobs")
    os.chmod(locked, 0)
    try:
        stats = run_qconsole("stats", "--json", root)
        check = run_qconsole("check", root)
        ls = run_qconsole("ls", "jobs", "-r", root)
    finally:
        os.chmod(locked, 0o755)
    import json

    doc = json.loads(stats.stdout)
    rows = {q["name"]: q for q in doc["queues"]}
    assert "jobs" in rows, doc
    assert any("permission denied" in e.lower() for e in rows["jobs"]["errors"]), rows["jobs"]
    assert check.returncode == 1 and check.stdout.startswith("QCONSOLE WARNING"), (check.returncode, check.stdout)
    assert "jobs" in check.stdout
    assert ls.returncode == 2 and "permission denied" in ls.stderr.lower() and "not a" not in ls.stderr, ls.stderr
    assert "Traceback" not in stats.stderr + check.stderr + ls.stderr


def test_a_readable_directory_without_ddmq_yaml_is_still_not_a_queue(tmp_path):
    root, _ = _ddmq(tmp_path)
    os.makedirs(os.path.join(root, "notes"))  # an operator's directory beside the queues: ddmq ignores it
    res = run_qconsole("stats", "--json", root)
    import json

    assert sorted(q["name"] for q in json.loads(res.stdout)["queues"]) == ["jobs", "other"]


def test_an_unreadable_lost_and_found_at_a_mount_point_is_no_queue(tmp_path):
    """A ddmq root that is a mount point has a lost+found no operator can read: it is never a
    queue, and made check warn for ever once unreadable directories became failed rows (review)."""
    root, _ = _ddmq(tmp_path)
    lost = os.path.join(root, "lost+found")
    os.makedirs(lost)
    os.chmod(lost, 0)
    try:
        check = run_qconsole("check", root)
    finally:
        os.chmod(lost, 0o755)
    assert check.returncode == 0 and check.stdout.startswith("QCONSOLE OK - 2 queues"), check.stdout
