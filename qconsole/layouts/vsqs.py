"""VSQS: every sub-directory of the root is a queue; state is in the file name.

``<id>`` ready, ``<id>.new`` being written, ``<id>.<deadline>`` in flight (expired once the
deadline has passed). vsqs 0.3 writes µs for both numbers; its README says ms. The client
``int()``s both halves of ``name.split('.', 1)`` and ignores names that fail: foreign here.
"""

from __future__ import annotations

import os
import time

from ..model import Message, QueueScan
from ..states import EXPIRED, FOREIGN, INFLIGHT, READY, VSQS, WRITING
from ..timeunits import vsqs_divisor
from .common import QC_TEMP_PREFIX, ErrorList, is_ascii_digits, list_entries, os_error_line


def parse_name(name: str) -> tuple[str, str, str | None] | None:
    """``(state_kind, id, deadline_digits)`` for a VSQS name, None for a foreign one.

    state_kind is ``ready``, ``held`` (in flight or expired, decided against a clock) or ``writing``.
    """
    head, dot, tail = name.partition(".")
    if not is_ascii_digits(head):
        return None
    if not dot:
        return READY, head, None
    if tail == "new":
        return WRITING, head, None
    if is_ascii_digits(tail):
        return "held", head, tail
    return None


def is_expired(deadline_digits: str, now: float) -> bool:
    # vsqs requeues when deadline <= now (in its own unit)
    return int(deadline_digits) / vsqs_divisor(deadline_digits) <= now


def list_queue_names(root: str) -> tuple[list[str], list[str]]:
    """Every non-dot sub-directory is a queue; symlinked ones are not followed."""
    names: list[str] = []
    errors: list[str] = []
    with os.scandir(root) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                errors.append(f"{entry.name}: symlink not followed")
                continue
            if entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    names.sort()
    return names, errors


def looks_like_queue(path: str, probe: int = 50) -> bool:
    """An empty directory, or one whose first entries include a VSQS name."""
    seen = 0
    for name, _regular in list_entries(path):
        if parse_name(name) is not None:
            return True
        seen += 1
        if seen >= probe:
            break
    return seen == 0


def scan_queue(root: str, name: str, now: float | None = None, *, collect: bool = False) -> QueueScan:
    """Count one VSQS queue from a single directory listing (no file is opened or stat'ed)."""
    now = time.time() if now is None else now
    scan = QueueScan(name=name, layout=VSQS, scanned_at=now)
    errors = ErrorList()
    ready: set[str] = set()
    held: dict[str, str] = {}
    writing: set[str] = set()
    temp = 0
    foreign = 0
    try:
        for fname, regular in list_entries(os.path.join(root, name)):
            if fname.startswith(QC_TEMP_PREFIX):
                temp += 1
                continue
            parsed = parse_name(fname)
            if parsed is None:
                foreign += 1
                continue
            if not regular:
                foreign += 1
                errors.add(f"{fname}: named like a message but not a regular file")
                continue
            kind, mid, deadline = parsed
            if kind == READY:
                ready.add(mid)
            elif kind == WRITING:
                writing.add(mid)
            else:
                held[mid] = deadline  # type: ignore[assignment]
    except OSError as err:
        scan.errors.append(os_error_line(err, name))
        return scan

    # A listing taken during renames can show one message under two names: count it once.
    # A consume (ready -> held) is the common rename, so the held name wins; a finished
    # publish (.new -> id) makes the ready name win over writing.
    if held and ready:
        ready.difference_update(held.keys())
    if writing:
        writing.difference_update(ready)
        writing.difference_update(held.keys())

    counts = scan.counts
    counts[READY] = len(ready)
    counts[WRITING] = len(writing) + temp
    counts[FOREIGN] = foreign
    inflight = expired = 0
    next_deadline: float | None = None
    held_seconds: dict[str, float] = {}
    for mid, dl in held.items():
        secs = int(dl) / vsqs_divisor(dl)
        held_seconds[mid] = secs
        if secs <= now:
            expired += 1
        else:
            inflight += 1
            if next_deadline is None or secs < next_deadline:
                next_deadline = secs
    counts[INFLIGHT] = inflight
    counts[EXPIRED] = expired
    scan.next_deadline = next_deadline

    if ready:
        scan.oldest_ready_created = min(int(m) / vsqs_divisor(m) for m in ready)
    ids = ready or held.keys() or writing
    if ids:
        widths = {len(m) for m in ids}
        scan.id_unit = vsqs_divisor("9" * max(widths))
        if len({vsqs_divisor("9" * w) for w in widths}) > 1:
            scan.warnings.append(
                "mixed id units (ms and µs): numeric order delivers the shorter ids first"
            )
    scan.errors.extend(errors.result())

    if collect:
        scan.messages = _messages(name, ready, held, held_seconds, writing, now)
    return scan


def _messages(
    queue: str,
    ready: set[str],
    held: dict[str, str],
    held_seconds: dict[str, float],
    writing: set[str],
    now: float,
) -> list[Message]:
    out: list[Message] = []
    # FIFO: numeric order of the id, as the client sorts int tuples.
    for mid in sorted(ready, key=int):
        out.append(Message(queue, VSQS, mid, READY, mid, created_at=int(mid) / vsqs_divisor(mid)))
    held_sorted = sorted(held.items(), key=lambda kv: (held_seconds[kv[0]], int(kv[0])))
    for want in (INFLIGHT, EXPIRED):
        for mid, dl in held_sorted:
            state = EXPIRED if held_seconds[mid] <= now else INFLIGHT
            if state != want:
                continue
            out.append(
                Message(
                    queue, VSQS, mid, state, f"{mid}.{dl}",
                    created_at=int(mid) / vsqs_divisor(mid), deadline=held_seconds[mid],
                )
            )
    for mid in sorted(writing, key=int):
        out.append(Message(queue, VSQS, mid, WRITING, f"{mid}.new", created_at=int(mid) / vsqs_divisor(mid)))
    return out
