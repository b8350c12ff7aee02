"""The root screen: one live row per queue, rescanned in a thread worker."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from qconsole.backends.base import DELAYED, SETTINGS, TRASH, WRITING, Backend
from qconsole.errors import QConsoleError
from qconsole.model import QueueScan
from qconsole.output import humanize
from qconsole.output.nagios import CRITICAL, OK, WARNING, Thresholds
from qconsole.safetext import safe_name
from qconsole.states import EXPIRED, INFLIGHT, READY

from .keybox import BurstInput
from .queue_screen import QueueScreen
from .rates import QueueHistory, rate_text
from .publish_screen import PublishScreen
from .settings_screen import SettingsScreen
from .trash_screen import TrashScreen
from .names import short_name
from .services import services

#: below this many messages a queue is scanned with ids, so in/out rates are exact
ID_RATE_LIMIT = 20_000
#: the next pass waits at least this many times the CPU the last one took (a root holding a
#: million-message queue is counted every ~10 s while it changes, not every 2 s)
RESCAN_CPU_SHARE = 0.08
RESCAN_MAX_S = 12.0
#: a queue whose oldest message is this far in the future points at a producer's clock
SKEW_S = 5.0

#: the queue column at 80 columns: a mark ("!": errors or warnings) and the name; a wider
#: terminal gives its extra columns to the names (up to the longest)
QUEUE_WIDTH = 13
#: the terminal width the fixed columns are laid out for
BASE_WIDTH = 80
#: between status fields: visible, so fields never read as one word
SEP = " · "
#: backlog samples shown: with the other columns this fits 80 columns
SPARK_WIDTH = 7

#: (key, label, width): fixed widths, so the table fits 80 columns whatever the values
#: (10 columns × 2 cells of padding + 59 = 79: a vertical scrollbar still fits in 80)
COLUMNS = [
    ("queue", "queue", QUEUE_WIDTH), ("ready", "ready", 6), ("inflight", "infl", 5),
    ("expired", "exp", 4), ("other", "wr", 3), ("oldest", "oldest", 6), ("next", "next", 6),
    ("in", "in/s", 4), ("out", "out/s", 5), ("backlog", "backlog", SPARK_WIDTH),
]

#: root screen orders: (key, label)
SORTS = [("name", "name"), ("backlog", "backlog"), ("oldest", "oldest age"), ("expired", "expired"),
         ("rate", "rate in")]

WIDTHS = {key: width for key, _label, width in COLUMNS}

#: several roots open: a "root" column after the queue's, as wide as its longest label up to
#: this, when the terminal has room for it beyond 80 columns (three rows named `jobs` at 200
#: columns told nothing of which was the file root and which the Redis one)
ROOT_COL_MAX = 24
#: the narrowest root column shown (a longer label keeps its head and tail around …)
ROOT_COL_MIN = 8

LEVEL_STYLE = {OK: "", WARNING: "bold yellow", CRITICAL: "bold red reverse"}


def level(value: float, warn: float | None, crit: float | None) -> int:
    if crit is not None and value >= crit:
        return CRITICAL
    if warn is not None and value >= warn:
        return WARNING
    return OK


def queue_notes(scan: QueueScan, now: float) -> list[tuple[str, str]]:
    """(severity, text) for one queue: scan errors, the store's warnings, clock skew."""
    out = [("error", e) for e in scan.errors] + [("warning", w) for w in scan.warnings]
    age = scan.oldest_ready_age(now)
    if scan.oldest_ready_created is not None and age == 0.0 and scan.oldest_ready_created - now > SKEW_S:
        ahead = humanize.duration(scan.oldest_ready_created - now)
        out.append(("warning", f"clock skew: the oldest ready message was created {ahead} in the future "
                               "(a producer's clock is ahead of this host's)"))
    return out


@dataclass
class ScanBatch:
    """What one pass over every root found."""

    at: float
    duration_s: float
    cpu_s: float = 0.0
    rows: list[tuple[int, QueueScan, frozenset[str] | None]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: the root (its index) each of ``errors`` is about
    error_roots: list[int] = field(default_factory=list)
    #: row key -> (stamp, monotonic time) of the queues counted in this pass
    stamps: dict[str, tuple[object, float]] = field(default_factory=dict)
    #: row key -> when a row was counted, where that is not ``at`` (the first count, forked earlier)
    taken_at: dict[str, float] = field(default_factory=dict)
    #: roots (indexes) whose queues could not be listed in this pass (a Redis server down, a root
    #: gone unreadable): their rows keep the last counts, said in the error line, not emptied
    unreached: set[int] = field(default_factory=set)


class QueueTable(DataTable):  # type: ignore[type-arg]
    """The queues table: j/k move like arrows, home/end go to the first and last row."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    def action_first(self) -> None:
        self.move_cursor(row=0, column=0)

    def action_last(self) -> None:
        self.move_cursor(row=max(0, self.row_count - 1), column=0)


class RootScreen(Screen[None]):
    """Queues of every root, counts by state, ages, rates and a backlog sparkline."""

    MUTATING = frozenset({"publish", "undo"})
    BINDINGS = [
        # priority (run as the key arrives, the queue screen mounted before the next key is
        # taken): the table's own enter posted RowSelected, and a key typed right after it (end,
        # j) moved the cursor first, so the queue under it was opened instead
        Binding("enter", "open_queue", "Open", id="root.open", priority=True, show=False),
        # the moves are priority keys too, so they run in the order typed with enter (and p, s):
        # a key the table handles itself waits in the table's own queue, and "j enter" in one
        # burst opened the queue the cursor was leaving
        Binding("down,j", "move('cursor_down')", "", priority=True, show=False),
        Binding("up,k", "move('cursor_up')", "", priority=True, show=False),
        Binding("pagedown", "move('page_down')", "", priority=True, show=False),
        Binding("pageup", "move('page_up')", "", priority=True, show=False),
        Binding("home", "move('first')", "", priority=True, show=False),
        Binding("end", "move('last')", "", priority=True, show=False),
        Binding("slash", "filter", "Filter", id="root.filter", priority=True),
        Binding("o", "sort", "Sort", id="root.sort"),
        # priority (run as the key arrives, the form mounted and focused before the next key is
        # taken): keys typed after p in one burst went to the list and were lost
        Binding("s", "settings", "Settings", id="root.settings", priority=True),
        Binding("p", "publish", "Publish", id="root.publish", priority=True),
        Binding("g", "rescan", "Rescan", id="root.rescan"),
        Binding("q", "app.quit", "Quit", id="root.quit"),
        Binding("t", "trash", "Trash", show=False, id="root.trash"),
        Binding("u", "undo", "Undo last delete/purge", show=False, id="root.undo"),
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
        self.sort_index = 0
        self.queue_width = QUEUE_WIDTH
        #: the root column's width (0: not shown: one root, or no room)
        self.root_width = 0
        self.last_batch: ScanBatch | None = None
        self._timer = None
        #: row key -> (the store's stamp of the queue, monotonic time) at its last count
        self.stamps: dict[str, tuple[object, float]] = {}
        #: row key -> what each of its cells shows now (cell_look): a pass updates only the cells
        #: that changed (every cell of every row was updated, ~15 % of a core for 2,000 idle queues)
        self.shown: dict[str, list[object]] = {}
        #: row key -> the row's values (row_values) its cells were last made from
        self.values: dict[str, tuple] = {}

    @property
    def qapp(self):  # noqa: ANN201
        return services(self)

    def compose(self) -> ComposeResult:
        yield Header()
        table = QueueTable(cursor_type="row", id="queues")
        self._add_columns(table)
        yield table
        # (enter in it acts at once: keys typed right after it go to the table, not the box)
        yield BurstInput(placeholder="filter queues (escape clears)", id="filter", classes="hidden",
                         on_enter=self._filter_submit)
        yield Static(id="rnotes", classes="hidden")
        yield Static("scanning…", id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.rescan()

    def on_screen_resume(self) -> None:
        if self.last_batch is not None:
            self.rescan()

    def on_resize(self) -> None:
        if self.scans and self.wanted_widths() != (self.queue_width, self.root_width):  # (not for a new height)
            self.refresh_table()

    def column_keys(self) -> list[str]:
        """The table's columns in order: the root's after the queue's when it is shown."""
        keys = [key for key, _label, _width in COLUMNS]
        return keys[:1] + ["root"] + keys[1:] if self.root_width else keys

    def _add_columns(self, table: DataTable) -> None:
        for key, label, width in COLUMNS:
            table.add_column(other_label(self.qapp.roots) if key == "other" else label, key=key,
                             width=self.queue_width if key == "queue" else width)
            if key == "queue" and self.root_width:
                table.add_column("root", key="root", width=self.root_width)

    def root_text(self, i: int) -> str:
        """How the root column names root ``i``: its short label, and its kind when the label
        does not say it (``vsqs``, ``ddmq``, ``redis.sock (rsmq)``)."""
        root = self.qapp.roots[i]
        label = self.qapp.root_label(root) or root.target  # (made safe where it is shown)
        return label if root.kind in label else f"{label} ({root.kind})"

    def wanted_widths(self) -> tuple[int, int]:
        """(queue column, root column): 13 and none at 80 columns. A wider terminal gives what
        it has to spare first to a root column (several roots open), then to the names, up to
        the longest shown."""
        longest = max((cell_len(safe_name(scan.name)) + 1 for _i, scan in self.scans.values()), default=0)
        spare = max(0, self.size.width - BASE_WIDTH)
        root_w = 0
        if len(self.qapp.roots) > 1:
            natural = min(ROOT_COL_MAX, max(cell_len(safe_name(self.root_text(i))) for i in range(len(self.qapp.roots))))
            root_w = min(natural, spare - 2)  # (a column's two cells of padding)
            if root_w >= min(natural, ROOT_COL_MIN):
                spare -= root_w + 2
            else:
                root_w = 0
        return max(QUEUE_WIDTH, min(longest, QUEUE_WIDTH + spare)), root_w

    def wanted_queue_width(self) -> int:
        return self.wanted_widths()[0]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.MUTATING and self.qapp.read_only:
            return False
        if action in ("filter", "publish", "settings", "open_queue", "move") and self.focused is self.query_one("#filter", Input):
            # /, p, s, enter and the moves are priority keys: typed in the box they are text (or submit it;
            # the screen's focus is set at once; has_focus follows only when the box has handled
            # its Focus event)
            return False
        if action in ("settings", "trash"):
            sel = self.selected()
            need = SETTINGS if action == "settings" else TRASH
            # a store without settings offers no screen that could only fail
            return sel is not None and sel[0].can(need)
        if action == "undo":
            # offered with nothing to undo too: u then says so (it was refused without a word)
            return any(r.can(TRASH) for r in self.qapp.roots)
        return True

    # -- scanning -----------------------------------------------------------------------
    def rescan(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._scan_worker(list(self.qapp.roots), self.qapp.clock, self.qapp.timer)

    @work(thread=True, exclusive=True, exit_on_error=False, group="root-scan")
    def _scan_worker(self, roots: list[Backend], clock, timer) -> None:  # noqa: ANN001
        import time

        started = timer()
        cpu = time.thread_time()
        batch = ScanBatch(at=clock(), duration_s=0.0)
        for i, root in enumerate(roots):
            try:
                names, errors = root.queue_names()
            except QConsoleError as err:
                shown = any(j == i for j, _scan in list(self.scans.values()))
                batch.errors.append(f"{err}" + ("; its queues show the counts last read" if shown else ""))
                batch.error_roots.append(i)
                batch.unreached.add(i)
                continue
            batch.errors.extend(errors)
            batch.error_roots.extend([i] * len(errors))
            # a forked process's one-shot count of the big queues, started before the app (the
            # quick way: several processes); waited for only when its first queue comes up
            first, self.qapp.first_counts[i] = self.qapp.first_counts[i], None
            early: dict[str, QueueScan] | None = None
            for name in names:
                key = row_key(i, name)
                last = self.scans.get(key)
                if last is None and first is not None and name in first.names:
                    if early is None:
                        early = first.take() or {}
                    got = early.get(name)
                    if got is not None and got.total > ID_RATE_LIMIT:  # (else listed here, for its ids)
                        # no stamp kept: the next scan lists it again; rates count from when it was taken
                        batch.rows.append((i, got, None))
                        batch.taken_at[key] = got.scanned_at
                        continue
                try:
                    stamp = root.queue_stamp(name)
                except (QConsoleError, OSError):
                    stamp = None
                then = self.stamps.get(key)
                if (last is not None and then is not None and root.unchanged_since(then[0], stamp, time.monotonic() - then[1])
                        and (last[1].next_deadline is None or last[1].next_deadline > batch.at)):
                    # nothing listed changed and no deadline passed: the counts still hold
                    hist = self.history.get(key)
                    batch.rows.append((i, last[1], hist.last_ids if hist else None))
                    continue
                listed_at = time.monotonic()
                try:
                    # counts from names only (what `stats` does); ids too for a small queue (rates)
                    small = last is not None and last[1].total <= ID_RATE_LIMIT
                    scan = root.scan_queue(name, batch.at, collect=small)
                    if last is None and scan.total <= ID_RATE_LIMIT:
                        scan = root.scan_queue(name, batch.at, collect=True)
                    batch.stamps[key] = (stamp, listed_at)
                except QConsoleError as err:  # vanished between listing and scan
                    scan = QueueScan(name=name, layout=root.kind, scanned_at=batch.at, errors=[str(err)])
                except OSError as err:
                    scan = QueueScan(name=name, layout=root.kind, scanned_at=batch.at,
                                     errors=[f"cannot read {name}: {err.strerror}"])
                ids = frozenset(m.id for m in scan.messages) if scan.messages is not None else None
                scan.messages = None  # the root screen needs counts only; free the memory
                batch.rows.append((i, scan, ids))
            if first is not None and early is None:
                first.close()  # none of its queues is here any more: stop and reap it
        batch.duration_s = timer() - started
        batch.cpu_s = time.thread_time() - cpu
        self.post_message(self.Scanned(batch))

    def on_root_screen_scanned(self, event: Scanned) -> None:
        batch = event.batch
        self.last_batch = batch
        seen = set()
        for i, scan, ids in batch.rows:
            key = row_key(i, scan.name)
            seen.add(key)
            self.scans[key] = (i, scan)
            self.history.setdefault(key, QueueHistory()).add(scan, batch.taken_at.get(key, batch.at), ids)
        self.stamps.update(batch.stamps)
        for key in list(self.scans):
            if key not in seen and self.scans[key][0] not in batch.unreached:
                del self.scans[key]
                self.history.pop(key, None)
                self.stamps.pop(key, None)
        self.refresh_table()
        self.update_status()
        self.refresh_bindings()
        if self.qapp.interval > 0:
            self._timer = self.set_timer(max(self.qapp.interval, min(RESCAN_MAX_S, batch.cpu_s / RESCAN_CPU_SHARE)),
                                         self._tick)

    def _tick(self) -> None:
        self._timer = None
        # on top, not merely visible behind another screen (Screen.is_current counts that too)
        if self.app.screen is self:
            self.rescan()
        # not visible: on_screen_resume rescans when the operator comes back

    # -- table --------------------------------------------------------------------------
    def sort_value(self, key: str) -> tuple:
        i, scan = self.scans[key]
        how = SORTS[self.sort_index][0]
        now = self.qapp.clock()
        if how == "backlog":
            return (-scan.counts.get(READY, 0), scan.name, i)
        if how == "oldest":
            return (-(scan.oldest_ready_age(now) or -1.0), scan.name, i)
        if how == "expired":
            return (-scan.counts.get(EXPIRED, 0), scan.name, i)
        if how == "rate":
            return (-(self.history.get(key, QueueHistory()).rate_in or 0.0), scan.name, i)
        return (scan.name, i)

    def visible_keys(self) -> list[str]:
        keys = sorted(self.scans, key=self.sort_value)
        if self.filter_text:
            f = self.filter_text.lower()
            keys = [k for k in keys if f in self.scans[k][1].name.lower()]
        return keys

    def row_values(self, key: str) -> tuple:
        """Everything a row shows, as plain values (the texts of the times and rates as shown):
        cheap to make and compare, so a pass builds cells only for the rows that changed."""
        _, scan = self.scans[key]
        hist = self.history.get(key) or _NO_HISTORY
        now = self.qapp.clock()
        t: Thresholds = self.qapp.thresholds
        c = scan.counts
        age, nxt = scan.oldest_ready_age(now), scan.next_expiry_in(now)
        notes = queue_notes(scan, now)
        mark = 2 if any(sev == "error" for sev, _ in notes) else 1 if notes else 0
        ready, expired = c.get(READY, 0), c.get(EXPIRED, 0)
        i = self.scans[key][0]
        return (
            scan.name, self.queue_width, bool(scan.errors) and scan.total == 0, mark,
            ready, c.get(INFLIGHT, 0), expired,
            sum(n for s, n in c.items() if s not in (READY, INFLIGHT, EXPIRED, "foreign")),
            level(ready, t.warn_ready, t.crit_ready), level(age or 0.0, t.warn_age, t.crit_age),
            level(expired, t.warn_expired, t.crit_expired),
            humanize.duration(age), humanize.duration(nxt), nxt is not None and nxt <= 30,
            rate_text(hist.rate_in, WIDTHS["in"]), rate_text(hist.rate_out, WIDTHS["out"]), hist.spark(SPARK_WIDTH),
            self.root_text(i) if self.root_width else None, self.root_width,
        )

    def row_cells(self, key: str) -> list[Text | str]:
        return row_cells(self.row_values(key))

    def refresh_table(self) -> None:
        """Update rows in place by key: the cursor stays on its queue. A row whose values did
        not change is left alone (2,000 idle queues rebuilt every cell of every row each pass:
        most of the console's 9 % of a core), and of one that did, only the cells that did."""
        table = self.query_one(DataTable)
        wanted = self.visible_keys()
        wanted_set = set(wanted)
        present = [str(k.value) for k in table.rows]
        cursor_key = self.cursor_key()
        widths = self.wanted_widths()
        with self.app.batch_update():
            if widths != (self.queue_width, self.root_width):  # resized, or a longer name: the columns again
                self.queue_width, self.root_width = widths
                table.clear(columns=True)
                self._add_columns(table)
                present = []
            gone = [key for key in present if key not in wanted_set]
            if len(gone) > REMOVE_ONE_BY_ONE:
                # a filter hiding many rows: Textual's remove_row renumbers every row left (and
                # redraws the cursor through them), n² over 2,000 queues (1.2 s for one key typed)
                table.clear()
                gone = []
            for key in gone:
                table.remove_row(key)
                self.shown.pop(key, None)
                self.values.pop(key, None)
            present_set = {str(k.value) for k in table.rows}
            new = [k for k in wanted if k not in present_set]
            for key in present_set & wanted_set:
                values = self.row_values(key)
                if self.values.get(key) == values:
                    continue
                self.values[key] = values
                cells = row_cells(values)
                looks = [cell_look(c) for c in cells]
                before = self.shown.get(key)
                for i, (col, value) in enumerate(zip(self.column_keys(), cells)):
                    if before is None or before[i] != looks[i]:
                        table.update_cell(key, col, value)
                self.shown[key] = looks
            for key in new:
                self._add_row(table, key)
            if [str(r.key.value) for r in table.ordered_rows] != wanted:
                # a new queue or another order (o): the rows put in order where they are (clearing
                # the table and adding them again measured every cell: o took 0.9 s over 2,000
                # queues). Table.sort hands its key the cells: a row's queue cell, the object this
                # screen put there, tells which row it is
                rank = {id(table.get_cell(key, "queue")): n for n, key in enumerate(wanted)}
                table.sort("queue", key=lambda cell: rank[id(cell)])
            # the cursor stays on its queue, also when rows above it went (a filter, a queue
            # deleted): a row index alone would now point at another queue
            if cursor_key is not None and cursor_key in wanted_set and self.cursor_key() != cursor_key:
                table.move_cursor(row=wanted.index(cursor_key))

    def _add_row(self, table: DataTable, key: str) -> None:
        values = self.row_values(key)
        cells = row_cells(values)
        table.add_row(*cells, key=key)
        self.values[key] = values
        self.shown[key] = [cell_look(c) for c in cells]

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
            text.append(safe_name(self.qapp.roots[0].target), "bold")
        else:
            text.append(SEP, "dim")
            text.append(f"{len(self.qapp.roots)} roots")
        if self.sort_index:
            text.append(SEP + "by ", "dim")
            text.append(SORTS[self.sort_index][1], "cyan")
        if self.filter_text:
            text.append(SEP + "filter ", style="dim")
            text.append(safe_name(self.filter_text), style="yellow")
        if self.qapp.read_only:
            text.append(SEP, style="dim")
            text.append("READ-ONLY", style="bold red")
        self.query_one("#status", Static).update(text)
        self.update_notes()

    def update_notes(self) -> None:
        """Errors and warnings in full: the highlighted queue's, then the root's, then how many others."""
        b = self.last_batch
        notes = Text()
        key = self.cursor_key()
        now = self.qapp.clock()
        if key is not None and key in self.scans:
            i, scan = self.scans[key]
            mine = queue_notes(scan, now)[:2]
            twins = len(self.qapp.roots) > 1 and sum(s.name == scan.name for _j, s in self.scans.values()) > 1
            if not mine and (twins or cell_len(safe_name(scan.name)) > self.queue_width - 1):
                # shortened in its row, or named alike in another root: whole here, with its
                # root when that is what tells the rows apart (a note names it whole anyway)
                root = self.qapp.roots[i]
                notes.append(safe_name(scan.name), "bold")
                notes.append(f" ({root.kind} · {safe_name(root.target)})" if twins else f" ({root.kind})", "dim")
            for sev, line in mine:
                if notes:
                    notes.append("\n")
                notes.append(f"{safe_name(scan.name)} ({self.qapp.roots[i].kind}): ", "bold")
                notes.append(safe_name(line), "red" if sev == "error" else "yellow")
        if b is not None:
            # the first error of each root (several roots: one root's errors hid another's), then
            # how many more
            firsts: dict[int, str] = {}
            for i, err in zip(b.error_roots, b.errors):
                firsts.setdefault(i, err)
            shown = list(firsts.items())[:ROOT_ERRORS_SHOWN]
            for n, (i, err) in enumerate(shown):
                if notes:
                    notes.append("\n")
                label = self.qapp.root_label(self.qapp.roots[i]) if i < len(self.qapp.roots) else ""
                if label:
                    notes.append(f"root {safe_name(label)}: ", "bold")
                notes.append(safe_name(err), "red")
                if n == len(shown) - 1 and len(b.errors) > len(shown):
                    notes.append(f" (and {len(b.errors) - len(shown)} more root-level error(s))", "bold red")
            others = sum(1 for k, (_i, s) in self.scans.items() if k != key and queue_notes(s, now))
            if others:
                if notes:
                    notes.append("\n")
                notes.append(f"{others} other queue(s) marked ! have errors or warnings (move onto them)", "dim")
        box = self.query_one("#rnotes", Static)
        box.update(notes)
        box.set_class(not notes, "hidden")

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.update_notes()
        self.refresh_bindings()  # settings/trash follow what the highlighted queue's store can do

    # -- selection ----------------------------------------------------------------------
    def selected(self) -> tuple[Backend, str] | None:
        key = self.cursor_key()
        if key is None or key not in self.scans:
            return None
        i, scan = self.scans[key]
        return self.qapp.roots[i], scan.name

    def action_move(self, how: str) -> None:
        """Move the table's cursor now, as the key arrives (see the bindings)."""
        table = self.query_one(QueueTable)
        if self.focused is not table:
            self.set_focus(table)
        getattr(table, f"action_{how}")()

    async def action_open_queue(self, key: str | None = None) -> None:
        key = key if key is not None else self.cursor_key()
        if key is None or key not in self.scans:
            return
        i, scan = self.scans[key]
        # awaited: mounted before the app takes the next key (see the binding)
        await self.app.push_screen(QueueScreen(self.qapp.roots[i], scan.name, counts=scan))

    @on(DataTable.RowSelected)
    async def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        # (a click on a row) the row selected, not the one under the cursor when this is handled
        await self.action_open_queue(str(event.row_key.value) if event.row_key.value is not None else None)

    async def action_settings(self) -> None:
        sel = self.selected()
        if sel and sel[0].can(SETTINGS):
            from .settings_screen import SettingsScreen

            # awaited: mounted before the app takes the next key (see the binding)
            await self.app.push_screen(SettingsScreen(*sel))

    async def action_publish(self) -> None:
        sel = self.selected()
        if sel is None:  # (a fresh root or namespace, or a filter that hides every queue): said, not silence
            self.qapp.say("no queue highlighted to publish to: the filter hides every queue (escape clears it)"
                          if self.scans else
                          "no queue to publish to: create one with `qconsole create QUEUE --root ROOT`", "warning")
            return
        if not self.qapp.refuse_if_read_only("publish"):
            from .publish_screen import PublishScreen

            # awaited: mounted, its payload focused, before the app takes the next key
            await self.app.push_screen(PublishScreen(*sel), lambda _r: self.rescan())

    def action_trash(self) -> None:
        sel = self.selected()
        if sel and sel[0].can(TRASH):
            from .trash_screen import TrashScreen

            self.app.push_screen(TrashScreen(sel[0]))

    def action_undo(self) -> None:
        self.qapp.undo_last(lambda _r: self.rescan())

    def action_rescan(self) -> None:
        self.rescan()

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.refresh_table()
        self.update_status()
        self.qapp.say(f"queues sorted by {SORTS[self.sort_index][1]}")

    # -- filter -------------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        # a priority binding, run as the key arrives, and focus given at once: keys typed (or
        # pasted) in one burst after / went to the list as commands (a: mark all, t: trash...)
        self.set_focus(box)

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.set_focus(self.query_one(DataTable))  # at once: keys may follow in the same burst

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.refresh_table()
        self.update_status()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._filter_submit(event.input)

    def _filter_submit(self, box: Input) -> None:
        if box.value.strip() != self.filter_text:
            # the filter as typed, before the keys after enter (its Changed messages may still
            # be on their way: j would move through the rows of the filter before)
            self.filter_text = box.value.strip()
            self.refresh_table()
            self.update_status()
        if not box.value.strip():
            box.add_class("hidden")
        self.set_focus(self.query_one(DataTable))


#: rows a pass (or the filter) removes one by one; more, and the table is cleared and filled again
REMOVE_ONE_BY_ONE = 16

#: root-level errors shown on lines of their own (the first of each root); then "and N more"
ROOT_ERRORS_SHOWN = 2


_NO_HISTORY = QueueHistory()


def row_cells(values: tuple) -> list[Text | str]:
    """A row's cells from its :meth:`RootScreen.row_values`."""
    (name, queue_width, failed, mark, ready, inflight, expired, other, lv_ready, lv_age, lv_expired,
     oldest, nxt, soon, rate_in, rate_out, spark, root, root_width) = values

    def num(n: int, col: str, style: str = "", lvl: int = OK) -> Text:
        if failed:
            return Text("?", style="red", justify="right")
        return Text(humanize.fit(n, WIDTHS[col]), style=LEVEL_STYLE[lvl] or (style if n else "dim"),
                    justify="right")

    flag = Text("!", style="bold red") if mark == 2 else Text("!", style="yellow") if mark else Text(" ")
    where = [Text(short_name(root, root_width), style="dim")] if root_width else []
    return [
        Text.assemble(flag, (short_name(name, queue_width - 1), "bold")),
        *where,
        num(ready, "ready", "", lv_ready),
        num(inflight, "inflight", "green"),
        num(expired, "expired", "red", lv_expired),
        num(other, "other", "yellow"),
        Text(oldest, justify="right", style=LEVEL_STYLE[lv_age]),
        Text(nxt, justify="right", style="yellow" if soon else ""),
        Text(rate_in, justify="right"),
        Text(rate_out, justify="right"),
        Text(spark, style="cyan"),
    ]


def cell_look(cell: Text | str) -> object:
    """What a cell shows, comparable: its text, styles and justification (``Text ==`` compares
    the text and spans only, not the style a whole cell is given)."""
    if isinstance(cell, Text):
        return (cell.plain, str(cell.style), cell.justify, tuple(cell.spans))
    return cell


def other_label(roots: list[Backend]) -> str:
    """The header of the column counting the other message states, by what the stores have:
    ``wr`` (writing, the file layouts), ``dl`` (delayed, RSMQ), ``w/d`` in a mixed session."""
    words = [w for cap, w in ((WRITING, "wr"), (DELAYED, "dl")) if any(r.can(cap) for r in roots)]
    if len(words) > 1:
        return "/".join(w[0] for w in words)
    return words[0] if words else "wr"


def row_key(root_index: int, queue: str) -> str:
    return f"{root_index}:{queue}"
