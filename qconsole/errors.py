"""Errors the core raises, their exit codes, and the one mapping from an error to the line an
operator reads (:func:`error_line`), shared by the CLI, the typer-free fast path and the TUI."""

from __future__ import annotations


class ExitCode:
    """What ``qconsole`` exits with (``check`` uses Nagios' own 0/1/2/3 instead). Plain ints,
    not an IntEnum: importing enum (with functools and collections) is ~4 ms of every start."""

    OK = 0
    CANCELLED = 1  # the operator said no at a prompt
    PROBLEMS = 1  # done, but some things are left for a person to look at (recover)
    ERROR = 2  # bad input, missing root, refused operation: one line on stderr
    INTERRUPTED = 130  # ctrl+c
    INTERNAL = 70  # a bug: one line instead of a traceback (EX_SOFTWARE)


class QConsoleError(Exception):
    """An operator-facing error: ``str(err)`` is the one line shown."""

    exit_code: int = ExitCode.ERROR


def internal_error_line(err: BaseException) -> str:
    """The last resort's line for an error no one expected (exit :attr:`ExitCode.INTERNAL`)."""
    return f"internal error: {err.__class__.__name__}: {err} (QCONSOLE_DEBUG=1 for details)"


def error_line(err: BaseException) -> tuple[str, int] | None:
    """(one line, exit code) for an error an operator can act on; None for a bug (a traceback
    is then the right thing). The line is not yet escaped for a terminal."""
    if isinstance(err, QConsoleError):
        return str(err) + _before(err), int(err.exit_code)
    if isinstance(err, PermissionError):
        return f"permission denied: {err.filename or err}" + _before(err), ExitCode.ERROR
    if isinstance(err, OSError):
        where = f"{err.filename}: " if err.filename else ""
        return f"{where}{err.strerror or err}" + _before(err), ExitCode.ERROR
    return None


def _before(err: BaseException) -> str:
    """What a change that stopped on ``err`` had done (``err.partial``, set by the operation)."""
    partial = getattr(err, "partial", None)
    return f"; stopped after: {partial.summary()}" if partial is not None else ""


def interrupted_line(err: BaseException) -> str | None:
    """The line a change stopped by ctrl+c leaves on stderr: what it had done (None: nothing)."""
    partial = getattr(err, "partial", None)
    return f"interrupted: {partial.summary()}" if partial is not None else None


class RootError(QConsoleError):
    """The root is missing, unreadable, or holds neither layout."""


class QueueNameError(QConsoleError):
    """A queue name that could escape the root or is not a plain name."""


class UnknownQueueError(QConsoleError):
    """The named queue does not exist under the root."""


class MessageNotFoundError(QConsoleError):
    """No message with that id (it may have been consumed meanwhile)."""


class SettingsError(QConsoleError):
    """Settings that cannot be read or parsed, or a value that is not valid."""


class OperationError(QConsoleError):
    """An operation refused before it changed anything (bad input, no permission, ...)."""
