"""ddmq writes: message bodies as ddmq 0.9.14 writes them, written atomically."""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

from . import layout
from .settings import effective
from ..fs.claims import Placement, owned_name, TMP, new_token, write_tmp
from ..fs.atomic import dir_gid, rename_checked, unlink_quiet, write_new
from ...errors import OperationError


def queue_number() -> str:
    """ddmq's get_queue_number(): ``str(time.time())`` without the dot."""
    return str(time.time()).replace(".", "")


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
    uid = uid or uuid.uuid4().hex
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


def publish_body(queue_dir: str, body: dict[str, Any]) -> str:
    """Write a waiting message atomically: a tmp name outside ``*.ddmq*``, fsync, rename."""
    tmp = os.path.join(queue_dir, owned_name(TMP, new_token()))
    write_new(tmp, encode(body), dir_gid(queue_dir))
    final = os.path.join(queue_dir, body["filename"])
    try:
        os.rename(tmp, final)
    except BaseException:
        unlink_quiet(tmp)
        raise
    return body["filename"]


def decode(data: bytes, what: str) -> dict[str, Any]:
    """The message's JSON object; OperationError (the message is then left as it was) if not one."""
    from .body import parse

    doc = parse(data)
    if doc is None:
        raise OperationError(f"{what}: not a ddmq message (corrupt JSON, or not an object)")
    return doc


def requeued_body(body: dict[str, Any], queue: str, requeue_prio: int) -> dict[str, Any]:
    """What ddmq's requeue_message() publishes for a consumed message.

    Priority: the message's ``requeue`` when it is an int (not a bool), else the queue's
    ``requeue_prio``; ``requeue_counter`` + 1; the same id. Note: the real publish() turns
    priority 0 into the queue default (``if not priority``), so ddmq itself requeues a
    ``requeue_prio: 0`` message at 999; we write the priority ddmq *intends* (0 = first).
    """
    req = body.get("requeue")
    prio = req if isinstance(req, int) and not isinstance(req, bool) and req >= 0 else requeue_prio
    counter = body.get("requeue_counter")
    counter = counter + 1 if isinstance(counter, int) and not isinstance(counter, bool) else 1
    qn = queue_number()
    uid = str(body.get("id") or uuid.uuid4().hex)
    out = dict(body)
    out.update(queue=queue, priority=prio, queue_number=qn, requeue_counter=counter, id=uid,
               filename=layout.waiting_name(prio, qn, uid))
    return out


def moved_body(body: dict[str, Any], dest: str, fallback_prio: int) -> dict[str, Any]:
    """A message moved into ``dest``: same payload, priority and id, at the end of its priority."""
    prio = body.get("priority")
    if not (isinstance(prio, int) and not isinstance(prio, bool) and prio >= 0):
        prio = fallback_prio
    qn = queue_number()
    uid = str(body.get("id") or uuid.uuid4().hex)
    out = dict(body)
    out.update(queue=dest, priority=prio, queue_number=qn, id=uid,
               filename=layout.waiting_name(prio, qn, uid))
    return out


def placer(queue_dir: str, body: dict[str, Any]):  # -> Callable[[bytes, str], Placement]
    def prepare(_data: bytes, token: str) -> Placement:
        tmp = write_tmp(queue_dir, encode(body), token)
        return Placement(queue_dir, tmp, body["filename"], tmp)

    return prepare


__all__ = ["publish_body", "new_body", "requeued_body", "moved_body", "placer", "rename_checked"]
