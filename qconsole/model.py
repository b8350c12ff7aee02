"""Plain data objects shared by every layer: one message, one queue's scan, one root's scan.

Hand-written slotted classes rather than dataclasses: importing ``dataclasses`` (and the
``inspect`` it pulls in) costs ~10 ms, paid by every ``qconsole stats`` a monitor runs.
"""

from __future__ import annotations

from .states import EXPIRED, INFLIGHT, MESSAGE_STATES, READY, STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


class _Record:
    """Equality and repr from ``__slots__``, like a dataclass."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, s) for s in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable, like an unfrozen dataclass

    def __repr__(self) -> str:
        fields = ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__)
        return f"{self.__class__.__name__}({fields})"


class Message(_Record):
    """One message as read from its file name alone (no file content).

    ``relpath`` is relative to the queue directory (``name`` or ``work/name``);
    ``priority_text`` is the priority exactly as written in the file name (ddmq orders by
    this text); times are epoch seconds.
    """

    __slots__ = ("queue", "layout", "id", "state", "relpath", "priority", "priority_text", "created_at", "deadline")

    def __init__(
        self,
        queue: str,
        layout: str,
        id: str,  # noqa: A002 (the message id, as every layer calls it)
        state: str,
        relpath: str,
        priority: int | None = None,
        priority_text: str | None = None,
        created_at: float | None = None,
        deadline: float | None = None,
    ) -> None:
        self.queue = queue
        self.layout = layout
        self.id = id
        self.state = state
        self.relpath = relpath
        self.priority = priority
        self.priority_text = priority_text
        self.created_at = created_at
        self.deadline = deadline

    @property
    def name(self) -> str:
        return self.relpath.rpartition("/")[2]


class ListingColumns(_Record):
    """A queue's messages as parallel lists (``scan_queue(collect="columns")``, the report's
    listing): the Message fields the inventory needs, no object per message, in no order.
    (The console's ordered, diffable list of a queue is :class:`qconsole.columns.MessageColumns`.)"""

    __slots__ = ("id", "state", "relpath", "priority", "created_at", "deadline")

    def __init__(
        self,
        id: list[str],  # noqa: A002
        state: list[str],
        relpath: list[str],
        priority: list[int | None],
        created_at: list[float | None],
        deadline: list[float | None],
    ) -> None:
        self.id = id
        self.state = state
        self.relpath = relpath
        self.priority = priority
        self.created_at = created_at
        self.deadline = deadline

    def __len__(self) -> int:
        return len(self.id)


#: the directory in a file root where qconsole keeps its own files (trash, audit log)
STATE_DIR = ".qconsole"
#: how a scan's error line names a listing it could not read (:meth:`QueueScan.unread`)
UNREADABLE = "cannot read "


class QueueScan(_Record):
    """Counts by state for one queue, plus messages when asked for.

    ``by_priority`` (ddmq only): priority text -> counts of ready/inflight/expired.
    ``id_unit`` (VSQS): the divisor of the id unit seen on disk (1e6 for µs, 1e3 for ms).
    ``messages``: ready ones in the order the real consumer takes them, then in flight by
    deadline, then expired, then writing; only filled when messages were asked for.
    ``extras`` (RSMQ): the queue's own figures (totalsent, totalrecv, vt, delay, maxsize,
    received more than once, next visibility) as plain JSON-able values.
    """

    __slots__ = ("name", "layout", "scanned_at", "counts", "oldest_ready_created", "next_deadline",
                 "by_priority", "errors", "warnings", "id_unit", "messages", "extras")

    def __init__(
        self,
        name: str,
        layout: str,
        scanned_at: float,
        counts: dict[str, int] | None = None,
        oldest_ready_created: float | None = None,
        next_deadline: float | None = None,
        by_priority: dict[str, dict[str, int]] | None = None,
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        id_unit: float | None = None,
        messages: list[Message] | None = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.layout = layout
        self.scanned_at = scanned_at
        self.counts: dict[str, int] = dict.fromkeys(STATES, 0) if counts is None else counts
        self.oldest_ready_created = oldest_ready_created
        self.next_deadline = next_deadline
        self.by_priority = by_priority
        self.errors: list[str] = [] if errors is None else errors
        self.warnings: list[str] = [] if warnings is None else warnings
        self.id_unit = id_unit
        self.messages = messages
        self.extras = extras

    @property
    def total(self) -> int:
        return sum(self.counts[s] for s in MESSAGE_STATES)

    def unread(self) -> str | None:
        """The error line of a listing this scan could not read, if any: its counts and
        messages then miss whatever that listing holds (a change must not go by them)."""
        return next((e for e in self.errors if e.startswith(UNREADABLE)), None)

    def readable(self) -> QueueScan:
        """This scan, or OperationError when a listing could not be read: a purge, requeue or
        move by such a scan would miss those messages and report success."""
        line = self.unread()
        if line is not None:
            from .errors import OperationError

            raise OperationError(f"{line}; nothing changed")
        return self

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


class RootScan(_Record):
    """Every queue of a root, scanned once."""

    __slots__ = ("root", "layout", "generated_at", "duration_s", "queues", "errors", "per_queue")

    def __init__(
        self,
        root: str,
        layout: str,
        generated_at: float,
        duration_s: float,
        queues: list[QueueScan],
        errors: list[str] | None = None,
        per_queue: list[Any] | None = None,
    ) -> None:
        self.root = root
        self.layout = layout
        self.generated_at = generated_at
        self.duration_s = duration_s
        self.queues = queues
        self.errors: list[str] = [] if errors is None else errors
        #: what the scan's ``each`` made of every queue (in ``queues``' order), when asked for
        self.per_queue = per_queue

    def totals(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for q in self.queues:
            for s in STATES:
                out[s] += q.counts[s]
        out["total"] = sum(out[s] for s in MESSAGE_STATES)
        return out
