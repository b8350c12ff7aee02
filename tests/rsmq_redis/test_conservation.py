"""Conservation under load: Node producers and PyRSMQ consumers (some of which "die" holding a
message, so it expires and is delivered again) while qconsole requeues, moves, deletes, purges
and restores. Every payload is received at least once; afterwards no message, no orphan hash
field and no qconsole key is left. Bounded in count and time; talks only to the private server.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from qconsole.backends import open_target
from qconsole.errors import MessageNotFoundError
from qconsole.ops import Operations
from qconsole.states import READY

PRODUCERS = (("a-", 1200), ("b-", 1200))
CONSUMERS = 3
DIE_RATE = 0.15  # a consumer that "dies": receives and never deletes (redelivered after vt)
VT = 1
WORK_S = 0.006
TIME_LIMIT_S = 75


@pytest.mark.slow
def test_every_payload_survives_qconsole_beside_live_clients(node, redis_server, ns, url, r):
    from rsmq import RedisSMQ

    node.call("createQueue", qname="work", vt=VT)
    node.call("createQueue", qname="side", vt=VT)
    expected = {f"{p}{i}" for p, n in PRODUCERS for i in range(n)}
    producers = [node.producer("work", n, p, delay_every=10) for p, n in PRODUCERS]
    received: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    stats = {"received": 0, "deleted": 0, "died": 0, "delete_missed": 0}

    def consume(seed: int) -> None:
        rnd = random.Random(seed)
        client = RedisSMQ(host="127.0.0.1", port=redis_server.port, ns=ns, exceptions=False)
        while not stop.is_set():
            got = False
            for q in ("work", "side"):
                msg = client.receiveMessage(qname=q, vt=VT, quiet=True).execute()
                if not msg:
                    continue
                got = True
                with lock:
                    received.add(msg["message"])
                    stats["received"] += 1
                time.sleep(WORK_S)  # the work: lets a backlog build for qconsole to act on
                if rnd.random() < DIE_RATE:
                    with lock:
                        stats["died"] += 1
                    continue
                # PyRSMQ's deleteMessage is True only when the message and both :rc and :fr went
                if client.deleteMessage(qname=q, id=msg["id"], quiet=True).execute():
                    with lock:
                        stats["deleted"] += 1
                else:
                    with lock:
                        stats["delete_missed"] += 1  # qconsole had it in the trash at that moment
            if not got:
                time.sleep(0.02)

    threads = [threading.Thread(target=consume, args=(i,), daemon=True) for i in range(CONSUMERS)]
    for t in threads:
        t.start()

    backend = open_target(url)
    ops = Operations(backend, audit_log="/dev/null")
    rnd = random.Random(7)
    done_ops = {"requeue": 0, "move": 0, "purge": 0, "delete": 0, "restore": 0}
    started = time.monotonic()
    try:
        while time.monotonic() - started < TIME_LIMIT_S:
            producing = any(p.poll() is None for p in producers)
            step = rnd.choice(("requeue", "move", "purge", "delete"))
            if step == "requeue":
                done_ops["requeue"] += len(ops.requeue("work", all_held=True).done)
            elif step == "move":
                ready = [m.id for m in backend.scan_queue("work", collect=True).messages if m.state == READY][-20:]
                try:
                    done_ops["move"] += len(ops.move("work", "side", ready).done) if ready else 0
                except MessageNotFoundError:
                    pass  # one of them was consumed between the two scans: nothing moved
            elif step == "purge":
                res = ops.purge("side")
                done_ops["purge"] += len(res.done)
                if res.batch:
                    time.sleep(rnd.random() * 0.2)
                    done_ops["restore"] += len(ops.trash_restore(res.batch).done)
            else:
                msgs = backend.scan_queue("work", collect=True).messages
                pick = [m.id for m in rnd.sample(msgs, min(5, len(msgs)))]
                try:
                    res = ops.delete("work", pick) if pick else None
                except MessageNotFoundError:
                    res = None  # consumed between the two scans
                if res is not None:
                    done_ops["delete"] += len(res.done)
                    if res.batch:
                        done_ops["restore"] += len(ops.trash_restore(res.batch).done)
            if not producing:
                # drained: nothing in either queue, nothing left in the trash
                if r.zcard(f"{ns}:work") == 0 and r.zcard(f"{ns}:side") == 0 and not ops.trash_list():
                    break
            time.sleep(0.05)
        for b in ops.trash_list():  # whatever a last step left
            ops.trash_restore(b.batch)
        deadline = time.monotonic() + 30
        while (r.zcard(f"{ns}:work") or r.zcard(f"{ns}:side")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        for p in producers:
            if p.poll() is None:
                p.kill()
            p.wait(10)
        backend.close()

    print(f"\nconservation: {len(expected)} sent by {len(PRODUCERS)} Node producers, {CONSUMERS} PyRSMQ consumers "
          f"{stats}, qconsole {done_ops}, {time.monotonic() - started:.1f} s")
    sent = sum(int(__import__("json").loads(p.stdout.read())["sent"]) for p in producers)
    assert sent == len(expected)
    missing = expected - received
    assert not missing, f"{len(missing)} payloads never received, e.g. {sorted(missing)[:5]}"
    assert received == expected  # and nothing that was never sent
    assert r.zcard(f"{ns}:work") == 0 and r.zcard(f"{ns}:side") == 0
    attrs = {b"vt", b"delay", b"maxsize", b"created", b"modified", b"totalsent", b"totalrecv"}
    for q in ("work", "side"):
        left = set(r.hkeys(f"{ns}:{q}:Q"))
        assert left <= attrs, f"orphan fields in {q}: {sorted(left - attrs)[:5]}"
    assert list(r.scan_iter(f"{ns}:qconsole*")) == []
    assert int(r.hget(f"{ns}:work:Q", "totalsent")) == len(expected)
    # qconsole really did its part while the clients ran
    assert done_ops["requeue"] and done_ops["move"] and done_ops["purge"] and done_ops["restore"], done_ops
    assert stats["died"] > 0 and stats["received"] > len(expected), stats
