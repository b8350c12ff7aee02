"""The root screen: one live row per queue, rescanned in a thread worker."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from qconsole.errors import QConsoleError
from qconsole.model import QueueScan
from qconsole.output import humanize
from qconsole.safetext import safe_name, safe_text
from qconsole.backends import open_target as Root

from .rates import QueueHistory, rate_text

#: below this many messages a queue is scanned with ids, so in/out rates are exact
ID_RATE_LIMIT = 20_000

QUEUE_WIDTH = 12
#: between status fields: visible, so fields never read as one word
SEP = " · "
#: backlog samples shown: with the other columns this fits 80 columns
SPARK_WIDTH = 7

COLUMNS = [
    ("queue", "queue"), ("layout", "layout"), ("ready", "ready"), ("inflight", "infl"),
    ("expired", "exp"), ("writing", "wr"), ("oldest", "oldest"), ("next", "next"),
    ("in", "in/s"), ("out", "out/s"), ("backlog", "backlog"),
]


@dataclass
class ScanBatch:
    """What one pass over every root found."""

    at: float
    duration_s: float
    rows: list[tuple[int, QueueScan, frozenset[str] | None]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class RootScreen(Screen[None]):
    """Queues of every root, counts by state, ages, rates and a backlog sparkline."""

    BINDINGS = [
        Binding("enter", "open_queue", "Open", id="root.open"),
        Binding("slash", "filter", "Filter", id="root.filter"),
        Binding("s", "settings", "Settings", id="root.settings"),
        Binding("p", "publish", "Publish", id="root.publish"),
        Binding("g", "rescan", "Rescan", id="root.rescan"),
        Binding("q", "app.quit", "Quit", id="root.quit"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="root.clear_filter"),
    ]

    class Scanned(TMessage):
        def __init__(self, batch: ScanBatch) -> None:
            super().__init__()
            self.batch = batch

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, QueueHistory] = {}
        self.scans: dict[str, tuple[int, QueueScan]] = {}
        self.filter_text = ""
        self.last_batch: ScanBatch | None = None
        self._timer = None

    def compose(self) -> ComposeResult:
        yield Header()
        table: DataTable[Text | str] = DataTable(cursor_type="row", id="queues")
        for key, label in COLUMNS:
            # a fixed queue-column width keeps the cursor row's cached render in step with the others
            table.add_column(label, key=key, width=QUEUE_WIDTH if key == "queue" else None)
        yield table
        yield Input(placeholder="filter queues (escape clears)", id="filter", classes="hidden")
        yield Static("scanning…", id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.rescan()

    def on_screen_resume(self) -> None:
        if self.last_batch is not None:
            self.rescan()

    @property
    def qapp(self):  # noqa: ANN201 (the app, typed)
        from .app import QConsoleApp

        assert isinstance(self.app, QConsoleApp)
        return self.app

    # -- scanning -----------------------------------------------------------------------
    def rescan(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._scan_worker(list(self.qapp.roots), self.qapp.clock, self.qapp.timer)

    @work(thread=True, exclusive=True, exit_on_error=False, group="root-scan")
    def _scan_worker(self, roots: list[Root], clock, timer) -> None:  # noqa: ANN001
        started = timer()
        batch = ScanBatch(at=clock(), duration_s=0.0)
        for i, root in enumerate(roots):
            try:
                names, errors = root.queue_names()
            except QConsoleError as err:
                batch.errors.append(str(err))
                continue
            batch.errors.extend(errors)
            for name in names:
                key = row_key(i, name)
                last = self.scans.get(key)
                small = last is None or last[1].total <= ID_RATE_LIMIT
                try:
                    scan = root.scan_queue(name, batch.at, collect=small)
                except QConsoleError as err:  # vanished between listing and scan
                    scan = QueueScan(name=name, layout=root.layout, scanned_at=batch.at, errors=[str(err)])
                except OSError as err:
                    scan = QueueScan(name=name, layout=root.layout, scanned_at=batch.at,
                                     errors=[f"cannot read {name}: {err.strerror}"])
                ids = frozenset(m.id for m in scan.messages) if scan.messages is not None else None
                scan.messages = None  # the root screen needs counts only; free the memory
                batch.rows.append((i, scan, ids))
        batch.duration_s = timer() - started
        self.post_message(self.Scanned(batch))

    def on_root_screen_scanned(self, event: Scanned) -> None:
        batch = event.batch
        self.last_batch = batch
        seen = set()
        for i, scan, ids in batch.rows:
            key = row_key(i, scan.name)
            seen.add(key)
            self.scans[key] = (i, scan)
            self.history.setdefault(key, QueueHistory()).add(scan, batch.at, ids)
        for key in list(self.scans):
            if key not in seen:
                del self.scans[key]
                self.history.pop(key, None)
        self.refresh_table()
        self.update_status()
        if self.qapp.interval > 0:
            self._timer = self.set_timer(self.qapp.interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self.is_current:
            self.rescan()
        # not visible: on_screen_resume rescans when the operator comes back

    # -- table --------------------------------------------------------------------------
    def visible_keys(self) -> list[str]:
        keys = sorted(self.scans, key=lambda k: (self.scans[k][1].name, self.scans[k][0]))
        if self.filter_text:
            f = self.filter_text.lower()
            keys = [k for k in keys if f in self.scans[k][1].name.lower()]
        return keys

    def row_cells(self, key: str) -> list[Text | str]:
        _, scan = self.scans[key]
        hist = self.history.get(key, QueueHistory())
        now = self.qapp.clock()
        failed = bool(scan.errors) and scan.total == 0
        c = scan.counts

        def num(state: str, style: str = "") -> Text:
            if failed:
                return Text("?", style="red", justify="right")
            n = c.get(state, 0)
            return Text(str(n), style=style if n else "dim", justify="right")

        nxt = scan.next_expiry_in(now)
        if scan.errors:
            backlog = safe_text(scan.errors[0][:40], style="red", keep_newlines=False)
        else:
            backlog = Text(hist.spark(SPARK_WIDTH), style="cyan")
        return [
            safe_text(scan.name, style="bold", keep_newlines=False),
            Text(scan.layout, style="dim"),
            num("ready"),
            num("inflight", "green"),
            num("expired", "red"),
            num("writing", "yellow"),
            Text(humanize.duration(scan.oldest_ready_age(now)), justify="right"),
            Text(humanize.duration(nxt), justify="right", style="yellow" if nxt is not None and nxt <= 30 else ""),
            Text(rate_text(hist.rate_in), justify="right"),
            Text(rate_text(hist.rate_out), justify="right"),
            backlog,
        ]

    def refresh_table(self) -> None:
        """Update rows in place by key: the cursor stays on its queue."""
        table = self.query_one(DataTable)
        wanted = self.visible_keys()
        present = [str(k.value) for k in table.rows]
        with self.app.batch_update():
            for key in present:
                if key not in wanted:
                    table.remove_row(key)
            present_set = {str(k.value) for k in table.rows}
            # rows are appended; keep name order by re-sorting only when a new queue appears
            new = [k for k in wanted if k not in present_set]
            for key in present_set & set(wanted):
                for (col, _), value in zip(COLUMNS, self.row_cells(key)):
                    table.update_cell(key, col, value)
            for key in new:
                table.add_row(*self.row_cells(key), key=key)
            if new and len(wanted) > len(new):
                cursor_key = self.cursor_key()
                table.sort("queue", key=lambda cell: cell.plain if isinstance(cell, Text) else str(cell))
                if cursor_key is not None:
                    table.move_cursor(row=table.get_row_index(cursor_key))

    def cursor_key(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except Exception:  # noqa: BLE001 (cursor outside an emptied table)
            return None

    def update_status(self) -> None:
        b = self.last_batch
        if b is None:
            return
        shown = len(self.visible_keys())
        text = Text.assemble(
            ("scanned ", "dim"), humanize.clock(b.at)[11:],
            (" in ", "dim"), f"{b.duration_s * 1000:.0f} ms", (SEP, "dim"),
            f"{shown}" + (f"/{len(self.scans)}" if shown != len(self.scans) else ""), (" queues", "dim"),
        )
        # several roots are listed in the header; one is named here too
        if len(self.qapp.roots) == 1:
            text.append(SEP + "root ", "dim")
            text.append(safe_name(self.qapp.roots[0].path), "bold")
        else:
            text.append(SEP, "dim")
            text.append(f"{len(self.qapp.roots)} roots")
        if self.filter_text:
            text.append(SEP + "filter ", style="dim")
            text.append(safe_name(self.filter_text), style="yellow")
        if b.errors:
            text.append(SEP, style="dim")
            text.append(safe_name(b.errors[0]), style="red")
        if self.qapp.read_only:
            text.append(SEP, style="dim")
            text.append("READ-ONLY", style="bold red")
        self.query_one("#status", Static).update(text)

    # -- selection ----------------------------------------------------------------------
    def selected(self) -> tuple[Root, str] | None:
        key = self.cursor_key()
        if key is None or key not in self.scans:
            return None
        i, scan = self.scans[key]
        return self.qapp.roots[i], scan.name

    def action_open_queue(self) -> None:
        key = self.cursor_key()
        sel = self.selected()
        if sel and key:
            from .queue_screen import QueueScreen

            self.app.push_screen(QueueScreen(*sel, counts=self.scans[key][1]))

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_queue()

    def action_settings(self) -> None:
        sel = self.selected()
        if sel:
            from .settings_screen import SettingsScreen

            self.app.push_screen(SettingsScreen(*sel))

    def action_publish(self) -> None:
        sel = self.selected()
        if sel and not self.qapp.refuse_if_read_only("publish"):
            from .publish_screen import PublishScreen

            self.app.push_screen(PublishScreen(*sel), lambda _r: self.rescan())

    def action_rescan(self) -> None:
        self.rescan()

    # -- filter -------------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.query_one(DataTable).focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.refresh_table()
        self.update_status()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.input.add_class("hidden")
        self.query_one(DataTable).focus()


def row_key(root_index: int, queue: str) -> str:
    return f"{root_index}:{queue}"
