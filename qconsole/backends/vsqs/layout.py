"""VSQS: every sub-directory of the root is a queue; state is in the file name.

``<id>`` ready, ``<id>.new`` being written, ``<id>.<deadline>`` in flight (expired once the
deadline has passed). vsqs 0.3 writes µs for both numbers; its README says ms. The client
``int()``s both halves of ``name.split('.', 1)`` and ignores names that fail: foreign here.
It then renames ``str(int(...))``, so a number with a leading zero (``00012``, ``12.0005``)
is listed by it and never delivered or requeued: foreign here too (:func:`canonical`).
"""

from __future__ import annotations

import os
from bisect import bisect_right
import time
from itertools import compress, filterfalse, repeat
from operator import attrgetter, contains, itemgetter, methodcaller, not_, truediv

from ...model import Message, ListingColumns, QueueScan
from ...states import EXPIRED, FOREIGN, INFLIGHT, READY, VSQS, WRITING
from ...timeunits import vsqs_divisor
from ..fs import listing as _listing
from ..fs.safety import MAX_NUMBER_DIGITS as MAX_DIGITS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    import re
    from collections.abc import Collection, Iterable
from ..fs.listing import (
    NO_IRREGULAR, QC_TEMP_PREFIX, STREAM_BYTES, ErrorList, all_ascii_digits, gc_paused, is_ascii_digits,
    list_entries, listing, listing_chunks, names_only, os_error_line,
)


def canonical(digits: str) -> bool:
    """ASCII digits as ``str(int(...))`` writes them back: no leading zero (but ``0``) and not
    absurdly long. The client renames by that string, so no other spelling is ever acted on."""
    return is_ascii_digits(digits) and len(digits) <= MAX_DIGITS and (digits[0] != "0" or len(digits) == 1)


def parse_name(name: str) -> tuple[str, str, str | None] | None:
    """``(state_kind, id, deadline_digits)`` for a VSQS name, None for a foreign one.

    state_kind is ``ready``, ``held`` (in flight or expired, decided against a clock) or ``writing``.
    """
    head, dot, tail = name.partition(".")
    if not canonical(head):  # a 25-digit id is nobody's clock, 0012 nobody's name: foreign
        return None
    if not dot:
        return READY, head, None
    if tail == "new":
        return WRITING, head, None
    if canonical(tail):
        return "held", head, tail
    return None


def zero_led(ids: list[str]) -> list[str]:
    """The ids of ``ids`` (ASCII digits) with a leading zero (not canonical): one C-level min
    when there are none, as digit strings with a leading zero sort before all others."""
    if not ids or min(ids)[0] != "0":
        return []
    return [m for m in ids if m[0] == "0" and len(m) > 1]


def is_expired(deadline_digits: str, now: float) -> bool:
    """vsqs requeues when deadline <= now, both whole numbers in the clock's unit (its micros()
    against the name's): each deadline judged in its own unit, whatever else is listed, so the
    count, the lists and a requeue by state agree to the unit."""
    return int(deadline_digits) <= int(now * vsqs_divisor(deadline_digits))


def list_queue_names(root: str) -> tuple[list[str], list[str]]:
    """Every non-dot sub-directory is a queue; symlinked ones are not followed."""
    names: list[str] = []
    errors: list[str] = []
    with os.scandir(root) as it:
        for entry in it:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                errors.append(f"{entry.name}: symlink not followed")
                continue
            if entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    names.sort()
    return names, errors


def looks_like_queue(path: str, probe: int = 50) -> bool:
    """An empty directory, or one whose first entries include a VSQS name."""
    seen = 0
    for name, _regular in list_entries(path):
        if parse_name(name) is not None:
            return True
        seen += 1
        if seen >= probe:
            break
    return seen == 0


_HELD_PATTERN = r"(0|[1-9][0-9]{0,%d})\.(0|[1-9][0-9]{0,%d})" % (MAX_DIGITS - 1, MAX_DIGITS - 1)  # canonical
_HELD: list[re.Pattern[str]] = []


def _held_re() -> re.Pattern[str]:
    """The held-name pattern, compiled on first use: a root of plain small queues is counted
    without it, and importing re (with enum) is ~4 ms of a start."""
    if not _HELD:
        import re

        _HELD.append(re.compile(_HELD_PATTERN))
    return _HELD[0]


#: up to this many names are matched by split (no re import: ``ls`` of a small queue starts
#: ~3 ms sooner); more, by the pattern, quicker per name
_SPLIT_HELD = 64


def held_split(names: list[str], irregular: frozenset[str] | set[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """``(id, deadline)`` of every name of ``names`` that is ``<id>.<deadline>`` (canonical
    numbers: _HELD_PATTERN, matched whole) and not ``irregular``, and
    those names, in listing order (a name listed twice is there twice)."""
    if len(names) > _SPLIT_HELD:
        regular = list(filterfalse(irregular.__contains__, names)) if irregular else names
        bulk = _held_bulk(regular)
        if bulk is not None:  # every name is <digits>.<digits> (the listing of a requeue pass)
            return bulk, regular
        full = _held_re().fullmatch
        matches = list(filter(None, map(full, names)))
        if irregular and any(map(full, irregular)):
            matches = [m for m in matches if m.string not in irregular]
        return list(map(_GROUPS, matches)), list(map(_STRING, matches))
    pairs: list[tuple[str, str]] = []
    matched: list[str] = []
    for name in names:
        mid, dot, dl = name.partition(".")
        if dot and canonical(mid) and canonical(dl) and name not in irregular:
            pairs.append((mid, dl))
            matched.append(name)
    return pairs, matched
_GROUPS = methodcaller("groups")
_STRING = attrgetter("string")
_HEAD, _TAIL = itemgetter(0), itemgetter(2)


def _held_bulk(names: list[str]) -> list[tuple[str, str]] | None:
    """``(id, deadline)`` of every name when all are ``<id>.<deadline>`` as _HELD_PATTERN
    matches them whole (one dot, 1 to MAX_DIGITS ASCII digits each side), else None."""
    cols = _held_parts(names)
    return None if cols is None else list(zip(*cols))


def _held_parts(names: list[str]) -> tuple[list[str], list[str]] | None:
    """(ids, deadlines) of :func:`_held_bulk`, as two columns. Checked column-wise in C: a
    third of the time of a match object per name. None also when a number has a leading zero."""
    if not names:
        return [], []
    parts = list(map(str.partition, names, repeat(".")))
    ids, dls = list(map(_HEAD, parts)), list(map(_TAIL, parts))
    for col in (ids, dls):  # (a name without a dot has an empty deadline; one with two, a dot in it)
        lens = list(map(len, col))
        if min(lens) < 1 or max(lens) > MAX_DIGITS:
            return None
    if not all_ascii_digits("".join(ids) + "".join(dls)) or zero_led(ids) or zero_led(dls):
        return None
    return ids, dls


def _now_digits(dls: list[str], now: float) -> str | None:
    """``now`` as digits in the unit of ``dls`` when they all have one width and it is now's
    (the usual case): same-width digit strings compare like numbers, one C-level compare per
    deadline instead of an int() each. None otherwise."""
    if not dls or len(set(map(len, dls))) != 1:
        return None
    now_digits = str(int(now * vsqs_divisor(dls[0])))
    return now_digits if len(now_digits) == len(dls[0]) else None


def _late(dls: list[str], now: float) -> list[bool]:
    """:func:`is_expired` of each deadline (one compare of digit strings each when they share
    now's width in their unit: the same answer)."""
    now_digits = _now_digits(dls, now)
    if now_digits is not None:
        return list(map(now_digits.__ge__, dls))
    return list(map(is_expired, dls, repeat(now)))


def split_late(ordered: list[str], held: dict[str, str], now: float) -> tuple[list[str], list[str]]:
    """(in flight, expired) of held ids (``held``: id -> deadline digits) listed in deadline
    order, each part in that order (:func:`is_expired`). The expired ones nearly always lead
    (one unit: the seconds sort as the whole numbers do): then two slices."""
    late = _late(list(map(held.__getitem__, ordered)), now)
    n_late = late.count(True)
    if not any(late[n_late:]):
        return ordered[n_late:], ordered[:n_late]
    return list(compress(ordered, map(not_, late))), list(compress(ordered, late))


def _held_counts(dls: list[str], now: float) -> tuple[int, int, float | None]:
    """(in flight, expired, nearest future deadline in s) of held messages' deadline digits.

    Same-width digit strings compare like numbers, so with one deadline width (the usual
    case) this is a few C-level passes instead of an int() per message.
    """
    if not dls:
        return 0, 0, None
    now_digits = _now_digits(dls, now)
    if now_digits is not None:  # (is_expired: deadline <= now in the clock's unit)
        future = list(filter(now_digits.__lt__, dls))
        nearest = int(min(future)) / vsqs_divisor(dls[0]) if future else None
        return len(future), len(dls) - len(future), nearest
    inflight = expired = 0
    nearest_s: float | None = None
    for dl in dls:
        if is_expired(dl, now):
            expired += 1
        else:
            inflight += 1
            secs = int(dl) / vsqs_divisor(dl)
            if nearest_s is None or secs < nearest_s:
                nearest_s = secs
    return inflight, expired, nearest_s


def _oldest(ready: list[str], widths: set[int]) -> float | None:
    """Creation time of the oldest ready id; same-width digit strings compare like numbers."""
    if not ready:
        return None
    firsts = [min(ready)] if len(widths) == 1 else [min(m for m in ready if len(m) == w) for w in widths]
    return min(int(m) / vsqs_divisor(m) for m in firsts)


def _split_ready(names: list[str]) -> tuple[list[str], list[str]] | None:
    """(the names without a dot, the others) when every dotless name is ASCII digits (the
    usual listing: ready ids, and held/writing names that all hold a dot), else None.
    ``in`` (memchr) per name and one bytes.isdigit over them all cost a third of the
    per-name str.isdigit, which consults the Unicode tables per character."""
    dotted = list(map(contains, names, repeat(".")))
    ready = list(compress(names, map(not_, dotted)))
    if not all_ascii_digits("".join(ready)):
        return None
    return ready, (list(compress(names, dotted)) if len(ready) != len(names) else [])


def canonical_ready(ready: list[str], rest: list[str]) -> tuple[list[str], list[str]]:
    """(ready, rest) of :func:`_ascii_digits` with the ready ids that are not :func:`canonical`
    (absurdly long, a leading zero) moved to ``rest``, where :func:`sort_rest` words them."""
    if not ready or (max(map(len, ready)) <= MAX_DIGITS and not zero_led(ready)):
        return ready, rest  # (the usual listing: two C-level passes)
    odd = [m for m in ready if len(m) > MAX_DIGITS or (m[0] == "0" and len(m) > 1)]
    drop = set(odd)
    return [m for m in ready if m not in drop], rest + odd


def _ascii_digits(names: list[str]) -> tuple[list[str], list[str]]:
    """(all-ASCII-digit names, the others), in C; the ready ids are most of a queue."""
    split = _split_ready(names)
    if split is not None:
        return split
    ready = list(filter(str.isdigit, names))
    if ready and not "".join(ready).isascii():  # int() takes other digits; no writer makes them
        ready = [m for m in ready if m.isascii()]
        taken = set(ready)
        return ready, [n for n in names if n not in taken]
    if len(ready) == len(names):
        return ready, []
    return ready, list(filterfalse(str.isdigit, names))


def sort_rest(
    rest: list[str], irregular: frozenset[str] | set[str], matched: set[str] | frozenset[str], errors: ErrorList,
) -> tuple[list[tuple[str, str]], list[str], int, int]:
    """(held ``(id, deadline)`` pairs, writing ids, qconsole temp files, foreign entries) of the
    names of a listing that are neither ready ids nor in ``matched`` (held names already
    matched in bulk), with an error line for the absurd and the irregular ones. The one place
    for these rules: the exact count, the streamed count and the console's columns use it."""
    held: list[tuple[str, str]] = []
    writing: list[str] = []
    temp = foreign = 0
    for fname in rest:
        if fname in matched:
            continue
        if fname.startswith(QC_TEMP_PREFIX):
            temp += 1
            continue
        parsed = parse_name(fname)
        if parsed is None:
            foreign += 1
            head, dot, tail = fname.partition(".")
            if is_ascii_digits(head) and (len(head) > MAX_DIGITS or (is_ascii_digits(tail) and len(tail) > MAX_DIGITS)):
                errors.add(f"{fname[:60]}{'...' if len(fname) > 60 else ''}: absurd id or deadline "
                           f"(more than {MAX_DIGITS} digits); counted as foreign")
            elif is_ascii_digits(head) and (not dot or tail == "new" or is_ascii_digits(tail)):
                errors.add(f"{fname[:60]}{'...' if len(fname) > 60 else ''}: a leading zero, so vsqs never "
                           "delivers or requeues it; counted as foreign")
            continue
        if fname in irregular:
            foreign += 1
            errors.add(f"{fname}: named like a message but not a regular file")
            continue
        kind, mid, deadline = parsed
        if kind == WRITING:
            writing.append(mid)
        else:
            held.append((mid, deadline))  # type: ignore[arg-type]
    return held, writing, temp, foreign


def listing_dirs(root: str, name: str) -> list[str]:
    """The directories one queue's scan lists."""
    return [os.path.join(root, name)]


@gc_paused
def scan_queue(
    root: str, name: str, now: float | None = None, *, collect: bool | str = False, check_types: bool = False,
    beside: bool | None = False,
) -> QueueScan:
    """Count one VSQS queue from a single directory listing (no file is opened or stat'ed).

    Counting goes by names alone (see :func:`names_only`); ``check_types`` -- implied by
    ``collect`` -- also reads each entry's type from the listing and counts FIFOs, symlinks
    and the like that are named like messages as ``foreign``. A big queue is counted from
    its listing in chunks (:func:`_scan_streamed`), parsed in a forked process when
    ``beside`` (single-threaded callers only). ``collect="columns"`` (the report's listing)
    fills ``messages`` with :class:`~qconsole.model.ListingColumns`: the same messages, the
    ready ones in no particular order (no sort, no object per message); ``collect="held"``
    with the in-flight and expired messages only.
    """
    now = time.time() if now is None else now
    scan = QueueScan(name=name, layout=VSQS, scanned_at=now)
    errors = ErrorList()
    qdir = os.path.join(root, name)
    try:
        if collect:
            names, irregular = listing(qdir)
        else:
            st = os.stat(qdir)  # one stat: the size picks streaming, the link count catches sub-directories
            if st.st_size >= STREAM_BYTES and _scan_streamed(qdir, scan, now, check_types or st.st_nlink != 2, beside):
                return scan
            names, irregular = listing(qdir) if check_types else names_only(qdir, nlink=st.st_nlink)
    except OSError as err:
        scan.errors.append(os_error_line(err, name))
        return scan
    ready, rest = _ascii_digits(names)
    ready, rest = canonical_ready(ready, rest)
    # in flight / expired: "<id>.<deadline>", also matched in bulk; then the few left over
    held_pairs, held_names = held_split(rest, irregular)
    held: dict[str, str] = dict(held_pairs)
    writing: set[str] = set()
    temp = 0
    foreign = 0
    if len(held_names) != len(rest):
        more_held, more_writing, temp, foreign = sort_rest(rest, irregular, set(held_names), errors)
        held.update(more_held)
        writing.update(more_writing)
    if irregular and not irregular.isdisjoint(ready):
        for fname in sorted(irregular.intersection(ready)):
            foreign += 1
            errors.add(f"{fname}: named like a message but not a regular file")
        ready = [m for m in ready if m not in irregular]

    # A listing taken during renames can show one message under two names, or one name
    # twice (consumed and requeued while the listing ran): count it once. A consume
    # (ready -> held) is the common rename, so the held name wins; a finished publish
    # (.new -> id) makes the ready name win over writing.
    ready_set = set(ready)
    if len(ready_set) != len(ready):
        ready = list(ready_set)
    if held and not ready_set.isdisjoint(held):
        ready_set.difference_update(held)
        ready = list(ready_set)
    if writing:
        writing.difference_update(ready_set)
        writing.difference_update(held.keys())

    counts = scan.counts
    counts[READY] = len(ready)
    counts[WRITING] = len(writing) + temp
    counts[FOREIGN] = foreign
    inflight, expired, next_deadline = _held_counts(list(held.values()), now)
    counts[INFLIGHT] = inflight
    counts[EXPIRED] = expired
    scan.next_deadline = next_deadline

    widths = set(map(len, ready)) if ready else set(map(len, held.keys() or writing))
    scan.oldest_ready_created = _oldest(ready, widths)
    _set_unit(scan, widths)
    scan.errors.extend(errors.result())

    if collect:
        held_seconds = dict(zip(held, _created(list(held.values()))))  # int(dl) / its unit
        if collect == "columns":
            scan.messages = _columns(ready, held, held_seconds, writing, now)  # type: ignore[assignment]
        elif collect == "held":  # the held ones only, in the same order
            scan.messages = _messages(name, set(), held, held_seconds, set(), now)
        else:
            scan.messages = _messages(name, ready_set, held, held_seconds, writing, now)
    return scan


def _columns(
    ready: list[str], held: dict[str, str], held_seconds: dict[str, float], writing: set[str], now: float
) -> ListingColumns:
    """What :func:`_messages` builds, as columns: the ready ids (most of a queue) in listing
    order with per-value work in C, then the few held and writing ones."""
    n = len(ready)
    cols = ListingColumns(list(ready), [READY] * n, list(ready), [None] * n, _created(ready), [None] * n)
    h = _held_columns(held, held_seconds, now)
    for field in ListingColumns.__slots__:
        getattr(cols, field).extend(getattr(h, field))
    for mid in writing:
        cols.id.append(mid)
        cols.state.append(WRITING)
        cols.relpath.append(f"{mid}.new")
        cols.priority.append(None)
        cols.created_at.append(int(mid) / vsqs_divisor(mid))
        cols.deadline.append(None)
    return cols


def _set_unit(scan: QueueScan, widths: set[int]) -> None:
    """The id unit seen on disk, with a warning when ms and µs ids are mixed."""
    if widths:
        scan.id_unit = vsqs_divisor("9" * max(widths))
        if len(widths) > 1 and len({vsqs_divisor("9" * w) for w in widths}) > 1:
            scan.warnings.append(
                "mixed id units (ms and µs): numeric order delivers the shorter ids first"
            )


#: a queue directory up to this size (some 1,500 VSQS names on ext4) is tried the short way
#: first: its fixed costs are what count there, and listing it again the exact way (when it
#: holds anything unusual) costs little
SMALL_BYTES = 65_536


@gc_paused
def count_many(root: str, names: list[str], now: float, *, check_types: bool = False,
               beside: bool | None = False) -> list[QueueScan]:
    """:func:`scan_queue` for every queue of ``names``, the usual small ones the short way.

    A root of thousands of small queues spends most of a per-queue scan on fixed Python
    work, not on its few names. A small queue whose listing holds only distinct ready and
    held ids of one width is counted by :func:`_count_plain` (a handful of C-level passes);
    any other (a ``.new``, a temp file, a foreign name, a name listed twice, mixed units, a
    sub-directory, a bigger listing, an error) takes :func:`scan_queue`, so every queue gets
    exactly what scan_queue gives (a property test compares them on random roots).
    """
    if check_types:
        return [scan_queue(root, n, now, check_types=True, beside=beside) for n in names]
    out: list[QueueScan] = []
    stat, listdir, join = os.stat, os.listdir, os.path.join
    c_plain = _listing.plain_c
    for name in names:
        qdir = join(root, name)
        scan = None
        if c_plain is not None:  # the same check and figures in C, any size: no string per message
            got = c_plain.vsqs_plain(qdir, _listing.PLAIN_C_BYTES, MAX_DIGITS, now)
            scan = got and _plain_scan(name, got, now)
        else:
            try:
                st = stat(qdir)
                if st.st_nlink == 2 and st.st_size <= SMALL_BYTES:
                    scan = _count_plain(name, listdir(qdir), now)
            except OSError:
                pass
        out.append(scan or scan_queue(root, name, now, beside=beside))  # the exact way says what is unusual
    return out


def _plain_scan(name: str, got: tuple[int, str | None, int, int, int, float | None, int], now: float) -> QueueScan:
    """A QueueScan from what _plain.vsqs_plain read: (ready, least ready id, writing, in flight,
    expired, nearest deadline in s, id width), as :func:`_count_plain` fills it."""
    n_ready, least, n_new, n_inflight, n_expired, nearest, width = got
    scan = QueueScan(name, VSQS, now)
    if not width:  # an empty queue
        return scan
    counts = scan.counts
    counts[READY] = n_ready
    counts[WRITING] = n_new
    counts[INFLIGHT] = n_inflight
    counts[EXPIRED] = n_expired
    unit = scan.id_unit = vsqs_divisor(least)  # (a plain listing has a ready id)
    scan.oldest_ready_created = int(least) / unit
    scan.next_deadline = nearest
    return scan


def _count_plain(name: str, names: list[str], now: float) -> QueueScan | None:
    """Counts of a listing of distinct ready, held (``id.deadline``) and writing (``id.new``)
    ids all of one width; None for any other (the exact path says what is unusual).

    A small queue's fixed costs are what count in a root of thousands: the names are sorted
    by their lengths (a ready id is ``w`` long, a writing name ``w + 4``, a held one
    ``2w + 1``) and checked by slices and joins, C-level passes only, no regex or Python loop.
    """
    scan = QueueScan(name, VSQS, now)
    if not names:
        return scan
    names = sorted(names, key=len)
    w, top = len(names[0]), len(names[-1])
    if w > MAX_DIGITS:
        return None
    if top == w:  # ready ids only
        ready, new, held = names, [], []
    else:
        lens = list(map(len, names))
        n_ready, n_new = bisect_right(lens, w), bisect_right(lens, w + 4)
        if top not in (w + 4, 2 * w + 1) or lens[n_new - 1] not in (w, w + 4):
            return None  # another length: a temp file, a foreign name, mixed widths
        ready, new, held = names[:n_ready], names[n_ready:n_new], names[n_new:]
    text = "".join(ready)
    if not all_ascii_digits(text) or (w > 1 and "0" in text[::w]):  # (a leading zero: not canonical)
        return None
    ids = set(ready)
    if held:
        text = "".join(held)
        # all of one length: the dots sit every 2w + 1 characters from w on, and the rest are digits
        if text[w::2 * w + 1] != "." * len(held) or not all_ascii_digits(text.replace(".", "")):
            return None
        if w > 1 and ("0" in text[::2 * w + 1] or "0" in text[w + 1::2 * w + 1]):
            return None
        held_ids = list(map(itemgetter(slice(None, w)), held))
        ids.update(held_ids)
    if new:
        new_ids = list(map(itemgetter(slice(None, w)), new))
        text = "".join(new_ids)
        if "".join(map(itemgetter(slice(w, None)), new)) != ".new" * len(new) or \
                not all_ascii_digits(text) or (w > 1 and "0" in text[::w]):
            return None
        ids.update(new_ids)
    if len(ids) != len(names):
        return None  # an id under two names (a consume or a publish meanwhile), or a name listed twice
    counts = scan.counts
    counts[READY] = len(ready)
    counts[WRITING] = len(new)
    unit = vsqs_divisor(names[0])  # every id is w digits long
    if ready:
        scan.oldest_ready_created = int(min(ready)) / unit
    scan.id_unit = unit
    if held:
        counts[INFLIGHT], counts[EXPIRED], scan.next_deadline = _held_counts(
            list(map(itemgetter(slice(w + 1, None)), held)), now)
    return scan


_FIRST = itemgetter(0)
_SECOND, _THIRD = itemgetter(1), itemgetter(2)
#: smallest ready ids kept per width while streaming: the oldest one not consumed meanwhile
_KEEP_OLDEST = 16


#: what _count_chunks gives back (plain values: it may run in a forked child)
_STREAMED_FIELDS = ("counts", "next_deadline", "oldest_ready_created", "id_unit", "warnings", "errors")


def _scan_streamed(qdir: str, scan: QueueScan, now: float, typed: bool, beside: bool | None = False) -> bool:
    """Count a big queue chunk by chunk (:func:`_count_chunks`); False when the exact path must
    do it. ``beside``: parse in a forked child while this process lists (single-threaded callers
    only; None: when a core is idle)."""
    from ..fs import pipeline

    if pipeline.wanted(beside):
        ran, fields = pipeline.parse_beside(listing_chunks(qdir, typed), lambda chunks: _count_chunks(chunks, now))
        if not ran:
            fields = _count_chunks(listing_chunks(qdir, typed), now)
    else:
        fields = _count_chunks(listing_chunks(qdir, typed), now)
    if fields is None:
        return False
    for key, value in zip(_STREAMED_FIELDS, fields):
        setattr(scan, key, value)
    return True


def _count_chunks(chunks: Iterable[tuple[list[str], frozenset[str] | set[str]]], now: float) -> tuple | None:
    """Count a big queue from its listing's chunks, in bounded memory; None when the exact path must do it.

    A 1M-name listing held whole is ~70 MB of names before any parsing, and the exact
    parse of it another ~130 MB; here the listing is read ``STREAM_CHUNK`` entries at a time
    and only counts, the few smallest ready ids, the held ids' hashes (a set) and the ready
    ids' hashes (an ``array``, 8 bytes each) stay. It also does less work per name than the
    exact path, so it is the faster one for big queues too.

    De-duplication goes by those 64-bit hashes: an id both ready and held (a consume during
    the listing) counts once, as held, and an id held twice returns False (the exact path
    keeps the last one listed). Unlike the exact path, one *name* listed twice (a rename
    away and back while the listing ran, which a hash-ordered directory -- ext4, XFS --
    does not return twice) would count twice. Two different ids with one hash (odds ~n^2/2^64:
    3e-8 at 1M names) would count once.
    """
    import heapq  # (only here: not on every stats start-up)
    from array import array

    scan = QueueScan("", VSQS, now)
    errors = ErrorList()
    ready_n = held_n = 0
    ready_h = array("q")
    held_h: set[int] = set()
    smallest: dict[int, list[str]] = {}  # width -> the few smallest ready ids
    held_widths: set[int] = set()
    writing: list[str] = []
    temp = foreign = inflight = expired = 0
    nearest: float | None = None
    for names, irregular in chunks:
        ready, rest = _ascii_digits(names)
        del names
        lens = set(map(len, ready))
        if lens and max(lens) > MAX_DIGITS:
            return None  # absurd ids: the exact path words the errors
        if irregular and not irregular.isdisjoint(ready):
            for fname in sorted(irregular.intersection(ready)):
                foreign += 1
                errors.add(f"{fname}: named like a message but not a regular file")
            ready = [m for m in ready if m not in irregular]
            lens = set(map(len, ready))
        ready_n += len(ready)
        ready_h.extend(map(hash, ready))
        for w in lens:
            same = ready if len(lens) == 1 else [m for m in ready if len(m) == w]
            kept = smallest.get(w, [])
            if len(kept) >= _KEEP_OLDEST:  # same width: text order is numeric order
                # most chunks hold none below the kept ones: a C-level min says so
                same = [m for m in same if m < kept[-1]] if min(same) < kept[-1] else []
            if same:
                smallest[w] = heapq.nsmallest(_KEEP_OLDEST, kept + same)
        del ready
        pairs, matched = held_split(rest, irregular)
        if len(matched) != len(rest):
            more_held, more_writing, t, f = sort_rest(rest, irregular, set(matched), errors)
            pairs += more_held
            writing += more_writing
            temp += t
            foreign += f
        del matched, rest
        if pairs:
            ids = list(map(_FIRST, pairs))
            hashes = set(map(hash, ids))
            if len(hashes) != len(ids) or not held_h.isdisjoint(hashes):
                return None  # an id held twice: the exact path keeps the last one listed
            held_h |= hashes
            held_n += len(ids)
            held_widths.update(map(len, ids))
            i, e, n = _held_counts(list(map(_SECOND, pairs)), now)
            inflight += i
            expired += e
            if n is not None and (nearest is None or n < nearest):
                nearest = n
    both = len(held_h.intersection(ready_h)) if held_h and ready_n else 0  # consumed while listed: held
    if writing and (len(set(writing)) != len(writing) or not held_h.isdisjoint(map(hash, writing))
                    or not set(map(hash, writing)).isdisjoint(ready_h)):
        return None
    if both and len(smallest) > 1:
        return None  # which width lost a ready id is not known here
    oldest: dict[int, str] = {}
    if any(w > 1 and ids[0][0] == "0" for w, ids in smallest.items()):
        return None  # a ready id with a leading zero (the least of its width): the exact path words it
    for w, ids in smallest.items():
        alive = [m for m in ids if hash(m) not in held_h]
        if not alive:
            return None  # every kept candidate was consumed meanwhile: list again
        oldest[w] = alive[0]
    counts = scan.counts
    counts[READY] = ready_n - both
    counts[WRITING] = len(writing) + temp
    counts[FOREIGN] = foreign
    counts[INFLIGHT] = inflight
    counts[EXPIRED] = expired
    scan.next_deadline = nearest
    widths = set(oldest) if counts[READY] else (held_widths or set(map(len, writing)))
    scan.oldest_ready_created = min(int(m) / vsqs_divisor(m) for m in oldest.values()) if counts[READY] else None
    _set_unit(scan, widths)
    scan.errors.extend(errors.result())
    return tuple(getattr(scan, f) for f in _STREAMED_FIELDS)


def _numeric_order(ids: set[str]) -> list[str]:
    """Digit-string ids in numeric order, as the client sorts its int tuples.

    With one id width (the usual case) text order is numeric order: one C-level sort,
    no int() per id. Mixed widths (or leading zeros) fall back to int keys.
    """
    if len(set(map(len, ids))) <= 1:
        return sorted(ids)
    return sorted(ids, key=int)


def _created(ids: list[str]) -> list[float]:
    """Creation times (s) of digit-string ids, ``int(id) / divisor`` as the scan computes them."""
    divisors = set(map(vsqs_divisor, {ids[0], ids[-1]})) if ids else set()
    if len(divisors) == 1 and len(set(map(len, ids))) == 1:
        # one width, so one unit: map in C instead of a Python call per id
        return list(map(truediv, map(int, ids), repeat(divisors.pop())))
    return [int(mid) / vsqs_divisor(mid) for mid in ids]


def _held_columns(held: dict[str, str], held_seconds: dict[str, float], now: float) -> ListingColumns:
    """The held messages (``held``: id -> deadline digits) as columns, in the order of a
    listing: in flight, then expired, each by (deadline, id). Built by map() over columns: a
    bulk requeue holds 100k of them."""
    # ids in order, then a stable sort by deadline: two sorts keyed in C, half the time of
    # one keyed by a lambda; the in-flight ones first, then the expired, each in that order
    ordered = sorted(_numeric_order(held), key=held_seconds.__getitem__)
    live, late = split_late(ordered, held, now)
    ids, n_late = live + late, len(late)
    n = len(ids)
    relpaths = list(map(".".join, zip(ids, map(held.__getitem__, ids))))  # <id>.<deadline> as listed
    return ListingColumns(ids, [INFLIGHT] * (n - n_late) + [EXPIRED] * n_late, relpaths, [None] * n,
                          _created(ids), list(map(held_seconds.__getitem__, ids)))


def held_by_state(names: list[str], irregular: frozenset[str] | set[str], now: float,
                  states: Collection[str]) -> tuple[list[str], list[str], bool]:
    """(ids, names, sole) of the held messages of one listing whose state is in ``states`` (in
    flight, expired), in id order: what a requeue by state takes. The scan's rules: held names
    as :func:`held_split` matches them, not ``irregular`` (links, FIFOs), one name per id (the
    last listed, as the scan keeps), expired as :func:`_late` judges (the count's rule). All
    column-wise: no per-message Python in a requeue pass of 100k.

    ``sole``: each id's name is its only entry in the listing, so the batch need not count
    them again (:func:`qconsole.backends.vsqs.writes.requeue_many`)."""
    if INFLIGHT not in states and EXPIRED not in states:
        return [], [], True
    sole = None if irregular else _held_sole(names, now, states)
    if sole is not None:
        return sole[0], sole[1], True
    return (*_held_any(names, irregular, now, states), False)


def _held_any(names: list[str], irregular: frozenset[str] | set[str], now: float,
              states: Collection[str]) -> tuple[list[str], list[str]]:
    """:func:`held_by_state`'s (ids, names) of any listing."""
    pairs, matched = held_split(list(compress(names, map(contains, names, repeat(".")))), irregular)
    name_of, deadline_of = dict(zip(map(_HEAD, pairs), matched)), dict(pairs)  # (the last listed, both)
    ids = _numeric_order(name_of)
    rels = list(map(name_of.__getitem__, ids))
    if INFLIGHT in states and EXPIRED in states:
        return ids, rels
    late = _late(list(map(deadline_of.__getitem__, ids)), now)
    keep = late if EXPIRED in states else list(map(not_, late))
    return list(compress(ids, keep)), list(compress(rels, keep))


def _held_sole(names: list[str], now: float, states: Collection[str]) -> tuple[list[str], list[str]] | None:
    """:func:`held_by_state` of a listing whose dotted names are all ``<id>.<deadline>``, the ids
    of one width, each listed once and not also ready (a requeue pass's usual queue), in a
    few C-level passes: the names sort as their ids do. None for any other listing."""
    has_dot = list(map(contains, names, repeat(".")))
    dotted = list(compress(names, has_dot))
    cols = _held_parts(dotted)
    if cols is None:
        return None
    ids, dls = cols
    if not ids:
        return [], []
    seen = set(ids)
    width = len(ids[0])
    if len(seen) != len(ids) or set(map(len, ids)) != {width}:
        return None
    if len(dotted) != len(names) and not seen.isdisjoint(compress(names, map(not_, has_dot))):
        return None  # an id also ready: the batch's own check says so
    picked = dotted
    if INFLIGHT not in states or EXPIRED not in states:
        late = _late(dls, now)
        picked = list(compress(dotted, late if EXPIRED in states else map(not_, late)))
    picked = sorted(picked)  # ids of one width, each once: they decide the names' order
    return list(map(itemgetter(slice(0, width)), picked)), picked


def _messages(
    queue: str,
    ready: set[str],
    held: dict[str, str],
    held_seconds: dict[str, float],
    writing: set[str],
    now: float,
) -> list[Message]:
    # A queue is mostly ready messages: build those with map() over columns (one Message
    # call per id, no per-id Python loop body); the few held/writing ones as before.
    ready_ids = _numeric_order(ready)
    out: list[Message] = list(map(
        Message, repeat(queue), repeat(VSQS), ready_ids, repeat(READY), ready_ids,
        repeat(None), repeat(None), _created(ready_ids),
    ))
    h = _held_columns(held, held_seconds, now)
    out += map(Message, repeat(queue), repeat(VSQS), h.id, h.state, h.relpath, h.priority, repeat(None),
               h.created_at, h.deadline)
    for mid in sorted(writing, key=int):
        out.append(Message(queue, VSQS, mid, WRITING, f"{mid}.new", created_at=int(mid) / vsqs_divisor(mid)))
    return out
