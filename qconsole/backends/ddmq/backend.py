"""The ddmq backend: queues with ``ddmq.yaml`` and ``work/``, JSON message files ordered by name."""

from __future__ import annotations

import os

from ...errors import OperationError
from ..base import CREATE_QUEUE, PRIORITIES, REDELIVERY_COUNT, SETTINGS, WRITING, Option, SettingField
from ..fs.root import FileBackend
from ..fs.safety import MAX_PRIORITY
from . import layout
from .layout import MAX_TIMEOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ...model import Message
    from ...payload import Payload
    from ..base import Setting


def _nonneg_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _checked(value: Any, what: str) -> int:
    """A priority as publish accepts one, or OperationError (one line) -- never a file name
    built from ``abc``, ``-1`` or 10**40."""
    from ...errors import QConsoleError
    from ..fs import safety

    try:
        return safety.check_priority(value, what)
    except QConsoleError as err:
        raise OperationError(str(err)) from None


class DdmqBackend(FileBackend):
    kind = "ddmq"
    title = "ddmq"
    module = layout
    short_id_chars = 12  # of 32 random hex digits: unique in practice
    moves_keep_ids = True  # requeue and move keep the id of the file name
    capabilities = FileBackend.capabilities | {SETTINGS, PRIORITIES, WRITING, CREATE_QUEUE, REDELIVERY_COUNT}
    publish_options = (
        Option("priority", "int", "Priority (lower first; default from settings).", minimum=0, maximum=MAX_PRIORITY,
               short="-p"),
        Option("timeout", "int", "Visibility timeout in seconds.", minimum=0, maximum=MAX_TIMEOUT),
        Option("requeue", "int_or_bool", "Requeue when expired (default from settings).", minimum=0),
        Option("requeue_limit", "int", "At most N requeues.", minimum=0),
    )
    setting_fields = (
        SettingField("message_timeout", "int", "seconds a consumed message stays hidden", minimum=0,
                     maximum=MAX_TIMEOUT, default=600),
        SettingField("priority", "int", "default priority of new messages (lower first)", minimum=0, default=999),
        SettingField("requeue", "bool", "requeue expired messages", default=True),
        SettingField("requeue_prio", "int", "priority of requeued messages", minimum=0, default=0),
        SettingField("cleaned", "int", "when ddmq last cleaned the queue (epoch s)", minimum=0, default=0),
    )

    def is_queue_dir(self, path: str) -> bool:
        # one that cannot be looked into is taken as a queue: reading it then says why it fails
        return layout.is_queue_dir(path) or layout.ddmq_queue_dir_unknown(path)

    def columns_lister(self) -> Any:
        from .columns import list_columns

        return list_columns

    def read_payload(self, msg: Message, cap: int | None) -> Payload:
        from ...payload import MAX_PARSE, payload_from_bytes, payload_of_body
        from . import body

        data, size = self.read_message_file(msg, MAX_PARSE)  # no link on the way followed
        doc = body.parse(data) if size <= MAX_PARSE else None
        if doc is None or "message" not in doc:
            # ddmq writes non-atomically: a half-written or foreign file is shown as it is
            shown = payload_from_bytes(data, size, cap)
            shown.error = ("file too large to parse" if size > MAX_PARSE
                           else "not a complete ddmq JSON message (half-written or corrupt)")
            return shown
        fields = {k: v for k, v in doc.items() if k != "message"}
        payload = payload_of_body(body.message_bytes(doc), size, cap, fields)
        counter = payload.fields.get("requeue_counter")
        if isinstance(counter, int) and not isinstance(counter, bool) and counter >= 0:
            payload.redeliveries = counter
        return payload

    # ------------------------------------------------------------------ settings

    def settings(self, queue: str | None) -> dict[str, Setting]:
        from .settings import effective

        if queue is not None:
            self.require_queue(queue)
        return effective(self.path, queue)

    def parse_setting(self, key: str, text: str) -> Any:
        from .settings import parse_value

        return parse_value(key, text)

    def validate_settings(self, values: dict[str, Any]) -> list[str]:
        from .settings import validate

        return validate(values)

    def check_settings_request(self, values: dict[str, Any], unset: Sequence[str] | None) -> list[str]:
        from . import settings_write

        return settings_write.check_request(values, unset)

    def save_settings(self, queue: str | None, values: dict[str, Any], unset: Sequence[str],
                      settle_s: float) -> int:
        from . import settings_write

        if queue is not None:
            self.require_queue(queue)
        return settings_write.save(self.path, queue, values, unset=list(unset), settle=settle_s).attempts

    def _conf(self, queue: str) -> dict[str, Any]:
        return {k: s.value for k, s in self.settings(queue).items()}

    # ------------------------------------------------------------------ changes

    def publish(self, queue: str, payloads: Sequence[bytes], options: dict[str, Any]) -> list[str]:
        from ..fs import safety
        from .settings import DEFAULTS
        from . import writes

        qdir = self.require_queue(queue)
        texts = []
        for p in payloads:
            try:
                texts.append(bytes(p).decode("utf-8"))
            except UnicodeDecodeError:
                raise OperationError("ddmq messages are JSON text: the payload is not valid UTF-8") from None
        conf = self._conf(queue)
        prio = options.get("priority")
        if prio is None:
            prio = self.default_priority(conf, "the queue's default priority")
        else:
            _checked(prio, "priority")
        req = options.get("requeue")
        if req is None:
            req = bool(conf.get("requeue", True))
        elif not isinstance(req, bool):
            _checked(req, "requeue priority")
        done: list[str] = []
        self.published = done  # what an interrupted publish did do (for its audit line)
        with safety.Confined(self.path) as c:
            writes.publish(c, qdir, queue, texts, done, self.tick, priority=prio, timeout=options.get("timeout"),
                           requeue=req, requeue_limit=options.get("requeue_limit"))
        return done

    @staticmethod
    def default_priority(conf: dict[str, Any], what: str) -> int:
        """A priority from settings, validated as publish validates one (OperationError)."""
        from .settings import DEFAULTS

        return _checked(conf.get("priority", DEFAULTS["priority"]), what)

    def requeue(self, queue: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        """Claim each expired/in-flight message, write what ddmq's requeue publishes to a tmp,
        commit in batches under one journal each (:mod:`..fs.batches`)."""
        from ...errors import QConsoleError
        from ...payload import MAX_PARSE
        from ..fs import batches, claims, safety
        from ..results import CONSUMED, Partial
        from . import writes

        qdir = self.require_queue(queue)
        # settings read once per operation, validated as publish validates a priority
        prio = _checked(self._conf(queue).get("requeue_prio", 0), "the queue's requeue_prio")
        out: list[tuple[str, str | None]] = []
        self.partial = Partial(outcomes=out)  # the committed ones, if it stops early
        with safety.Confined(self.path) as c:
            gid = c.dir_gid(qdir)
            with batches.BatchWriter(c, qdir, queue, out, size=self.REQUEUE_BATCH) as writer:
                for msg in msgs:
                    self.tick(len(out) + len(writer), len(msgs))
                    claim = claims.Claim(c, qdir, msg.relpath)
                    if not claim.acquire():
                        out.append((msg.id, CONSUMED))  # the consumer acked (or ddmq's clean() requeued) it first
                        continue
                    try:
                        # rewritten whole: one larger than a body we parse anywhere is left as it is
                        data = claim.read(max_size=MAX_PARSE)
                        new = writes.requeued_body(writes.decode(data, msg.relpath), queue, prio, msg.relpath)
                    except Exception as err:  # noqa: BLE001 (MemoryError too: the message goes back)
                        claim.restore()
                        why = (str(err) if isinstance(err, QConsoleError) else err.strerror
                               if isinstance(err, OSError) else type(err).__name__)
                        out.append((msg.id, f"left as it was: {why}"))
                        continue
                    except BaseException:  # ctrl+c while reading: this one back too, then stop
                        claim.restore()
                        raise
                    try:
                        placement, fd = writes.place(c, qdir, new, claim.token, gid)
                    except BaseException:
                        batches.drop_tmp(c, qdir, claim.token)
                        claim.restore()
                        raise
                    writer.add(msg.id, claim, placement, fd)
                writer.flush()
        self.tick(len(msgs), len(msgs))
        return out

    #: messages per batch journal (see fs.batches)
    REQUEUE_BATCH = 256

    def move_placer(self, c: Any, dest: str, dest_dir: str) -> Any:
        from . import writes

        # DEST's settings are validated as publish validates them, before anything is claimed
        dprio = self.default_priority(self._conf(dest), f"{dest}'s default priority")

        gid = c.dir_gid(dest_dir)

        def place(msg: Message, data: bytes, token: str) -> Any:
            body = writes.moved_body(writes.decode(data, msg.relpath), dest, dprio, msg.relpath)
            return writes.place(c, dest_dir, body, token, gid)

        return place, None

    def ready_name(self, relpath: str) -> str | None:
        name = relpath.rpartition("/")[2]
        if layout.parse_waiting(name):
            return name
        w = layout.parse_work(name)
        return layout.waiting_name(w[1], w[2], f"{w[3]}") if w else None

    def ready_target(self, relpath: str) -> tuple[str, str] | None:
        name = relpath.rpartition("/")[2]
        w = layout.parse_waiting(name)
        if w:
            return name, w[2]
        k = layout.parse_work(name)
        return (layout.waiting_name(k[1], k[2], k[3]), k[3]) if k else None

    def message_id(self, name: str) -> str | None:
        parsed = layout.parse_waiting(name) or layout.parse_work(name)
        return parsed[-1] if parsed else None

    def create_queue(self, queue: str) -> None:
        import yaml

        from ..fs import claims, safety
        from .settings import DEFAULTS

        path = self.queue_path(queue)
        root_conf = os.path.join(self.path, layout.CONFIG)
        with safety.Confined(self.path) as c:
            if not c.lexists(root_conf):  # an uninitiated root, as broker(create=True) makes it
                c.replace_file(root_conf, b"", claims.owned_name(claims.CFG, claims.new_token()))
            c.mkdir(path)
            c.mkdir(os.path.join(path, layout.WORK))
            text = yaml.dump(dict(DEFAULTS), default_flow_style=False)  # what broker.create_queue writes
            c.replace_file(os.path.join(path, layout.CONFIG), text.encode(),
                           claims.owned_name(claims.CFG, claims.new_token()))
