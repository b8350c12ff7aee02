"""Publishing many messages into one file queue, a batch at a time.

Published one by one, every message paid its own fsync (a journal commit each) and, on VSQS,
its own clash check: a listing of the whole queue, so ``publish -n 60000`` was quadratic (about
17 minutes, as long as vsqs's own publish loop takes). Here a batch's copies are

1. created and written under names no consumer takes (VSQS: the exclusive ``<id>.new`` of the
   publish protocol; ddmq: a qconsole temp file), left open;
2. checked together: the layout's ``check`` may re-place some (VSQS: one listing after every
   create of the batch is the clash check of all of them);
3. fsynced side by side by worker threads (they share the file system's journal commits);
4. renamed into place in order, each id counted as published the moment its rename lands.

A failure or ctrl+c takes back every copy of the batch not renamed yet (it was never a message);
what was renamed stays published and is reported. ctrl+c is held back (:class:`CtrlCHeld`)
between a copy's create and its place in the batch, and between its rename and its count: it
lands most often right after a system call returns, which left a ``.new`` nobody knew of, or a
published id the audit line missed (:mod:`.interrupts`; SIGTERM is taken as ctrl+c). A kill
leaves at most one batch of temp files, which ``recover`` removes with the VSQS ``.new`` names
linked to them (:class:`Copy`'s ``tmp``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import safety
from .interrupts import CtrlCHeld, TermAsCtrlC

#: copies per batch: one clash listing and one round of fsyncs each
PUBLISH_BATCH = 256
#: fsyncs in flight at once (as a transfer's barrier: concurrent fsyncs share journal commits)
SYNC_THREADS = 16


class Copy:
    """One message being published: ``name`` (written, not a message yet) becomes ``final``;
    ``id`` is what the caller reports; ``fd`` the open descriptor until the batch's fsync;
    ``item`` what it was made of (to place it again); ``tmp``: a qconsole temp file that is a
    second link of ``name`` (VSQS), dropped once it is published: until then a killed
    publisher's ``recover`` finds the ``.new`` through it (same inode) and removes both."""

    __slots__ = ("name", "final", "id", "fd", "item", "tmp")

    def __init__(self, name: str, final: str, mid: str, fd: int | None, item: Any, tmp: str | None = None) -> None:
        self.name, self.final, self.id, self.fd, self.item, self.tmp = name, final, mid, fd, item, tmp

    def close(self) -> None:
        fd, self.fd = self.fd, None  # cleared first: an interrupt between leaks, never double-closes
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


#: an item -> its Copy, written and open in the queue directory (removed again if writing failed)
Place = Callable[[Any], Copy]


def publish_batched(c: safety.Confined, queue_dir: str, items: Sequence[Any], place: Place,
                    done: list[str], *, check: Callable[[list[Copy]], None] | None = None,
                    tick: Callable[[int, int], None] | None = None, size: int = PUBLISH_BATCH) -> None:
    """Publish what ``place`` makes of each of ``items``, in order, appending each id to ``done`` as its rename lands (so a
    caller that is interrupted knows what was published)."""
    with TermAsCtrlC():
        _publish_batched(c, queue_dir, items, place, done, check, tick, size)


def _publish_batched(c: safety.Confined, queue_dir: str, items: Sequence[Any], place: Place, done: list[str],
                     check: Callable[[list[Copy]], None] | None, tick: Callable[[int, int], None] | None,
                     size: int) -> None:
    total = len(items)
    pool = ThreadPoolExecutor(SYNC_THREADS)
    try:
        for start in range(0, total, size):
            batch: list[Copy] = []
            renamed = 0
            try:
                for item in items[start:start + size]:
                    if tick is not None:
                        tick(start + len(batch), total)
                    with CtrlCHeld():
                        batch.append(place(item))
                if check is not None:
                    check(batch)
                # the barrier (raises the first error), ctrl+c held: raised inside the pool's own
                # machinery (a submit holding its idle semaphore's lock) it left that lock held,
                # every worker blocked on it and the take-back's shutdown(wait=True) hung for good
                with CtrlCHeld():
                    for _ in pool.map(os.fsync, [cp.fd for cp in batch]):
                        pass
                for cp in batch:
                    cp.close()
                for cp in batch:
                    src = os.path.join(queue_dir, cp.name)
                    with CtrlCHeld():
                        if not c.rename(src, os.path.join(queue_dir, cp.final)):
                            raise OSError(errno.ENOENT, "removed by someone else before it was published", src)
                        renamed += 1
                        done.append(cp.id)
                        if cp.tmp:  # (a kill before this leaves a second link of a live message: recover drops it)
                            c.unlink(os.path.join(queue_dir, cp.tmp))
            except BaseException:
                # a second ctrl+c (an operator presses it twice) is held until the take-back is
                # done: raised inside it, it left up to a batch of VSQS .new files that nothing
                # ever removes (race review); the exception on its way out says it all
                with CtrlCHeld(reraise=False):
                    pool.shutdown(wait=True)  # no fsync still running on a descriptor closed here
                    for cp in batch[renamed:]:  # written, never a message: taken back
                        cp.close()
                        c.unlink(os.path.join(queue_dir, cp.name))
                        if cp.tmp:
                            c.unlink(os.path.join(queue_dir, cp.tmp))
                raise
    finally:
        with CtrlCHeld():  # (the pool's own shutdown, as its barrier: never cut half-way)
            pool.shutdown(wait=True)
    if tick is not None:
        tick(total, total)


__all__ = ["Copy", "PUBLISH_BATCH", "publish_batched"]
