"""``qconsole ls``: a queue's messages in delivery order, as a table or the ``qconsole.ls/1`` document.

Shared by the typer command and the typer-free fast path (:mod:`qconsole.fastpath`), so
both print the same thing; errors are raised (QConsoleError, OSError) for the caller to report.
"""

from __future__ import annotations

import os
import sys

from ..errors import QConsoleError
from ..states import STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


def _sizes(queue_dir: str, relpaths: list[str]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for rel in relpaths:
        try:
            out[rel] = os.lstat(os.path.join(queue_dir, rel)).st_size
        except OSError:
            out[rel] = None  # consumed or moved since the listing
    return out


def ls_document(handle: Any, queue: str, scan: Any, msgs: list[Any], shown: list[Any],
                sizes: dict[str, int | None]) -> dict[str, Any]:
    from .stats_json import iso_utc

    now = scan.scanned_at
    return {
        "schema": "qconsole.ls/1",
        "root": handle.path,
        "queue": queue,
        "layout": handle.kind,
        "generated_at": iso_utc(now),
        "count": len(msgs),
        "shown": len(shown),
        "messages": [
            {
                "position": i + 1 if m.state == "ready" else None,
                "id": m.id,
                "state": m.state,
                "file": m.relpath,
                "priority": m.priority,
                "created_at": None if m.created_at is None else iso_utc(m.created_at),
                "deadline": None if m.deadline is None else iso_utc(m.deadline),
                "expires_in_s": None if m.deadline is None else round(m.deadline - now, 3),
                "size_bytes": sizes.get(m.relpath),
            }
            for i, m in enumerate(shown)
        ],
        "warnings": scan.warnings,
        "errors": scan.errors,
    }


def write_ls(root: str | None, layout: str, queue: str, *, state: str | None, limit: int | None,
             as_json: bool) -> None:
    """Print ``qconsole ls QUEUE``: ready messages in the consumer's order, then held and writing ones."""
    from ..backends import open_target

    if state is not None and state not in STATES:
        raise QConsoleError(f"unknown state {state!r}: use one of {', '.join(STATES)}")
    handle = open_target(root, layout)
    scan = handle.scan_queue(queue, collect=True)
    msgs = [m for m in scan.messages or () if state is None or m.state == state]
    shown = msgs[:limit] if limit else msgs
    sizes = _sizes(handle.queue_path(queue), [m.relpath for m in shown])
    if as_json:
        from .jsontext import dumps

        sys.stdout.write(dumps(ls_document(handle, queue, scan, msgs, shown, sizes), pretty=True) + "\n")
        sys.stdout.flush()
        return
    from rich.console import Console

    from .tables import messages_table

    console = Console(highlight=False, soft_wrap=False)
    console.print(messages_table(queue, shown, scan.scanned_at, sizes))
    if len(shown) < len(msgs):
        console.print(f"{len(shown)} of {len(msgs)} shown (--limit)")
    for w in scan.warnings:
        console.print(f"[yellow]warning[/] {w}")
