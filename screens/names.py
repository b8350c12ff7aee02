"""Names fitted into a column: head and tail kept, as the screens show queue names."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from qconsole.safetext import safe_name

#: cells of a root's name in a one-row title (several roots open: ``jobs`` may be in two)
ROOT_W = 32


def short_name(name: str, width: int) -> str:
    """``name`` (made safe to show) in at most ``width`` cells: its head and tail around a
    ``…`` when longer, as queues that differ at the end (``-eu``/``-us``, ``-dlq``) often do."""
    text = safe_name(name)
    if cell_len(text) <= width:
        return text
    if width < 2:
        return "…"[:width]
    room = width - 1
    head = tail = ""
    for ch in text:  # the head takes the odd cell
        if cell_len(head + ch) > room - room // 2:
            break
        head += ch
    for ch in reversed(text):
        if cell_len(head) + cell_len(ch + tail) > room:  # (a variation selector widens the one before)
            break
        tail = ch + tail
    return f"{head}…{tail}"


def one_row_title(before: Text, name: str, after: Text, width: int) -> Text:
    """A one-row title naming a queue: ``name`` (bold) shortened around ``…`` to the room that
    ``before`` and ``after`` leave in ``width`` cells (at least 12), never wrapped onto a
    second row the screen does not show (a long name there left "publish to" naming nothing)."""
    room = max(12, width - before.cell_len - after.cell_len)
    title = Text.assemble(before, (short_name(name, room), "bold"), after)
    title.no_wrap, title.overflow = True, "ellipsis"
    return title
