"""Rich tables for terminal output; every cell of queue data goes through safe_text.

Both tables fit 80 columns: short headers, no box borders between cells, one line per row
(long names are shortened with an ellipsis; ``--json`` always carries the full values).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)

from ..model import Message, RootScan
from ..safetext import escape_controls, safe_name, safe_text
from ..states import DELAYED, EXPIRED, FOREIGN, INFLIGHT, READY, STATES, WRITING
from . import humanize

if TYPE_CHECKING:
    from rich.console import RenderableType

STATE_STYLES = {READY: "green", INFLIGHT: "cyan", EXPIRED: "red", DELAYED: "blue", "writing": "yellow",
                "foreign": "magenta"}


def short_id(msg: Message) -> str:
    """The id as the ls table shows it: cut to the prefix its backend says is unique enough
    (ddmq's 32 random hex digits; peek takes a unique prefix)."""
    from ..backends import backend_class

    keep = backend_class(msg.layout).short_id_chars
    if keep and len(msg.id) > keep + 1:
        return msg.id[:keep] + "…"
    return msg.id


def _table(**kwargs: object) -> "Table":
    from rich import box
    from rich.table import Table

    return Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, title_justify="left", **kwargs)  # type: ignore[arg-type]


if TYPE_CHECKING:
    from rich.table import Table


def table_states(scan: RootScan) -> tuple[str, ...]:
    """The state columns that apply: a store that is no directory (RSMQ) has no writing/foreign
    files, one without the delayed state (the file layouts) no delayed column (a column appears
    anyway when something is counted in it)."""
    from ..backends import FILE_KINDS, backend_class
    from ..backends.base import DELAYED as CAN_DELAY

    absent = set()
    if scan.layout not in FILE_KINDS:
        absent |= {WRITING, FOREIGN}
    if CAN_DELAY not in backend_class(scan.layout).capabilities:
        absent.add(DELAYED)
    return tuple(s for s in STATES if s not in absent or any(q.counts.get(s) for q in scan.queues))


def _stats_parts(scan: RootScan) -> tuple[str, tuple[str, ...], list[list[str]], list[str] | None,
                                          list[tuple[str, str, str]]]:
    """The stats table's title, the states shown, a row per queue, the totals' row (None for
    one queue) and the notes (prefix, its style, text): what the Rich table and the Rich-free
    text are both made of."""
    now = scan.generated_at
    states = table_states(scan)
    rows = [[safe_name(q.name), *[str(q.counts[s]) for s in states], str(q.total),
             humanize.duration(q.oldest_ready_age(now)), humanize.duration(q.next_expiry_in(now))]
            for q in scan.queues]
    totals = scan.totals()
    total = ["total", *[str(totals[s]) for s in states], str(totals["total"]), "", ""] if len(rows) > 1 else None
    notes = [(kind, style, safe_name(f"{q.name}: {line}")) for q in scan.queues
             for kind, style, lines in (("warning ", "yellow", q.warnings), ("error ", "red", q.errors))
             for line in lines]
    notes += [("error ", "red", safe_name(e)) for e in scan.errors]
    return escape_controls(f"{scan.root}  ({scan.layout})"), states, rows, total, notes


def stats_table(scan: RootScan) -> "RenderableType":
    from rich.console import Group
    from rich.text import Text

    title, states, rows, total, notes = _stats_parts(scan)
    table = _table(title=Text(title, end=""), show_footer=False)
    table.add_column("queue", overflow="ellipsis", min_width=5)  # wrapable: the one that shrinks
    # numbers and headers are never cut; a long queue name is (with an ellipsis) instead
    for s in states:
        table.add_column(s, justify="right", style=STATE_STYLES.get(s, ""), no_wrap=True, min_width=len(s))
    table.add_column("total", justify="right", no_wrap=True, min_width=5)
    table.add_column("oldest", justify="right", no_wrap=True, min_width=6)
    table.add_column("next-exp", justify="right", no_wrap=True, min_width=8)
    for row in rows:
        name = Text(row[0], end="")
        name.no_wrap, name.overflow = True, "ellipsis"  # one line per queue, however narrow
        table.add_row(name, *row[1:])
    if total is not None:
        table.add_section()
        table.add_row(Text("total", style="bold"), *total[1:])
    texts = [Text.assemble((kind, style), Text(text, end="")) for kind, style, text in notes]
    return Group(table, *texts) if texts else table


def stats_terminal(scan: RootScan, terminal: bool, environ: dict[str, str] | None = None) -> str | None:
    """What Rich prints for :func:`stats_table` (on a terminal or not: ``terminal``), written
    without importing Rich (:mod:`.term_table`); None when only Rich can say."""
    from .term_table import Screen, simple_table

    title, states, rows, total, notes = _stats_parts(scan)
    header = ("queue", *states, "total", "oldest", "next-exp")
    cells: list = list(rows)
    if total is not None:
        cells += [None, [("total", "bold"), *total[1:]]]
    return simple_table(Screen(terminal, environ), title, header, cells, (False, *[True] * (len(header) - 1)),
                        ("", *[STATE_STYLES.get(s, "") for s in states], "", "", ""), notes)


def _created(ts: float | None, now: float) -> str:
    """``HH:MM:SS`` today, ``mm-dd HH:MM`` otherwise (the full time is in --json)."""
    if ts is None:
        return "-"
    full = humanize.clock(ts)
    return full[11:] if full[:10] == humanize.clock(now)[:10] else full[5:16]


def _deadline(deadline: float | None, now: float) -> str:
    if deadline is None:
        return "-"
    left = deadline - now
    return f"in {humanize.duration(left)}" if left > 0 else f"{humanize.duration(-left)} ago"


#: the ls table's columns, and which of them are right-aligned
MESSAGE_COLUMNS = ("#", "id", "state", "prio", "created", "deadline", "size")
_MESSAGE_RIGHT = (True, False, False, True, False, False, True)
_STATE_AT = MESSAGE_COLUMNS.index("state")


def terminal_cells(messages: list[Message], now: float, sizes: dict[str, int | None]) -> list[tuple[str, ...]]:
    """The ls table's cells on a terminal: short ids, controls escaped (the state column is
    styled by STATE_STYLES)."""
    return [
        (
            str(i) if m.state == READY else "",
            safe_name(short_id(m)),
            m.state,
            m.priority_text or "-",
            _created(m.created_at, now),
            _deadline(m.deadline, now),
            humanize.size(sizes.get(m.relpath)),
        )
        for i, m in enumerate(messages, 1)
    ]


def messages_table(queue: str, messages: list[Message], now: float, sizes: dict[str, int | None]) -> "RenderableType":
    from rich.text import Text

    table = _table(title=safe_text(queue))
    for col, right in zip(MESSAGE_COLUMNS, _MESSAGE_RIGHT):
        table.add_column(col, justify="right" if right else "left", no_wrap=True, overflow="ellipsis")
    for cells in terminal_cells(messages, now, sizes):
        # Text, not str: Rich would read a str cell as markup
        table.add_row(*(Text(c, style=STATE_STYLES.get(c, "") if i == _STATE_AT else "", end="")
                        for i, c in enumerate(cells)))
    return table


def messages_terminal(queue: str, messages: list[Message], now: float, sizes: dict[str, int | None],
                      notes: list[str], environ: dict[str, str] | None = None) -> str | None:
    """What Rich prints on a terminal for :func:`messages_table` and then the ``notes`` lines,
    written without importing Rich (:mod:`.term_table`); None when only Rich can say."""
    from .term_table import Screen, simple_table

    rows = [[(c, STATE_STYLES.get(c, "")) if i == _STATE_AT else c for i, c in enumerate(cells)]
            for cells in terminal_cells(messages, now, sizes)]
    return simple_table(Screen(True, environ), escape_controls(queue), MESSAGE_COLUMNS, rows, _MESSAGE_RIGHT,
                        notes=[("", "", note) for note in notes])


def messages_plain(messages: list[Message], now: float, sizes: dict[str, int | None]) -> list[str]:
    """The ls table as plain aligned lines (for a pipe: :mod:`.plain`), with the full ids
    a script passes on to ``peek``/``delete``, not the shortened ones the terminal shows."""
    from .plain import aligned, field

    rows = [
        (
            str(i) if m.state == READY else "",
            field(safe_name(m.id)),
            m.state,
            m.priority_text or "-",
            _created(m.created_at, now),
            _deadline(m.deadline, now),
            humanize.size(sizes.get(m.relpath)),
        )
        for i, m in enumerate(messages, 1)
    ]
    return aligned(MESSAGE_COLUMNS, rows, _MESSAGE_RIGHT)
