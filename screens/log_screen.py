"""`L`: the session's notifications, newest first (toasts vanish and are cut at 80 columns)."""

from __future__ import annotations

from typing import NamedTuple

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from qconsole.output import humanize
from qconsole.safetext import safe_text

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "information": ""}


class LogEntry(NamedTuple):
    at: float
    severity: str
    text: str


class LogScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,L,q", "close", "Close", id="log.close")]

    def __init__(self, entries: list[LogEntry]) -> None:
        super().__init__()
        self.entries = entries

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="log"):
            yield Static(Text("Messages of this session (newest first)", style="bold"))
            if not self.entries:
                yield Static(Text("nothing yet", style="dim"), id="log-empty")
                return
            grid = Table.grid(padding=(0, 1))
            grid.add_column(style="dim", no_wrap=True)
            grid.add_column(overflow="fold")
            for e in reversed(self.entries):
                grid.add_row(humanize.clock(e.at)[11:], safe_text(e.text, style=SEVERITY_STYLE.get(e.severity, "")))
            yield Static(grid, id="log-lines")

    def action_close(self) -> None:
        self.dismiss(None)
