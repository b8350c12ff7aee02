"""Errors the core raises; the CLI turns each into one line on stderr."""

from __future__ import annotations


class QConsoleError(Exception):
    """An operator-facing error: ``str(err)`` is the one line shown."""

    exit_code: int = 2


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
