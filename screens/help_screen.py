"""`?`: every key of every screen, from the bindings themselves (so it never goes stale)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def _key_name(key: str) -> str:
    names = {"question_mark": "?", "slash": "/", "space": "space", "escape": "esc"}
    return ",".join(names.get(k, k) for k in key.split(","))


def keys_table() -> Table:
    from .app import QConsoleApp
    from .peek_screen import PeekScreen
    from .publish_screen import PublishScreen
    from .queue_screen import QueueScreen
    from .root_screen import RootScreen
    from .settings_screen import SettingsScreen

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for title, cls in (("Root screen", RootScreen), ("Queue screen", QueueScreen), ("Peek", PeekScreen),
                       ("Settings", SettingsScreen), ("Publish", PublishScreen), ("Everywhere", QConsoleApp)):
        table.add_row(Text(title, style="bold underline"), "")
        for b in cls.BINDINGS:
            if isinstance(b, Binding) and b.description:
                table.add_row(_key_name(b.key), b.description)
    table.add_row("ctrl+p", "command palette (every action by name)")
    table.add_row("arrows", "move (also pgup/pgdn, home/end)")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help"):
            yield Static(Text("Keys  (destructive actions ask first; --read-only refuses them)", style="bold"))
            yield Static(keys_table())

    def action_close(self) -> None:
        self.dismiss(None)
