"""Peek at one message: metadata beside the payload. Reading never changes the message's state.

Everything shown comes from the queue's files and is untrusted: it is displayed only as
``rich.text.Text`` built by :mod:`qconsole.safetext` (or a Syntax of escaped text), never
as markup, so ``[@click=app.quit]`` or an OSC 52 sequence in a payload does nothing.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from qconsole.errors import QConsoleError
from qconsole.model import Message
from qconsole.output import humanize
from qconsole.output.peek_view import metadata
from qconsole.payload import DEFAULT_CAP, JSON, Payload
from qconsole.safetext import escape_controls, safe_text
from qconsole.backends import open_target as Root


def payload_renderable(payload: Payload) -> RenderableType:
    """Pretty JSON (highlighted), text, or a hex dump; controls visible, markup inert."""
    parts: list[RenderableType] = []
    if payload.error:
        parts.append(safe_text(f"warning: {payload.error}", style="yellow"))
    body = payload.pretty()
    if payload.kind == JSON:
        parts.append(Syntax(escape_controls(body), "json", theme="ansi_dark", word_wrap=True,
                            background_color="default"))
    else:
        parts.append(safe_text(body))
    if payload.truncated:
        parts.append(Text(f"… showing {humanize.size(len(payload.body))} of {humanize.size(payload.size)}", style="dim"))
    return Group(*parts)


#: shorter labels so a 32-character id fits beside them at 80 columns
SHORT_LABELS = {"requeue_counter": "requeues", "requeue_limit": "req.limit", "queue_number": "queue no"}


def metadata_renderable(msg: Message, payload: Payload, now: float) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in metadata(msg, payload, now):
        grid.add_row(SHORT_LABELS.get(label, label), safe_text(value, keep_newlines=False))
    return grid


class PeekScreen(Screen[None]):
    """Metadata on the left, the capped payload on the right."""

    BINDINGS = [
        Binding("escape,q,v", "back", "Back", id="peek.back"),
        Binding("w", "wrap", "Wide/narrow", id="peek.wide"),
    ]

    class Read(TMessage):
        def __init__(self, payload: Payload | None, error: str | None) -> None:
            super().__init__()
            self.payload = payload
            self.error = error

    def __init__(self, root: Root, msg: Message) -> None:
        super().__init__()
        self.qroot = root
        self.msg = msg
        self.payload: Payload | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="peek"):
            with VerticalScroll(id="peek-meta"):
                yield Static(id="meta")
            with VerticalScroll(id="peek-body"):
                yield Static(Text("reading…", style="dim"), id="body")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#peek-body").focus()
        self._read_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="peek")
    def _read_worker(self) -> None:
        try:
            payload = self.qroot.read_payload(self.msg, DEFAULT_CAP)
            self.post_message(self.Read(payload, None))
        except QConsoleError as err:
            self.post_message(self.Read(None, str(err)))
        except OSError as err:
            self.post_message(self.Read(None, f"{err.strerror or err}"))

    def on_peek_screen_read(self, event: Read) -> None:
        now = self.app.clock()  # type: ignore[attr-defined]
        if event.payload is None:
            self.query_one("#body", Static).update(safe_text(event.error or "unreadable", style="red"))
            meta = Table.grid(padding=(0, 1))
            meta.add_column(style="bold")
            meta.add_column()
            for label, value in (("queue", self.msg.queue), ("id", self.msg.id), ("file", self.msg.relpath)):
                meta.add_row(label, safe_text(value, keep_newlines=False))
            self.query_one("#meta", Static).update(meta)
            return
        self.payload = event.payload
        self.query_one("#meta", Static).update(metadata_renderable(self.msg, event.payload, now))
        self.query_one("#body", Static).update(payload_renderable(event.payload))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_wrap(self) -> None:
        self.query_one("#peek-meta").toggle_class("hidden")
