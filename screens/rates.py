"""Per-queue history kept between root scans: rates in/out and the backlog sparkline.

Pure Python (no Textual), so it is tested on its own. Rates are estimates between two
scans: from message ids when the queue is small enough to list them, from the change of
the total otherwise (then only the net flow is visible).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from qconsole.model import QueueScan
from qconsole.output import humanize

SPARK = "▁▂▃▄▅▆▇█"
#: how many backlog samples the sparkline keeps
HISTORY = 12


def sparkline(values: list[int], width: int = 8) -> str:
    """The last ``width`` values as block characters, scaled to the largest one."""
    vals = values[-width:]
    if not vals:
        return ""
    top = max(vals)
    if top <= 0:
        return SPARK[0] * len(vals)
    return "".join(SPARK[min(len(SPARK) - 1, round(v / top * (len(SPARK) - 1)))] for v in vals)


@dataclass
class QueueHistory:
    """What one queue looked like at the previous scans."""

    backlog: deque[int] = field(default_factory=lambda: deque(maxlen=HISTORY))
    last_total: int | None = None
    last_ids: frozenset[str] | None = None
    last_at: float | None = None
    rate_in: float | None = None
    rate_out: float | None = None

    def add(self, scan: QueueScan, at: float, ids: frozenset[str] | None = None) -> None:
        """Record one scan taken at ``at`` (epoch s); ``ids`` are every message id when known."""
        total = scan.total
        if self.last_at is not None and at > self.last_at:
            dt = at - self.last_at
            if ids is not None and self.last_ids is not None:
                self.rate_in = len(ids - self.last_ids) / dt
                self.rate_out = len(self.last_ids - ids) / dt
            elif self.last_total is not None:
                delta = total - self.last_total
                self.rate_in = max(0, delta) / dt
                self.rate_out = max(0, -delta) / dt
        self.backlog.append(scan.counts.get("ready", 0))
        self.last_total = total
        self.last_ids = ids
        self.last_at = at

    def spark(self, width: int = 8) -> str:
        return sparkline(list(self.backlog), width)


def rate_text(rate: float | None, width: int | None = None) -> str:
    """Messages a second: whole from 100, else one decimal; shortened (``12k``) to ``width``."""
    if rate is None:
        return "-"
    text = f"{rate:.0f}" if round(rate, 1) >= 100 else f"{rate:.1f}"  # 99.96: "100", not "100.0"
    if width is not None and len(text) > width:
        return humanize.fit(rate, width)
    return text
