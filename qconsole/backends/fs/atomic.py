"""Read-only helpers for message files (every change to a store is in :mod:`.safety`).

Kept as the reading half of the former atomic helpers: ``read_file_bytes`` for the report's
inventory, ``dir_gid``/``write_all`` for callers of the old names.
"""

from __future__ import annotations

import errno
import os
import stat

from ...errors import MessageNotFoundError, QConsoleError

def dir_gid(path: str) -> int:
    return os.stat(path).st_gid


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_all(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_file_bytes(path: str, limit: int | None) -> tuple[bytes, int]:
    """Up to ``limit`` bytes (all when None) of a regular file, and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise MessageNotFoundError(f"{os.path.basename(path)}: gone (consumed or moved meanwhile)") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise QConsoleError(f"{os.path.basename(path)}: is a symlink, not followed") from None
        raise QConsoleError(f"{os.path.basename(path)}: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise QConsoleError(f"{os.path.basename(path)}: not a regular file")
        want = st.st_size if limit is None else min(limit, st.st_size)
        chunks = []
        got = 0
        while got < want:
            chunk = os.read(fd, min(1 << 20, want - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)
