"""The VSQS part of ``qconsole demo``: a root, a fixed fixture, and a consumer's rename protocol."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from typing import Any

from ..fs.demo_files import write_atomic

QUEUES = ("ingest", "orders", "webhooks")
#: (queue, produced per s, consumers, processing s, die probability, visibility timeout s)
PLANS = [
    ("ingest", 4.0, 3, 0.5, 0.05, 15),
    ("orders", 1.5, 1, 1.2, 0.15, 10),
    ("webhooks", 2.0, 0, 0.0, 0.0, 0),  # no consumer: a growing backlog
]


def make_root(path: str, queues: tuple[str, ...] = QUEUES) -> str:
    for q in queues:
        os.makedirs(os.path.join(path, q), exist_ok=True)
    return path


def seed_fixture(root: str, now: float) -> None:
    """Fixed ids, payloads and deadlines around ``now`` (µs ids as vsqs 0.3 writes them)."""
    for i in range(12):
        mid = int((now - 900 + i * 61) * 1_000_000)
        write_atomic(os.path.join(root, "orders", str(mid)), json.dumps({"order": 1000 + i, "sku": "A-7"}).encode())
    for j, left in enumerate((95.0, 18.0, -5.0)):
        mid = int((now - 1000 - j) * 1_000_000)
        dl = int((now + left) * 1_000_000)
        write_atomic(os.path.join(root, "orders", f"{mid}.{dl}"), f"order held {j}".encode())
    for i in range(2):
        mid = int((now - 30 + i) * 1_000_000)
        write_atomic(os.path.join(root, "ingest", str(mid)), bytes(range(0, 256, 7)))


def publish_options(rng: random.Random) -> dict[str, Any]:
    return {}


def take(root: str, queue: str, timeout: int) -> Callable[[], None] | None:
    """Consume one as vsqs does (rename ``<id>`` -> ``<id>.<deadline>``); the ack, or None."""
    qdir = os.path.join(root, queue)
    try:
        names = os.listdir(qdir)
    except FileNotFoundError:
        return None
    for n in sorted((n for n in names if n.isdigit()), key=int)[:5]:
        dest = os.path.join(qdir, f"{n}.{int((time.time() + timeout) * 1_000_000)}")
        try:
            os.rename(os.path.join(qdir, n), dest)
        except FileNotFoundError:
            continue  # another consumer won the race
        return lambda: _unlink_quiet(dest)
    return None


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
