"""VSQS writes: the publish protocol of vsqs 0.3, requeue by rename, and transfer placement."""

from __future__ import annotations

import os
import time

from ...timeunits import MICRO, MILLI
from ..fs.claims import Placement, write_tmp
from ..fs import safety
from ..results import ALREADY_READY, CHANGED

CLOCKS = {"us": MICRO, "ms": MILLI}


def divisor_for(clock: str | None, seen: float | None) -> float:
    """The queue's own unit when it has messages; µs (what vsqs 0.3 writes) when empty."""
    if clock:
        return CLOCKS[clock]
    return seen or MICRO


def _now_id(divisor: float) -> str:
    ns = time.time_ns()
    return str(ns // 1000) if divisor == MICRO else str(ns // 1_000_000)


def _clashes(c: safety.Confined, queue_dir: str, mid: str) -> bool:
    """Another name for this id (``<id>`` or ``<id>.*`` other than our ``.new``)."""
    ours = mid + ".new"
    prefix = mid + "."
    for name in c.listdir(queue_dir):
        if name == mid or (name.startswith(prefix) and name != ours):
            return True
    return False


def _wait_next_tick(divisor: float) -> None:
    time.sleep(1.0 / divisor)


def publish(c: safety.Confined, queue_dir: str, data: bytes, divisor: float, gid: int | None = None) -> str:
    """vsqs 0.3's protocol: O_EXCL ``<id>.new``; clash check; write; fsync; rename to ``<id>``."""
    gid = c.dir_gid(queue_dir) if gid is None else gid
    while True:
        mid = _now_id(divisor)
        new = os.path.join(queue_dir, mid + ".new")
        try:
            fd = c.create_exclusive(new, gid)
        except FileExistsError:
            _wait_next_tick(divisor)
            continue
        try:
            if _clashes(c, queue_dir, mid):
                c.unlink(new)
                _wait_next_tick(divisor)
                continue
            safety.write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            c.unlink(new)
            raise
        finally:
            os.close(fd)
        c.rename(new, os.path.join(queue_dir, mid))
        return mid


def placer(c: safety.Confined, queue_dir: str, divisor: float):  # -> Callable[[bytes, str], Placement]
    """Prepare a transferred copy: a tmp file hard-linked to an exclusive ``<id>.new``.

    The tmp name carries the claim's token, so a killed transfer is found and undone; the
    link to ``<id>.new`` is the exclusive create of the publish protocol (link fails EEXIST).
    """

    def prepare(data: bytes, token: str) -> Placement:
        tmp = write_tmp(c, queue_dir, data, token)
        tmp_path = os.path.join(queue_dir, tmp)
        try:
            while True:
                mid = _now_id(divisor)
                try:
                    c.link(tmp_path, os.path.join(queue_dir, mid + ".new"))
                except FileExistsError:
                    _wait_next_tick(divisor)
                    continue
                if _clashes(c, queue_dir, mid):
                    c.unlink(os.path.join(queue_dir, mid + ".new"))
                    _wait_next_tick(divisor)
                    continue
                return Placement(queue_dir, mid + ".new", mid, tmp)
        except BaseException:
            c.unlink(tmp_path)
            raise

    return prepare


def live_names(c: safety.Confined, queue_dir: str, ids: set[str]) -> dict[str, list[str]]:
    """Id -> every name of the queue directory under that id (``<id>``, ``<id>.<anything>``),
    for the ids of one bulk requeue: one listing for the batch, not one per message."""
    out: dict[str, list[str]] = {}
    for name in c.listdir(queue_dir):
        head = name.partition(".")[0]
        if head in ids:
            out.setdefault(head, []).append(name)
    return out


def requeue(c: safety.Confined, queue_dir: str, mid: str, relpath: str,
            live: dict[str, list[str]] | None = None) -> str | None:
    """Rename ``<id>.<deadline>`` back to ``<id>``; None when done, else the skip reason.

    Never over another file: when the id is live under another name already (``<id>``, or a
    second ``<id>.<deadline>``), the message is left as it is. ``live``: :func:`live_names`
    of the batch (kept up to date here); the ready name is still checked right before the
    rename, since a consumer may have requeued the message itself since that listing.
    """
    if "." not in relpath:
        return ALREADY_READY
    safety.check_relpath(relpath, subdirs=())
    src = os.path.join(queue_dir, relpath)
    dst = os.path.join(queue_dir, mid)
    if live is None:
        names = [n for n in c.listdir(queue_dir) if n == mid or n.startswith(mid + ".")]
    else:
        names = list(live.get(mid, ()))
        if mid not in names and c.lexists(dst):
            names.append(mid)
    others = [n for n in names if n != relpath]
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
