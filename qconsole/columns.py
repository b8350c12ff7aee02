"""One queue's messages in delivery order as columns, not objects.

A list of a million messages is a few arrays: ids (strings shared with the listing that
found them), relative paths, a state code per message and a deadline per message; a
:class:`~qconsole.model.Message` is made only for a row that is drawn, peeked or acted on
(toolong keeps line offsets instead of line objects the same way). The console's list reads
these columns; a backend builds them (:meth:`qconsole.backends.base.Backend.list_messages`),
from names alone for the file layouts, or from the messages of a collected scan for any
other store.

Plain Python (``array`` and ``bisect``), no Textual: tested on its own. A short column is a
list and a long one an ``array`` (:func:`float_column`): the import of ``array``, with the
``collections`` it pulls in, is ~2.5 ms of a ~20 ms ``ls`` of a small queue.
"""

from __future__ import annotations

import math
from _collections_abc import Sequence  # collections.abc's own classes, without importing collections
from bisect import bisect_right
from itertools import chain, compress
from operator import itemgetter, methodcaller

from .model import Message, QueueScan
from .states import DELAYED, EXPIRED, INFLIGHT, READY, STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable, Iterable, Iterator, MutableSequence
    from typing import Any

#: state word -> the one-byte code in :attr:`MessageColumns.states`
STATE_CODE: dict[str, int] = {s: i for i, s in enumerate(STATES)}
NO_DEADLINE = math.nan
_THIRD = itemgetter(2)
#: float columns of up to this many rows are lists (32 bytes a row), longer ones ``array('d')``
#: (8 bytes a row): see the module's docstring
SHORT_COLUMN = 4096


def float_column(values: Iterable[float], n: int) -> MutableSequence[float]:
    """The ``n`` floats of ``values`` as a column: a list up to :data:`SHORT_COLUMN`, else an array."""
    if n <= SHORT_COLUMN:
        return list(values)
    from array import array

    return array("d", values)


_TRIM: list[object] = []


def release_memory() -> None:
    """Hand the C heap's free pages back to the system after a big listing (glibc's
    ``malloc_trim``; nothing elsewhere). A million names leave ~80 MB of freed list buffers and
    strings that glibc otherwise keeps (its mmap threshold grows with each big free), so the
    console's resident memory would stay at the listing's peak."""
    if not _TRIM:
        try:
            import ctypes

            _TRIM.append(ctypes.CDLL(None).malloc_trim)
        except (OSError, AttributeError, ImportError):
            _TRIM.append(None)
    trim = _TRIM[0]
    if trim is not None:
        trim(0)  # type: ignore[operator]


class NameTails(Sequence[str]):
    """Ids that are the tail of each row's file name after ``marker`` (ddmq:
    ``<priority>.<number>.ddmq<id>``): a view over the names (``heads``, then ``rest``), so a
    million messages keep one string each, not two. Bulk reads (iteration, :meth:`index`,
    :meth:`present`) run in C over the names."""

    __slots__ = ("heads", "rest", "marker", "_tail")

    def __init__(self, heads: list[str], rest: list[str], marker: str) -> None:
        self.heads = heads
        self.rest = rest
        self.marker = marker
        self._tail = methodcaller("rpartition", marker)

    def __len__(self) -> int:
        return len(self.heads) + len(self.rest)

    def _name(self, i: int) -> str:
        n = len(self.heads)
        return self.heads[i] if i < n else self.rest[i - n]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._name(i).rpartition(self.marker)[2] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("id index out of range")
        return self._name(index).rpartition(self.marker)[2]

    def __iter__(self) -> Iterator[str]:
        return map(_THIRD, map(self._tail, chain(self.heads, self.rest)))

    def __contains__(self, ident: object) -> bool:
        try:
            return isinstance(ident, str) and self.index(ident) >= 0
        except ValueError:
            return False

    def index(self, ident: str, start: int = 0, stop: int | None = None) -> int:  # type: ignore[override]
        """Row of ``ident`` (ValueError when none): the name ending in ``marker + ident`` (an id is
        letters and digits, so that end is one id's only), found with ``str.find`` over each
        chunk's names joined by newlines (names hold none): ~60 ms for a miss at a million."""
        if not (ident.isascii() and ident.isalnum()):
            raise ValueError(f"{ident!r} is not in the list")
        want = self.marker + ident + "\n"
        stop = len(self) if stop is None else min(stop, len(self))
        n = len(self.heads)
        for names, base in ((self.heads, 0), (self.rest, n)):
            lo, hi = max(start - base, 0), min(stop - base, len(names))
            for i in range(lo, hi, _SEARCH_CHUNK):
                text = "\n".join(names[i : min(hi, i + _SEARCH_CHUNK)]) + "\n"
                at = text.find(want)
                if at >= 0:
                    return base + i + text.count("\n", 0, at)
        raise ValueError(f"{ident!r} is not in the list")

    def present(self, wanted: set[str] | frozenset[str]) -> set[str]:
        """Those of ``wanted`` that are ids here, in one pass per id length: each name's last
        characters (a slice, in C) against the wanted ids, then the few candidates checked."""
        by_len: dict[int, set[str]] = {}
        for w in wanted:
            if w.isascii() and w.isalnum():
                by_len.setdefault(len(w), set()).add(w)
        out: set[str] = set()
        for width, ids in by_len.items():
            ends = itemgetter(slice(-width, None))
            for names in (self.heads, self.rest):
                for i in range(0, len(names), _SEARCH_CHUNK):
                    part = names[i : i + _SEARCH_CHUNK]
                    for name in compress(part, map(ids.__contains__, map(ends, part))):
                        tail = name.rpartition(self.marker)[2]
                        if tail in ids:
                            out.add(tail)
        return out


#: names joined or sliced at a time when NameTails searches (a few ms of C each)
_SEARCH_CHUNK = 65_536


class MessageColumns(Sequence[Message]):
    """Messages of one queue in delivery order: ready ones in the order the real consumer
    takes them, then in flight by deadline, then expired, then the rest (as
    :attr:`QueueScan.messages` orders them).

    ``ids`` and ``relpaths`` are lists of str, ``states`` a bytearray of :data:`STATE_CODE`,
    ``deadlines`` a :func:`float_column` (NaN: none). ``make(i)`` builds the Message of row ``i`` (a backend
    turns a name back into its fields); when built from objects, ``objects`` holds them.
    ``scan`` holds the counts, warnings and errors of the listing (``messages`` is None).
    ``offset``: the rows before it have their id as file name and no deadline (VSQS ready
    messages): ``relpaths`` and ``deadlines`` start at row ``offset``, so a million ready
    messages cost no second list and no array of NaNs (use :meth:`relpath`, :meth:`deadline_at`).
    ``heads``: when given, the file names of the rows before ``offset``, in text order (ddmq
    ready messages, whose id is a part of their name: ``ids`` is then a :class:`NameTails` view
    over the names).
    ``ready_sorted``: the ready ids are in text order (so :meth:`index_of` can bisect).
    ``stamp``: what the backend saw of the listed directories (to skip an unchanged one).
    """

    __slots__ = ("queue", "ids", "relpaths", "states", "deadlines", "offset", "heads", "scan", "objects", "make",
                 "ready_n", "ready_sorted", "stamp", "listed_at", "partial", "ready_sums", "relist_hint", "_cache",
                 "_deadlines_of")

    def __init__(self, queue: str, ids: list[str], relpaths: list[str], states: bytearray,
                 deadlines: MutableSequence[float],
                 scan: QueueScan, *, make: Callable[[MessageColumns, int], Message] | None = None,
                 objects: list[Message] | None = None, ready_sorted: bool = False, stamp: Any = None,
                 listed_at: float = 0.0, partial: bool = False, offset: int = 0,
                 heads: list[str] | None = None) -> None:
        self.queue = queue
        self.ids = ids
        self.relpaths = relpaths
        self.states = states
        self.deadlines = deadlines
        self.offset = offset
        self.heads = heads
        self.scan = scan
        self.objects = objects
        self.make = make
        self.ready_n = states.count(STATE_CODE[READY]) if states else 0
        self.ready_sorted = ready_sorted
        self.stamp = stamp
        #: monotonic time of the last full listing (a relist by difference keeps it)
        self.listed_at = listed_at
        #: only the first part of a listing still under way
        self.partial = partial
        #: a backend's running sums over the ready ids (VSQS: of their hashes, to relist by difference)
        self.ready_sums: array | None = None
        #: what else a backend's next relisting by difference takes from this one (ddmq: the last
        #: ready name of the listing before, see ddmq/columns.py _head_and_tail)
        self.relist_hint: Any = None
        #: Message objects of the rows made lately (the rows on screen), by index
        self._cache: dict[int, Message] = {}
        #: state code -> the finite deadlines of its rows, sorted (made once per listing)
        self._deadlines_of: dict[int, list[float]] = {}

    # ------------------------------------------------------------------ building

    @classmethod
    def from_messages(cls, queue: str, messages: Sequence[Message], scan: QueueScan | None = None,
                      **kwargs: Any) -> MessageColumns:
        """Columns over Message objects (any store, and filtered views); the objects are kept."""
        msgs = list(messages)
        ids = [m.id for m in msgs]
        relpaths = [m.relpath for m in msgs]
        codes = STATE_CODE
        states = bytearray(codes[m.state] for m in msgs)
        deadlines = float_column((NO_DEADLINE if m.deadline is None else m.deadline for m in msgs), len(msgs))
        if scan is None:
            scan = QueueScan(name=queue, layout=msgs[0].layout if msgs else "", scanned_at=0.0)
        return cls(queue, ids, relpaths, states, deadlines, scan, objects=msgs, **kwargs)

    @classmethod
    def empty(cls, queue: str) -> MessageColumns:
        return cls.from_messages(queue, [])

    # ------------------------------------------------------------------ Sequence[Message]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self.message(i) for i in range(*index.indices(len(self.ids)))]
        n = len(self.ids)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("message index out of range")
        return self.message(index)

    def __iter__(self) -> Iterator[Message]:
        if self.objects is not None:
            return iter(self.objects)
        return (self.message(i) for i in range(len(self.ids)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, MessageColumns)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageColumns({self.queue!r}, {len(self)} messages)"

    def message(self, i: int) -> Message:
        """The Message of row ``i`` (made from the columns, kept while it is drawn often)."""
        if self.objects is not None:
            return self.objects[i]
        msg = self._cache.get(i)
        if msg is None:
            if len(self._cache) > 512:
                self._cache.clear()
            msg = self._cache[i] = self.make(self, i)  # type: ignore[misc]
        return msg

    # ------------------------------------------------------------------ columns

    def relpath(self, i: int) -> str:
        if i < self.offset:
            return self.ids[i] if self.heads is None else self.heads[i]
        return self.relpaths[i - self.offset]

    def deadline_at(self, i: int) -> float:
        """Row ``i``'s deadline, NaN when it has none."""
        return NO_DEADLINE if i < self.offset else self.deadlines[i - self.offset]

    def _deadlines(self, state: str) -> list[float]:
        """The finite deadlines of the rows in ``state``, sorted. The rows of a state are one
        run in the file stores' lists (found in C); RSMQ interleaves in-flight and delayed
        members by score, so elsewhere the rows are picked one by one."""
        code = STATE_CODE[state]
        dls = self._deadlines_of.get(code)
        if dls is None:
            states = self.states
            start, n = states.find(code), states.count(code)
            if start < 0:
                rows: Iterable[int] = ()
            elif states.count(code, start, start + n) == n:
                rows = range(start, start + n)
            else:
                rows = [i for i, c in enumerate(states) if c == code]
            # NaN (no deadline, e.g. an RSMQ member held for ever) is never past
            dls = self._deadlines_of[code] = sorted(d for d in map(self.deadline_at, rows) if d == d)
        return dls

    def expired_since(self, now: float) -> int:
        """In-flight rows (at listing time) whose deadline has passed by ``now`` (shown
        expired): a bisection over their sorted deadlines, not a pass over the queue."""
        return bisect_right(self._deadlines(INFLIGHT), now)

    def due_since(self, now: float) -> int:
        """Delayed rows (at listing time) whose delay has passed by ``now`` (shown ready)."""
        return bisect_right(self._deadlines(DELAYED), now)

    def rows_shown_as(self, state: str, now: float) -> list[int]:
        """Rows a list shows in ``state`` at ``now``: an in-flight message past its deadline is
        expired, a delayed one past its delay ready (see the console's ``shown_state``)."""
        code = STATE_CODE
        inflight, delayed = code[INFLIGHT], code[DELAYED]
        want = code[state]
        out = []
        for i, c in enumerate(self.states):
            if c == inflight or c == delayed:
                late = self.deadline_at(i) <= now  # NaN (no deadline) is never late
                shown = (EXPIRED if c == inflight else READY) if late else STATES[c]
                if shown == state:
                    out.append(i)
            elif c == want:
                out.append(i)
        return out

    def index_of(self, ident: str, near: int = 0, name: str | None = None) -> int | None:
        """Row of message id ``ident``: near ``near`` first, then by bisection over the ready
        rows when they are in text order, else one pass over the ids (in C). With ``heads``
        (in text order) and ``name``, the message's file name when it was seen: that name by
        bisection, then the few rows after the heads (it was consumed meanwhile); a message
        that is ready again under another name (requeued at another priority) is not looked
        for among a million names (the caller takes it as gone)."""
        ids = self.ids
        lo = max(0, near - 64)
        for i in range(lo, min(len(ids), near + 64)):
            if ids[i] == ident:
                return i
        if self.heads is not None and name is not None:
            from bisect import bisect_left

            i = bisect_left(self.heads, name, 0, self.offset)
            if i < self.offset and self.heads[i] == name:
                return i
            try:
                return ids.index(ident, self.offset)
            except ValueError:
                return None
        if self.ready_sorted and self.ready_n:
            from bisect import bisect_left

            i = bisect_left(ids, ident, 0, self.ready_n)
            if i < self.ready_n and ids[i] == ident:
                return i
            try:
                return ids.index(ident, self.ready_n)
            except ValueError:
                return None
        try:
            return ids.index(ident)
        except ValueError:
            return None

    def id_set(self) -> set[str]:
        return set(self.ids)

    def present(self, wanted: set[str] | frozenset[str]) -> set[str]:
        """Those of ``wanted`` that are ids of rows here (marks that still hold)."""
        if isinstance(self.ids, NameTails):
            return self.ids.present(wanted)
        if len(wanted) > 64:
            return wanted & self.id_set()
        return {i for i in wanted if self.index_of(i) is not None}

    def rows_where(self, keep: Iterable[bool]) -> list[int]:
        return list(compress(range(len(self.ids)), keep))

    def select(self, rows: Sequence[int]) -> list[Message]:
        return [self.message(i) for i in rows]

    def with_ids(self, wanted: set[str] | frozenset[str]) -> list[Message]:
        """The messages whose id is in ``wanted``, in list order."""
        return self.select(self.rows_where(map(wanted.__contains__, self.ids)))

    def without(self, gone: set[str] | frozenset[str]) -> MessageColumns:
        """A copy without the messages whose id is in ``gone`` (done by an action)."""
        if not gone:
            return self
        keep = [not x for x in map(gone.__contains__, self.ids)]
        if isinstance(self.ids, NameTails) and self.heads is not None and self.objects is None:
            # ids are a view over the names: the names are kept (in C), the view made again
            n = self.offset
            heads = list(compress(self.heads, keep[:n]))
            rest = list(compress(self.relpaths, keep[n:]))
            return MessageColumns(self.queue, NameTails(heads, rest, self.ids.marker), rest,  # type: ignore[arg-type]
                                  bytearray(compress(self.states, keep)),
                                  float_column(compress(self.deadlines, keep[n:]), len(rest)), self.scan,
                                  make=self.make,
                                  offset=len(heads), heads=heads, stamp=None, listed_at=self.listed_at)
        rows = self.rows_where(keep)
        ids = [self.ids[i] for i in rows]
        relpaths = [self.relpath(i) for i in rows]
        states = bytearray(self.states[i] for i in rows)
        deadlines = float_column(map(self.deadline_at, rows), len(rows))
        objects = [self.objects[i] for i in rows] if self.objects is not None else None
        return MessageColumns(self.queue, ids, relpaths, states, deadlines, self.scan, make=self.make,
                              objects=objects, ready_sorted=self.ready_sorted, stamp=None,
                              listed_at=self.listed_at)
