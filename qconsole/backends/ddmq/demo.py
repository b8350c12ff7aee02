"""The ddmq part of ``qconsole demo``: a root, a fixed fixture, and a consumer's rename protocol."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any

from ..fs.demo_files import write_atomic
from . import layout

QUEUES = ("emails", "reports", "thumbnails")
#: (queue, produced per s, consumers, processing s, die probability, visibility timeout s)
PLANS = [
    ("emails", 3.0, 2, 0.6, 0.10, 20),
    ("reports", 0.8, 1, 2.5, 0.05, 15),
    ("thumbnails", 5.0, 1, 0.3, 0.02, 12),
]


def _doc(queue: str, name: str, message: str, priority: int, qn: str, uid: str, timeout: int,
         counter: int = 0) -> bytes:
    doc = {"message": message, "priority": priority, "queue_number": int(qn), "id": uid, "queue": queue,
           "filename": name, "timeout": timeout, "requeue": True, "requeue_counter": counter,
           "requeue_limit": None}
    return json.dumps(doc).encode()


def make_root(path: str, queues: tuple[str, ...] = QUEUES) -> str:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, layout.CONFIG), "w") as fh:
        fh.write("message_timeout: 30\n")
    for q in queues:
        os.makedirs(os.path.join(path, q, layout.WORK), exist_ok=True)
        with open(os.path.join(path, q, layout.CONFIG), "w") as fh:
            fh.write("priority: 5\n" if q == "reports" else "")
    return path


def seed_fixture(root: str, now: float) -> None:
    """Ready messages with mixed priorities (and hostile text), two in flight, one expired."""
    payloads = [
        json.dumps({"to": "ada@example.org", "template": "welcome", "n": i}) for i in range(6)
    ] + ["[@click=app.quit] plain text with markup", "report \x1b]52;c;aGk=\x07 done"]
    for i, text in enumerate(payloads):
        prio = (1, 5, 5, 10, 9, 5, 5, 5)[i]
        created = now - 600 + i * 37
        qn = f"{int(created)}{i:06d}"
        uid = f"{i:02x}" + "c0ffee" * 5
        name = layout.waiting_name(prio, qn, uid)
        write_atomic(os.path.join(root, "emails", name), _doc("emails", name, text, prio, qn, uid, 30))
    for j, left in enumerate((25.0, 7.0, -40.0)):
        created = now - 300 - j
        qn = f"{int(created)}{j:06d}"
        uid = f"f{j}" + "5eed" * 7 + "ab"
        name = layout.waiting_name(5, qn, uid)
        wname = layout.work_name(int(now + left), 5, qn, uid)
        write_atomic(os.path.join(root, "emails", layout.WORK, wname),
                     _doc("emails", name, f"job {j}", 5, qn, uid, 30, counter=j))
    for i in range(3):
        created = now - 120 + i
        qn = f"{int(created)}{i:06d}"
        uid = f"{i:02x}" + "0ddba11" * 4 + "ff"
        name = layout.waiting_name(5, qn, uid)
        write_atomic(os.path.join(root, "reports", name), _doc("reports", name, f"report {i}", 5, qn, uid, 30))


def publish_options(rng: random.Random) -> dict[str, Any]:
    return {"priority": rng.choice((1, 5, 5, 5, 9))}


def take(root: str, queue: str, timeout: int) -> Callable[[], None] | None:
    """Consume one as ddmq does (rename into ``work/<deadline>.<name>``); the ack, or None."""
    qdir = os.path.join(root, queue)
    try:
        names = os.listdir(qdir)
    except FileNotFoundError:
        return None
    for n in sorted(n for n in names if layout.parse_waiting(n))[:5]:
        dest = os.path.join(qdir, layout.WORK, f"{int(time.time() + timeout)}.{n}")
        try:
            os.rename(os.path.join(qdir, n), dest)
        except FileNotFoundError:
            continue
        return lambda: _unlink_quiet(dest)
    return None


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
