"""The terminal side of ``report``: a Rich summary of summary.json and progress on stderr.

Queue names and ids come from the disk: they go through ``safe_text`` like everywhere else.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..output.humanize import duration, size
from ..safetext import safe_text
from ..states import STATES


def _age(x: float | None) -> str:
    return "-" if x is None else duration(x)


def _size(x: float | None) -> str:
    return "-" if x is None else size(int(x))


#: eighths of a cell, for bars drawn with block characters
_EIGHTHS = " ▏▎▍▌▋▊▉█"
BAR_WIDTH = 12


def bar(n: int, top: int, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``n`` against ``top`` in ``width`` cells (eighth-cell steps);
    any non-zero count shows at least a sliver."""
    if n <= 0 or top <= 0:
        return ""
    eighths = max(1, round(n / top * width * 8))
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


_LEVELS = "▁▂▃▄▅▆▇█"


def _count(n: int) -> str:
    """A count in at most 5 characters: 999, 12k, 1.2M."""
    if n < 1000:
        return str(n)
    for div, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1000, "k")):
        if n >= div:
            x = n / div
            return f"{x:.1f}{unit}" if x < 10 else f"{x:.0f}{unit}"
    return str(n)


def histogram_table(doc: dict[str, Any]) -> Table:
    """qshape's picture: one row per queue and a TOTAL row, a column per age bucket; each cell
    is the count with a bar glyph scaled to the largest bucket of its row (fits 80 columns)."""
    table = Table(title="message ages per queue (qshape buckets; bar: share of the row's largest bucket)",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("queue", no_wrap=True, max_width=16)
    table.add_column("total", justify="right")
    for b in doc["age_buckets"]:
        table.add_column(b["bucket"], justify="right", no_wrap=True)
    rows = [(safe_text(q["name"]), q["age_histogram"]) for q in doc["queues"]]
    rows.append((Text("TOTAL", style="bold"), doc["totals"]["age_histogram"]))
    for name, hist in rows:
        counts = [b["count"] for b in hist]
        top = max(counts) if counts else 0
        cells = []
        for n in counts:
            cell = Text(_count(n))
            if n and top:
                cell.append(" ")
                cell.append(_LEVELS[min(7, (n * 8 - 1) // top)], style="cyan")
            cells.append(cell)
        table.add_row(name, _count(sum(counts)), *cells)
    return table


def total_bars(doc: dict[str, Any], width: int = 40) -> Table:
    """The whole root's ages as horizontal bars, one row per bucket."""
    hist = doc["totals"]["age_histogram"]
    top = max((b["count"] for b in hist), default=0)
    table = Table(title="message ages, all queues", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("age")
    table.add_column("messages", justify="right")
    table.add_column("", no_wrap=True)
    for b in hist:
        table.add_row(b["bucket"], str(b["count"]), Text(bar(b["count"], top, width), style="cyan"))
    return table


def summary_renderable(doc: dict[str, Any]) -> RenderableType:
    title = Text("qconsole report · ")
    title.append_text(safe_text(doc["root"]))
    title.append(f" ({doc['layout']})")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("queue", no_wrap=True)
    for s in STATES:
        table.add_column(s, justify="right")
    table.add_column("poison", justify="right")
    table.add_column("dups", justify="right")
    table.add_column("errors", justify="right")
    spreads = Table(title="ages and payload sizes (p50 / p95 / p99 / max)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    spreads.add_column("queue", no_wrap=True)
    for head in ("age p50", "p95", "p99", "max", "size p50", "p95", "p99", "max"):
        spreads.add_column(head, justify="right")
    for q in doc["queues"]:
        a, z = q["percentiles"]["age_s"], q["percentiles"]["size_bytes"]
        poison = "-" if q["poison"] is None else str(q["poison"]["count"])
        dups = q["duplicates"]["messages"]
        table.add_row(
            safe_text(q["name"]),
            *[str(q["counts"][s]) for s in STATES],
            Text(poison, style="red" if poison not in ("-", "0") else ""),
            Text(str(dups), style="yellow" if dups else ""),
            Text(str(q["errors"]), style="red" if q["errors"] else ""),
        )
        spreads.add_row(
            safe_text(q["name"]),
            _age(a["p50"]), _age(a["p95"]), _age(a["p99"]), _age(a["max"]),
            _size(z["p50"]), _size(z["p95"]), _size(z["p99"]), _size(z["max"]),
        )
    t = doc["totals"]
    lines: list[RenderableType] = [table, histogram_table(doc), total_bars(doc), spreads]
    poison_text = (
        "poison not recorded" if t["poison_count"] is None
        else f"{t['poison_count']} poison candidate(s) (redelivered >= {doc['poison_threshold']} times)"
    )
    lines.append(Text(
        f"{t['queues']} queue(s), {t['total']} message(s) "
        f"({', '.join(f'{t[s]} {s}' for s in STATES if t[s])}), {size(t['bytes'])}; "
        f"{poison_text}, {t['duplicate_messages']} message(s) with a duplicated payload, "
        f"{t['errors']} file(s) with errors"
    ))
    if doc["oldest_backlog"]:
        line = Text("oldest backlog: ")
        for i, b in enumerate(doc["oldest_backlog"][:5]):
            if i:
                line.append(", ")
            line.append_text(safe_text(b["name"]))
            line.append(f" {duration(b['oldest_ready_age_s'])} ({b['ready']} ready)")
        lines.append(line)
    for q in doc["queues"]:
        p = q["poison"]
        if p and p["top"]:
            line = Text("poison in ")
            line.append_text(safe_text(q["name"]))
            line.append(": ")
            for i, item in enumerate(p["top"][:5]):
                if i:
                    line.append(", ")
                line.append_text(safe_text(str(item["id"])))
                line.append(f" ×{item['redeliveries']}")
            if p["count"] > 5:
                line.append(f" … {p['count'] - 5} more")
            lines.append(line)
        d = q["duplicates"]
        if d["top"]:
            line = Text("duplicated payloads in ")
            line.append_text(safe_text(q["name"]))
            line.append(f": {d['payloads']} payload(s) seen more than once; most copies: ")
            line.append(", ".join(f"{item['sha256'][:12]}… ×{item['count']}" for item in d["top"][:3]))
            lines.append(line)
    for note in doc.get("notes", ()):
        lines.append(Text(note, style="dim"))
    if doc.get("trends") is not None:
        h = doc.get("history") or {}
        lines.append(Text(
            f"trends: {len(doc['trends'])} hourly row(s) from {h.get('samples', 0)} sample(s)"
            f" ({h.get('skipped_lines', 0)} line(s) skipped)"
        ))
    e = doc["engine"]
    out = doc["outputs"]
    where = Text(f"Spark {e['spark_version']} on {e['master']} · ")
    where.append_text(safe_text(out["messages"]))
    if out.get("trends"):
        where.append(" · ")
        where.append_text(safe_text(out["trends"]))
    lines.append(where)
    return Group(*lines)


class JobProgress:
    """Progress on stderr: one line per finished stage (listing, reading, summarising) with its
    counts, always; on a terminal also a spinner naming the running stage with live counts
    (files listed/read, as tasks finish) and Spark's task counts."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self._phase = "starting"
        self._started = time.monotonic()
        self._sc: Any = None
        self._detail: Callable[[], str] | None = None
        self._stop = threading.Event()
        self._status: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "JobProgress":
        if self.live:
            self._status = self.console.status(self._line())
            self._status.start()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        if self._status is not None:
            self._status.stop()

    def phase(self, text: str) -> None:
        self._phase = text
        self._update()

    def detail(self, fn: Callable[[], str] | None) -> None:
        """A callable giving the running stage's counts; polled (it may print a line itself)."""
        self._detail = fn
        self._update()

    def line(self, text: str) -> None:
        """A finished stage: printed above the spinner, or as a plain line when piped."""
        self.console.print(Text(text), soft_wrap=True)

    def watch(self, spark_context: Any) -> None:
        self._sc = spark_context

    def _tasks(self) -> str:
        if self._sc is None:
            return ""
        try:
            tracker = self._sc.statusTracker()
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
        except Exception:  # the tracker is a courtesy; never let it break the job
            return ""
        return f" · tasks {done}/{total}" if total else ""

    def _counts(self) -> str:
        fn = self._detail
        if fn is None:
            return ""
        try:
            return f" · {fn()}"
        except Exception:  # a courtesy too
            return ""

    def _line(self) -> str:
        return f"{self._phase}{self._counts()}{self._tasks()} · {time.monotonic() - self._started:.0f}s"

    def _update(self) -> None:
        if self._status is not None:
            self._status.update(self._line())

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            if self._status is not None:
                self._update()
            else:
                self._counts()  # piped: no spinner, but the detail still prints its stage lines
