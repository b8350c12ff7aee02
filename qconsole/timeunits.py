"""Timestamps as the clients write them: VSQS ids/deadlines in s, ms, µs or ns by digit count."""

from __future__ import annotations

MICRO = 1_000_000.0
MILLI = 1_000.0


def vsqs_divisor(digits: str) -> float:
    """Divisor turning a VSQS timestamp into seconds, judged from its digit count.

    vsqs 0.3 writes 16-digit microseconds; its README promises 13-digit milliseconds.
    Until the year 2286 epoch seconds have 10 digits, so the width tells the unit.
    """
    n = len(digits)
    if n >= 18:
        return 1e9
    if n >= 15:
        return MICRO
    if n >= 12:
        return MILLI
    return 1.0


def vsqs_seconds(digits: str) -> float:
    return int(digits) / vsqs_divisor(digits)


def ddmq_created(queue_number: str) -> float | None:
    """ddmq's queue_number is ``str(time.time())`` without the dot: 10 digits of seconds, then a fraction."""
    if len(queue_number) < 10:
        return None
    return float(queue_number[:10] + "." + (queue_number[10:] or "0"))
