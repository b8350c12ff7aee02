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


def _run(*argv: str, home: str | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_") and k != "XDG_STATE_HOME"}
    if home:
        env["HOME"] = home
    return subprocess.run([QCONSOLE, *argv], capture_output=True, text=True, timeout=120, preexec_fn=cap, env=env,
                          cwd=cwd)


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


def test_a_planted_audit_log_of_millions_of_tiny_lines_is_shown_by_its_last_entries(tmp_path):
    """64 MiB of ``{}`` lines are 22 million entries: `qconsole audit` (no --tail, or a --tail
    that large) took 95 s and 2.9 GB to show them, a MemoryError under a cap. At most the last
    100,000 entries are read, and a line says so."""
    root = _vsqs_root(tmp_path)
    assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
    log = os.path.join(root, ".qconsole", "audit.log")
    with open(log, "a") as fh:
        fh.write("{}\n" * ((BIG - (1 << 20)) // 3))
    assert _run("publish", "jobs", "after", "-r", root).returncode == 0
    for argv in (["audit"], ["audit", "--json"], ["audit", "--tail", "1000000000"]):
        res = _run(*argv, "-r", root)
        assert res.returncode == 0 and not res.stderr, (argv, res.returncode, res.stderr[-500:])
        lines = res.stdout.splitlines()
        assert 100_000 <= len(lines) <= 100_010, (argv, len(lines))
        assert "earlier entries not shown" in res.stdout[:2000] and "publish" in res.stdout[-500:], argv


def test_an_audit_log_hard_linked_outside_or_named_in_a_queue_is_not_written(tmp_path):
    root = _vsqs_root(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    os.makedirs(os.path.join(root, ".qconsole"))
    os.link(outside, os.path.join(root, ".qconsole", "audit.log"))  # planted by a queue writer
    home = str(tmp_path / "home")
    res = _run("publish", "jobs", "x", "-r", root, home=home)
    assert res.returncode == 0 and "audit log" in res.stderr and "hard link" in res.stderr, res.stderr
    assert outside.read_text() == "mine\n"
    # the record is not lost: it went to the operator's own log, and the warning says where
    spare = os.path.join(home, ".local", "state", "qconsole", "audit.log")
    assert f"written to {spare}" in res.stderr and '"action": "publish"' in open(spare).read()
    message = os.path.join(root, "jobs", "1700000000000001")
    os.symlink(root, str(tmp_path / "rootlink"))
    # named plainly, through a link to the root, relative to the working directory: all refused
    for path, cwd in ((message, None), (str(tmp_path / "rootlink" / "jobs" / "1700000000000001"), None),
                      (os.path.join("jobs", "1700000000000001"), root)):
        res = _run("publish", "jobs", "y", "-r", root, "--audit-log", path, home=home, cwd=cwd)
        assert res.returncode == 0 and "not under its .qconsole/" in res.stderr, (path, res.stderr)
        assert open(message).read() == "m-1"


def test_a_relative_audit_log_is_written_where_it_names(tmp_path):
    """`-r jobs --audit-log jobs/.qconsole/audit.log` from the root's parent was checked as that
    path and written at ROOT/jobs/.qconsole/audit.log: inside the live queue `jobs`."""
    root = _vsqs_root(tmp_path)
    os.rename(root, str(tmp_path / "jobs"))  # the root is named like its queue
    res = _run("publish", "jobs", "x", "-r", "jobs", "--audit-log", "jobs/.qconsole/ops.log", cwd=str(tmp_path))
    assert res.returncode == 0 and not res.stderr, res.stderr
    assert os.path.isfile(tmp_path / "jobs" / ".qconsole" / "ops.log")
    assert not os.path.exists(tmp_path / "jobs" / "jobs" / ".qconsole")

def _vsqs_trash(tmp_path, n: int = 3) -> tuple[str, str]:
    """A VSQS root whose queue ``jobs`` was purged into the trash: (root, the batch)."""
    root = _vsqs_root(tmp_path, n)
    assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
    return root, os.listdir(os.path.join(root, ".qconsole", "trash"))[0]


chain_was_whole = [False]


def _remove_chain(top: str) -> None:
    """Remove top/d/d/.../d without recursion or a descriptor per level (by walking the cwd)."""
    here = os.getcwd()
    depth = 0
    try:
        os.chdir(top)
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(here)
    chain_was_whole[0] = depth == 3000


def test_a_planted_batch_nested_3000_deep_is_refused_not_a_recursion_error(tmp_path):
    root, real = _vsqs_trash(tmp_path)
    deep = os.path.join(root, ".qconsole", "trash", "20200101T000000-aaaaaa", "files", "jobs")
    os.makedirs(deep)
    fd = os.open(deep, os.O_RDONLY)
    try:  # 3,000 levels, made relative to a descriptor (a path that long is past PATH_MAX)
        for _ in range(3000):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)
    try:
        res = _run("trash", "empty", "--yes", "-r", root)
    finally:
        _remove_chain(deep)  # (pytest's own clean-up of old runs recurses: 3,000 levels overflow it)
    # the planted batch is left and said; the real one goes; every later empty works the same
    assert res.returncode == 1 and not res.stderr, (res.returncode, res.stderr)
    assert "skipped 20200101T000000-aaaaaa: not removed:" in res.stdout and "nested deeper" in res.stdout, res.stdout
    assert chain_was_whole[0]  # refused before anything of it went
    assert os.listdir(os.path.join(root, ".qconsole", "trash")) == ["20200101T000000-aaaaaa"]
    assert not os.path.exists(os.path.join(root, ".qconsole", "trash", "20200101T000000-aaaaaa", ".lock"))


def test_a_lock_planted_with_a_time_far_ahead_expires_like_any_other_hosts(tmp_path, monkeypatch):
    """A lock naming another host, touched to 2099, held its batch for good (its mtime was
    always "fresh"); its ctime, which no one sets, now ages it out like any other."""
    import time

    from qconsole.backends import open_target
    from qconsole.backends.fs import claims, trash
    from qconsole.ops import Operations

    root, batch = _vsqs_trash(tmp_path)
    lock = os.path.join(root, ".qconsole", "trash", batch, trash.LOCK)
    with open(lock, "w") as fh:
        fh.write("ffffff 1 0 restore\n")
    far = 4_070_908_800  # 2099-01-01
    os.utime(lock, (far, far))
    monkeypatch.setattr(trash, "FOREIGN_HOST_GRACE", 1.0)
    monkeypatch.setattr(claims, "FOREIGN_HOST_GRACE", 1.0)
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit.log"))
    res = ops.trash_empty()  # while fresh, it holds: the batch is left, and said (not "0 done" alone)
    assert not res.done and res.skipped[0][0] == batch and "another qconsole" in res.skipped[0][1]
    time.sleep(1.2)
    res = ops.trash_restore(batch)
    assert len(res.done) == 3 and len(os.listdir(os.path.join(root, "jobs"))) == 3


def test_an_empty_batch_lock_left_by_a_killed_restore_holds_only_while_it_may_be_written(tmp_path, monkeypatch):
    """A restore or empty killed between its batch lock's create and its write left an empty
    lock, which held the batch for five minutes ('being restored or emptied by another qconsole')."""
    import time

    from qconsole.backends import open_target
    from qconsole.backends.fs import claims, trash
    from qconsole.ops import Operations

    root, batch = _vsqs_trash(tmp_path)
    lock = os.path.join(root, ".qconsole", "trash", batch, trash.LOCK)
    open(lock, "w").close()
    ops = Operations(open_target(root), audit_log=str(tmp_path / "audit.log"))
    res = ops.trash_empty()
    assert not res.done and res.skipped[0][0] == batch and "another qconsole" in res.skipped[0][1]
    monkeypatch.setattr(claims, "LOCK_WRITE_S", 0.2)
    time.sleep(0.3)
    res = ops.trash_restore(batch)
    assert len(res.done) == 3 and len(os.listdir(os.path.join(root, "jobs"))) == 3


def test_a_batch_lock_naming_a_running_pid_of_this_host_holds_only_for_the_process_that_wrote_it(tmp_path):
    """A batch's lock naming a running pid of this host held the batch for as long as that pid
    ran: a restore killed outright left its lock, its pid was soon another process's, and that
    batch could be neither restored nor emptied ("being restored ... by another qconsole"), nor
    could one planted naming pid 1. As for recover's lock, the lock records its writer's start
    time, and a lock of this host whose pid is not that very process is broken."""
    import hashlib
    import socket

    host = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
    root, batch = _vsqs_trash(tmp_path)
    lock = os.path.join(root, ".qconsole", "trash", batch, ".lock")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        with open(f"/proc/{sleeper.pid}/stat", "rb") as fh:
            start = fh.read().rsplit(b")", 1)[1].split()[19].decode()
        # the very process that wrote it still runs: the batch is held
        with open(lock, "w") as fh:
            fh.write(f"{host} {sleeper.pid} 0 restore {start}\n")
        res = _run("trash", "restore", batch, "-r", root)
        assert res.returncode == 2 and "another qconsole" in res.stderr, (res.returncode, res.stderr)
        # the pid runs, but it is another process than the one that wrote the lock (or an older
        # qconsole's lock without a start time): broken
        for text in (f"{host} {sleeper.pid} 0 restore {int(start) + 1}\n", f"{host} 1 0 restore\n"):
            with open(lock, "w") as fh:
                fh.write(text)
            res = _run("trash", "empty", "--yes", "-r", root) if text.startswith(f"{host} 1 ") else \
                _run("trash", "restore", batch, "-r", root)
            assert res.returncode == 0, (text, res.returncode, res.stdout, res.stderr)
            if text.startswith(f"{host} 1 "):
                assert not os.listdir(os.path.join(root, ".qconsole", "trash")), res.stdout
            else:
                assert len(os.listdir(os.path.join(root, "jobs"))) == 3, res.stdout
                assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
                batch = os.listdir(os.path.join(root, ".qconsole", "trash"))[0]
                lock = os.path.join(root, ".qconsole", "trash", batch, ".lock")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_another_hosts_purge_is_alive_while_messages_move_into_its_batch(tmp_path, monkeypatch):
    """recover published another host's batch while its purge ran past the grace: the batch's
    top directory keeps its creation ctime; its queue directories change with every message."""
    import time

    from qconsole.backends.fs import trash

    root = _vsqs_root(tmp_path)
    fill = os.path.join(root, ".qconsole", "trash", ".fill-ffffff-1-20261126T000000-abcdef")
    qdir = os.path.join(fill, trash.FILES, "jobs")
    os.makedirs(os.path.join(qdir, "work"))
    monkeypatch.setattr(trash, "FOREIGN_HOST_GRACE", 1.0)
    time.sleep(1.2)
    os.rename(os.path.join(root, "jobs", "1700000000000000"), os.path.join(qdir, "1700000000000000"))  # just now
    assert trash.orphaned_fills(root) == []
    time.sleep(1.2)  # then nothing for longer than the grace: the purge is taken for dead
    assert trash.orphaned_fills(root) == [(os.path.basename(fill), "20261126T000000-abcdef")]


def test_a_restore_is_reported_and_audited_by_where_the_files_went_not_the_manifests_word(tmp_path):
    """An edited manifest said queue ``other``; the files went back to ``jobs`` (by their
    ``files/jobs/`` directory), but the summary, the audit log and the console's undo question
    named ``other`` (review)."""
    root = _vsqs_root(tmp_path)
    os.makedirs(os.path.join(root, "other"))
    assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
    trash = os.path.join(root, ".qconsole", "trash")
    batch = os.listdir(trash)[0]
    path = os.path.join(trash, batch, "manifest.json")
    with open(path) as fh:
        doc = json.load(fh)
    doc["queue"] = "other"
    with open(path, "w") as fh:
        json.dump(doc, fh)
    listed = _run("trash", "list", "-r", root)
    row = next(line.split() for line in listed.stdout.splitlines() if line.startswith(batch))
    assert "jobs" in row and "other" not in row, listed.stdout
    res = _run("trash", "restore", "-r", root)
    assert res.returncode == 0 and res.stdout.startswith("trash restore jobs: 3 done"), (res.stdout, res.stderr)
    assert len(os.listdir(os.path.join(root, "jobs"))) == 3 and not os.listdir(os.path.join(root, "other"))
    with open(os.path.join(root, ".qconsole", "audit.log")) as fh:
        last = json.loads(fh.read().splitlines()[-1])
    assert last["action"] == "trash restore" and last["queue"] == "jobs", last


def test_a_batch_whose_files_lie_under_two_queues_names_no_single_queue(tmp_path):
    root = _vsqs_root(tmp_path)
    os.makedirs(os.path.join(root, "other"))
    assert _run("purge", "jobs", "--yes", "-r", root).returncode == 0
    trash = os.path.join(root, ".qconsole", "trash")
    batch = os.listdir(trash)[0]
    extra = os.path.join(trash, batch, "files", "other")
    os.makedirs(extra)
    with open(os.path.join(extra, str(1_700_000_000_000_999)), "w") as fh:
        fh.write("planted")
    res = _run("trash", "restore", "-r", root)
    assert res.returncode == 0, res.stderr
    assert not res.stdout.startswith("trash restore jobs") and not res.stdout.startswith("trash restore other"), res.stdout
    assert len(os.listdir(os.path.join(root, "jobs"))) == 3 and len(os.listdir(os.path.join(root, "other"))) == 1
