"""Publishing many messages into one file queue, a batch at a time.

Published one by one, every message paid its own fsync (a journal commit each) and, on VSQS,
its own clash check: a listing of the whole queue, so ``publish -n 60000`` was quadratic (about
17 minutes, as long as vsqs's own publish loop takes). Here a batch's copies are

1. created and written under names no consumer takes (VSQS: the exclusive ``<id>.new`` of the
   publish protocol; ddmq: a qconsole temp file), left open;
2. checked together: the layout's ``check`` may re-place some (VSQS: one listing after every
   create of the batch is the clash check of all of them);
3. made durable together (:class:`.durable.Barrier`: one syncfs of their file system, or an
   fsync of each by worker threads);
4. renamed into place in order, each id counted as published the moment its rename lands;
   the directory fsynced once the batch is renamed.

A failure or ctrl+c takes back every copy of the batch not renamed yet (it was never a message);
what was renamed stays published and is reported. ctrl+c is held back (:class:`CtrlCHeld`) for
the batch and acted on before its next copy or its barrier (from the barrier on, once the batch
is published): it lands most often right after a system call returns, which left a ``.new``
nobody knew of, or a published id the audit line missed (:mod:`.interrupts`; SIGTERM is taken
as ctrl+c). A kill
leaves at most one batch of temp files, which ``recover`` removes with the VSQS ``.new`` names
linked to them (:class:`Copy`'s ``tmp``).
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

from . import safety
from .durable import Barrier
from .interrupts import CtrlCHeld, TermAsCtrlC

#: copies per batch: one clash listing and one round of fsyncs each
PUBLISH_BATCH = 256


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
    d = c.in_dir(queue_dir)
    barrier = Barrier()
    try:
        for start in range(0, total, size):
            batch: list[Copy] = []
            renamed = 0
            try:
                # ctrl+c held for the whole batch (system calls, and the barrier): raised
                # between a copy's create and its place in the batch it left a file nobody
                # knew of, between a rename and its count a published id the audit line
                # missed, inside the pool's own machinery (a submit holding its idle
                # semaphore's lock) every worker blocked and the take-back's shutdown hung.
                # One held stops the batch at the next copy or before its barrier (it ran the
                # whole batch: 256 copies of 4 MB written, synced and published, 6 s after a
                # ctrl+c at the first one)
                held = CtrlCHeld()
                with held:
                    for item in items[start:start + size]:
                        if _stopping(held):
                            break
                        if tick is not None:
                            tick(start + len(batch), total)
                        batch.append(place(item))
                    if not _stopping(held) and check is not None:
                        check(batch)
                    if not _stopping(held):  # (one that comes from here on: the batch is published whole, then raised)
                        # since the directory's descriptor: opened before every copy (the
                        # first copy's may be newer than the others': placed again by check)
                        for f in barrier.start([cp.fd for cp in batch if cp.fd is not None], since=d.fd):
                            f.result()  # (raises the first error)
                        for cp in batch:
                            cp.close()
                        for cp in batch:
                            if not d.rename(cp.name, cp.final):
                                raise OSError(errno.ENOENT, "removed by someone else before it was published",
                                              os.path.join(queue_dir, cp.name))
                            renamed += 1
                            done.append(cp.id)
                            if cp.tmp:  # (a kill before this leaves a second link of a live message: recover drops it)
                                d.unlink(cp.tmp)
                        # the renames durable: cut off before its directory reached the disk, a
                        # published batch came back as temp files (ddmq) or <id>.new files
                        # (VSQS) that recover removes as a dead publisher's
                        os.fsync(d.fd)
                # (a ctrl+c held is raised as the hold ends: what was not renamed is taken back)
            except BaseException:
                # a second ctrl+c (an operator presses it twice) is held until the take-back is
                # done: raised inside it, it left up to a batch of VSQS .new files that nothing
                # ever removes (race review); the exception on its way out says it all
                with CtrlCHeld(reraise=False):
                    barrier.shutdown(wait=True)  # no sync still running on a descriptor closed here
                    for cp in batch[renamed:]:  # written, never a message: taken back
                        cp.close()
                        d.unlink(cp.name)
                        if cp.tmp:
                            d.unlink(cp.tmp)
                raise
    finally:
        with CtrlCHeld():  # (the pool's own shutdown, as its barrier: never cut half-way)
            barrier.shutdown(wait=True)
    if tick is not None:
        tick(total, total)


def _stopping(held: CtrlCHeld) -> bool:
    """A ctrl+c (or SIGTERM taken as one) is held that ``held`` raises as it ends: Python's own
    handler or none (another handler may ignore it: then the batch goes on as if none came)."""
    return held.got_term or (held.got and held.prev in (signal.default_int_handler, signal.SIG_DFL))


__all__ = ["Copy", "PUBLISH_BATCH", "publish_batched"]
