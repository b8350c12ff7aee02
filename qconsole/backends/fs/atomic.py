"""Atomic create/rename helpers that keep files readable by the queue's group.

New files get ``0o666 & ~umask`` (os.open applies the umask; mkstemp would force 0600) and
the group of the directory they land in, so consumers running as other users of the group
can read them. Renames that report ENOENT are re-checked: an NFS retransmit can make a
rename that succeeded answer ENOENT the second time.
"""

from __future__ import annotations

import errno
import os
import stat

from ...errors import MessageNotFoundError, QConsoleError

_CREATE = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def dir_gid(path: str) -> int:
    return os.stat(path).st_gid


def _fix_group(fd: int, gid: int | None) -> None:
    if gid is None:
        return
    if os.fstat(fd).st_gid != gid:
        try:
            os.fchown(fd, -1, gid)
        except OSError:  # not a member of that group: keep ours, the mode still honours umask
            pass


def create_exclusive(path: str, gid: int | None = None) -> int:
    """``open(O_CREAT|O_EXCL)`` with mode 0o666 (minus umask) and the directory's group."""
    fd = os.open(path, _CREATE, 0o666)
    try:
        _fix_group(fd, gid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_new(path: str, data: bytes, gid: int | None = None, *, sync: bool = True) -> None:
    """Create ``path`` exclusively, write ``data``, fsync; the file is removed on failure."""
    fd = create_exclusive(path, gid)
    try:
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quiet(path)
        raise
    os.close(fd)


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


def rename_checked(src: str, dst: str) -> bool:
    """Rename; False when ``src`` was gone (a live client got there first).

    After ENOENT the target is re-checked: if ``dst`` exists and ``src`` does not, the rename
    did happen (an NFS retransmit of a rename that succeeded reports ENOENT).
    """
    try:
        os.rename(src, dst)
        return True
    except FileNotFoundError:
        return os.path.lexists(dst) and not os.path.lexists(src)


def link_noclobber(src: str, dst: str) -> bool:
    """Move ``src`` to ``dst`` without ever replacing an existing ``dst`` (link, then unlink).

    False when ``dst`` exists and is another file; True when moved (or already moved).
    """
    try:
        os.link(src, dst)
    except FileExistsError:
        try:
            if os.path.samefile(src, dst):  # a previous attempt died between link and unlink
                _unlink_quiet(src)
                return True
        except OSError:
            pass
        return False
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # no hard links on this file system: fall back to a checked rename
        if os.path.lexists(dst):
            return False
        os.rename(src, dst)
        return True
    _unlink_quiet(src)
    return True


def _unlink_quiet(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


unlink_quiet = _unlink_quiet


def replace_file(path: str, data: bytes, tmp_name: str, *, mode: int | None = None) -> None:
    """Write ``data`` to ``tmp_name`` beside ``path``, fsync, rename over ``path``.

    A symlink at ``path`` is replaced, never written through. ``mode`` keeps an existing
    file's permission bits; new files honour the umask and the directory's group.
    """
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, tmp_name)
    fd = create_exclusive(tmp, dir_gid(directory))
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        _unlink_quiet(tmp)
        raise
    os.close(fd)
    try:
        os.rename(tmp, path)
    except BaseException:
        _unlink_quiet(tmp)
        raise


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
