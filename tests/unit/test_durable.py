"""The batch barrier (fs/durable.py): one syncfs per batch where the system has it; each file's
own fsync after a syncfs failed (someone else's error must not fail a publish, ours must) or was
slow (someone else's dirty data), and where there is no syncfs."""

from __future__ import annotations

import os
import sys

import pytest

from qconsole.backends.fs import durable


def _files(tmp_path, n: int) -> list[int]:
    fds = []
    for i in range(n):
        fd = os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        os.write(fd, b"x" * 100)
        fds.append(fd)
    return fds


@pytest.fixture
def calls(monkeypatch):
    """Every syncfs and fsync the barrier makes, as ("syncfs", fd) / ("fsync", fd)."""
    seen: list[tuple[str, int]] = []
    real_fsync = durable.fsync_file

    def fsync(fd: int) -> None:
        seen.append(("fsync", fd))
        real_fsync(fd)

    def syncfs(fd: int) -> None:
        seen.append(("syncfs", fd))
        os.fsync(fd)  # (a stand-in that syncs what the test wrote)

    monkeypatch.setattr(durable, "fsync_file", fsync)
    monkeypatch.setattr(durable, "_SYNCFS", [syncfs])
    return seen


def _run(barrier: durable.Barrier, fds: list[int]) -> None:
    for f in barrier.start(fds):
        f.result()


def test_a_batch_is_one_syncfs_of_its_first_file(tmp_path, calls):
    fds = _files(tmp_path, 5)
    b = durable.Barrier()
    try:
        _run(b, fds)
        _run(b, fds[2:])
    finally:
        b.shutdown()
    assert calls == [("syncfs", fds[0]), ("syncfs", fds[2])]


def test_a_failed_syncfs_is_followed_by_each_files_fsync_and_ends_syncfs(tmp_path, calls, monkeypatch):
    """Another file's writeback error (syncfs reports the whole file system's): our files'
    own fsyncs pass, so the batch is durable and goes on; the operation stays file by file."""
    def failing(fd: int) -> None:
        calls.append(("syncfs", fd))
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(durable, "_SYNCFS", [failing])
    fds = _files(tmp_path, 3)
    b = durable.Barrier()
    try:
        _run(b, fds)
        _run(b, fds[:2])
    finally:
        b.shutdown()
    assert calls[0] == ("syncfs", fds[0])
    assert sorted(calls[1:4]) == sorted(("fsync", fd) for fd in fds)
    assert sorted(calls[4:]) == sorted(("fsync", fd) for fd in fds[:2])


def test_our_own_files_error_after_a_failed_syncfs_fails_the_batch(tmp_path, calls, monkeypatch):
    def failing(fd: int) -> None:
        raise OSError(28, "No space left on device")

    def fsync(fd: int) -> None:
        if fd == fds[1]:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable, "_SYNCFS", [failing])
    monkeypatch.setattr(durable, "fsync_file", fsync)
    fds = _files(tmp_path, 3)
    b = durable.Barrier()
    try:
        with pytest.raises(OSError, match="No space left"):
            _run(b, fds)
    finally:
        b.shutdown()


def test_a_slow_syncfs_ends_syncfs_for_the_operation(tmp_path, calls, monkeypatch):
    """Someone's big write on a shared file system: syncfs writes it too, every batch."""
    monkeypatch.setattr(durable, "SLOW_SYNCFS_S", 0.0)
    fds = _files(tmp_path, 3)
    b = durable.Barrier()
    try:
        _run(b, fds)
        _run(b, fds)
    finally:
        b.shutdown()
    assert calls[0] == ("syncfs", fds[0])
    assert sorted(calls[1:]) == sorted(("fsync", fd) for fd in fds)
    fresh = durable.Barrier()  # the next operation tries syncfs again
    try:
        _run(fresh, fds[:1])
    finally:
        fresh.shutdown()
    assert calls[-1] == ("syncfs", fds[0])


def test_without_syncfs_each_file_is_fsynced(tmp_path, calls, monkeypatch):
    monkeypatch.setattr(durable, "_SYNCFS", [None])
    fds = _files(tmp_path, 4)
    b = durable.Barrier()
    try:
        _run(b, fds)
        assert b.start([]) == []
    finally:
        b.shutdown()
    assert sorted(calls) == sorted(("fsync", fd) for fd in fds)


@pytest.mark.skipif(sys.platform != "linux", reason="syncfs(2) is Linux's")
def test_this_linux_has_a_working_syncfs(tmp_path):
    """The barrier's main way is the one CI runs: syncfs found (Linux >= 5.8) and it syncs."""
    call = durable._load_syncfs()
    assert call is not None, os.uname().release
    fds = _files(tmp_path, 2)
    call(fds[0])
    with pytest.raises(OSError):
        call(10_000)  # (not a descriptor: EBADF, raised as OSError)
    for fd in fds:
        os.close(fd)


@pytest.mark.parametrize("release,ok", [("5.8.0", True), ("6.18.44-fc", True), ("5.7.19", False),
                                        ("4.19.0-27-amd64", False), ("weird", False)])
def test_syncfs_only_where_it_reports_writeback_errors(monkeypatch, release, ok):
    """Before Linux 5.8 syncfs returned 0 after a writeback error: each file is fsynced there."""
    real = os.uname()
    fake = type(real)((real.sysname, real.nodename, release, real.version, real.machine))
    monkeypatch.setattr(os, "uname", lambda: fake)
    assert durable._kernel_reports_errors() is ok
