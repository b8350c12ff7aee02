"""Finding messages by text and by age: the same rules for `qconsole ls --grep` and the TUI's `/`.

A message matches when the text (case-insensitive) is in its id, equals its state word, or is
in its payload as text (the payload read up to ``SEARCH_CAP`` bytes through the backend; JSON
also as the console shows it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .backends.base import Backend
    from .model import Message
    from .payload import Payload

#: bytes of a payload searched
SEARCH_CAP = 64 * 1024


def matches_without_payload(msg: Message, needle: str) -> bool:
    """``needle`` (lower-case) in the id, or the state word itself."""
    return needle in msg.id.lower() or needle == msg.state


def payload_matches(payload: Payload | None, needle: str) -> bool:
    """``needle`` in the payload's text as stored or, for JSON, as the console shows it: the
    list's preview compact (``{"i":4999}``), peek indented (``"i": 4999``, a pair as one line
    with Python's separators). Text copied from any of them finds the message."""
    if payload is None:
        return False
    if needle in payload.text().lower():
        return True
    if payload.parsed is None:
        return False
    import json

    return any(needle in json.dumps(payload.parsed, ensure_ascii=False, separators=seps).lower()
               for seps in ((",", ":"), (", ", ": ")))


def message_matches(backend: Backend, msg: Message, needle: str, cap: int = SEARCH_CAP) -> bool:
    """Whether ``msg`` matches ``needle`` (lower-case); a message gone meanwhile does not."""
    from .errors import QConsoleError

    if matches_without_payload(msg, needle):
        return True
    try:
        return payload_matches(backend.read_payload(msg, cap), needle)
    except (QConsoleError, OSError):
        return False


def age_filter(now: float, since_s: float | None, older_than_s: float | None) -> Callable[[Message], bool]:
    """Keep messages created within the last ``since_s`` seconds and at least ``older_than_s`` ago."""

    def keep(msg: Message) -> bool:
        if msg.created_at is None:
            return since_s is None and older_than_s is None
        age = now - msg.created_at
        if since_s is not None and age > since_s:
            return False
        return not (older_than_s is not None and age < older_than_s)

    return keep
