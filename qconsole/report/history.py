"""Backlog history: the JSON lines ``qconsole stats --json --watch N >> FILE`` appends.

Parsed here in plain Python (a history file usually lives on the operator's machine, not on
the cluster's shared file system); the Spark job aggregates the samples into hourly trends.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from ..errors import QConsoleError

#: one sample: (at, queue, layout, ready, inflight, expired, oldest_ready_age_s)
SAMPLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("at", "timestamp"),
    ("queue", "string"),
    ("layout", "string"),
    ("ready", "long"),
    ("inflight", "long"),
    ("expired", "long"),
    ("oldest_ready_age_s", "double"),
)

#: hourly trend rows in DIR/trends/ and summary.json ``trends``
TREND_COLUMNS: tuple[str, ...] = (
    "queue", "hour", "samples", "ready_min", "ready_avg", "ready_max",
    "oldest_ready_age_avg_s", "oldest_ready_age_max_s",
)


#: the largest count a ``long`` column holds
LONG_MAX = 2**63 - 1


def _count(value: Any) -> int | None:
    """A message count, None for what no stats document holds: not a whole number, negative,
    or beyond a Spark ``long`` (which would fail the whole report over one line)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LONG_MAX:
        return None
    return value


def _seconds(value: Any) -> float | None:
    """An age in seconds, None unless a finite non-negative number (JSON's NaN, Infinity, 1e999)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int of hundreds of digits
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def parse_line(line: str) -> list[tuple] | None:
    """Samples of one ``qconsole.stats/1`` document, or None when the line is not one."""
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("qconsole.stats/"):
        return None
    try:
        at = datetime.fromisoformat(str(doc["generated_at"]).replace("Z", "+00:00"))
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        # in UTC, as Spark stores it: 0001-01-01T00:00+14:00 is before year 1 (OverflowError there)
        at = at.astimezone(timezone.utc)
    except (KeyError, ValueError, OverflowError):
        return None
    out = []
    for q in doc.get("queues") or ():
        if not isinstance(q, dict) or not isinstance(q.get("name"), str):
            continue
        out.append((
            at, q["name"], str(q.get("layout") or ""), _count(q.get("ready")),
            _count(q.get("inflight")), _count(q.get("expired")), _seconds(q.get("oldest_ready_age_s")),
        ))
    return out


def read_history(paths: Iterable[str]) -> tuple[list[tuple], dict[str, Any]]:
    """All samples of the given files and what was read: ``{files, lines, samples, skipped_lines}``.

    Lines that are not stats documents (a truncated last line, other output) are skipped and
    counted; a file that cannot be opened is an operator error.
    """
    samples: list[tuple] = []
    info: dict[str, Any] = {"files": [], "lines": 0, "samples": 0, "skipped_lines": 0}
    for path in paths:
        info["files"].append(path)
        try:
            fh = open(path, encoding="utf-8", errors="replace")
        except OSError as err:
            raise QConsoleError(f"history file {path}: {err.strerror or err}") from None
        with fh:
            for line in fh:
                if not line.strip():
                    continue
                info["lines"] += 1
                parsed = parse_line(line)
                if parsed is None:
                    info["skipped_lines"] += 1
                    continue
                samples.extend(parsed)
    info["samples"] = len(samples)
    return samples, info
