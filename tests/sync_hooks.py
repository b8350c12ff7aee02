"""Tests that fail or interrupt a batch's barrier (fs/durable.py) hook it through here, in either
of its two ways: one ``syncfs`` per batch, or (no syncfs, or after one failed or was slow) an
``fsync`` of each file by worker threads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest

from qconsole.backends.fs import durable

#: the barrier's two ways; tests that hook it run in both
SYNC_MODES = ["syncfs", "fsync"]


def hook_sync(monkeypatch: pytest.MonkeyPatch, mode: str, batch_size: int,
              before: Callable[[int, int], None]) -> None:
    """``before(batch_no, fd)`` runs in the barrier's worker thread before each real sync
    (1-based batch numbers): once per batch in ``syncfs`` mode, once per file in ``fsync``
    mode (the files of batch k are calls (k-1)*batch_size+1 .. k*batch_size). What it raises
    is what that sync raised."""
    lock, count = threading.Lock(), [0]
    if mode == "syncfs":
        real = durable.syncfs_call()
        if real is None:
            if os.environ.get("CI") == "true":
                pytest.fail("no syncfs(2) here: the barrier's main way is untested")
            pytest.skip("no syncfs(2) on this system")

        def syncfs(fd: int) -> None:
            with lock:
                count[0] += 1
                k = count[0]
            before(k, fd)
            real(fd)

        monkeypatch.setattr(durable, "_SYNCFS", [syncfs])
        return
    monkeypatch.setattr(durable, "_SYNCFS", [None])
    real_fsync = durable.fsync_file

    def fsync(fd: int) -> None:
        with lock:
            count[0] += 1
            k = (count[0] - 1) // batch_size + 1
        before(k, fd)
        real_fsync(fd)

    monkeypatch.setattr(durable, "fsync_file", fsync)


def fail_files(monkeypatch: pytest.MonkeyPatch, fds_of: Callable[[int], bool], err: BaseException) -> None:
    """Each file's own fsync (the barrier's way after a syncfs failed) raises ``err`` for a
    descriptor ``fds_of(fd)`` picks."""
    real_fsync = durable.fsync_file

    def fsync(fd: int) -> None:
        if fds_of(fd):
            raise err
        real_fsync(fd)

    monkeypatch.setattr(durable, "fsync_file", fsync)
