"""The VSQS backend: a root whose sub-directories are queues of ``<id>``/``<id>.<deadline>`` files."""

from __future__ import annotations

import os
import time

from ..base import CREATE_QUEUE, WRITING, Option
from ..fs.listing import gc_paused
from ..fs.root import FileBackend
from . import layout

WRITING_KIND = "writing"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from typing import Any

    from ...model import Message


class VsqsBackend(FileBackend):
    kind = "vsqs"
    title = "VSQS"
    module = layout
    capabilities = FileBackend.capabilities | {WRITING, CREATE_QUEUE}
    publish_options = (
        Option("vsqs_clock", "choice", "Id unit: us (vsqs 0.3) or ms; default: the queue's own.",
               choices=("us", "ms")),
    )

    def columns_lister(self) -> Any:
        from .columns import list_columns

        return list_columns

    def publish(self, queue: str, payloads: Sequence[bytes], options: dict[str, Any]) -> list[str]:
        from ..fs import safety
        from . import writes

        qdir = self.require_queue(queue)
        divisor = writes.divisor_for(options.get("vsqs_clock"), self.scan_queue(queue).id_unit)
        with safety.Confined(self.path) as c:
            gid = c.dir_gid(qdir)
            done: list[str] = []
            self.published = done  # what an interrupted publish did do (for its audit line)
            writes.publish(c, qdir, payloads, divisor, gid, done, self.tick)
        return done

    def requeue(self, queue: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        return self._requeue(queue, [m.id for m in msgs], [m.relpath for m in msgs])

    @gc_paused  # 100k outcomes (and the batch's tuples): dozens of collections that find nothing
    def requeue_held(self, queue: str, states: Collection[str]) -> list[tuple[str, str | None]]:
        # one listing, through the root, picks the held names and serves the batch's checks: no
        # scan (its sort, columns and second listing were ~0.4 s of a requeue pass of 100k)
        from ..fs import safety
        from . import writes

        qdir = self.require_queue(queue)
        now = time.time()
        with safety.Confined(self.path) as c:
            names, irregular = c.listing(qdir)
            ids, rels, sole = layout.held_by_state(names, irregular, now, states)
            reasons = writes.requeue_many(c, qdir, ids, rels, lambda done: self.tick(done, len(ids)), names, sole)
        return self._outcomes(ids, reasons)

    @gc_paused
    def _requeue(self, queue: str, ids: list[str], relpaths: list[str]) -> list[tuple[str, str | None]]:
        from ..fs import safety
        from . import writes

        qdir = self.require_queue(queue)
        with safety.Confined(self.path) as c:
            reasons = writes.requeue_many(c, qdir, ids, relpaths, lambda done: self.tick(done, len(ids)))
        return self._outcomes(ids, reasons)

    @staticmethod
    def _outcomes(ids: list[str], reasons: list[str | None]) -> list[tuple[str, str | None]]:
        from ..results import ALREADY_READY

        if ALREADY_READY in reasons:  # someone requeued it first: it is ready, as asked
            reasons = [None if why == ALREADY_READY else why for why in reasons]
        return list(zip(ids, reasons))

    def move_placer(self, c: Any, dest: str, dest_dir: str) -> Any:
        from . import writes

        placer = writes.Placer(c, dest_dir, writes.divisor_for(None, self.scan_queue(dest).id_unit),
                               c.dir_gid(dest_dir))
        return (lambda _msg, data, token: placer.prepare(data, token)), placer.check

    def ready_name(self, relpath: str) -> str | None:
        parsed = layout.parse_name(relpath.rpartition("/")[2])
        return parsed[1] if parsed and parsed[0] != WRITING_KIND else None

    def ready_target(self, relpath: str) -> tuple[str, str] | None:
        parsed = layout.parse_name(relpath.rpartition("/")[2])
        return (parsed[1], parsed[1]) if parsed and parsed[0] != WRITING_KIND else None

    def message_id(self, name: str) -> str | None:
        parsed = layout.parse_name(name)
        return parsed[1] if parsed else None

    def create_queue(self, queue: str) -> None:
        from ..fs import safety

        with safety.Confined(self.path) as c:
            c.mkdir(self.queue_path(queue))
