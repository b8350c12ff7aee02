"""The state words, the same everywhere: JSON, TUI, docs."""

from __future__ import annotations

READY = "ready"
INFLIGHT = "inflight"
EXPIRED = "expired"
WRITING = "writing"
FOREIGN = "foreign"

#: Every state, in display order.
STATES: tuple[str, ...] = (READY, INFLIGHT, EXPIRED, WRITING, FOREIGN)
#: States that are messages (``total`` counts these; foreign files are not messages).
MESSAGE_STATES: tuple[str, ...] = (READY, INFLIGHT, EXPIRED, WRITING)

VSQS = "vsqs"
DDMQ = "ddmq"
LAYOUTS: tuple[str, ...] = (VSQS, DDMQ)
