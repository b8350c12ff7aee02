"""Peek at one message: metadata beside the payload. Reading never changes the message's state.

Everything shown comes from the queue's files and is untrusted: it is displayed only as
``rich.text.Text`` built by :mod:`qconsole.safetext` (or a Syntax of escaped text), never
as markup, so ``[@click=app.quit]`` or an OSC 52 sequence in a payload does nothing.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence

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
from textual.widgets import Footer, Header, Log, Static

from qconsole.backends.base import Backend
from qconsole.errors import QConsoleError
from qconsole.model import Message
from qconsole.output import humanize
from qconsole.output.peek_view import metadata, save_payload
from qconsole.payload import BINARY, DEFAULT_CAP, JSON, Payload, hexdump
from qconsole.safetext import escape_controls, safe_name, safe_text

from .dialogs import AskTextScreen
from .message_list import shown_state
from .services import services


def _line(text: Text) -> Text:
    # a Text that ends without a newline inside a Group measures one line short: the last
    # (or only) line of a plain payload vanished
    text.end = "\n"
    return text


#: the most `a` (the whole payload) draws: the screen renders it on the event loop, ~0.6 s a
#: MiB of text (16 MiB froze the console for minutes); beyond it, `s` saves the whole payload
WHOLE_CAP = 1 << 20
#: below this many columns the metadata goes above the payload, not beside it
NARROW = 70
#: JSON highlighted up to this size (Syntax takes ~5 s a MiB); larger JSON is drawn as text
HIGHLIGHT_CAP = 256 << 10
#: a payload drawn larger than this (``a``: up to WHOLE_CAP) goes into a virtual list of lines,
#: wrapped here, only the rows on screen drawn: the whole Text in a Static took Rich 2-7 s to
#: wrap and crop at 80x24 (its line split is quadratic in a long text), every key held meanwhile
LINES_AFTER = 64 << 10


def payload_lines(payload: Payload, width: int) -> list[str]:
    """What :func:`payload_renderable` shows, as plain lines of at most ``width`` cells (the
    list of lines draws only what is on screen); controls escaped, as everywhere."""
    from rich.cells import chop_cells

    head = []
    if payload.error:
        head.append(f"warning: {payload.error}")
    if payload.truncated:
        more = "  (a: more, s: save it)" if len(payload.body) < WHOLE_CAP else "  (s: save the whole payload)"
        head.append(f"showing {humanize.size(len(payload.body))} of {humanize.size(payload.size)}{more}")
    body = hexdump(payload.body, hex_row(width)) if payload.kind == BINARY else payload.pretty()
    width = max(8, width)
    # what the console says, wrapped by words; the payload, by cells
    out: list[str] = [part for line in head for part in textwrap.wrap(escape_controls(line, keep_newlines=False),
                                                                       width) or [""]]
    for raw in [*body.split("\n"), *(["… (cut here)"] if payload.truncated else [])]:
        line = escape_controls(raw, keep_newlines=False).expandtabs(8) if raw else raw
        if len(line) <= width and line.isascii():
            out.append(line)
        elif line.isascii():  # (one cell a character: sliced, not measured)
            out.extend(line[i:i + width] for i in range(0, len(line), width))
        else:
            out.extend(chop_cells(line, width))
    return out


def hex_row(width: int) -> int:
    """Bytes a hex dump row shows in ``width`` columns: a row of n bytes is 4n + 11 columns (75
    for 16, 43 for 8, 27 for 4). At 80x24 the pane beside the metadata is ~34 columns, and 8
    bytes a row wrapped every row in two (its ASCII column on a row of its own, read as bytes).
    Two columns are kept for the scrollbar a long dump brings once it is drawn."""
    for n in (16, 8):
        if 4 * n + 11 + 2 <= width:
            return n
    return 4


def payload_renderable(payload: Payload, width: int = 80) -> RenderableType:
    """Pretty JSON (highlighted), text, or a hex dump; controls visible, markup inert.

    A hex dump shows as many bytes a row as fit in ``width`` (16, 8 or 4: :func:`hex_row`).
    """
    parts: list[RenderableType] = []
    if payload.error:
        parts.append(_line(safe_text(f"warning: {payload.error}", style="yellow")))
    if payload.truncated:  # said first: the end of a capped payload is far below
        more = "  (a: more, s: save it)" if len(payload.body) < WHOLE_CAP else "  (s: save the whole payload)"
        parts.append(_line(Text(f"showing {humanize.size(len(payload.body))} of {humanize.size(payload.size)}"
                                + more, style="bold yellow")))
    body = hexdump(payload.body, hex_row(width)) if payload.kind == BINARY else payload.pretty()
    if not payload.size and not body:  # said, not a blank pane (read as a read that failed)
        parts.append(_line(Text(EMPTY, style="dim italic")))
    elif payload.kind == JSON and len(body) <= HIGHLIGHT_CAP:
        parts.append(Syntax(escape_controls(body), "json", theme="ansi_dark", word_wrap=True,
                            background_color="default"))
    else:
        parts.append(_line(safe_text(body)))
    if payload.truncated:
        parts.append(_line(Text("… (cut here)", style="dim")))
    return Group(*parts)


#: the payload pane of a message of 0 bytes
EMPTY = "(empty payload: 0 bytes)"

#: shorter labels so a 32-character id fits beside them at 80 columns
SHORT_LABELS = {"requeue_counter": "requeues", "requeue_limit": "req.limit", "queue_number": "queue no"}


def metadata_rows(msg: Message, payload: Payload, now: float) -> list[tuple[str, str]]:
    """What the metadata pane shows at ``now``: the state as the list shows it (in flight past
    its deadline: expired; delayed past its delay: ready), the deadline counted from now."""
    rows = metadata(msg, payload, now)
    state = shown_state(msg, now)
    return [(label, state if label == "state" else value) for label, value in rows]


def metadata_renderable(msg: Message, payload: Payload, now: float) -> RenderableType:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in metadata_rows(msg, payload, now):
        grid.add_row(SHORT_LABELS.get(label, label), safe_text(value, keep_newlines=False))
    return grid


#: the longest id kept in a default file name (a name is at most 255 bytes)
SAVE_NAME_MAX = 96


def save_name(ident: str) -> str:
    """The save dialog's default: a plain file name in the current directory made from the id.
    Ids are the store's (RSMQ's are any bytes): separators, ``..`` and control characters (an
    input box shows its value raw: ESC would reach the terminal) become ``_``."""
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in ident)
    while ".." in name:
        name = name.replace("..", "_")
    name = name[:SAVE_NAME_MAX].strip(".")  # (no hidden file, no `..` before `.payload`)
    return f"{name or 'message'}.payload"


class PeekScreen(Screen["str | None"]):
    """Metadata on the left, the capped payload on the right; n/b walk the list without going back."""

    BINDINGS = [
        Binding("escape,q,v", "back", "Back", id="peek.back"),
        Binding("n,right_square_bracket", "step(1)", "Next", id="peek.next"),
        Binding("b,left_square_bracket", "step(-1)", "Prev", id="peek.prev"),
        Binding("w", "wide", "Wide", id="peek.wide"),
        Binding("a", "whole", "Whole", id="peek.whole"),
        Binding("s", "save", "Save", id="peek.save"),
    ]

    class Read(TMessage):
        def __init__(self, msg: Message, payload: Payload | None, error: str | None) -> None:
            super().__init__()
            self.msg = msg
            self.payload = payload
            self.error = error

    def __init__(self, root: Backend, messages: Sequence[Message] | Message, index: int = 0) -> None:
        super().__init__()
        self.qroot = root
        # a list's rows (columns: each Message is made when shown), or one message
        self.messages: Sequence[Message] = [messages] if isinstance(messages, Message) else messages
        self.index = index
        self.payload: Payload | None = None
        self.cap: int | None = DEFAULT_CAP
        #: the metadata as last drawn (the tick redraws it only when a value changed)
        self._meta_shown: list[tuple[str, str]] | None = None

    @property
    def msg(self) -> Message:
        return self.messages[self.index]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="peek"):
            with VerticalScroll(id="peek-meta"):
                yield Static(id="meta")
            with VerticalScroll(id="peek-body"):
                yield Static(Text("reading…", style="dim"), id="body")
            # a large payload's lines, in its place (only the rows on screen are drawn)
            yield Log(id="peek-lines", classes="hidden", auto_scroll=False)
        yield Static(id="peek-status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#peek").set_class(self.app.size.width < NARROW, "narrow")
        self.query_one("#peek-body").focus()
        # the wide/narrow choice is the operator's: it holds across messages and peeks
        self.query_one("#peek-meta").set_class(getattr(self.app, "peek_wide", False), "hidden")
        if services(self).live_countdown:
            # the deadline and the state follow the clock, as the list's rows do (drawn once,
            # an in-flight message said "(in 5s)" and "inflight" a minute after it expired)
            self.set_interval(1.0, self._tick)
        self.load()

    def load(self) -> None:
        self.update_status()
        self._read_worker(self.msg, self.cap)

    def update_status(self) -> None:
        t = Text.assemble((f"{self.index + 1}/{len(self.messages)}", "bold"), ("  ", ""),
                          (safe_name(self.msg.id), ""), ("  n next · b previous", "dim"))
        self.query_one("#peek-status", Static).update(t)

    @work(thread=True, exclusive=True, exit_on_error=False, group="peek")
    def _read_worker(self, msg: Message, cap: int | None) -> None:
        try:
            payload = self.qroot.read_payload(msg, cap)
            self.post_message(self.Read(msg, payload, None))
        except QConsoleError as err:
            self.post_message(self.Read(msg, None, str(err)))
        except OSError as err:
            self.post_message(self.Read(msg, None, f"{err.strerror or err}"))

    def on_peek_screen_read(self, event: Read) -> None:
        if event.msg is not self.msg:
            return  # the operator moved on meanwhile
        now = services(self).clock()
        if event.payload is None:
            self._use_lines(False)
            self.query_one("#body", Static).update(safe_text(event.error or "unreadable", style="red"))
            meta = Table.grid(padding=(0, 1))
            meta.add_column(style="bold")
            meta.add_column()
            for label, value in (("queue", self.msg.queue), ("id", self.msg.id), ("file", self.msg.relpath)):
                meta.add_row(label, safe_text(value, keep_newlines=False))
            self.query_one("#meta", Static).update(meta)
            return
        self.payload = event.payload
        self._meta_shown = metadata_rows(self.msg, event.payload, now)
        self.query_one("#meta", Static).update(metadata_renderable(self.msg, event.payload, now))
        self.show_payload()

    def _tick(self) -> None:
        payload = self.payload
        if payload is None or self.msg.deadline is None:
            return
        now = services(self).clock()
        rows = metadata_rows(self.msg, payload, now)
        if rows != self._meta_shown:
            self._meta_shown = rows
            self.query_one("#meta", Static).update(metadata_renderable(self.msg, payload, now))

    def show_payload(self) -> None:
        """The payload in the pane: a Static of the renderable, or (large) a list of lines."""
        payload = self.payload
        if payload is None:
            return
        body, lines = self.query_one("#peek-body", VerticalScroll), self.query_one("#peek-lines", Log)
        large = len(payload.body) > LINES_AFTER
        self._use_lines(large)
        if large:
            # the pane's width (the list's own is not laid out yet when it is first shown), less
            # the scrollbar the lines will need
            region = (lines if lines.size.width else body).content_region
            width = region.width - lines.styles.scrollbar_size_vertical
            lines.clear()
            lines.write_lines(payload_lines(payload, width), scroll_end=False)
            lines.scroll_home(animate=False)
            self.query_one("#body", Static).update("")
            return
        width = body.scrollable_content_region.width
        self.query_one("#body", Static).update(payload_renderable(payload, width))
        body.scroll_home(animate=False)

    def action_back(self) -> None:
        # the id last shown: the list's cursor follows an n/b walk, so an action after it takes
        # the message just viewed, not the one the peek started from
        self.dismiss(self.msg.id if self.messages else None)

    def action_step(self, step: int) -> None:
        index = self.index + step
        if not 0 <= index < len(self.messages):
            services(self).say("no more messages that way" if self.messages else "no message", "warning")
            return
        self.index = index
        self.cap = DEFAULT_CAP
        self.payload = None
        self.query_one("#body", Static).update(Text("reading…", style="dim"))
        self._use_lines(False)
        self.load()

    def _use_lines(self, large: bool) -> None:
        """Show the list of lines (a large payload) or the Static pane; the keys that scroll go
        to the pane shown. The lines hidden are dropped."""
        body, lines = self.query_one("#peek-body", VerticalScroll), self.query_one("#peek-lines", Log)
        if large == (not lines.has_class("hidden")):
            return
        focused = self.focused in (body, lines)
        body.set_class(large, "hidden")
        lines.set_class(not large, "hidden")
        if not large:
            lines.clear()
        if focused:
            self.set_focus(lines if large else body)

    def on_resize(self) -> None:
        self.query_one("#peek").set_class(self.size.width < NARROW, "narrow")
        if self.payload is not None:  # the hex dump's row width (and a large payload's lines) follow the pane's
            self.call_after_refresh(self.show_payload)

    def action_wide(self) -> None:
        wide = not getattr(self.app, "peek_wide", False)
        self.app.peek_wide = wide  # type: ignore[attr-defined]
        self.query_one("#peek-meta").set_class(wide, "hidden")
        self.call_after_refresh(self.on_resize)

    def action_whole(self) -> None:
        """Read again with the larger cap the screen can still draw (``s`` saves all of it)."""
        if self.cap == WHOLE_CAP:
            return
        self.cap = WHOLE_CAP
        self._read_worker(self.msg, self.cap)

    def action_save(self) -> None:
        default = save_name(self.msg.id)

        def chosen(path: str | None) -> None:
            if path:  # ~ as a shell takes it; a relative path from where the console was started
                self._save_worker(self.msg, os.path.abspath(os.path.expanduser(path)))

        where = safe_name(os.getcwd())
        self.app.push_screen(AskTextScreen(f"Save the whole payload to a new file (~ works; relative to {where}):",
                                           default), chosen)

    @work(thread=True, exit_on_error=False, group="peek-save")
    def _save_worker(self, msg: Message, path: str) -> None:
        app = services(self)
        try:
            n = save_payload(self.qroot, msg, path)
        except (QConsoleError, OSError) as err:
            why = str(err) if isinstance(err, QConsoleError) else f"{path}: {err.strerror}"
            app.call_from_thread(app.say, f"not saved: {why}", "error")
            return
        app.call_from_thread(app.say, f"saved {humanize.size(n)} to {path}")
