"""VSQS writes: the publish protocol of vsqs 0.3, requeue by rename, and transfer placement."""

from __future__ import annotations

import errno
import os
import time
from itertools import repeat

from ...timeunits import MICRO, MILLI
from ..fs.claims import Placement, write_tmp
from ..fs import safety
from ..results import ALREADY_READY, CHANGED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

CLOCKS = {"us": MICRO, "ms": MILLI}
#: link() errors of a file system without hard links (publish then creates <id>.new itself)
NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV)


def divisor_for(clock: str | None, seen: float | None) -> float:
    """The queue's own unit when it has messages; µs (what vsqs 0.3 writes) when empty."""
    if clock:
        return CLOCKS[clock]
    return seen or MICRO


def _now_id(divisor: float) -> str:
    ns = time.time_ns()
    return str(ns // 1000) if divisor == MICRO else str(ns // 1_000_000)


def _wait_next_tick(divisor: float) -> None:
    time.sleep(1.0 / divisor)


def publish(c: safety.Confined, queue_dir: str, payloads: Sequence[bytes], divisor: float, gid: int,
            done: list[str], tick: Callable[[int, int], None] | None = None) -> None:
    """vsqs 0.3's protocol, a batch at a time (:mod:`..fs.publish_batches`): each message
    written to a qconsole temp file linked as an exclusive ``<id>.new`` (the O_EXCL create;
    ids rising, as :class:`IdClock` gives them; without hard links, created itself); one listing
    after every create of the batch is the clash check of them all (no other ``<id>.*``); the
    batch fsynced; each renamed to ``<id>``. ``done`` gets each id as its rename lands."""
    from ..fs.claims import new_token
    from ..fs.interrupts import CtrlCHeld
    from ..fs.publish_batches import Copy, publish_batched

    ids = IdClock(divisor)
    links = True  # (False: no hard links on this file system, the plain exclusive create)

    def place(payload: bytes) -> Copy:
        # a kill leaves the temp file, through which recover finds the .new
        nonlocal links
        data = bytes(payload)
        if links:
            try:
                tmp, fd, mid = write_linked(c, queue_dir, ids, data, new_token(), gid)
                return Copy(mid + ".new", mid, mid, fd, data, tmp)
            except OSError as err:
                if err.errno not in NO_LINKS:
                    raise
                links = False
        while True:
            mid = ids.next()
            new = os.path.join(queue_dir, mid + ".new")
            try:
                fd = c.create_exclusive(new, gid)
            except FileExistsError:  # another publisher's id: the next one
                continue
            try:
                safety.write_all(fd, data)
            except BaseException:
                os.close(fd)
                c.unlink(new)
                raise
            return Copy(mid + ".new", mid, mid, fd, data)

    def check(batch: list[Copy]) -> None:
        todo = batch
        while todo:
            heads = _heads(c, queue_dir)
            todo = [cp for cp in todo if heads.get(cp.id, 0) > 1]  # our .new is one name of its id
            for cp in todo:
                with CtrlCHeld():  # the new name known to the batch before ctrl+c can land
                    if cp.tmp:  # the same copy under a new id
                        c.unlink(os.path.join(queue_dir, cp.name))
                        mid = link_new(c, queue_dir, ids, os.path.join(queue_dir, cp.tmp))
                        cp.name, cp.final, cp.id = mid + ".new", mid, mid
                    else:
                        cp.close()
                        c.unlink(os.path.join(queue_dir, cp.name))
                        again = place(cp.item)
                        cp.name, cp.final, cp.id, cp.fd = again.name, again.final, again.id, again.fd

    publish_batched(c, queue_dir, payloads, place, done, check=check, tick=tick)


def write_linked(c: safety.Confined, queue_dir: str, ids: IdClock, data: bytes, token: str,
                 gid: int) -> tuple[str, int, str]:
    """``data`` written to a qconsole temp file (of ``token``) linked as an exclusive
    ``<id>.new``: (the temp file's name, its open descriptor, the id); nothing left on failure."""
    tmp, fd = write_tmp(c, queue_dir, data, token, gid)
    try:
        return tmp, fd, link_new(c, queue_dir, ids, os.path.join(queue_dir, tmp))
    except BaseException:
        os.close(fd)
        c.unlink(os.path.join(queue_dir, tmp))
        raise


def link_new(c: safety.Confined, queue_dir: str, ids: IdClock, tmp_path: str) -> str:
    """Link ``tmp_path`` as an exclusive ``<id>.new`` (link fails EEXIST: the publish
    protocol's O_EXCL create) under the next free id of ``ids``; that id."""
    while True:
        mid = ids.next()
        try:
            c.link(tmp_path, os.path.join(queue_dir, mid + ".new"))
            return mid
        except FileExistsError:  # another publisher's id: the next one
            continue


def _heads(c: safety.Confined, queue_dir: str) -> dict[str, int]:
    """Id -> how many names of the queue directory carry it (``<id>``, ``<id>.<anything>``)."""
    heads: dict[str, int] = {}
    for name in c.listdir(queue_dir):
        head = name.partition(".")[0]
        heads[head] = heads.get(head, 0) + 1
    return heads


class IdClock:
    """Message ids that rise strictly: at most ``AHEAD`` ticks ahead of the clock (µs ids,
    where a batch outruns the clock) or never ahead (ms ids, a thousand times coarser)."""

    AHEAD = {MICRO: 1000, MILLI: 0}

    def __init__(self, divisor: float) -> None:
        self.divisor, self.last = divisor, 0
        self.ahead = self.AHEAD.get(divisor, 0)

    def next(self) -> str:
        while True:
            now = int(_now_id(self.divisor))
            mid = max(now, self.last + 1)
            if mid - now <= self.ahead:
                self.last = mid
                return str(mid)
            _wait_next_tick(self.divisor)


class Placer:
    """Copies transferred into a VSQS queue, a batch at a time (:class:`..fs.batches.BatchWriter`).

    Each copy is a tmp file hard-linked to an exclusive ``<id>.new`` (the publish protocol's
    create: link fails EEXIST); the protocol's clash check -- a listing after the create, no
    other ``<id>.*`` may exist -- is made once per batch by :meth:`check`, after every create
    of the batch. Ids come from an :class:`IdClock`.
    """

    def __init__(self, c: safety.Confined, queue_dir: str, divisor: float, gid: int) -> None:
        self.c, self.dir, self.divisor, self.gid = c, queue_dir, divisor, gid
        self.ids = IdClock(divisor)

    def prepare(self, data: bytes, token: str) -> tuple[Placement, int]:
        tmp, fd, mid = write_linked(self.c, self.dir, self.ids, data, token, self.gid)
        return Placement(self.dir, mid + ".new", mid, tmp), fd

    def check(self, entries: list) -> None:
        """The clash check of every ``<id>.new`` of a batch: one listing after all creates;
        a clashing one is dropped and linked again under a new id (then listed again)."""
        todo = entries
        while todo:
            heads = _heads(self.c, self.dir)
            # our own <id>.new is one name of its id: any other makes a clash
            clashing = [e for e in todo if heads.get(e.placement.final, 0) > 1]
            for e in clashing:
                p = e.placement
                self.c.unlink(os.path.join(self.dir, p.commit_from))
                mid = link_new(self.c, self.dir, self.ids, os.path.join(self.dir, p.tmp))
                p.commit_from, p.final = mid + ".new", mid
            todo = clashing


def live_names(c: safety.Confined, queue_dir: str, ids: set[str],
               names: list[str] | None = None) -> dict[str, list[str]]:
    """Id -> every name of the queue directory under that id (``<id>``, ``<id>.<anything>``),
    for the ids of one bulk requeue: one listing for the batch, not one per message
    (``names``: that listing, made already)."""
    out: dict[str, list[str]] = {}
    for name in c.listdir(queue_dir) if names is None else names:
        head = name.partition(".")[0]
        if head in ids:
            out.setdefault(head, []).append(name)
    return out


def requeue_many(c: safety.Confined, queue_dir: str, mids: list[str], rels: list[str],
                 tick: Callable[[int], None] | None = None, names: list[str] | None = None,
                 sole: bool = False) -> list[str | None]:
    """:func:`requeue` of every id ``mids[i]`` held as ``rels[i]`` (a bulk requeue's columns);
    the reasons, in order.

    One listing first (``names``: the one the caller picked the messages from, through ``c``):
    an id held under this one name (nearly all) goes back by one batch of no-replace
    renames, with no Python per message beyond the call. The others (an id under two names,
    a name gone or taken since the listing, no renameat2) go through :func:`requeue` against
    that listing, as before. ``sole``: the caller found each ``rels[i]``, an ``<id>.<deadline>``
    of ``mids[i]``, to be that id's only entry in ``names`` (:func:`.layout.held_by_state`), so
    they are not counted again here.
    """
    from itertools import compress
    from operator import contains, eq, itemgetter

    if names is None:
        names = c.listdir(queue_dir)
    pair = c.pair(queue_dir, queue_dir)  # the queue directory opened once for every rename
    tick = safety.rising(tick)
    n = len(mids)
    one: list[int] | range = range(n)  # the ids under one name that is <id>.<something>
    if not sole:
        from collections import Counter

        # how many names each id has, counted in C (~0.1 s of Python per 100k names otherwise)
        heads = Counter(map(itemgetter(0), map(str.partition, names, repeat("."))))
        # tested column-wise in C; usually all of them (a requeue pass of a listing: three
        # C-level passes, no index list)
        heads_of_rels = list(map(itemgetter(0), map(str.partition, rels, repeat("."))))
        once = list(map(eq, map(heads.get, mids), repeat(1)))  # (operator.eq: 1 .__eq__(None) is truthy)
        if not (all(once) and heads_of_rels == mids and all(map(contains, rels, repeat(".")))):
            one = list(compress(range(n), map(all, zip(once, map(eq, mids, heads_of_rels),
                                                       map(contains, rels, repeat("."))))))
    if len(one) == n:
        errs = pair.renames_noreplace(rels, mids, tick)
    else:
        errs = pair.renames_noreplace(list(map(rels.__getitem__, one)), list(map(mids.__getitem__, one)), tick)
    todo = set(compress(one, errs))  # a nonzero errno, or not in the batch: the one-name way
    if len(one) != n:
        todo.update(set(range(n)).difference(one))
    reasons: list[str | None] = [None] * n
    if todo:
        live = live_names(c, queue_dir, set(map(mids.__getitem__, todo)), names)
        for j, i in enumerate(sorted(todo)):
            tick(n - len(todo) + j)  # (no renameat2 here: every message comes this way)
            reasons[i] = requeue(c, queue_dir, mids[i], rels[i], live, pair)
    tick(n)
    return reasons


def requeue(c: safety.Confined, queue_dir: str, mid: str, relpath: str,
            live: dict[str, list[str]] | None = None, pair: safety.DirPair | None = None) -> str | None:
    """Rename ``<id>.<deadline>`` back to ``<id>``; None when done, else the skip reason.

    Never over another file: when the id is live under another name already (``<id>``, or a
    second ``<id>.<deadline>``), the message is left as it is. ``live``: :func:`live_names`
    of the batch (kept up to date here); the ready name is still checked at the rename (one
    atomic no-replace rename with ``pair``, the queue directory opened once; else a check
    right before it), since a consumer may have requeued the message itself since that listing.
    """
    if "." not in relpath:
        return ALREADY_READY
    safety.check_relpath(relpath, subdirs=())
    if live is None:
        names = [n for n in c.listdir(queue_dir) if n == mid or n.startswith(mid + ".")]
    else:
        names = live.get(mid, ())
        if pair is None and mid not in names and c.lexists(os.path.join(queue_dir, mid)):
            names = [*names, mid]
    others = [n for n in names if n != relpath]
    join = os.path.join  # paths are joined only off the common path (~5% of a 100k requeue)
    if pair is not None and not others:
        try:
            moved = pair.rename_noreplace(relpath, mid)
        except FileExistsError:  # <id> appeared since the listing
            if not c.lexists(join(queue_dir, relpath)):
                return ALREADY_READY  # a consumer requeued it itself meanwhile
            return f"{CHANGED}: id {mid} is also live as {mid}; left as it was"
        if moved:
            if live is not None:
                live[mid] = [mid]
            return None
        return ALREADY_READY if c.lexists(join(queue_dir, mid)) else CHANGED
    src, dst = join(queue_dir, relpath), join(queue_dir, mid)
    if others:
        if mid in others and not c.lexists(src):
            return ALREADY_READY  # a consumer requeued it itself meanwhile
        return f"{CHANGED}: id {mid} is also live as {others[0]}; left as it was"
    if c.rename(src, dst):
        if live is not None:
            live[mid] = [mid]
        return None
    # lost a race: a consumer deleted it, or requeued it itself (then it is ready anyway)
    return ALREADY_READY if c.lexists(dst) else CHANGED
