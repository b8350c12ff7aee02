"""The bodies of the changing commands ``requeue``, ``delete``, ``purge``, ``move`` and
``trash restore``, shared
by the typer CLI (:mod:`qconsole.cli.ops`) and the typer-free path (:mod:`qconsole.fastpath`).

typer and the pydantic behind it take ~0.15 s to start: more than the change itself on most
queues, and half of a 20k-message requeue by the client's own code. Scripts run these commands
per id in loops. So the console script runs the forms that need no prompt here, and both
paths run the same code below: same checks in the same order, same lines, same exit codes.
Errors are raised (QConsoleError, OSError) for the caller to turn into one line.
"""

from __future__ import annotations

import sys
import time

from .errors import QConsoleError
from .safetext import escape_controls, safe_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: the longest line '-' takes from stdin: ids and file names in a queue are far shorter (NAME_MAX is 255)
MAX_ID_LINE = 4096
#: lines '-' reads at most: `yes | qconsole requeue q -` ends with one error line, not an endless read
MAX_STDIN_IDS = 10_000_000
#: what :func:`purge` takes for ``--state``
PURGE_STATES = ("ready", "inflight", "expired")


class UsageError(QConsoleError):
    """A command given something it cannot do (one line on stderr, exit 2)."""


class Progress:
    """``requeue: 12000/100000 (12%)`` on stderr, redrawn in place, for bulk changes on a terminal.
    Counts are written as the question before and the summary after write them (no separators):
    ``Purge 60000 message(s)?``, ``purge: 30720/60000``, ``purge q: 60000 done``.

    Drawn only after ``delay`` seconds (a quick change shows nothing) and at most every
    ``every`` seconds; :meth:`close` erases the line before the summary is printed.
    """

    def __init__(self, action: str, stream: Any, *, delay: float = 0.3, every: float = 0.1) -> None:
        self.action, self.stream, self.delay, self.every = action, stream, delay, every
        self.clock = time.monotonic
        self.started = self.clock()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.started < self.delay or now - self.last < self.every or total < 1:
            return
        self.last = now
        self.stream.write(f"\r{self.action}: {done}/{total} ({done * 100 // total}%)\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def open_ops(root_opt: str | None, layout: str, read_only: bool, audit_log: str | None, *,
             refuse: str | None = None) -> Any:
    """An Operations handle; read-only refuses here, before the root is even scanned.

    On a terminal (stderr), bulk changes draw a progress line (see :class:`Progress`)."""
    from .backends import open_target, pick_root
    from .ops import Operations, ReadOnlyError

    if read_only and refuse:
        raise ReadOnlyError(f"read-only mode: {refuse} refused (drop --read-only / unset QCONSOLE_READ_ONLY)")
    ops = Operations(open_target(pick_root(None, root_opt), layout), read_only=read_only, audit_log=audit_log)
    if refuse and sys.stderr.isatty():
        ops.root.progress = Progress(refuse, sys.stderr)
    return ops


def say(line: str) -> None:
    sys.stdout.write(escape_controls(line, keep_newlines=False) + "\n")


def report(ops: Any, result: Any, verbose_skips: bool = True) -> None:
    progress = getattr(ops.root, "progress", None)
    if progress is not None:
        progress.close()
    say(result.summary())
    if verbose_skips:
        for mid, reason in result.skipped[:50]:
            say(f"  skipped {safe_name(mid)}: {reason}")
        if len(result.skipped) > 50:
            say(f"  ... and {len(result.skipped) - 50} more skipped")
    for w in ops.warnings:
        sys.stderr.write(f"qconsole: warning: {escape_controls(w, keep_newlines=False)}\n")


#: stdin up to this size is read whole and checked in a few C passes (100k ids: ~3 MB)
BULK_STDIN = 8 << 20


def read_ids(stream: Any) -> list[str]:
    """Ids from a binary stream, one a line: only the line end (LF or CRLF) is stripped and
    blank lines skipped; repeats are kept (the operation takes each message once). Anything
    that is not a list of ids is refused with one line: a NUL byte, a line over
    MAX_ID_LINE bytes, bytes that are not UTF-8, more than MAX_STDIN_IDS lines.

    Up to BULK_STDIN bytes of plain ids (no CR, no NUL, UTF-8, short lines) are taken in a
    few C passes over the whole; anything else, line by line (:func:`_read_id_lines`, which
    says what is wrong and where)."""
    head = stream.read(BULK_STDIN) or b""  # (None: a non-blocking stdin with nothing yet, as before)
    if len(head) < BULK_STDIN and b"\0" not in head and b"\r" not in head:
        try:
            lines = head.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            lines = None
        if lines is not None:
            if not lines[-1]:
                lines.pop()  # the last line's end
            if len(lines) <= MAX_STDIN_IDS and (not lines or max(map(len, lines)) <= MAX_ID_LINE // 4):
                return list(filter(str.strip, lines))  # (a character is at most 4 bytes)
    return _read_id_lines(_Rejoined(head, stream))


class _Rejoined:
    """``readline`` over ``head`` (what was read already), then the rest of ``stream``."""

    def __init__(self, head: bytes, stream: Any) -> None:
        import io

        self.head, self.stream = io.BytesIO(head), stream

    def readline(self, limit: int) -> bytes:
        line = self.head.readline(limit)
        if line.endswith(b"\n") or len(line) >= limit:
            return line
        return line + self.stream.readline(limit - len(line))


def _read_id_lines(stream: Any) -> list[str]:
    """:func:`read_ids` line by line."""
    ids: list[str] = []
    for n in range(1, MAX_STDIN_IDS + 2):
        line = stream.readline(MAX_ID_LINE + 2)  # bounded: a 1 GB "line" is never held
        if not line:
            return ids
        if n > MAX_STDIN_IDS:
            raise UsageError(f"more than {MAX_STDIN_IDS:,} lines on stdin: give the ids in parts")
        body = line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
        if len(body) > MAX_ID_LINE:
            raise UsageError(f"stdin line {n:,} is longer than {MAX_ID_LINE} bytes: not a message id")
        if b"\0" in body:
            raise UsageError(f"stdin line {n:,} holds a NUL byte: give ids one a line (not -print0 output)")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"stdin line {n:,} is not UTF-8 text: not a message id") from None
        if text.strip():
            ids.append(text)
    return ids


def given_ids(ops: Any, action: str, queues: tuple[str, ...], ids: list[str] | None, *,
              confirmed: bool = True) -> tuple[list[str] | None, str] | None:
    """``ids`` as typed, or for a lone ``-`` the ids on stdin (see :func:`read_ids`): argv is
    capped at ~2 MB, a script's selection of 100k messages is not. Nothing on stdin: says
    ``0 done`` and returns None (the command is over: an empty selection in a pipeline is
    not an error).

    With them what the operation does with an id not in the queue (``missing=``): typed ones
    fail the command (a typo must not silently do nothing); ones on stdin are a selection
    listed earlier, of which a live queue consumes some before the change: skipped."""
    if not ids or "-" not in ids:
        return ids or None, "fail"
    if len(ids) > 1:
        raise UsageError("give '-' alone (ids on stdin) or the ids themselves, not both")
    if sys.stdin is None or sys.stdin.isatty():
        raise UsageError("'-' reads ids from stdin, which is a terminal: pipe them in (e.g. qconsole ls QUEUE --ids | ...)")
    if not confirmed:  # the prompt would read stdin, which holds the ids
        raise UsageError(f"refusing to {action} ids from stdin without a terminal to confirm: add --yes")
    read = read_ids(sys.stdin.buffer)
    if not read:
        for q in queues:
            ops.root.require_queue(q)  # an unknown queue is still an error
        say(f"{action} {queues[0]}: 0 done (no ids on stdin)")
        return None
    return read, "skip"


# ---------------------------------------------------------------------------------- commands
# ``confirm(question)`` asks on the terminal and raises when the answer is no; without one a
# change that must ask is refused (the typer-free path runs only the forms that never ask).
# ``confirm(None)`` asks nothing: it only refuses when there is no terminal to ask on.

def requeue(queue: str, ids: list[str] | None, expired: bool, all_: bool, root_opt: str | None, layout: str,
            read_only: bool, audit_log: str | None) -> None:
    ops = open_ops(root_opt, layout, read_only, audit_log, refuse="requeue")
    given = given_ids(ops, "requeue", (queue,), ids)
    if given is not None:
        report(ops, ops.requeue(queue, given[0], expired_only=expired, all_held=all_, missing=given[1]))


def _no_prompt(question: str | None) -> None:
    raise UsageError("refusing without a terminal to confirm: add --yes")


def delete(queue: str, ids: list[str], yes: bool, no_trash: bool, root_opt: str | None, layout: str,
           read_only: bool, audit_log: str | None, confirm: Callable[[str | None], None] = _no_prompt) -> None:
    ops = open_ops(root_opt, layout, read_only, audit_log, refuse="delete")
    ops.root.require_queue(queue)  # unknown queue: say so before asking (not a count of 100k)
    given = given_ids(ops, "delete", (queue,), ids, confirmed=yes)
    if given is None:
        return
    picked = given[0] or []
    if not yes:  # (only typed ids get here: ids on stdin need --yes)
        confirm(None)  # no terminal to ask on: refused before the ids are looked up
        # an id not in the queue fails before the question, and a repeat is counted once
        n = len(ops.delete_candidates(queue, picked))
        how = "for good" if no_trash else "to the trash"
        confirm(f"Delete {n} message(s) from {safe_name(queue)} {how}?")
    report(ops, ops.delete(queue, picked, trash=not no_trash, missing=given[1]))


def purge(queue: str, state: str | None, yes: bool, no_trash: bool, root_opt: str | None, layout: str,
          read_only: bool, audit_log: str | None, confirm: Callable[[str | None], None] = _no_prompt) -> None:
    ops = open_ops(root_opt, layout, read_only, audit_log, refuse="purge")
    if state is not None and state not in PURGE_STATES:
        raise UsageError(f"purge --state takes one of {', '.join(PURGE_STATES)}, not {state!r}")
    if not yes:  # (with --yes nothing asks: the purge's own listing is the only one)
        # the same listing the purge itself takes: a count by names alone can include non-messages
        n = len(ops.purge_candidates(queue, state))
        how = "for good" if no_trash else "to the trash"
        confirm(f"Purge {n} {state or ''} message(s) of {safe_name(queue)} {how}?".replace("  ", " "))
    report(ops, ops.purge(queue, state=state, trash=not no_trash), verbose_skips=False)


def move(src: str, dest: str, ids: list[str] | None, all_: bool, state: str | None, root_opt: str | None,
         layout: str, read_only: bool, audit_log: str | None) -> None:
    ops = open_ops(root_opt, layout, read_only, audit_log, refuse="move")
    given: tuple[list[str] | None, str] | None = (ids or None, "fail")
    if not (all_ or state):  # beside --all/--state, '-' is refused by the operation ("one of them")
        given = given_ids(ops, "move", (src, dest), ids)
    if given is not None:
        report(ops, ops.move(src, dest, given[0], all_=all_, state=state, missing=given[1]))


def trash_restore(batch: str | None, root_opt: str | None, layout: str, read_only: bool, audit_log: str | None) -> None:
    ops = open_ops(root_opt, layout, read_only, audit_log, refuse="trash restore")
    report(ops, ops.trash_restore(batch))
