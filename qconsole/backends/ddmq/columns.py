"""One ddmq queue listed as columns (:class:`qconsole.columns.MessageColumns`), for the console.

Ready rows are the waiting file names themselves, in text order (the order ddmq's consumer
takes them), kept as one sorted list of str (:mod:`..fs.sorted_names`: read in chunks with
the first rows shown at once, merged in pieces, relisted by difference); a row's id is the
tail of its name (:class:`~qconsole.columns.NameTails`), so a million messages hold one string
each. In-flight and expired rows come from ``work/`` (few, listed whole each time). What the
names mean (and which are leftovers) is :mod:`.layout`'s, shared with ``scan_queue``.
"""

from __future__ import annotations

import os
import time
from array import array
from bisect import bisect_left, bisect_right
from itertools import compress, islice
from operator import eq, itemgetter, methodcaller, not_

from ...columns import STATE_CODE, MessageColumns, NameTails, float_column
from ...model import Message, QueueScan
from ...states import DDMQ, EXPIRED, FOREIGN, INFLIGHT, READY, STATES, WRITING
from ...timeunits import ddmq_created
from ..fs import sorted_names as sn
from ..fs.listing import ErrorList, gc_paused, listing, listing_chunks, os_error_line
from . import layout
from .layout import (
    _QUEUE_FILES, _STRING, _WAITING_NOTE, _WORK_NOTE, SPLIT_NAMES, WORK, _bulk_parse, _held_figures, _leftovers,
    _merge_errors, _oldest_qn, _patterns, is_expired, parse_waiting, parse_work, small_parse,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: what separates a file name's id from the rest (an id is letters and digits: never holds it)
MARKER = ".ddmq"
_UID = methodcaller("group", 3)
_HAS_MARKER = methodcaller("__contains__", MARKER)
_THIRD, _FOURTH = itemgetter(2), itemgetter(3)
#: after a full listing, this many of the last ready names are compared by set at the next relisting
RECENT = 4096


def uid_of(name: str) -> str:
    return name.rpartition(MARKER)[2]


def make_message(cols: MessageColumns, i: int) -> Message:
    """Row ``i`` of ddmq columns as a Message (what :func:`.layout._messages` would have made)."""
    rel = cols.relpath(i)
    if "/" not in rel:  # a waiting name, checked when listed: <priority>.<queue number>.ddmq<id>
        prio, qn, tail = rel.split(".")
        return Message(cols.queue, DDMQ, tail[4:], READY, rel, int(prio), prio, ddmq_created(qn))
    dl, prio, qn, tail = rel[len(WORK) + 1 :].split(".")
    return Message(cols.queue, DDMQ, tail[4:], STATES[cols.states[i]], rel, int(prio), prio, ddmq_created(qn),
                   cols.deadline_at(i))


class _Acc(sn.NotFiles):
    """What the chunks of the queue directory's listing found besides the ready names."""

    def __init__(self, track_ids: bool) -> None:
        self.temp = 0
        self.foreign = 0
        self.errors = ErrorList()
        #: the ready names' ids' hashes (a full listing: to find one id in two waiting names)
        self.id_hashes: array | None = array("q") if track_ids else None
        #: names with ddmq's marker that a relisting's typed listing found not to be regular files
        self.not_files: set[str] = set()

    def take(self, names: list[str], irregular: frozenset[str] | set[str]) -> list[str]:
        """Sort one chunk's names out (as ``scan_queue`` does); returns its ready names (unsorted)."""
        if len(names) <= SPLIT_NAMES:  # a small queue: no pattern compiled (no re import for `ls`)
            groups, rest = small_parse(parse_waiting, names, irregular)
            ready = [n for n in names if n not in rest] if rest else names
            uids: list[str] = list(map(_THIRD, groups))
        else:
            waiting_re = _patterns()[0]
            matches = list(filter(None, map(waiting_re.fullmatch, names)))
            if irregular and any(map(waiting_re.fullmatch, irregular)):  # ("work" is irregular, never a match)
                matches = [m for m in matches if m.string not in irregular]
            ready = list(map(_STRING, matches))
            rest = []
            if len(matches) != len(names):
                matched = set(ready)
                rest = [n for n in names if n not in matched]
            uids = list(map(_UID, matches)) if self.id_hashes is not None else []
        if rest:
            temp, foreign = _leftovers(rest, irregular, parse_waiting, "", _WAITING_NOTE, self.errors,
                                       skip=_QUEUE_FILES)
            self.temp += temp
            self.foreign += foreign
        if self.id_hashes is not None:
            self.id_hashes.extend(map(hash, uids))
        return ready


class _Work:
    """One listing of ``work/``: the held messages' name groups (one per id, the last listed,
    as ``scan_queue`` keeps them), leftovers and error lines."""

    def __init__(self, qdir: str, name: str) -> None:
        self.groups: list[tuple[str, ...]] = []
        self.temp = self.foreign = 0
        self.errors = ErrorList()
        self.error: str | None = None
        try:
            names, irregular = listing(os.path.join(qdir, WORK))
        except OSError as err:
            self.error = os_error_line(err, f"{name}/{WORK}")
            return
        if len(names) <= SPLIT_NAMES:  # (no pattern compiled for a few names: see _Acc.take)
            groups, rest = small_parse(parse_work, names, irregular)
        else:
            work_re, work_lines = _patterns()[1::2]
            groups, rest = _bulk_parse(work_re, work_lines, names, irregular)
        if len(set(map(_FOURTH, groups))) != len(groups):  # one id twice in work/: keep one, as a dict would
            groups = list({g[3]: g for g in groups}.values())
        self.groups = groups
        self.temp, self.foreign = _leftovers(rest, irregular, parse_work, f"{WORK}/", _WORK_NOTE, self.errors)

    def ids(self) -> set[str]:
        return set(map(_FOURTH, self.groups))

    def waiting_names(self) -> set[str]:
        """The names these messages had while waiting (a consumer renames ``n`` to ``<deadline>.n``)."""
        return {f"{p}.{q}.ddmq{u}" for _d, p, q, u in self.groups}


def _not_held(ready: list[str], work: _Work, new: list[str] | None = None, hashes: array | None = None) -> list[str]:
    """``ready`` without the messages work/ also holds (consumed while listed: work/'s copy
    counts, as in ``scan_queue``). A full listing compares ids (``hashes``: the ready ids'
    hashes, to find out in C whether there is anything to compare); a relisting compares only
    the ``new`` names by id, the ones kept by the name a consumer's rename keeps."""
    if not work.groups or not ready:
        return ready
    held_ids = work.ids()
    if new is None:
        if hashes is not None and set(map(hash, held_ids)).isdisjoint(hashes):
            return ready
        gone = {n for n in ready if uid_of(n) in held_ids}
    else:
        gone = {n for n in work.waiting_names() if sn.in_sorted(ready, n)}
        gone.update(n for n in new if uid_of(n) in held_ids)
    if not gone:
        return ready
    return list(compress(ready, map(not_, map(gone.__contains__, ready))))


def _priority_blocks(ready: list[str]) -> list[tuple[str, int, int]]:
    """(priority text, start, stop) of each priority's run: in text order every name that starts
    with ``p.`` comes together ("." sorts before every digit), found by bisection."""
    out = []
    i = 0
    while i < len(ready):
        prio = ready[i].partition(".")[0]
        j = bisect_left(ready, prio + "/", i)  # "/" follows "." in ASCII
        out.append((prio, i, j))
        i = j
    return out


def _oldest(ready: list[str], blocks: list[tuple[str, int, int]]) -> str | None:
    """The oldest queue number among ready names (:func:`.layout._oldest_qn`'s rule): within a
    priority's run the numbers are in text order, so each run's first (time-based) one."""
    firsts = [ready[a].split(".")[1] for _p, a, _b in blocks]
    oldest = _oldest_qn(firsts)
    if len(min(firsts)) < 10:  # short numbers first (not times): look for a long one in each run
        longs = []
        for _p, a, b in blocks:
            for k in range(a, b):
                qn = ready[k].split(".")[1]
                if len(qn) >= 10:
                    longs.append(qn)
                    break
        oldest = min(longs) if longs else None
    return oldest


def _build(queue: str, now: float, ready: list[str], acc: _Acc, work: _Work | None, *, partial: bool,
           stamp: object, listed_at: float) -> MessageColumns:
    """Columns and counts (as ``scan_queue`` counts them) from the sorted ready names and work/."""
    scan = QueueScan(name=queue, layout=DDMQ, scanned_at=now)
    errors = ErrorList()
    _merge_errors(errors, acc.errors.lines, acc.errors.dropped)
    groups: list[tuple[str, ...]] = []
    temp, foreign = acc.temp, acc.foreign
    if work is not None:
        if work.error:
            errors.add(work.error)
        _merge_errors(errors, work.errors.lines, work.errors.dropped)
        groups = work.groups
        temp += work.temp
        foreign += work.foreign
    scan.counts[WRITING] = temp
    scan.counts[FOREIGN] = foreign
    blocks = _priority_blocks(ready)
    held_by, nearest = _held_figures(groups, now)
    layout._fill(scan, {p: b - a for p, a, b in blocks}, len(ready), _oldest(ready, blocks) if ready else None,
                 held_by, nearest)
    scan.errors.extend(errors.result())

    # held rows: in flight by deadline, then expired (as layout._messages orders them)
    held = sorted(((int(dl), f"{dl}.{p}.{q}.ddmq{u}") for dl, p, q, u in groups))
    live = [(d, n) for d, n in held if not is_expired(d, now)]
    late = [(d, n) for d, n in held if is_expired(d, now)]
    relpaths = [f"{WORK}/{n}" for _d, n in live + late]
    states = bytearray([STATE_CODE[READY]]) * len(ready)
    states += bytes([STATE_CODE[INFLIGHT]]) * len(live) + bytes([STATE_CODE[EXPIRED]]) * len(late)
    deadlines = float_column((float(d) for d, _n in live + late), len(live) + len(late))
    ids = NameTails(ready, relpaths, MARKER)
    return MessageColumns(queue, ids, relpaths, states, deadlines, scan,  # type: ignore[arg-type]
                          make=make_message, offset=len(ready), heads=ready, stamp=stamp, listed_at=listed_at,
                          partial=partial)


def _head_and_tail(qdir: str, base: list[str], acc: _Acc, bound: str | None = None) -> tuple[list[str], list[str]] | None:
    """The usual change of a live queue without a set of a million names: consumers took the
    first names, producers added names after the last one (new messages of the usual priority).
    Holds when the names with ddmq's marker listed up to ``bound`` are exactly ``base`` from the
    smallest one listed on: checked by their count and the sum of their (per-process salted)
    string hashes (cached in the strings: ~0.1 s at a million, where a kept array of running
    sums would hold 8 MB twice while two listings live). The names above ``bound`` (the last
    ready name of the listing before the last: a listing may miss a name published while it
    runs, which the next one then finds below the last name) are few and compared by set.
    Returns (the names now, the new ones among them), or None when it does not hold (a
    requeue at priority 0, a delete in the middle, a foreign name with the marker below the
    bound): then the caller looks each name up (:func:`..fs.sorted_names.relist_by_lookup`)."""
    if not base:
        return None
    bound = base[-1] if bound is None or bound > base[-1] else bound
    lo: str | None = None  # the smallest name listed
    n_below = listed = 0
    above: list[str] = []
    rest: list[str] = []
    # the listing read a chunk at a time and dropped as it goes: only what is new stays. Typed
    # (from the entry, no stat): a kept name may now be a FIFO, a link or a directory
    for part, irregular in listing_chunks(qdir, True, sn.CHUNK):
        if irregular:
            acc.not_files.update(filter(_HAS_MARKER, irregular))
        sn.pause()  # each step a few ms of C, so the screen gets its turns
        flags = list(map(_HAS_MARKER, part))
        marked = part if all(flags) else list(compress(part, flags))
        if len(marked) != len(part):
            rest.extend(compress(part, map(not_, flags)))
        if not marked:
            continue
        first = min(marked)
        lo = first if lo is None or first < lo else lo
        high = list(filter(bound.__lt__, marked))
        n_below += len(marked) - len(high)
        listed += sn.hash_sum(marked) - sn.hash_sum(high)
        above += high
    j = bisect_right(base, bound)
    k = j if lo is None else min(bisect_left(base, lo), j)
    if n_below != j - k:
        return None
    kept_sum = 0
    for i in range(k, j, sn.CHUNK):
        kept_sum += sn.hash_sum(base[i : min(j, i + sn.CHUNK)])
        sn.pause()
    if listed != kept_sum:
        return None
    seen = set(above)  # (a name listed twice: renamed back and forth meanwhile)
    known = [n for n in base[j:] if n in seen]  # the last listing's own string objects
    seen.difference_update(known)
    names = rest + sorted(seen)
    new = acc.take(names, sn.lstat_irregular(qdir, names))
    kept = acc.drop_not_files(base[k:j])
    kept += sorted(acc.drop_not_files(known) + new)
    return kept, new


@gc_paused
def list_columns(root: str, name: str, now: float | None = None, *, previous: MessageColumns | None = None,
                 progress: Callable[[MessageColumns], None] | None = None, stamp: object = None) -> MessageColumns:
    """Columns of one ddmq queue (queue directory, then work/, as ``scan_queue`` lists them).
    With ``previous`` (this queue's last columns) the ready names are updated by difference;
    ``progress`` gets partial columns while a first listing runs."""
    now = time.time() if now is None else now
    started = time.monotonic()
    qdir = os.path.join(root, name)
    base = None
    if previous is not None and previous.heads is not None and previous.objects is None and not previous.partial:
        base = previous.heads
    acc = _Acc(track_ids=base is None)
    new: list[str] | None = None
    try:
        if base is None:
            show = None
            if progress is not None:
                early = _Work(qdir, name)  # for the partial rows only; listed again after the queue

                def show(merged: list[str]) -> None:
                    rows = _not_held(merged, early, hashes=acc.id_hashes)
                    progress(_build(name, now, rows, acc, early, partial=True, stamp=None, listed_at=started))

            ready = sn.sorted_listing(qdir, acc.take, show)
            # one id in two waiting names (a copied file; or one name listed twice, renamed back
            # and forth meanwhile): the exact rules, as the collected scan has them
            if _twice(acc.id_hashes):
                return _exact(root, name, now, stamp, started)
        else:
            quick = _head_and_tail(qdir, base, acc, previous.relist_hint)
            if quick is not None:
                ready, new = quick
            else:  # names below the last came or went: each listed name looked up
                ready, others, _listed = sn.relist_by_lookup(qdir, base, _HAS_MARKER)
                ready = acc.drop_not_files(ready)  # (what the typed listing just before found)
                others = sorted(set(others))  # (a name listed twice: renamed back and forth meanwhile)
                new = acc.take(others, sn.lstat_irregular(qdir, others))
                new.sort()
                if new and ready and new[0] < ready[-1]:
                    ready += new
                    ready.sort()  # two sorted runs: one linear merge
                else:
                    ready += new
            if len(set(map(uid_of, new))) != len(new):
                return _exact(root, name, now, stamp, started)  # a new id twice among the waiting names
    except OSError as err:
        scan = QueueScan(name=name, layout=DDMQ, scanned_at=now)
        scan.errors.append(os_error_line(err, name))
        return MessageColumns.from_messages(name, [], scan)
    work = _Work(qdir, name)
    kept = _not_held(ready, work, new, acc.id_hashes)
    cols = _build(name, now, kept, acc, work, partial=False, stamp=stamp, listed_at=started)
    # the names above the hint are compared by set next time: after a relisting, those the
    # listing before it added; after a full listing (which may have missed any name published
    # while it ran) its last RECENT names
    if base:
        cols.relist_hint = base[-1]
    elif kept:
        cols.relist_hint = kept[max(0, len(kept) - RECENT)]
    return cols


def _twice(hashes: array | None) -> bool:
    """Whether a hash is there twice: each quarter of the hash range sorted as ints and
    neighbours compared, in C (a set of a million ints would take 64 MB, a sorted list of
    them 40 MB; a quarter at a time, 10 MB)."""
    if not hashes:
        return False
    for lo, hi in _QUARTERS:
        ordered = sorted(filter(hi.__gt__, filter(lo.__le__, hashes)))
        if any(map(eq, ordered, islice(ordered, 1, None))):
            return True
        del ordered
    return False


_QUARTERS = [(-(1 << 63) + q * (1 << 62), -(1 << 63) + (q + 1) * (1 << 62)) for q in range(4)]


def _exact(root: str, name: str, now: float, stamp: object, started: float) -> MessageColumns:
    """The columns of a collected scan (Message objects kept): the exact rules for what the
    listing by names cannot settle cheaply (one id in two waiting names)."""
    scan = layout.scan_queue(root, name, now, collect=True)
    msgs = scan.messages or []
    scan.messages = None
    cols = MessageColumns.from_messages(name, msgs, scan, stamp=stamp, listed_at=started)
    return cols
