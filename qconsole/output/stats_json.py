"""The ``qconsole stats --json`` document: a contract for monitoring scripts.

Never change its shape without bumping SCHEMA.
"""

from __future__ import annotations

import time

from ..model import QueueScan, RootScan
from ..states import STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


SCHEMA = "qconsole.stats/1"


def iso_utc(ts: float) -> str:
    # time.strftime rather than datetime: the stats path avoids importing datetime
    # as datetime does: round to microseconds, then isoformat(timespec="milliseconds") truncates
    whole = int(ts // 1)
    micros = round((ts - whole) * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, 0
    millis = micros // 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def queue_doc(q: QueueScan, now: float) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": q.name, "layout": q.layout}
    for s in STATES:
        doc[s] = q.counts[s]
    doc["total"] = q.total
    doc["oldest_ready_age_s"] = _round(q.oldest_ready_age(now))
    doc["next_expiry_s"] = _round(q.next_expiry_in(now))
    if q.by_priority is not None:  # stores with priorities (ddmq)
        doc["by_priority"] = q.by_priority
    doc["warnings"] = list(q.warnings)
    doc["errors"] = list(q.errors)
    return doc


def stats_document(scan: RootScan) -> dict[str, Any]:
    now = scan.generated_at
    return {
        "schema": SCHEMA,
        "root": scan.root,
        "layout": scan.layout,
        "generated_at": iso_utc(now),
        "scan_duration_s": round(scan.duration_s, 4),
        "queues": [queue_doc(q, now) for q in scan.queues],
        "totals": {"queues": len(scan.queues), **scan.totals()},
        "errors": list(scan.errors),
    }
