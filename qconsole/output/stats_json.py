"""The ``qconsole stats --json`` document: a contract for monitoring scripts.

Never change its shape without bumping SCHEMA.
"""

from __future__ import annotations

import time

from ..model import QueueScan, RootScan
from ..states import DELAYED, STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


SCHEMA = "qconsole.stats/2"
#: the previous document, still printed by ``--schema 1``: no ``delayed`` state, no RSMQ figures
SCHEMA_V1 = "qconsole.stats/1"
SCHEMAS = {1: SCHEMA_V1, 2: SCHEMA}


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


def _states(version: int) -> tuple[str, ...]:
    return STATES if version >= 2 else tuple(s for s in STATES if s != DELAYED)


def queue_doc(q: QueueScan, now: float, version: int = 2) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": q.name, "layout": q.layout}
    states = _states(version)
    for s in states:
        doc[s] = q.counts[s]
    # /1's total is the sum of its own state fields (it never had `delayed`)
    doc["total"] = q.total if version >= 2 else sum(q.counts[s] for s in states if s != "foreign")
    doc["oldest_ready_age_s"] = _round(q.oldest_ready_age(now))
    doc["next_expiry_s"] = _round(q.next_expiry_in(now))
    if q.by_priority is not None:  # stores with priorities (ddmq)
        doc["by_priority"] = q.by_priority
    if q.extras is not None and version >= 2:  # a store's own figures, under its kind's name (rsmq)
        doc[q.layout] = dict(q.extras)
    doc["warnings"] = list(q.warnings)
    doc["errors"] = list(q.errors)
    return doc


def stats_document(scan: RootScan, version: int = 2) -> dict[str, Any]:
    """The document of schema ``qconsole.stats/<version>`` (2, or 1 for existing scripts)."""
    now = scan.generated_at
    totals = scan.totals()
    if version < 2:
        totals.pop(DELAYED, None)
        totals["total"] -= scan.totals()[DELAYED]
    return {
        "schema": SCHEMAS[version],
        "root": scan.root,
        "layout": scan.layout,
        "generated_at": iso_utc(now),
        "scan_duration_s": round(scan.duration_s, 4),
        "queues": [queue_doc(q, now, version) for q in scan.queues],
        "totals": {"queues": len(scan.queues), **totals},
        "errors": list(scan.errors),
    }
