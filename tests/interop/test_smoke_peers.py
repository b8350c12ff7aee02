"""The peers fixture works: a message published by the real ddmq is counted by qconsole."""

from qconsole.backends import open_target as Root


def test_ddmq_peer_publish_is_counted(ddmq_root):
    root, broker = ddmq_root
    broker.publish("jobs", "hello")
    scan = Root(root).scan()
    assert [q.name for q in scan.queues] == ["jobs"]
    assert scan.queues[0].counts["ready"] == 1


def test_vsqs_peer_publish_is_counted(vsqs_root):
    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"hello")
    scan = Root(root).scan()
    assert scan.layout == "vsqs"
    assert scan.queues[0].counts["ready"] == 1
