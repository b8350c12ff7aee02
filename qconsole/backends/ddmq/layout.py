"""ddmq: a root with ``ddmq.yaml``; queues are sub-directories holding ``ddmq.yaml`` and ``work/``.

Waiting: ``<queue>/<priority>.<queue_number>.ddmq<uuidhex>``; consumed:
``<queue>/work/<deadline_s>.<priority>.<queue_number>.ddmq<uuidhex>``. ddmq 0.9.14 takes
every name matching ``*.ddmq*`` in **text** order (so priority ``10`` before ``9``) and its
clean() calls ``int()`` on the first dotted part of every such name in ``work/``.
"""

from __future__ import annotations

import os
import stat
import time
from itertools import compress, repeat
from operator import attrgetter, itemgetter, methodcaller

from ...model import Message, ListingColumns, QueueScan
from ...states import DDMQ, EXPIRED, FOREIGN, INFLIGHT, READY, WRITING
from ...timeunits import ddmq_created
from ..fs import listing as _listing
from ..fs.safety import MAX_NUMBER_DIGITS as MAX_DIGITS
from ..fs.detect import DDMQ_CONFIG, DDMQ_WORK, ddmq_queue_dir_unknown, is_ddmq_queue_dir as is_queue_dir
from ..fs.listing import (
    NO_IRREGULAR, QC_TEMP_PREFIX, STREAM_BYTES, ErrorList, all_ascii_digits, gc_paused, is_ascii_digits,
    list_entries, listing, listing_chunks, names_only, os_error_line,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable
    from typing import Any

CONFIG = DDMQ_CONFIG
#: ddmq ids are uuid4 hex (32); longer ones are nobody's
MAX_UID = 64
WORK = DDMQ_WORK
#: names ddmq itself leaves in a queue directory besides messages
_QUEUE_FILES = frozenset({CONFIG, CONFIG + ".intermediate", CONFIG + ".example", WORK})


def _uuid_part(part: str) -> str | None:
    if part.startswith("ddmq"):
        uid = part[4:]
        if uid and uid.isascii() and uid.isalnum() and len(uid) <= MAX_UID:
            return uid
    return None


def parse_waiting(name: str) -> tuple[str, str, str] | None:
    """``(priority_text, queue_number, id)`` or None."""
    parts = name.split(".")
    if len(parts) != 3:
        return None
    prio, qn, tail = parts
    uid = _uuid_part(tail)
    if uid is None or not is_ascii_digits(prio) or not is_ascii_digits(qn) or max(len(prio), len(qn)) > MAX_DIGITS:
        return None
    return prio, qn, uid


def parse_work(name: str) -> tuple[str, str, str, str] | None:
    """``(deadline_s, priority_text, queue_number, id)`` or None."""
    parts = name.split(".")
    if len(parts) != 4:
        return None
    dl, prio, qn, tail = parts
    uid = _uuid_part(tail)
    if uid is None or not (is_ascii_digits(dl) and is_ascii_digits(prio) and is_ascii_digits(qn)):
        return None
    if max(len(prio), len(qn)) > MAX_DIGITS or len(dl) > MAX_DEADLINE_DIGITS:
        return None
    return dl, prio, qn, uid


#: a listing of up to this many names is matched name by name (:func:`small_parse`), not by
#: the patterns: ``ls`` of a small queue then starts without importing re (~4 ms, a sixth of it)
SPLIT_NAMES = 64


def small_parse(parse: Callable[[str], tuple[str, ...] | None], names: list[str],
                irregular: frozenset[str] | set[str]) -> tuple[list[tuple[str, ...]], list[str]]:
    """What :func:`_bulk_parse` gives for a short listing (no ``known``), by :func:`parse_waiting`
    or :func:`parse_work` per name: the groups of the names it takes that are regular files, in
    listing order, and the other names. (These parsers take exactly what the patterns take
    whole: a property test compares them.)"""
    groups: list[tuple[str, ...]] = []
    rest: list[str] = []
    for name in names:
        found = parse(name)
        if found is None or name in irregular:
            rest.append(name)
        else:
            groups.append(found)
    return groups, rest


#: a waiting message's file name from its (priority, queue number, id)
_WAITING_NAME = "%s.%s.ddmq%s"


def waiting_name(priority: int | str, queue_number: str, uid: str) -> str:
    return _WAITING_NAME % (priority, queue_number, uid)


def work_name(deadline: int, priority: int | str, queue_number: str, uid: str) -> str:
    return f"{deadline}.{priority}.{queue_number}.ddmq{uid}"


def matches_client_glob(name: str) -> bool:
    """ddmq lists with fnmatch ``*.ddmq*``: anything with ``.ddmq`` after at least nothing."""
    return ".ddmq" in name


def is_expired(deadline_s: int, now: float) -> bool:
    # ddmq clean(): int(expiry) < int(time.time())
    return deadline_s < int(now)


def list_queue_names(root: str) -> tuple[list[str], list[str]]:
    c_plain = _listing.plain_c
    got = c_plain.ddmq_queue_dirs(root) if c_plain is not None and hasattr(c_plain, "ddmq_queue_dirs") else None
    if got is not None:  # the usual queues found in C; every other entry judged below
        names, others = got
    else:
        names, others = [], None
    errors: list[str] = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # each queue checked relative to it
    try:
        scandir = os.scandir(fd) if others is None else None
        try:
            _judge_all(scandir if scandir is not None else map(_LinkEntry, others, repeat(fd)), fd, names, errors)
        finally:
            if scandir is not None:
                scandir.close()
    finally:
        os.close(fd)
    names.sort()
    errors.sort()  # (not the listing's order: the same lines in the same order wherever judged)
    return names, errors


def _judge_all(entries: Iterable[Any], fd: int, names: list[str], errors: list[str], *,
               defer_dirs: bool = False) -> None:
    """Every non-dot entry judged (:func:`_judge`) into ``names`` and ``errors``; with
    ``defer_dirs`` a sub-directory is a name as it is (judged where it is counted)."""
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if defer_dirs and entry.is_dir(follow_symlinks=False):
            names.append(entry.name)
            continue
        queue, error = _judge(entry, fd)
        if queue:
            names.append(entry.name)
        if error:
            errors.append(error)


def _judge(entry: Any, fd: int) -> tuple[bool, str | None]:
    """(a queue to count?, the line to say about it) for one non-dot entry of a root:
    ddmq's check_dir (a regular ddmq.yaml, a real work/), or a directory that cannot be
    looked into (a queue row with its read error); links are never followed."""
    name = entry.name
    if entry.is_symlink():
        return False, f"{name}: symlink not followed" if is_queue_dir(name, fd) else None
    if not entry.is_dir(follow_symlinks=False):
        return False, None
    if is_queue_dir(name, fd) or ddmq_queue_dir_unknown(name, fd):
        return True, None
    if _is_link_at(fd, f"{name}/{WORK}"):
        return False, f"{name}: work/ is a symlink, not followed"
    if _odd_config_at(fd, name):  # ddmq's own check_dir skips it too: not silently
        return False, (f"{name}: {CONFIG} is no regular file (a directory, a FIFO, a link to a "
                       "device or to nothing): not a queue, not counted")
    return False, None


def queue_candidates(root: str) -> tuple[list[str], list[str]] | None:
    """(names, errors) as :func:`list_queue_names` gives them, but every sub-directory a name,
    not yet looked into: ``count_many(..., unchecked=True)`` checks each as it counts it, in
    the forked scanners, and drops what is no queue. A root of 2,000 queues spends ~10 ms on
    those checks (two lookups a queue), serially, before any scanner starts. Only with the C
    reader, which checks a plain queue in the calls that list it; None without."""
    if _listing.plain_c is None:
        return None
    names: list[str] = []
    errors: list[str] = []
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with os.scandir(fd) as it:
            _judge_all(it, fd, names, errors, defer_dirs=True)
    finally:
        os.close(fd)
    names.sort()
    errors.sort()  # (Root.scan sorts them again with the lines of the directories judged later)
    return names, errors


def _no_queue(root: str, name: str, now: float) -> QueueScan | None:
    """None for a queue directory; else what count_many gives for a sub-directory that is no
    queue: a scan with no layout, holding the line to say about it (Root.scan drops it)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None  # the exact scan says what it cannot read
    try:
        queue, error = _judge(_LinkEntry(name, fd), fd)
    finally:
        os.close(fd)
    return None if queue else QueueScan(name, "", now, errors=[error] if error else [])


class _LinkEntry:
    """What list_queue_names asks of a DirEntry, for a name the C listing left to judge."""

    __slots__ = ("name", "_mode")

    def __init__(self, name: str, dir_fd: int) -> None:
        self.name = name
        try:
            self._mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except (OSError, ValueError):
            self._mode = 0  # gone meanwhile: neither a link nor a directory

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._mode)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._mode)


def _odd_config_at(dir_fd: int, name: str) -> bool:
    """A directory with a real work/ whose ddmq.yaml is there but no regular file (a planted link
    to /dev/zero, a FIFO): a queue the client and qconsole skip, that ``check`` would otherwise
    leave out without a word."""
    try:
        if not stat.S_ISDIR(os.stat(f"{name}/{WORK}", dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return False
        os.stat(f"{name}/{CONFIG}", dir_fd=dir_fd, follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return True  # (is_queue_dir found it no regular file, even following a link)


def _is_link_at(dir_fd: int, rel: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(rel, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except (OSError, ValueError):
        return False


_N = "([0-9]{1,%d})" % MAX_DIGITS  # more digits than any clock or priority writes: foreign
_U = "([A-Za-z0-9]{1,%d})" % MAX_UID
#: a deadline is epoch seconds: 11 digits reach the year 5138 (more is nobody's clock)
MAX_DEADLINE_DIGITS = 11
#: the longest timeout qconsole sets (s, ~317 years): a consumer's deadline (now + timeout)
#: then fits those 11 digits; longer, the message would read as foreign, not held
MAX_TIMEOUT = 10**10 - 1
_D = "([0-9]{1,%d})" % MAX_DEADLINE_DIGITS
_PATTERN_NAMES = ("_WAITING_RE", "_WORK_RE", "_WAITING_LINES", "_WORK_LINES")
_COMPILED: list[Any] = []


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(waiting name, work name, and the same as lines of a newline-joined listing: see
    _bulk_parse), compiled on first use: a root of plain small queues is counted without
    them (:func:`_count_plain`), and importing re (with enum) is ~6 ms of every start.
    The line forms are anchored by ^ and $ in MULTILINE mode, a quarter quicker than
    matching the newlines themselves."""
    if not _COMPILED:
        import re

        _COMPILED.extend((re.compile(rf"{_N}\.{_N}\.ddmq{_U}"), re.compile(rf"{_D}\.{_N}\.{_N}\.ddmq{_U}"),
                          re.compile(rf"^{_N}\.{_N}\.ddmq{_U}$", re.MULTILINE),
                          re.compile(rf"^{_D}\.{_N}\.{_N}\.ddmq{_U}$", re.MULTILINE)))
    return _COMPILED[0], _COMPILED[1], _COMPILED[2], _COMPILED[3]


def __getattr__(name: str) -> Any:
    """``_WAITING_RE`` and its kin for importers (the console's columns, tests), compiled then."""
    if name in _PATTERN_NAMES:
        return _patterns()[_PATTERN_NAMES.index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_GROUPS = methodcaller("groups")
_STRING = attrgetter("string")
_FIRST, _SECOND, _THIRD, _FOURTH = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(3)
_NO_NAMES: frozenset[str] = frozenset()


def _bulk_parse(
    pattern: re.Pattern[str],
    lines: re.Pattern[str],
    names: list[str],
    irregular: frozenset[str] | set[str],
    known: frozenset[str] = _NO_NAMES,
) -> tuple[list[tuple[str, ...]], list[str]]:
    """(groups of every regular name the pattern matches, the names left over), in C.

    The usual listing (messages plus ddmq's own ``known`` files) is parsed in one
    ``findall`` over the names joined by newlines: tuples come straight out of C, with no
    match object per name. Anything else (a name holding a newline, a foreign or irregular
    entry, qconsole's temp files) takes the per-name path, which also lists the leftovers.
    """
    if not names:
        return [], []
    text = "\n" + "\n".join(names) + "\n"
    if text.count("\n") == len(names) + 1:  # one line per name: a match is one whole name
        groups = lines.findall(text)
        # ddmq's own files are looked for only when something did not match (list membership
        # compares lengths first: cheaper than hashing every fresh name)
        present = [k for k in known if k in names] if len(groups) < len(names) else []
        if len(groups) == len(names) - len(present) and not (irregular and any(map(pattern.fullmatch, irregular))):
            return groups, present
    matches = list(filter(None, map(pattern.fullmatch, names)))
    if irregular and any(map(pattern.fullmatch, irregular)):  # ("work" is irregular, never a match)
        matches = [m for m in matches if m.string not in irregular]
    if len(matches) == len(names):
        return list(map(_GROUPS, matches)), []
    matched = set(map(_STRING, matches))
    return list(map(_GROUPS, matches)), [n for n in names if n not in matched]


def _leftovers(
    rest: list[str],
    irregular: frozenset[str] | set[str],
    parse: Callable[[str], object],
    where: str,
    glob_note: str,
    errors: ErrorList,
    skip: frozenset[str] = _NO_NAMES,
) -> tuple[int, int]:
    """(qconsole temp files, foreign entries) among names that are not messages; errors for those
    that look like one (a non-file) or that the client's ``*.ddmq*`` glob would still take."""
    temp = foreign = 0
    for fname in rest:
        if fname in skip:
            continue
        if fname.startswith(QC_TEMP_PREFIX):
            temp += 1
            continue
        foreign += 1
        if fname in irregular and parse(fname) is not None:
            errors.add(f"{where}{fname}: named like a message but not a regular file")
        elif matches_client_glob(fname):
            errors.add(f"{where}{fname}: {glob_note}")
    return temp, foreign


def listing_dirs(root: str, name: str) -> list[str]:
    """The directories one queue's scan lists: the queue and its work/."""
    qdir = os.path.join(root, name)
    return [qdir, os.path.join(qdir, WORK)]


def _scan_queue(
    root: str, name: str, now: float | None = None, *, collect: bool | str = False, check_types: bool = False,
    beside: bool | None = False, stream: bool = True,
) -> QueueScan:
    """Count one ddmq queue from two directory listings (queue dir and work/).

    Names alone, as in :func:`..vsqs.scan_queue`; ``check_types`` (implied by ``collect``)
    also flags non-regular entries named like messages. A big directory is counted from its
    listing in chunks (:func:`_summarize_waiting`, :func:`_summarize_work`), parsed in a
    forked process when ``beside`` (single-threaded callers only); ``stream=False`` holds
    whole listings. ``collect="columns"`` (the report's listing) fills ``messages`` with
    :class:`~qconsole.model.ListingColumns` instead: the same messages as columns, the ready
    ones in no particular order (no sort, no object per message); ``collect="held"`` with
    the in-flight and expired messages only, from work/ alone (the ready count is then 0).
    """
    now = time.time() if now is None else now
    scan = QueueScan(name=name, layout=DDMQ, scanned_at=now)
    errors = ErrorList()
    qdir = os.path.join(root, name)
    typed = collect or check_types
    stream = stream and not collect
    streamed = None  # the queue directory's summary, when it was streamed
    names: list[str] = []
    irregular: frozenset[str] | set[str] = frozenset()
    try:
        st = os.stat(qdir)  # the size picks streaming; the link count catches sub-directories besides work/
        if stream and st.st_size >= STREAM_BYTES:
            streamed = _stream(_summarize_waiting, qdir, typed or st.st_nlink != 3, beside)
        elif collect == "held":
            pass  # held messages are all in work/: the waiting ones are not listed (nor counted)
        elif typed:
            names, irregular = listing(qdir)
        else:
            names, irregular = names_only(qdir, subdirs=1, nlink=st.st_nlink)  # work/
    except OSError as err:
        scan.errors.append(os_error_line(err, name))
        return scan
    hgroups: list[tuple[str, ...]] = []  # (deadline, prio, qn, uid)
    wstreamed = None
    wrest: list[str] = []
    wirregular: frozenset[str] | set[str] = frozenset()
    werror = None
    try:  # listed right after the queue directory, parsed first (its ids decide the queue's)
        wdir = os.path.join(qdir, WORK)
        wst = os.stat(wdir) if stream else None
        if wst is not None and wst.st_size >= STREAM_BYTES:
            wstreamed = _stream(_summarize_work, wdir, typed or wst.st_nlink != 2, beside, now)
        else:
            wnames, wirregular = listing(wdir) if typed else names_only(wdir, nlink=wst and wst.st_nlink)
            _, work_re, _, work_lines = _patterns()
            hgroups, wrest = _bulk_parse(work_re, work_lines, wnames, wirregular)
            del wnames
    except OSError as err:
        werror = os_error_line(err, f"{name}/{WORK}")

    # Two listings can see one message in both places while a consumer renames it: the
    # consumed copy (work/) wins, since consume is the rename in flight far more often.
    if wstreamed is not None:
        held_by, nearest, held_hash_bytes, wtemp, wforeign, wlines, wdropped = wstreamed
        if held_hash_bytes is None:  # one id twice in work/: the exact way, from the start
            return scan_queue(root, name, now, check_types=check_types, stream=False)
        held = _hash_set(held_hash_bytes)
    else:
        if len(set(map(_FOURTH, hgroups))) != len(hgroups):  # one id twice in work/: keep one, as a dict would
            hgroups = list({g[3]: g for g in hgroups}.values())
        held = set(map(hash, map(_FOURTH, hgroups)))
        held_by, nearest = _held_figures(hgroups, now)
    if streamed is not None:
        summary = _settle_waiting(streamed, held, errors)
        if summary is None:  # something the chunked count cannot settle: the exact way, from the start
            return scan_queue(root, name, now, check_types=check_types, stream=False)
        ready_by_prio, n_ready, oldest, (temp, foreign) = summary
        wgroups: list[tuple[str, ...]] = []
    else:
        waiting_re, _, waiting_lines, _ = _patterns()
        wgroups, rest = _bulk_parse(waiting_re, waiting_lines, names, irregular, _QUEUE_FILES)
        del names
        uids = set(map(_THIRD, wgroups))
        if len(uids) != len(wgroups) or not held.isdisjoint(map(hash, uids)):
            latest = {g[2]: g for g in wgroups}  # one entry per id, as a listing twice would give
            wgroups = [g for uid, g in latest.items() if hash(uid) not in held]
        ready_by_prio = _tally(list(map(_FIRST, wgroups)))
        n_ready, oldest = len(wgroups), _oldest_qn(list(map(_SECOND, wgroups)))
        temp, foreign = _leftovers(rest, irregular, parse_waiting, "", _WAITING_NOTE, errors, skip=_QUEUE_FILES)
    if werror:
        errors.add(werror)
    if wstreamed is not None:
        _merge_errors(errors, wlines, wdropped)
    else:
        wtemp, wforeign = _leftovers(wrest, wirregular, parse_work, f"{WORK}/", _WORK_NOTE, errors)
    temp += wtemp
    foreign += wforeign

    scan.counts[WRITING] = temp
    scan.counts[FOREIGN] = foreign
    _fill(scan, ready_by_prio, n_ready, oldest, held_by, nearest)
    scan.errors.extend(errors.result())
    if collect == "columns":
        scan.messages = _columns(wgroups, hgroups, now)  # type: ignore[assignment]
    elif collect:
        held_msgs = {g[3]: (f"{g[0]}.{g[1]}.{g[2]}.ddmq{g[3]}", int(g[0]), g[1], g[2]) for g in hgroups}
        scan.messages = _messages(name, wgroups, held_msgs, now)  # (no waiting ones when "held")
    return scan


scan_queue = gc_paused(_scan_queue)

_MIXED_WIDTHS = "mixed-width priorities: ddmq delivers in file-name text order, so e.g. priority 10 is taken before 9"


def _fill(scan: QueueScan, ready_by_prio: dict[str, int], n_ready: int, oldest: str | None,
          held_by: dict[tuple[str, bool], int], nearest: float | None) -> None:
    """A queue's counts by state and priority, oldest ready message, nearest deadline and
    priority-width warning, from what its two listings held (every path ends here)."""
    counts = scan.counts
    counts[READY] = n_ready
    by_prio: dict[str, dict[str, int]] = {}
    for prio, n in ready_by_prio.items():
        by_prio[prio] = {READY: n, INFLIGHT: 0, EXPIRED: 0}
    if n_ready:
        scan.oldest_ready_created = ddmq_created(oldest) if oldest else None
    for (prio, alive), n in held_by.items():
        slot = by_prio.get(prio)
        if slot is None:
            slot = by_prio[prio] = {READY: 0, INFLIGHT: 0, EXPIRED: 0}
        slot[INFLIGHT if alive else EXPIRED] += n
        counts[INFLIGHT if alive else EXPIRED] += n
    if len(by_prio) > 1:
        by_prio = dict(sorted(by_prio.items(), key=_prio_order))
        if len({len(p) for p, n in by_prio.items() if n[READY]}) > 1:
            scan.warnings.append(_MIXED_WIDTHS)
    scan.by_priority = by_prio
    scan.next_deadline = nearest


def _tally(keys: list[Any]) -> dict[Any, int]:
    """How often each key occurs; one key throughout (one priority: the usual queue) is
    answered by a C-level count. Otherwise Counter's own C loop, into a plain dict: without
    a Counter's set-up, and without importing collections (~1.5 ms of a small root's start)."""
    if not keys:
        return {}
    if keys.count(keys[0]) == len(keys):
        return {keys[0]: len(keys)}
    out: dict[Any, int] = {}
    _count_elements(out, keys)
    return out


try:  # the C helper behind Counter.update (builtin in CPython)
    from _collections import _count_elements
except ImportError:  # pragma: no cover - other interpreters
    def _count_elements(mapping: dict[Any, int], iterable: Iterable[Any]) -> None:
        for k in iterable:
            mapping[k] = mapping.get(k, 0) + 1


def _prio_order(item: tuple[str, Any]) -> tuple[int, str]:
    return int(item[0]), item[0]


def _columns(wgroups: list[tuple[str, ...]], hgroups: list[tuple[str, ...]], now: float) -> ListingColumns:
    """The messages of de-duplicated name groups as columns (what :func:`_messages` builds, as
    Messages, in delivery order): per-value work in C (map/zip), waiting ones in listing order."""
    # waiting (prio, qn, uid): the file name is rebuilt, as _messages does
    prios_w = list(map(_FIRST, wgroups))
    qns_w = list(map(_SECOND, wgroups))
    uids_w = list(map(_THIRD, wgroups))
    names_w = list(map("{0[0]}.{0[1]}.ddmq{0[2]}".format, wgroups))
    as_int = {p: int(p) for p in set(prios_w)}
    cols = ListingColumns(
        uids_w, [READY] * len(wgroups), names_w, list(map(as_int.__getitem__, prios_w)),
        _created_all(qns_w), [None] * len(wgroups),
    )
    for dl, prio, qn, uid in hgroups:  # (deadline, prio, qn, uid): the few consumed ones
        deadline = int(dl)
        cols.id.append(uid)
        cols.state.append(EXPIRED if is_expired(deadline, now) else INFLIGHT)
        cols.relpath.append(f"{WORK}/{dl}.{prio}.{qn}.ddmq{uid}")
        cols.priority.append(int(prio))
        cols.created_at.append(ddmq_created(qn))
        cols.deadline.append(float(deadline))
    return cols


def _held_figures(hgroups: list[tuple[str, ...]], now: float) -> tuple[dict[tuple[str, bool], int], float | None]:
    """({(priority, in flight?): count}, nearest future deadline) of work/ entries.
    Expired: deadline < int(now) (ddmq's clean()); as numbers, so any digit width works."""
    if not hgroups:
        return {}, None
    cutoff = int(now)
    deadlines = list(map(int, map(_FIRST, hgroups)))
    live = list(map(cutoff.__le__, deadlines))
    future = [d for d, alive in zip(deadlines, live) if alive] if not all(live) else deadlines
    return _tally(list(zip(map(_SECOND, hgroups), live))), (float(min(future)) if future else None)


_WORK_NOTE = "not a work file name; ddmq's clean() will fail on it"


def _stream(summarize: Callable[..., Any], path: str, typed: bool, beside: bool | None, *args: Any) -> Any:
    """``summarize(chunks of path's listing, *args)``; parsed in a forked child while this
    process lists when ``beside``."""
    from ..fs import pipeline

    if pipeline.wanted(beside):
        ran, summary = pipeline.parse_beside(listing_chunks(path, typed), lambda chunks: summarize(chunks, *args),
                                             merge=_MERGE[summarize])
        if ran:
            return summary
    return summarize(listing_chunks(path, typed), *args)


def _merged_errors(a_lines: list[str], a_dropped: int, b_lines: list[str], b_dropped: int) -> tuple[list[str], int]:
    # past MAX_ERRORS lines, which are kept depends on how the chunks were shared (the number not)
    errors = ErrorList()
    _merge_errors(errors, a_lines, a_dropped)
    _merge_errors(errors, b_lines, b_dropped)
    return errors.lines, errors.dropped


def _merge_work(a: tuple, b: tuple) -> tuple:
    """Two :func:`_summarize_work` results (of disjoint chunks of one listing) as one."""
    from collections import Counter  # (the streamed paths: a big queue's count)

    held_by = Counter(a[0])
    held_by.update(b[0])
    nearest = min((n for n in (a[1], b[1]) if n is not None), default=None)
    hashes: bytes | None = None
    if a[2] is not None and b[2] is not None and _hash_set(a[2]).isdisjoint(_hash_set(b[2])):
        hashes = a[2] + b[2]  # (an id in both halves is an id twice: None, as one half would say)
    return (dict(held_by), nearest, hashes, a[3] + b[3], a[4] + b[4], *_merged_errors(a[5], a[6], b[5], b[6]))


def _merge_waiting(a: tuple, b: tuple) -> tuple:
    """Two :func:`_summarize_waiting` results (of disjoint chunks of one listing) as one."""
    import heapq
    from array import array
    from collections import Counter

    by_prio = Counter(a[0])
    by_prio.update(b[0])
    prios = list(a[3])
    index = {p: i for i, p in enumerate(prios)}
    for p in b[3]:
        if p not in index:
            index[p] = len(prios)
            prios.append(p)
    mapping = [index[p] for p in b[3]]
    if mapping == list(range(len(mapping))):  # the usual case: both met the priorities in one order
        b_bytes = b[2]
    else:  # ~25 ms per 400k messages
        b_at = array("I")
        b_at.frombytes(b[2])
        b_bytes = array("I", map(mapping.__getitem__, b_at)).tobytes()
    return (dict(by_prio), a[1] + b[1], a[2] + b_bytes, prios,
            heapq.nsmallest(_KEEP_OLDEST, list(a[4]) + list(b[4])),
            heapq.nsmallest(_KEEP_OLDEST, list(a[5]) + list(b[5])),
            a[6] + b[6], a[7] + b[7], *_merged_errors(a[8], a[9], b[8], b[9]))


#: how two halves of each streamed summary combine (fs/pipeline.py: the parent parses too)
_MERGE: dict[Callable[..., Any], Callable[[tuple, tuple], tuple]] = {}


def _hash_set(data: bytes) -> set[int]:
    from array import array

    hashes = array("q")
    hashes.frombytes(data)
    return set(hashes)


def _merge_errors(errors: ErrorList, lines: list[str], dropped: int) -> None:
    for line in lines:
        errors.add(line)
    errors.dropped += dropped


def _summarize_work(chunks: Iterable[tuple[list[str], frozenset[str] | set[str]]], now: float) -> tuple:
    """What a work/ listing says, chunk by chunk, in bounded memory (plain values: this may run
    in a forked child): counts by (priority, in flight?), the nearest future deadline, the ids'
    hashes (None when one id is there twice: the exact path keeps the last one listed), and
    the leftovers' counts and error lines."""
    from array import array
    from collections import Counter

    errors = ErrorList()
    held_by: Counter[tuple[str, bool]] = Counter()
    hashes = array("q")
    seen: set[int] = set()
    nearest: float | None = None
    temp = foreign = 0
    dup = False
    _, work_re, _, work_lines = _patterns()
    for names, irregular in chunks:
        groups, rest = _bulk_parse(work_re, work_lines, names, irregular)
        del names
        if rest:
            t, f = _leftovers(rest, irregular, parse_work, f"{WORK}/", _WORK_NOTE, errors)
            temp += t
            foreign += f
        ids = set(map(hash, map(_FOURTH, groups)))
        if len(ids) != len(groups) or not seen.isdisjoint(ids):
            dup = True
        seen |= ids
        by, near = _held_figures(groups, now)
        held_by.update(by)
        if near is not None and (nearest is None or near < nearest):
            nearest = near
    hashes.extend(seen)
    return dict(held_by), nearest, (None if dup else hashes.tobytes()), temp, foreign, errors.lines, errors.dropped


def _oldest_qn(qns: list[str]) -> str | None:
    """The oldest time-based queue number: the same 10 digits of seconds first, then the
    fraction, so text order is time order; shorter ones are not times and do not count."""
    if not qns:
        return None
    oldest = min(qns)
    if len(oldest) < 10:
        qns = [qn for qn in qns if len(qn) >= 10]
        oldest = min(qns) if qns else None
    return oldest


_WAITING_NOTE = "matches ddmq's *.ddmq* glob but is not a message name"
#: smallest queue numbers kept while streaming: the oldest one not consumed meanwhile
_KEEP_OLDEST = 16


def _summarize_waiting(chunks: Iterable[tuple[list[str], frozenset[str] | set[str]]]) -> tuple:
    """What a queue directory's listing says, chunk by chunk, in bounded memory (plain values:
    this may run in a forked child): ready counts by priority, each message's id hash and
    priority (8 + 4 bytes, to take out those consumed while listed), the smallest queue
    numbers, and the leftovers' counts and error lines.

    Unlike the whole-listing parse, one id in two waiting names (two files: a copy someone
    made, or a name listed twice in a race) counts twice here, as ddmq would deliver both.
    """
    from array import array
    from collections import Counter

    errors = ErrorList()
    by_prio: Counter[str] = Counter()
    prios: dict[str, int] = {}
    hashes, prio_at = array("q"), array("I")
    smallest: list[tuple[str, int]] = []  # (queue number, id hash)
    smallest_long: list[tuple[str, int]] = []  # the same among time-based (10+ digit) numbers
    all_long = True
    temp = foreign = 0
    waiting_re, _, waiting_lines, _ = _patterns()
    for names, irregular in chunks:
        groups, rest = _bulk_parse(waiting_re, waiting_lines, names, irregular, _QUEUE_FILES)
        del names
        if rest:
            t, f = _leftovers(rest, irregular, parse_waiting, "", _WAITING_NOTE, errors, skip=_QUEUE_FILES)
            temp += t
            foreign += f
        if not groups:
            continue
        ids = list(map(hash, map(_THIRD, groups)))
        hashes.extend(ids)
        ps = list(map(_FIRST, groups))
        for p in set(ps).difference(prios):
            prios[p] = len(prios)
        prio_at.extend(map(prios.__getitem__, ps))
        by_prio.update(ps)
        qns = list(map(_SECOND, groups))
        smallest = _keep_smallest(smallest, qns, ids)
        if min(map(len, qns)) < 10:
            all_long = False
            keep = [len(q) >= 10 for q in qns]
            smallest_long = _keep_smallest(smallest_long, list(compress(qns, keep)), list(compress(ids, keep)))
        elif all_long:  # every number so far is time-based: the two lists are one
            smallest_long = smallest
        else:
            smallest_long = _keep_smallest(smallest_long, qns, ids)
    return (dict(by_prio), hashes.tobytes(), prio_at.tobytes(), list(prios), smallest, smallest_long,
            temp, foreign, errors.lines, errors.dropped)


def _keep_smallest(kept: list[tuple[str, int]], qns: list[str], ids: list[int]) -> list[tuple[str, int]]:
    """The _KEEP_OLDEST smallest (queue number, id hash) pairs of ``kept`` and a chunk's.
    Once _KEEP_OLDEST are kept, only the chunk's numbers up to the largest kept one can
    enter, and most chunks have none (a C-level min says so): heapq.nsmallest would loop
    over every name in Python."""
    import heapq

    if len(kept) >= _KEEP_OLDEST:
        bound = kept[-1][0]
        if not qns or min(qns) > bound:
            return kept
        pairs = [p for p in zip(qns, ids) if p[0] <= bound]  # ties too: nsmallest orders them by id hash
    else:
        pairs = list(zip(qns, ids))
    return heapq.nsmallest(_KEEP_OLDEST, kept + pairs)


_MERGE.update({_summarize_waiting: _merge_waiting, _summarize_work: _merge_work})


def _settle_waiting(summary: tuple, held: set[int], errors: ErrorList) -> tuple | None:
    """(ready count by priority, ready count, oldest queue number, leftovers) from
    :func:`_summarize_waiting`, without the messages work/ also holds (consumed while listed:
    work/'s copy counts); None when the kept candidates for the oldest were all consumed."""
    from array import array
    from collections import Counter

    by_prio, hash_bytes, prio_bytes, prio_names, smallest, smallest_long, temp, foreign, lines, dropped = summary
    _merge_errors(errors, lines, dropped)
    ready = Counter(by_prio)
    if held:
        hashes = array("q")
        hashes.frombytes(hash_bytes)
        consumed = held.intersection(hashes)
        if consumed:
            prio_at = array("I")
            prio_at.frombytes(prio_bytes)
            ready.subtract(prio_names[p] for h, p in zip(hashes, prio_at) if h in consumed)
            ready = +ready  # (drops the priorities left with none)
    n_ready = sum(ready.values())
    oldest = None
    if n_ready:
        alive = [q for q, h in smallest if h not in held]
        if not alive:
            return None
        oldest = alive[0]
        if len(oldest) < 10:
            alive = [q for q, h in smallest_long if h not in held]
            if not alive and len(smallest_long) >= _KEEP_OLDEST:
                return None
            oldest = alive[0] if alive else None
    return ready, n_ready, oldest, (temp, foreign)


def _created_all(qns: list[str]) -> list[float | None]:
    """``ddmq_created`` of every queue number; inline when all have a fraction (the usual case)."""
    if qns and min(map(len, qns)) > 10:
        return [float(qn[:10] + "." + qn[10:]) for qn in qns]
    return list(map(ddmq_created, qns))


def _messages(
    queue: str,
    wgroups: list[tuple[str, ...]],
    held: dict[str, tuple[str, int, str, str]],
    now: float,
) -> list[Message]:
    # The real consumer: sorted(fnmatch.filter(listdir, '*.ddmq*')) -- plain text order. The
    # waiting ones (``wgroups``: (priority, queue number, id), one per id) are named again
    # with % in C and put in their names' order by a sort keyed in C (a third of the time
    # of sorting (name, group) tuples); the names are distinct, as their ids are. Then the
    # Messages are built column-wise.
    names = list(map(_WAITING_NAME.__mod__, wgroups))
    order = sorted(range(len(names)), key=names.__getitem__)
    groups = list(map(wgroups.__getitem__, order))
    prios = list(map(_FIRST, groups))
    as_int = {p: int(p) for p in set(prios)}
    out: list[Message] = list(map(
        Message, repeat(queue), repeat(DDMQ), map(_THIRD, groups), repeat(READY), map(names.__getitem__, order),
        map(as_int.__getitem__, prios), prios, _created_all(list(map(_SECOND, groups))),
    ))
    held_sorted = sorted(held.items(), key=lambda kv: (kv[1][1], kv[1][0]))
    for want in (INFLIGHT, EXPIRED):
        for uid, (fname, dl, prio, qn) in held_sorted:
            state = EXPIRED if is_expired(dl, now) else INFLIGHT
            if state == want:
                out.append(
                    Message(queue, DDMQ, uid, state, f"{WORK}/{fname}", int(prio), prio,
                            ddmq_created(qn), float(dl))
                )
    return out


#: a queue directory (or work/) with at most this much directory data is counted the short
#: way when plain (:func:`_count_plain`): a few hundred names
SMALL_BYTES = 65_536
#: a root of up to this many queues is parsed without a regex (no re import: a small root
#: starts ~6 ms sooner); more, by the patterns, ~10 µs quicker per queue of 50
_SPLIT_QUEUES = 64


def prepare_count(n_queues: int) -> None:
    """Called before counting a root's ``n_queues`` queues, before any scanner is forked: the
    patterns are compiled once here for a root of many (every forked scanner inherits them)."""
    if n_queues > _SPLIT_QUEUES and _listing.plain_c is None:  # (the C reader needs none)
        _patterns()


def _use_split() -> bool:
    """No pattern compiled yet (a small root): split. Compiled (a root of many: prepare_count; or
    the exact path ran): the patterns, quicker."""
    return not _COMPILED


@gc_paused
def count_many(root: str, names: list[str], now: float, *, check_types: bool = False,
               beside: bool | None = False, unchecked: bool = False) -> list[QueueScan]:
    """:func:`scan_queue` for every queue of ``names``, the usual small ones the short way.
    ``unchecked``: names from :func:`queue_candidates`; one that is no queue gets a scan with
    no layout and the line to say about it (see :func:`_no_queue`).

    A root of thousands of small queues spends most of a per-queue scan on fixed Python
    work, not on its few names. A small queue with no sub-directory but work/ (link counts),
    whose listings hold only message names and ddmq's own files, every id once, is counted
    by :func:`_count_plain`; any other takes :func:`scan_queue`, so every queue gets exactly
    what scan_queue gives (a property test compares them on random roots).
    """
    if check_types:
        return [(unchecked and _no_queue(root, n, now)) or _scan_queue(root, n, now, check_types=True, beside=beside)
                for n in names]
    out: list[QueueScan] = []
    stat, listdir = os.stat, os.listdir
    split = _use_split()
    c_plain = _listing.plain_c
    for name in names:
        qdir = f"{root}/{name}"
        scan = None
        if c_plain is not None:  # the same check and figures in C: no string per message
            # (a plain queue is a queue: C found its regular ddmq.yaml and real work/)
            got = c_plain.ddmq_plain(qdir, _listing.PLAIN_C_BYTES, MAX_DIGITS, MAX_UID, MAX_DEADLINE_DIGITS, int(now))
            if got is not None:  # (ready by priority, ready, oldest, held by (priority, alive), nearest)
                scan = QueueScan(name, DDMQ, now)
                _fill(scan, *got)
        elif not unchecked:  # (Python's short way never asks whether a directory is a queue at all)
            try:
                st = stat(qdir)
                if st.st_nlink == 3 and st.st_size <= SMALL_BYTES:
                    wdir = f"{qdir}/{WORK}"
                    qnames = listdir(qdir)  # the queue first, then work/, as scan_queue lists them
                    wst = stat(wdir)
                    if wst.st_nlink == 2 and wst.st_size <= SMALL_BYTES:
                        scan = _count_plain(name, qnames, listdir(wdir), now, split=split)
            except OSError:
                pass
        # the exact way says what is unusual; a directory not yet judged may be no queue at all
        out.append(scan or (unchecked and _no_queue(root, name, now)) or _scan_queue(root, name, now, beside=beside))
    return out


def _count_plain(name: str, names: list[str], wnames: list[str], now: float, *,
                 split: bool = False) -> QueueScan | None:
    """Counts of a queue whose listing holds only waiting names and ddmq's own files and whose
    work/ holds only work names, no id twice; None for any other (the exact path says what is
    unusual). None of the exact path's handling of leftovers, duplicates and errors, which is
    most of its cost on a queue of 50. The names are parsed by the exact path's patterns, one
    ``findall`` per listing, or with ``split`` at their dots, the parts checked column by column
    (a third slower, but no regex: a small root is counted without importing re, ~6 ms of a
    start). Either way a name passes exactly when the exact path's pattern matches it whole."""
    msgs = set(names)
    if len(msgs) != len(names):
        return None  # a name listed twice (a listing during renames): the exact way
    msgs -= _QUEUE_FILES
    parsed = (_split_parse if split else _regex_parse)(msgs, wnames)
    if parsed is None:
        return None
    prios, qns, uids, hrows, held = parsed
    if len(held) != len(hrows) or len(set(uids)) != len(uids) or not held.isdisjoint(uids):
        return None  # an id twice (a consume during the listing, a copy): the exact way keeps one
    scan = QueueScan(name, DDMQ, now)
    held_by, nearest = _held_figures(hrows, now)  # (rows: deadline, priority, ... as the groups are)
    _fill(scan, _tally(list(prios)), len(uids), _oldest_qn(list(qns)), held_by, nearest)
    return scan


#: what the plain-queue parsers give: priorities, queue numbers and ids of the waiting names,
#: the work/ names' rows (deadline, priority, queue number, ...) and their set of ids
Parsed = tuple


def _regex_parse(msgs: set[str], wnames: list[str]) -> Parsed | None:
    waiting_re, work_re, waiting_lines, work_lines = _patterns()
    groups, rest = _bulk_parse(waiting_re, waiting_lines, list(msgs), NO_IRREGULAR)
    if rest:
        return None  # a foreign name, a temp file, a name holding a newline
    hgroups, wrest = _bulk_parse(work_re, work_lines, wnames, NO_IRREGULAR)
    if wrest:
        return None
    return (list(map(_FIRST, groups)), list(map(_SECOND, groups)), list(map(_THIRD, groups)), hgroups,
            set(map(_FOURTH, hgroups)))


def _split_parse(msgs: set[str], wnames: list[str]) -> Parsed | None:
    rows = list(map(_DOTS, msgs))
    if rows and set(map(len, rows)) != {3}:
        return None
    prios, qns, tails = zip(*rows) if rows else ((), (), ())
    uids = _uids(tails)
    if uids is None or not (_numbers(prios, MAX_DIGITS) and _numbers(qns, MAX_DIGITS)):
        return None
    hrows = list(map(_DOTS, wnames))
    held: list[str] | None = []
    if hrows:
        if set(map(len, hrows)) != {4}:
            return None
        deadlines, hprios, hqns, htails = zip(*hrows)
        held = _uids(htails)
        if held is None or not (_numbers(deadlines, MAX_DEADLINE_DIGITS) and _numbers(hprios, MAX_DIGITS)
                                and _numbers(hqns, MAX_DIGITS)):
            return None
    return prios, qns, uids, hrows, set(held)


_DOTS = methodcaller("split", ".")
_AFTER_MARK = itemgetter(slice(4, None))


def _numbers(parts: tuple[str, ...], most: int) -> bool:
    """Every part is 1 to ``most`` ASCII digits (the patterns' ``[0-9]{1,most}``)."""
    if not parts:
        return True
    lens = list(map(len, parts))
    return min(lens) >= 1 and max(lens) <= most and all_ascii_digits("".join(parts))


def _uids(tails: tuple[str, ...]) -> list[str] | None:
    """The ids of ``ddmq<id>`` tails, each 1 to MAX_UID ASCII letters or digits; None if any is not.
    (No file name holds a NUL: each "\\0ddmq" found in the joined tails is one tail's start.)"""
    if not tails:
        return []
    if ("\0" + "\0".join(tails)).count("\0ddmq") != len(tails):
        return None
    uids = list(map(_AFTER_MARK, tails))
    lens = list(map(len, uids))
    if min(lens) < 1 or max(lens) > MAX_UID:
        return None
    try:  # bytes.isalnum: ASCII letters and digits only, without str's Unicode tables
        return uids if "".join(uids).encode("ascii").isalnum() else None
    except UnicodeEncodeError:
        return None
