"""Helpers both layouts share: listing a directory without following links or reading files."""

from __future__ import annotations

import errno
import gc
import os
from itertools import filterfalse, islice
from operator import attrgetter, methodcaller
from ...model import UNREADABLE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

#: qconsole's own transient files (publish temp files, requeue/move claims) start with this.
#: Neither client lists them: VSQS cannot int() them, ddmq's ``*.ddmq*`` glob never matches
#: (the names never contain ".ddmq"). A scan counts them as ``writing``.
QC_TEMP_PREFIX = ".qconsole-"

#: Errors listed per queue before the rest are summarised, so a queue of junk stays readable.
MAX_ERRORS = 20

#: a queue directory with at least this much directory data (st_size: ~100k VSQS names on
#: ext4) is counted from its listing in chunks of STREAM_CHUNK entries, in bounded memory.
#: Measured at 1M VSQS names (one process): 35 MB peak and 0.65x the CPU of holding the
#: whole listing (225 MB); parsed beside the listing (fs/pipeline.py) it takes about as
#: long as the listing alone.
STREAM_BYTES = 4_000_000
#: Chunks of 2,048 names (~200 KB of strings) stay in the CPU's caches between the listing and
#: the parse, and keep both processes of fs/pipeline.py busy to the end: measured on 1M names,
#: 16,384 took 1.20 s (ddmq) / 0.79 s (VSQS), 2,048 1.03 s / 0.67 s (1,024 and 4,096 within 4%).
STREAM_CHUNK = 2_048


#: the C reader of plain queues (_plain.c), when the install could build it; tests set this to
#: None to count the Python way
try:
    from . import _plain as plain_c
except ImportError:  # no C compiler at install time: the same counts, from Python
    plain_c = None
#: the directory size up to which the C reader takes a queue: any (it parses as it lists and
#: holds 8 bytes an id; a queue of more than 4M ids goes the exact way, which streams it)
PLAIN_C_BYTES = 1 << 62


def is_ascii_digits(s: str) -> bool:
    return s.isascii() and s.isdigit()


def all_ascii_digits(text: str) -> bool:
    """``text`` is only ASCII digits (and not empty): bytes.isdigit on the ASCII encoding is ~20x
    quicker than str.isdigit, which consults the Unicode tables per character."""
    try:
        return text.encode("ascii").isdigit()
    except UnicodeEncodeError:
        return False


def list_entries(path: str) -> Iterator[tuple[str, bool]]:
    """Yield ``(name, is_regular_file)`` from one directory listing.

    Uses the type the directory entry already carries (no stat per file on Linux/NFS);
    symlinks are never followed, so a link named like a message is not a regular file.
    """
    with os.scandir(path) as it:
        for entry in it:
            try:
                regular = entry.is_file(follow_symlinks=False)
            except OSError:
                regular = False
            yield entry.name, regular


_NAME = attrgetter("name")
_IS_FILE = methodcaller("is_file", follow_symlinks=False)


#: a queue directory (or ddmq's work/) is opened as itself: a symlink swapped in for it after the
#: root was listed fails (ELOOP) rather than being followed out of the root
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def open_dir(path: str) -> int:
    """A descriptor of the directory ``path`` itself; OSError(ELOOP) when it is a symlink (which
    O_DIRECTORY|O_NOFOLLOW reports as ENOTDIR, as for a file)."""
    try:
        return os.open(path, _DIR_FLAGS)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise OSError(errno.ELOOP, "a symlink, not followed", path) from None
        raise


def listing(path: str | int) -> tuple[list[str], set[str]]:
    """Every name in one directory listing, and the set of those that are not regular files.

    The bulk form of :func:`list_entries` for counting: the per-entry work runs in C
    (map/filter over DirEntry objects), which is what keeps a 200k-message scan near
    ``find``'s speed. The type comes from the directory entry (no stat); links are not followed,
    the directory's own last component included (``path`` may also be an open directory's fd).
    """
    fd = path if isinstance(path, int) else open_dir(path)
    try:
        with os.scandir(fd) as it:
            entries = list(it)
    finally:
        if fd is not path:
            os.close(fd)
    return list(map(_NAME, entries)), set(map(_NAME, filterfalse(_IS_FILE, entries)))


#: what :func:`names_only` returns for "no entry here is anything but a regular file (by name)"
NO_IRREGULAR: frozenset[str] = frozenset()


def names_only(path: str, subdirs: int = 0, nlink: int | None = None) -> tuple[list[str], frozenset[str] | set[str]]:
    """The names of one directory listing, for counting: ``os.listdir``, no type per entry.

    Counting goes by names alone (DESIGN.md §2), as the clients do. DirEntry objects cost
    about 30 ms per 100k names more than ``os.listdir``, i.e. most of what separates a scan
    from ``find``. Sub-directories named like messages are still caught, for free: each adds
    a link to the directory, so a link count other than ``2 + subdirs`` (the expected ones,
    e.g. ddmq's ``work/``; 1 where a file system does not count links) falls back to
    :func:`listing`. FIFOs, sockets and symlinks named like messages are counted by their
    names here; :func:`listing` (``--check-types``, and every path that lists messages)
    flags them. ``nlink``: the directory's link count when the caller has just stat'ed it.
    """
    fd = open_dir(path)  # (as listing: the directory itself is no symlink)
    try:
        if (os.fstat(fd).st_nlink if nlink is None else nlink) == 2 + subdirs:
            return os.listdir(fd), NO_IRREGULAR
        return listing(fd)
    finally:
        os.close(fd)


def listing_chunks(path: str, typed: bool, size: int | None = None,
                   first: int | None = None) -> Iterator[tuple[list[str], frozenset[str] | set[str]]]:
    """One directory listing in chunks of ``size`` names (``STREAM_CHUNK``; the first one of
    ``first`` names when given), with the set of those that are not regular files when ``typed``
    (from the entry, no stat): a huge queue counted in bounded memory. The listing runs over a
    descriptor, so no path string is built per entry."""
    full = size or STREAM_CHUNK
    size = first or full
    fd = open_dir(path)
    try:
        with os.scandir(fd) as it:
            while True:
                entries = list(islice(it, size))
                size = full
                if not entries:
                    return
                names = list(map(_NAME, entries))
                irregular = set(map(_NAME, filterfalse(_IS_FILE, entries))) if typed else NO_IRREGULAR
                del entries
                yield names, irregular
    finally:
        os.close(fd)


def gc_paused(func: F) -> F:
    """Pause the cyclic GC while a scan allocates its many small, acyclic objects.

    A 100k-name listing otherwise triggers dozens of collections that find nothing; pausing
    makes a big scan ~15% faster. It is re-enabled only if it was on (nested/threaded scans).
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        was_on = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()

    # what functools.wraps copies, without importing functools (and collections: ~2.5 ms of
    # every start, on the stats path)
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(wrapper, attr, getattr(func, attr))
    wrapper.__dict__.update(func.__dict__)
    wrapper.__wrapped__ = func  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


class ErrorList:
    """Collects per-queue error lines, capped at MAX_ERRORS with a summary line."""

    __slots__ = ("lines", "dropped")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(self.lines) < MAX_ERRORS:
            self.lines.append(line)
        else:
            self.dropped += 1

    def result(self) -> list[str]:
        if self.dropped:
            return self.lines + [f"... and {self.dropped} more"]
        return list(self.lines)


def os_error_line(err: OSError, what: str) -> str:
    reason = err.strerror or err.__class__.__name__
    return f"{UNREADABLE}{what}: {reason}"
