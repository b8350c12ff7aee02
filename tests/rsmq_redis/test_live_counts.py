"""Counts beside live consumers (review C #5), against a real redis-server and the reference
Node client receiving while qconsole counts.

Read by score, then by receive count, a ready member received in between had its old
(visible) score and its new ``:rc``: counted *expired*, a state it never was in (``check
--crit-expired 1`` went CRITICAL with no expired message). Counted by the HLEN arithmetic
(over 20,000 visible), HLEN was taken before the hidden range was read: each first receive
in between moved a message into *inflight* that HLEN did not count, so *expired* came out
short. Here the only expired messages are ones seeded so, scored after every ready one (the
consumers, taking the oldest first, never reach them): each count must say exactly that many.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
import time

import pytest

from qconsole.backends import open_target
from qconsole.backends.rsmq import backend as rb

from .conftest import NODE_DIR, qconsole

READY_N = 30_000
EXPIRED_N = 400
INFLIGHT_N = 1_500


def _b36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        out = digits[n % 36] + out
        n //= 36
    return out


def seed(r, ns: str, q: str) -> None:
    """Queue ``q`` in rsmq's format: READY_N ready (oldest scores), then EXPIRED_N received and
    visible again (scored after every ready one), INFLIGHT_N in flight for an hour."""
    sec, usec = r.time()
    now_ms = sec * 1000 + usec // 1000
    base = sec * 1_000_000 + usec - 10**10
    r.hset(f"{ns}:{q}:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536, "created": sec, "modified": sec,
                                    "totalsent": 0, "totalrecv": 0})
    r.sadd(f"{ns}:QUEUES", q)
    rnd = random.Random(7)
    pipe = r.pipeline(transaction=False)
    i = 0

    def add(score: int, rc: int) -> None:
        nonlocal i
        i += 1
        t = base + i * 1000
        mid = _b36(t) + "".join(rnd.choice(string.ascii_letters) for _ in range(22))
        pipe.zadd(f"{ns}:{q}", {mid: score})
        pipe.hset(f"{ns}:{q}:Q", mid, "x" * 20)
        if rc:
            pipe.hset(f"{ns}:{q}:Q", mapping={f"{mid}:rc": rc, f"{mid}:fr": t // 1000})
        if i % 5000 == 0:
            pipe.execute()

    for _ in range(READY_N):
        add((base + i * 1000) // 1000, 0)
    for _ in range(EXPIRED_N):  # visible again (scored before now), after every ready one
        add(now_ms - 5000, 1)
    for _ in range(INFLIGHT_N):
        add(now_ms + 3_600_000, 1)
    pipe.execute()


def consumers(redis_server, ns: str, q: str, seconds: float, *, ack: bool = False, parallel: int = 4,
              most: int = READY_N // 2) -> subprocess.Popen:
    """Node consumers taking the oldest messages first, never more than ``most`` (the seeded
    expired ones, scored after every ready one, are never reached)."""
    conn = {"host": "127.0.0.1", "port": redis_server.port, "ns": ns}
    return subprocess.Popen(["node", str(NODE_DIR / "consumer.js"), json.dumps(conn),
                             json.dumps({"qname": q, "seconds": seconds, "parallel": parallel, "vt": 600, "ack": ack,
                                         "most": most})],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=NODE_DIR)


def received(proc: subprocess.Popen) -> int:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return json.loads(out.splitlines()[0])["received"]


@pytest.mark.parametrize("ack", [False, True], ids=["held", "acked"])
@pytest.mark.parametrize("exact_limit", [10**9, 0], ids=["exact", "hlen"])
def test_counts_beside_live_consumers_never_invent_or_lose_expired(node_ready, redis_server, r, ns, url,
                                                                   monkeypatch, exact_limit, ack):
    monkeypatch.setattr(rb, "EXACT_VISIBLE", exact_limit)
    seed(r, ns, "q")
    backend = open_target(url)
    quiet = backend.scan(["q"]).queues[0]
    assert (quiet.counts["ready"], quiet.counts["expired"], quiet.counts["inflight"]) == (READY_N, EXPIRED_N, INFLIGHT_N)
    proc = consumers(redis_server, ns, "q", 3.0, ack=ack)
    seen = []
    try:
        time.sleep(0.3)
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline and proc.poll() is None:
            scan = backend.scan(["q"]).queues[0]
            assert scan.extras["counted"] == ("exact" if exact_limit else "hlen"), (scan.counts, scan.warnings, scan.errors, seen)
            seen.append((scan.counts["ready"], scan.counts["inflight"], scan.counts["expired"]))
    finally:
        took = received(proc)
    assert took > 2000, took  # the consumers were at work while we counted
    assert len(seen) >= 3, seen
    assert all(expired == EXPIRED_N for _r, _i, expired in seen), seen
    backend.close()


def test_check_crit_expired_stays_ok_while_consumers_receive(node_ready, redis_server, r, ns, url):
    """The reviewer's repro: `check --crit-expired 1` (and `stats --json`) run while Node
    consumers take ready messages; no message can be expired."""

    r.hset(f"{ns}:q:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536, "created": 0, "modified": 0,
                                  "totalsent": 0, "totalrecv": 0})
    r.sadd(f"{ns}:QUEUES", "q")
    sec, usec = r.time()
    base = sec * 1_000_000 + usec - 10**10
    pipe = r.pipeline(transaction=False)
    for i in range(15_000):
        mid = _b36(base + i * 1000) + "A" * 22
        pipe.zadd(f"{ns}:q", {mid: (base + i * 1000) // 1000})
        pipe.hset(f"{ns}:q:Q", mid, "x")
    pipe.execute()
    proc = consumers(redis_server, ns, "q", 3.0, most=10_000)
    outs = []
    try:
        time.sleep(0.3)
        for _ in range(3):
            res = qconsole("check", url, "--crit-expired", "1")
            outs.append((res.returncode, res.stdout))
            res = qconsole("stats", url, "--json")
            assert res.returncode == 0, res.stderr
            outs.append((json.loads(res.stdout)["queues"][0]["expired"], ""))
    finally:
        took = received(proc)
    assert took > 1000, took
    assert all(code == 0 for code, _out in outs), outs
