"""Review 24: the batch barrier's syncfs is as strong as each file's fsync only on local file
systems whose own sync writes and flushes everything (fs/durable.py ``SYNCFS_FS``). On FUSE a
syncfs never reaches the daemon (no FUSE_FSYNC: a passthrough daemon logging its fsyncs saw
none for a whole ddmq publish, one per message before e83660e); elsewhere each file is fsynced.
Shown here on ramfs, a file system outside the list that any root can mount."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import durable
from qconsole.ops import Operations

FUSE_SUPER_MAGIC = 0x65735546


@pytest.fixture
def ramfs(tmp_path):
    """A ramfs mounted under tmp_path (root only)."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("mounting a ramfs needs root on Linux")
    mnt = tmp_path / "ram"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"root cannot mount a ramfs here: {r.stderr}")
        pytest.skip(f"cannot mount a ramfs: {r.stderr}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def calls(monkeypatch):
    seen: list[tuple[str, int]] = []
    real_fsync = durable.fsync_file

    def fsync(fd: int) -> None:
        seen.append(("fsync", fd))
        real_fsync(fd)

    def syncfs(fd: int) -> None:
        seen.append(("syncfs", fd))

    monkeypatch.setattr(durable, "fsync_file", fsync)
    monkeypatch.setattr(durable, "_SYNCFS", [syncfs])
    return seen


def _files(d, n: int) -> list[int]:
    fds = []
    for i in range(n):
        fd = os.open(d / f"f{i}", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.write(fd, b"x" * 100)
        fds.append(fd)
    return fds


def _run(b: durable.Barrier, fds: list[int]) -> None:
    for f in b.start(fds):
        f.result()


def test_a_file_system_outside_the_list_gets_each_files_fsync(ramfs, calls):
    fds = _files(ramfs, 4)
    b = durable.Barrier()
    try:
        _run(b, fds)
        _run(b, fds[:2])
    finally:
        b.shutdown()
        for fd in fds:
            os.close(fd)
    assert sorted(calls) == sorted([("fsync", fd) for fd in fds] + [("fsync", fd) for fd in fds[:2]])


def test_the_test_directorys_file_system_keeps_one_syncfs(tmp_path, calls):
    """(ext4, xfs, btrfs, f2fs or tmpfs: where the suite runs) the batch stays one syncfs."""
    dfd = os.open(tmp_path, os.O_RDONLY)
    try:
        kind = durable.fs_type(dfd)
    finally:
        os.close(dfd)
    if kind not in durable.SYNCFS_FS:
        pytest.skip("the test directory is on a file system outside the list")
    fds = _files(tmp_path, 3)
    b = durable.Barrier()
    try:
        _run(b, fds)
    finally:
        b.shutdown()
        for fd in fds:
            os.close(fd)
    assert calls == [("syncfs", fds[0])]


def test_fuse_is_not_in_the_list():
    assert FUSE_SUPER_MAGIC not in durable.SYNCFS_FS


def test_a_ddmq_publish_on_ramfs_fsyncs_every_copy(ramfs, calls):
    root = ramfs / "droot"
    (root / "jobs" / "work").mkdir(parents=True)
    (root / "ddmq.yaml").write_text("")
    (root / "jobs" / "ddmq.yaml").write_text("")
    ops = Operations(open_target(str(root)), audit_log=str(ramfs / "audit.log"))
    res = ops.publish("jobs", [b"m%03d" % i for i in range(5)])
    assert len(res.done) == 5
    assert [k for k, _fd in calls] == ["fsync"] * 5
