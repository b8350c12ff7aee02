"""A queue's ready names as one sorted list of str, for the console's columns (both file layouts).

The listing is read in chunks, so the first rows can be shown while the rest is read, and no
single C call holds the interpreter long on a million names: sorts are of one chunk, then
merges of two sorted runs (timsort does each in one linear pass), and the thread that draws
the screen gets its turn between two steps. A relisting by difference starts from the last
sorted list: names still there keep their order and their string objects. What the names
mean (which are ready, which are leftovers) is the layout's: it passes a ``take`` function.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from bisect import bisect_left, bisect_right
from itertools import accumulate, compress, repeat
from operator import and_, eq, not_

from .listing import listing_chunks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from array import array
    from collections.abc import Callable, Iterator
    from typing import Any

    #: one chunk's names and the irregular ones among them -> the chunk's ready names (unsorted)
    Take = Callable[[list[str], "frozenset[str] | set[str]"], list[str]]

#: names read per chunk of the listing (each chunk's work is a few ms of C)
CHUNK = 65_536
#: the first chunk is smaller: its rows are shown at once
FIRST_CHUNK = 16_384
#: a partial listing is shown after the first chunk, then at most this often (s)
PARTIAL_EVERY_S = 1.0
#: after handing over partial rows the listing waits this long (s), so the screen can paint them
#: (longer after the first ones: the screen is being mounted meanwhile)
PARTIAL_PAUSE_S = 0.05
FIRST_PAUSE_S = 0.25
#: the listing sleeps this long (s) between two bulk steps: a real sleep, so the thread that
#: draws the screen takes the GIL (``sleep(0)`` may take it straight back)
YIELD_S = 0.001
#: names' hashes are summed in 40 bits: sums over 8M names stay within an int64
HASH_MASK = (1 << 40) - 1


def pause() -> None:
    """Let the drawing thread run between two bulk steps; nothing when no other thread runs (a
    one-shot ``ls``: these sleeps were a tenth of a small queue's listing, and 60 ms at a million)."""
    threading = sys.modules.get("threading")  # (not imported: no thread of Python's to wait for)
    if threading is not None and threading.active_count() > 1:
        time.sleep(YIELD_S)


def chunks(items: list[str], size: int | None = None) -> Iterator[list[str]]:
    size = size or CHUNK
    if len(items) <= size:
        yield items
        return
    for i in range(0, len(items), size):
        yield items[i : i + size]
        pause()


def merge2(a: list[str], b: list[str], step: int | None = None) -> list[str]:
    """Two sorted lists into one, a piece at a time: each piece (up to ``2 * step`` names, all
    below what is left of either list, found by bisection) is sorted on its own, so no single
    C call holds the interpreter for the whole merge."""
    step = step or CHUNK
    out: list[str] = []
    i = j = 0
    while i < len(a) and j < len(b):
        ni = min(len(a), i + step)
        nj = bisect_right(b, a[ni - 1], j)
        if nj - j > step:  # many of b's come first: take a step of b instead
            nj = j + step
            ni = bisect_right(a, b[nj - 1], i)
        piece = a[i:ni] + b[j:nj]
        piece.sort()  # two sorted runs: one linear merge
        out += piece
        i, j = ni, nj
        pause()
    out += a[i:]
    out += b[j:]
    return out


def merge_runs(runs: list[list[str]]) -> list[str]:
    """Sorted runs into one sorted list, two at a time."""
    while len(runs) > 1:
        merged = [merge2(runs[i], runs[i + 1]) for i in range(0, len(runs) - 1, 2)]
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return runs[0] if runs else []


def dedupe_sorted(ready: list[str]) -> list[str]:
    """A name listed twice (renamed back and forth during the listing) counts once."""
    step = CHUNK
    twice = False
    for i in range(0, len(ready) - 1, step):
        if any(map(eq, ready[i : i + step], ready[i + 1 : i + step + 1])):
            twice = True
            break
        pause()
    if twice:
        out = [ready[0]]
        out.extend(b for a, b in zip(ready, ready[1:]) if a != b)
        return out
    return ready


def in_sorted(ready: list[str], name: str) -> bool:
    i = bisect_left(ready, name)
    return i < len(ready) and ready[i] == name


def lstat_irregular(qdir: str, names: list[str]) -> set[str]:
    """Those of ``names`` that are not regular files now (links are not followed)."""
    out: set[str] = set()
    for n in names:
        try:
            if not stat.S_ISREG(os.lstat(os.path.join(qdir, n)).st_mode):
                out.add(n)
        except OSError:
            pass  # gone since the listing: counted as it was listed
    return out


def running_sums(names: list[str], start: int = 0) -> array:
    """``start`` and then the running sums of the names' masked hashes (in chunks): the sum of
    any run of the list is two lookups, which is how a relisting checks the kept ones."""
    from array import array  # here: a small queue's `ls` never needs it (see qconsole.columns)

    out = array("q", [start])
    for part in chunks(names):
        out.extend(array("q", accumulate(map(and_, map(hash, part), repeat(HASH_MASK)), initial=out[-1]))[1:])
    return out


def hash_sum(names: list[str]) -> int:
    return sum(map(and_, map(hash, names), repeat(HASH_MASK)))


def sorted_listing(qdir: str, take: Take, partial: Callable[[list[str]], None] | None = None) -> list[str]:
    """The ready names of ``qdir`` sorted in text order, from one typed listing read in chunks
    (``take`` sorts each chunk's names out and keeps what else it found). ``partial`` gets the
    sorted ready names so far, after the first chunk and then every PARTIAL_EVERY_S (the
    caller copies them if it changes them), and the listing waits a moment after each so the
    screen can paint them."""
    runs: list[list[str]] = []
    shown_at = None
    for names, irregular in listing_chunks(qdir, True, CHUNK, FIRST_CHUNK):
        ready = take(names, irregular)
        del names
        ready.sort()
        runs.append(ready)
        pause()
        if partial is not None and (shown_at is None or time.monotonic() - shown_at > PARTIAL_EVERY_S):
            shown_at = time.monotonic()
            merged = merge_runs(runs)
            runs = [merged]
            partial(merged)  # (not changed afterwards: later merges make new lists)
            time.sleep(PARTIAL_PAUSE_S if len(merged) > FIRST_CHUNK else FIRST_PAUSE_S)  # the screen paints
    return merge_runs(runs)


def relist_by_lookup(qdir: str, base: list[str], marked: Callable[[str], bool]) -> tuple[list[str], list[str], int]:
    """(a new list of the names of ``base`` still listed, in order and as the same string
    objects; the other listed names, unsorted; the number of names listed), from one plain
    listing read in chunks. Each ``marked`` name (the layout's cheap test for a possible
    message name) is looked up in a set of ``base``'s own strings (a table of references: 32 MB
    at a million names, where a set of the listing would hold its million new strings too)."""
    gone = set(base)  # what is left in it at the end was not listed
    others: list[str] = []
    listed = 0
    for part, _irregular in listing_chunks(qdir, False, CHUNK):
        listed += len(part)
        pause()
        flags = list(map(marked, part))
        names = part if all(flags) else list(compress(part, flags))
        if len(names) != len(part):
            others.extend(compress(part, map(not_, flags)))
        there = list(map(gone.__contains__, names))
        if all(there):
            gone.difference_update(names)
            continue
        gone.difference_update(compress(names, there))
        # new names, or one listed twice (renamed back and forth meanwhile): only new ones count
        others.extend(n for n in compress(names, map(not_, there)) if not in_sorted(base, n))
    if not gone:
        return base[:], others, listed
    return list(compress(base, map(not_, map(gone.__contains__, base)))), others, listed


def relist_by_sets(qdir: str, base: list[str], known: set[str] | frozenset[str], take: Take) -> tuple[list[str], int]:
    """(the ready names of ``qdir`` now, in text order; the number of names listed), from
    ``base`` (the sorted ready names of the last listing): names still there keep their order
    and their string objects; only the names that were not ready before go through ``take``
    and are merged in. One plain listing (no entry types: an entry that is not a regular file
    can only be new, and new names other than ``known`` ones are checked with lstat)."""
    raw = os.listdir(qdir)  # the GIL is released for each entry read
    fresh: set[str] = set()
    for part in chunks(raw):
        fresh.update(part)
    listed = len(raw)
    del raw
    ready: list[str] = []
    for part in chunks(base):
        ready.extend(compress(part, map(fresh.__contains__, part)))
    for part in chunks(base):
        fresh.difference_update(part)
    names = list(fresh)  # what is left: new names, and the layout's other ones
    del fresh
    irregular = lstat_irregular(qdir, [n for n in names if n not in known])
    added = take(names, irregular)
    if added:
        added.sort()
        if ready and added[0] < ready[-1]:
            ready += added
            ready.sort()  # two sorted runs: one linear merge
        else:
            ready += added
    return ready, listed


class NotFiles:
    """What a relisting's typed listing found not to be regular files among names a listing
    before took as messages (a FIFO, a link or a directory put in a message's place). Mixed
    into the columns' accumulators, which hold ``foreign`` and ``errors``."""

    not_files: set[str]
    foreign: int
    errors: Any

    def drop_not_files(self, ready: list[str]) -> list[str]:
        """``ready`` without the names :attr:`not_files` holds, each counted foreign and said."""
        gone = self.not_files.intersection(ready) if self.not_files else ()
        if not gone:
            return ready
        for fname in sorted(gone):
            self.foreign += 1
            self.errors.add(f"{fname}: named like a message but not a regular file")
        return list(compress(ready, map(not_, map(gone.__contains__, ready))))
