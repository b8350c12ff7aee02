"""Read-only commands: stats, check, ls, peek. None of them changes anything on disk."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from ..errors import QConsoleError, error_line
from ..fastpath import fast_stats, queue_parts, write_stats  # noqa: F401 (fast_stats re-exported)
from ..backends.base import Backend
from ..backends import open_target
from ..states import STATES
from ..payload import WHOLE_CAP
from .app import app
from .common import AuditLogOpt, CheckTypesOpt, JobsOpt, LayoutOpt, QueueArg, ReadOnlyOpt, RootArg, RootOpt, fail, guarded, pick_root, write_error


class Format(str, Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


def _stdout_console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def _dump(doc: Any, pretty: bool) -> str:
    from ..output.jsontext import dumps

    return dumps(doc, pretty=pretty)


def _stats_once(
    handle: Backend, queue: list[str] | None, fmt: Format, *, pretty: bool, check_types: bool, jobs: int | None,
    schema: int = 2,
) -> None:
    each = queue_parts(fmt.value, schema) if pretty else None
    write_stats(handle.scan(queue, check_types=check_types, jobs=jobs, each=each), fmt.value, pretty=pretty, schema=schema)


@app.command()
@guarded
def stats(
    root: RootArg = None,
    root_opt: RootOpt = None,
    json_: Annotated[bool, typer.Option("--json", help="Shorthand for --format json.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    queue: Annotated[Optional[list[str]], typer.Option("--queue", "-q", help="Only this queue (repeatable).")] = None,
    watch: Annotated[Optional[float], typer.Option("--watch", "-w", min=0.1, max=86_400, help="Rescan every N seconds (at most a day); with JSON one document per line.")] = None,
    schema: Annotated[int, typer.Option("--schema", min=1, max=2, help="JSON document version: 2 (with `delayed` and the RSMQ figures) or 1 (as before, for existing scripts).")] = 2,
    check_types: CheckTypesOpt = False,
    jobs: JobsOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Counts by state for every queue: a table, JSON (schema qconsole.stats/2; --schema 1 for /1) or Prometheus text."""
    fmt = Format.json if json_ else fmt
    if watch is not None:
        from ..backends.fs.safety import check_duration

        check_duration(watch, "--watch")  # nan/inf pass typer's min= check
    handle = open_target(pick_root(root, root_opt), layout)

    def once() -> None:
        _stats_once(handle, queue, fmt, pretty=watch is None, check_types=check_types, jobs=jobs, schema=schema)

    if watch is None:
        once()
        return
    if fmt is Format.table and sys.stdout.isatty():
        _watch_table(handle, queue, watch, check_types=check_types, jobs=jobs)
        return
    try:
        _every(watch, once, _say_on_stderr)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _say_on_stderr(line: str | None, every: float) -> None:
    write_error(f"{line} (still watching: trying again every {every:g} s)" if line is not None else "scanning again")


def _every(every: float, once: Any, say: Any) -> None:
    """Run ``once`` every ``every`` seconds until ctrl+c. A watch outlives a failed scan (a
    Redis restart, an NFS hiccup, a root moved away for a moment): ``say(line, every)`` tells
    of a failure once, until it changes, and ``say(None, every)`` of the recovery; only a first
    scan that fails ends the watch (a mistyped root is an error, not something to wait for)."""
    failing: str | None = None
    first = True
    while True:
        started = time.monotonic()
        try:
            once()
        except BrokenPipeError:  # `stats --watch --json | head -1`: the reader is gone
            raise
        except (QConsoleError, OSError) as err:
            if first:
                raise
            line, _code = error_line(err)  # type: ignore[misc]
            if line != failing:
                say(line, every)
            failing = line
        else:
            if failing is not None:
                say(None, every)
            failing = None
        first = False
        time.sleep(max(0.0, every - (time.monotonic() - started)))


def _watch_table(handle: Backend, queue: list[str] | None, every: float, *, check_types: bool, jobs: int | None) -> None:
    """On a terminal, ``stats --watch`` redraws one table in place (like watch(1)) until ctrl+c;
    a failed scan shows its error in the table's place until a scan succeeds again.

    Piped or redirected, it appends a table per scan instead, so a log keeps the history.
    """
    from rich.live import Live
    from rich.text import Text

    from ..output.tables import stats_table
    from ..safetext import safe_text

    console = _stdout_console()
    try:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            def once() -> None:
                live.update(stats_table(handle.scan(queue, check_types=check_types, jobs=jobs)), refresh=True)

            def say(line: str | None, every: float) -> None:
                if line is not None:
                    live.update(Text.assemble(("error", "red"), " ", safe_text(line, keep_newlines=False),
                                              f" (still watching: trying again every {every:g} s)"), refresh=True)

            _every(every, once, say)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@app.command()
@guarded
def check(
    root: RootArg = None,
    root_opt: RootOpt = None,
    queue: Annotated[Optional[list[str]], typer.Option("--queue", "-q", help="Only this queue (repeatable).")] = None,
    warn_ready: Annotated[Optional[int], typer.Option(min=0, help="WARNING at this many ready messages.")] = None,
    crit_ready: Annotated[Optional[int], typer.Option(min=0, help="CRITICAL at this many ready messages.")] = None,
    warn_age: Annotated[Optional[float], typer.Option(min=0, help="WARNING when the oldest ready message is this many seconds old.")] = None,
    crit_age: Annotated[Optional[float], typer.Option(min=0, help="CRITICAL at this oldest-ready age (s).")] = None,
    warn_expired: Annotated[Optional[int], typer.Option(min=0, help="WARNING at this many expired messages.")] = None,
    crit_expired: Annotated[Optional[int], typer.Option(min=0, help="CRITICAL at this many expired messages.")] = None,
    check_types: CheckTypesOpt = False,
    jobs: JobsOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Nagios/Icinga plugin: one status line with perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."""
    from ..fastpath import MAX_AGE_S, check_line

    thresholds = {"warn_ready": warn_ready, "crit_ready": crit_ready, "warn_age": warn_age, "crit_age": crit_age,
                  "warn_expired": warn_expired, "crit_expired": crit_expired}
    for name, value in (("--warn-age", warn_age), ("--crit-age", crit_age)):
        if value is not None and not (math.isfinite(value) and value <= MAX_AGE_S):  # inf passes typer's min=0
            raise typer.BadParameter(f"must be a number of seconds up to {MAX_AGE_S} (100 years), got {value:g}",
                                     param_hint=f"'{name}'")
    code, line = check_line(pick_root(root, root_opt), layout, queue, thresholds, check_types=check_types, jobs=jobs)
    sys.stdout.write(line + "\n")
    raise typer.Exit(code)


@app.command("ls")
@guarded
def ls_(
    queue: QueueArg,
    state: Annotated[Optional[str], typer.Option("--state", "-s", help=f"Only this state ({', '.join(STATES)}).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=1, help="At most N messages.")] = None,
    grep: Annotated[Optional[str], typer.Option("--grep", "-g", help="Only messages whose id, state or payload text contains TEXT (case-insensitive; reads payloads).", show_default=False)] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only messages created within this long (e.g. 30m, 2h).", show_default=False)] = None,
    older_than: Annotated[Optional[str], typer.Option("--older-than", help="Only messages created at least this long ago (e.g. 1h, 7d).", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
    ids: Annotated[bool, typer.Option("--ids", help="Only the full ids, one a line: what requeue, delete and move read from stdin with '-'.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Messages of a queue: ready ones in the order the real consumer takes them, then in-flight by deadline.

    --grep, --since and --older-than find messages the way the console's `/` search does."""
    from ..output.ls_view import write_ls

    write_ls(pick_root(None, root_opt), layout, queue, state=state, limit=limit, as_json=json_,
             grep=grep, since=since, older_than=older_than, ids_only=ids)


def _find(cols: Any, ident: str) -> Any:
    """The message with id or file name ``ident`` in a queue's columns, then a unique id
    prefix (``ls`` shows ddmq ids shortened with '…'); a Message is made only for the hit."""
    from ..backends.base import no_message
    from ..errors import MessageNotFoundError

    i = cols.index_of(ident)
    if i is not None:
        return cols[i]
    for msg in cols:  # by file name (rare): one row at a time, none kept
        if msg.relpath == ident or msg.name == ident:
            return msg
    prefix = ident.rstrip("…")
    hits = [i for i, mid in enumerate(cols.ids) if prefix and mid.startswith(prefix)]
    if len(hits) == 1:
        return cols[hits[0]]
    if len(hits) > 1:
        raise MessageNotFoundError(f"{ident!r} matches {len(hits)} messages in {cols.queue!r}: give more of the id")
    raise no_message(ident, cols.queue)


def _next(cols: Any) -> Any:
    """The message the real consumer takes next: the first ready row (delivery order)."""
    from ..columns import STATE_CODE
    from ..errors import MessageNotFoundError
    from ..states import READY

    i = cols.states.find(STATE_CODE[READY])
    if i >= 0:
        return cols[i]
    raise MessageNotFoundError(f"queue {cols.queue!r} has no ready message")


#: the largest payload ``peek --raw`` writes (read into memory whole first)
RAW_CAP = WHOLE_CAP


@app.command()
@guarded
def peek(
    queue: QueueArg,
    ident: Annotated[Optional[str], typer.Argument(metavar="[ID]", help="Message id or file name; default: the one the consumer takes next.", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="Metadata and payload as JSON.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="The whole payload (up to 1 GiB), bytes as they are (no escaping) when stdout is not a terminal.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Show one message without changing its state: pretty JSON, text, or a hex dump for binary."""
    from ..output.peek_view import peek_document, render_peek
    from ..payload import DEFAULT_CAP
    handle = open_target(pick_root(None, root_opt), layout)
    found = handle.find_messages(queue, [ident]) if ident else None  # the store's own lookup (RSMQ: O(1))
    msg = found.get(ident) if found else None
    if msg is not None:
        scanned_at = handle.now()
    else:  # by listing: a file name, a shortened id, or the next message
        from ..states import READY

        # the next message: the head of the ready ones where the store reads it alone (RSMQ
        # read a million members to show one); else the console's columns, no object per message
        head = None if ident else handle.list_head(queue, 1, READY)
        cols = head[0] if head is not None else handle.list_messages(queue)
        scanned_at = cols.scan.scanned_at
        msg = _find(cols, ident) if ident else _next(cols)
    if raw:  # "no cap" within reason: a planted file of gigabytes is not read into memory
        size = handle.message_sizes(queue, [msg]).get(msg.relpath)
        if size is not None and size > RAW_CAP:
            raise QConsoleError(f"{msg.name}: {size:,} bytes; --raw writes at most {RAW_CAP >> 20} MiB")
    payload = handle.read_payload(msg, RAW_CAP if raw else DEFAULT_CAP)
    if raw and payload.truncated:
        if payload.size > RAW_CAP:
            raise QConsoleError(f"{msg.name}: {payload.size:,} bytes; --raw writes at most {RAW_CAP >> 20} MiB")
        # under the cap, yet cut: the store could read only part of it (a ddmq file too large to parse)
        raise QConsoleError(f"{msg.name}: {payload.error or 'not readable whole'} ({payload.file_size:,} bytes): "
                            "its payload cannot be written whole (copy the file itself)")
    if json_:
        sys.stdout.write(_dump(peek_document(handle, msg, payload), pretty=True) + "\n")
        return
    if raw and not sys.stdout.isatty():
        sys.stdout.buffer.write(payload.body)
        sys.stdout.flush()
        return
    _stdout_console().print(render_peek(msg, payload, scanned_at))
