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


@dataclass
class Partial:
    """What a bulk change under way has done so far, kept by the backend as it goes in
    :attr:`Backend.partial <qconsole.backends.base.Backend.partial>`: when the change stops early
    (ctrl+c, an error) the operation reports and logs it. ``outcomes``: (id, None when done,
    else why skipped) so far; ``batch``: the trash batch holding what it removed; ``unknown``:
    changes sent whose answer never came (a time-out, a lost connection), each done or not."""

    outcomes: list[tuple[str, str | None]] = field(default_factory=list)
    batch: str | None = None
    unknown: int = 0

    @property
    def done(self) -> list[str]:
        return [mid for mid, why in self.outcomes if why is None]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        return [(mid, why) for mid, why in self.outcomes if why is not None]
