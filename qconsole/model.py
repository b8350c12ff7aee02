"""Plain data objects shared by every layer: one message, one queue's scan, one root's scan."""

from __future__ import annotations

from dataclasses import dataclass, field

from .states import EXPIRED, INFLIGHT, MESSAGE_STATES, READY, STATES


@dataclass(slots=True)
class Message:
    """One message as read from its file name alone (no file content)."""

    queue: str
    layout: str
    id: str
    state: str
    #: path relative to the queue directory (``name`` or ``work/name``)
    relpath: str
    priority: int | None = None
    #: priority exactly as written in the file name (ddmq orders by this text)
    priority_text: str | None = None
    created_at: float | None = None
    deadline: float | None = None

    @property
    def name(self) -> str:
        return self.relpath.rpartition("/")[2]


@dataclass(slots=True)
class QueueScan:
    """Counts by state for one queue, plus messages when asked for."""

    name: str
    layout: str
    scanned_at: float
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    oldest_ready_created: float | None = None
    next_deadline: float | None = None
    #: ddmq only: priority text -> counts of ready/inflight/expired
    by_priority: dict[str, dict[str, int]] | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: VSQS: the divisor of the id unit seen on disk (1e6 for µs, 1e3 for ms), None if empty
    id_unit: float | None = None
    #: ready messages in the order the real consumer takes them, then in-flight by
    #: deadline, then expired, then writing; only filled when messages were asked for
    messages: list[Message] | None = None

    @property
    def total(self) -> int:
        return sum(self.counts[s] for s in MESSAGE_STATES)

    def oldest_ready_age(self, now: float) -> float | None:
        if self.oldest_ready_created is None:
            return None
        return max(0.0, now - self.oldest_ready_created)

    def next_expiry_in(self, now: float) -> float | None:
        if self.next_deadline is None:
            return None
        return max(0.0, self.next_deadline - now)

    def ready_messages(self) -> list[Message]:
        return [m for m in self.messages or () if m.state == READY]

    def held_messages(self) -> list[Message]:
        """In-flight and expired messages (consumed, not yet deleted)."""
        return [m for m in self.messages or () if m.state in (INFLIGHT, EXPIRED)]


@dataclass(slots=True)
class RootScan:
    """Every queue of a root, scanned once."""

    root: str
    layout: str
    generated_at: float
    duration_s: float
    queues: list[QueueScan]
    errors: list[str] = field(default_factory=list)

    def totals(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for q in self.queues:
            for s in STATES:
                out[s] += q.counts[s]
        out["total"] = sum(out[s] for s in MESSAGE_STATES)
        return out
