"""A batch of just-written files made durable at once: the barrier of publish and transfers.

Each file fsynced on its own cost a write of its parent directory and a cache flush (ext4
without a journal: ``ext4_sync_parent``), or a journal commit shared by the fsyncs in flight:
16 threads reached ~9,000 files/s where writing them took ~26,000/s. ``syncfs(2)`` of the file
system holding the batch writes every dirty page and inode in one pass and flushes once:
~20,000/s. It is as durable (since Linux 5.8 it reports a writeback error that happened after
the descriptor it is given was opened: one opened before every file of the batch), but it also writes others'
dirty data, so:

* a syncfs that fails is followed by an fsync of each file of the batch, which tells ours
  from another file's error (ours raises), and the operation goes on one file at a time;
* a syncfs slower than :data:`SLOW_SYNCFS_S` (someone's big write on a shared file system)
  ends syncfs for the rest of the operation;
* without syncfs (not Linux, a kernel before 5.8, no libc symbol) each file is fsynced;
* so is each file on a file system not in :data:`SYNCFS_FS`: syncfs is as strong as each
  file's fsync only where the file system's own sync writes and flushes everything. On FUSE
  (JuiceFS, GlusterFS, mergerfs, sshfs, gocryptfs ...) it never reaches the daemon's fsync
  (no FUSE_FSYNC is sent: a publish was "durable" with its copies in the daemon's buffers);
  network and stacked file systems (NFS, CIFS, 9p, overlay) differ each in their own way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

#: fsyncs in flight at once, file by file (concurrent fsyncs share a journal's commits)
FSYNC_THREADS = 16
#: a syncfs taking longer than this is writing others' data: file by file from then on
SLOW_SYNCFS_S = 2.0
#: statfs(2) f_type of the local file systems whose syncfs makes every file as durable as its
#: own fsync and reports its writeback errors (tmpfs: nothing is durable, both are no-ops)
SYNCFS_FS = {0xEF53: "ext2/3/4", 0x58465342: "xfs", 0x9123683E: "btrfs", 0xF2F52010: "f2fs",
             0x01021994: "tmpfs"}


def fsync_file(fd: int) -> None:
    """One file's fsync (tests replace it to fail one)."""
    os.fsync(fd)


def _kernel_reports_errors() -> bool:
    """syncfs returned 0 after a writeback error before Linux 5.8."""
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except (ValueError, AttributeError):
        return False
    return (major, minor) >= (5, 8)


def _load_syncfs() -> Callable[[int], None] | None:
    if not hasattr(os, "uname") or os.uname().sysname != "Linux" or not _kernel_reports_errors():
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, ImportError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int

    def syncfs(fd: int) -> None:  # (ctypes drops the GIL for the call)
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return syncfs


_SYNCFS: list[Callable[[int], None] | None] = []
_FSTATFS: list[Callable[[int], int | None]] = []


def _load_fstatfs() -> Callable[[int], int | None]:
    """fd -> its file system's f_type (None: unknown). Read as the low 32 bits of the
    struct's first field, which only a little-endian machine has at offset 0 whatever its
    width (``long`` on most Linux ABIs, ``unsigned int`` on s390x)."""
    import sys

    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).fstatfs
    except (OSError, AttributeError, ImportError):
        return lambda fd: None
    if sys.byteorder != "little":
        return lambda fd: None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_int

    def fs_type(fd: int) -> int | None:
        buf = (ctypes.c_uint32 * 64)()  # (struct statfs is 120 bytes on 64-bit Linux)
        return buf[0] if fn(fd, buf) == 0 else None

    return fs_type


def fs_type(fd: int) -> int | None:
    """statfs(2)'s f_type of the file system holding ``fd`` (None: unknown)."""
    if not _FSTATFS:
        _FSTATFS.append(_load_fstatfs())
    return _FSTATFS[0](fd)


def syncfs_call() -> Callable[[int], None] | None:
    """The process's syncfs (None: there is none); looked up once."""
    if not _SYNCFS:
        _SYNCFS.append(_load_syncfs())
    return _SYNCFS[0]


class Barrier:
    """Start making a batch's open descriptors durable (:meth:`start`); the futures it returns
    raise what failed. One per operation: it remembers when syncfs stopped paying."""

    def __init__(self) -> None:
        self.syncfs = syncfs_call()
        self.pool = ThreadPoolExecutor(FSYNC_THREADS)

    def start(self, fds: Sequence[int], since: int | None = None) -> list[Future]:
        """Sync ``fds``: files just written in ONE directory (so on one file system), still
        open (the caller closes them once the futures are done). syncfs reports the errors
        since the descriptor it is given was opened: ``since``, one opened before every file
        of the batch (their directory's), else ``fds[0]``, which must then be the first
        opened (a copy placed again, with a new descriptor, must not come first: an error
        of the others that someone's syncfs saw before it was opened went unreported)."""
        first = fds[0] if since is None and fds else since
        if self.syncfs is not None and fds and fs_type(first) not in SYNCFS_FS:  # type: ignore[arg-type]
            self.syncfs = None  # (one directory per operation: so are the batches after)
        if self.syncfs is None:
            return [self.pool.submit(fsync_file, fd) for fd in fds]
        return [self.pool.submit(self._whole_fs, list(fds), first)] if fds else []

    def _whole_fs(self, fds: list[int], first: int) -> None:
        call = self.syncfs
        if call is None:  # (turned off by another batch meanwhile)
            for fd in fds:
                fsync_file(fd)
            return
        began = time.monotonic()
        try:
            call(first)  # errors since it was opened (or last synced)
        except OSError:
            self.syncfs = None  # someone's error or ours: each file says
            for fd in fds:
                fsync_file(fd)
            return
        if time.monotonic() - began > SLOW_SYNCFS_S:
            self.syncfs = None

    def shutdown(self, wait: bool = True) -> None:
        self.pool.shutdown(wait=wait)


__all__ = ["Barrier", "FSYNC_THREADS", "SLOW_SYNCFS_S", "SYNCFS_FS", "fs_type", "fsync_file", "syncfs_call"]
