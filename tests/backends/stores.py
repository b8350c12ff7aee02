"""Each kind of store under test, with the real client beside it.

A :class:`StoreKit` opens the store as qconsole does (``open_target``) and drives the store's
own reference client for what a producer or consumer does: send, receive (hidden for a
visibility timeout), acknowledge. The contract tests (test_contract.py) are written against
this small surface only, so one set of behaviours runs over every backend. A new backend
joins by adding a kit here and its id to ``KITS``.
"""

from __future__ import annotations

import os
from typing import Any

from peers import ddmq_broker, vsqs_manager
from qconsole.backends import open_target
from qconsole.backends.base import Backend


class StoreKit:
    kind = ""
    #: a restored message a consumer held comes back held (RSMQ restores score, rc and fr
    #: exactly), rather than ready (the file layouts rename it back to its ready name)
    restore_keeps_held = False

    def __init__(self, tmp_path: Any) -> None:
        self.tmp_path = tmp_path

    def backend(self) -> Backend:
        raise NotImplementedError

    def create_queue(self, name: str) -> None:
        raise NotImplementedError

    def send(self, queue: str, payload: bytes) -> str:
        """The client's publish; returns the message id as qconsole shows it."""
        raise NotImplementedError

    def receive(self, queue: str, vt: float) -> tuple[str, bytes] | None:
        """The client's receive: (id, payload), hidden for ``vt`` seconds; None when empty."""
        raise NotImplementedError

    def ack(self, queue: str, mid: str) -> None:
        """The client deletes a message it received."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class VsqsKit(StoreKit):
    kind = "vsqs"

    def __init__(self, tmp_path: Any) -> None:
        super().__init__(tmp_path)
        self.root = str(tmp_path / "vsqs")
        os.makedirs(self.root)
        self.manager = vsqs_manager(self.root)
        self.queues: dict[str, Any] = {}

    def backend(self) -> Backend:
        return open_target(self.root, self.kind)

    def create_queue(self, name: str) -> None:
        self.queues[name] = self.manager.get_queue(name)

    def send(self, queue: str, payload: bytes) -> str:
        return str(self.queues[queue].publish(payload))

    def receive(self, queue: str, vt: float) -> tuple[str, bytes] | None:
        got = self.queues[queue].receive(visibility_timeout=vt, timeout=0.2)
        return None if not got or got[0] is None else (str(got[0]), got[1])

    def ack(self, queue: str, mid: str) -> None:
        self.queues[queue].delete(mid)

    def close(self) -> None:
        self.manager.close()


class DdmqKit(StoreKit):
    kind = "ddmq"

    def __init__(self, tmp_path: Any) -> None:
        super().__init__(tmp_path)
        self.root = str(tmp_path / "ddmq")
        self.broker = ddmq_broker(self.root)
        self.held: dict[str, str] = {}

    def backend(self) -> Backend:
        return open_target(self.root, self.kind)

    def create_queue(self, name: str) -> None:
        self.broker.create_queue(name)

    def send(self, queue: str, payload: bytes) -> str:
        return self.broker.publish(queue, payload.decode()).id

    def receive(self, queue: str, vt: float) -> tuple[str, bytes] | None:
        # ddmq's visibility timeout is the queue's message_timeout (whole seconds), which a
        # broker caches: a fresh broker reads the new value. clean=False so consuming does
        # not requeue what already expired.
        self.broker.update_settings_file(queue, {"message_timeout": max(1, round(vt))})
        self.broker = ddmq_broker(self.root)
        msg = self.broker.consume(queue, clean=False)
        if msg is None:
            return None
        self.held[msg.id] = msg.filename
        return msg.id, str(msg.message).encode()

    def ack(self, queue: str, mid: str) -> None:
        self.broker.ack(queue, self.held.pop(mid))


class RsmqKit(StoreKit):
    """A fresh namespace on the test process's private redis-server, PyRSMQ 0.6.1 as the client
    (the Node client runs beside qconsole in tests/rsmq_redis)."""

    kind = "rsmq"
    restore_keeps_held = True

    def __init__(self, tmp_path: Any) -> None:
        import uuid

        from redis_peer import shared_server
        from rsmq import RedisSMQ

        super().__init__(tmp_path)
        self.server = shared_server()
        self.ns = "c" + uuid.uuid4().hex[:10]
        self.url = self.server.url(self.ns)
        self.client = RedisSMQ(host="127.0.0.1", port=self.server.port, ns=self.ns, exceptions=False)
        self._backends: list[Backend] = []

    def backend(self) -> Backend:
        b = open_target(self.url)
        self._backends.append(b)
        return b

    def create_queue(self, name: str) -> None:
        assert self.client.createQueue(qname=name).execute()

    def send(self, queue: str, payload: bytes) -> str:
        return self.client.sendMessage(qname=queue, message=payload.decode()).execute()

    def receive(self, queue: str, vt: float) -> tuple[str, bytes] | None:
        got = self.client.receiveMessage(qname=queue, vt=vt, quiet=True).execute()
        return (got["id"], got["message"].encode()) if got else None

    def ack(self, queue: str, mid: str) -> None:
        self.client.deleteMessage(qname=queue, id=mid).execute()

    def close(self) -> None:
        for b in self._backends:
            b.close()


KITS: dict[str, type[StoreKit]] = {"vsqs": VsqsKit, "ddmq": DdmqKit, "rsmq": RsmqKit}
