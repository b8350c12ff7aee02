"""What qconsole writes is read correctly by the real clients: vsqs 0.3 and ddmq 0.9.14."""

from __future__ import annotations

import json
import os
import stat

import pytest

from peers import ddmq_broker, ddmq_module, vsqs_manager
from qconsole.ops import Operations
from qconsole.backends import open_target as Root


def _ops(root: str) -> Operations:
    return Operations(Root(root), audit_log=os.path.join(root, "..", "audit.log"))


# ------------------------------------------------------------------ VSQS


def test_vsqs_publish_consumed_in_order_by_real_client(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    res = _ops(root).publish("jobs", [b"first", b"second", b"\x00binary\xff"])
    assert len(res.done) == 3 and all(len(i) == 16 for i in res.done)  # µs like vsqs 0.3
    got = [q.receive(visibility_timeout=30, timeout=1) for _ in range(3)]
    assert [p for _i, p in got] == [b"first", b"second", b"\x00binary\xff"]
    assert [i for i, _p in got] == res.done
    assert not [n for n in os.listdir(os.path.join(root, "jobs")) if not n[0].isdigit()]


def test_vsqs_publish_keeps_the_queue_unit(vsqs_root):
    root, manager = vsqs_root
    os.makedirs(os.path.join(root, "legacy"))
    with open(os.path.join(root, "legacy", "1700000000000"), "wb") as fh:  # ms, as the README says
        fh.write(b"old")
    res = _ops(root).publish("legacy", [b"new"])
    assert len(res.done[0]) == 13
    res2 = _ops(root).publish("legacy", [b"forced"], vsqs_clock="us")
    assert len(res2.done[0]) == 16
    q = manager.get_queue("legacy")
    assert q.receive(visibility_timeout=30, timeout=1)[1] == b"old"
    assert q.receive(visibility_timeout=30, timeout=1)[1] == b"new"


def test_vsqs_requeue_and_move_are_redelivered(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    manager.get_queue("dlq")
    q.publish(b"a")
    q.publish(b"b")
    mid, data = q.receive(visibility_timeout=300, timeout=1)
    assert data == b"a"
    ops = _ops(root)
    res = ops.requeue("jobs", all_held=True)
    assert res.done == [mid]
    assert q.receive(visibility_timeout=300, timeout=1) == (mid, b"a")  # back first, same id
    ops.move("jobs", "dlq", all_=True)
    assert sorted(os.listdir(os.path.join(root, "jobs"))) == []
    dlq = manager.get_queue("dlq")
    assert [dlq.receive(visibility_timeout=300, timeout=1)[1] for _ in range(2)] == [b"a", b"b"]


def test_new_files_honour_umask_and_directory_group(vsqs_root, ddmq_root):
    root, manager = vsqs_root
    os.makedirs(os.path.join(root, "g"))
    old = os.umask(0o002)
    try:
        gid = 4242 if os.geteuid() == 0 else os.getgid()
        if os.geteuid() == 0:
            os.chown(os.path.join(root, "g"), -1, gid)
        mid = _ops(root).publish("g", [b"x"]).done[0]
        st = os.stat(os.path.join(root, "g", mid))
        assert stat.S_IMODE(st.st_mode) == 0o664
        assert st.st_gid == gid
        droot, _broker = ddmq_root
        _ops(droot).publish("jobs", [b"y"])
        (name,) = [n for n in os.listdir(os.path.join(droot, "jobs")) if ".ddmq" in n]
        assert stat.S_IMODE(os.stat(os.path.join(droot, "jobs", name)).st_mode) == 0o664
    finally:
        os.umask(old)


# ------------------------------------------------------------------ ddmq


def test_ddmq_publish_read_by_real_broker_in_priority_order(ddmq_root):
    root, broker = ddmq_root
    ops = _ops(root)
    ops.publish("jobs", [b"default prio"])
    ops.publish("jobs", [b'{"json": [1, 2]}'], priority=5, timeout=42, requeue=False, requeue_limit=3)
    ops.publish("jobs", [b"urgent"], priority=1)
    first = broker.consume("jobs")
    assert first.message == "urgent" and first.priority == 1
    second = broker.consume("jobs")
    assert second.message == '{"json": [1, 2]}'
    assert (second.priority, second.timeout, second.requeue, second.requeue_limit) == (5, 42, False, 3)
    assert second.filename.startswith(str(int(second.filename.split(".")[0])))  # work name, deadline first
    third = broker.consume("jobs")
    assert third.message == "default prio" and third.priority == 999 and third.requeue is True
    body = json.loads(open(os.path.join(root, "jobs", "work", third.filename)).read())
    assert set(body) == {"message", "queue", "timeout", "id", "priority", "queue_number", "filename",
                         "requeue", "requeue_counter", "requeue_limit"}
    assert broker.consume("jobs") is None


def test_ddmq_publish_defaults_come_from_settings(ddmq_root):
    root, broker = ddmq_root
    ops = _ops(root)
    ops.save_settings(None, {"priority": 500})
    ops.publish("jobs", [b"root default"])
    ops.save_settings("jobs", {"priority": 300, "requeue": False})
    ops.publish("jobs", [b"queue default"])
    fresh = ddmq_broker(root)
    a, b = fresh.consume("jobs"), fresh.consume("jobs")
    assert (a.message, a.priority, a.requeue) == ("queue default", 300, False)
    # ddmq's create_queue wrote every default into the queue's file, so 999 beat the root's 500,
    # exactly as the real broker resolves it
    assert (b.message, b.priority) == ("root default", fresh.get_settings("jobs")["priority"] and 999)
    os.makedirs(os.path.join(root, "bare", "work"))
    with open(os.path.join(root, "bare", "ddmq.yaml"), "w") as fh:
        fh.write("{}\n")  # ddmq itself crashes on an empty queue file
    ops.publish("bare", [b"from root"])
    assert ddmq_broker(root).consume("bare").priority == 500


def test_ddmq_requeue_like_ddmq_does(ddmq_root):
    root, broker = ddmq_root
    broker.publish("jobs", "plain")
    broker.publish("jobs", "custom", requeue_prio=7)  # message's own integer requeue priority
    broker.publish("jobs", "waiting")
    m1 = broker.consume("jobs")
    m2 = broker.consume("jobs")
    res = _ops(root).requeue("jobs", [m1.id, m2.id])
    assert sorted(res.done) == sorted([m1.id, m2.id])
    assert os.listdir(os.path.join(root, "jobs", "work")) == []
    fresh = ddmq_broker(root)
    got = [fresh.consume("jobs") for _ in range(3)]
    # requeue_prio 0 goes first (we write the intended 0; see ddmq_ops.requeued_body), then 7, then 999
    assert [(m.message, m.priority, m.requeue_counter) for m in got] == [
        ("plain", 0, 1), ("custom", 7, 1), ("waiting", 999, 0)]
    assert got[0].id == m1.id and got[1].id == m2.id


def test_ddmq_requeue_skips_what_the_consumer_acked(ddmq_root):
    root, broker = ddmq_root
    broker.publish("jobs", "x")
    m = broker.consume("jobs")
    ops = _ops(root)
    scan_ids = [m.id]
    broker.ack("jobs", m.filename)
    with pytest.raises(Exception):  # gone before we looked: unknown id
        ops.requeue("jobs", scan_ids)


def test_ddmq_settings_read_back_by_real_broker(ddmq_root):
    root, _broker = ddmq_root
    with open(os.path.join(root, "jobs", "ddmq.yaml"), "a") as fh:
        fh.write("custom_key: keep me\n")
    ops = _ops(root)
    ops.save_settings("jobs", {"message_timeout": 30, "requeue": False})
    ops.save_settings(None, {"requeue_prio": 3})
    fresh = ddmq_broker(root)
    s = fresh.get_settings("jobs")
    assert s["message_timeout"] == 30 and s["requeue"] is False and s["custom_key"] == "keep me"
    assert fresh.get_settings("jobs")["requeue_prio"] == 0  # queue file still says 0
    assert fresh.get_config_file()["requeue_prio"] == 3


def test_ddmq_settings_replace_a_symlink_not_its_target(ddmq_root, tmp_path):
    root, _broker = ddmq_root
    target = tmp_path / "elsewhere.yaml"
    target.write_text("priority: 10\n")
    cfg = os.path.join(root, "jobs", "ddmq.yaml")
    os.unlink(cfg)
    os.symlink(target, cfg)
    _ops(root).save_settings("jobs", {"priority": 20})
    assert target.read_text() == "priority: 10\n"
    assert not os.path.islink(cfg)
    assert ddmq_broker(root).get_settings("jobs")["priority"] == 20


def test_ddmq_create_queue_as_the_client_does(ddmq_root):
    root, broker = ddmq_root
    _ops(root).create_queue("fresh")
    fresh = ddmq_broker(root)
    assert "fresh" in fresh.list_queues()
    assert fresh.get_settings("fresh") == fresh.default_settings
    fresh.publish("fresh", "hello")
    assert fresh.consume("fresh").message == "hello"


def test_ddmq_move_and_trash_restore(ddmq_root):
    root, broker = ddmq_root
    broker.create_queue("dlq")
    for i in range(3):
        broker.publish("jobs", f"m{i}", priority=10 + i)
    held = broker.consume("jobs")
    ops = _ops(root)
    res = ops.move("jobs", "dlq", all_=True)
    assert len(res.done) == 3
    fresh = ddmq_broker(root)
    got = [fresh.consume("dlq") for _ in range(3)]
    assert sorted(m.message for m in got) == ["m0", "m1", "m2"]
    assert all(m.queue == "dlq" for m in got)
    assert held.id in {m.id for m in got}
    # now delete the in-flight ones into the trash and undo: they come back ready
    purge = ops.purge("dlq")
    assert len(purge.done) == 3 and purge.batch
    assert ops.trash_list()[0].count == 3
    ops.trash_restore()
    again = [ddmq_broker(root).consume("dlq") for _ in range(3)]
    assert sorted(m.message for m in again) == ["m0", "m1", "m2"]
    assert ops.trash_list() == []


def test_ddmq_move_keeps_the_priority_a_file_name_carries_when_its_body_has_none(ddmq_root):
    """A body without a usable priority (another writer's, or edited by hand): the move keeps the
    priority its file name says (what consumers order it by), not DEST's default."""
    root, broker = ddmq_root
    broker.create_queue("dlq")
    broker.publish("jobs", "urgent", priority=10)
    broker.publish("jobs", "plain", priority=500)
    qdir = os.path.join(root, "jobs")
    urgent = next(n for n in os.listdir(qdir) if n.startswith("10."))
    body = json.load(open(os.path.join(qdir, urgent)))
    del body["priority"]
    with open(os.path.join(qdir, urgent), "w") as fh:
        json.dump(body, fh)
    assert len(_ops(root).move("jobs", "dlq", all_=True).done) == 2
    names = sorted(n for n in os.listdir(os.path.join(root, "dlq")) if ".ddmq" in n)
    assert [n.split(".")[0] for n in names] == ["10", "500"], names
    assert ddmq_broker(root).consume("dlq").message == "urgent"  # still first in line


def test_vsqs_delete_to_trash_and_restore(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    ids = [q.publish(p) for p in (b"1", b"2", b"3")]
    q.receive(visibility_timeout=300, timeout=1)
    ops = _ops(root)
    res = ops.delete("jobs", ids[:2])
    assert sorted(res.done) == sorted(ids[:2])
    assert sorted(os.listdir(os.path.join(root, "jobs"))) == [ids[2]]
    ops.trash_restore(res.batch)
    assert sorted(os.listdir(os.path.join(root, "jobs"))) == sorted(ids)  # in-flight one comes back ready
    res2 = ops.delete("jobs", [ids[0]], trash=False)
    assert res2.batch is None and ops.trash_list() == []
    assert [q.receive(visibility_timeout=300, timeout=1)[1] for _ in range(2)] == [b"2", b"3"]
