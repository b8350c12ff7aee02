"""``qconsole ls``: a queue's messages in delivery order, as a table or the ``qconsole.ls/1`` document.

Shared by the typer command and the typer-free fast path (:mod:`qconsole.fastpath`), so
both print the same thing; errors are raised (QConsoleError, OSError) for the caller to report.
"""

from __future__ import annotations

import sys

from ..errors import QConsoleError
from ..states import STATES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any


def ls_document(handle: Any, queue: str, scan: Any, count: int, shown: list[Any],
                sizes: dict[str, int | None]) -> dict[str, Any]:
    from .stats_json import iso_utc

    now = scan.scanned_at
    return {
        "schema": "qconsole.ls/1",
        "root": handle.target,
        "queue": queue,
        "layout": handle.kind,
        "generated_at": iso_utc(now),
        "count": count,
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
             as_json: bool, grep: str | None = None, since: str | None = None,
             older_than: str | None = None, ids_only: bool = False) -> None:
    """Print ``qconsole ls QUEUE``: ready messages in the consumer's order, then held and writing ones."""
    from ..backends import open_target

    if state is not None and state not in STATES:
        raise QConsoleError(f"unknown state {state!r}: use one of {', '.join(STATES)}")
    if ids_only and as_json:
        raise QConsoleError("give --ids or --json, not both")
    handle = open_target(root, layout)
    # the first --limit rows alone where the store reads them so (RSMQ: from the head of the
    # sorted set, its count from counting), none of them filtered by their fields or payload
    head = handle.list_head(queue, limit, state) if limit and grep is None and since is None \
        and older_than is None else None
    # else the console's columns, not a collected scan: a Message is made only for a row that is
    # filtered by its fields or shown (a million-message queue: a third of the memory)
    cols, total = head if head is not None else (handle.list_messages(queue), None)
    scan = cols.scan
    _write_rows(handle, queue, cols, state=state, limit=limit, as_json=as_json, grep=grep, since=since,
                older_than=older_than, ids_only=ids_only, total=total)
    unread = scan.unread()  # what could be read is shown; a listing that could not be fails the call
    if unread is not None:
        raise QConsoleError(f"{unread}: the list above is incomplete")


def _write_rows(handle: Any, queue: str, cols: Any, *, state: str | None, limit: int | None, as_json: bool,
                grep: str | None, since: str | None, older_than: str | None, ids_only: bool,
                total: int | None = None) -> None:
    """``total``: the whole listing's row count when ``cols`` holds only its head."""
    scan = cols.scan
    rows: Any = range(len(cols))
    if state is not None:
        from itertools import compress

        from ..columns import STATE_CODE

        rows = list(compress(rows, map(STATE_CODE[state].__eq__, cols.states)))
    if since is not None or older_than is not None:
        from ..ops.operations import parse_duration
        from ..search import age_filter

        keep = age_filter(scan.scanned_at, None if since is None else parse_duration(since),
                          None if older_than is None else parse_duration(older_than))
        rows = [i for i in rows if keep(cols[i])]
    if grep is not None:
        from ..search import message_matches

        needle = grep.lower()
        found: list[int] = []
        for i in rows:  # stops reading payloads once --limit messages matched
            if message_matches(handle, cols[i], needle):
                found.append(i)
                if limit and len(found) >= limit:
                    break
        rows = found
    count = len(rows) if total is None else total
    # the entries left out (a FIFO named like a message...); an unread listing ends the call instead
    errors = [e for e in scan.errors if e != scan.unread()]
    # an empty listing says so (a header alone reads like output cut short), off stdout when piped
    filtered = grep is not None or since is not None or older_than is not None
    nothing = (f"no {state + ' ' if state else ''}messages{' match' if filtered else ''}"
               if not count and scan.unread() is None else None)  # (unread: the call ends saying so)
    if ids_only:
        ids = cols.ids
        write_ids([ids[i] for i in (rows[:limit] if limit else rows)], count, scan.warnings, errors)
        if nothing:
            sys.stderr.write(nothing + "\n")
        return
    shown = [cols[i] for i in (rows[:limit] if limit else rows)]
    sizes = handle.message_sizes(queue, shown)
    if as_json:
        from .jsontext import dumps

        sys.stdout.write(dumps(ls_document(handle, queue, scan, count, shown, sizes), pretty=True) + "\n")
        sys.stdout.flush()
        return
    from .plain import to_terminal

    if not to_terminal(sys.stdout):  # a pipe or a file: plain lines, notes on stderr, no Rich
        from .tables import messages_plain

        sys.stdout.write("".join(line + "\n" for line in messages_plain(shown, scan.scanned_at, sizes)))
        sys.stdout.flush()
        if len(shown) < count:
            sys.stderr.write(f"{len(shown)} of {count} shown (--limit)\n")
        if nothing:
            sys.stderr.write(nothing + "\n")
        write_notes(scan.warnings, errors)
        return
    from .tables import messages_terminal

    notes = [f"{len(shown)} of {count} shown (--limit)"] if len(shown) < count else []
    if nothing:
        notes.append(nothing)
    # Rich's table, written without importing Rich where it needs no judgement (start-up time)
    text = None if scan.warnings or errors else messages_terminal(queue, shown, scan.scanned_at, sizes, notes)
    if text is not None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from rich.console import Console
    from rich.text import Text

    from ..safetext import safe_text
    from .tables import messages_table

    console = Console(highlight=False, soft_wrap=False)
    console.print(messages_table(queue, shown, scan.scanned_at, sizes))
    for note in notes:
        console.print(note)
    for kind, style, lines in (("warning", "yellow", scan.warnings), ("error", "red", errors)):
        for line in lines:  # (they name keys and files: never read as markup)
            console.print(Text.assemble((kind, style), " ", safe_text(line, keep_newlines=False)))


def write_notes(warnings: list[str], errors: list[str]) -> None:
    """A listing's warnings and errors (entries named like messages that are not: a FIFO, a
    directory...) on stderr, one line each, controls escaped: stdout stays the listing."""
    from ..safetext import escape_controls

    for kind, lines in (("warning", warnings), ("error", errors)):
        for line in lines:
            sys.stderr.write(f"{kind}: {escape_controls(line, keep_newlines=False)}\n")


def write_ids(ids: list[str], count: int, warnings: list[str], errors: list[str]) -> None:
    """``ls --ids``: one full id a line and nothing else on stdout, what ``requeue``/``delete``/
    ``move`` read back from stdin with ``-``; notes on stderr. An id a line cannot carry is
    left out with a warning, never written raw: RSMQ members are any bytes (a line end or
    other control character, bytes that are not UTF-8, only blanks); file ids never are."""
    fit = [mid for mid in ids if mid.isprintable() and mid.strip()]
    sys.stdout.flush()
    sys.stdout.buffer.write("".join(mid + "\n" for mid in fit).encode())  # UTF-8, whatever the locale: what '-' reads
    sys.stdout.flush()
    if len(ids) < count:
        sys.stderr.write(f"{len(ids)} of {count} shown (--limit)\n")
    if len(fit) < len(ids):
        sys.stderr.write(f"warning: {len(ids) - len(fit)} id(s) left out: control characters, undecodable bytes "
                         "or only blanks cannot be given back one a line\n")
    write_notes(warnings, errors)
