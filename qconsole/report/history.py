"""Backlog history: the JSON lines ``qconsole stats --json --watch N >> FILE`` appends.

Parsed here in plain Python (a history file usually lives on the operator's machine, not on
the cluster's shared file system); the Spark job aggregates the samples into hourly trends.
"""

from __future__ import annotations

import json
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


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


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
    except (KeyError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
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
