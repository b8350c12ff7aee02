"""ddmq writes: message bodies as ddmq 0.9.14 writes them, written atomically."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from . import layout
from .settings import effective
from ..fs.claims import Placement, owned_name, TMP, new_token, write_tmp
from ..fs import safety
from ...errors import OperationError, QConsoleError


def queue_number() -> str:
    """ddmq's get_queue_number(): ``str(time.time())`` without the dot."""
    return str(time.time()).replace(".", "")


def uuid4_hex() -> str:
    """``uuid.uuid4().hex`` (ddmq's message id) from one urandom call, without a UUID object."""
    b = bytearray(os.urandom(16))
    b[6] = b[6] & 0x0F | 0x40  # version 4
    b[8] = b[8] & 0x3F | 0x80  # RFC 4122 variant
    return b.hex()


def settings_of(root: str, queue: str) -> dict[str, Any]:
    return {k: s.value for k, s in effective(root, queue).items()}


def new_body(
    queue: str,
    text: str,
    *,
    priority: int,
    timeout: int | None,
    requeue: bool | int,
    requeue_limit: int | None,
    requeue_counter: int = 0,
    uid: str | None = None,
) -> dict[str, Any]:
    """The JSON object ddmq's ``message.msg2json()`` writes (same keys, same order)."""
    qn = queue_number()
    uid = uid or uuid4_hex()
    return {
        "message": text,
        "queue": queue,
        "timeout": timeout,
        "id": uid,
        "priority": priority,
        "queue_number": qn,
        "filename": layout.waiting_name(priority, qn, uid),
        "requeue": requeue,
        "requeue_counter": requeue_counter,
        "requeue_limit": requeue_limit,
    }


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def publish(c: safety.Confined, queue_dir: str, queue: str, texts: list[str], done: list[str],
            tick: Callable[[int, int], None] | None = None, **fields: Any) -> None:
    """Publish ``texts`` as ddmq's publish writes them (``fields``: :func:`new_body`'s), a
    batch at a time (:mod:`..fs.publish_batches`): each body written to a temp file outside
    ``*.ddmq*``, the batch fsynced, each renamed to its waiting name. ``done`` gets each id as
    its rename lands."""
    from ..fs.publish_batches import Copy, publish_batched

    d = c.in_dir(queue_dir, c.dir_gid(queue_dir))

    def place(text: str) -> Copy:
        body = new_body(queue, text, **fields)
        final = safety.check_name(body["filename"], "message name")
        tmp = owned_name(TMP, new_token())
        return Copy(tmp, final, body["id"], d.create(tmp, encode(body)), text)

    publish_batched(c, queue_dir, texts, place, done, tick=tick)


def decode(data: bytes, what: str) -> dict[str, Any]:
    """The message's JSON object; OperationError (the message is then left as it was) if not one."""
    from .body import parse

    doc = parse(data)
    if doc is None:
        raise OperationError(f"{what}: not a ddmq message (corrupt JSON, or not an object)")
    return doc


def _uid_of(relpath: str) -> str:
    """The id from the message's *file name* (its body may say anything)."""
    name = relpath.rpartition("/")[2]
    parsed = layout.parse_waiting(name) or layout.parse_work(name)
    if not parsed:
        raise OperationError(f"{name}: not a ddmq message name")
    return parsed[-1]


def _valid_priority(value: Any) -> bool:
    try:
        safety.check_priority(value)
    except QConsoleError:
        return False
    return True


def requeued_body(body: dict[str, Any], queue: str, requeue_prio: int, relpath: str) -> dict[str, Any]:
    """What ddmq's requeue_message() publishes for a consumed message.

    Priority: the message's ``requeue`` when it is a valid priority (an int, not a bool),
    else the queue's ``requeue_prio``; ``requeue_counter`` + 1; the id of its file name
    (never the body's, which may hold anything). Note: the real publish() turns priority 0
    into the queue default (``if not priority``), so ddmq itself requeues a
    ``requeue_prio: 0`` message at 999; we write the priority ddmq *intends* (0 = first).
    """
    req = body.get("requeue")
    prio = req if _valid_priority(req) else requeue_prio
    counter = body.get("requeue_counter")
    counter = counter + 1 if isinstance(counter, int) and not isinstance(counter, bool) and 0 <= counter < 10 ** 9 else 1
    qn = queue_number()
    uid = _uid_of(relpath)
    out = dict(body)
    out.update(queue=queue, priority=prio, queue_number=qn, requeue_counter=counter, id=uid,
               filename=layout.waiting_name(prio, qn, uid))
    return out


def _named_priority(relpath: str) -> int | None:
    """The priority the message's file name carries (what a consumer orders it by)."""
    name = relpath.rpartition("/")[2]
    waiting, held = layout.parse_waiting(name), layout.parse_work(name)
    text = waiting[0] if waiting else held[1] if held else None
    prio = None if text is None else int(text)
    return prio if _valid_priority(prio) else None


def moved_body(body: dict[str, Any], dest: str, fallback_prio: int, relpath: str) -> dict[str, Any]:
    """A message moved into ``dest``: same payload, priority and id (from its file name), at
    the end of its priority. A body without a priority publish would take keeps the one its
    file name carries; with neither, ``dest``'s default."""
    prio = body.get("priority")
    if not _valid_priority(prio):
        named = _named_priority(relpath)
        prio = fallback_prio if named is None else named
    qn = queue_number()
    uid = _uid_of(relpath)
    out = dict(body)
    out.update(queue=dest, priority=prio, queue_number=qn, id=uid,
               filename=layout.waiting_name(prio, qn, uid))
    return out


def place(c: safety.Confined, queue_dir: str, body: dict[str, Any], token: str, gid: int) -> tuple[Placement, int]:
    """``body`` written to the claim's tmp in ``queue_dir``: its placement (the commit renames
    the tmp to the message name) and the tmp's open descriptor (synced with its batch)."""
    tmp, fd = write_tmp(c, queue_dir, encode(body), token, gid)
    return Placement(queue_dir, tmp, body["filename"], tmp), fd


__all__ = ["publish", "new_body", "requeued_body", "moved_body", "place"]
