"""A virtual list of messages: draws only the lines on screen, so 100k messages cost nothing.

Countdowns are computed at draw time from each message's deadline and the app clock, so a
one-second ``refresh()`` makes them tick without rescanning.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from qconsole.model import Message
from qconsole.output import humanize
from qconsole.safetext import safe_name
from qconsole.states import EXPIRED, INFLIGHT, READY

#: countdown colours: yellow at or below WARN seconds, red at or below DANGER
WARN_S = 30.0
DANGER_S = 10.0

#: column widths; the state column fits "inflight" plus a gap, so no value runs into the next
STATE_W = 9
ID_W = 32
HEADER = f"  {'#':>7} {'state':<{STATE_W}} {'id':<{ID_W}} {'prio':>4} {'age':>7} {'expires':>8}"


def countdown(msg: Message, now: float) -> tuple[str, str]:
    """(text, level) for a message: level is '', 'warn', 'danger' or 'expired'."""
    if msg.deadline is None or msg.state not in (INFLIGHT, EXPIRED):
        return "", ""
    left = msg.deadline - now
    if left <= 0:
        return "EXPIRED", "expired"
    level = "danger" if left <= DANGER_S else "warn" if left <= WARN_S else ""
    return humanize.duration(max(1.0, left)), level


def shown_state(msg: Message, now: float) -> str:
    """The state against the app clock: an in-flight message whose countdown hit zero is expired."""
    if msg.state == INFLIGHT and msg.deadline is not None and msg.deadline <= now:
        return EXPIRED
    return msg.state


class MessageList(ScrollView, can_focus=True):
    """Messages in delivery order with a cursor and marks."""

    DEFAULT_CSS = """
    MessageList { height: 1fr; }
    MessageList > .messagelist--cursor { background: $accent; color: $text; text-style: bold; }
    MessageList > .messagelist--marked { color: $warning; text-style: bold; }
    """
    COMPONENT_CLASSES = {"messagelist--cursor", "messagelist--marked"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class CursorMoved(TMessage):
        pass

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.clock = clock
        self.messages: list[Message] = []
        self.marked: set[str] = set()
        self.ready_count = 0

    # -- data -----------------------------------------------------------------------------
    def set_messages(self, messages: list[Message]) -> None:
        """Replace the list, keeping the cursor on the same message when it still exists."""
        current = self.current()
        self.messages = messages
        self.ready_count = sum(1 for m in messages if m.state == READY)
        live = {m.id for m in messages}
        self.marked &= live
        index = 0
        if current is not None:
            for i, m in enumerate(messages):
                if m.id == current.id:
                    index = i
                    break
            else:
                index = min(self.cursor, max(0, len(messages) - 1))
        self.virtual_size = Size(self.size.width, len(messages))
        self.cursor = index
        self.refresh()

    def current(self) -> Message | None:
        if 0 <= self.cursor < len(self.messages):
            return self.messages[self.cursor]
        return None

    def selection(self) -> list[Message]:
        """The marked messages, or the one under the cursor when none is marked."""
        if self.marked:
            return [m for m in self.messages if m.id in self.marked]
        cur = self.current()
        return [cur] if cur else []

    def toggle_mark(self) -> None:
        cur = self.current()
        if cur is None:
            return
        self.marked.symmetric_difference_update({cur.id})
        self.action_cursor(1)
        self.refresh()

    # -- movement -----------------------------------------------------------------------
    def watch_cursor(self, value: int) -> None:
        height = max(1, self.size.height)
        top = round(self.scroll_offset.y)
        if value < top:
            self.scroll_to(y=value, animate=False)
        elif value >= top + height:
            self.scroll_to(y=value - height + 1, animate=False)
        self.refresh()
        self.post_message(self.CursorMoved())

    def action_cursor(self, step: int) -> None:
        if self.messages:
            self.cursor = max(0, min(len(self.messages) - 1, self.cursor + step))

    def action_page(self, step: int) -> None:
        self.action_cursor(step * max(1, self.size.height - 1))

    def action_jump(self, where: int) -> None:
        if self.messages:
            self.cursor = len(self.messages) - 1 if where < 0 else 0

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.messages))

    # -- drawing ------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_y = round(self.scroll_offset.y)
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self.messages):
            return Strip.blank(width, base)
        msg = self.messages[index]
        now = self.clock()
        state = shown_state(msg, now)
        mark = "●" if msg.id in self.marked else " "
        pos = str(index + 1) if msg.state == READY else "-"
        age = humanize.duration(now - msg.created_at) if msg.created_at is not None else "-"
        prio = msg.priority_text if msg.priority_text is not None else ""
        left, level = countdown(msg, now)
        ident = safe_name(msg.id)
        if len(ident) > ID_W:
            ident = ident[: ID_W - 1] + "…"
        row_style = base
        if index == self.cursor:
            row_style = base + self.get_component_rich_style("messagelist--cursor")
        mark_style = row_style + self.get_component_rich_style("messagelist--marked") if msg.id in self.marked else row_style
        state_style = {READY: Style(), INFLIGHT: Style(color="green"), EXPIRED: Style(color="red", bold=True)}.get(state, Style(color="yellow"))
        cd_style = {
            "": Style(color="green"), "warn": Style(color="yellow", bold=True),
            "danger": Style(color="red", bold=True), "expired": Style(color="red", bold=True, reverse=True),
        }[level]
        segments = [
            Segment(f"{mark} ", mark_style),
            Segment(f"{pos:>7} ", row_style),
            Segment(f"{state:<{STATE_W}}", row_style + state_style),
            Segment(f" {ident:<{ID_W}} {prio:>4} {age:>7} ", row_style),
            Segment(f"{left:>8}", row_style + cd_style if left else row_style),
        ]
        strip = Strip(segments)
        return strip.extend_cell_length(width, row_style).crop(0, width)
