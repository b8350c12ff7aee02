"""The terminal side of ``report``: a Rich summary of summary.json and progress on stderr.

Queue names and ids come from the disk: they go through ``safe_text`` like everywhere else.
"""

from __future__ import annotations

import threading
import time
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
    spreads = Table(title="ages and payload sizes (p50 / p95 / max)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0))
    spreads.add_column("queue", no_wrap=True)
    for head in ("age p50", "p95", "max", "size p50", "p95", "max"):
        spreads.add_column(head, justify="right")
    for q in doc["queues"]:
        a, z = q["percentiles"]["age_s"], q["percentiles"]["size_bytes"]
        table.add_row(
            safe_text(q["name"]),
            *[str(q["counts"][s]) for s in STATES],
            Text(str(q["poison_count"]), style="red" if q["poison_count"] else ""),
            Text(str(q["duplicates"]), style="yellow" if q["duplicates"] else ""),
            Text(str(q["errors"]), style="red" if q["errors"] else ""),
        )
        spreads.add_row(
            safe_text(q["name"]),
            _age(a["p50"]), _age(a["p95"]), _age(a["max"]),
            _size(z["p50"]), _size(z["p95"]), _size(z["max"]),
        )
    t = doc["totals"]
    lines: list[RenderableType] = [table, spreads]
    lines.append(Text(
        f"{t['queues']} queue(s), {t['total']} message(s) "
        f"({', '.join(f'{t[s]} {s}' for s in STATES if t[s])}), {size(t['bytes'])}; "
        f"{t['poison_count']} poison candidate(s) (requeue_counter >= {doc['poison_threshold']}), "
        f"{t['duplicates']} duplicate(s), {t['errors']} file(s) with errors"
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
        if q["poison"]:
            line = Text("poison in ")
            line.append_text(safe_text(q["name"]))
            line.append(": ")
            for i, p in enumerate(q["poison"][:5]):
                if i:
                    line.append(", ")
                line.append_text(safe_text(str(p["id"])))
                line.append(f" ×{p['requeue_counter']}")
            if q["poison_count"] > 5:
                line.append(f" … {q['poison_count'] - 5} more")
            lines.append(line)
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
    """A spinner line on stderr naming the phase, with Spark's task counts while a stage runs.

    Silent when stderr is not a terminal (scripts and cron keep a clean stderr).
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.enabled = console.is_terminal
        self._phase = "starting"
        self._started = time.monotonic()
        self._sc: Any = None
        self._stop = threading.Event()
        self._status: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "JobProgress":
        if self.enabled:
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

    def _line(self) -> str:
        return f"{self._phase}{self._tasks()} · {time.monotonic() - self._started:.0f}s"

    def _update(self) -> None:
        if self._status is not None:
            self._status.update(self._line())

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            self._update()
