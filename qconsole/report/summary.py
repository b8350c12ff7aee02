"""The ``summary.json`` document (schema ``qconsole.report/2``) and a pure-Python summary.

The Spark job and the pure-Python pass (benchmark, tests) both produce per-queue stats in the
shape of :func:`empty_stats`; :func:`report_document` turns them into the document. Never
change the document's shape without bumping SCHEMA.

/2 (from /1): ``age_histogram`` per queue and in ``totals`` (qshape's buckets),
``percentiles`` gain ``p99``; ``poison`` is ``{field, threshold, count, top}`` or null for a
store that records no redelivery count (vsqs); ``duplicates`` is ``{messages, payloads,
top}``; ``senders`` is null where the store records no sender (vsqs and ddmq never do) and
``notes`` say so.
"""

from __future__ import annotations

import math
from bisect import bisect_right as _bisect
from itertools import accumulate as _accumulate
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ..output.stats_json import iso_utc
from ..states import MESSAGE_STATES, READY, STATES

SCHEMA = "qconsole.report/2"
DEFAULT_POISON_THRESHOLD = 3
#: poison candidates listed per queue in summary.json (all of them are in the Parquet)
POISON_LIST_CAP = 100
#: most duplicated payloads listed per queue
DUPLICATE_LIST_CAP = 5
#: queues listed under ``oldest_backlog``
OLDEST_BACKLOG = 10
PERCENTILES = (0.5, 0.95, 0.99)
#: qshape's age buckets (Postfix): upper bounds in minutes, the last one open
AGE_BUCKET_MINUTES = (5, 10, 20, 40, 80, 160)
AGE_BUCKET_LABELS = ("0-5m", "5-10m", "10-20m", "20-40m", "40-80m", "80-160m", "160m+")
#: bucket upper bounds in seconds: age < bound[i] falls in bucket i, else the last
AGE_BOUNDS_S: tuple[int, ...] = tuple(m * 60 for m in AGE_BUCKET_MINUTES)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = timedelta(microseconds=1)


def age_bucket(age: float) -> int:
    for i, bound in enumerate(AGE_BOUNDS_S):
        if age < bound:
            return i
    return len(AGE_BOUNDS_S)


def histogram_doc(counts: Sequence[int]) -> list[dict[str, Any]]:
    lows = (0, *AGE_BOUNDS_S)
    highs = (*AGE_BOUNDS_S, None)
    return [
        {"bucket": label, "min_s": lo, "max_s": hi, "count": int(n)}
        for label, lo, hi, n in zip(AGE_BUCKET_LABELS, lows, highs, counts)
    ]


def percentile(values: Sequence[float], p: float) -> float | None:
    """Exact percentile with linear interpolation between closest ranks (Spark's ``percentile``)."""
    if not values:
        return None
    ordered = sorted(values)
    return _pct_sorted(ordered, p)


def _pct_sorted(ordered: Sequence[float], p: float) -> float | None:
    if not ordered:
        return None
    pos = p * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(ordered[lo])
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def spread(values: Sequence[float | None], top: float | None) -> dict[str, float | None]:
    """``{p50, p95, p99, max}`` from the PERCENTILES values (in order) and the maximum."""
    out = {f"p{round(p * 100)}": _r(v) for p, v in zip(PERCENTILES, values)}
    out["max"] = _r(top)
    return out


def poison_list(items: Iterable[tuple[str | None, int]]) -> list[dict[str, Any]]:
    """Highest count first, then by id; capped at POISON_LIST_CAP."""
    ordered = sorted(items, key=lambda t: (-t[1], t[0] or ""))
    return [{"id": i, "redeliveries": c} for i, c in ordered[:POISON_LIST_CAP]]


def duplicate_list(items: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """Most copies first, then by hash; capped at DUPLICATE_LIST_CAP."""
    ordered = sorted(items, key=lambda t: (-t[1], t[0]))
    return [{"sha256": h, "count": n} for h, n in ordered[:DUPLICATE_LIST_CAP]]


def empty_stats(name: str, layout: str, redelivery: str | None, threshold: int) -> dict[str, Any]:
    """One queue's stats before any message is counted (also what an empty queue reports)."""
    counts = dict.fromkeys(STATES, 0)
    counts["total"] = 0
    none = spread([None] * len(PERCENTILES), None)
    return {
        "name": name, "layout": layout, "counts": counts,
        "age_histogram": histogram_doc([0] * (len(AGE_BOUNDS_S) + 1)),
        "percentiles": {"age_s": dict(none), "size_bytes": dict(none)},
        "oldest_ready_age_s": None, "bytes": 0, "errors": 0,
        "poison": None if redelivery is None else {"field": redelivery, "threshold": threshold, "count": 0, "top": []},
        "duplicates": {"messages": 0, "payloads": 0, "top": []},
        "senders": None,
    }


def _us_of(value: Any) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return (value - _EPOCH) // _US




class QueuePartial:
    """One queue's summary from part of its inventory: mergeable, so the read tasks each build
    one for the rows they read and the driver adds them up (:meth:`merge`).

    Holds counts, sums and maxima, the age (whole seconds) and payload size **value counts**
    (exact percentiles; as many entries as distinct values, not as messages) and the top
    POISON_LIST_CAP poison candidates. Duplicate payloads need every hash: they are counted
    apart (:class:`DuplicateCounter`), by hash, so the driver never holds them.
    """

    __slots__ = ("counts", "errors", "bytes", "ages", "sizes", "hist", "age_max", "oldest", "poison_n", "poison")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.errors = 0
        self.bytes = 0
        self.ages: Counter[int] = Counter()
        self.sizes: Counter[int] = Counter()
        self.hist = [0] * (len(AGE_BOUNDS_S) + 1)
        self.age_max: float | None = None
        self.oldest: float | None = None
        self.poison_n = 0
        self.poison: list[tuple[int, str]] = []  # (-count, id): sorted, the top of the list first

    def add(
        self, states: Sequence[str | None], ids: Sequence[Any], created: Sequence[int | None],
        sizes: Sequence[int | None], file_bytes: Sequence[int | None], rcs: Sequence[int | None] | None,
        errors: Sequence[str | None], now: float, threshold: int,
    ) -> list[int]:
        """Count one chunk's columns (times in µs); the indexes of its messages (for the hashes)."""
        self.errors += len(errors) - errors.count(None)
        counts = Counter(states)
        counts.pop(None, None)
        self.counts.update(counts)
        if all(s in _MESSAGE_STATES for s in counts):
            idx = range(len(states)) if None not in states else [i for i, s in enumerate(states) if s is not None]
        else:
            idx = [i for i, s in enumerate(states) if s in _MESSAGE_STATES]
        if not idx:
            return []
        whole = isinstance(idx, range) and len(idx) == len(states)
        pick = (lambda col: col) if whole else (lambda col: [col[i] for i in idx])
        hist, ages, floor, bounds = self.hist, self.ages, math.floor, AGE_BOUNDS_S
        m_states = pick(states)
        age_max, oldest = self.age_max, self.oldest
        for state, c in zip(m_states, pick(created)):
            if c is None:
                continue
            age = max(0.0, now - c / 1_000_000)
            ages[floor(age)] += 1  # percentiles over whole seconds
            hist[_bisect(bounds, age)] += 1
            if age_max is None or age > age_max:
                age_max = age
            if state == READY and (oldest is None or age > oldest):
                oldest = age
        self.age_max, self.oldest = age_max, oldest
        m_sizes = pick(sizes)
        self.sizes.update(filter(_NOT_NONE, m_sizes))
        self.bytes += sum(filter(_NOT_NONE, pick(file_bytes)))
        if rcs is not None:
            hits = [(-rc, mid) for rc, mid in zip(pick(rcs), pick(ids)) if rc is not None and rc >= threshold]
            if hits:
                self.poison_n += len(hits)
                self._poison(hits)
        return list(idx)

    def _poison(self, hits: list[tuple[int, Any]]) -> None:
        self.poison = sorted(self.poison + hits, key=_POISON_KEY)[:POISON_LIST_CAP]

    def merge(self, other: QueuePartial) -> None:
        self.counts.update(other.counts)
        self.errors += other.errors
        self.bytes += other.bytes
        self.ages.update(other.ages)
        self.sizes.update(other.sizes)
        self.hist = [a + b for a, b in zip(self.hist, other.hist)]
        for name in ("age_max", "oldest"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None and (mine is None or theirs > mine):
                setattr(self, name, theirs)
        self.poison_n += other.poison_n
        if other.poison:
            self._poison(other.poison)

    def fill(self, st: dict[str, Any], duplicates: tuple[int, int, list[tuple[str, int]]] | None) -> None:
        """Write this summary into ``st`` (the shape of :func:`empty_stats`)."""
        counts = st["counts"]
        for s in STATES:
            counts[s] = int(self.counts.get(s, 0))
        counts["total"] = sum(counts[s] for s in MESSAGE_STATES)
        st["percentiles"] = {
            "age_s": spread(_pct_counts(self.ages), None),
            "size_bytes": spread(_pct_counts(self.sizes), max(self.sizes) if self.sizes else None),
        }
        st["percentiles"]["age_s"]["max"] = _r(self.age_max)  # the exact oldest, not floored
        st["age_histogram"] = histogram_doc(self.hist)
        st["oldest_ready_age_s"] = _r(self.oldest)
        st["bytes"] = self.bytes
        st["errors"] = self.errors
        if st["poison"] is not None:
            st["poison"]["count"] = self.poison_n
            st["poison"]["top"] = poison_list((mid, -neg) for neg, mid in self.poison)
        if duplicates is not None:
            messages, payloads, top = duplicates
            st["duplicates"] = {"messages": messages, "payloads": payloads, "top": duplicate_list(top)}


def _poison_key(item: tuple[int, Any]) -> tuple[int, str]:
    return item[0], item[1] or ""


_POISON_KEY = _poison_key
_MESSAGE_STATES = frozenset(MESSAGE_STATES)


def _not_none(v: Any) -> bool:
    return v is not None


_NOT_NONE = _not_none


def _pct_counts(counts: Counter[int]) -> list[float | None]:
    """The PERCENTILES of the values a value->count map stands for, exactly as :func:`_pct_sorted`
    over the expanded sorted list."""
    total = sum(counts.values())
    if not total:
        return [None] * len(PERCENTILES)
    keys = sorted(counts)
    cum = list(_accumulate(counts[k] for k in keys))  # cum[i]: values with rank < cum[i] are <= keys[i]

    def at(rank: int) -> float:
        return keys[_bisect(cum, rank)]

    out: list[float | None] = []
    for p in PERCENTILES:
        pos = p * (total - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        vlo = at(lo)
        out.append(float(vlo) if lo == hi else vlo + (at(hi) - vlo) * (pos - lo))
    return out


class DuplicateCounter:
    """Copies per payload hash, per queue; :meth:`result` gives ``(messages, payloads, top)``
    over the hashes seen more than once. Fed raw 32-byte digests (the shuffle's form) or hex."""

    def __init__(self) -> None:
        self.by_queue: dict[str, Counter[Any]] = defaultdict(Counter)

    def add(self, queue: str, digests: Iterable[Any]) -> None:
        self.by_queue[queue].update(digests)

    def add_blob(self, queue: str, blob: bytes) -> None:
        """``blob``: 32-byte SHA-256 digests end to end."""
        self.by_queue[queue].update([blob[i : i + 32] for i in range(0, len(blob), 32)])

    def result(self) -> dict[str, tuple[int, int, list[tuple[str, int]]]]:
        out = {}
        for q, counter in self.by_queue.items():
            dups = [(h if isinstance(h, str) else h.hex(), n) for h, n in counter.items() if n > 1]
            out[q] = (sum(n for _h, n in dups), len(dups), sorted(dups, key=lambda t: (-t[1], t[0]))[:DUPLICATE_LIST_CAP])
        return out


def merge_duplicates(parts: Iterable[dict[str, tuple[int, int, list[tuple[str, int]]]]]) -> dict[str, tuple[int, int, list[tuple[str, int]]]]:
    """Add up DuplicateCounter results over disjoint sets of hashes (one per hash bucket)."""
    out: dict[str, tuple[int, int, list[tuple[str, int]]]] = {}
    for part in parts:
        for q, (m, p, top) in part.items():
            m0, p0, top0 = out.get(q, (0, 0, []))
            out[q] = (m0 + m, p0 + p, sorted(top0 + top, key=lambda t: (-t[1], t[0]))[:DUPLICATE_LIST_CAP])
    return out


def stats_from_partials(
    partials: dict[str, QueuePartial],
    duplicates: dict[str, tuple[int, int, list[tuple[str, int]]]],
    queues: Sequence[tuple[str, str, str | None]],
    threshold: int,
) -> list[dict[str, Any]]:
    """Per-queue stats (``queues``' order) from merged partials and duplicate counts."""
    stats = []
    for name, layout, redelivery in queues:
        st = empty_stats(name, layout, redelivery, threshold)
        (partials.get(name) or QueuePartial()).fill(st, duplicates.get(name, (0, 0, [])))
        stats.append(st)
    return stats


def queue_stats_columns(
    chunks: Iterable[Sequence[Sequence[Any]]],
    queues: Sequence[tuple[str, str, str | None]],
    now: float,
    threshold: int,
) -> list[dict[str, Any]]:
    """Per-queue stats from inventory column chunks in ONE process: the pure-Python pass (and
    the reference the Spark job is tested against). The same QueuePartial code as the read
    tasks, one partial per queue, the duplicates counted here by hex digest.

    ``queues`` are ``(name, layout, redelivery column or None)``; times in the columns are µs.
    """
    from .inventory import COLUMN_NAMES

    ix = {name: i for i, name in enumerate(COLUMN_NAMES)}
    redelivery = {name: r for name, _l, r in queues}
    partials: dict[str, QueuePartial] = {}
    dups = DuplicateCounter()
    for cols in chunks:
        add_chunk(partials, dups.add, cols, ix, redelivery, now, threshold)
    return stats_from_partials(partials, dups.result(), queues, threshold)


def add_chunk(
    partials: dict[str, QueuePartial], add_hashes: Any, cols: Sequence[Sequence[Any]], ix: dict[str, int],
    redelivery: dict[str, str | None], now: float, threshold: int,
) -> None:
    """Count one chunk's columns into ``partials`` (by queue; a chunk is normally one queue)
    and pass its messages' hashes to ``add_hashes(queue, digests)``."""
    qcol = cols[ix["queue"]]
    if not qcol:
        return
    first = qcol[0]
    if qcol.count(first) == len(qcol):
        groups = [(first, cols)]
    else:  # rows of several queues (queue_stats over rows): one group per queue
        by_q: dict[str, list[int]] = defaultdict(list)
        for i, q in enumerate(qcol):
            by_q[q].append(i)
        groups = [(q, [[c[i] for i in idx] for c in cols]) for q, idx in by_q.items()]
    for q, gc in groups:
        if q not in redelivery:
            continue
        field = redelivery[q]
        part = partials.get(q)
        if part is None:
            part = partials[q] = QueuePartial()
        idx = part.add(
            gc[ix["state"]], gc[ix["id"]], gc[ix["created_at"]], gc[ix["size_bytes"]], gc[ix["file_bytes"]],
            gc[ix[field]] if field is not None else None, gc[ix["error"]], now, threshold,
        )
        sha = gc[ix["payload_sha256"]]
        hashes = [sha[i] for i in idx]
        add_hashes(q, [h for h in hashes if h is not None])


def queue_stats(
    rows: Iterable[Sequence[Any]], queues: Sequence[tuple[str, str, str | None]], now: float, threshold: int
) -> list[dict[str, Any]]:
    """:func:`queue_stats_columns` over row tuples (times as datetimes or µs)."""
    from .inventory import COLUMN_NAMES

    rows = list(rows)
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(14)]
    for name in ("created_at", "expires_at"):
        i = COLUMN_NAMES.index(name)
        cols[i] = list(map(_us_of, cols[i]))
    return queue_stats_columns([cols], queues, now, threshold)


def totals(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"queues": len(stats)}
    for key in (*STATES, "total"):
        out[key] = sum(s["counts"][key] for s in stats)
    for key in ("bytes", "errors"):
        out[key] = sum(s[key] for s in stats)
    hist = [0] * (len(AGE_BOUNDS_S) + 1)
    for s in stats:
        for i, b in enumerate(s["age_histogram"]):
            hist[i] += b["count"]
    out["age_histogram"] = histogram_doc(hist)
    recorded = [s["poison"] for s in stats if s["poison"] is not None]
    out["poison_count"] = sum(p["count"] for p in recorded) if recorded else None
    out["duplicate_messages"] = sum(s["duplicates"]["messages"] for s in stats)
    return out


def oldest_backlog(stats: Sequence[dict[str, Any]], n: int = OLDEST_BACKLOG) -> list[dict[str, Any]]:
    """Queues whose oldest ready message is oldest, first."""
    waiting = [s for s in stats if s["oldest_ready_age_s"] is not None]
    waiting.sort(key=lambda s: (-s["oldest_ready_age_s"], s["name"]))
    return [
        {"name": s["name"], "oldest_ready_age_s": s["oldest_ready_age_s"], "ready": s["counts"][READY]}
        for s in waiting[:n]
    ]


def store_notes(layout: str, redelivery: str | None, records_sender: bool) -> list[str]:
    """What this store does not record, said once rather than shown as zeros."""
    notes = []
    if not records_sender:
        notes.append(f"{layout} does not record who sent a message: no top senders")
    if redelivery is None:
        notes.append(f"{layout} does not count redeliveries: no poison candidates")
    return notes


def report_document(
    *,
    root: str,
    layout: str,
    stats: Sequence[dict[str, Any]],
    engine: dict[str, Any],
    generated_at: float,
    threshold: int,
    outputs: dict[str, str | None],
    root_errors: Sequence[str] = (),
    notes: Sequence[str] = (),
    trends: list[dict[str, Any]] | None = None,
    history: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "root": root,
        "layout": layout,
        "engine": engine,
        "generated_at": iso_utc(generated_at),
        "poison_threshold": threshold,
        "age_buckets": [
            {k: b[k] for k in ("bucket", "min_s", "max_s")} for b in histogram_doc([0] * (len(AGE_BOUNDS_S) + 1))
        ],
        "queues": list(stats),
        "totals": totals(stats),
        "oldest_backlog": oldest_backlog(stats),
        "notes": list(notes),
        "outputs": outputs,
        "errors": list(root_errors),
    }
    if trends is not None:
        doc["trends"] = trends
        doc["history"] = history or {}
    return doc
