"""qconsole's own files, planted (review): a manifest or audit line of 64 MB of ``{}``, an
audit log hard-linked to a file outside the root, an audit log named inside a queue.

Each run gets a 512 MiB address-space cap: parsing a planted 64 MB JSON list took 1.7 GB
(MemoryError under a cap, else the machine's memory), where reading what qconsole needs
takes a few MB."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

QCONSOLE = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "qconsole")
CAP = 512 << 20
BIG = 64 << 20


def _run(*argv: str) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    return subprocess.run([QCONSOLE, *argv], capture_output=True, text=True, timeout=120, preexec_fn=cap, env=env)


def _vsqs_root(tmp_path, n: int = 3) -> str:
    root = str(tmp_path / "root")
    qdir = os.path.join(root, "jobs")
    os.makedirs(qdir)
    for i in range(n):
        with open(os.path.join(qdir, str(1_700_000_000_000_000 + i)), "w") as fh:
            fh.write(f"m-{i}")
    return root


def _empty_list(path: str, size: int = BIG) -> None:
    n = size // 3
    with open(path, "w") as fh:
        fh.write("[" + "{}," * n + "{}]")


def test_a_planted_64mb_manifest_is_not_parsed_whole(tmp_path):
    root = _vsqs_root(tmp_path, 2000)
    res = _run("purge", "jobs", "--yes", "-r", root)
    assert res.returncode == 0, res.stderr
    real = os.listdir(os.path.join(root, ".qconsole", "trash"))[0]
    assert os.path.getsize(os.path.join(root, ".qconsole", "trash", real, "manifest.json")) > 64 << 10
    planted = os.path.join(root, ".qconsole", "trash", "20200101T000000-aaaaaa")
    os.makedirs(os.path.join(planted, "files", "jobs", "work"))
    _empty_list(os.path.join(planted, "manifest.json"), BIG - (1 << 20))  # under the old 64 MiB read cap
    res = _run("trash", "list", "-r", root)
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines() if line[:1].isdigit()}
    # the real batch's fields come from its manifest's head (its items run past it)
    assert rows[real][3:5] == ["purge", "jobs"] and "2000" in rows[real], res.stdout
    assert "20200101T000000-aaaaaa" in rows
    assert _run("trash", "empty", "--yes", "--older-than", "1d", "-r", root).returncode == 0
    assert not os.path.exists(planted)
    res = _run("trash", "restore", real, "-r", root)
    assert res.returncode == 0 and len(os.listdir(os.path.join(root, "jobs"))) == 2000, res.stderr


def test_a_planted_64mb_audit_line_is_not_parsed(tmp_path):
    root = _vsqs_root(tmp_path)
    assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
    log = os.path.join(root, ".qconsole", "audit.log")
    with open(log, "a") as fh:
        fh.write("[" + "{}," * (BIG // 6) + "{}]\n")  # 32 MB: inside the 64 MiB read
    assert _run("publish", "jobs", "after", "-r", root).returncode == 0
    res = _run("audit", "--tail", "5", "--json", "-r", root)
    assert res.returncode == 0, res.stderr
    entries = [json.loads(line) for line in res.stdout.splitlines() if line.strip()] \
        if not res.stdout.lstrip().startswith("[") else json.loads(res.stdout)
    text = json.dumps(entries)
    assert "not read" in text and '"purge"' in text and '"publish"' in text, text[:2000]


def test_an_audit_log_hard_linked_outside_or_named_in_a_queue_is_not_written(tmp_path):
    root = _vsqs_root(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    os.makedirs(os.path.join(root, ".qconsole"))
    os.link(outside, os.path.join(root, ".qconsole", "audit.log"))  # planted by a queue writer
    res = _run("publish", "jobs", "x", "-r", root)
    assert res.returncode == 0 and "audit log" in res.stderr and "hard link" in res.stderr, res.stderr
    assert outside.read_text() == "mine\n"
    message = os.path.join(root, "jobs", "1700000000000001")
    res = _run("publish", "jobs", "y", "-r", root, "--audit-log", message)
    assert res.returncode == 0 and "not under its .qconsole/" in res.stderr, res.stderr
    assert open(message).read() == "m-1"
