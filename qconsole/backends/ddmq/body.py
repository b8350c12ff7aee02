"""The one decoder of a ddmq message file's JSON (peek, changes and the report all use it)."""

from __future__ import annotations

import json
from typing import Any


def parse(data: bytes) -> dict[str, Any] | None:
    """The message's JSON object, or None when the file is not one (half-written, corrupt,
    not UTF-8, nested beyond the parser's depth, or JSON that is not an object)."""
    try:  # decoding first skips json's encoding detection; bad UTF-8 is a ValueError too
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def message_bytes(doc: dict[str, Any]) -> bytes:
    """The payload a ddmq consumer gets (``message``), as bytes; a producer that published a
    non-string is shown (and hashed) in its JSON form."""
    message = doc.get("message")
    if isinstance(message, str):
        return message.encode("utf-8", errors="surrogatepass")
    return json.dumps(message).encode()
