"""The ddmq backend: queues with ``ddmq.yaml`` and ``work/``, JSON message files ordered by name."""

from __future__ import annotations

import os

from ...errors import OperationError
from ..base import CREATE_QUEUE, PRIORITIES, REDELIVERY_COUNT, SETTINGS, WRITING, Option, SettingField
from ..fs.root import FileBackend
from . import layout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ...model import Message
    from ...payload import Payload
    from ..base import Setting


def _nonneg_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class DdmqBackend(FileBackend):
    kind = "ddmq"
    title = "ddmq"
    module = layout
    short_id_chars = 12  # of 32 random hex digits: unique in practice
    capabilities = FileBackend.capabilities | {SETTINGS, PRIORITIES, WRITING, CREATE_QUEUE, REDELIVERY_COUNT}
    publish_options = (
        Option("priority", "int", "Priority (lower first; default from settings).", minimum=0, short="-p"),
        Option("timeout", "int", "Visibility timeout in seconds.", minimum=0),
        Option("requeue", "int_or_bool", "Requeue when expired (default from settings).", minimum=0),
        Option("requeue_limit", "int", "At most N requeues.", minimum=0),
    )
    setting_fields = (
        SettingField("message_timeout", "int", "seconds a consumed message stays hidden", minimum=0, default=600),
        SettingField("priority", "int", "default priority of new messages (lower first)", minimum=0, default=999),
        SettingField("requeue", "bool", "requeue expired messages", default=True),
        SettingField("requeue_prio", "int", "priority of requeued messages", minimum=0, default=0),
        SettingField("cleaned", "int", "when ddmq last cleaned the queue (epoch s)", minimum=0, default=0),
    )

    def is_queue_dir(self, path: str) -> bool:
        return layout.is_queue_dir(path)

    def read_payload(self, msg: Message, cap: int | None) -> Payload:
        from ...payload import MAX_PARSE, payload_from_bytes, payload_of_body
        from ..fs.atomic import read_file_bytes
        from . import body

        path = os.path.join(self.require_queue(msg.queue), msg.relpath)
        data, size = read_file_bytes(path, MAX_PARSE)
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
            prio = conf.get("priority", DEFAULTS["priority"])
            if not _nonneg_int(prio):
                raise OperationError(f"the queue's default priority must be a non-negative integer, got {prio!r}")
        req = options.get("requeue")
        if req is None:
            req = bool(conf.get("requeue", True))
        done = []
        for text in texts:
            self.tick(len(done), len(texts))
            body = writes.new_body(queue, text, priority=prio, timeout=options.get("timeout"), requeue=req,
                                   requeue_limit=options.get("requeue_limit"))
            writes.publish_body(qdir, body)
            done.append(body["id"])
        return done

    #: messages whose copies share one durability barrier (see claims.commit_written)
    REQUEUE_BATCH = 128

    def requeue(self, queue: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        from ..fs import claims
        from ..fs.atomic import dir_gid, read_all, unlink_quiet
        from ..results import CONSUMED
        from . import writes

        qdir = self.require_queue(queue)
        prio = self._conf(queue).get("requeue_prio", 0)  # settings read once per operation
        if not _nonneg_int(prio):
            prio = 0
        gid = dir_gid(qdir)
        out: list[tuple[str, str | None]] = []
        batch: list[tuple[str, str, str, str]] = []  # (id, relpath, tmp name, final name)

        def commit_batch() -> None:
            for mid, committed in claims.commit_written(qdir, batch):
                # not committed: the consumer acked (or ddmq's clean() requeued) it first
                out.append((mid, None if committed else CONSUMED))
            batch.clear()

        try:
            for msg in msgs:
                self.tick(len(out) + len(batch), len(msgs))
                # copy first (from the message as it is), claim at commit time: no journal needed
                try:
                    body = writes.decode(read_all(os.path.join(qdir, msg.relpath)), msg.relpath)
                except FileNotFoundError:
                    out.append((msg.id, CONSUMED))
                    continue
                except (OperationError, OSError) as err:
                    why = str(err) if isinstance(err, OperationError) else err.strerror
                    out.append((msg.id, f"left as it was: {why}"))
                    continue
                new = writes.requeued_body(body, queue, prio)
                tmp = claims.write_tmp(qdir, writes.encode(new), claims.new_token(), gid, sync=False)
                batch.append((msg.id, msg.relpath, tmp, new["filename"]))
                if len(batch) >= self.REQUEUE_BATCH:
                    commit_batch()
            commit_batch()
        except BaseException:
            for _id, _rel, tmp, _final in batch:  # written, never claimed: only the copies go
                unlink_quiet(os.path.join(qdir, tmp))
            raise
        self.tick(len(msgs), len(msgs))
        return out

    def move_placer(self, dest: str, dest_dir: str) -> Any:
        from .settings import DEFAULTS
        from . import writes

        dprio = self._conf(dest).get("priority", DEFAULTS["priority"])

        def placer_for(msg: Message, data: bytes) -> Any:
            body = writes.moved_body(writes.decode(data, msg.relpath), dest, dprio)
            return writes.placer(dest_dir, body)

        return placer_for

    def ready_name(self, relpath: str) -> str | None:
        name = relpath.rpartition("/")[2]
        if layout.parse_waiting(name):
            return name
        w = layout.parse_work(name)
        return layout.waiting_name(w[1], w[2], f"{w[3]}") if w else None

    def create_queue(self, queue: str) -> None:
        import yaml

        from ..fs import claims
        from ..fs.atomic import replace_file
        from .settings import DEFAULTS

        path = self.queue_path(queue)
        root_conf = os.path.join(self.path, layout.CONFIG)
        if not os.path.lexists(root_conf):  # an uninitiated root, as broker(create=True) makes it
            replace_file(root_conf, b"", claims.owned_name(claims.CFG, claims.new_token()))
        os.mkdir(path)
        os.mkdir(os.path.join(path, layout.WORK))
        text = yaml.dump(dict(DEFAULTS), default_flow_style=False)  # what broker.create_queue writes
        replace_file(os.path.join(path, layout.CONFIG), text.encode(),
                     claims.owned_name(claims.CFG, claims.new_token()))
