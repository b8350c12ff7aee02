"""The ``qconsole stats --json`` document: a contract for monitoring scripts.

Never change its shape without bumping SCHEMA.
"""

from __future__ import annotations

import time

from ..model import QueueScan, RootScan
from .jsontext import _emit, _Fallback, _float, _string, dumps_pretty
from ..states import DELAYED, STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


SCHEMA = "qconsole.stats/2"
#: the previous document, still printed by ``--schema 1``: no ``delayed`` state, no RSMQ figures
SCHEMA_V1 = "qconsole.stats/1"
SCHEMAS = {1: SCHEMA_V1, 2: SCHEMA}


def iso_utc(ts: float) -> str | None:
    """``ts`` as ISO 8601 UTC to the millisecond; None (JSON null) for a time no calendar
    holds (a planted figure: infinite, or past year 9999)."""
    # time.strftime rather than datetime: the stats path avoids importing datetime
    # as datetime does: round to microseconds, then isoformat(timespec="milliseconds") truncates
    try:
        whole = int(ts // 1)
        micros = round((ts - whole) * 1e6)
        if micros >= 1_000_000:
            whole, micros = whole + 1, 0
        millis = micros // 1000
        stamp = time.gmtime(whole)
    except (OverflowError, OSError, ValueError):
        return None
    if stamp.tm_year > 9999:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", stamp) + f".{millis:03d}Z"


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


def stats_document(scan: RootScan, version: int = 2, *, with_queues: bool = True) -> dict[str, Any]:
    """The document of schema ``qconsole.stats/<version>`` (2, or 1 for existing scripts);
    ``with_queues=False`` leaves ``queues`` empty (for :func:`render_pretty`)."""
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
        "queues": [queue_doc(q, now, version) for q in scan.queues] if with_queues else [],
        "totals": {"queues": len(scan.queues), **totals},
        "errors": list(scan.errors),
    }


_TRIPLE = ("ready", "inflight", "expired")  # ddmq's figures per priority
_TRIPLE_TEXT = ": {" + ",".join(f'\n          "{k}": %d' for k in _TRIPLE) + "\n        }"
#: version -> (its states, the %-template of a queue's leading fields)
_TEMPLATES: dict[int, tuple[tuple[str, ...], str]] = {}


def _template(version: int) -> tuple[tuple[str, ...], str]:
    got = _TEMPLATES.get(version)
    if got is None:
        states = _states(version)
        head = "".join(f',\n      "{s}": %d' for s in states)
        got = _TEMPLATES[version] = (states, '{\n      "name": %s,\n      "layout": %s' + head
                                     + ',\n      "total": %d,\n      "oldest_ready_age_s": %s,\n      "next_expiry_s": %s')
    return got


def _sub(value: Any, pad: str = "\n      ") -> str:
    out: list[str] = []
    _emit(value, out, pad)
    return "".join(out)


def _priorities(by: dict[str, dict[str, int]]) -> str:
    """ddmq's ``{priority: {state: count}}``, the usual shape written directly."""
    parts = []
    for prio, figures in by.items():
        if type(prio) is str and type(figures) is dict and len(figures) == 3:
            try:
                values = figures["ready"], figures["inflight"], figures["expired"]
            except KeyError:
                values = None
            # the same keys in the same order, and plain ints (%d would print True as 1)
            if values is not None and type(values[0]) is int and type(values[1]) is int \
                    and type(values[2]) is int and tuple(figures) == _TRIPLE:
                parts.append(_string(prio) + _TRIPLE_TEXT % values)
                continue
        if type(prio) is not str or type(figures) is not dict or not figures \
                or any(type(k) is not str or type(v) is not int for k, v in figures.items()):
            return _sub(by)
        inner = ",\n          ".join([_string(k) + ": " + int.__repr__(v) for k, v in figures.items()])
        parts.append(_string(prio) + ": {\n          " + inner + "\n        }")
    return "{\n        " + ",\n        ".join(parts) + "\n      }" if parts else "{}"


def _lines(values: list[str]) -> str:
    """A queue's warnings or errors: a list of strings, the usual case, written directly."""
    if not values:
        return "[]"
    if all(type(v) is str for v in values):
        return "[\n        " + ",\n        ".join(map(_string, values)) + "\n      ]"
    return _sub(list(values))


def queue_text(q: QueueScan, now: float, version: int = 2) -> str | None:
    """One queue's part of the pretty document, exactly as the generic writer indents it in
    ``queues``; None for a value only the generic writer may decide on (then the whole
    document goes that way). Plain text: a forked scanner can write its own queues' parts."""
    states, template = _template(version)
    counts = q.counts
    try:
        values = [counts[s] for s in states]
        total = q.total if version >= 2 else sum(counts[s] for s in states if s != "foreign")
        if type(q.name) is not str or type(q.layout) is not str or set(map(type, values)) - {int} \
                or type(total) is not int:
            return _sub(queue_doc(q, now, version), "\n    ")  # unusual values: the generic writer decides
        age, expiry = _round(q.oldest_ready_age(now)), _round(q.next_expiry_in(now))
        text = template % (_string(q.name), _string(q.layout), *values, total,
                           "null" if age is None else _float(age), "null" if expiry is None else _float(expiry))
        if q.by_priority is not None:
            text += ',\n      "by_priority": ' + _priorities(q.by_priority)
        if q.extras is not None and version >= 2:
            text += ",\n      " + _string(q.layout) + ": " + _sub(dict(q.extras))
        text += ',\n      "warnings": ' + _lines(q.warnings) + ',\n      "errors": ' + _lines(q.errors)
    except (_Fallback, RecursionError, TypeError, KeyError, ValueError):
        return None
    return text + "\n    }"


def render_pretty(scan: RootScan, version: int = 2, parts: list[str | None] | None = None) -> str:
    """``dumps(stats_document(scan, version), pretty=True)``, byte for byte, with each queue's
    part written straight from its scan (:func:`queue_text`): a root of 2,000 queues is
    otherwise ~20 µs of dict building and generic encoding per queue, as long as listing it.
    ``parts``: those texts already written (by the processes that scanned the queues, with
    this ``version`` and the scan's time), one per queue. A test checks equality."""
    doc = stats_document(scan, version, with_queues=False)
    text = dumps_pretty(doc)
    if not scan.queues:
        return text
    now = scan.generated_at
    if parts is None or len(parts) != len(scan.queues):
        parts = [queue_text(q, now, version) for q in scan.queues]
    if None in parts:  # a value the fast writer does not know: the standard answer (or error)
        return dumps_pretty(stats_document(scan, version))
    # `"queues": []` at two spaces of indent can only be the top-level key (JSON strings hold no newline)
    return text.replace('\n  "queues": []', '\n  "queues": [\n    ' + ",\n    ".join(parts) + "\n  ]", 1)
