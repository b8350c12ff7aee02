"""Model-based test of the operations API against the real clients, for both layouts.

A hypothesis state machine drives :class:`qconsole.ops.Operations` (publish, requeue by
ids/all/expired, delete, purge, move, trash restore/empty, recover) on a real temporary
root, interleaved with the reference clients (vsqs 0.3, ddmq 0.9.14) publishing,
consuming without acking (the message stays held), consuming and acking (it leaves the
system), and acking a held message late (after qconsole may have requeued or moved it).

ddmq's consumer also gives messages back late (nack) and runs its clean() (expired ones
are requeued or dropped, as each message asks).

Every published payload is unique (a counter), so the model knows where each one is:
``(queue, state)``, ``(TRASH, batch)`` or gone. After every step:

(a) the payloads read from every message file of every queue and of the trash are exactly
    the model's: nothing lost, nothing duplicated, each in its queue and state or batch;
(b) ``Root(path).scan()`` counts per queue and state equal the model's (nothing writing,
    nothing foreign), and ``trash_list()`` counts per batch equal the model's;
(c) no qconsole temp/claim file (``.qconsole-…``) is left anywhere under the root.

Time is never waited for. A held message is in flight (deadline an hour away) or already
expired: vsqs consumers receive with ``visibility_timeout`` 3600 or 0; ddmq's deadline comes
from the message, so ddmq producers publish with ``timeout`` 3600, none (the queue's 600)
or -10 (a message whose consumer's deadline is already past when it is taken). ddmq's
publish and consume run with ``clean=False``, so expired messages are requeued only by
the explicit clean rule; vsqs's consumer requeues the expired messages it passes, and the
model predicts exactly which.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ops_inventory import inventory
from peers import ddmq_broker, vsqs_manager
from qconsole.backends.fs.listing import QC_TEMP_PREFIX
from qconsole.ops import Operations
from qconsole.backends.fs.trash import trash_dir
from qconsole.backends import open_target as Root
from qconsole.states import EXPIRED, FOREIGN, INFLIGHT, READY, WRITING

QUEUES = ("a", "b")
HELD = (INFLIGHT, EXPIRED)
TRASH = "<trash>"
LONG = 3600  # seconds: a held message stays in flight for the whole test
PAST = -10  # ddmq message timeout whose deadline is already over when it is consumed

SETTINGS = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

#: background threads closing vsqs managers (see VsqsMachine.stop_clients)
_CLOSERS: list[threading.Thread] = []

queues = st.sampled_from(QUEUES)
pairs = st.sampled_from([("a", "b"), ("b", "a")])
to_trash = st.sampled_from([True, True, True, False])


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def teardown_module() -> None:
    while _CLOSERS:
        _CLOSERS.pop().join(timeout=30)


class OpsMachine(RuleBasedStateMachine):
    """The layout-independent part; subclasses supply the real client and the file format."""

    LAYOUT = ""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix=f"qc-stateful-{self.LAYOUT}-")
        self.path = os.path.join(self.tmp, self.LAYOUT)
        self.counter = 0
        #: payload -> (queue, state) or (TRASH, batch); gone payloads are removed
        self.loc: dict[str, tuple[str, str]] = {}
        #: trash batches oldest first: (batch, queue, payloads)
        self.batches: list[tuple[str, str, list[str]]] = []
        #: payload -> (client handle of a consume not acked yet, still the message's file?)
        self.handles: dict[str, tuple[Any, bool]] = {}
        #: ddmq payloads published with a timeout already past when consumed
        self.expire_at_once: set[str] = set()
        self.gone: set[str] = set()
        self.start_clients()
        self.ops = Operations(Root(self.path), audit_log=os.path.join(self.tmp, "audit.log"))

    def teardown(self) -> None:
        self.stop_clients()

    def remove_tree(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ layout hooks

    def start_clients(self) -> None:
        raise NotImplementedError

    def stop_clients(self) -> None:
        self.remove_tree()

    def read_payload(self, path: str, queue: str | None = None, mid: str | None = None) -> str:
        """The payload of a message file; ``queue``/``mid`` given for one that sits in a queue."""
        raise NotImplementedError

    # ------------------------------------------------------------------ model helpers

    def new_payloads(self, n: int, who: str) -> list[str]:
        out = []
        for _ in range(n):
            self.counter += 1
            out.append(f"{who}-{self.counter}")
        return out

    def put(self, payload: str, queue: str, state: str) -> None:
        """The payload moved by anything but a consume: a client's handle no longer names its file."""
        self.loc[payload] = (queue, state)
        if payload in self.handles:
            self.handles[payload] = (self.handles[payload][0], False)

    def drop(self, payload: str) -> None:
        del self.loc[payload]
        self.handles.pop(payload, None)
        self.gone.add(payload)

    def in_queue(self, queue: str, *states: str) -> list[str]:
        return sorted(p for p, (q, s) in self.loc.items() if q == queue and (not states or s in states))

    def disk(self) -> tuple[dict[str, tuple[str, str]], dict[str, Any], list[str]]:
        """payload -> (queue, state) / (TRASH, batch) as read from disk, payload -> Message, duplicates."""
        root = Root(self.path)
        where: dict[str, tuple[str, str]] = {}
        msgs: dict[str, Any] = {}
        dups: list[str] = []
        for q in QUEUES:
            for m in root.scan_queue(q, collect=True).messages or ():
                p = self.read_payload(os.path.join(root.path, q, m.relpath), q, m.id)
                if p in where:
                    dups.append(p)
                where[p] = (q, m.state)
                msgs[p] = m
        tdir = trash_dir(root.path)
        for batch in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else ():
            for dirpath, _dirs, files in os.walk(os.path.join(tdir, batch, "files")):
                for name in files:
                    p = self.read_payload(os.path.join(dirpath, name))
                    if p in where:
                        dups.append(p)
                    where[p] = (TRASH, batch)
        return where, msgs, dups

    def ids(self, payloads: list[str]) -> list[str]:
        _where, msgs, _dups = self.disk()
        return [msgs[p].id for p in payloads]

    def idents(self, data: Any, payloads: list[str]) -> tuple[list[str], list[str]]:
        """(what to name the messages by: ids or file names, as the CLI accepts; their ids)."""
        _where, msgs, _dups = self.disk()
        by_name = data.draw(st.booleans(), label="by file name")
        return [msgs[p].name if by_name else msgs[p].id for p in payloads], [msgs[p].id for p in payloads]

    def pick(self, data: Any, candidates: list[str], most: int = 3) -> list[str]:
        return data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=most, unique=True))

    def trash_batch(self, res: Any, queue: str, payloads: list[str], trash: bool) -> None:
        if not trash:
            assert res.batch is None
            for p in payloads:
                self.drop(p)
            return
        if not payloads:
            assert res.batch is None  # nothing removed, no empty batch
            return
        assert res.batch
        self.batches.append((res.batch, queue, list(payloads)))
        for p in payloads:
            self.put(p, TRASH, res.batch)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def conserved(self) -> None:
        # (a) every message file, by payload: the model's multiset, each where the model says
        live = Counter(list(self.loc))
        found, odd = inventory(self.path, self.LAYOUT)
        assert not odd, f"odd files left: {odd}"
        assert found == live, (f"lost: {sorted(live - found)}, duplicated or unknown: {sorted(found - live)}")
        where, _msgs, dups = self.disk()
        assert not dups, f"payloads in two places: {dups}"
        wrong = {p: (self.loc.get(p), where.get(p)) for p in set(where) | set(self.loc)
                 if where.get(p) != self.loc.get(p)}
        assert not wrong, f"payload: (model, disk) differ: {wrong}"
        assert not (self.gone & set(where)), "a payload that left the system came back"
        # (b) the scanner's counts, per queue and state
        scan = Root(self.path).scan()
        assert [q.name for q in scan.queues] == list(QUEUES)
        for qs in scan.queues:
            want = {s: len(self.in_queue(qs.name, s)) for s in (READY, INFLIGHT, EXPIRED)}
            want.update({"delayed": 0, WRITING: 0, FOREIGN: 0})
            assert qs.counts == want, f"{qs.name}: scanned {qs.counts}, model {want}"
        batches = {b.batch: b.count for b in self.ops.trash_list()}
        assert batches == {b: len(ps) for b, _q, ps in self.batches}
        # (c) no qconsole temp or claim file anywhere
        temps = [os.path.join(d, n) for d, dirs, files in os.walk(self.path)
                 for n in files + dirs if n.startswith(QC_TEMP_PREFIX)]
        assert not temps, f"qconsole leftovers: {temps}"
        assert not self.ops.warnings, self.ops.warnings

    # ------------------------------------------------------------------ rules

    @initialize(data=st.data())
    def seed(self, data: Any) -> None:
        """Both queues start with messages from both producers, some of them held by a consumer."""
        for q in QUEUES:
            self.qc_publish(q, data.draw(st.integers(1, 3), label=f"{q}: qconsole publishes"), data)
            self.client_publish(q, data.draw(st.integers(1, 2), label=f"{q}: client publishes"), data)
            for _ in range(data.draw(st.integers(0, 3), label=f"{q}: consumer holds")):
                self.client_consume(q, False, data)

    @rule(queue=queues, n=st.integers(1, 3), data=st.data())
    def qc_publish(self, queue: str, n: int, data: Any) -> None:
        payloads = self.new_payloads(n, "qc")
        opts = self.publish_options(data)
        res = self.ops.publish(queue, [p.encode() for p in payloads], **opts)
        assert len(res.done) == n and not res.skipped
        for p in payloads:
            self.put(p, queue, READY)

    def publish_options(self, data: Any) -> dict[str, Any]:
        return {}

    @precondition(lambda self: any(s in HELD for _q, s in self.loc.values()))
    @rule(mode=st.sampled_from(["ids", "ids-expired", "all", "expired"]), data=st.data())
    def qc_requeue(self, mode: str, data: Any) -> None:
        queue = data.draw(st.sampled_from([q for q in QUEUES if self.in_queue(q, *HELD)]), label="queue")
        if mode.startswith("ids"):
            present = self.in_queue(queue)
            if not present:
                return
            held = self.in_queue(queue, *HELD)
            held_only = held and data.draw(st.booleans(), label="held only")
            chosen = self.pick(data, held if held_only else present, 4)
            id_of = dict(zip(chosen, self.ids(chosen)))
            expired_only = mode == "ids-expired"
            res = self.ops.requeue(queue, list(id_of.values()), expired_only=expired_only)
            targets = [p for p in chosen if self.loc[p][1] in ((EXPIRED,) if expired_only else HELD)]
            # without --expired, the ready ones are reported as skipped (already ready)
            skipped = [] if expired_only else [id_of[p] for p in chosen if self.loc[p][1] == READY]
        else:
            targets = self.in_queue(queue, *(HELD if mode == "all" else (EXPIRED,)))
            id_of = dict(zip(targets, self.ids(targets))) if targets else {}
            res = (self.ops.requeue(queue, all_held=True) if mode == "all"
                   else self.ops.requeue(queue, expired_only=True))
            skipped = []
        assert sorted(i for i, _why in res.skipped) == sorted(skipped), res.skipped
        assert sorted(res.done) == sorted(id_of[p] for p in targets), (res.done, targets)
        event(f"requeue {mode}: {'some' if targets else 'none'} requeued"
              + (f", {len(skipped)} skipped as ready" if skipped else ""))
        for p in targets:
            self.put(p, queue, READY)

    @rule(queue=queues, trash=to_trash, data=st.data())
    def qc_delete(self, queue: str, trash: bool, data: Any) -> None:
        present = self.in_queue(queue)
        if not present:
            return
        chosen = self.pick(data, present)
        names, ids = self.idents(data, chosen)
        res = self.ops.delete(queue, names, trash=trash)
        assert sorted(res.done) == sorted(ids) and not res.skipped, res
        event(f"delete: {'to the trash' if trash else 'for good'}")
        self.trash_batch(res, queue, chosen, trash)

    @rule(queue=queues, state=st.sampled_from([None, READY, INFLIGHT, EXPIRED]), trash=to_trash)
    def qc_purge(self, queue: str, state: str | None, trash: bool) -> None:
        targets = self.in_queue(queue, *((state,) if state else ()))
        ids = self.ids(targets) if targets else []
        res = self.ops.purge(queue, state=state, trash=trash)
        assert sorted(res.done) == sorted(ids) and not res.skipped, res
        event(f"purge: {'some' if targets else 'none'} purged")
        self.trash_batch(res, queue, targets, trash)

    @rule(route=pairs, mode=st.sampled_from(["ids", "all", READY, INFLIGHT, EXPIRED]), data=st.data())
    def qc_move(self, route: tuple[str, str], mode: str, data: Any) -> None:
        src, dest = route
        if mode == "ids":
            present = self.in_queue(src)
            if not present:
                return
            targets = self.pick(data, present, 4)
            names, ids = self.idents(data, targets)
            res = self.ops.move(src, dest, names)
        elif mode == "all":
            targets = self.in_queue(src)
            ids = self.ids(targets) if targets else []
            res = self.ops.move(src, dest, all_=True)
        else:
            targets = self.in_queue(src, mode)
            ids = self.ids(targets) if targets else []
            res = self.ops.move(src, dest, state=mode)
        assert sorted(res.done) == sorted(ids) and not res.skipped, res
        event(f"move {mode}: {'some' if targets else 'none'} moved")
        for p in targets:
            self.put(p, dest, READY)

    @precondition(lambda self: self.batches)
    @rule(latest=st.booleans(), data=st.data())
    def qc_trash_restore(self, latest: bool, data: Any) -> None:
        if latest:
            batch, queue, payloads = self.batches.pop()
            res = self.ops.trash_restore()
        else:
            i = data.draw(st.integers(0, len(self.batches) - 1))
            batch, queue, payloads = self.batches.pop(i)
            res = self.ops.trash_restore(batch)
        assert len(res.done) == len(payloads) and not res.skipped, res
        event(f"trash restore: {len(self.batches) + 1} batches before")
        for p in payloads:
            self.put(p, queue, READY)  # in-flight and expired ones come back ready

    @rule(older_than=st.sampled_from([None, None, 0.0, 3600.0]))
    def qc_trash_empty(self, older_than: float | None) -> None:
        res = self.ops.trash_empty(older_than)
        if older_than:
            assert res.done == []  # every batch is younger than an hour
            return
        assert sorted(res.done) == sorted(b for b, _q, _ps in self.batches)
        event(f"trash empty: {'some' if self.batches else 'no'} batches removed")
        for _b, _q, payloads in self.batches:
            for p in payloads:
                self.drop(p)
        self.batches.clear()

    @rule()
    def qc_recover(self) -> None:
        rep = self.ops.recover()
        assert not (rep.restored or rep.completed or rep.removed_temp or rep.live or rep.problems), rep

    # ------------------------------------------------------------------ real client rules

    @rule(queue=queues, n=st.integers(1, 2), data=st.data())
    def client_publish(self, queue: str, n: int, data: Any) -> None:
        for p in self.new_payloads(n, "cl"):
            self.client_publish_one(queue, p, data)
            self.put(p, queue, READY)

    def client_publish_one(self, queue: str, payload: str, data: Any) -> None:
        raise NotImplementedError

    @rule(queue=queues, ack=st.booleans(), data=st.data())
    def client_consume(self, queue: str, ack: bool, data: Any) -> None:
        """Consume one message; with ``ack`` it leaves the system, else the consumer holds it."""
        got = self.consume_one(queue, data)
        if got is None:
            return
        payload, handle, state = got
        event(f"consume: {'acked' if ack else 'held'} {state}")
        if ack:
            assert self.ack(queue, handle), f"fresh ack of {payload} did nothing"
            self.drop(payload)
        else:
            self.loc[payload] = (queue, state)
            self.handles[payload] = (handle, True)

    def consume_one(self, queue: str, data: Any) -> tuple[str, Any, str] | None:
        raise NotImplementedError

    def ack(self, queue: str, handle: Any) -> bool:
        raise NotImplementedError

    @precondition(lambda self: self.handles)
    @rule(data=st.data())
    def client_ack_late(self, data: Any) -> None:
        """The consumer acks what it took earlier; if qconsole moved that file meanwhile, a no-op."""
        payload = data.draw(st.sampled_from(sorted(self.handles)))
        handle, valid = self.handles.pop(payload)
        queue = handle[0]
        acked = self.ack(queue, handle)
        event(f"late ack: {'valid' if valid else 'stale'} handle")
        if valid:
            assert acked, f"ack of held {payload} did nothing"
            self.drop(payload)
        else:
            assert not acked, f"stale ack of {payload} removed something"


class VsqsMachine(OpsMachine):
    LAYOUT = "vsqs"

    def start_clients(self) -> None:
        os.makedirs(self.path)
        self.manager = vsqs_manager(self.path)
        self.queues = {q: self.manager.get_queue(q) for q in QUEUES}  # creates the directories

    def stop_clients(self) -> None:
        # stopping vsqs's watchdog observer joins its inotify threads (~0.5 s each): do it, and
        # then remove the tree, in the background; teardown_module waits for all of them
        closer = threading.Thread(target=self._close_and_remove, daemon=True)
        closer.start()
        _CLOSERS.append(closer)

    def _close_and_remove(self) -> None:
        try:
            self.manager.close()
        finally:
            self.remove_tree()

    def read_payload(self, path: str, queue: str | None = None, mid: str | None = None) -> str:
        with open(path, "rb") as fh:
            return fh.read().decode()

    def publish_options(self, data: Any) -> dict[str, Any]:
        # now and then the README's millisecond ids, beside vsqs 0.3's microsecond ones
        return {"vsqs_clock": data.draw(st.sampled_from([None, None, None, "ms"]), label="vsqs_clock")}

    def client_publish_one(self, queue: str, payload: str, data: Any) -> None:
        mid = self.queues[queue].publish(payload.encode())
        assert len(mid) == 16

    def consume_one(self, queue: str, data: Any) -> tuple[str, Any, str] | None:
        ready, expired = self.in_queue(queue, READY), self.in_queue(queue, EXPIRED)
        if not ready and not expired:
            return None  # receive() would block for its whole timeout
        quick = data.draw(st.booleans(), label="visibility_timeout 0")
        _where, msgs, _dups = self.disk()
        num = {p: int(msgs[p].id) for p in ready + expired}
        # vsqs 0.3 walks ids in order: expired ones before the first ready are requeued on
        # the way; with none ready, all expired are requeued and the oldest is taken
        if ready:
            first = min(ready, key=num.__getitem__)
            passed = [p for p in expired if num[p] < num[first]]
        else:
            first = min(expired, key=num.__getitem__)
            passed = expired
        event(f"vsqs receive: {len(passed) and 'some' or 'no'} expired requeued by the consumer")
        q = self.queues[queue]
        mid, body = q.receive(visibility_timeout=0 if quick else LONG, timeout=5)
        for p in passed:
            self.put(p, queue, READY)
        if mid is None and not ready:  # it requeued them all, then its wait timed out: take one now
            mid, body = q.receive(visibility_timeout=0 if quick else LONG, timeout=5)
        assert mid is not None, "vsqs receive found nothing"
        assert body.decode() == first, (body, first)
        return first, (queue, mid), EXPIRED if quick else INFLIGHT

    def ack(self, queue: str, handle: Any) -> bool:
        _queue, mid = handle
        before = set(os.listdir(os.path.join(self.path, queue)))
        self.queues[queue].delete(mid)
        return before != set(os.listdir(os.path.join(self.path, queue)))


class DdmqMachine(OpsMachine):
    LAYOUT = "ddmq"

    def start_clients(self) -> None:
        self.broker = ddmq_broker(self.path, *QUEUES)

    def read_payload(self, path: str, queue: str | None = None, mid: str | None = None) -> str:
        with open(path, "rb") as fh:
            body = json.loads(fh.read())
        if queue is not None:
            # ddmq's nack and clean publish a requeued copy into the body's queue, by its id
            assert (body["queue"], body["id"]) == (queue, mid), (path, body)
        return body["message"]

    def body(self, queue: str, relpath: str) -> dict[str, Any]:
        with open(os.path.join(self.path, queue, relpath), "rb") as fh:
            return json.loads(fh.read())

    def publish_options(self, data: Any) -> dict[str, Any]:
        return {"timeout": data.draw(st.sampled_from([None, LONG]), label="timeout"),
                "priority": data.draw(st.sampled_from([None, 0, 7, 42]), label="priority"),
                "requeue": data.draw(st.sampled_from([None, True, 3]), label="requeue")}

    def client_publish_one(self, queue: str, payload: str, data: Any) -> None:
        timeout = data.draw(st.sampled_from([None, LONG, PAST, PAST]), label="timeout")
        prio = data.draw(st.sampled_from([None, 7, 42]), label="priority")
        requeue = data.draw(st.sampled_from([{}, {"requeue": True}, {"requeue_prio": 5}]), label="requeue")
        self.broker.publish(queue, payload, priority=prio, timeout=timeout, clean=False, **requeue)
        if timeout == PAST:
            self.expire_at_once.add(payload)

    def consume_one(self, queue: str, data: Any) -> tuple[str, Any, str] | None:
        ready = self.in_queue(queue, READY)
        _where, msgs, _dups = self.disk()
        msg = self.broker.consume(queue, clean=False)
        if not ready:
            assert msg is None, msg
            return None
        first = min(ready, key=lambda p: msgs[p].name)  # ddmq takes file names in text order
        assert msg is not None and msg.message == first, (msg, first)
        return first, (queue, msg.filename), EXPIRED if first in self.expire_at_once else INFLIGHT

    def ack(self, queue: str, handle: Any) -> bool:
        _queue, filename = handle
        return bool(self.broker.ack(queue, filename))

    @precondition(lambda self: self.handles)
    @rule(data=st.data())
    def client_nack_late(self, data: Any) -> None:
        """The consumer gives back what it took earlier (ddmq requeues it); stale: a no-op."""
        payload = data.draw(st.sampled_from(sorted(self.handles)))
        (queue, filename), valid = self.handles.pop(payload)
        nacked = self.broker.nack(queue, filename, requeue=True, clean=False)
        event(f"late nack: {'valid' if valid else 'stale'} handle")
        assert bool(nacked) == valid, (payload, valid, nacked)
        if valid:
            self.put(payload, queue, READY)
            self.expire_at_once.discard(payload)  # ddmq's requeue_message() drops the message's timeout

    @rule(queue=queues)
    def client_clean(self, queue: str) -> None:
        """ddmq's clean(): expired messages go back to the queue if they ask for it, else they go."""
        _where, msgs, _dups = self.disk()
        expired = {p: self.body(queue, msgs[p].relpath) for p in self.in_queue(queue, EXPIRED)}
        assert self.broker.clean(queue, force=True)
        event(f"ddmq clean: {'some' if expired else 'no'} expired")
        for p, body in expired.items():
            limit = body.get("requeue_limit")
            if body.get("requeue") and (not limit or body["requeue_counter"] < limit):
                self.put(p, queue, READY)
                self.expire_at_once.discard(p)  # the requeued copy has no timeout of its own
            else:
                self.drop(p)


VsqsMachine.TestCase.settings = SETTINGS
DdmqMachine.TestCase.settings = SETTINGS

_needs_vsqs = pytest.mark.skipif(not _have("vsqs", "watchdog"), reason="vsqs==0.3 (and watchdog) not installed")
_needs_ddmq = pytest.mark.skipif(not _have("ddmq", "yaml"), reason="ddmq==0.9.14 (and PyYAML) not installed")
TestVsqsOpsStateful = _needs_vsqs(VsqsMachine.TestCase)
TestDdmqOpsStateful = _needs_ddmq(DdmqMachine.TestCase)
