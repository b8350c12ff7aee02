"""A virtual list of messages: draws only the lines on screen, so 100k messages cost nothing.

Countdowns are computed at draw time from each message's deadline and the app clock, so a
one-second ``refresh()`` makes them tick without rescanning. Payload details (preview, size,
redeliveries) are read lazily for the rows on screen only: the list asks its screen for them
with :class:`MessageList.NeedDetails` and draws what the cache holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from qconsole.columns import STATE_CODE, MessageColumns
from qconsole.model import Message
from qconsole.output import humanize
from qconsole.safetext import safe_name
from qconsole.states import DELAYED, EXPIRED, INFLIGHT, READY

_READY_CODE = STATE_CODE[READY]

#: countdown colours: yellow at or below WARN seconds, red at or below DANGER
WARN_S = 30.0
DANGER_S = 10.0

#: fixed column widths; the state column fits "inflight", ids get up to ID_MAX
POS_W = 6
STATE_W = 8
ID_MAX = 32
#: an id is cut down to this many cells to keep the age and countdown on a narrow terminal
ID_MIN = 12
PRIO_W = 4
AGE_W = 6
EXP_W = 9
SIZE_W = 5
RD_W = 2
#: the redelivery column where the preview keeps at least WIDE_PREVIEW cells beside it (from ~120
#: columns on): a
#: receive count of 150 (RSMQ, the dead-letter view's very subject) read "1…" in two cells
RD_WIDE = 4
WIDE_PREVIEW = 24
#: a preview narrower than this says nothing: the column is left out
PREVIEW_MIN = 8

#: ANSI colour names only, so a 16-colour terminal shows the intended colour (see the app's palette)
STATE_STYLE = {READY: Style(), INFLIGHT: Style(color="green"), EXPIRED: Style(color="red", bold=True)}
OTHER_STATE_STYLE = Style(color="yellow")
PREVIEW_STYLE = Style(color="cyan")
COUNTDOWN_STYLE = {
    "": Style(color="green"), "warn": Style(color="yellow", bold=True),
    "danger": Style(color="red", bold=True), "expired": Style(color="red", bold=True, reverse=True),
}


class Details:
    """What the list shows of a payload: a one-line preview, its size, its redeliveries."""

    __slots__ = ("preview", "size", "redeliveries", "seen")

    def __init__(self, preview: str, size: int | None, redeliveries: int | None) -> None:
        self.preview = preview
        self.size = size
        self.redeliveries = redeliveries
        #: the message's (state, deadline) when read: a delivery since makes them stale
        self.seen: tuple[str, float | None] | None = None


def seen_as(msg: Message) -> tuple[str, float | None]:
    return (msg.state, msg.deadline)


def countdown(msg: Message, now: float) -> tuple[str, str]:
    """(text, level) for a message: level is '', 'warn', 'danger' or 'expired'.

    Whole seconds left are rounded up, so each second shows once (ddmq deadlines are whole
    seconds: rounding to nearest showed ``1s`` for two ticks). An expired message shows how
    long ago it expired. A delayed message (RSMQ) counts down to when it becomes visible, in
    the plain style (nothing is late); at zero it is ready, and shows no countdown.
    """
    if msg.deadline is None or msg.state not in (INFLIGHT, EXPIRED, DELAYED):
        return "", ""
    left = msg.deadline - now
    if msg.state == DELAYED:
        return (fit_duration(math.ceil(left), EXP_W), "") if left > 0 else ("", "")
    if left <= 0:
        ago = humanize.duration(math.floor(-left))
        # `15m04s ago` is 10 cells: a longer one is written `-15m04s` (the column never overflows)
        text = f"{ago} ago" if len(ago) + 4 <= EXP_W else "-" + fit_duration(math.floor(-left), EXP_W - 1)
        return text, "expired"
    level = "danger" if left <= DANGER_S else "warn" if left <= WARN_S else ""
    return fit_duration(math.ceil(left), EXP_W), level


def fit_duration(seconds: float | None, width: int) -> str:
    """:func:`humanize.duration` in at most ``width`` cells: its larger unit alone when the
    two do not fit (``365d04h`` -> ``365d``, a planted ``-19y002d`` -> ``-19y``), else cut."""
    text = humanize.duration(seconds)
    if len(text) <= width:
        return text
    for i, ch in enumerate(text):
        if ch.isalpha():
            text = text[: i + 1]
            break
    return text if len(text) <= width else text[: width - 1] + "…"


def fit_cell(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells (a planted priority or count is cut, never pushes the row)."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def shown_state(msg: Message, now: float) -> str:
    """The state against the app clock: an in-flight message whose countdown hit zero is expired."""
    if msg.state == INFLIGHT and msg.deadline is not None and msg.deadline <= now:
        return EXPIRED
    if msg.state == DELAYED and msg.deadline is not None and msg.deadline <= now:
        return READY  # its delay is over: the next receive may take it
    return msg.state


def position_text(n: int) -> str:
    """A delivery position in POS_W characters (a million messages: ``1000k``)."""
    text = str(n)
    return text if len(text) <= POS_W else f"{n // 1000}k"


def short_size(n: int | None) -> str:
    """Sizes in at most 5 characters: 512B, 1.2K, 34K, 5.1M."""
    if n is None:
        return ""
    value = float(n)
    for unit in ("B", "K", "M", "G"):
        if value < 1000 or unit == "G":
            if unit == "B":
                return f"{int(value)}B"
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
        value /= 1024
    return f"{n}B"


class Columns:
    """Which columns fit a width, and where they start: the header and every row agree."""

    def __init__(self, width: int, id_width: int, priorities: bool, redeliveries: bool) -> None:
        self.id_w = max(8, min(ID_MAX, id_width))
        self.prio = priorities
        fixed = 2 + POS_W + 1 + STATE_W + 1 + self.id_w + (1 + PRIO_W if priorities else 0) + 1 + AGE_W + 1 + EXP_W
        if fixed > width > 0:
            # a narrow terminal (60 columns): the id is cut (head…; peek shows it whole) before the
            # age and the countdown go past the edge (32-character ids left neither at 60)
            cut = min(fixed - width, self.id_w - ID_MIN)
            if cut > 0:
                self.id_w -= cut
                fixed -= cut
        room = width - fixed
        # optional columns in the order they are given up as the width shrinks: preview first
        self.rd = redeliveries and room >= 1 + RD_W
        self.rd_w = RD_WIDE if room >= 1 + RD_WIDE + 1 + SIZE_W + 1 + WIDE_PREVIEW else RD_W
        room -= (1 + self.rd_w) if self.rd else 0
        self.size = room >= 1 + SIZE_W
        room -= (1 + SIZE_W) if self.size else 0
        self.preview_w = room - 1 if room - 1 >= PREVIEW_MIN else 0

    @property
    def wants_details(self) -> bool:
        return self.rd or self.size or self.preview_w > 0

    def header(self) -> str:
        t = f"  {'#':>{POS_W}} {'state':<{STATE_W}} {'id':<{self.id_w}}"
        if self.prio:
            t += f" {'prio':>{PRIO_W}}"
        t += f" {'age':>{AGE_W}} {'expires':>{EXP_W}}"
        if self.rd:
            t += f" {'rd':>{self.rd_w}}"
        if self.size:
            t += f" {'size':>{SIZE_W}}"
        if self.preview_w:
            t += " payload"
        return t


#: the header at 80 columns for 32-character ids with priorities (tests and docs)
HEADER = Columns(80, 32, True, False).header()


class MessageList(ScrollView, can_focus=True):
    """Messages in delivery order with a cursor and marks."""

    COMPONENT_CLASSES = {"messagelist--cursor", "messagelist--marked", "messagelist--match"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("shift+up", "extend(-1)", "Mark up", show=False),
        Binding("shift+down", "extend(1)", "Mark down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class CursorMoved(TMessage):
        pass

    class NeedDetails(TMessage):
        """Rows on screen whose payload details are not cached yet."""

        def __init__(self, messages: list[Message]) -> None:
            super().__init__()
            self.messages = messages

    def __init__(self, clock: Callable[[], float], *, priorities: bool = True, redeliveries: bool = False,
                 expired_in_line: bool = False, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.clock = clock
        #: an expired message is back in line (RSMQ: visible again, taken by its score), so numbered
        self.expired_in_line = expired_in_line
        #: the rows are a listing under way: no delivery positions (``~``), no marks by range
        self.provisional = False
        #: end was pressed on a listing under way: the cursor stays on the last row as the rest
        #: arrives (it followed the message that was last so far, rows short of the end)
        self.to_end = False
        #: the rows, as columns (a Message is made only for a row drawn or acted on)
        self.messages: MessageColumns = MessageColumns.empty("")
        self.marked: set[str] = set()
        #: in a view (search, dead letters): marks of messages of the queue the view does not
        #: show; they are marked again when the view closes (a search dropped every mark)
        self.hidden_marks: set[str] = set()
        self._hidden_checked: MessageColumns | None = None  # the listing they were checked against
        self.ready_count = 0
        self.priorities = priorities
        self.redeliveries = redeliveries
        #: message id -> payload details (filled by the screen's worker, for rows that were drawn)
        self.details: dict[str, Details] = {}
        #: ids whose details were asked for (read or being read): each is read once
        self._asked: dict[str, tuple[str, float | None]] = {}
        self._ask_pending = False
        self._id_w = ID_MAX
        #: the id the cursor was on when it vanished in the last update (the screen says so)
        self.lost: str | None = None
        self._columns: Columns | None = None
        #: the rows drawn lately, by what they show (see render_line)
        self._lines: dict[tuple[object, ...], Strip] = {}
        #: a view's (search, dead letters) whole listing: its ready rows are numbered by their
        #: place in the queue's delivery order, not in the view (None: the rows are the queue)
        self.numbered_by: MessageColumns | None = None
        self._places: dict[str, int] = {}  # id -> its row in numbered_by (the screen found it)

    def number_by(self, listing: MessageColumns | None, places: dict[str, int] | None = None) -> None:
        """Number a view's rows by ``listing`` (None: by their own order); ``places``: id -> row
        in ``listing`` of the view's messages (found off the drawing path: a lookup per drawn
        row cost a pass over a million ids where they are not in text order)."""
        self.numbered_by = listing
        self._places = places if places is not None else {}

    # -- data -----------------------------------------------------------------------------
    def columns(self) -> Columns:
        width = self.scrollable_content_region.width or self.size.width or 80
        c = self._columns
        if c is None or c._width != width:  # type: ignore[attr-defined]
            c = Columns(width, self._id_w, self.priorities, self.redeliveries)
            c._width = width  # type: ignore[attr-defined]
            self._columns = c
        return c

    def set_messages(self, messages: MessageColumns | list[Message], *, follow: bool = True) -> None:
        """Replace the rows, keeping the cursor on the same message id.

        When that message is gone the cursor stays at the same position (on the message that
        took its place) and :attr:`lost` names the one that went; with ``follow`` false it stays
        at its position whatever is there (more of a listing under way). Nothing here walks every
        row: the cursor's message is found near its old place or by bisection, marks are
        checked by the columns (``present``: one by one, against one set, or one pass over names).
        """
        if not isinstance(messages, MessageColumns):
            messages = MessageColumns.from_messages(messages[0].queue if messages else "", messages)
        current = self.current() if follow else None
        position = self.cursor
        self.messages = messages
        self.ready_count = messages.ready_n
        kept = self.marked | self.hidden_marks
        if kept:
            self.marked = messages.present(kept)
            whole = self.numbered_by  # a view's whole listing: the marks it hides are kept
            hidden = kept - self.marked if whole is not None else set()
            if hidden and whole is not self._hidden_checked:
                hidden = whole.present(hidden)  # (those of messages gone go; once per listing)
                self._hidden_checked = whole
            self.hidden_marks = hidden
        ids = messages.ids
        sample = ids[:2000] + ids[-2000:]
        self._id_w = max(map(len, sample), default=16)
        self._columns = None
        index = min(position, max(0, len(messages) - 1))
        self.lost = None
        if self.to_end:
            current = None
            index = max(0, len(messages) - 1)
            self.to_end = bool(getattr(messages, "partial", False))  # (until the listing is whole)
        if current is not None:
            # look near the old position first: a consumed head moves it up by a few rows
            found = messages.index_of(current.id, position, current.relpath)
            if found is None:
                self.lost = current.id
            else:
                index = found
        self.virtual_size = Size(self.virtual_size.width if self.virtual_size.width else 0, len(messages))
        self.cursor = index
        self.refresh()

    def index_of(self, ident: str) -> int | None:
        return self.messages.index_of(ident, self.cursor)

    def current(self) -> Message | None:
        if 0 <= self.cursor < len(self.messages):
            return self.messages.message(self.cursor)
        return None

    def selection(self) -> list[Message]:
        """The marked messages, or the one under the cursor when none is marked."""
        if self.marked:
            return self.messages.with_ids(self.marked)
        cur = self.current()
        return [cur] if cur else []

    def toggle_mark(self) -> None:
        cur = self.current()
        if cur is None:
            return
        self.marked.symmetric_difference_update({cur.id})
        self.action_cursor(1)
        self.refresh()

    def mark_state(self, state: str, now: float) -> int:
        """Mark every message shown in ``state`` now (adds to the marks); how many matched."""
        ids = self.messages.ids
        found = {ids[i] for i in self.messages.rows_shown_as(state, now)}
        self.marked |= found
        self.refresh()
        return len(found)

    def invert_marks(self) -> None:
        self.marked = self.messages.id_set() - self.marked
        self.refresh()

    # -- movement -----------------------------------------------------------------------
    def watch_cursor(self, old: int, value: int) -> None:
        # force: a list that has just grown past the screen (a search's view of one match closed,
        # the cursor back on it) has no scrollbar until the next layout, and an unforced scroll
        # is refused without one: the cursor's row stayed off screen
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_offset.y)
        if value < top:
            self.scroll_to(y=value, animate=False, immediate=True, force=True)
            self.refresh()
        elif value >= top + height:
            self.scroll_to(y=value - height + 1, animate=False, immediate=True, force=True)
            self.refresh()
        elif old != value:
            # only the two rows whose cursor style changed are drawn again
            self.refresh_lines(old)
            self.refresh_lines(value)
        else:
            self.refresh()
        self.post_message(self.CursorMoved())

    def action_cursor(self, step: int) -> None:
        self.lost = None  # the operator moved on: "the cursor stays at its place" no longer holds
        self.to_end = False
        if self.messages:
            self.cursor = max(0, min(len(self.messages) - 1, self.cursor + step))

    def action_extend(self, step: int) -> None:
        """Shift+arrow: mark the message under the cursor and the next one (a range)."""
        cur = self.current()
        if cur is None:
            return
        self.marked.add(cur.id)
        self.action_cursor(step)
        nxt = self.current()
        if nxt is not None:
            self.marked.add(nxt.id)
        self.refresh()

    def action_page(self, step: int) -> None:
        self.action_cursor(step * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, where: int) -> None:
        self.lost = None
        self.to_end = where < 0 and self.provisional
        if self.messages:
            self.cursor = len(self.messages) - 1 if where < 0 else 0

    def on_resize(self) -> None:
        self._columns = None
        self.virtual_size = Size(0, len(self.messages))
        # the cursor stays visible when the list gets shorter
        self.cursor = self.cursor

    def _place(self, msg: Message, now: float) -> str:
        """A view's row in line numbered in the whole queue; ``-`` unless that row is this
        message, in line (received meanwhile, it is not in line any more)."""
        whole, i = self.numbered_by, self._places.get(msg.id)
        if whole is None or i is None or not 0 <= i < len(whole) or whole.ids[i] != msg.id:
            return "-"
        if whole.states[i] != _READY_CODE:
            there = shown_state(whole.message(i), now)
            if not (there == READY or (there == EXPIRED and self.expired_in_line)):
                return "-"
        return position_text(i + 1)

    # -- drawing ------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_y = round(self.scroll_offset.y)
        index = scroll_y + y
        width = self.scrollable_content_region.width or self.size.width
        base = self.rich_style
        if index >= len(self.messages):
            return Strip.blank(width, base)
        cols = self.columns()
        msg = self.messages.message(index)
        now = self.clock()
        state = shown_state(msg, now)
        marked = msg.id in self.marked
        mark = "●" if marked else " "
        # in line: ready, or (RSMQ) visible again after its receive's timeout, where the next
        # receive takes it by its score like a ready one (a due delayed one is shown ready)
        in_line = state == READY or (state == EXPIRED and self.expired_in_line)
        pos = position_text(index + 1) if in_line else "-"
        if self.numbered_by is not None and in_line:
            pos = self._place(msg, now)
        if self.provisional and in_line:
            pos = "~"  # a listing under way: the rows so far are not the queue's first ones
        age = fit_duration(now - msg.created_at, AGE_W) if msg.created_at is not None else "-"
        left, level = countdown(msg, now)
        det = self.details.get(msg.id) if cols.wants_details else None
        if det is not None and det.seen != seen_as(msg):
            det = None  # delivered (or requeued) since it was read: the count may have moved
        if det is None and cols.wants_details and not self._ask_pending:
            self._ask_pending = True  # one request per refresh, for every row on screen
            self.call_after_refresh(self._ask_details)
        # a row drawn the same as last time (most rows, most ticks) is not built again
        cursor = self.get_component_rich_style("messagelist--cursor") if index == self.cursor else None
        key = (msg.id, index, cursor, marked, state, pos, age, left, level, width, id(cols),
               base, None if det is None else (det.preview, det.size, det.redeliveries))
        strip = self._lines.get(key)
        if strip is not None:
            return strip
        if len(self._lines) > 4 * max(1, self.size.height) + 64:
            self._lines.clear()
        strip = self._lines[key] = self._build_line(msg, index, cols, state, marked, mark, pos, age, left, level,
                                                    det, width, base)
        return strip

    def _build_line(self, msg: Message, index: int, cols: Columns, state: str, marked: bool, mark: str, pos: str,
                    age: str, left: str, level: str, det: Details | None, width: int, base: Style) -> Strip:
        ident = safe_name(msg.id)
        if len(ident) > cols.id_w:
            ident = ident[: cols.id_w - 1] + "…"
        row_style = base
        if index == self.cursor:
            row_style = base + self.get_component_rich_style("messagelist--cursor")
        mark_style = row_style + self.get_component_rich_style("messagelist--marked") if marked else row_style
        state_style = STATE_STYLE.get(state, OTHER_STATE_STYLE)
        segments = [
            Segment(f"{mark} ", mark_style),
            Segment(f"{pos:>{POS_W}} ", row_style),
            Segment(f"{state:<{STATE_W}}", row_style + state_style),
            Segment(f" {ident:<{cols.id_w}}", mark_style),
        ]
        if cols.prio:
            prio = fit_cell(safe_name(msg.priority_text), PRIO_W) if msg.priority_text is not None else ""
            segments.append(Segment(f" {prio:>{PRIO_W}}", row_style))
        segments.append(Segment(f" {age:>{AGE_W}} ", row_style))
        segments.append(Segment(f"{left:>{EXP_W}}", row_style + COUNTDOWN_STYLE[level] if left else row_style))
        if cols.wants_details:
            if cols.rd:
                rd = "" if det is None or det.redeliveries is None else fit_cell(str(det.redeliveries), cols.rd_w)
                rd_style = row_style + Style(color="red", bold=True) if rd not in ("", "0") else row_style
                segments.append(Segment(f" {rd:>{cols.rd_w}}", rd_style))
            if cols.size:
                segments.append(Segment(f" {short_size(det.size) if det else '':>{SIZE_W}}", row_style))
            if cols.preview_w:
                # the preview is made safe by the screen (controls escaped); a Segment never parses markup
                preview = det.preview if det else "…"
                segments.append(Segment(" " + preview[: cols.preview_w], row_style + PREVIEW_STYLE))
        strip = Strip(segments)
        return strip.extend_cell_length(width, row_style).crop(0, width)

    def _ask_details(self) -> None:
        """Ask the screen for the payload details of the rows on screen not yet cached."""
        self._ask_pending = False
        top = round(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        wanted = []
        for m in self.messages[top : min(len(self.messages), top + height)]:
            det = self.details.get(m.id)
            key = seen_as(m)
            if (det is None or det.seen != key) and self._asked.get(m.id) != key:
                wanted.append(m)
                self._asked[m.id] = key  # each message read once per state it is seen in
        if wanted:
            self.post_message(self.NeedDetails(wanted))

    def set_details(self, found: dict[str, Details]) -> None:
        self.details.update(found)
        if len(self.details) > 20_000:  # a cache, not a copy of the queue
            for key in list(self.details)[:10_000]:
                del self.details[key]
                self._asked.pop(key, None)
        self.refresh()

    def forget_details(self) -> None:
        self.details.clear()
        self._asked.clear()
