"""Peek rendered for a terminal (Rich) and as JSON."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from ..model import Message
from ..payload import BINARY, JSON, WHOLE_CAP, Payload
from ..safetext import safe_text
from . import humanize
from .stats_json import iso_utc

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..backends.base import Backend


def metadata(msg: Message, payload: Payload, now: float) -> list[tuple[str, str]]:
    """(label, value) pairs shown beside a payload; values are untrusted, escape before display."""
    rows = [("queue", msg.queue), ("id", msg.id), ("state", msg.state), ("file", msg.relpath)]
    if msg.priority_text is not None:
        rows.append(("priority", msg.priority_text))
    rows.append(("created", humanize.clock(msg.created_at)))
    if msg.deadline is not None:
        left = msg.deadline - now
        rows.append(("deadline", f"{humanize.clock(msg.deadline)} ({'in ' + humanize.duration(left) if left > 0 else humanize.duration(-left) + ' ago'})"))
    if getattr(msg, "rc", None) is not None:  # RSMQ: receive count and first receive (epoch ms)
        rows.append(("received", f"{msg.rc} time(s)"))
        fr = getattr(msg, "fr", None)
        if fr:
            rows.append(("first received", humanize.clock(fr / 1000.0)))
    rows.append(("size", humanize.size(payload.size)))
    rows.append(("kind", payload.kind))
    for key in ("requeue_counter", "requeue_limit", "requeue", "timeout", "queue_number"):
        if key in payload.fields:
            rows.append((key, field_text(key, payload.fields[key])))
    return rows


#: what ddmq does with a field it finds empty (None, 0, false: its tests are ``if not x``)
_EMPTY_MEANS = {"requeue_limit": "no limit", "timeout": "the queue's message_timeout"}
#: the most of one field's value shown beside a payload (a planted file can hold anything)
FIELD_CAP = 200


def field_text(key: str, value: Any) -> str:
    """A ddmq message field as its file holds it (JSON: ``null``, ``true``, not Python's
    ``None``/``True``), with what ddmq makes of an empty limit or timeout."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) > FIELD_CAP:
        text = text[:FIELD_CAP] + "…"
    if key in _EMPTY_MEANS and not isinstance(value, str) and value in (None, 0):
        text += f" ({_EMPTY_MEANS[key]})"
    return text


def render_peek(msg: Message, payload: Payload, now: float) -> "RenderableType":
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    meta = Table.grid(padding=(0, 2))
    meta.add_column(style="bold")
    meta.add_column(overflow="fold")  # a file name is shown whole, folded if it must
    for label, value in metadata(msg, payload, now):
        meta.add_row(label, safe_text(value, keep_newlines=False))
    parts: list[Any] = [meta, Text("")]
    if payload.error:
        parts.append(Text(f"warning: {payload.error}", style="yellow"))
    body = payload.pretty()
    if payload.kind == JSON:
        from ..safetext import escape_controls
        from rich.syntax import Syntax  # Syntax never parses markup; controls escaped first

        parts.append(Syntax(escape_controls(body), "json", theme="ansi_dark", word_wrap=True, background_color="default"))
    else:
        text = safe_text(body)
        text.end = "\n"  # safe_text ends without one; the shell prompt must not follow the payload
        parts.append(text)
    if payload.truncated:
        parts.append(Text(f"\n… showing {humanize.size(len(payload.body))} of {humanize.size(payload.size)} (--raw for all)", style="dim"))
    return Group(*parts)


def peek_document(root: "Backend", msg: Message, payload: Payload) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "qconsole.peek/1",
        "root": root.target,
        "queue": msg.queue,
        "layout": msg.layout,
        "id": msg.id,
        "state": msg.state,
        "file": msg.relpath,
        "priority": msg.priority,
        "created_at": None if msg.created_at is None else iso_utc(msg.created_at),
        "deadline": None if msg.deadline is None else iso_utc(msg.deadline),
        "size_bytes": payload.size,
        "kind": payload.kind,
        "truncated": payload.truncated,
        "fields": payload.fields,
        "error": payload.error,
    }
    if getattr(msg, "rc", None) is not None:  # RSMQ
        fr = getattr(msg, "fr", None)
        doc["receive_count"] = msg.rc
        doc["first_received_at"] = iso_utc(fr / 1000.0) if fr else None
    if payload.kind == BINARY:
        doc["payload_base64"] = base64.b64encode(payload.body).decode()
    elif payload.kind == JSON and payload.parsed is not None:
        doc["payload"] = payload.parsed
    else:
        doc["payload"] = payload.text()
    return doc


#: the most ``s`` saves, read into memory whole first: what ``qconsole peek --raw`` writes
SAVE_CAP = WHOLE_CAP


def save_payload(backend: Backend, msg: Message, path: str) -> int:
    """Write a message's whole payload (up to SAVE_CAP) to a new file ``path``; its size.

    Refused (QConsoleError, no file made) when the payload is larger than SAVE_CAP or the store
    could not read it whole (a ddmq file too large to parse): the first part saved under
    "saved" read as the whole message. Never overwrites (O_EXCL) and never follows a link at
    ``path``; the file is private (0600): payloads may hold what the queue's readers alone
    should see.
    """
    import os

    from ..errors import QConsoleError

    too_big = f"{msg.name}: {{}} ({{:,}} bytes); s saves at most {humanize.size(SAVE_CAP)}"
    size = backend.message_sizes(msg.queue, [msg]).get(msg.relpath)
    if size is not None and size > SAVE_CAP:  # never read a planted file of gigabytes into memory
        raise QConsoleError(too_big.format(humanize.size(size), size))
    payload = backend.read_payload(msg, SAVE_CAP)
    if payload.truncated:
        if payload.size > SAVE_CAP:
            raise QConsoleError(too_big.format(humanize.size(payload.size), payload.size))
        # smaller than the cap, yet cut: the store could read only part of it
        raise QConsoleError(f"{msg.name}: {payload.error or 'not readable whole'} ({humanize.size(payload.file_size)}"
                            f", {humanize.size(len(payload.body))} read): its payload cannot be saved whole"
                            " (copy the file itself)")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(payload.body)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return len(payload.body)
