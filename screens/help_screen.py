"""`?`: every key of every screen, from the bindings themselves (so it never goes stale).

The app hands this screen the (title, screen class) pairs to list, so it imports no other
screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.keys import format_key
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: spelled out where Textual's own display of a key is a symbol (``⏎``)
KEY_NAMES = {"enter": "enter"}


def key_name(key: str) -> str:
    """A binding's keys as the help shows them: Textual's display of each (``]``, not
    ``right_square_bracket``)."""
    return ",".join(KEY_NAMES.get(k) or format_key(k) for k in key.split(","))


def keys_table(sections: Sequence[tuple[str, type]], read_only: bool = False) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for title, cls in sections:
        table.add_row(Text(title, style="bold underline"), "")
        mutating = getattr(cls, "MUTATING", frozenset())
        for b in cls.BINDINGS:
            if isinstance(b, Binding) and b.description:
                if read_only and b.action in mutating:
                    continue  # read-only: the key does nothing, so it is not offered
                table.add_row(key_name(b.key), b.description)
    table.add_row("ctrl+p", "command palette (every action by name)")
    table.add_row("arrows", "move (also j/k, pgup/pgdn, home/end)")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, sections: Sequence[tuple[str, type]], read_only: bool = False) -> None:
        super().__init__()
        self.sections = list(sections)
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", id="help"):
            head = "Keys  (destructive actions ask first"
            head += "; READ-ONLY: changes are not offered)" if self.read_only else ")"
            yield Static(Text(head, style="bold"))
            yield Static(keys_table(self.sections, self.read_only))

    def action_close(self) -> None:
        self.dismiss(None)
