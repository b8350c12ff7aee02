"""One VSQS queue listed as columns (:class:`qconsole.columns.MessageColumns`), for the console.

The ready ids are the sorted names of :mod:`..fs.sorted_names` (read in chunks, merged in
pieces, relisted by difference); this module says which names are ready, held, being written
or foreign, and checks the usual change of a live queue (head consumed, tail added) first.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from itertools import filterfalse, repeat
from operator import and_

from ...columns import SHORT_COLUMN, STATE_CODE, MessageColumns, float_column
from ...model import Message, QueueScan
from ...states import EXPIRED, FOREIGN, INFLIGHT, READY, STATES, VSQS, WRITING
from ...timeunits import vsqs_divisor
from ..fs import sorted_names as sn
from ..fs.listing import ErrorList, gc_paused, listing_chunks, os_error_line
from ..fs.sorted_names import HASH_MASK, in_sorted as _in_sorted, lstat_irregular as _lstat_irregular
from ..fs.sorted_names import merge2 as _merge2, pause as _yield, running_sums as _running
from .layout import _ascii_digits, _held_counts, canonical_ready, held_split, sort_rest, split_late

TYPE_CHECKING = False
if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable

_NAN = float("nan")


def make_message(cols: MessageColumns, i: int) -> Message:
    """Row ``i`` of VSQS columns as a Message (what :func:`.layout._messages` would have made)."""
    mid = cols.ids[i]
    state = STATES[cols.states[i]]
    dl = cols.deadline_at(i)
    return Message(cols.queue, VSQS, mid, state, cols.relpath(i), created_at=int(mid) / vsqs_divisor(mid),
                   deadline=None if dl != dl else dl)


class _Acc(sn.NotFiles):
    """What the chunks of one listing found besides the ready ids."""

    def __init__(self) -> None:
        self.held: dict[str, str] = {}
        self.writing: set[str] = set()
        self.temp = 0
        self.foreign = 0
        self.widths: set[int] = set()
        self.errors = ErrorList()
        self.listed = 0
        #: names like an id that a relisting's typed listing found not to be regular files
        self.not_files: set[str] = set()

    def take(self, names: list[str], irregular: frozenset[str] | set[str]) -> list[str]:
        """Sort one chunk's names out; returns its ready ids (unsorted)."""
        self.listed += len(names)
        ready, rest = canonical_ready(*_ascii_digits(names))  # (absurd, zero-led: foreign, worded)
        if ready:
            lens = set(map(len, ready))
            if irregular and not irregular.isdisjoint(ready):
                for fname in sorted(irregular.intersection(ready)):
                    self.foreign += 1
                    self.errors.add(f"{fname}: named like a message but not a regular file")
                ready = [m for m in ready if m not in irregular]
                lens = set(map(len, ready))
            self.widths |= lens  # of what stays ready (a FIFO named like an id is not)
        if not rest:
            return ready
        pairs, matched = held_split(rest, irregular)
        self.held.update(pairs)
        if len(matched) != len(rest):
            held, writing, temp, foreign = sort_rest(rest, irregular, set(matched), self.errors)
            self.held.update(held)
            self.writing.update(writing)
            self.temp += temp
            self.foreign += foreign
        return ready


def _build(queue: str, now: float, ready: list[str], acc: _Acc, *, partial: bool, stamp: object,
           listed_at: float) -> MessageColumns:
    """Columns and counts from the sorted ready ids and what else the listing found."""
    held = acc.held
    text_order = len(acc.widths) <= 1
    member = (lambda mid: _in_sorted(ready, mid)) if text_order else set(ready).__contains__
    if held and ready:
        both = [mid for mid in held if member(mid)]
        if both:  # consumed while the listing ran: the held name wins
            gone = set(both)
            ready = list(filterfalse(gone.__contains__, ready))
    writing = acc.writing
    if writing:
        writing = {w for w in writing if w not in held and not member(w)}
    scan = QueueScan(name=queue, layout=VSQS, scanned_at=now)
    counts = scan.counts
    counts[READY] = len(ready)
    counts[WRITING] = len(writing) + acc.temp
    counts[FOREIGN] = acc.foreign
    inflight, expired, next_deadline = _held_counts(list(held.values()), now)
    counts[INFLIGHT] = inflight
    counts[EXPIRED] = expired
    scan.next_deadline = next_deadline
    # the widths of the ready ids that stayed (not those consumed while listed), as the exact
    # count has them; in numeric order shorter ids come first, so equal ends mean one width
    if not ready:
        widths = set(map(len, held.keys() or writing))
    elif len(ready[0]) == len(ready[-1]):
        widths = {len(ready[0])}
    else:
        widths = set(map(len, ready))
    if ready:
        scan.oldest_ready_created = min(int(m) / vsqs_divisor(m) for m in ({ready[0]} | _firsts(ready, widths)))
    if widths:
        scan.id_unit = vsqs_divisor("9" * max(widths))
        if len({vsqs_divisor("9" * w) for w in widths}) > 1:
            scan.warnings.append("mixed id units (ms and µs): numeric order delivers the shorter ids first")
    scan.errors.extend(acc.errors.result())

    seconds = {mid: int(dl) / vsqs_divisor(dl) for mid, dl in held.items()}
    order = sorted(held, key=lambda mid: (seconds[mid], int(mid)))
    live, late = split_late(order, held, now)  # (the count's rule, to the unit)
    wids = sorted(writing, key=int)
    n_ready = len(ready)
    ids = ready  # every caller hands over a list of its own: extended in place, not copied
    ids += live + late + wids
    # ready rows: the file name is the id and there is no deadline (columns from ``offset`` on)
    relpaths = [f"{m}.{held[m]}" for m in live + late] + [f"{m}.new" for m in wids]
    states = bytearray([STATE_CODE[READY]]) * n_ready
    states += bytes([STATE_CODE[INFLIGHT]]) * len(live) + bytes([STATE_CODE[EXPIRED]]) * len(late)
    states += bytes([STATE_CODE[WRITING]]) * len(wids)
    deadlines = float_column((seconds[m] for m in live + late), len(live) + len(late) + len(wids))
    deadlines.extend(repeat(_NAN, len(wids)))
    return MessageColumns(queue, ids, relpaths, states, deadlines, scan, make=make_message, offset=n_ready,
                          ready_sorted=len(widths) <= 1, stamp=stamp, listed_at=listed_at, partial=partial)


def _firsts(ready: list[str], widths: set[int]) -> set[str]:
    """With mixed widths the numerically oldest of each width (ready is in numeric order)."""
    if len(widths) <= 1:
        return set()
    out: set[str] = set()
    for w in widths:
        for m in ready:
            if len(m) == w:
                out.add(m)
                break
    return out


def _order(ready: list[str], widths: set[int]) -> list[str]:
    """Numeric order: text order for one width, int keys for mixed ones (rare)."""
    if len(widths) > 1:
        ready.sort(key=int)
    return ready


def _head_and_tail(qdir: str, base: list[str], held_before: set[str], acc: _Acc,
                   previous_sums: Callable[[list[str]], array | None]) -> tuple[list[str], array] | list[str] | None:
    """The usual change of a live queue without a set of a million names: consumers took
    ready ids from the head, producers added ids after the last one. Holds when the ready ids
    listed are exactly ``base`` from the smallest one listed on, plus ids above ``base``'s
    last: checked by their count and the sum of their (per-process salted) string hashes.
    None when it does not hold (a requeue brought back an old id, a delete in the middle):
    then the caller diffs by sets."""
    if not base:
        return None
    sums = previous_sums(base)
    if sums is None:
        return None
    hi = base[-1]
    width = len(hi)
    lo = hi
    listed = n_digits = n_names = 0
    widths: set[int] = set()
    tail: list[str] = []
    rest: list[str] = []
    holds = True
    # the listing read a chunk at a time and dropped as it goes: only what is new stays. Typed
    # (from the entry, no stat): a kept name may now be a FIFO, a link or a directory
    for part, irregular in listing_chunks(qdir, True, sn.CHUNK):
        n_names += len(part)
        if irregular:
            acc.not_files.update(filter(str.isdigit, irregular))
        _yield()  # each step a few ms of C, so the screen gets its turns
        if not holds:
            continue  # (read to the end all the same: the caller's diff by sets drops the non-files)
        digits = list(filter(str.isdigit, part))
        if len(digits) != len(part):
            rest.extend(filterfalse(str.isdigit, part))
        if not digits:
            continue
        if not "".join(digits).isascii():
            holds = False  # (a planted name of other digits, review D)
            continue
        n_digits += len(digits)
        widths.update(map(len, digits))
        lo = min(lo, min(digits))
        tail.extend(filter(hi.__lt__, digits))
        listed += sum(map(and_, map(hash, digits), repeat(HASH_MASK)))
    if not holds or widths != {width} or (width > 1 and lo[0] == "0"):
        return None  # mixed widths: text order is not numeric order (or nothing ready); a zero-led id
    k = bisect_left(base, lo)
    if n_digits != len(base) - k + len(tail):
        return None
    if listed != _running(tail, sums[-1])[-1] - sums[k]:
        return None
    kept = base[k:]
    kept_sums = sums[k:]
    if acc.not_files and not acc.not_files.isdisjoint(kept):
        kept_sums = None  # (made again from what stays)
        kept = acc.drop_not_files(kept)
    acc.listed = n_names
    irregular = _lstat_irregular(qdir, [n for n in rest if n not in held_before] + tail)
    acc.widths.add(width)
    acc.take(rest, irregular)
    if tail:
        if irregular:
            for n in sorted(irregular.intersection(tail)):
                acc.foreign += 1
                acc.errors.add(f"{n}: named like a message but not a regular file")
            tail = [n for n in tail if n not in irregular]
        tail.sort()
        kept += tail
        if kept_sums is not None:
            kept_sums.extend(_running(tail, sums[-1])[1:])
    return kept if kept_sums is None else (kept, kept_sums)


def _by_difference(qdir: str, base: list[str], held_before: set[str], acc: _Acc,
                   previous_sums: Callable[[list[str]], array | None]) -> list[str] | tuple[list[str], array]:
    """The sorted ready ids of ``qdir`` now, from ``base`` (the sorted ready ids of the last
    listing): the ids still there keep their order and their string objects, only the names
    that were not ready before are sorted out and merged in (new names are checked with
    lstat; a kept one replaced by a FIFO, a link or a directory is found by the typed
    listing of the head-and-tail check), every bulk step in chunks."""
    quick = _head_and_tail(qdir, base, held_before, acc, previous_sums)
    if quick is not None:
        return quick
    acc.widths.update({len(base[0]), len(base[-1])} if base else ())
    # what is not in base: new ids, and the held/writing/foreign names
    ready, acc.listed = sn.relist_by_sets(qdir, base, held_before, acc.take)
    ready = acc.drop_not_files(ready)  # (what the typed listing just before found)
    if len(acc.widths) > 1:
        ready.sort(key=int)
    return ready


@gc_paused
def list_columns(root: str, name: str, now: float | None = None, *, previous: MessageColumns | None = None,
                 progress: Callable[[MessageColumns], None] | None = None, stamp: object = None) -> MessageColumns:
    """Columns of one queue. With ``previous`` (this queue's last columns) the ready ids are
    updated by difference; ``progress`` gets partial columns while a first listing runs."""
    now = time.time() if now is None else now
    started = time.monotonic()
    qdir = os.path.join(root, name)
    acc = _Acc()
    base = None
    if previous is not None and previous.ready_sorted and previous.objects is None and not previous.partial:
        base = previous.ids[: previous.ready_n]
    try:
        if base is None:
            def partial(merged: list[str]) -> None:
                # (a copy: _build extends the list it is given)
                progress(_build(name, now, list(merged), acc, partial=True, stamp=None, listed_at=started))

            ready = sn.sorted_listing(qdir, acc.take, partial if progress is not None else None)
            ready = sn.dedupe_sorted(_order(ready, acc.widths))
        else:
            def previous_sums(ids: list[str]) -> array | None:
                if len(ids) > 8_000_000:
                    return None
                if previous.ready_sums is None or len(previous.ready_sums) != len(ids) + 1:
                    previous.ready_sums = _running(ids)
                return previous.ready_sums

            ready = _by_difference(qdir, base, set(previous.relpaths), acc, previous_sums)
    except OSError as err:
        scan = QueueScan(name=name, layout=VSQS, scanned_at=now)
        scan.errors.append(os_error_line(err, name))
        return MessageColumns.from_messages(name, [], scan)
    sums = None
    if isinstance(ready, tuple):
        ready, sums = ready
    cols = _build(name, now, ready, acc, partial=False, stamp=stamp, listed_at=started)
    if sums is not None and cols.ready_n == len(sums) - 1:
        cols.ready_sums = sums
    elif cols.ready_sorted and SHORT_COLUMN < cols.ready_n <= 8_000_000:
        # what the next relisting checks against (a short list's sums are made when it needs them)
        cols.ready_sums = _running(cols.ids[: cols.ready_n])
    return cols
