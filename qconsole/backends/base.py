"""The backend protocol: everything specific to one kind of store, behind one interface.

A backend is an open target (a VSQS or ddmq root directory, an RSMQ namespace in Redis).
Layers above it (operations, outputs, the CLI, the screens, the report, the demo) ask it:
what it can do (:attr:`Backend.capabilities`), which options its publish takes
(:attr:`Backend.publish_options`), which settings it has (:attr:`Backend.setting_fields`),
and they never branch on the kind of store. Modelled on harlequin's adapter/connection
split: :func:`qconsole.backends.open_target` is the adapter (target text -> backend),
the backend is the connection.

Methods a store cannot support raise :class:`Unsupported` (one line, exit 2); callers check
:meth:`Backend.can` first to hide what does not apply (a VSQS root has no settings screen).

Kept free of dataclasses/typing imports: ``qconsole stats`` imports this on every run.
"""

from __future__ import annotations

from ..errors import MessageNotFoundError, QConsoleError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence
    from typing import Any

    from ..columns import MessageColumns

    from ..model import Message, QueueScan, RootScan
    from ..payload import Payload
    from .results import Partial, TrashBatch

#: capability words (see :meth:`Backend.can`)
SETTINGS = "settings"  # per-root/queue settings that can be read and saved
PRIORITIES = "priorities"  # messages carry a priority that orders delivery
TRASH = "trash"  # delete/purge are undoable through a trash
RECOVER = "recover"  # a killed qconsole can leave claims that `recover` puts back
PARALLEL_SCAN = "parallel_scan"  # counting can fork processes (stats/check only)
CHECK_TYPES = "check_types"  # counting by names can also check entry types
DELAYED = "delayed"  # the store has the `delayed` state
WRITING = "writing"  # the store has the `writing` state (a message being written)
CREATE_QUEUE = "create_queue"
DELETE_QUEUE = "delete_queue"
REDELIVERY_COUNT = "redelivery_count"  # messages carry how often they were delivered again


class Unsupported(QConsoleError):
    """The store has no such thing (e.g. settings on VSQS)."""


class Option:
    """One option a backend's operation takes (publish), declared so the CLI, the TUI form and
    the help are built from it. ``kind``: int, float, bool, choice, int_or_bool."""

    __slots__ = ("name", "kind", "help", "choices", "minimum", "maximum", "flag", "short")

    def __init__(self, name: str, kind: str, help: str, *, choices: Sequence[str] = (),  # noqa: A002
                 minimum: float | None = None, maximum: float | None = None, flag: str | None = None,
                 short: str | None = None) -> None:
        self.name = name
        self.kind = kind
        self.help = help
        self.choices = tuple(choices)
        self.minimum = minimum
        self.maximum = maximum
        self.flag = flag or "--" + name.replace("_", "-")
        self.short = short

    def __repr__(self) -> str:
        return f"Option({self.name!r}, {self.kind!r})"

    def check(self, value: Any) -> str | None:
        """A problem with ``value`` (one line), or None when it is acceptable."""
        import math

        name = self.name.replace("_", " ")  # as the form's label and the flag read it, not vsqs_clock
        if value is None:
            return None
        if self.kind == "choice":
            return None if value in self.choices else f"{name} must be one of {', '.join(self.choices)}"
        if self.kind == "bool":
            return None if isinstance(value, bool) else f"{name} must be true or false"
        if self.kind == "int_or_bool" and isinstance(value, bool):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} must be a number, got {value!r}"
        if self.kind in ("int", "int_or_bool") and not isinstance(value, int):
            return f"{name} must be an integer, got {value!r}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{name} must be a finite number"
        if self.minimum == 0 and value < 0:
            return f"{name} must not be negative (got {value})"
        if self.minimum is not None and value < self.minimum:
            return f"{name} must not be below {self.minimum:g} (got {value})"
        if self.maximum is not None and value > self.maximum:
            return f"{name} must be at most {self.maximum:,} (got {_shown(value)})"
        return None


def _shown(value: float) -> str:
    """A number for an error line: a huge integer by its digit count, not 40 digits of it."""
    return f"{len(str(value))} digits" if isinstance(value, int) and abs(value) >= 10**15 else f"{value:,}"


class SettingField:
    """One known setting: its key, kind (int, float, bool), bounds, help and the store's default."""

    __slots__ = ("key", "kind", "help", "minimum", "maximum", "default")

    def __init__(self, key: str, kind: str, help: str, *, minimum: float | None = None,  # noqa: A002
                 maximum: float | None = None, default: Any = None) -> None:
        self.key = key
        self.default = default
        self.kind = kind
        self.help = help
        self.minimum = minimum
        self.maximum = maximum


class Setting:
    """A setting's effective value and where it comes from (default, root, queue, store)."""

    __slots__ = ("key", "value", "source")

    def __init__(self, key: str, value: Any, source: str) -> None:
        self.key = key
        self.value = value
        self.source = source

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Setting) and (self.key, self.value, self.source) == (other.key, other.value, other.source)

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.value!r}, {self.source!r})"


class Backend:
    """One open store. Subclasses set the class attributes and implement the methods.

    Reading: :meth:`queue_names`, :meth:`scan`, :meth:`scan_queue`, :meth:`read_payload`,
    :meth:`settings`. Changing (each per message atomic against live clients; a message a
    client changed meanwhile is reported as skipped with a reason from
    :mod:`qconsole.backends.results`, never lost): :meth:`publish`, :meth:`requeue`,
    :meth:`remove` (delete/purge, into the trash when asked), :meth:`move`,
    :meth:`save_settings`, :meth:`create_queue`, :meth:`trash_list`, :meth:`trash_restore`,
    :meth:`trash_empty`, :meth:`recover`. Policy (read-only, selection, audit) is not here:
    it is :class:`qconsole.ops.Operations`'.
    """

    #: the kind of store, as JSON and the audit log name it: vsqs, ddmq, rsmq
    kind: str = ""
    #: the kind as people write it (VSQS, ddmq, RSMQ)
    title: str = ""
    #: a setting can be removed (falling back to a default); False: every queue holds each one
    settings_removable: bool = True
    capabilities: frozenset[str] = frozenset()
    publish_options: tuple[Option, ...] = ()
    #: the module the Spark report lists and reads this store with (``list_chunks``, ``read_chunk``)
    report_module: str = ""
    #: how many leading characters of an id tables show (None: the whole id)
    short_id_chars: int | None = None
    setting_fields: tuple[SettingField, ...] = ()

    #: how the target is shown (headers, JSON `root`, audit lines): credentials removed
    target: str = ""
    #: ``(done, total)`` called as a bulk change goes (the CLI's progress line on a terminal)
    progress: Callable[[int, int], None] | None = None
    #: what the bulk change under way has done so far (a :class:`~.results.Partial`), kept by the
    #: changes that can stop half-way (remove, move, requeue, restore): the operation resets it
    #: before a change and reports it when the change stops early (ctrl+c, an error)
    partial: Partial | None = None
    #: the last ``(done, total)`` a change ticked: what a change that keeps no ``partial`` says
    #: when it stops early (how far it got, not which ones)
    ticked: tuple[int, int] | None = None

    def tick(self, done: int, total: int) -> None:
        self.ticked = (done, total)
        if self.progress is not None:
            self.progress(done, total)

    # ------------------------------------------------------------------ describing

    @property
    def layout(self) -> str:
        """The kind of store as JSON's ``layout`` field names it (the same word as :attr:`kind`)."""
        return self.kind

    def can(self, capability: str) -> bool:
        return capability in self.capabilities

    def describe(self) -> dict[str, Any]:
        """What the audit log and JSON say about the target (no credentials)."""
        return {"root": self.target, "layout": self.kind}

    def close(self) -> None:
        """Release connections; a file backend holds none."""

    def now(self) -> float:
        """The store's clock in epoch seconds (Redis TIME for RSMQ, this host's for files)."""
        import time

        return time.time()

    def default_audit_log(self) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------ reading

    def validate_queue_name(self, name: str) -> str:
        raise NotImplementedError

    def queue_names(self) -> tuple[list[str], list[str]]:
        """(queue names, error lines)."""
        raise NotImplementedError

    def require_queue(self, name: str) -> None:
        """UnknownQueueError when ``name`` is not a queue of this target."""
        raise NotImplementedError

    def scan(self, queues: Iterable[str] | None = None, now: float | None = None, *,
             check_types: bool = False, jobs: int | None = 1,
             each: Callable[[QueueScan, float], Any] | None = None) -> RootScan:
        """Counts of every queue (or the named ones) at one moment, the store's own clock's
        when ``now`` is None. ``jobs``: processes to scan with, where the store gains from
        several (None: as many as pay off). ``each(scan, now)``: run on every queue's scan,
        in whichever process made it; its results go to ``RootScan.per_queue``."""
        raise NotImplementedError

    def scan_queue(self, name: str, now: float | None = None, *, collect: bool = False,
                   check_types: bool = False) -> QueueScan:
        raise NotImplementedError

    def held_messages(self, name: str) -> list[Message]:
        """The queue's in-flight and expired messages, as a collected scan lists them (what a
        requeue by state picks from). A store that can list them without the ready ones
        (most of a queue) says so by overriding this."""
        return self.scan_queue(name, collect=True).readable().held_messages()

    def requeue_held(self, queue: str, states: Collection[str]) -> list[tuple[str, str | None]]:
        """Every held message of ``queue`` whose state is one of ``states`` (in flight,
        expired) made ready as :meth:`requeue` does: (id, None when done else the skip
        reason) each. A store that can pick them without an object per message overrides
        this (a requeue by state of 100k held messages)."""
        return self.requeue(queue, [m for m in self.held_messages(queue) if m.state in states])

    def find_messages(self, queue: str, idents: Sequence[str]) -> dict[str, Message] | None:
        """The messages ``idents`` name (by id), each looked up by itself, as ``{id: Message}``:
        an id not in the queue is left out. None where the store finds an id only by listing the
        queue (the caller lists it: a file name or id prefix is found that way too)."""
        return None

    def list_head(self, queue: str, limit: int, state: str | None = None) -> tuple[MessageColumns, int] | None:
        """The first ``limit`` rows of :meth:`list_messages` (only those in ``state`` when
        given), in its order and as its columns, read without listing the rest, and how many
        rows the whole listing has (from a count of the queue). None where the store has no
        such read (the caller lists the queue and takes its head)."""
        return None

    def start_first_count(self, now: float | None = None) -> Any:
        """Start counting the big queues in a forked process, for a console's first screen (an
        object whose ``take()`` gives ``{name: QueueScan}`` or None, and ``close()``); None
        where the store gains nothing from it. Only while the process has no thread."""
        return None

    def list_messages(self, name: str, now: float | None = None, *, previous: MessageColumns | None = None,
                      progress: Callable[[MessageColumns], None] | None = None) -> MessageColumns:
        """One queue's messages in delivery order as columns (the console's list).

        ``previous``: this queue's last columns; a store that can tell its listing did not
        change returns them as they are, and one that can relist by difference starts from
        them. ``progress`` may get partial columns while a long listing runs. The default
        turns a collected scan into columns (the Message objects are kept).
        """
        from ..columns import MessageColumns

        scan = self.scan_queue(name, now, collect=True)
        msgs = scan.messages or []
        scan.messages = None
        return MessageColumns.from_messages(name, msgs, scan)

    def queue_stamp(self, name: str) -> Any:
        """Something equal between two calls only when the queue's listing is (very likely)
        unchanged, or None when the store cannot tell (then every refresh lists it)."""
        return None

    def unchanged_since(self, then: Any, now: Any, age_s: float) -> bool:
        """Whether a queue whose stamp was ``then`` ``age_s`` seconds ago and is ``now`` now
        can be taken as unchanged (so its last listing or counts still hold)."""
        return False

    def read_payload(self, msg: Message, cap: int | None) -> Payload:
        raise NotImplementedError

    def message_sizes(self, queue: str, msgs: Sequence[Message]) -> dict[str, int | None]:
        """relpath -> stored size in bytes (None when gone meanwhile), without reading payloads."""
        return {m.relpath: None for m in msgs}

    # ------------------------------------------------------------------ settings

    def settings(self, queue: str | None) -> dict[str, Setting]:
        raise Unsupported(f"{self.title} queues have no settings")

    def parse_setting(self, key: str, text: str) -> Any:
        raise Unsupported(f"{self.title} queues have no settings")

    def validate_settings(self, values: dict[str, Any]) -> list[str]:
        raise Unsupported(f"{self.title} queues have no settings")

    def save_settings(self, queue: str | None, values: dict[str, Any], unset: Sequence[str],
                      settle_s: float) -> int:
        """Save; returns how many attempts it took (a concurrent rewrite can force a redo)."""
        raise Unsupported(f"{self.title} queues have no settings (there is no config file to change)")

    # ------------------------------------------------------------------ changes

    def check_publish(self, options: dict[str, Any]) -> None:
        """OperationError for an option this store does not take or a bad value."""
        from ..errors import OperationError

        from . import all_publish_options, backend_class

        known = {o.name: o for o in self.publish_options}
        for name, value in options.items():
            if value is None:
                continue
            opt = known.get(name)
            if opt is None:
                kinds = sorted({backend_class(k).title for k, o in all_publish_options() if o.name == name})
                whose = f": it is a {'/'.join(kinds)} option" if kinds else ""
                raise OperationError(f"{self.title} messages have no {name.replace('_', ' ')}{whose}")
            problem = opt.check(value)
            if problem:
                raise OperationError(problem)

    def publish(self, queue: str, payloads: Sequence[bytes], options: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def requeue(self, queue: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        """Make held messages ready now: [(id, None when done else the skip reason)]."""
        raise NotImplementedError

    def remove(self, action: str, queue: str, msgs: Sequence[Message], *, use_trash: bool,
               user: str) -> tuple[list[tuple[str, str | None]], str | None]:
        """Delete messages (into a new trash batch when ``use_trash``): (outcomes, batch)."""
        raise NotImplementedError

    def move(self, src: str, dest: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        raise NotImplementedError

    @classmethod
    def check_new_queue_name(cls, name: str) -> str:
        """QueueNameError for a name this kind of store refuses (checked before a new target is made)."""
        raise NotImplementedError

    @classmethod
    def make_target(cls, target: str) -> bool:
        """Make a target that does not exist yet (True when it made one)."""
        return False

    def create_queue(self, queue: str) -> None:
        raise Unsupported(f"{self.kind}: creating queues is not supported")

    def delete_queue(self, queue: str, *, force: bool = False) -> int:
        """Remove a queue as its clients do (RSMQ: deleteQueue), an empty one only unless
        ``force`` (checked in the same atomic step); stores without it: Unsupported."""
        raise Unsupported(f"{self.title}: deleting queues is not supported (remove the directory yourself)")

    # ------------------------------------------------------------------ trash / recovery

    def trash_list(self) -> list[TrashBatch]:
        raise Unsupported(f"{self.title} has no trash")

    def trash_batch_queue(self, batch: str | None) -> tuple[str, str | None]:
        """The batch id (newest when None) and the queue it came from; OperationError if none."""
        raise Unsupported(f"{self.title} has no trash")

    def trash_restore(self, batch: str) -> tuple[list[str], list[tuple[str, str]]]:
        raise Unsupported(f"{self.title} has no trash")

    def trash_empty(self, older_than_s: float | None) -> list[tuple[str, str | None]]:
        """Delete trash batches for good (those older than ``older_than_s``, when given):
        (batch, None when deleted, else why it was left) each."""
        raise Unsupported(f"{self.title} has no trash")

    def recover(self, *, force: bool = False) -> Any:
        raise Unsupported(f"{self.kind}: nothing to recover (changes are single atomic steps)")

    # ------------------------------------------------------------------ report / demo

    @classmethod
    def demo(cls) -> Any:
        """The backend's ``demo`` module for ``qconsole demo``: QUEUES, PLANS, make_root(path),
        seed_fixture(root, now), publish_options(rng), take(root, queue, timeout) -> ack | None."""
        import importlib

        return importlib.import_module(f"{__package__}.{cls.kind}.demo")

    def reopen_spec(self) -> dict[str, Any]:
        """Plain, picklable data that :func:`qconsole.backends.reopen` turns back into this
        backend on a Spark executor (no credentials in clear where avoidable)."""
        return {"target": self.target, "layout": self.kind}


def first_ready(scan: QueueScan) -> Message:
    """The message the real consumer would take next (first ready in delivery order)."""
    from ..states import READY

    for msg in scan.messages or ():
        if msg.state == READY:
            return msg
    raise MessageNotFoundError(f"queue {scan.name!r} has no ready message")


def find_message(scan: QueueScan, ident: str) -> Message:
    """The message with id (or file name) ``ident`` in a collected scan, or MessageNotFoundError."""
    for msg in scan.messages or ():
        if msg.id == ident or msg.relpath == ident or msg.name == ident:
            return msg
    raise no_message(ident, scan.name)


def no_message(ident: str, queue: str) -> MessageNotFoundError:
    """The error for an id not in ``queue``; for one typed as shown (``\\xff`` escapes), how to type it."""
    hint = ""
    if "\\x" in ident:  # outputs show undecodable bytes of an id or file name as \xNN
        hint = " (an id shown with \\xNN escapes holds those bytes: type them, e.g. $'\\xff\\xfe' in bash)"
    return MessageNotFoundError(f"no message {ident!r} in queue {queue!r}{hint}")


next_message = first_ready
