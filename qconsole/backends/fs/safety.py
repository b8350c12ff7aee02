"""Every rule that protects data, in one place (DESIGN.md §6, issue 9).

Everything in a store is untrusted -- qconsole's own claims, journals, trash and audit log
included -- so every change qconsole makes to a file-system store goes through this module:

* **confinement**: a path is a root plus plain components (no ``..``, no absolute path, no
  separator or NUL inside a name); anything else raises :class:`UnsafePathError`;
* **no symlink followed**: every directory on the way is opened from the root with
  ``O_DIRECTORY|O_NOFOLLOW`` and the change is made relative to that descriptor
  (``rename``/``link``/``unlink``/``mkdir``/``open`` with ``dir_fd``), so a directory swapped
  for a link is refused, never followed; a symlink as the *last* component is acted on as a
  link (renamed, unlinked) and never opened;
* **safe opens**: files are opened ``O_NOFOLLOW|O_NONBLOCK`` and must be regular files of a
  bounded size before a byte is read (a FIFO cannot hang us, a 50 MB file cannot stall us);
* **names**: queue names, message names and relative paths are validated here;
* **YAML**: size-capped, safe loading with limits on aliases, depth and integer size.

Only this module calls ``os.rename``/``os.link``/``os.unlink``/``os.rmdir``/``os.mkdir`` or
opens files for writing; ``tests/unit/test_store_hygiene.py`` walks the code to keep it so.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import sys

from ...errors import QConsoleError, QueueNameError, SettingsError
from ...model import STATE_DIR

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
_CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW | _CLOEXEC

#: ddmq.yaml is a handful of keys: anything bigger is refused before it is parsed
MAX_YAML_BYTES = 1 << 20
MAX_YAML_ALIASES = 64
MAX_YAML_DEPTH = 32
MAX_YAML_INT_DIGITS = 64
#: nodes of the document with every alias expanded (what printing it would produce)
MAX_YAML_NODES = 10_000
#: qconsole's own JSON state (journals): bounded so a planted file cannot stall us
MAX_JOURNAL_BYTES = 64 << 10
#: digits of a VSQS id/deadline or a ddmq number beyond which a name is absurd (foreign):
#: 19 digits of nanoseconds reach the year 2286
MAX_NUMBER_DIGITS = 20
#: the largest priority a ddmq message may get (what publish accepts, what move/requeue write)
MAX_PRIORITY = 10 ** 18 - 1
NAME_MAX = 255


class UnsafePathError(QConsoleError):
    """A path that leaves the root, or a symlink/special file where qconsole would act."""


# --------------------------------------------------------------------------- names


def check_name(name: object, what: str = "name") -> str:
    """A plain directory-entry name: not empty, not ``.``/``..``, no ``/``, ``\\`` or NUL."""
    if not isinstance(name, str) or not name or name in (".", ".."):
        raise UnsafePathError(f"bad {what} {name!r}: not a plain name")
    if "/" in name or "\0" in name or "\\" in name:
        raise UnsafePathError(f"bad {what} {name!r}: a name holds no separator")
    # a character is at most 4 bytes (a lone surrogate 1): only a long name needs encoding
    if len(name) > NAME_MAX // 4 and len(name.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise UnsafePathError(f"bad {what}: longer than {NAME_MAX} bytes")
    return name


def check_names(names: list[str], what: str = "name") -> None:
    """:func:`check_name` of every name of a batch, as a few C-speed passes over their join
    (a call per name was ~10% of a 100k-message change); on any doubt each name is checked
    on its own, so the error names the first bad one."""
    try:
        wrapped = "/" + "/".join(names) + "/"
    except TypeError:  # a non-str among them
        wrapped = ""
    if not (wrapped.count("/") == len(names) + 1 and "//" not in wrapped  # no "/" inside, none empty
            and "/./" not in wrapped and "/../" not in wrapped
            and "\0" not in wrapped and "\\" not in wrapped
            and (not names or max(map(len, names)) <= NAME_MAX // 4)):
        for name in names:
            check_name(name, what)


def is_plain_name(name: object) -> bool:
    try:
        check_name(name)
    except UnsafePathError:
        return False
    return True


def validate_queue_name(name: str) -> str:
    """A plain queue name: no ``/``, no NUL, not ``.``/``..``, not a dot-directory."""
    if not name:
        raise QueueNameError("empty queue name")
    if "/" in name or "\0" in name or "\\" in name:
        raise QueueNameError(f"bad queue name {name!r}: a queue name is a plain name, without '/', '\\' or NUL")
    if name in (".", ".."):
        raise QueueNameError(f"bad queue name {name!r}")
    if name.startswith("."):
        raise QueueNameError(f"bad queue name {name!r}: dot-directories are never queues")
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX:
        raise QueueNameError(f"bad queue name: longer than {NAME_MAX} bytes")
    return name


def check_relpath(rel: object, *, subdirs: tuple[str, ...] = ("work",)) -> str:
    """A message's path inside its queue: ``NAME`` or ``SUB/NAME`` for a known ``SUB``."""
    if not isinstance(rel, str):
        raise UnsafePathError(f"bad message path {rel!r}")
    head, sep, tail = rel.partition("/")
    if sep:
        if head not in subdirs:
            raise UnsafePathError(f"bad message path {rel!r}")
        check_name(tail, "message name")
    else:
        check_name(head, "message name")
    return rel


def sane_number(digits: str) -> bool:
    """Digits a clock or a priority can produce (not a 25-digit id or a 30-digit deadline)."""
    return len(digits) <= MAX_NUMBER_DIGITS


def check_priority(value: object, what: str = "priority") -> int:
    """A ddmq priority as publish accepts it: an int (not a bool), 0..MAX_PRIORITY."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise QConsoleError(f"{what} must be a non-negative integer, got {_short(value)}")
    if value < 0 or value > MAX_PRIORITY:
        raise QConsoleError(f"{what} must be between 0 and {MAX_PRIORITY}, got {_short(value)}")
    return value


def check_duration(value: float, what: str = "duration") -> float:
    """A duration in seconds: finite and positive."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise QConsoleError(f"{what} must be a finite number of seconds above 0, got {_short(value)}")
    return float(value)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------- confinement


def _split(root: str, path: str) -> tuple[str, ...]:
    """The plain components of ``path`` below ``root`` (``path`` absolute or root-relative)."""
    if os.path.isabs(path):
        if path == root:
            return ()
        prefix = root.rstrip("/") + "/"
        if not path.startswith(prefix):
            raise UnsafePathError(f"{path}: outside the root {root}")
        path = path[len(prefix):]
    if not path:
        return ()
    parts = tuple(path.split("/"))
    for p in parts:
        check_name(p, "path component")
    return parts


def confine(root: str, *parts: str) -> str:
    """``root/parts...`` after checking every part is a plain name (nothing can climb out)."""
    for p in parts:
        check_name(p, "path component")
    return os.path.join(root, *parts)


def unlink_at(dirfd: int, name: str) -> bool:
    """Remove ``name`` (a link itself, never its target) from the directory open as ``dirfd``
    (one :meth:`Confined.at` gave); False when gone. For worker threads, which must not walk
    (a Confined's descriptor cache is its thread's)."""
    try:
        os.unlink(check_name(name), dir_fd=dirfd)
        return True
    except FileNotFoundError:
        return False


class Confined:
    """A root and the directory descriptors opened below it, never through a symlink.

    Paths given to the methods are absolute paths under the root (or root-relative); each
    directory on the way is opened ``O_NOFOLLOW`` from the root's descriptor and cached for
    the life of this object (one operation). Use as a context manager.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self._fds: dict[tuple[str, ...], int] = {}
        #: a parent directory's path -> its checked components (a bulk operation names the
        #: same queue directory for every message: split and checked once, not per message)
        self._parents: dict[str, tuple[str, ...]] = {}
        self._in_dirs: dict[tuple[str, int | None], InDir] = {}

    def __enter__(self) -> Confined:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._in_dirs = {}
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def forget(self, path: str) -> None:
        """Drop cached descriptors at and below ``path`` (after removing that directory)."""
        comps = _split(self.root, path)
        self._in_dirs = {}  # (their descriptors may be among those closed)
        for key in [k for k in self._fds if k[: len(comps)] == comps]:
            try:
                os.close(self._fds.pop(key))
            except OSError:
                pass

    # ------------------------------------------------------------------ walking

    def dirfd(self, comps: tuple[str, ...]) -> int:
        fd = self._fds.get(comps)
        if fd is not None:
            return fd
        if not comps:
            fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)  # the operator's root may be a link
        else:
            parent = self.dirfd(comps[:-1])
            try:
                fd = os.open(comps[-1], _DIR_FLAGS, dir_fd=parent)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    where = "/".join(comps)
                    raise UnsafePathError(f"{where}: a symlink or not a directory; not followed") from None
                raise
        self._fds[comps] = fd
        return fd

    def at(self, path: str) -> tuple[int, str]:
        """(descriptor of the parent directory, last name) of ``path``."""
        parent, sep, name = path.rpartition("/")
        if parent and name:  # <dir>/<name>: the directory's components once per operation
            comps = self._parents.get(parent)
            if comps is None:
                comps = self._parents[parent] = _split(self.root, parent)
            check_name(name, "path component")
            return self.dirfd(comps), name
        comps = _split(self.root, path)
        if not comps:
            raise UnsafePathError(f"{path}: the root itself")
        return self.dirfd(comps[:-1]), comps[-1]

    def dir(self, path: str) -> int:
        return self.dirfd(_split(self.root, path))

    def in_dir(self, path: str, gid: int | None = None) -> InDir:
        """The directory ``path`` for many files in it (:class:`InDir`), made once per operation."""
        d = self._in_dirs.get((path, gid))
        if d is None:
            d = self._in_dirs[(path, gid)] = InDir(self, path, gid)
        return d

    # ------------------------------------------------------------------ looking

    def lstat(self, path: str) -> os.stat_result | None:
        try:
            fd, name = self.at(path)
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def lexists(self, path: str) -> bool:
        return self.lstat(path) is not None

    def is_dir(self, path: str) -> bool:
        st = self.lstat(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_regular(self, path: str) -> bool:
        st = self.lstat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def listdir(self, path: str) -> list[str]:
        return os.listdir(self.dir(path))

    def listing(self, path: str) -> tuple[list[str], set[str]]:
        """:func:`.listing.listing` (the names, and those that are not regular files) of a
        directory opened through the root."""
        from .listing import listing

        return listing(self.dir(path))

    def entries(self, path: str) -> list[tuple[str, str]]:
        """(name, kind) of a directory's entries, kind ``file``/``dir``/``link``/``other``; no link followed."""
        out = []
        # the entry's own type from the listing (a stat only where the file system gives none)
        with os.scandir(self.dir(path)) as it:
            for e in it:
                try:
                    kind = ("link" if e.is_symlink() else "file" if e.is_file(follow_symlinks=False)
                            else "dir" if e.is_dir(follow_symlinks=False) else "other")
                except OSError:
                    continue
                out.append((e.name, kind))
        return out

    def fsync(self, path: str) -> None:
        """fsync a file below the root (opened read-only, never through a link)."""
        fd, name = self.at(path)
        f = os.open(name, _READ_FLAGS, dir_fd=fd)
        try:
            os.fsync(f)
        finally:
            os.close(f)

    def sync_dir(self, path: str) -> None:
        """fsync a directory below the root: the names made in it are durable."""
        os.fsync(self.dir(path))

    def dir_gid(self, path: str) -> int:
        return os.fstat(self.dir(path)).st_gid

    # ------------------------------------------------------------------ reading

    def read(self, path: str, limit: int | None = None, *, max_size: int | None = None,
             last: int | None = None) -> bytes:
        """A regular file's bytes (at most ``limit``; ``last``: its last so many); a link, FIFO
        or device is refused."""
        fd, name = self.at(path)
        try:
            f = os.open(name, _READ_FLAGS, dir_fd=fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UnsafePathError(f"{_rel(self.root, path)}: a symlink; not followed") from None
            raise
        try:
            return _read_fd(f, lambda: _rel(self.root, path), limit, max_size, last)  # named only in an error
        finally:
            os.close(f)

    # ------------------------------------------------------------------ changing

    def rename(self, src: str, dst: str) -> bool:
        """Rename (replacing ``dst`` as rename does); False when ``src`` was gone.

        After ENOENT the target is re-checked: an NFS retransmit of a rename that succeeded
        reports ENOENT although it happened.
        """
        sfd, sname = self.at(src)
        dfd, dname = self.at(dst)
        try:
            os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            return True
        except FileNotFoundError:
            return self.lexists(dst) and not self.lexists(src)

    def rename_noreplace(self, src: str, dst: str) -> bool:
        """Rename unless ``dst`` exists (checked first; the clients never create it meanwhile)."""
        if self.lexists(dst):
            raise FileExistsError(errno.EEXIST, "exists", _rel(self.root, dst))
        return self.rename(src, dst)

    def link(self, src: str, dst: str) -> None:
        """Hard-link ``src`` (itself, never what a link points to) as ``dst``; EEXIST raises."""
        sfd, sname = self.at(src)
        dfd, dname = self.at(dst)
        os.link(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd, follow_symlinks=False)

    def same_file(self, a: str, b: str) -> bool:
        sa, sb = self.lstat(a), self.lstat(b)
        return sa is not None and sb is not None and (sa.st_ino, sa.st_dev) == (sb.st_ino, sb.st_dev)

    def pair(self, src_dir: str, dst_dir: str) -> DirPair:
        """Two directories opened once, for moving many names from one to the other."""
        return DirPair(self.dir(src_dir), self.dir(dst_dir), self)

    def link_noclobber(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst`` without ever replacing a ``dst`` (link, then unlink).

        False when ``dst`` exists and is another file (or ``src`` is gone); True when moved,
        or already moved by an attempt that died between its link and its unlink.
        """
        try:
            self.link(src, dst)
        except FileExistsError:
            if self.same_file(src, dst):
                self.unlink(src)
                return True
            return False
        except FileNotFoundError:
            return False
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            # no hard links on this file system: a checked rename
            if self.lexists(dst):
                return False
            return self.rename(src, dst)
        self.unlink(src)
        return True

    def unlink(self, path: str) -> bool:
        """Remove a directory entry (a link itself, never its target); False when gone."""
        fd, name = self.at(path)
        try:
            os.unlink(name, dir_fd=fd)
            return True
        except FileNotFoundError:
            return False

    def rmdir(self, path: str) -> bool:
        """Remove an empty directory; False when gone or not empty."""
        fd, name = self.at(path)
        self.forget(path)
        try:
            os.rmdir(name, dir_fd=fd)
            return True
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise

    def mkdir(self, path: str, *, exist_ok: bool = False) -> None:
        fd, name = self.at(path)
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            if not exist_ok or not self.is_dir(path):
                raise

    def makedirs(self, path: str) -> None:
        comps = _split(self.root, path)
        for i in range(1, len(comps) + 1):
            self.mkdir(os.path.join(self.root, *comps[:i]), exist_ok=True)

    def create_exclusive(self, path: str, gid: int | None = None, mode: int = 0o666) -> int:
        """``O_CREAT|O_EXCL|O_NOFOLLOW`` (mode minus umask), with the directory's group."""
        fd, name = self.at(path)
        f = os.open(name, _CREATE_FLAGS, mode, dir_fd=fd)
        try:
            _fix_group(f, gid)
        except BaseException:
            os.close(f)
            raise
        return f

    def write_new(self, path: str, data: bytes, gid: int | None = None, *, sync: bool = True) -> None:
        """Create ``path`` exclusively, write, fsync; removed again on failure."""
        f = self.create_exclusive(path, gid)
        try:
            write_all(f, data)
            if sync:
                os.fsync(f)
        except BaseException:
            os.close(f)
            self.unlink(path)
            raise
        os.close(f)

    def replace_file(self, path: str, data: bytes, tmp_name: str, *, mode: int | None = None) -> None:
        """Write ``tmp_name`` beside ``path``, fsync, rename over ``path`` (a link there is
        replaced, never written through)."""
        check_name(tmp_name, "temp name")
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, tmp_name)
        f = self.create_exclusive(tmp, self.dir_gid(directory))
        try:
            if mode is not None:
                os.fchmod(f, mode)
            write_all(f, data)
            os.fsync(f)
        except BaseException:
            os.close(f)
            self.unlink(tmp)
            raise
        os.close(f)
        try:
            self.rename(tmp, path)
        except BaseException:
            self.unlink(tmp)
            raise

    def rmtree(self, path: str, removed: Callable[[], None] | None = None, *, max_depth: int = 8) -> None:
        """Remove a directory tree below the root; links inside are removed, never followed.
        ``removed()`` is called after each file (a progress line). A tree nested deeper than
        ``max_depth`` is refused before anything goes (a planted one of 3,000 levels was a
        RecursionError); qconsole's own trees are 3 deep."""
        order: list[tuple[str, list[str]]] = []  # (directory, its other entries), parents first
        todo = [(path, 0)]
        while todo:
            d, depth = todo.pop()
            others = []
            for name, kind in self.entries(d):
                if kind != "dir":
                    others.append(name)
                elif depth + 1 > max_depth:
                    raise QConsoleError(f"{_rel(self.root, path)}: nested deeper than {max_depth} directories; "
                                        "not removed")
                else:
                    todo.append((os.path.join(d, name), depth + 1))
            order.append((d, others))
        for d, others in reversed(order):  # children before their parents
            for name in others:
                self.unlink(os.path.join(d, name))
                if removed is not None:
                    removed()
            self.rmdir(d)


class InDir:
    """One directory of a :class:`Confined`, opened once, for a bulk change's many files in
    it (publish's copies, a batch's tmps and commit renames): each call is one system call on
    a plain name, not a walk of two paths, a join and a group check per file."""

    def __init__(self, c: Confined, path: str, gid: int | None = None) -> None:
        self.c, self.path = c, path
        self.fd = c.dir(path)
        self.gid = gid
        # a new file takes the directory's group when it is setgid, else ours: only then
        # does a file need its group looked at (the first one tells a grpid mount)
        st = os.fstat(self.fd)
        self._check_group = gid is not None and not (st.st_mode & stat.S_ISGID or os.getegid() == gid)

    def create(self, name: str, data: bytes) -> int:
        """``name`` created exclusively (``O_NOFOLLOW``, mode minus umask) and written; its
        descriptor, open for the caller's sync. Removed again if writing failed."""
        f = os.open(check_name(name), _CREATE_FLAGS, 0o666, dir_fd=self.fd)
        try:
            if self._check_group:
                if os.fstat(f).st_gid == self.gid:
                    self._check_group = False  # (the file system gives the directory's group)
                else:
                    _fix_group(f, self.gid)
            n = os.write(f, data)
            if n != len(data):
                write_all(f, data[n:])
        except BaseException:
            os.close(f)
            self.unlink(name)
            raise
        return f

    def rename(self, src: str, dst: str) -> bool:
        """:meth:`Confined.rename` within the directory (``dst`` replaced as rename does);
        False when ``src`` (a name :meth:`create` made) was gone."""
        try:
            os.rename(src, check_name(dst), src_dir_fd=self.fd, dst_dir_fd=self.fd)
            return True
        except FileNotFoundError:  # (an NFS retransmit of a rename that happened, as there)
            return self._lexists(dst) and not self._lexists(src)

    def unlink(self, name: str) -> bool:
        return unlink_at(self.fd, name)

    def read(self, name: str, max_size: int | None = None) -> bytes:
        """:meth:`Confined.read` of a file in the directory: a regular file's bytes (a link,
        FIFO or device refused, not opened); QConsoleError when larger than ``max_size``."""
        try:
            f = os.open(check_name(name), _READ_FLAGS, dir_fd=self.fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UnsafePathError(f"{_rel(self.c.root, os.path.join(self.path, name))}: a symlink; "
                                      "not followed") from None
            raise
        try:
            return _read_fd(f, lambda: _rel(self.c.root, os.path.join(self.path, name)), None, max_size)
        finally:
            os.close(f)

    def _lexists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False


class DirPair:
    """A source and a destination directory of one :class:`Confined` (opened once, never
    through a link): a bulk restore moves each name with one call instead of walking two
    paths per message."""

    def __init__(self, sfd: int, dfd: int, c: Confined) -> None:
        self.sfd, self.dfd, self.c = sfd, dfd, c

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(check_name(name), dir_fd=self.sfd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def dst_lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(check_name(name), dir_fd=self.dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def unlink(self, name: str) -> bool:
        """Remove a name of the source directory (a link itself, never its target)."""
        try:
            os.unlink(check_name(name), dir_fd=self.sfd)
            return True
        except FileNotFoundError:
            return False

    def rename(self, name: str, new_name: str) -> bool:
        """:meth:`Confined.rename` between the two directories (False: ``name`` was gone)."""
        try:
            os.rename(check_name(name), check_name(new_name), src_dir_fd=self.sfd, dst_dir_fd=self.dfd)
            return True
        except FileNotFoundError:  # an NFS retransmit of a rename that happened says ENOENT
            return self.dst_lstat(new_name) is not None and self.lstat(name) is None

    def rename_noreplace(self, name: str, new_name: str) -> bool:
        """Atomic rename that never replaces: ``renameat2(RENAME_NOREPLACE)`` (one call),
        else a check then a rename (the old way: a window the clients' own renames share).
        False when ``name`` was gone; FileExistsError when ``new_name`` exists."""
        check_name(name)
        check_name(new_name)
        err = _renameat2_noreplace(self.sfd, name, self.dfd, new_name)
        if err == 0:
            return True
        if err == errno.EEXIST:
            raise FileExistsError(errno.EEXIST, "exists", new_name)
        if err == errno.ENOENT:
            return self.dst_lstat(new_name) is not None and self.lstat(name) is None  # an NFS retransmit
        if err not in _NO_RENAMEAT2:
            raise OSError(err, os.strerror(err), name)
        if self.dst_lstat(new_name) is not None:
            raise FileExistsError(errno.EEXIST, "exists", new_name)
        return self.rename(name, new_name)

    # The batch forms below make one tight loop of a bulk change (100k messages). The names
    # are checked together; each returns one errno per name, in order (0: done). They stop
    # at the first error that is not a race (ENOENT: gone meanwhile; EEXIST: taken
    # meanwhile), leaving the rest NOT_TRIED. The caller takes every nonzero one through the
    # one-name method, which knows the races, NFS retransmits and fallbacks, and raises.

    def renames_noreplace(self, names: list[str], new_names: list[str],
                          tick: Callable[[int], None] | None = None) -> list[int]:
        """:meth:`rename_noreplace` of each ``names[i]`` to ``new_names[i]``."""
        check_names(names)
        check_names(new_names)
        found = _renameat2()
        if found is None:
            return _untried([], len(names))
        fn, get_errno = found
        sfd, dfd = self.sfd, self.dfd
        out: list[int] = []
        for name, new_name in zip(_encoded(names), _encoded(new_names)):
            if tick is not None and not len(out) & 1023:
                tick(len(out))
            if fn(sfd, name, dfd, new_name, 1) == 0:
                out.append(0)
                continue
            err = get_errno()
            if err not in _RACES:
                break
            out.append(err)
        return _untried(out, len(names))

    def lstats(self, names: list[str]) -> list[os.stat_result | None]:
        """:meth:`lstat` of each name of the source directory (None: gone)."""
        check_names(names)
        stat_, sfd = os.stat, self.sfd
        out: list[os.stat_result | None] = []
        for name in names:
            try:
                out.append(stat_(name, dir_fd=sfd, follow_symlinks=False))
            except FileNotFoundError:
                out.append(None)
        return out

    def renames(self, names: list[str], new_names: list[str],
                tick: Callable[[int], None] | None = None) -> list[int]:
        """``os.rename`` of each ``names[i]`` to ``new_names[i]`` (a new name that exists is
        replaced: for a destination only this batch writes, like a fresh trash directory)."""
        from functools import partial  # (not at import: stats never needs it)

        check_names(names)
        check_names(new_names)
        return _each(partial(os.rename, src_dir_fd=self.sfd, dst_dir_fd=self.dfd), zip(names, new_names),
                     len(names), tick)

    def unlinks(self, names: list[str], tick: Callable[[int], None] | None = None) -> list[int]:
        """:meth:`unlink` of each name of the source directory."""
        from functools import partial

        check_names(names)
        return _each(partial(os.unlink, dir_fd=self.sfd), zip(names), len(names), tick)

    def move_noclobber(self, name: str, new_name: str) -> bool:
        """:meth:`Confined.link_noclobber` between the two directories (link, then unlink:
        never over another file; on ext4 no slower than a cross-directory rename, which
        serialises on the file system's rename lock)."""
        check_name(name)
        check_name(new_name)
        try:
            os.link(name, new_name, src_dir_fd=self.sfd, dst_dir_fd=self.dfd, follow_symlinks=False)
        except FileExistsError:
            a, b = self.lstat(name), self.dst_lstat(new_name)
            if a is None or b is None or (a.st_ino, a.st_dev) != (b.st_ino, b.st_dev):
                return False
        except FileNotFoundError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if self.dst_lstat(new_name) is not None:  # no hard links here: a checked rename
                return False
            try:
                os.rename(name, new_name, src_dir_fd=self.sfd, dst_dir_fd=self.dfd)
                return True
            except FileNotFoundError:
                return False
        try:
            os.unlink(name, dir_fd=self.sfd)
        except FileNotFoundError:
            pass
        return True


#: a batch's errno for a name it did not try (see DirPair.renames_noreplace)
NOT_TRIED = -1
#: the errnos a batch goes on after: the name was taken or gone meanwhile (a race, not a fault)
_RACES = frozenset({errno.ENOENT, errno.EEXIST})


def rising(tick: Callable[[int], None] | None) -> Callable[[int], None]:
    """``tick`` called only with counts that never go back (a batch counts attempts, its
    one-by-one rest counts what is done: together they would step back)."""
    last = -1

    def up(done: int) -> None:
        nonlocal last
        if done > last and tick is not None:
            last = done
            tick(done)
    return up


def _each(call: Callable[..., Any], argss: Iterable[tuple[str, ...]], n: int,
          tick: Callable[[int], None] | None) -> list[int]:
    """The loop of a batch method whose ``call`` raises OSError (see DirPair.renames)."""
    out: list[int] = []
    for args in argss:
        if tick is not None and not len(out) & 1023:
            tick(len(out))
        try:
            call(*args)
        except OSError as err:
            if err.errno not in _RACES:
                break
            out.append(err.errno)
            continue
        out.append(0)
    return _untried(out, n)


def _untried(out: list[int], n: int) -> list[int]:
    out.extend([NOT_TRIED] * (n - len(out)))
    return out


#: errno meaning "no renameat2/RENAME_NOREPLACE here" (old kernel or libc, NFS, a filter)
_NO_RENAMEAT2 = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM})
_RENAMEAT2: Any = None  # None: not looked up yet; False: unavailable
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def _renameat2() -> Any:
    """libc's ``(renameat2, get_errno)``, or None where there is none (looked up once)."""
    global _RENAMEAT2
    if _RENAMEAT2 is None:
        try:
            import ctypes

            fn = ctypes.CDLL(None, use_errno=True).renameat2
            # no argtypes: every caller passes (int, bytes, int, bytes, int), which ctypes passes
            # as (int, char *, int, char *, int) by itself; converting through argtypes cost
            # ~0.4 µs a call (~40 ms of a 100k requeue)
            fn.restype = ctypes.c_int
            _RENAMEAT2 = (fn, ctypes.get_errno)
        except (OSError, AttributeError, ImportError):
            _RENAMEAT2 = False
    return _RENAMEAT2 or None


def _encoded(names: list[str]) -> list[bytes]:
    """Checked names (no ``/``, no NUL) as os.fsencode gives them, in one encode of their join:
    no UTF-8 sequence and no surrogateescape byte is a ``/``, so the join splits back exactly
    (in an encoding where it would not, each name is encoded on its own)."""
    if not names:
        return []
    out = "/".join(names).encode(_FS_ENCODING, _FS_ERRORS).split(b"/")
    return out if len(out) == len(names) else [n.encode(_FS_ENCODING, _FS_ERRORS) for n in names]


def _renameat2_noreplace(sfd: int, name: str, dfd: int, new_name: str) -> int:
    """0, or the errno of ``renameat2(sfd, name, dfd, new_name, RENAME_NOREPLACE)``."""
    found = _renameat2()
    if found is None:
        return errno.ENOSYS
    fn, get_errno = found
    # str.encode as os.fsencode does it, without its Python-level checks (a call per message)
    if fn(sfd, name.encode(_FS_ENCODING, _FS_ERRORS), dfd, new_name.encode(_FS_ENCODING, _FS_ERRORS), 1) == 0:
        return 0
    return get_errno()


def _rel(root: str, path: str) -> str:
    return os.path.relpath(path, root) if os.path.isabs(path) else path


def _fix_group(fd: int, gid: int | None) -> None:
    if gid is None:
        return
    if os.fstat(fd).st_gid != gid:
        try:
            os.fchown(fd, -1, gid)
        except OSError:  # not a member of that group: keep ours, the mode still honours umask
            pass


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_fd(fd: int, what: str | Callable[[], str], limit: int | None, max_size: int | None,
             last: int | None = None) -> bytes:
    """``last``: only the file's last so many bytes (a log's tail, whatever its size)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePathError(f"{what if isinstance(what, str) else what()}: not a regular file")
    if max_size is not None and st.st_size > max_size:
        raise QConsoleError(f"{what if isinstance(what, str) else what()}: {st.st_size} bytes, "
                            f"more than the {max_size} this file may have")
    want = st.st_size if limit is None else min(limit, st.st_size)
    if last is not None and st.st_size > last:
        os.lseek(fd, st.st_size - last, os.SEEK_SET)
        want = last
    chunks = []
    got = 0
    while got < want:
        chunk = os.read(fd, min(1 << 20, want - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# --------------------------------------------------------------------------- files named by the operator


def read_regular(path: str, *, limit: int | None = None, max_size: int | None = None, follow: bool = False,
                 what: str | None = None, last: int | None = None) -> bytes:
    """A regular file's bytes, opened ``O_NONBLOCK`` (``O_NOFOLLOW`` unless ``follow``)."""
    flags = _READ_FLAGS if not follow else (_READ_FLAGS & ~_NOFOLLOW)
    label = what or path
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafePathError(f"{label}: a symlink; not followed") from None
        raise
    try:
        return _read_fd(fd, label, limit, max_size, last)
    finally:
        os.close(fd)


def append_line(path: str, line: bytes, *, follow: bool = False, make_dirs: bool = False) -> None:
    """Append one line with a single ``O_APPEND`` write to a regular file (created 0666 - umask).

    Opened ``O_NONBLOCK`` (a FIFO there fails at once instead of blocking) and, unless
    ``follow``, ``O_NOFOLLOW``. ``make_dirs``: create the directory (the operator's own state
    directory, never a store)."""
    if make_dirs:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a symlink; not followed", path) from None
        if err.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a FIFO with no reader; not a log file", path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        write_all(fd, line)
    finally:
        os.close(fd)


def append_line_confined(root: str, path: str, line: bytes) -> None:
    """:func:`append_line` for a log inside the root: no directory on the way may be a link,
    the log is under the root's ``.qconsole/`` (a path in a queue names a message or a
    client's file), and it has no other hard link (one planted to a file outside the root)."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel.split(os.sep)[0] != STATE_DIR or rel == STATE_DIR:
        raise QConsoleError(f"{path} is inside the root but not under its {STATE_DIR}/; not written")
    with Confined(root) as c:
        directory = os.path.dirname(path)
        c.makedirs(directory)
        fd_dir, name = c.at(path)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NONBLOCK | _CLOEXEC | _NOFOLLOW
        try:
            fd = os.open(name, flags, 0o666, dir_fd=fd_dir)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "a symlink; not followed", path) from None
            if err.errno == errno.ENXIO:
                raise OSError(errno.ENXIO, "a FIFO with no reader; not a log file", path) from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            if st.st_nlink != 1:
                raise OSError(errno.EMLINK, "has other hard links (maybe outside the root); not written", path)
            write_all(fd, line)
        finally:
            os.close(fd)


def under(root: str, path: str) -> bool:
    """True when ``path`` is the root or below it (lexically)."""
    root = os.path.abspath(root).rstrip("/") + "/"
    return os.path.abspath(path).startswith(root)


# --------------------------------------------------------------------------- YAML


def load_yaml(data: bytes, what: str) -> Any:
    """Safe YAML with limits: at most MAX_YAML_ALIASES aliases, MAX_YAML_DEPTH levels of
    nesting and MAX_YAML_INT_DIGITS digits per integer; SettingsError (one line) otherwise."""
    import yaml

    if len(data) > MAX_YAML_BYTES:
        raise SettingsError(f"{what}: {len(data)} bytes; a settings file may have at most {MAX_YAML_BYTES}")
    loader = None
    try:
        loader = _limited_loader()(data)  # the reader checks the bytes here already
        return loader.get_single_data()
    except _YamlLimit as err:
        raise SettingsError(f"{what}: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = str(getattr(err, "problem", None) or err).replace("\n", " ")
        raise SettingsError(f"{what}: not valid YAML{where}: {problem}") from None
    except (RecursionError, ValueError, OverflowError, MemoryError) as err:
        raise SettingsError(f"{what}: not valid YAML: {err.__class__.__name__}") from None
    finally:
        if loader is not None:
            loader.dispose()


class _YamlLimit(Exception):
    pass


_LOADER: Any = None


def _limited_loader() -> Any:
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class LimitedLoader(yaml.SafeLoader):
        """SafeLoader that refuses alias bombs, deep nesting and huge integers."""

        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._aliases = 0
            self._depth = 0
            self._weights: dict[int, int] = {}
            self._keep: list[Any] = []

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self._aliases += 1
                if self._aliases > MAX_YAML_ALIASES:
                    raise _YamlLimit(f"more than {MAX_YAML_ALIASES} YAML aliases (refused: alias expansion)")
                # a node is weighed once composed: one named but not weighed yet is being composed,
                # so this alias lies inside it (`a: &a [*a]`, a list that holds itself)
                named = self.anchors.get(self.peek_event().anchor)
                if named is not None and id(named) not in self._weights:
                    raise _YamlLimit("a YAML alias inside the value it names (refused: a value that holds itself)")
            self._depth += 1
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimit(f"nested deeper than {MAX_YAML_DEPTH} levels (refused)")
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            # a few aliases can still double a node at every level: count the expanded size
            weights = self._weights
            w = weights.get(id(node))
            if w is None:
                if isinstance(node, yaml.SequenceNode):
                    w = 1 + sum(weights.get(id(n), 1) for n in node.value)
                elif isinstance(node, yaml.MappingNode):
                    w = 1 + sum(weights.get(id(k), 1) + weights.get(id(v), 1) for k, v in node.value)
                else:
                    w = 1
                weights[id(node)] = w
                self._keep.append(node)  # ids stay unique while the loader lives
            if w > MAX_YAML_NODES:
                raise _YamlLimit(f"more than {MAX_YAML_NODES} values with aliases expanded (refused: alias expansion)")
            return node

        def construct_yaml_int(self, node: Any) -> Any:
            # every digit of any base counts (0x.../0o.../0b..., YAML 1.1's 1:30:00): hex
            # letters are digits too, and int() of thousands of them raises past its own limit
            digits = sum(ch.isalnum() for ch in str(node.value))
            if digits > MAX_YAML_INT_DIGITS:
                raise _YamlLimit(f"an integer of {digits} digits (refused)")
            return super().construct_yaml_int(node)

    LimitedLoader.add_constructor("tag:yaml.org,2002:int", LimitedLoader.construct_yaml_int)
    _LOADER = LimitedLoader
    return _LOADER


def make_root_dir(path: str) -> None:
    """Create a new root directory (``create --layout`` on a path that does not exist yet)."""
    os.makedirs(path)
