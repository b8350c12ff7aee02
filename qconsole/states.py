"""The state words, the same everywhere: JSON, TUI, docs."""

from __future__ import annotations

READY = "ready"
INFLIGHT = "inflight"
EXPIRED = "expired"
#: RSMQ: sent with a delay, never received, not visible yet
DELAYED = "delayed"
WRITING = "writing"
FOREIGN = "foreign"

#: Every state, in display order.
STATES: tuple[str, ...] = (READY, INFLIGHT, EXPIRED, DELAYED, WRITING, FOREIGN)
#: States that are messages (``total`` counts these; foreign files are not messages).
MESSAGE_STATES: tuple[str, ...] = (READY, INFLIGHT, EXPIRED, DELAYED, WRITING)

VSQS = "vsqs"
DDMQ = "ddmq"
RSMQ = "rsmq"
#: the file layouts (a directory root); RSMQ is a Redis target
LAYOUTS: tuple[str, ...] = (VSQS, DDMQ)
