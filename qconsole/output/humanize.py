"""Short human forms of ages, countdowns, sizes and times (shared by tables and the TUI)."""

from __future__ import annotations

import math
import time


def duration(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``2h07m``, ``3d04h``, from 1000 days years (``2y270d``, ``3114y``: a planted
    deadline of a million days read ``1136623d16h``, cut in a column); ``-`` for None."""
    if seconds is None or not -1e15 < seconds < 1e15:  # (also NaN and infinities: planted values)
        return "-"
    s = int(round(seconds))
    sign = "-" if s < 0 else ""
    s = abs(s)
    if s < 60:
        return f"{sign}{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{sign}{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{sign}{h}h{m:02d}m"
    d, h = divmod(h, 24)
    if d < 1000:
        return f"{sign}{d}d{h:02d}h"
    y, d = divmod(d, 365)
    if y < 100:
        return f"{sign}{y}y{d:03d}d"
    return f"{sign}{y}y" if y < 100_000 else f"{sign}>99999y"


def fit(n: float, width: int) -> str:
    """A count or rate in at most ``width`` characters: exact while it fits (a rate of 100 and
    more whole, below that one decimal), else in k/M/G/T/P with as many decimals as fit
    (``1.00M``, ``12k``). A fixed-width table column must never cut a digit off instead."""
    if not math.isfinite(n):
        return "?"
    exact = f"{n:.0f}" if n >= 100 or float(n).is_integer() else f"{n:.1f}"
    if len(exact) <= width:
        return exact
    sign = "-" if n < 0 else ""
    value = abs(n)
    for suffix in "kMGTPE":
        value /= 1000
        for decimals in (2, 1, 0):
            mantissa = f"{value:.{decimals}f}"
            if mantissa.startswith("0."):
                mantissa = mantissa[1:]  # ".3M": 300k in 3 cells
            if 0 < float(mantissa) < 1000 and len(sign) + len(mantissa) + 1 <= width:
                return f"{sign}{mantissa}{suffix}"
    return "∞"[:width] or ""


def size(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def clock(ts: float | None, *, utc: bool = False) -> str:
    """A timestamp as ``YYYY-mm-dd HH:MM:SS`` (local time unless utc)."""
    if ts is None:
        return "-"
    try:  # (the time module, not datetime: ~1.5 ms less start-up for `ls`)
        secs = math.floor(ts)
        if round((ts - secs) * 1e6) >= 1_000_000:  # datetime rounds to the microsecond first
            secs += 1
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(secs) if utc else time.localtime(secs))
    except (OverflowError, OSError, ValueError):
        from datetime import datetime, timezone  # beyond the C library's range: as datetime says

        try:
            return datetime.fromtimestamp(ts, tz=timezone.utc if utc else None).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):  # beyond year 9999 (a planted figure)
            return "out of range"
