"""Review 24: syncfs(2) reports the writeback errors since the descriptor it is given was opened
(its f_sb_err sample). e83660e gave it the batch's first copy's descriptor; on VSQS without hard
links (vfat, exfat, some SMB shares: link() fails EPERM) the clash check places a clashing copy
again, with a NEW descriptor, and when that copy is the batch's first, an error in the other
copies' writeback that someone else's syncfs (``sync -f``, another qconsole) saw before it was
opened went unreported: the publish succeeded and, after a remount, a published message was 3 MB
of zeros (b020a64's fsync of each copy failed the publish). The barrier's syncfs now gets the
queue directory's descriptor, opened before every copy."""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import subprocess
import sys

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import durable, safety
from qconsole.backends.vsqs import writes
from qconsole.ops import Operations
from sync_hooks import hook_sync


def _no_links(monkeypatch) -> None:
    def link(self, src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(safety.Confined, "link", link)


def _clash_first_at_check(monkeypatch, q: str, before=None) -> None:
    """At the batch's clash check, another name of the batch's first id appears."""
    real_heads = writes._heads
    state = {"n": 0}

    def heads(c, queue_dir):
        state["n"] += 1
        if state["n"] == 1:
            first = min(n for n in os.listdir(q) if n.endswith(".new"))
            if before is not None:
                before()
            open(os.path.join(q, first.split(".")[0] + ".clash"), "w").close()
        return real_heads(c, queue_dir)

    monkeypatch.setattr(writes, "_heads", heads)


def test_the_syncfs_descriptor_was_opened_before_every_copy_of_the_batch(tmp_path, monkeypatch):
    root = tmp_path / "r"
    q = root / "q"
    q.mkdir(parents=True)
    opened: list[tuple[int, int, bool]] = []  # (seq, fd, a create?)
    real_open = os.open

    def recording_open(path, flags, *a, **k):
        fd = real_open(path, flags, *a, **k)
        opened.append((len(opened), fd, bool(flags & os.O_CREAT)))
        return fd

    synced: list[int] = []  # the open seq of each syncfs's descriptor

    def before(_batch, fd):
        synced.append(max(seq for seq, f, _c in opened if f == fd))

    monkeypatch.setattr(os, "open", recording_open)
    hook_sync(monkeypatch, "syncfs", 256, before)
    _no_links(monkeypatch)
    _clash_first_at_check(monkeypatch, str(q))
    res = Operations(open_target(str(root)), audit_log=str(tmp_path / "audit.log")).publish("q", [b"a", b"b", b"c"])
    assert len(res.done) == 3
    creates = [seq for seq, _f, c in opened if c]
    assert len(synced) == 1 and synced[0] < min(creates), (synced, creates)


@pytest.fixture
def failing_ext4(tmp_path):
    """An ext4 on a loop device whose backing file is on a small tmpfs: filling the tmpfs makes
    writeback fail (EIO/ENOSPC), freeing it makes writes work again. Root only."""
    if sys.platform != "linux" or os.geteuid() != 0 or not shutil.which("losetup") or not shutil.which("mkfs.ext4"):
        pytest.skip("needs root, losetup and mkfs.ext4")
    small, mnt = tmp_path / "small", tmp_path / "mnt"
    small.mkdir()
    mnt.mkdir()
    undo: list[list[str]] = []

    def run(*cmd: str) -> str:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"{' '.join(cmd)}: {r.stderr.strip()}")
        return r.stdout.strip()

    try:
        run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(small))
        undo.append(["umount", "-l", str(small)])
        img = small / "disk.img"
        run("truncate", "-s", "64M", str(img))
        run("mkfs.ext4", "-q", "-O", "^has_journal", str(img))
        dev = run("losetup", "-f", "--show", str(img))
        undo.append(["losetup", "-d", dev])
        run("mount", "-o", "errors=continue", dev, str(mnt))
        undo.append(["umount", "-l", str(mnt)])
        yield small, mnt, dev
    finally:
        for cmd in reversed(undo):
            subprocess.run(cmd, capture_output=True)


def test_an_error_someone_else_saw_still_fails_the_publish(failing_ext4, monkeypatch):
    small, mnt, dev = failing_ext4
    if durable.syncfs_call() is None:
        pytest.skip("no syncfs(2) here")
    root, q = mnt / "vroot", mnt / "vroot" / "jobs"
    q.mkdir(parents=True)
    libc = ctypes.CDLL(None, use_errno=True)
    other = os.open(mnt, os.O_RDONLY)  # someone else's descriptor on the file system

    def writeback_fails_and_someone_sees_it():
        with open(small / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
            except OSError:
                pass
        assert libc.syncfs(other) != 0  # `sync -f`: sees the error (the copies' writeback)
        os.unlink(small / "filler")

    _no_links(monkeypatch)
    _clash_first_at_check(monkeypatch, str(q), writeback_fails_and_someone_sees_it)
    payloads = [b"A" * 3_000_000, b"B" * 3_000_000]
    try:
        try:
            res = Operations(open_target(str(root)), audit_log=str(mnt / "audit.log")).publish("jobs", payloads)
        except OSError as err:
            assert err.errno in (errno.EIO, errno.ENOSPC)
            published: list[str] = []
        else:
            published = res.done
    finally:
        os.close(other)
    # what was published is on the disk: read back after a remount
    subprocess.run(["umount", str(mnt)], check=True)
    subprocess.run(["mount", "-o", "errors=continue", dev, str(mnt)], check=True)
    for mid in published:
        data = (q / mid).read_bytes()
        assert data in payloads, f"{mid}: published, but {data.count(0)} of its {len(data)} bytes are zeros"
