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




def queue_stats_columns(
    chunks: Iterable[Sequence[Sequence[Any]]],
    queues: Sequence[tuple[str, str, str | None]],
    now: float,
    threshold: int,
) -> list[dict[str, Any]]:
    """Per-queue stats from inventory column chunks, in plain Python (what Spark computes).

    ``queues`` are ``(name, layout, redelivery column or None)``; times in the columns are µs.
    """
    from .inventory import COLUMN_NAMES

    ix = {name: i for i, name in enumerate(COLUMN_NAMES)}
    stats = {name: empty_stats(name, layout, redelivery, threshold) for name, layout, redelivery in queues}
    ages: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, list[int]] = defaultdict(list)
    hists: dict[str, list[int]] = defaultdict(lambda: [0] * (len(AGE_BOUNDS_S) + 1))
    hashes: dict[str, Counter[str]] = defaultdict(Counter)
    poison: dict[str, list[tuple[str | None, int]]] = defaultdict(list)
    oldest: dict[str, float] = {}
    age_max: dict[str, float] = {}
    message_states = frozenset(MESSAGE_STATES)
    for cols in chunks:
        for q, state, mid, created, size, fb, rc, digest, error in zip(
            cols[ix["queue"]], cols[ix["state"]], cols[ix["id"]], cols[ix["created_at"]],
            cols[ix["size_bytes"]], cols[ix["file_bytes"]], cols[ix["requeue_counter"]],
            cols[ix["payload_sha256"]], cols[ix["error"]],
        ):
            st = stats.get(q)
            if st is None:
                continue
            if error is not None:
                st["errors"] += 1
            if state is None:
                continue
            st["counts"][state] += 1
            if state not in message_states:
                continue
            created = _us_of(created)
            if created is not None:
                age = max(0.0, now - created / 1_000_000)
                ages[q].append(math.floor(age))  # percentiles over whole seconds, as Spark's query
                hists[q][age_bucket(age)] += 1
                if q not in age_max or age > age_max[q]:
                    age_max[q] = age
                if state == READY and (q not in oldest or age > oldest[q]):
                    oldest[q] = age
            if size is not None:
                sizes[q].append(size)
            if fb is not None:
                st["bytes"] += fb
            if digest is not None:
                hashes[q][digest] += 1
            if rc is not None and rc >= threshold:
                poison[q].append((mid, rc))
    for q, st in stats.items():
        st["counts"]["total"] = sum(st["counts"][s] for s in MESSAGE_STATES)
        a, s = sorted(ages.get(q, [])), sorted(sizes.get(q, []))
        st["percentiles"] = {
            "age_s": spread([_pct_sorted(a, p) for p in PERCENTILES], None),
            "size_bytes": spread([_pct_sorted(s, p) for p in PERCENTILES], s[-1] if s else None),
        }
        st["percentiles"]["age_s"]["max"] = _r(age_max.get(q))  # the exact oldest, not floored
        st["age_histogram"] = histogram_doc(hists[q])
        st["oldest_ready_age_s"] = _r(oldest.get(q))
        dups = [(h, n) for h, n in hashes[q].items() if n > 1]
        st["duplicates"] = {"messages": sum(n for _h, n in dups), "payloads": len(dups), "top": duplicate_list(dups)}
        if st["poison"] is not None:
            st["poison"]["count"] = len(poison[q])
            st["poison"]["top"] = poison_list(poison[q])
    return list(stats.values())


def queue_stats(
    rows: Iterable[Sequence[Any]], queues: Sequence[tuple[str, str, str | None]], now: float, threshold: int
) -> list[dict[str, Any]]:
    """:func:`queue_stats_columns` over row tuples (times as datetimes or µs)."""
    rows = list(rows)
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(14)]
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
