"""A big directory listed here and parsed in a forked process, chunk by chunk.

One huge queue cannot be split between processes by queue (:mod:`.parallel`), but its
listing (kernel ``getdents`` plus one Python object per entry) and its parse (the name
patterns, the counts) can run side by side: this process reads the listing in chunks and
writes each one, marshalled, down a pipe; a forked child parses them as they come and
sends back only its small result. Both hold one chunk at a time, so memory stays bounded,
and on two cores the count takes about as long as the listing alone.

Only for single-threaded callers (``stats``/``check``: see :mod:`.parallel`). A child that
fails, or a fork or pipe that is refused, gives ``None`` and the caller counts in-process.
"""

from __future__ import annotations

import marshal
import os
import struct

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

Chunk = tuple  # (list of names, set of the non-regular ones)
_LEN = struct.Struct("<Q")
#: a frame longer than this is not one we wrote: the child stops
MAX_FRAME = 1 << 30


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    while n:
        got = os.read(fd, min(n, 1 << 20))
        if not got:
            return None
        parts.append(got)
        n -= len(got)
    return b"".join(parts)


def _frames(fd: int) -> Iterator[Any]:
    """The values the parent sent, until it closes its end."""
    while True:
        head = _read_exact(fd, _LEN.size)
        if head is None:
            return
        (n,) = _LEN.unpack(head)
        if n > MAX_FRAME:
            raise ValueError("frame too long")
        body = _read_exact(fd, n)
        if body is None:
            raise EOFError("cut-off frame")
        yield marshal.loads(body)


def _chunks(frames: Iterator[Any]) -> Iterator[Chunk]:
    for names, irregular in frames:
        yield names, (frozenset(irregular) if irregular else frozenset())


def _grow_pipe(fd: int) -> None:
    """A 1 MiB pipe (Linux), so the lister rarely waits on the parser; harmless if refused."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError, ValueError):
        pass


def wanted(beside: bool | None) -> bool:
    """Whether to parse beside the listing: as asked, or (None) when a core is idle now."""
    if beside is None:
        from .parallel import spare_cpus

        return hasattr(os, "fork") and spare_cpus() > 1
    return beside


def _queued(fd: int) -> bool:
    """Whether the pipe still holds bytes the child has not read (Linux FIONREAD answers on
    the write end too); False when that cannot be known."""
    try:
        import fcntl
        import termios
        from array import array

        n = array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, n)
        return n[0] > 0
    except (OSError, ImportError, AttributeError, ValueError):
        return False


def parse_beside(chunks: Iterable[Chunk], parse: Callable[[Iterator[Chunk]], Any],
                 merge: Callable[[Any, Any], Any] | None = None) -> tuple[bool, Any]:
    """``(True, parse(chunks))`` with ``parse`` run in a forked child, or ``(False, None)`` when
    the child could not run or failed (the caller then counts in-process). ``parse``'s result
    must be marshallable. An error while listing (an OSError from ``chunks``) is raised here.

    With ``merge`` (two results of ``parse`` into the one of both chunk sets), this process
    also parses: a chunk listed while the child has not yet taken the previous one is parsed
    here instead of queued. When parsing is the slower half (ddmq's names), the two
    processes share it as their speeds allow, found out by the pipe's back-pressure, not
    guessed; when listing is (a network file system), the child takes every chunk."""
    if not hasattr(os, "fork"):
        return False, None
    try:
        feed_r, feed_w = os.pipe()
    except OSError:
        return False, None
    try:
        back_r, back_w = os.pipe()
    except OSError:
        os.close(feed_r)
        os.close(feed_w)
        return False, None
    try:
        pid = os.fork()
    except OSError:
        for fd in (feed_r, feed_w, back_r, back_w):
            os.close(fd)
        return False, None
    if pid == 0:  # the child: parse what comes, answer, leave without the parent's exit handlers
        code = 1
        try:
            os.close(feed_w)
            os.close(back_r)
            data = marshal.dumps(parse(_chunks(_frames(feed_r))))
            _write_all(back_w, data)
            code = 0
        finally:
            os._exit(code)
    os.close(feed_r)
    os.close(back_w)
    _grow_pipe(feed_w)
    fed = True
    chunks = iter(chunks)  # one pass, whichever loop below takes a chunk

    def feed() -> Iterator[Chunk]:
        """The chunks this process keeps (with ``merge``); every other one goes to the child."""
        nonlocal fed
        for names, irregular in chunks:
            if merge is not None and _queued(feed_w):  # the child is behind: this one is ours
                yield names, irregular
                continue
            frame = marshal.dumps((names, list(irregular)))
            try:
                _write_all(feed_w, _LEN.pack(len(frame)) + frame)
            except BrokenPipeError:  # the child is gone: the caller counts in-process
                fed = False
                return

    mine = None
    try:
        if merge is not None:
            mine = parse(feed())
            for _ in feed():  # a parse that stopped before the end: not a whole count, so none
                fed = False
        else:
            for _ in feed():
                pass
    except BaseException:
        os.close(feed_w)
        os.close(back_r)
        os.waitpid(pid, 0)
        raise
    os.close(feed_w)
    with open(back_r, "rb") as pipe:  # closes back_r
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not fed or status != 0:
        return False, None
    try:
        theirs = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return False, None
    return True, (theirs if merge is None else merge(mine, theirs))
