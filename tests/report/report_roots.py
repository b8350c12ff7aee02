"""Roots for the report tests, written by the real vsqs and ddmq clients, with the bad files a
real root collects (a half-written ddmq message, binary payloads, foreign and temp files)."""

from __future__ import annotations

import json
import os
from typing import Any

from peers import ddmq_broker, vsqs_manager

#: a half-written ddmq message (ddmq writes non-atomically) with a known queue_number
CORRUPT_DDMQ = "999.1700000000123456.ddmqdeadbeef"


def build_ddmq_root(root: str) -> dict[str, Any]:
    """Queue ``jobs`` (published by ddmq: sizes 10, 3, 3, 40, 100, 5; requeue counters
    0, 0, 4, 3, 1, 0; the first one consumed), plus a corrupt message, a foreign file and a
    qconsole temp file; queue ``empty``."""
    broker = ddmq_broker(root, "jobs", "empty")
    published = []
    for text, rc in (("x" * 10, 0), ("dup", 0), ("dup", 4), ("y" * 40, 3), ("z" * 100, 1), ("\x00\x01bin", 0)):
        published.append(broker.publish("jobs", msg_text=text, requeue_counter=rc, clean=False))
    consumed = broker.consume("jobs", clean=False)
    qdir = os.path.join(root, "jobs")
    with open(os.path.join(qdir, CORRUPT_DDMQ), "w") as fh:
        fh.write('{"message": "trunc')  # cut mid-write
    with open(os.path.join(qdir, "notes.txt"), "w") as fh:
        fh.write("an operator's note")
    with open(os.path.join(qdir, ".qconsole-publish-1"), "w") as fh:
        fh.write("{}")
    return {"published": published, "consumed": consumed}


def build_vsqs_root(root: str) -> dict[str, Any]:
    """Queue ``jobs`` (vsqs: b"hello" twice, a binary payload, b"{}"; one received), a
    ``.new`` file being written, a foreign file; queue ``empty``."""
    os.makedirs(root, exist_ok=True)
    manager = vsqs_manager(root)
    try:
        q = manager.get_queue("jobs")
        manager.get_queue("empty")
        ids = [q.publish(p) for p in (b"hello", b"hello", b"\x00\xffbinary", b"{}")]
        received, _data = q.receive(visibility_timeout=600)
    finally:
        manager.close()
    qdir = os.path.join(root, "jobs")
    with open(os.path.join(qdir, str(int(ids[-1]) + 1) + ".new"), "wb") as fh:
        fh.write(b"half")
    with open(os.path.join(qdir, "README"), "w") as fh:
        fh.write("not a message")
    return {"ids": ids, "received": received}


def history_lines(path: str) -> None:
    """Three stats documents in 10:00-11:00 UTC, one at 11:15, and a junk line."""
    def doc(at: str, ready: int, age: float | None) -> str:
        return json.dumps({
            "schema": "qconsole.stats/1", "root": "/r", "layout": "ddmq", "generated_at": at,
            "queues": [{"name": "jobs", "layout": "ddmq", "ready": ready, "inflight": 1,
                        "expired": 0, "oldest_ready_age_s": age}],
        })

    with open(path, "w") as fh:
        fh.write(doc("2024-05-01T10:00:00.000Z", 4, 10.0) + "\n")
        fh.write(doc("2024-05-01T10:20:00.000Z", 8, 30.0) + "\n")
        fh.write(doc("2024-05-01T10:40:00.000Z", 3, 50.0) + "\n")
        fh.write("qconsole: not json\n")
        fh.write(doc("2024-05-01T11:15:00.000Z", 0, None) + "\n")
