"""Reading one message's content for peek and analysis: never changes any state.

Opens with O_NOFOLLOW|O_NONBLOCK and checks for a regular file, so a symlink, FIFO or
device named like a message can neither redirect the read nor block it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from .errors import MessageNotFoundError, QConsoleError
from .model import Message
from .states import DDMQ

#: peek shows at most this much of a payload unless asked for all of it
DEFAULT_CAP = 64 * 1024
#: a ddmq file is parsed as JSON only up to this size; beyond, it is shown capped as text
MAX_PARSE = 16 * 1024 * 1024

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

    def text(self) -> str:
        return self.body.decode("utf-8", errors="backslashreplace")

    def pretty(self) -> str:
        """Pretty JSON when it parses, the text otherwise, a hex dump for binary."""
        if self.kind == JSON and self.parsed is not None:
            return json.dumps(self.parsed, indent=2, ensure_ascii=False)
        if self.kind == BINARY:
            return hexdump(self.body)
        return self.text()


def read_file_bytes(path: str, limit: int | None) -> tuple[bytes, int]:
    """Up to ``limit`` bytes (all when None) of a regular file, and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise MessageNotFoundError(f"{os.path.basename(path)}: gone (consumed or moved meanwhile)") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise QConsoleError(f"{os.path.basename(path)}: is a symlink, not followed") from None
        raise QConsoleError(f"{os.path.basename(path)}: {err.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise QConsoleError(f"{os.path.basename(path)}: not a regular file")
        want = st.st_size if limit is None else min(limit, st.st_size)
        chunks = []
        got = 0
        while got < want:
            chunk = os.read(fd, min(1 << 20, want - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


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


def read_payload(queue_dir: str, msg: Message, cap: int | None = DEFAULT_CAP) -> Payload:
    """The payload of ``msg`` (a file under ``queue_dir``), capped at ``cap`` bytes (None: all)."""
    path = os.path.join(queue_dir, msg.relpath)
    if msg.layout != DDMQ:
        data, size = read_file_bytes(path, None if cap is None else cap + 1)
        kind, shown, _t, parsed = _from_body(data, cap)
        return Payload(kind, shown, size, size, size > len(shown), parsed=parsed)

    data, size = read_file_bytes(path, MAX_PARSE)
    try:
        doc = json.loads(data) if size <= MAX_PARSE else None
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or "message" not in doc:
        # ddmq writes non-atomically: a half-written or foreign file is shown as it is
        kind, shown, _t, parsed = _from_body(data, cap)
        why = "file too large to parse" if size > MAX_PARSE else "not a complete ddmq JSON message (half-written or corrupt)"
        return Payload(kind, shown, size, size, size > len(shown), error=why, parsed=parsed)
    message = doc.pop("message")
    if isinstance(message, str):
        body = message.encode("utf-8", errors="surrogatepass")
    else:  # a producer may have published a non-string; show it as JSON
        body = json.dumps(message).encode()
    kind, shown, truncated, parsed = _from_body(body, cap)
    return Payload(kind, shown, len(body), size, truncated, fields=doc, parsed=parsed)


def hexdump(data: bytes, width: int = 16) -> str:
    """Classic offset / hex / ASCII lines; non-printables shown as dots."""
    lines = []
    for off in range(0, len(data), width):
        chunk = data[off : off + width]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}  {hexpart:<{width * 3 - 1}}  {text}")
    return "\n".join(lines)
