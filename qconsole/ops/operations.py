"""Operations on a live root: the one API the CLI and the TUI both call (layer 2).

Every mutating method refuses in read-only mode before touching anything, validates all
its input before changing anything, changes the tree only by atomic create/rename/unlink
per message, tolerates ENOENT/EEXIST from live clients (reported as skipped, never as
success), and appends one audit-log line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import is_not, itemgetter
from typing import Any

from ..backends.base import DELETE_QUEUE, SETTINGS, Backend, Unsupported, find_message
from ..errors import MessageNotFoundError, QConsoleError, SettingsError, UnknownQueueError
from ..model import Message, QueueScan
from ..states import DELAYED, EXPIRED, INFLIGHT, READY
from . import audit
from .result import ALREADY_READY, NOT_HELD, NOT_IN_QUEUE, OperationError, OpResult, ReadOnlyError, TrashBatch

#: seconds save_settings waits before reading a saved setting back (see the ddmq backend)
SETTLE_S = 0.2

PURGEABLE = (READY, INFLIGHT, EXPIRED, DELAYED)
#: entries of one list an audit line holds at most (with the full count beside it)
AUDIT_LIST_CAP = 1000
#: what requeue/delete/move do with an id that is not in the queue: "fail" refuses the whole
#: change before anything changes (ids typed by hand: a typo must not silently do nothing);
#: "skip" reports it as skipped and does the rest (a selection listed earlier, e.g. on stdin:
#: on a live queue some of it is consumed before the change runs)
MISSING = ("fail", "skip")


class Operations:
    """Mutations of one root. ``read_only`` refuses them all; ``audit_log`` overrides the log path."""

    def __init__(self, root: Backend, *, read_only: bool = False, audit_log: str | None = None,
                 user_action_source: str = "cli") -> None:
        self.root = root
        self.read_only = read_only
        self.audit_path = audit_log or root.default_audit_log()
        self.source = user_action_source
        #: problems that did not stop an operation (e.g. the audit log was not writable)
        self.warnings: list[str] = []
        #: seconds save_settings waits before reading ddmq.yaml back (0: read back at once)
        self.settings_settle_s: float = SETTLE_S

    # ------------------------------------------------------------------ plumbing

    def _guard(self, action: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"read-only mode: {action} refused (drop --read-only / unset QCONSOLE_READ_ONLY)")

    def _audit(self, queue: str | None, action: str, **fields: Any) -> None:
        doc = audit.record(self.root.target, queue, action, source=self.source, **fields)
        root = getattr(self.root, "path", None)  # a file store: its own log is confined to it
        try:
            audit.append(self.audit_path, doc, root=root)
        except (OSError, QConsoleError) as err:
            why = err.strerror if isinstance(err, OSError) else str(err)
            # a log in the root refused (a second hard link, say from a `cp -al` snapshot):
            # the record goes to the operator's own log rather than nowhere
            spare = audit.spare_path(root, self.audit_path)
            if spare is not None:
                try:
                    audit.append(spare, doc)
                    why += f"; written to {spare}"
                except (OSError, QConsoleError):
                    pass
            self.warnings.append(f"audit log {self.audit_path}: {why}")

    def _run(self, action: str, queue: str | None, body: Callable[[], OpResult], **fields: Any) -> OpResult:
        self._guard(action)
        self.root.partial = None  # filled by the backend as the change goes
        self.root.ticked = None
        try:
            result = body()
        except KeyboardInterrupt as err:
            # ctrl+c: what was done is still logged and said (a purge's batch, a publish's ids)
            self._stopped(action, queue, err, fields, outcome="interrupted")
            raise
        except (QConsoleError, OSError) as err:
            msg = str(err) if isinstance(err, QConsoleError) else f"{err.filename or ''}: {err.strerror}"
            self._stopped(action, queue, err, fields, outcome="error", error=msg)
            raise
        except Exception as err:  # a fault of ours (or a caller's callback): still on record
            self._stopped(action, queue, err, fields, outcome="error", error=f"{type(err).__name__}: {err}"[:500])
            raise
        if result.dest is None:
            result.dest = fields.get("dest")
        outcome = "ok" if not result.skipped else ("partial" if result.done else "changed underneath")
        self._audit(queue, action, outcome=outcome, ids=result.done[:AUDIT_LIST_CAP], count=len(result.done),
                    skipped=[list(s) for s in result.skipped[:AUDIT_LIST_CAP]], batch=result.batch, **fields)
        return result

    def _stopped(self, action: str, queue: str | None, err: BaseException, fields: dict[str, Any],
                 **outcome: Any) -> None:
        """The audit line of a change that stopped early, with what it did do: the backend's
        :class:`~qconsole.backends.results.Partial` (or the ids a publish published). The same
        goes on the exception as ``err.partial``, an :class:`OpResult` for the caller to show
        (the CLI prints its summary after the error line): a purge stopped half-way names the
        trash batch that undoes what it did."""
        part = self.root.partial
        processed = None
        if part is not None:
            done, skipped, batch, unknown = part.done, part.skipped, part.batch, part.unknown
        else:
            done = list(getattr(self.root, "published", None) or []) if action == "publish" else []
            skipped, batch, unknown = [], None, 0
            # a change that keeps no record per id: how far it got (a publish keeps its ids: its
            # ticks count copies written, which a stop takes back, not messages published)
            if action != "publish" and not done and self.root.ticked and self.root.ticked[0] > 0:
                processed = self.root.ticked
        extra = {"processed": list(processed)} if processed else {}
        self._audit(queue, action, **outcome, ids=done[:AUDIT_LIST_CAP], count=len(done),
                    skipped=[list(x) for x in skipped[:AUDIT_LIST_CAP]], batch=batch, unknown=unknown, **extra, **fields)
        if part is not None or done or processed:  # (a change the backend tracks says so even when it did nothing)
            try:
                err.partial = OpResult(action, queue, done=done, skipped=skipped, batch=batch,  # type: ignore[attr-defined]
                                       unknown=unknown, processed=processed, dest=fields.get("dest"))
            except AttributeError:  # an exception type without a __dict__
                pass

    def _scan(self, queue: str) -> QueueScan:
        return self.root.scan_queue(queue, collect=True).readable()

    def _pick_ids(self, queue: str, ids: list[str], missing: str) -> tuple[list[Message], list[tuple[str, str]]]:
        """:meth:`_pick` from the store's own lookup of each id where it has one (RSMQ: O(1) an
        id), else from a listing of the queue."""
        found = self.root.find_messages(queue, ids) if all(isinstance(i, str) for i in ids) else None
        if found is None:
            return self._pick(self._scan(queue), ids, missing)
        scan = QueueScan(queue, self.root.kind, 0.0)
        scan.messages = list(found.values())
        return self._pick(scan, ids, missing)

    def _tallied(self, action: str, queue: str | None, outcomes: list[tuple[str, str | None]]) -> OpResult:
        if not any(map(is_not, map(itemgetter(1), outcomes), repeat(None))):  # all done: C passes
            return OpResult(action, queue, done=list(map(itemgetter(0), outcomes)), skipped=[])
        return OpResult(action, queue, done=[mid for mid, reason in outcomes if reason is None],
                        skipped=[(mid, reason) for mid, reason in outcomes if reason is not None])

    def _pick(self, scan: QueueScan, ids: list[str], missing: str) -> tuple[list[Message], list[tuple[str, str]]]:
        """The messages ``ids`` name, each once, and the ids skipped as not in the queue. With
        ``missing="fail"`` every id must exist (checked before anything changes). One index of
        the scan for all ids: a lookup per id in the list made deleting 40k ids of a 100k
        queue quadratic."""
        if missing not in MISSING:
            raise OperationError(f"missing= takes one of {', '.join(MISSING)}, not {missing!r}")
        index: dict[str, Message] = {}
        for m in scan.messages or ():  # first match wins, as find_message's scan order
            for key in (m.id, m.relpath, m.name):
                index.setdefault(key, m)
        msgs = []
        skipped: dict[str, tuple[str, str]] = {}
        seen = set()
        for ident in ids:
            msg = index.get(ident) if isinstance(ident, str) else None
            if msg is None:
                if missing == "fail" or not isinstance(ident, str):
                    msg = find_message(scan, ident)  # raises MessageNotFoundError with its message
                else:
                    skipped.setdefault(ident, (ident, NOT_IN_QUEUE))
                    continue
            if msg.id not in seen:
                seen.add(msg.id)
                msgs.append(msg)
        return msgs, list(skipped.values())

    # ------------------------------------------------------------------ publish

    def publish(self, queue: str, payloads: list[bytes], **options: Any) -> OpResult:
        """Publish ``payloads``; ``options`` are the backend's declared publish options."""
        self._guard("publish")
        self.root.require_queue(queue)
        if not all(isinstance(p, (bytes, bytearray)) for p in payloads):
            raise OperationError("payloads must be bytes")
        options = {k: v for k, v in options.items() if v is not None}
        self.root.check_publish(options)
        return self._run("publish", queue,
                         lambda: OpResult("publish", queue, done=self.root.publish(queue, payloads, options)),
                         count_asked=len(payloads))

    # ------------------------------------------------------------------ requeue

    def requeue(self, queue: str, ids: list[str] | None = None, *, expired_only: bool = False,
                all_held: bool = False, missing: str = "fail") -> OpResult:
        """Held messages back to ready: ``ids`` (see :data:`MISSING` for ``missing``), or every
        expired one, or every held one."""
        self._guard("requeue")
        if not ids:
            self.root.require_queue(queue)
            if not (all_held or expired_only):
                raise OperationError("requeue what? give message ids, --expired or --all")
            # by state: the store picks the held ones (a queue of 1M ready messages and a few
            # expired ones is not made into 1M messages to requeue those few)
            states = frozenset((INFLIGHT, EXPIRED) if all_held else (EXPIRED,))
            return self._run("requeue", queue,
                             lambda: self._tallied("requeue", queue, self.root.requeue_held(queue, states)),
                             selection="all" if all_held else "expired")
        msgs, gone = self._pick_ids(queue, ids, missing)
        if expired_only:
            msgs = [m for m in msgs if m.state == EXPIRED]
        return self._run("requeue", queue, lambda: self._requeue(queue, msgs, gone), selection="ids")

    def _requeue(self, queue: str, msgs: list[Message], gone: list[tuple[str, str]]) -> OpResult:
        skipped: list[tuple[str, str | None]] = [*gone]
        held = []
        for msg in msgs:
            if msg.state == READY:
                skipped.append((msg.id, ALREADY_READY))
            elif msg.state not in (INFLIGHT, EXPIRED):
                skipped.append((msg.id, NOT_HELD))
            else:
                held.append(msg)
        return self._tallied("requeue", queue, skipped + self.root.requeue(queue, held))

    # ------------------------------------------------------------------ delete / purge

    def delete(self, queue: str, ids: list[str], *, trash: bool = True, missing: str = "fail") -> OpResult:
        """Messages ``ids`` into the trash (or gone for good); see :data:`MISSING` for ``missing``."""
        self._guard("delete")
        if not ids:
            raise OperationError("delete what? give one or more message ids")
        msgs, gone = self._delete_pick(queue, ids, missing)
        return self._run("delete", queue, lambda: self._remove("delete", queue, msgs, trash, gone), trash=trash)

    def delete_candidates(self, queue: str, ids: list[str]) -> list[Message]:
        """The messages a delete of the typed ``ids`` would take, each once (what a confirmation
        must count); an id not in the queue, or one being written, fails here, before anyone
        is asked."""
        return self._delete_pick(queue, ids, "fail")[0]

    def _delete_pick(self, queue: str, ids: list[str], missing: str) -> tuple[list[Message], list[tuple[str, str]]]:
        msgs, gone = self._pick_ids(queue, ids, missing)
        for m in msgs:
            if m.state not in PURGEABLE:
                raise OperationError(f"message {m.id} is being written ({m.state}); not deleted")
        return msgs, gone

    def purge(self, queue: str, *, state: str | None = None, trash: bool = True) -> OpResult:
        self._guard("purge")
        if state is not None and state not in PURGEABLE:
            raise OperationError(f"purge --state takes one of {', '.join(PURGEABLE)}, not {state!r}")
        msgs = self.purge_candidates(queue, state)
        return self._run("purge", queue, lambda: self._remove("purge", queue, msgs, trash),
                         state=state, trash=trash)

    def purge_candidates(self, queue: str, state: str | None = None) -> list[Message]:
        """The messages a purge would take now (what a confirmation prompt must count)."""
        scan = self._scan(queue)
        return [m for m in scan.messages or () if (m.state == state if state else m.state in PURGEABLE)]

    def _remove(self, action: str, queue: str, msgs: list[Message], use_trash: bool,
                gone: Sequence[tuple[str, str]] = ()) -> OpResult:
        outcomes, batch = self.root.remove(action, queue, msgs, use_trash=use_trash, user=audit.user_name())
        result = self._tallied(action, queue, [*gone, *outcomes])
        result.batch = batch
        return result

    # ------------------------------------------------------------------ move

    def move(self, src: str, dest: str, ids: list[str] | None = None, *, all_: bool = False,
             state: str | None = None, missing: str = "fail") -> OpResult:
        """Messages into another queue: ``ids`` (see :data:`MISSING` for ``missing``), every one,
        or every one in ``state``."""
        self._guard("move")
        self.root.validate_queue_name(src)
        self.root.validate_queue_name(dest)
        if src == dest:
            raise OperationError("source and destination are the same queue")
        if state is not None and state not in PURGEABLE:
            raise OperationError(f"move --state takes one of {', '.join(PURGEABLE)}, not {state!r}")
        if sum(bool(x) for x in (ids, all_, state)) != 1:
            raise OperationError("move what? give message ids, --all or --state S (one of them)")
        scan = None if ids else self._scan(src)
        self.root.require_queue(dest)
        gone: list[tuple[str, str]] = []
        if ids:
            msgs, gone = self._pick_ids(src, ids, missing)
            for m in msgs:
                if m.state not in PURGEABLE:
                    raise OperationError(f"message {m.id} is being written; not moved")
        else:
            msgs = [m for m in scan.messages or () if (m.state == state if state else m.state in PURGEABLE)]  # type: ignore[union-attr]
        return self._run("move", src, lambda: self._tallied("move", src, [*gone, *self.root.move(src, dest, msgs)]),
                         dest=dest)

    # ------------------------------------------------------------------ settings / create

    def save_settings(self, queue: str | None, values: dict[str, object], *, unset: list[str] | None = None,
                      settle_s: float | None = None) -> OpResult:
        """Set ``values`` and remove the ``unset`` keys in the root's (``queue`` None) or a queue's ddmq.yaml.

        A removed key falls back to the root's value, then ddmq's default. After the atomic save the
        file is read back ``settle_s`` seconds later (default :attr:`settings_settle_s`); a save that
        ddmq's clean() reverted is redone (see :mod:`.settings_write`), and one that never sticks
        raises :class:`~qconsole.errors.SettingsError` with one line.
        """
        self._guard("config")
        if not self.root.can(SETTINGS):
            raise Unsupported(f"{self.root.title} queues have no settings (there is no config file to change)")
        if queue is not None:
            self.root.require_queue(queue)
        values = dict(values)
        if not values and not unset:
            raise SettingsError("nothing to set or unset")
        removing = self.root.check_settings_request(values, unset)
        settle = self.settings_settle_s if settle_s is None else settle_s
        attempts: dict[str, int] = {}  # filled by body(); the audit line is written after it runs

        def body() -> OpResult:
            try:
                attempts["attempts"] = n = self.root.save_settings(queue, values, removing, settle)
            except SettingsError as err:
                if getattr(err, "attempts", None):  # every save was reverted by a concurrent rewrite
                    attempts["attempts"] = err.attempts  # type: ignore[attr-defined]
                raise
            if n > 1:
                self.warnings.append(f"{queue or 'root'} settings: a concurrent rewrite (ddmq's clean?) reverted "
                                     f"the save; saved again ({n} attempts)")
            return OpResult("config", queue, done=sorted(values) + sorted(removing))

        return self._run("config", queue, body, values={k: values[k] for k in sorted(values)},
                         unset=sorted(removing), verify=attempts)

    def create_queue(self, queue: str, *, made_root: bool = False) -> OpResult:
        self._guard("create")
        self.root.validate_queue_name(queue)
        self.root.check_new_queue_name(queue)  # the store's rule for a name it makes
        names, _errors = self.root.queue_names()
        if queue in names:
            raise OperationError(f"{queue!r} already exists in {self.root.target}")

        def body() -> OpResult:
            try:
                self.root.create_queue(queue)
            except FileExistsError:  # a file or a directory of that name that is no queue (ddmq.yaml...)
                raise OperationError(f"{queue!r} is in {self.root.target} already, and is not a "
                                     f"{self.root.kind} queue") from None
            return OpResult("create", queue, done=[queue])

        return self._run("create", queue, body, layout=self.root.kind, made_root=made_root)

    def queue_total(self, queue: str) -> int:
        """The messages ``queue`` holds (UnknownQueueError for no queue). A name listed with
        nothing behind it (RSMQ: in QUEUES without its settings, as stats reports) holds none:
        delete-queue takes such a name away, as its clients' deleteQueue does."""
        try:
            return self.root.scan_queue(queue).total
        except UnknownQueueError:
            if queue not in self.root.queue_names()[0]:
                raise
            return 0

    def check_delete_queue(self, queue: str, *, force: bool = False) -> int:
        """What :meth:`delete_queue` refuses, checked before anyone is asked to confirm: a store
        that cannot delete queues, no such queue, one holding messages without ``force``.
        Returns the messages it holds."""
        self._guard("delete-queue")
        if not self.root.can(DELETE_QUEUE):
            raise Unsupported(f"{self.root.title}: deleting queues is not supported (delete-queue is for RSMQ targets)")
        total = self.queue_total(queue)
        if total and not force:
            raise OperationError(f"{queue!r} still holds {total} message(s): purge it first "
                                 "(undoable), or --force to delete them with the queue")
        return total

    def delete_queue(self, queue: str, *, force: bool = False) -> OpResult:
        """Remove a queue as its clients do; one that still holds messages only with ``force``
        (its messages are then gone for good: a trash batch could not be restored into it)."""
        total = self.check_delete_queue(queue, force=force)

        def body() -> OpResult:
            self.root.delete_queue(queue, force=force)
            return OpResult("delete-queue", queue, done=[queue])

        return self._run("delete-queue", queue, body, messages=total, force=force)

    # ------------------------------------------------------------------ trash

    def trash_list(self) -> list[TrashBatch]:
        return self.root.trash_list()

    def trash_restore(self, batch: str | None = None) -> OpResult:
        self._guard("trash restore")
        name, queue = self.root.trash_batch_queue(batch)

        def body() -> OpResult:
            done, skipped = self.root.trash_restore(name)
            return OpResult("trash restore", queue, done, skipped, batch=None)

        return self._run("trash restore", queue, body, batch_restored=name)

    def trash_empty(self, older_than_s: float | None = None) -> OpResult:
        self._guard("trash empty")
        if older_than_s is not None and (isinstance(older_than_s, bool) or not isinstance(older_than_s, (int, float))
                                         or not math.isfinite(older_than_s) or older_than_s < 0):
            # (the CLI's parse_duration refuses 0 too; here 0 means "every batch", as None does)
            raise OperationError("--older-than must be a finite duration, not negative")
        return self._run("trash empty", None,
                         lambda: self._tallied("trash empty", None, self.root.trash_empty(older_than_s)),
                         older_than_s=older_than_s)

    # ------------------------------------------------------------------ recover

    def recover(self, *, force: bool = False) -> Any:
        """Put back what killed qconsole processes left claimed (backends that have claims)."""
        self._guard("recover")
        try:
            report = self.root.recover(force=force)
        except OSError as err:
            self._audit(None, "recover", outcome="error", error=err.strerror)
            raise
        # lists capped as a change's ids are: 8,000 planted claims made a 1.3 MB line the audit
        # reader refuses (review D); the counts say how many there were
        fields: dict[str, Any] = {}
        for key, value in (("restored", report.restored), ("completed", report.completed),
                           ("removed", report.removed_temp), ("live", report.live), ("problems", report.problems)):
            fields[key] = value[:AUDIT_LIST_CAP]
            if len(value) > AUDIT_LIST_CAP:
                fields[f"{key}_count"] = len(value)
        self._audit(None, "recover", outcome="ok" if not report.problems else "partial", **fields)
        return report


def create_queue_in(target: str | None, layout: str, queue: str, *, audit_log: str | None = None,
                    source: str = "cli") -> tuple[Operations, OpResult]:
    """Create ``queue``; with an explicit ``layout`` a target that does not exist yet is made
    too (as the clients' own constructors do), after the queue name was checked."""
    from ..backends import KINDS, backend_class, is_redis_target, open_target

    made_root = False
    if target and layout in KINDS and not is_redis_target(target):  # a Redis namespace is no directory
        cls = backend_class(layout)
        cls.check_new_queue_name(queue)  # nothing is made for a name that will be refused
        made_root = cls.make_target(target)
    ops = Operations(open_target(target, layout), audit_log=audit_log, user_action_source=source)
    return ops, ops.create_queue(queue, made_root=made_root)


def parse_duration(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``45s``, ``2w`` or plain seconds -> seconds: a finite number
    above 0 (``nan``, ``inf``, ``""``, ``0`` or ``-1`` never mean "everything")."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = (text or "").strip().lower()
    mult = units.get(t[-1:], None)
    num = t[:-1] if mult else t
    if not num or not all(ch.isascii() and (ch.isdigit() or ch == ".") for ch in num) or num.count(".") > 1 \
            or num == ".":
        raise OperationError(f"bad duration {text!r}: use e.g. 7d, 12h, 30m or seconds")
    value = float(num) * (mult or 1)
    if not math.isfinite(value) or value <= 0:
        raise OperationError(f"bad duration {text!r}: must be a finite time above 0")
    return value


__all__ = ["Operations", "parse_duration", "MessageNotFoundError"]
