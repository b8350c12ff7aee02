"""ddmq: a root with ``ddmq.yaml``; queues are sub-directories holding ``ddmq.yaml`` and ``work/``.

Waiting: ``<queue>/<priority>.<queue_number>.ddmq<uuidhex>``; consumed:
``<queue>/work/<deadline_s>.<priority>.<queue_number>.ddmq<uuidhex>``. ddmq 0.9.14 takes
every name matching ``*.ddmq*`` in **text** order (so priority ``10`` before ``9``) and its
clean() calls ``int()`` on the first dotted part of every such name in ``work/``.
"""

from __future__ import annotations

import os
import time

from ..model import Message, QueueScan
from ..states import DDMQ, EXPIRED, FOREIGN, INFLIGHT, READY, WRITING
from ..timeunits import ddmq_created
from .common import QC_TEMP_PREFIX, ErrorList, is_ascii_digits, list_entries, os_error_line

CONFIG = "ddmq.yaml"
WORK = "work"
#: names ddmq itself leaves in a queue directory besides messages
_QUEUE_FILES = frozenset({CONFIG, CONFIG + ".intermediate", CONFIG + ".example", WORK})


def _uuid_part(part: str) -> str | None:
    if part.startswith("ddmq"):
        uid = part[4:]
        if uid and uid.isascii() and uid.isalnum():
            return uid
    return None


def parse_waiting(name: str) -> tuple[str, str, str] | None:
    """``(priority_text, queue_number, id)`` or None."""
    parts = name.split(".")
    if len(parts) != 3:
        return None
    prio, qn, tail = parts
    uid = _uuid_part(tail)
    if uid is None or not is_ascii_digits(prio) or not is_ascii_digits(qn):
        return None
    return prio, qn, uid


def parse_work(name: str) -> tuple[str, str, str, str] | None:
    """``(deadline_s, priority_text, queue_number, id)`` or None."""
    parts = name.split(".")
    if len(parts) != 4:
        return None
    dl, prio, qn, tail = parts
    uid = _uuid_part(tail)
    if uid is None or not (is_ascii_digits(dl) and is_ascii_digits(prio) and is_ascii_digits(qn)):
        return None
    return dl, prio, qn, uid


def waiting_name(priority: int | str, queue_number: str, uid: str) -> str:
    return f"{priority}.{queue_number}.ddmq{uid}"


def work_name(deadline: int, priority: int | str, queue_number: str, uid: str) -> str:
    return f"{deadline}.{priority}.{queue_number}.ddmq{uid}"


def matches_client_glob(name: str) -> bool:
    """ddmq lists with fnmatch ``*.ddmq*``: anything with ``.ddmq`` after at least nothing."""
    return ".ddmq" in name


def is_expired(deadline_s: int, now: float) -> bool:
    # ddmq clean(): int(expiry) < int(time.time())
    return deadline_s < int(now)


def is_queue_dir(path: str) -> bool:
    """ddmq's own check_dir(): a ``ddmq.yaml`` file and a ``work`` directory."""
    return os.path.isfile(os.path.join(path, CONFIG)) and os.path.isdir(os.path.join(path, WORK))


def list_queue_names(root: str) -> tuple[list[str], list[str]]:
    names: list[str] = []
    errors: list[str] = []
    with os.scandir(root) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                if is_queue_dir(entry.path):
                    errors.append(f"{entry.name}: symlink not followed")
                continue
            if entry.is_dir(follow_symlinks=False) and is_queue_dir(entry.path):
                names.append(entry.name)
    names.sort()
    return names, errors


def scan_queue(root: str, name: str, now: float | None = None, *, collect: bool = False) -> QueueScan:
    """Count one ddmq queue from two directory listings (queue dir and work/)."""
    now = time.time() if now is None else now
    scan = QueueScan(name=name, layout=DDMQ, scanned_at=now)
    errors = ErrorList()
    qdir = os.path.join(root, name)
    waiting: dict[str, tuple[str, str, str]] = {}  # id -> (name, prio, qn)
    held: dict[str, tuple[str, int, str, str]] = {}  # id -> (name, deadline, prio, qn)
    temp = foreign = 0
    try:
        for fname, regular in list_entries(qdir):
            if fname in _QUEUE_FILES:
                continue
            if fname.startswith(QC_TEMP_PREFIX):
                temp += 1
                continue
            parsed = parse_waiting(fname)
            if parsed is None:
                foreign += 1
                if matches_client_glob(fname):
                    errors.add(f"{fname}: matches ddmq's *.ddmq* glob but is not a message name")
                continue
            if not regular:
                foreign += 1
                errors.add(f"{fname}: named like a message but not a regular file")
                continue
            prio, qn, uid = parsed
            waiting[uid] = (fname, prio, qn)
    except OSError as err:
        scan.errors.append(os_error_line(err, name))
        return scan
    try:
        for fname, regular in list_entries(os.path.join(qdir, WORK)):
            if fname.startswith(QC_TEMP_PREFIX):
                temp += 1
                continue
            wparsed = parse_work(fname)
            if wparsed is None:
                foreign += 1
                if matches_client_glob(fname):
                    errors.add(f"work/{fname}: not a work file name; ddmq's clean() will fail on it")
                continue
            if not regular:
                foreign += 1
                errors.add(f"work/{fname}: named like a message but not a regular file")
                continue
            dl, prio, qn, uid = wparsed
            held[uid] = (fname, int(dl), prio, qn)
    except OSError as err:
        errors.add(os_error_line(err, f"{name}/{WORK}"))

    # Two listings can see one message in both places while a consumer renames it: the
    # consumed copy (work/) wins, since consume is the rename in flight far more often.
    for uid in held.keys() & waiting.keys():
        del waiting[uid]

    counts = scan.counts
    counts[READY] = len(waiting)
    counts[WRITING] = temp
    counts[FOREIGN] = foreign
    by_prio: dict[str, dict[str, int]] = {}
    oldest: float | None = None
    for _fname, prio, qn in waiting.values():
        slot = by_prio.get(prio)
        if slot is None:
            slot = by_prio[prio] = {READY: 0, INFLIGHT: 0, EXPIRED: 0}
        slot[READY] += 1
        created = ddmq_created(qn)
        if created is not None and (oldest is None or created < oldest):
            oldest = created
    next_deadline: float | None = None
    for _fname, dl, prio, _qn in held.values():
        slot = by_prio.get(prio)
        if slot is None:
            slot = by_prio[prio] = {READY: 0, INFLIGHT: 0, EXPIRED: 0}
        if is_expired(dl, now):
            counts[EXPIRED] += 1
            slot[EXPIRED] += 1
        else:
            counts[INFLIGHT] += 1
            slot[INFLIGHT] += 1
            if next_deadline is None or dl < next_deadline:
                next_deadline = float(dl)
    scan.by_priority = dict(sorted(by_prio.items(), key=lambda kv: (int(kv[0]), kv[0])))
    scan.oldest_ready_created = oldest
    scan.next_deadline = next_deadline
    widths = {len(p) for _f, p, _q in waiting.values()}
    if len(widths) > 1:
        scan.warnings.append(
            "mixed-width priorities: ddmq delivers in file-name text order, "
            "so e.g. priority 10 is taken before 9"
        )
    scan.errors.extend(errors.result())
    if collect:
        scan.messages = _messages(name, waiting, held, now)
    return scan


def _messages(
    queue: str,
    waiting: dict[str, tuple[str, str, str]],
    held: dict[str, tuple[str, int, str, str]],
    now: float,
) -> list[Message]:
    out: list[Message] = []
    # The real consumer: sorted(fnmatch.filter(listdir, '*.ddmq*')) -- plain text order.
    for uid, (fname, prio, qn) in sorted(waiting.items(), key=lambda kv: kv[1][0]):
        out.append(Message(queue, DDMQ, uid, READY, fname, int(prio), prio, ddmq_created(qn)))
    held_sorted = sorted(held.items(), key=lambda kv: (kv[1][1], kv[1][0]))
    for want in (INFLIGHT, EXPIRED):
        for uid, (fname, dl, prio, qn) in held_sorted:
            state = EXPIRED if is_expired(dl, now) else INFLIGHT
            if state == want:
                out.append(
                    Message(queue, DDMQ, uid, state, f"{WORK}/{fname}", int(prio), prio,
                            ddmq_created(qn), float(dl))
                )
    return out
