"""The ``summary.json`` document (schema ``qconsole.report/1``) and a pure-Python summary.

The Spark job and the pure-Python pass (benchmark, tests) both produce per-queue stats in the
shape of :func:`queue_stats`; :func:`report_document` turns them into the document. Never
change the document's shape without bumping SCHEMA.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ..output.stats_json import iso_utc
from ..states import MESSAGE_STATES, READY, STATES

SCHEMA = "qconsole.report/1"
DEFAULT_POISON_THRESHOLD = 3
#: poison candidates listed per queue in summary.json (all of them are in the Parquet)
POISON_LIST_CAP = 100
#: queues listed under ``oldest_backlog``
OLDEST_BACKLOG = 10
PERCENTILES = (0.5, 0.95)


def percentile(values: Sequence[float], p: float) -> float | None:
    """Exact percentile with linear interpolation between closest ranks (Spark's ``percentile``)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = p * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(ordered[lo])
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 3)


def spread(p50: float | None, p95: float | None, top: float | None) -> dict[str, float | None]:
    return {"p50": _r(p50), "p95": _r(p95), "max": _r(top)}


def empty_stats(name: str, layout: str) -> dict[str, Any]:
    counts = dict.fromkeys(STATES, 0)
    counts["total"] = 0
    return {
        "name": name, "layout": layout, "counts": counts,
        "percentiles": {"age_s": spread(None, None, None), "size_bytes": spread(None, None, None)},
        "oldest_ready_age_s": None, "bytes": 0, "errors": 0,
        "poison_count": 0, "poison": [], "duplicates": 0,
    }


def poison_list(items: Iterable[tuple[str | None, int]]) -> list[dict[str, Any]]:
    """Highest requeue_counter first, then by id; capped at POISON_LIST_CAP."""
    ordered = sorted(items, key=lambda t: (-t[1], t[0] or ""))
    return [{"id": i, "requeue_counter": c} for i, c in ordered[:POISON_LIST_CAP]]


def queue_stats(
    rows: Iterable[Sequence[Any]], queues: Sequence[tuple[str, str]], now: float, threshold: int
) -> list[dict[str, Any]]:
    """Per-queue stats from inventory rows, in one pass of plain Python (what Spark computes)."""
    from .inventory import COLUMN_NAMES

    ix = {name: i for i, name in enumerate(COLUMN_NAMES)}
    stats = {name: empty_stats(name, layout) for name, layout in queues}
    ages: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, list[int]] = defaultdict(list)
    hashes: dict[str, Counter[str]] = defaultdict(Counter)
    poison: dict[str, list[tuple[str | None, int]]] = defaultdict(list)
    for row in rows:
        q = row[ix["queue"]]
        st = stats.get(q)
        if st is None:
            continue
        state = row[ix["state"]]
        if row[ix["error"]] is not None:
            st["errors"] += 1
        if state is None:
            continue
        st["counts"][state] += 1
        if state not in MESSAGE_STATES:
            continue
        created = row[ix["created_at"]]
        if created is not None:
            age = max(0.0, now - created.timestamp())
            ages[q].append(age)
            if state == READY and (st["oldest_ready_age_s"] is None or age > st["oldest_ready_age_s"]):
                st["oldest_ready_age_s"] = age
        size = row[ix["size_bytes"]]
        if size is not None:
            sizes[q].append(size)
        fb = row[ix["file_bytes"]]
        if fb is not None:
            st["bytes"] += fb
        digest = row[ix["payload_sha256"]]
        if digest is not None:
            hashes[q][digest] += 1
        rc = row[ix["requeue_counter"]]
        if rc is not None and rc >= threshold:
            poison[q].append((row[ix["id"]], rc))
    for q, st in stats.items():
        st["counts"]["total"] = sum(st["counts"][s] for s in MESSAGE_STATES)
        a, s = ages.get(q, []), sizes.get(q, [])
        st["percentiles"] = {
            "age_s": spread(percentile(a, 0.5), percentile(a, 0.95), max(a) if a else None),
            "size_bytes": spread(percentile(s, 0.5), percentile(s, 0.95), max(s) if s else None),
        }
        st["oldest_ready_age_s"] = _r(st["oldest_ready_age_s"])
        st["duplicates"] = sum(n for n in hashes[q].values() if n > 1)
        st["poison_count"] = len(poison[q])
        st["poison"] = poison_list(poison[q])
    return list(stats.values())


def totals(stats: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"queues": len(stats)}
    for key in (*STATES, "total"):
        out[key] = sum(s["counts"][key] for s in stats)
    for key in ("bytes", "errors", "poison_count", "duplicates"):
        out[key] = sum(s[key] for s in stats)
    return out


def oldest_backlog(stats: Sequence[dict[str, Any]], n: int = OLDEST_BACKLOG) -> list[dict[str, Any]]:
    """Queues whose oldest ready message is oldest, first."""
    waiting = [s for s in stats if s["oldest_ready_age_s"] is not None]
    waiting.sort(key=lambda s: (-s["oldest_ready_age_s"], s["name"]))
    return [
        {"name": s["name"], "oldest_ready_age_s": s["oldest_ready_age_s"], "ready": s["counts"][READY]}
        for s in waiting[:n]
    ]


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
        "queues": list(stats),
        "totals": totals(stats),
        "oldest_backlog": oldest_backlog(stats),
        "outputs": outputs,
        "errors": list(root_errors),
    }
    if trends is not None:
        doc["trends"] = trends
        doc["history"] = history or {}
    return doc
