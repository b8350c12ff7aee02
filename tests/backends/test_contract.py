"""One set of behaviours every backend keeps, run over each kind of store beside its real client.

Counts by state, the delivery order the real consumer uses, peek without side effects,
requeue/delete/move/purge/restore and what each does when a client got there first,
read-only refusal, and bad ids and names.
"""

from __future__ import annotations

import os
import time

import pytest

from qconsole.backends import KINDS
from qconsole.backends.base import TRASH, find_message
from qconsole.errors import MessageNotFoundError, QConsoleError, QueueNameError, UnknownQueueError
from qconsole.ops import Operations, ReadOnlyError
from qconsole.states import EXPIRED, INFLIGHT, READY


def _ops(kit, **kw) -> Operations:
    return Operations(kit.backend(), audit_log=os.path.join(str(kit.tmp_path), "audit.log"), **kw)


def _drain(kit, queue: str) -> list[bytes]:
    """Everything the real consumer receives now, in order (and acknowledged)."""
    out = []
    while (got := kit.receive(queue, 300)) is not None:
        kit.ack(queue, got[0])
        out.append(got[1])
    return out


def test_describes_itself(kit):
    b = kit.backend()
    assert b.kind == kit.kind and b.kind in KINDS and b.title
    assert b.describe()["layout"] == b.kind and b.target
    for opt in b.publish_options:
        assert opt.name and opt.kind and opt.help and opt.flag.startswith("--")


def test_counts_by_state(kit):
    kit.create_queue("jobs")
    for p in (b"a", b"b", b"c", b"d"):
        kit.send("jobs", p)
    kit.receive("jobs", 1)  # will expire
    kit.receive("jobs", 300)  # stays in flight
    time.sleep(2.1)  # ddmq deadlines are whole seconds
    scan = kit.backend().scan_queue("jobs")
    assert (scan.counts[READY], scan.counts[INFLIGHT], scan.counts[EXPIRED]) == (2, 1, 1)
    assert scan.total == 4
    root = kit.backend().scan()
    assert [q.name for q in root.queues] == ["jobs"] and root.totals()["total"] == 4


def test_ready_order_is_the_real_consumers_order(kit):
    kit.create_queue("jobs")
    sent = [kit.send("jobs", f"m{i}".encode()) for i in range(5)]
    scan = kit.backend().scan_queue("jobs", collect=True)
    assert [m.id for m in scan.ready_messages()] == sent
    assert _drain(kit, "jobs") == [f"m{i}".encode() for i in range(5)]


def test_peek_changes_nothing(kit):
    kit.create_queue("jobs")
    mid = kit.send("jobs", b'{"job": 1}')
    b = kit.backend()
    before = b.scan_queue("jobs", collect=True)
    payload = b.read_payload(find_message(before, mid), None)
    assert payload.body == b'{"job": 1}' and payload.parsed == {"job": 1}
    after = b.scan_queue("jobs", collect=True)
    assert [(m.id, m.state) for m in after.messages] == [(m.id, m.state) for m in before.messages]
    assert kit.receive("jobs", 300) == (mid, b'{"job": 1}')


def test_publish_is_received_by_the_client(kit):
    kit.create_queue("jobs")
    res = _ops(kit).publish("jobs", [b"one", b"two"])
    assert len(res.done) == 2 and not res.skipped
    assert _drain(kit, "jobs") == [b"one", b"two"]


def test_requeue_makes_a_held_message_ready_again(kit):
    kit.create_queue("jobs")
    kit.send("jobs", b"x")
    mid, _ = kit.receive("jobs", 300)
    assert kit.receive("jobs", 300) is None
    res = _ops(kit).requeue("jobs", [mid])
    assert res.done == [mid]
    got = kit.receive("jobs", 300)
    assert got is not None and got[1] == b"x"


def test_requeue_of_what_the_consumer_acked_meanwhile_is_skipped(kit):
    kit.create_queue("jobs")
    kit.send("jobs", b"x")
    mid, _ = kit.receive("jobs", 300)
    b = kit.backend()
    msg = find_message(b.scan_queue("jobs", collect=True), mid)
    kit.ack("jobs", mid)  # the consumer finishes between our look and our change
    outcomes = b.requeue("jobs", [msg])
    assert [m for m, _r in outcomes] == [mid] and outcomes[0][1]  # a skip reason, not done
    assert b.scan_queue("jobs").total == 0  # nothing came back from the dead


def test_delete_goes_to_the_trash_and_restores(kit):
    kit.create_queue("jobs")
    a = kit.send("jobs", b"a")
    kit.send("jobs", b"b")
    ops = _ops(kit)
    res = ops.delete("jobs", [a])
    assert res.done == [a]
    if not kit.backend().can(TRASH):
        assert res.batch is None
        return
    assert res.batch and ops.trash_list()[0].count == 1
    assert kit.backend().scan_queue("jobs").total == 1
    ops.trash_restore(res.batch)
    assert ops.trash_list() == []
    assert sorted(_drain(kit, "jobs")) == [b"a", b"b"]


def test_purge_then_restore_brings_everything_back_ready(kit):
    kit.create_queue("jobs")
    for p in (b"a", b"b", b"c"):
        kit.send("jobs", p)
    kit.receive("jobs", 300)  # one in flight is purged too
    ops = _ops(kit)
    res = ops.purge("jobs")
    assert len(res.done) == 3
    assert kit.backend().scan_queue("jobs").total == 0
    ops.trash_restore(res.batch)
    scan = kit.backend().scan_queue("jobs")
    if kit.restore_keeps_held:
        # RSMQ restores exactly (score, rc, fr): the one a consumer holds is in flight again,
        # so that consumer's delete still finds it and no second consumer gets it meanwhile
        assert (scan.counts[READY], scan.counts[INFLIGHT], scan.total) == (2, 1, 3)
        assert sorted(_drain(kit, "jobs")) == [b"b", b"c"]
        return
    assert scan.counts[READY] == 3 and scan.total == 3
    assert sorted(_drain(kit, "jobs")) == [b"a", b"b", b"c"]


def test_purge_without_trash_is_final(kit):
    kit.create_queue("jobs")
    kit.send("jobs", b"a")
    res = _ops(kit).purge("jobs", trash=False)
    assert len(res.done) == 1 and res.batch is None
    assert kit.backend().scan_queue("jobs").total == 0 and _ops(kit).trash_list() == []


def test_move_keeps_order_and_payloads(kit):
    kit.create_queue("jobs")
    kit.create_queue("dlq")
    for p in (b"a", b"b", b"c"):
        kit.send("jobs", p)
    res = _ops(kit).move("jobs", "dlq", all_=True)
    assert len(res.done) == 3
    assert kit.backend().scan_queue("jobs").total == 0
    assert _drain(kit, "dlq") == [b"a", b"b", b"c"]


def test_move_of_what_the_consumer_took_meanwhile_is_skipped(kit):
    kit.create_queue("jobs")
    kit.create_queue("dlq")
    mid = kit.send("jobs", b"a")
    b = kit.backend()
    msg = find_message(b.scan_queue("jobs", collect=True), mid)
    got = kit.receive("jobs", 300)
    kit.ack("jobs", got[0])
    outcomes = b.move("jobs", "dlq", [msg])
    assert outcomes[0][0] == mid and outcomes[0][1]
    assert b.scan_queue("dlq").total == 0 and b.scan_queue("jobs").total == 0


def test_read_only_refuses_every_change(kit):
    kit.create_queue("jobs")
    kit.create_queue("dlq")
    mid = kit.send("jobs", b"a")
    ops = _ops(kit, read_only=True)
    for call in (lambda: ops.publish("jobs", [b"x"]), lambda: ops.requeue("jobs", [mid]),
                 lambda: ops.delete("jobs", [mid]), lambda: ops.purge("jobs"),
                 lambda: ops.move("jobs", "dlq", all_=True), lambda: ops.trash_restore(),
                 lambda: ops.trash_empty(), lambda: ops.create_queue("new")):
        with pytest.raises(ReadOnlyError):
            call()
    assert kit.backend().scan_queue("jobs").total == 1
    assert not os.path.exists(os.path.join(str(kit.tmp_path), "audit.log"))


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", ".."])
def test_bad_queue_names_are_refused(kit, name):
    kit.create_queue("jobs")
    b = kit.backend()
    with pytest.raises(QueueNameError):
        b.scan_queue(name)
    with pytest.raises(QueueNameError):
        _ops(kit).purge(name)


def test_unknown_queue_and_unknown_id(kit):
    kit.create_queue("jobs")
    kit.send("jobs", b"a")
    with pytest.raises(UnknownQueueError):
        kit.backend().scan_queue("nope")
    with pytest.raises(MessageNotFoundError):
        _ops(kit).requeue("jobs", ["no-such-id"])
    with pytest.raises(QConsoleError):
        _ops(kit).delete("jobs", ["no-such-id"])
    assert kit.backend().scan_queue("jobs").total == 1
