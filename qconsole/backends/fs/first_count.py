"""A console's first counts, taken by a forked process while the console starts.

The console counts in a worker thread, and a threaded process must not fork, so its counts
cannot use what makes ``stats`` quick on a big root (several processes, a big queue parsed
beside its listing: :mod:`.parallel`, :mod:`.pipeline`). Forked *before* any thread starts
(before Textual is even imported, from the CLI), one process takes the one-shot count of the
big queues while the console starts; the root screen's first scan takes it instead of counting
them itself (the small ones it counts at once, as before). Later scans are the console's own.
Anything wrong with the child (it failed, died, or sent something that does not unpack) means
the console counts as before.
"""

from __future__ import annotations

import marshal
import os
import signal
import sys

from ...errors import QConsoleError
from ...model import QueueScan
from .parallel import _FIELDS, _MESSAGES_AT, dir_size

#: queues with at least this much directory data (st_size of their listings: some 15k ddmq or
#: 40k VSQS names) are counted by the child; smaller ones the console counts at once itself,
#: in well under 0.1 s, and waiting for a child would only delay them
BIG_BYTES = 1_000_000
#: processes the child counts with (a big queue: parsed beside its listing). Not judged by the
#: idle cores as `stats` does: at the fork the console itself is busy starting (for ~0.2 s), so
#: a core always looks taken, and one process took 1.5 s for 1M ddmq names against 0.8 s
_JOBS = 2

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .root import FileBackend


def _single_threaded() -> bool:
    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    return threading is None or threading.active_count() == 1


class FirstCount:
    """The counts of a root's big queues a forked child is taking (:meth:`start`); :meth:`take`
    waits for them once. ``names``: the queues it counts."""

    def __init__(self, pid: int, rfd: int, names: frozenset[str]) -> None:
        self.pid = pid
        self.rfd: int | None = rfd
        self.names = names

    @classmethod
    def start(cls, backend: FileBackend, now: float | None = None) -> FirstCount | None:
        """The child counting ``backend``'s big queues (at ``now``, else its own clock's time), or
        None where there is none, or forking is not safe or possible."""
        if not hasattr(os, "fork") or not _single_threaded():
            return None
        try:  # a stat per queue: a root of small queues forks nothing
            names, _ = backend.queue_names()
            big = [n for n in names if dir_size(backend.module.listing_dirs(backend.path, n)) >= BIG_BYTES]
        except (QConsoleError, OSError):
            return None  # the console says what is wrong with the root
        if not big:
            return None
        try:
            rfd, wfd = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(rfd)
            os.close(wfd)
            return None
        if pid == 0:  # pragma: no cover - the child's coverage is not collected
            code = 1
            try:
                os.close(rfd)
                scan = backend.scan(big, now=now, jobs=_JOBS)
                data = memoryview(marshal.dumps([[getattr(q, f) for f in _FIELDS] for q in scan.queues]))
                while data:
                    data = data[os.write(wfd, data):]
                code = 0
            finally:
                os._exit(code)  # neither the parent's exit handlers nor its buffers
        os.close(wfd)
        return cls(pid, rfd, frozenset(big))

    def take(self) -> dict[str, QueueScan] | None:
        """Every queue's counts by name, once (blocks until the child is done); None when the
        child failed or was already taken or closed."""
        rfd, self.rfd = self.rfd, None
        if rfd is None:
            return None
        with open(rfd, "rb") as pipe:
            data = pipe.read()
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return None
        if status != 0:
            return None
        at = _MESSAGES_AT
        try:
            rows = marshal.loads(data)
            scans = [QueueScan(*values[:at], None, *values[at:]) for values in rows]
        except (ValueError, EOFError, TypeError):
            return None
        return {s.name: s for s in scans if type(s.name) is str}

    def close(self) -> None:
        """Stop a child whose counts are no longer wanted (the console quit before its first scan)."""
        rfd, self.rfd = self.rfd, None
        if rfd is None:
            return
        os.close(rfd)
        try:
            os.kill(self.pid, signal.SIGTERM)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
