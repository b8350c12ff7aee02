"""qconsole against the real clients: roots built by vsqs 0.3 and ddmq 0.9.14, then every
count, the delivery order (checked by letting the real consumer drain the queue) and every
deadline compared with what the clients themselves see."""

from __future__ import annotations

import os
import time

from qconsole.backends import open_target as Root
from qconsole.backends.base import next_message
from qconsole.states import EXPIRED, FOREIGN, INFLIGHT, READY, WRITING


def _drain_vsqs(q) -> list[str]:
    """Every id the real vsqs consumer delivers, in delivery order (long visibility)."""
    out = []
    while True:
        mid, _data = q.receive(visibility_timeout=600, timeout=0.05)
        if mid is None:
            return out
        out.append(mid)


def _drain_ddmq(broker, queue: str) -> list[str]:
    out = []
    while True:
        msg = broker.consume(queue, clean=False)
        if msg is None:
            return out
        out.append(msg.id)


def test_vsqs_counts_order_and_deadlines_match_the_real_client(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    manager.get_queue("empty")
    ids = [q.publish(b"m%d" % i) for i in range(10)]
    assert all(len(i) == 16 for i in ids)  # vsqs 0.3 writes microseconds
    long_ = [q.receive(visibility_timeout=600)[0] for _ in range(2)]
    short = [q.receive(visibility_timeout=1)[0] for _ in range(2)]
    gone = q.receive(visibility_timeout=-1)[0]  # deadline already passed
    time.sleep(1.05)  # the short ones expire; nothing consumes meanwhile
    listing = list(q._list_messages())  # the client's own view: (id,) or (id, expiry_us)

    scan = Root(root).scan_queue("jobs", collect=True)
    now_us = scan.scanned_at * 1e6
    client_ready = sorted(str(t[0]) for t in listing if len(t) == 1)
    client_held = {str(t[0]): t[1] for t in listing if len(t) == 2}
    client_expired = {m for m, exp in client_held.items() if exp <= now_us}
    assert scan.counts == {
        READY: len(client_ready), INFLIGHT: len(client_held) - len(client_expired),
        EXPIRED: len(client_expired), "delayed": 0, WRITING: 0, FOREIGN: 0,
    }
    assert scan.counts[READY] == 5 and scan.counts[INFLIGHT] == 2 and scan.counts[EXPIRED] == 3
    assert client_expired == {*short, gone} and set(client_held) - client_expired == set(long_)
    assert scan.total == q.size() == 10
    assert scan.id_unit == 1e6
    # deadlines: the µs in the file name, as seconds
    for m in scan.held_messages():
        assert round(m.deadline * 1e6) == client_held[m.id]
        assert m.relpath == f"{m.id}.{client_held[m.id]}"
        assert m.created_at == int(m.id) / 1e6
    assert scan.next_deadline == min(client_held[m] for m in long_) / 1e6
    assert Root(root).scan().queues[0].name == "empty"

    ready_order = [m.id for m in scan.ready_messages()]
    assert next_message(scan).id == ready_order[0]
    delivered = _drain_vsqs(q)
    # the real consumer delivers the ready ones in qconsole's order (expired ones are
    # requeued on the way and delivered too; in-flight ones are not)
    assert [d for d in delivered if d in ready_order] == ready_order
    assert set(delivered) == set(ready_order) | client_expired


def test_vsqs_millisecond_ids_are_read_in_ms_and_delivered_in_qconsole_order(vsqs_root):
    root, manager = vsqs_root
    qdir = os.path.join(root, "legacy")
    os.makedirs(qdir)
    base = int(time.time() * 1000)
    # what a README-conforming (ms) writer leaves: ready ids and one consumed in ms
    names = [str(base - 5000 + i * 7) for i in (3, 1, 2, 0)]
    for n in names:
        with open(os.path.join(qdir, n), "wb") as fh:
            fh.write(b"x")
    held_id = str(base - 9000)
    with open(os.path.join(qdir, f"{held_id}.{base + 600_000}"), "wb") as fh:
        fh.write(b"y")
    scan = Root(root).scan_queue("legacy", collect=True)
    assert scan.id_unit == 1e3
    assert scan.counts[READY] == 4 and scan.counts[INFLIGHT] == 1
    assert abs(scan.oldest_ready_created - (base - 5000) / 1000) < 1e-6
    held = scan.held_messages()[0]
    assert held.deadline == (base + 600_000) / 1000
    assert abs(held.deadline - time.time() - 600) < 5
    order = [m.id for m in scan.ready_messages()]
    assert order == sorted(names, key=int)
    delivered = _drain_vsqs(manager.get_queue("legacy"))
    assert [d for d in delivered if d != held_id] == order
    # vsqs 0.3 compares an ms deadline with its µs clock, so it requeues the held one too
    assert held_id in delivered


def test_ddmq_counts_order_priorities_and_deadlines_match_the_real_client(ddmq_root):
    root, broker = ddmq_root
    broker.create_queue("other")
    prios = [9, 10, 999, 9, 10, 999, 9, 5, 10, 999]
    published = {broker.publish("jobs", f"p{p}-{i}", priority=p).id: p for i, p in enumerate(prios)}
    inflight = [broker.consume("jobs", clean=False) for _ in range(3)]
    # priority 1 sorts first; a negative timeout gives a deadline already in the past
    for i in range(2):
        broker.publish("jobs", f"exp-{i}", priority=1, timeout=-100, clean=False)
    expired = [broker.consume("jobs", clean=False) for _ in range(2)]
    assert all(m.filename.split(".")[1] == "1" for m in expired)
    waiting, work = broker.get_message_list("jobs")

    scan = Root(root).scan_queue("jobs", collect=True)
    assert scan.counts == {READY: 7, INFLIGHT: 3, EXPIRED: 2, "delayed": 0, WRITING: 0, FOREIGN: 0}
    assert scan.counts[READY] == len(waiting)
    assert scan.counts[INFLIGHT] + scan.counts[EXPIRED] == len(work)
    # ddmq's text order took the three "10"s first, before 5 and 9
    assert {m.id for m in inflight} == {i for i, p in published.items() if p == 10}
    by_id = {m.id: m for m in scan.messages}
    for m in inflight + expired:
        got = by_id[m.id]
        assert got.deadline == float(int(m.filename.split(".")[0]))  # epoch seconds
        assert got.relpath == f"work/{m.filename}"
        assert got.state == (EXPIRED if m in expired else INFLIGHT)
    assert scan.next_deadline == min(int(m.filename.split(".")[0]) for m in inflight)
    assert scan.by_priority == {
        "1": {READY: 0, INFLIGHT: 0, EXPIRED: 2},
        "5": {READY: 1, INFLIGHT: 0, EXPIRED: 0},
        "9": {READY: 3, INFLIGHT: 0, EXPIRED: 0},
        "10": {READY: 0, INFLIGHT: 3, EXPIRED: 0},
        "999": {READY: 3, INFLIGHT: 0, EXPIRED: 0},
    }
    for m in scan.ready_messages():
        assert m.priority == published[m.id]
        assert m.created_at is not None and abs(m.created_at - time.time()) < 60
    assert any("mixed-width" in w for w in scan.warnings)  # "5"/"9" beside "999"
    ready_order = [m.id for m in scan.ready_messages()]
    assert next_message(scan).id == ready_order[0]
    assert _drain_ddmq(broker, "jobs") == ready_order


def test_ddmq_mixed_width_waiting_priorities_warn_and_order_is_text_order(ddmq_root):
    root, broker = ddmq_root
    published = [(p, broker.publish("jobs", f"p{p}", priority=p).id) for p in (9, 10, 999, 9, 10, 999)]
    scan = Root(root).scan_queue("jobs", collect=True)
    assert any("mixed-width priorities" in w for w in scan.warnings)
    order = [m.id for m in scan.ready_messages()]
    assert [m.priority for m in scan.ready_messages()] == [10, 10, 9, 9, 999, 999]
    assert set(order) == {i for _p, i in published}
    assert _drain_ddmq(broker, "jobs") == order


def test_ddmq_root_stats_match_get_message_list_for_every_queue(ddmq_root):
    root, broker = ddmq_root
    for q in ("a", "b"):
        broker.create_queue(q)
        for i in range(3):
            broker.publish(q, f"{q}{i}", clean=False)
    broker.consume("a", clean=False)
    scan = Root(root).scan()
    assert [q.name for q in scan.queues] == broker.list_queues() == ["a", "b", "jobs"]
    for qs in scan.queues:
        waiting, work = broker.get_message_list(qs.name)
        assert qs.counts[READY] == len(waiting)
        assert qs.counts[INFLIGHT] + qs.counts[EXPIRED] == len(work)
