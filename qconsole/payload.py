"""Reading one message's content for peek and analysis: never changes any state.

Store-neutral: a backend reads the bytes (safely: see its own module) and builds a
:class:`Payload` with the functions here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


#: peek shows at most this much of a payload unless asked for all of it
DEFAULT_CAP = 64 * 1024
#: a ddmq file is parsed as JSON only up to this size; beyond, it is shown capped as text
MAX_PARSE = 16 * 1024 * 1024
#: the most of one payload read whole into memory (``peek --raw``, the console's ``s``)
WHOLE_CAP = 1 << 30

JSON, TEXT, BINARY = "json", "text", "binary"


@dataclass
class Payload:
    """A message's body and what is known about it."""

    kind: str  # json | text | binary
    body: bytes  # the (possibly capped) payload bytes
    size: int  # full payload size in bytes
    file_size: int
    truncated: bool
    #: ddmq's other fields (priority, requeue_counter, timeout, ...)
    fields: dict[str, Any] = field(default_factory=dict)
    #: set when the file was not what its layout promises (corrupt JSON, ...)
    error: str | None = None
    parsed: Any = None  # the payload parsed as JSON, when kind == json and not truncated
    #: how often the store delivered it again (ddmq requeue_counter, RSMQ receive count); None: unknown
    redeliveries: int | None = None

    def text(self) -> str:
        return self.body.decode("utf-8", errors="backslashreplace")

    def pretty(self) -> str:
        """Pretty JSON when it parses, the text otherwise, a hex dump for binary."""
        if self.kind == JSON and self.parsed is not None:
            return json.dumps(self.parsed, indent=2, ensure_ascii=False)
        if self.kind == BINARY:
            return hexdump(self.body)
        return self.text()


def classify(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        return BINARY
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        # a cap can cut a multi-byte character: that alone is not binary
        if err.start < len(data) - 4:
            return BINARY
    return TEXT


def _from_body(body: bytes, cap: int | None) -> tuple[str, bytes, bool, Any]:
    truncated = cap is not None and len(body) > cap
    shown = body[:cap] if truncated else body
    kind = classify(shown)
    parsed = None
    if kind == TEXT and not truncated:
        try:
            parsed = json.loads(body)
            if isinstance(parsed, (dict, list)):
                kind = JSON
            else:
                parsed = None
        except (ValueError, RecursionError):
            parsed = None
    return kind, shown, truncated, parsed


def payload_from_bytes(data: bytes, size: int, cap: int | None) -> Payload:
    """A payload that is the whole file (``data`` read with one byte more than ``cap``)."""
    kind, shown, _t, parsed = _from_body(data, cap)
    return Payload(kind, shown, size, size, size > len(shown), parsed=parsed)


def payload_of_body(body: bytes, file_size: int, cap: int | None, fields: dict[str, Any]) -> Payload:
    """A payload that is one part of a stored record (ddmq's ``message``, an RSMQ body) with
    the record's other ``fields`` beside it."""
    kind, shown, truncated, parsed = _from_body(body, cap)
    return Payload(kind, shown, len(body), file_size, truncated, fields=fields, parsed=parsed)


def hexdump(data: bytes, width: int = 16) -> str:
    """Classic offset / hex / ASCII lines; non-printables shown as dots."""
    lines = []
    for off in range(0, len(data), width):
        chunk = data[off : off + width]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}  {hexpart:<{width * 3 - 1}}  {text}")
    return "\n".join(lines)
