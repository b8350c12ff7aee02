"""Rich tables for terminal output; every cell of queue data goes through safe_text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import Message, RootScan
from ..safetext import safe_text
from ..states import EXPIRED, INFLIGHT, READY, STATES
from . import humanize

if TYPE_CHECKING:
    from rich.console import RenderableType

STATE_STYLES = {READY: "green", INFLIGHT: "cyan", EXPIRED: "red", "writing": "yellow", "foreign": "magenta"}


def stats_table(scan: RootScan) -> "RenderableType":
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    now = scan.generated_at
    table = Table(title=safe_text(f"{scan.root}  ({scan.layout})"), title_justify="left")
    table.add_column("queue")
    for s in STATES:
        table.add_column(s, justify="right", style=STATE_STYLES.get(s, ""))
    table.add_column("total", justify="right")
    table.add_column("oldest ready", justify="right")
    table.add_column("next expiry", justify="right")
    for q in scan.queues:
        table.add_row(
            safe_text(q.name, keep_newlines=False),
            *[str(q.counts[s]) for s in STATES],
            str(q.total),
            humanize.duration(q.oldest_ready_age(now)),
            humanize.duration(q.next_expiry_in(now)),
        )
    totals = scan.totals()
    table.add_section()
    table.add_row(Text("total", style="bold"), *[str(totals[s]) for s in STATES], str(totals["total"]), "", "")
    notes: list[Text] = []
    for q in scan.queues:
        for w in q.warnings:
            notes.append(Text.assemble(("warning ", "yellow"), safe_text(f"{q.name}: {w}", keep_newlines=False)))
        for e in q.errors:
            notes.append(Text.assemble(("error ", "red"), safe_text(f"{q.name}: {e}", keep_newlines=False)))
    for e in scan.errors:
        notes.append(Text.assemble(("error ", "red"), safe_text(e, keep_newlines=False)))
    return Group(table, *notes) if notes else table


def messages_table(queue: str, messages: list[Message], now: float, sizes: dict[str, int | None]) -> "RenderableType":
    from rich.table import Table

    table = Table(title=safe_text(queue), title_justify="left")
    for col, just in (("#", "right"), ("id", "left"), ("state", "left"), ("priority", "right"),
                      ("created", "left"), ("deadline", "left"), ("size", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i, m in enumerate(messages, 1):
        if m.deadline is not None:
            left = m.deadline - now
            dl = f"{humanize.clock(m.deadline)} ({'in ' + humanize.duration(left) if left > 0 else humanize.duration(-left) + ' ago'})"
        else:
            dl = "-"
        table.add_row(
            str(i) if m.state == READY else "",
            safe_text(m.id, keep_newlines=False),
            safe_text(m.state, STATE_STYLES.get(m.state, "")),
            m.priority_text or "-",
            humanize.clock(m.created_at),
            dl,
            humanize.size(sizes.get(m.relpath)),
        )
    return table
