"""Operations on a live root: the one API the CLI and the TUI both call (layer 2).

Every mutating method refuses in read-only mode before touching anything, validates all
its input before changing anything, changes the tree only by atomic create/rename/unlink
per message, tolerates ENOENT/EEXIST from live clients (reported as skipped, never as
success), and appends one audit-log line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ..errors import MessageNotFoundError, QConsoleError
from ..layouts import ddmq as ddmq_layout
from ..model import Message, QueueScan
from ..scan import Root, find_message, validate_queue_name
from ..settings import DEFAULTS, SettingsError
from ..states import DDMQ, EXPIRED, INFLIGHT, READY, VSQS
from . import audit, claims, ddmq_ops, settings_write, trash, vsqs_ops
from .fsatomic import dir_gid, replace_file, unlink_quiet
from .result import ALREADY_READY, CHANGED, CONSUMED, NOT_HELD, OperationError, OpResult, ReadOnlyError, TrashBatch

PURGEABLE = (READY, INFLIGHT, EXPIRED)


def _check_nonneg(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise OperationError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise OperationError(f"{name} must not be negative (got {value})")


class Operations:
    """Mutations of one root. ``read_only`` refuses them all; ``audit_log`` overrides the log path."""

    def __init__(self, root: Root, *, read_only: bool = False, audit_log: str | None = None,
                 user_action_source: str = "cli") -> None:
        self.root = root
        self.read_only = read_only
        self.audit_path = audit_log or audit.default_path(root.path)
        self.source = user_action_source
        #: problems that did not stop an operation (e.g. the audit log was not writable)
        self.warnings: list[str] = []
        #: seconds save_settings waits before reading ddmq.yaml back (0: read back at once)
        self.settings_settle_s: float = settings_write.SETTLE_S

    # ------------------------------------------------------------------ plumbing

    def _guard(self, action: str) -> None:
        if self.read_only:
            raise ReadOnlyError(f"read-only mode: {action} refused (drop --read-only / unset QCONSOLE_READ_ONLY)")

    def _audit(self, queue: str | None, action: str, **fields: Any) -> None:
        doc = audit.record(self.root.path, queue, action, source=self.source, **fields)
        try:
            audit.append(self.audit_path, doc)
        except OSError as err:
            self.warnings.append(f"audit log {self.audit_path}: {err.strerror}")

    def _run(self, action: str, queue: str | None, body: Callable[[], OpResult], **fields: Any) -> OpResult:
        self._guard(action)
        try:
            result = body()
        except (QConsoleError, OSError) as err:
            msg = str(err) if isinstance(err, QConsoleError) else f"{err.filename or ''}: {err.strerror}"
            self._audit(queue, action, outcome="error", error=msg, **fields)
            raise
        outcome = "ok" if not result.skipped else ("partial" if result.done else "changed underneath")
        self._audit(queue, action, outcome=outcome, ids=result.done[:1000], count=len(result.done),
                    skipped=[list(s) for s in result.skipped[:1000]], batch=result.batch, **fields)
        return result

    def _scan(self, queue: str) -> QueueScan:
        return self.root.scan_queue(queue, collect=True)

    def _qdir(self, queue: str) -> str:
        return self.root.require_queue(queue)

    def _pick(self, scan: QueueScan, ids: list[str]) -> list[Message]:
        """Every id must exist (checked before anything changes)."""
        msgs = []
        seen = set()
        for ident in ids:
            msg = find_message(scan, ident)
            if msg.id not in seen:
                seen.add(msg.id)
                msgs.append(msg)
        return msgs

    # ------------------------------------------------------------------ publish

    def publish(self, queue: str, payloads: list[bytes], *, priority: int | None = None,
                timeout: int | None = None, requeue: bool | int | None = None,
                requeue_limit: int | None = None, vsqs_clock: str | None = None) -> OpResult:
        self._guard("publish")
        qdir = self._qdir(queue)
        _check_nonneg("priority", priority)
        _check_nonneg("timeout", timeout)
        _check_nonneg("requeue limit", requeue_limit)
        if requeue is not None and not isinstance(requeue, bool):
            _check_nonneg("requeue priority", requeue)
        if vsqs_clock not in (None, "ms", "us"):
            raise OperationError(f"unknown VSQS clock {vsqs_clock!r}: use ms or us")
        if not all(isinstance(p, (bytes, bytearray)) for p in payloads):
            raise OperationError("payloads must be bytes")
        if self.root.layout == VSQS:
            extra = [n for n, v in (("priority", priority), ("timeout", timeout), ("requeue", requeue),
                                    ("requeue limit", requeue_limit)) if v is not None]
            if extra:
                raise OperationError(f"VSQS messages have no {extra[0]}: it is a ddmq option")
            return self._run("publish", queue, lambda: self._publish_vsqs(queue, qdir, payloads, vsqs_clock),
                             count_asked=len(payloads))
        if vsqs_clock is not None:
            raise OperationError("--vsqs-clock is for VSQS queues; this root is ddmq")
        texts = []
        for p in payloads:
            try:
                texts.append(bytes(p).decode("utf-8"))
            except UnicodeDecodeError:
                raise OperationError("ddmq messages are JSON text: the payload is not valid UTF-8") from None
        return self._run("publish", queue, lambda: self._publish_ddmq(queue, qdir, texts, priority, timeout,
                                                                         requeue, requeue_limit),
                         count_asked=len(payloads))

    def _publish_vsqs(self, queue: str, qdir: str, payloads: list[bytes], clock: str | None) -> OpResult:
        seen = self.root.scan_queue(queue).id_unit
        divisor = vsqs_ops.divisor_for(clock, seen)
        gid = dir_gid(qdir)
        result = OpResult("publish", queue)
        for p in payloads:
            result.done.append(vsqs_ops.publish(qdir, bytes(p), divisor, gid))
        return result

    def _publish_ddmq(self, queue: str, qdir: str, texts: list[str], priority: int | None, timeout: int | None,
                      requeue: bool | int | None, requeue_limit: int | None) -> OpResult:
        conf = ddmq_ops.settings_of(self.root.path, queue)
        prio = priority if priority is not None else conf.get("priority", DEFAULTS["priority"])
        _check_nonneg("the queue's default priority", prio)
        req = requeue if requeue is not None else bool(conf.get("requeue", True))
        result = OpResult("publish", queue)
        for text in texts:
            body = ddmq_ops.new_body(queue, text, priority=prio, timeout=timeout, requeue=req,
                                     requeue_limit=requeue_limit)
            ddmq_ops.publish_body(qdir, body)
            result.done.append(body["id"])
        return result

    # ------------------------------------------------------------------ requeue

    def requeue(self, queue: str, ids: list[str] | None = None, *, expired_only: bool = False,
                all_held: bool = False) -> OpResult:
        self._guard("requeue")
        scan = self._scan(queue)
        if ids:
            msgs = self._pick(scan, ids)
        elif all_held or expired_only:
            msgs = [m for m in scan.held_messages() if all_held or m.state == EXPIRED]
        else:
            raise OperationError("requeue what? give message ids, --expired or --all")
        if expired_only and ids:
            msgs = [m for m in msgs if m.state == EXPIRED]
        qdir = self._qdir(queue)
        return self._run("requeue", queue, lambda: self._requeue(queue, qdir, msgs),
                         selection="ids" if ids else ("all" if all_held else "expired"))

    def _requeue(self, queue: str, qdir: str, msgs: list[Message]) -> OpResult:
        result = OpResult("requeue", queue)
        prio = None
        for msg in msgs:
            if msg.state == READY:
                result.skipped.append((msg.id, ALREADY_READY))
                continue
            if msg.state not in (INFLIGHT, EXPIRED):
                result.skipped.append((msg.id, NOT_HELD))
                continue
            if self.root.layout == VSQS:
                reason = vsqs_ops.requeue(qdir, msg.id, msg.relpath)
                if reason == ALREADY_READY:  # someone requeued it first: it is ready, as asked
                    reason = None
                self._tally(result, msg.id, reason)
                continue
            if prio is None:
                conf = ddmq_ops.settings_of(self.root.path, queue)
                prio = conf.get("requeue_prio", 0)
                if isinstance(prio, bool) or not isinstance(prio, int) or prio < 0:
                    prio = 0
            self._tally(result, msg.id, self._requeue_ddmq(queue, qdir, msg, prio))
        return result

    @staticmethod
    def _tally(result: OpResult, mid: str, reason: str | None) -> None:
        if reason is None:
            result.done.append(mid)
        else:
            result.skipped.append((mid, reason))

    def _requeue_ddmq(self, queue: str, qdir: str, msg: Message, requeue_prio: int) -> str | None:
        claim = claims.Claim(qdir, msg.relpath)
        if not claim.acquire():
            return CONSUMED  # the consumer acked (or ddmq's clean() requeued) it first
        try:
            body = ddmq_ops.decode(claim.read(), msg.relpath)
        except (OperationError, OSError) as err:
            claim.restore()
            return f"left as it was: {err}" if isinstance(err, OperationError) else f"left as it was: {err.strerror}"
        new = ddmq_ops.requeued_body(body, queue, requeue_prio)
        claims.transfer(claim, queue, qdir, ddmq_ops.placer(qdir, new), b"")
        return None

    # ------------------------------------------------------------------ delete / purge

    def delete(self, queue: str, ids: list[str], *, trash: bool = True) -> OpResult:
        self._guard("delete")
        if not ids:
            raise OperationError("delete what? give one or more message ids")
        scan = self._scan(queue)
        msgs = self._pick(scan, ids)
        for m in msgs:
            if m.state not in PURGEABLE:
                raise OperationError(f"message {m.id} is being written ({m.state}); not deleted")
        return self._run("delete", queue, lambda: self._remove("delete", queue, msgs, trash), trash=trash)

    def purge(self, queue: str, *, state: str | None = None, trash: bool = True) -> OpResult:
        self._guard("purge")
        if state is not None and state not in PURGEABLE:
            raise OperationError(f"purge --state takes one of {', '.join(PURGEABLE)}, not {state!r}")
        scan = self._scan(queue)
        msgs = [m for m in scan.messages or () if (m.state == state if state else m.state in PURGEABLE)]
        return self._run("purge", queue, lambda: self._remove("purge", queue, msgs, trash),
                         state=state, trash=trash)

    def _remove(self, action: str, queue: str, msgs: list[Message], use_trash: bool) -> OpResult:
        qdir = self._qdir(queue)
        result = OpResult(action, queue)
        if not msgs:
            return result
        if use_trash:
            batch = trash.new_batch(self.root.path, action, queue, self.root.layout, audit.user_name())
            result.batch = batch
            trash.prepare_queue(self.root.path, batch, queue)
        items = []
        try:
            for m in msgs:
                src = os.path.join(qdir, m.relpath)
                if use_trash:
                    dst = trash.trash_path(self.root.path, result.batch or "", queue, m.relpath)
                    try:
                        ok = os.path.lexists(src) and _rename_quiet(src, dst)
                    except OSError as err:
                        if err.errno == 18:  # EXDEV: the queue is another mount than the root
                            raise OperationError(f"{queue}: the trash is on another file system; "
                                                 "use --no-trash") from None
                        raise
                    if ok:
                        items.append({"queue": queue, "relpath": m.relpath, "id": m.id})
                else:
                    ok = unlink_quiet(src)
                self._tally(result, m.id, None if ok else CHANGED)
        finally:
            if use_trash and result.batch:
                doc = trash.read_manifest(self.root.path, result.batch)
                doc.update(complete=True, items=items)
                trash.write_manifest(self.root.path, result.batch, doc)
        return result

    # ------------------------------------------------------------------ move

    def move(self, src: str, dest: str, ids: list[str] | None = None, *, all_: bool = False,
             state: str | None = None) -> OpResult:
        self._guard("move")
        validate_queue_name(src)
        validate_queue_name(dest)
        if src == dest:
            raise OperationError("source and destination are the same queue")
        if state is not None and state not in PURGEABLE:
            raise OperationError(f"move --state takes one of {', '.join(PURGEABLE)}, not {state!r}")
        if sum(bool(x) for x in (ids, all_, state)) != 1:
            raise OperationError("move what? give message ids, --all or --state S (one of them)")
        scan = self._scan(src)
        dest_dir = self._qdir(dest)
        if ids:
            msgs = self._pick(scan, ids)
            for m in msgs:
                if m.state not in PURGEABLE:
                    raise OperationError(f"message {m.id} is being written; not moved")
        else:
            msgs = [m for m in scan.messages or () if (m.state == state if state else m.state in PURGEABLE)]
        src_dir = self._qdir(src)
        return self._run("move", src, lambda: self._move(src, src_dir, dest, dest_dir, msgs), dest=dest)

    def _move(self, src: str, src_dir: str, dest: str, dest_dir: str, msgs: list[Message]) -> OpResult:
        result = OpResult("move", src)
        # oldest first, whatever their state, so DEST keeps the order they were published in
        msgs = sorted(msgs, key=lambda m: (m.created_at or 0.0, m.id))
        if self.root.layout == VSQS:
            divisor = vsqs_ops.divisor_for(None, self.root.scan_queue(dest).id_unit)
            prepare = vsqs_ops.placer(dest_dir, divisor)
        else:
            dprio = ddmq_ops.settings_of(self.root.path, dest).get("priority", DEFAULTS["priority"])
        for msg in msgs:
            claim = claims.Claim(src_dir, msg.relpath)
            if not claim.acquire():
                result.skipped.append((msg.id, CHANGED))
                continue
            try:
                data = claim.read()
                if self.root.layout == DDMQ:
                    body = ddmq_ops.moved_body(ddmq_ops.decode(data, msg.relpath), dest, dprio)
                    prepare = ddmq_ops.placer(dest_dir, body)
            except (OperationError, OSError) as err:
                claim.restore()
                why = str(err) if isinstance(err, OperationError) else err.strerror
                result.skipped.append((msg.id, f"left as it was: {why}"))
                continue
            claims.transfer(claim, dest, dest_dir, prepare, data)
            result.done.append(msg.id)
        return result

    # ------------------------------------------------------------------ settings / create

    def save_settings(self, queue: str | None, values: dict[str, object], *, unset: list[str] | None = None,
                      settle_s: float | None = None) -> OpResult:
        """Set ``values`` and remove the ``unset`` keys in the root's (``queue`` None) or a queue's ddmq.yaml.

        A removed key falls back to the root's value, then ddmq's default. After the atomic save the
        file is read back ``settle_s`` seconds later (default :attr:`settings_settle_s`); a save that
        ddmq's clean() reverted is redone (see :mod:`.settings_write`), and one that never sticks
        raises :class:`~qconsole.settings.SettingsError` with one line.
        """
        self._guard("config")
        if self.root.layout != DDMQ:
            raise OperationError("VSQS queues have no settings (there is no config file to change)")
        if queue is not None:
            self._qdir(queue)
        values = dict(values)
        if not values and not unset:
            raise SettingsError("nothing to set or unset")
        removing = settings_write.check_request(values, unset)
        settle = self.settings_settle_s if settle_s is None else settle_s
        attempts: dict[str, int] = {}  # filled by body(); the audit line is written after it runs

        def body() -> OpResult:
            try:
                saved = settings_write.save(self.root.path, queue, values, unset=removing, settle=settle)
            except settings_write.LostUpdateError:
                attempts["attempts"] = settings_write.ATTEMPTS
                raise
            attempts["attempts"] = saved.attempts
            if saved.attempts > 1:
                self.warnings.append(f"{saved.path}: a concurrent rewrite (ddmq's clean?) reverted the save; "
                                     f"saved again ({saved.attempts} attempts)")
            return OpResult("config", queue, done=sorted(values) + sorted(removing))

        return self._run("config", queue, body, values={k: values[k] for k in sorted(values)},
                         unset=sorted(removing), verify=attempts)

    def create_queue(self, queue: str) -> OpResult:
        self._guard("create")
        path = self.root.queue_path(queue)
        if os.path.lexists(path):
            raise OperationError(f"{queue!r} already exists in {self.root.path}")

        def body() -> OpResult:
            if self.root.layout == VSQS:
                os.mkdir(path)
            else:
                import yaml

                root_conf = os.path.join(self.root.path, ddmq_layout.CONFIG)
                if not os.path.lexists(root_conf):  # an uninitiated root, as broker(create=True) makes it
                    replace_file(root_conf, b"", claims.owned_name(claims.CFG, claims.new_token()))
                os.mkdir(path)
                os.mkdir(os.path.join(path, ddmq_layout.WORK))
                text = yaml.dump(dict(DEFAULTS), default_flow_style=False)  # what broker.create_queue writes
                replace_file(os.path.join(path, ddmq_layout.CONFIG), text.encode(),
                             claims.owned_name(claims.CFG, claims.new_token()))
            return OpResult("create", queue, done=[queue])

        return self._run("create", queue, body, layout=self.root.layout)

    # ------------------------------------------------------------------ trash

    def trash_list(self) -> list[TrashBatch]:
        return trash.list_batches(self.root.path)

    def trash_restore(self, batch: str | None = None) -> OpResult:
        self._guard("trash restore")
        name = trash.require_batch(self.root.path, batch)
        queue = trash.read_manifest(self.root.path, name).get("queue")

        def body() -> OpResult:
            done, skipped = trash.restore(self.root.path, name, self.root.layout)
            return OpResult("trash restore", queue if isinstance(queue, str) else None, done, skipped, batch=None)

        return self._run("trash restore", queue if isinstance(queue, str) else None, body, batch_restored=name)

    def trash_empty(self, older_than_s: float | None = None) -> OpResult:
        self._guard("trash empty")
        if older_than_s is not None and older_than_s < 0:
            raise OperationError("--older-than must not be negative")
        return self._run("trash empty", None,
                         lambda: OpResult("trash empty", None, trash.empty(self.root.path, older_than_s)),
                         older_than_s=older_than_s)

    # ------------------------------------------------------------------ recover

    def recover(self, *, force: bool = False) -> claims.RecoverReport:
        """Put back what killed qconsole processes left claimed (see :mod:`qconsole.ops.claims`)."""
        self._guard("recover")
        names, _errors = self.root.queue_names()
        dirs = [self.root.path] + [os.path.join(self.root.path, n) for n in names]
        dirs += [os.path.join(trash.trash_dir(self.root.path), b.batch) for b in trash.list_batches(self.root.path)]
        try:
            report = claims.recover(self.root.path, dirs, force=force)
        except OSError as err:
            self._audit(None, "recover", outcome="error", error=err.strerror)
            raise
        self._audit(None, "recover", outcome="ok" if not report.problems else "partial",
                    restored=report.restored, completed=report.completed, removed=report.removed_temp,
                    live=report.live, problems=report.problems)
        return report


def _rename_quiet(src: str, dst: str) -> bool:
    from .fsatomic import rename_checked

    return rename_checked(src, dst)


def parse_duration(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``45s`` or plain seconds -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = text.strip().lower()
    mult = units.get(t[-1:], None)
    num = t[:-1] if mult else t
    try:
        value = float(num)
    except ValueError:
        raise OperationError(f"bad duration {text!r}: use e.g. 7d, 12h, 30m") from None
    if value < 0:
        raise OperationError(f"bad duration {text!r}: must not be negative")
    return value * (mult or 1)


__all__ = ["Operations", "parse_duration", "MessageNotFoundError"]
