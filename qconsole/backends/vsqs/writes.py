"""VSQS writes: the publish protocol of vsqs 0.3, requeue by rename, and transfer placement."""

from __future__ import annotations

import os
import time

from ...timeunits import MICRO, MILLI
from ..fs.claims import Placement, write_tmp
from ..fs.atomic import create_exclusive, dir_gid, rename_checked, unlink_quiet, write_all
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


def _clashes(queue_dir: str, mid: str) -> bool:
    """Another name for this id (``<id>`` or ``<id>.*`` other than our ``.new``)."""
    ours = mid + ".new"
    prefix = mid + "."
    for name in os.listdir(queue_dir):
        if name == mid or (name.startswith(prefix) and name != ours):
            return True
    return False


def _wait_next_tick(divisor: float) -> None:
    time.sleep(1.0 / divisor)


def publish(queue_dir: str, data: bytes, divisor: float, gid: int | None = None) -> str:
    """vsqs 0.3's protocol: O_EXCL ``<id>.new``; clash check; write; fsync; rename to ``<id>``."""
    gid = dir_gid(queue_dir) if gid is None else gid
    while True:
        mid = _now_id(divisor)
        new = os.path.join(queue_dir, mid + ".new")
        try:
            fd = create_exclusive(new, gid)
        except FileExistsError:
            _wait_next_tick(divisor)
            continue
        try:
            if _clashes(queue_dir, mid):
                unlink_quiet(new)
                _wait_next_tick(divisor)
                continue
            write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            unlink_quiet(new)
            raise
        finally:
            os.close(fd)
        os.rename(new, os.path.join(queue_dir, mid))
        return mid


def placer(queue_dir: str, divisor: float):  # -> Callable[[bytes, str], Placement]
    """Prepare a transferred copy: a tmp file hard-linked to an exclusive ``<id>.new``.

    The tmp name carries the claim's token, so a killed transfer is found and undone; the
    link to ``<id>.new`` is the exclusive create of the publish protocol (link fails EEXIST).
    """

    def prepare(data: bytes, token: str) -> Placement:
        tmp = write_tmp(queue_dir, data, token)
        tmp_path = os.path.join(queue_dir, tmp)
        try:
            while True:
                mid = _now_id(divisor)
                try:
                    os.link(tmp_path, os.path.join(queue_dir, mid + ".new"))
                except FileExistsError:
                    _wait_next_tick(divisor)
                    continue
                if _clashes(queue_dir, mid):
                    unlink_quiet(os.path.join(queue_dir, mid + ".new"))
                    _wait_next_tick(divisor)
                    continue
                return Placement(queue_dir, mid + ".new", mid, tmp)
        except BaseException:
            unlink_quiet(tmp_path)
            raise

    return prepare


def requeue(queue_dir: str, mid: str, relpath: str) -> str | None:
    """Rename ``<id>.<deadline>`` back to ``<id>``; None when done, else the skip reason."""
    if "." not in relpath:
        return ALREADY_READY
    src = os.path.join(queue_dir, relpath)
    dst = os.path.join(queue_dir, mid)
    if rename_checked(src, dst):
        return None
    # lost a race: a consumer deleted it, or requeued it itself (then it is ready anyway)
    return ALREADY_READY if os.path.lexists(dst) else CHANGED
