"""What a screen may ask of the application, without importing it (no import circle).

Screens reach the app only through :func:`services` (typed under ``TYPE_CHECKING``), and
report back with messages; the app module imports the screens, never the other way round.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from textual.dom import DOMNode

    from .app import QConsoleApp


def services(node: DOMNode) -> QConsoleApp:
    """The running app, typed: its clock, roots, read-only flag, operations and message log."""
    return node.app  # type: ignore[return-value]
