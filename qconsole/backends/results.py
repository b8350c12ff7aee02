"""What a backend's changes report back: skip reasons (the same words in the CLI, the TUI and
the audit log) and trash batches. Imported only by paths that change the store."""

from __future__ import annotations

from dataclasses import dataclass, field

#: skip reasons
CHANGED = "changed underneath"
CONSUMED = "already consumed"
ALREADY_READY = "already ready"
NOT_HELD = "not in flight"
#: an id of a selection (ids on stdin) that the queue no longer holds when the change runs
NOT_IN_QUEUE = "not in the queue any more"


@dataclass
class TrashBatch:
    batch: str
    created_at: float
    action: str
    queue: str | None
    count: int
    user: str = ""
    ids: list[str] = field(default_factory=list)
