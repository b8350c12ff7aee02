"""One queue: messages in delivery order, live countdowns, and the actions on them."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Callable

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.worker import get_current_worker
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Static

from qconsole.backends.base import REDELIVERY_COUNT, SETTINGS, TRASH, PRIORITIES, Backend
from qconsole.columns import MessageColumns, release_memory
from qconsole.errors import QConsoleError, UnknownQueueError
from qconsole.model import Message, QueueScan
from qconsole.ops.operations import PURGEABLE
from qconsole.output import humanize
from qconsole.payload import BINARY, JSON, Payload
from qconsole.safetext import escape_controls, safe_name
from qconsole.search import SEARCH_CAP, matches_without_payload, payload_matches
from qconsole.states import DELAYED, EXPIRED, INFLIGHT, READY, RSMQ

from .dialogs import ConfirmScreen, PickQueueScreen, TypedConfirmScreen
from .keybox import BurstInput
from .peek_screen import PeekScreen
from .publish_screen import PublishScreen
from .settings_screen import SettingsScreen
from .trash_screen import TrashScreen
from .message_list import Details, MessageList, seen_as, shown_state
from .names import ROOT_W, short_name
from .services import services

#: between status fields: visible, so fields never read as one word
SEP = " · "
#: a state's label in a title too narrow for the words (the root screen's column heads)
SHORT_STATES = {"writing": "wr", "delayed": "dl"}
#: bytes read per message for the list's preview column
PREVIEW_CAP = 2048
#: ids named in a delete dialog before "and N more"
NAMED_IDS = 4
#: automatic rescans are spaced so that the console's whole CPU over the last cycle (listing,
#: drawing what changed, countdowns) stays near this share of one core: a 100 000-message queue
#: with live clients is listed every few seconds, a million-message one every RESCAN_MAX_S
RESCAN_CPU_SHARE = 0.045
RESCAN_MAX_S = 12.0
#: after a listing longer than this the freed memory is handed back to the system
TRIM_AFTER = 100_000
#: what r and R say of RSMQ's expired messages (rsmq's requeue would leave them as they are)
RSMQ_EXPIRED_VISIBLE = ("RSMQ: expired messages are visible already: the next receive takes them, in their place "
                        "by score (nothing to requeue; they stay counted expired, as received before)")
#: changes are refused while these key actions are asked for in read-only mode
MUTATING_ACTIONS = frozenset({"requeue", "requeue_expired", "delete", "move", "publish", "purge", "undo"})


def unreadable(scan: QueueScan | None) -> bool:
    """A scan that read nothing because of its errors (the root screen shows ``?`` for it)."""
    return scan is not None and bool(scan.errors) and scan.total == 0


def details_of(payload: Payload) -> Details:
    """The list's one-line view of a payload: compact JSON, text, or a hex start; controls escaped."""
    if payload.kind == JSON and payload.parsed is not None:
        line = json.dumps(payload.parsed, ensure_ascii=False, separators=(",", ":"))
    elif payload.kind == BINARY:
        line = "bin " + payload.body[:24].hex(" ")
    else:
        line = payload.text()
    line = escape_controls(line[:400], keep_newlines=False)
    if payload.error:
        line = "! " + line
    return Details(line, payload.size, payload.redeliveries)


class QueueScreen(Screen[None]):
    """Ready messages in the order the real consumer takes them, then held ones by deadline."""

    MUTATING = MUTATING_ACTIONS
    BINDINGS = [
        Binding("space", "mark", "Mark", id="queue.mark"),
        Binding("v,enter", "peek", "Peek", id="queue.peek"),
        Binding("r", "requeue", "Requeue", id="queue.requeue"),
        Binding("d", "delete", "Delete", id="queue.delete"),
        Binding("m", "move", "Move", id="queue.move"),
        Binding("P", "purge", "Purge", id="queue.purge"),
        Binding("slash", "search", "Search", id="queue.search", priority=True),
        Binding("escape,q", "back", "Back", id="queue.back"),
        # not in the footer (80 columns hold the rest); `?` and the palette list them
        Binding("R", "requeue_expired", "Requeue every expired", show=False, id="queue.requeue_expired"),
        Binding("u", "undo", "Undo last delete/purge", show=False, id="queue.undo"),
        Binding("t", "trash", "Trash (restore)", show=False, id="queue.trash"),
        Binding("D", "dead_letters", "Dead letters (redelivered)", show=False, id="queue.dead"),
        Binding("e", "mark_state('expired')", "Mark every expired", show=False, id="queue.mark_expired"),
        Binding("f", "mark_state('inflight')", "Mark every in flight", show=False, id="queue.mark_inflight"),
        Binding("i", "invert", "Invert marks", show=False, id="queue.invert"),
        Binding("a", "mark_all", "Mark all / none", show=False, id="queue.mark_all"),
        Binding("shift+up,shift+down", "noop", "Mark a range", show=False, id="queue.range"),
        # priority (run as the key arrives, the form mounted and focused before the next key is
        # taken): keys typed after p in one burst went to the list and were lost
        Binding("p", "publish", "Publish", show=False, id="queue.publish", priority=True),
        Binding("s", "settings", "Settings", show=False, id="queue.settings", priority=True),
        Binding("g", "rescan", "Rescan", show=False, id="queue.rescan"),
    ]

    class Loaded(TMessage):
        def __init__(self, listing: MessageColumns | None, error: str | None, resume_gc: bool = False,
                     cpu_s: float = 0.0, unchanged: bool = False, scanned_at: float | None = None,
                     gone: bool = False) -> None:
            super().__init__()
            self.listing = listing
            #: the store says there is no such queue (deleted meanwhile)
            self.gone = gone
            #: when this pass looked (an unchanged listing keeps its own, older, scan time)
            self.scanned_at = scanned_at
            self.error = error
            #: the worker paused the garbage collector: resume it once the list is painted
            self.resume_gc = resume_gc
            #: CPU the listing took (the next rescan waits in proportion)
            self.cpu_s = cpu_s
            #: the store said nothing changed: the list stays as it is
            self.unchanged = unchanged

    class DetailsRead(TMessage):
        def __init__(self, found: dict[str, Details]) -> None:
            super().__init__()
            self.found = found

    class Filtered(TMessage):
        """Progress of a search or a dead-letter pass: matches so far, messages read, done."""

        def __init__(self, token: int, matched: list[Message], read: int, total: int, done: bool,
                     error: str | None = None, at: list[int] | None = None,
                     listing: MessageColumns | None = None) -> None:
            super().__init__()
            self.token = token
            self.matched = matched
            #: each match's row in ``listing`` (the listing the pass reads)
            self.at = at or []
            self.listing = listing
            self.read = read
            self.total = total
            self.done = done
            self.error = error

    def __init__(self, root: Backend, queue: str, counts: QueueScan | None = None) -> None:
        super().__init__()
        self.qroot = root
        self.queue = queue
        self.scan: QueueScan | None = None
        #: when the queue was last looked at (a pass that found it unchanged counts too)
        self.scanned_at: float | None = None
        #: the root screen's last counts, shown until the full listing arrives
        self.counts = counts
        self.error: str | None = None
        #: the last listing found no such queue (someone deleted it): not an empty queue
        self.gone = False
        self._timer = None
        #: every message of the last listing, as columns (the list may show a filtered view of them)
        self.all_messages: MessageColumns = MessageColumns.empty(queue)
        #: the last complete listing (the next one starts from it)
        self.listing: MessageColumns | None = None
        #: complete listings taken (an unchanged queue is not listed again)
        self.listings = 0
        self._status_shown: tuple[object, ...] | None = None
        self._title_shown: tuple[object, ...] | None = None
        self._notes_shown: tuple[object, ...] | None = None
        self._header_shown: str | None = None
        #: process CPU time at the start of the last rescan, and what the cycle before it cost
        self._cycle_start: float | None = None
        self._cycle_cpu: float | None = None
        #: ("search", text) or ("dead", threshold) while a filtered view is shown
        self.view: tuple[str, str] | None = None
        self.view_matches: list[Message] = []
        #: id -> row in the whole listing, of each match (a view numbers ready rows by it)
        self.view_places: dict[str, int] = {}
        self.view_progress: tuple[int, int, bool] = (0, 0, True)
        self._view_token = 0
        self._view_cancel = threading.Event()
        #: (keep, cap) of a view opened on a listing under way: run again on the complete one
        self._view_redo: tuple[Callable[[Message, Callable[[], Payload | None]], bool], int] | None = None
        #: the message the cursor was on when a view opened: it is there again when the view closes
        self._view_from: Message | None = None

    @property
    def qapp(self):  # noqa: ANN201
        return services(self)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="qtitle")
        yield Static(id="qheader")
        yield MessageList(self.qapp.clock, priorities=self.qroot.can(PRIORITIES),
                          redeliveries=self.qroot.can(REDELIVERY_COUNT), expired_in_line=self.qroot.kind == RSMQ,
                          id="messages")
        # (enter in it acts at once: keys typed right after it go to the list, not the box)
        yield BurstInput(placeholder="search ids, states and payloads (enter searches, esc cancels)", id="qsearch",
                         classes="hidden", on_enter=self._search_submit)
        yield Static(id="qnotes", classes="hidden")
        yield Static("loading…", id="qstatus")
        # ctrl+p still opens the palette (`?` says so); its footer label would push out "esc Back"
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(MessageList).focus()
        self.update_title()
        self.update_header()
        if self.qapp.live_countdown:
            self.set_interval(1.0, self.tick)
        self.rescan()

    def on_resize(self) -> None:
        self.call_after_refresh(self.update_header)
        self.call_after_refresh(self.update_title)  # (the room for a root's name)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MUTATING_ACTIONS and self.qapp.read_only:
            return False  # read-only: the key is not offered at all
        if action in ("search", "publish", "settings") and self.focused is self.query_one("#qsearch", Input):
            # /, p and s are priority keys: typed in the box they are text (the screen's focus is
            # set at once; has_focus follows only when the box has handled its Focus event)
            return False
        if action == "settings":
            return self.qroot.can(SETTINGS)
        if action in ("trash", "undo"):
            return self.qroot.can(TRASH) and (action == "trash" or not self.qapp.read_only)
        return True

    def offers(self, action: str) -> bool:
        """Whether the palette offers ``action`` here; D on a store without redelivery counts is
        no command, but the key still says why."""
        return action != "dead_letters" or self.qroot.can(REDELIVERY_COUNT)

    @property
    def still_listing(self) -> bool:
        """The rows are a first listing still under way (a big queue streams in)."""
        return self.all_messages.partial

    def refuse_while_listing(self) -> bool:
        """Say so and refuse a key that acts on rows while they are a listing under way: they are
        not the queue's first rows (row 1 is not the head), nor all of them."""
        if not self.still_listing:
            return False
        self.qapp.say(f"still listing {safe_name(self.queue)} ({len(self.all_messages)} so far): "
                      "wait for the listing to finish", "warning")
        return True

    def counts_shown(self) -> QueueScan | None:
        """The counts the title (and a purge question) go by: the listing's, but the root
        screen's while a first listing is under way (its counts are of the rows so far)."""
        if self.scan is not None and self.still_listing:
            return self.counts
        return self.scan or self.counts

    def tick(self) -> None:
        """Once a second: redraw countdowns from the clock (no rescan)."""
        self.query_one(MessageList).refresh()
        self.update_title()
        self.update_status()

    def update_header(self) -> None:
        header = self.query_one(MessageList).columns().header()
        if header != self._header_shown:  # a Static update lays the screen out again
            self._header_shown = header
            self.query_one("#qheader", Static).update(Text(header, style="bold"), layout=False)

    # -- loading ------------------------------------------------------------------------
    def rescan(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        # the console's CPU over the last cycle (one listing to the next) spaces the next one (the
        # process's, less the demo's simulated clients that run in it)
        cpu = self.qapp.own_cpu()
        if self._cycle_start is not None:
            self._cycle_cpu = cpu - self._cycle_start
        self._cycle_start = cpu
        self._load_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="queue-scan")
    def _load_worker(self) -> None:
        # The collector's first passes over a fresh listing cost ~80 ms (gen0 then gen1,
        # holding the GIL): keep it paused until the list has been painted.
        # (The core's own pause leaves it off when it finds it off.)
        resume_gc = gc.isenabled()
        gc.disable()
        cpu = time.thread_time()
        previous = self.listing
        now = self.qapp.clock()

        def partial(cols: MessageColumns) -> None:  # the first rows while a long listing runs
            self.post_message(self.Loaded(cols, None))

        try:
            cols = self.qroot.list_messages(self.queue, now, previous=previous, progress=partial)
            self.post_message(self.Loaded(cols, None, resume_gc, time.thread_time() - cpu,
                                          unchanged=cols is previous, scanned_at=now))
        except UnknownQueueError as err:  # the queue was deleted: its rows and counts go too
            self.post_message(self.Loaded(MessageColumns.empty(self.queue), str(err), resume_gc, gone=True))
        except QConsoleError as err:
            self.post_message(self.Loaded(None, str(err), resume_gc))
        except OSError as err:
            self.post_message(self.Loaded(None, f"cannot read {self.queue}: {err.strerror}", resume_gc))
        except Exception as err:  # noqa: BLE001 (a store's listing at fault: said, and tried again)
            # the worker ended without a word: "listing messages…" stayed for good, m and d did
            # nothing, and no rescan was ever scheduled again (the next one follows a Loaded)
            self.post_message(self.Loaded(None, f"cannot list {self.queue}: {type(err).__name__}: {err}", resume_gc))
        finally:
            if resume_gc:
                # never left off for long, even if the screen is gone before the message lands
                self.app.call_from_thread(self.app.set_timer, 1.0, gc.enable)

    def on_queue_screen_loaded(self, event: Loaded) -> None:
        self.error = event.error
        if event.gone or event.listing is not None:
            self.gone = event.gone
        lst = self.query_one(MessageList)
        cols = event.listing
        if cols is not None and not event.unchanged:
            # rows that arrive while the first listing runs go around the cursor's row: the
            # cursor stays on the first row unless the operator moved it
            follow = not (self.all_messages.partial and lst.cursor == 0)
            if not cols.partial:
                self.listing = cols
                self.listings += 1
            elif self.listing is not None:
                return  # a partial listing never replaces a complete one
            self.scan = cols.scan
            self.all_messages = cols
            lst.provisional = cols.partial
            if self.view is None:
                lst.set_messages(cols, follow=follow)
            else:  # a filtered view keeps its matches that still exist
                places = self.view_places = self._placed(cols)
                self.view_matches = [cols.message(places[m.id]) for m in self.view_matches if m.id in places]
                lst.number_by(cols, places)
                lst.set_messages(list(self.view_matches))
            self.update_header()
        if cols is not None and not cols.partial:
            self.scanned_at = event.scanned_at if event.scanned_at is not None else cols.scan.scanned_at
            if self._view_redo is not None and self.view is not None:
                self.open_view(self.view, *self._view_redo)  # it read a listing under way: again, whole
        self.update_title()
        self.update_status()
        if cols is not None and cols.partial:
            return  # the complete listing follows
        if cols is not None and not event.unchanged and len(cols) > TRIM_AFTER:
            release_memory()  # the listing before this one is garbage now
        if event.resume_gc:
            # after the repaint this update causes (a refresh callback can run before it)
            self.set_timer(0.25, gc.enable)
        if self.qapp.interval > 0:
            spent = event.cpu_s if self._cycle_cpu is None else max(event.cpu_s, self._cycle_cpu)
            delay = max(self.qapp.interval, 2.0, min(RESCAN_MAX_S, spent / RESCAN_CPU_SHARE))
            self._timer = self.set_timer(delay, self._auto_rescan)

    def _auto_rescan(self) -> None:
        self._timer = None
        # on top, not merely visible behind another screen (Screen.is_current counts that too)
        if self.app.screen is self:
            self.rescan()
        else:
            self._timer = self.set_timer(self.qapp.interval, self._auto_rescan)

    def on_screen_resume(self) -> None:
        if self.scan is not None:
            self.rescan()

    # -- payload details for the rows on screen ----------------------------------------------
    def on_message_list_need_details(self, event: MessageList.NeedDetails) -> None:
        self._details_worker(event.messages)

    @work(thread=True, exit_on_error=False, group="details")
    def _details_worker(self, msgs: list[Message]) -> None:
        found: dict[str, Details] = {}
        for msg in msgs:
            try:
                det = details_of(self.qroot.read_payload(msg, PREVIEW_CAP))
            except (QConsoleError, OSError):
                det = Details("(gone)", None, None)  # consumed meanwhile
            det.seen = seen_as(msg)
            found[msg.id] = det
        self.post_message(self.DetailsRead(found))

    def on_queue_screen_details_read(self, event: DetailsRead) -> None:
        self.query_one(MessageList).set_details(event.found)

    # -- status ---------------------------------------------------------------------------
    def update_title(self) -> None:
        shown = self.counts_shown()
        c: dict[str, int] | None = None
        if shown is not None and not unreadable(shown):
            c = dict(shown.counts)
            if self.listing is not None and shown is self.listing.scan:
                # counted as the rows show them now: in flight past the deadline expired, delayed
                # past the delay ready (an unchanged listing is not made again when one passes)
                now = self.qapp.clock()
                late, due = self.listing.expired_since(now), self.listing.due_since(now)
                c[INFLIGHT], c[EXPIRED] = c.get(INFLIGHT, 0) - late, c.get(EXPIRED, 0) + late
                if due:
                    c[DELAYED], c[READY] = c.get(DELAYED, 0) - due, c.get(READY, 0) + due

        def counts(short: bool) -> Text:
            t = Text()  # the counts after the queue's name
            infl, exp = ("infl", "exp") if short else ("in-flight", "expired")
            if self.gone:  # deleted meanwhile: no counts, not "ready 0" (an empty queue)
                t.append(f"{SEP}gone (deleted)", "bold red")
            elif unreadable(shown):  # not "0": the root screen says `?` for it too
                t.append(f"{SEP}ready ?{SEP}{infl} ?{SEP}{exp} ?", "red")
            elif c is not None:
                expired = c.get(EXPIRED, 0)
                t.append(f"{SEP}ready {c.get(READY, 0)}{SEP}{infl} {c.get(INFLIGHT, 0)}{SEP}", "")
                t.append(f"{exp} {expired}", "red" if expired else "")
                for state, n in c.items():  # writing, delayed, ...: whatever else the store has
                    if state not in (READY, INFLIGHT, EXPIRED, "foreign") and n:
                        t.append(SEP)
                        t.append(f"{SHORT_STATES.get(state, state) if short else state} {n}", "yellow")
            if self.qapp.read_only:
                t.append(SEP)
                t.append("READ-ONLY", "bold red")
            return t

        # one row: a long name gives way to the counts (the title wrapped them onto a second row
        # the screen does not show), down to 12 cells of it; then the counts' short labels
        avail = (self.size.width or 80) - 2
        base = len("queue ") + len(SEP) + len(self.qroot.kind)
        t = counts(False)
        if base + min(12, cell_len(safe_name(self.queue))) + t.cell_len > avail:
            t = counts(True)
        head = Text.assemble(("queue ", "dim"), (short_name(self.queue, max(12, avail - base - t.cell_len)), "bold"),
                             (SEP, "dim"), (self.qroot.kind, "dim"))
        label = self.qapp.root_label(self.qroot)
        if label:  # several roots open: `jobs` may be in two of them (in the room the counts leave)
            room = min(ROOT_W, avail - head.cell_len - t.cell_len - len(SEP + "root "))
            if room >= 6:
                head.append(SEP + "root ", "dim")
                head.append(short_name(label, room), "dim")
        t = head.append_text(t)
        t.no_wrap, t.overflow = True, "ellipsis"  # (narrower still: cut at the end, never wrapped away)
        shown = (t.plain, tuple(t.spans))
        if shown != self._title_shown:  # a Static update lays the screen out again
            self._title_shown = shown
            self.query_one("#qtitle", Static).update(t, layout=False)  # one row, fixed height

    def update_status(self) -> None:
        """One line of short fields; warnings and errors get their own (wrapping) line."""
        lst = self.query_one(MessageList)
        t = Text()
        notes = Text()
        # a pass that could not read the queue (its Redis server restarting, a mount gone for a
        # moment) keeps the rows and counts last read: said so, and the position, the marks and
        # the time of that read stay in the status (the row went blank, the title's counts
        # looked live)
        stale = bool(self.error) and not self.gone and self.scan is not None
        if self.error:
            notes.append(safe_name(self.error), "red")
            if stale:
                last = self.scanned_at or self.scan.scanned_at
                notes.append(f"\nthe rows and counts shown are those read at {humanize.clock(last)[11:]}", "yellow")
        if self.scan is not None and (not self.error or stale):
            total = len(lst.messages)
            failed = unreadable(self.scan)
            now = self.qapp.clock()
            expired_now = lst.messages.expired_since(now)

            def fields(short: bool) -> Text:
                t = Text()
                if self.still_listing:  # not "1/16384": the rows so far are neither first nor all
                    t.append(f"listing… {len(self.all_messages)} so far", "bold")
                elif failed:
                    t.append("cannot be read", "bold red")
                else:
                    t.append(f"{lst.cursor + 1 if total else 0}/{total}", "bold")
                if lst.marked or lst.hidden_marks:
                    t.append(SEP)
                    t.append(f"{len(lst.marked)} marked", "yellow")
                    if lst.hidden_marks:  # kept for when the view closes; actions take the shown ones
                        t.append(f" (+{len(lst.hidden_marks)} hidden)" if short else
                                 f", {len(lst.hidden_marks)} outside the view", "yellow")
                if self.view is not None:
                    kind, what = self.view
                    read, of, done = self.view_progress
                    t.append(SEP)
                    label = f"search {what!r}" if kind == "search" else f"redelivered ≥{what}"
                    t.append(escape_controls(label, keep_newlines=False), "bold cyan")
                    t.append(f" {len(self.view_matches)} found" + ("" if done else f", {read}/{of} read"),
                             "cyan")
                if expired_now:
                    t.append(SEP)
                    t.append(f"{expired_now} expired since scan", "red")
                if not short:
                    t.append(SEP)
                    t.append(f"scanned {humanize.clock(self.scanned_at or self.scan.scanned_at)[11:]}", "dim")
                return t

            # one row: a status longer than the terminal wrapped its end (a search's progress,
            # marks, the scan time) onto a row the screen does not show; the scan time goes
            # first, then the marks' words, and what still does not fit is cut with …
            t = fields(False)
            if t.cell_len > (self.size.width or 80) - 2:
                t = fields(True)
            t.no_wrap, t.overflow = True, "ellipsis"
            if not total and self.view is None and not failed and not self.still_listing:
                if notes:
                    notes.append("\n")
                notes.append("this queue is empty", "dim")
            if lst.lost is not None:
                if notes:
                    notes.append("\n")
                notes.append(f"message {safe_name(lst.lost)} is gone (consumed or changed); "
                             "the cursor stays at its place", "yellow")
            for w in self.scan.warnings[:1]:
                if notes:
                    notes.append("\n")
                notes.append("warning: ", "yellow")
                notes.append(safe_name(w))
            for e in self.scan.errors[:1]:
                if notes:
                    notes.append("\n")
                notes.append(safe_name(e), "red")
        if self.scan is None and not self.error:
            t.append("listing messages…", "dim")
        # a Static update lays the screen out again: only when the text did change
        shown = (t.plain, tuple(t.spans))
        if shown != self._status_shown:
            self._status_shown = shown
            # one row of fixed height (the stylesheet): no layout pass for a new text (each key press)
            self.query_one("#qstatus", Static).update(t, layout=False)
        noted = (notes.plain, tuple(notes.spans))
        if noted != self._notes_shown:  # the notes box grows and shrinks: this one is laid out
            self._notes_shown = noted
            box = self.query_one("#qnotes", Static)
            box.update(notes)
            box.set_class(not notes, "hidden")

    def on_message_list_cursor_moved(self) -> None:
        self.update_status()

    # -- search and the dead-letter view ------------------------------------------------------
    def action_search(self) -> None:
        box = self.query_one("#qsearch", Input)
        box.remove_class("hidden")
        # a priority binding, run as the key arrives, and focus given at once: keys typed (or
        # pasted) in one burst after / went to the list as commands (a: mark all, t: trash...)
        self.set_focus(box)

    @on(Input.Submitted, "#qsearch")
    def _search_submitted(self, event: Input.Submitted) -> None:
        self._search_submit(event.input)

    def _search_submit(self, box: Input) -> None:
        text = box.value.strip()
        box.add_class("hidden")
        self.set_focus(self.query_one(MessageList))  # at once: keys may follow in the same burst
        if not text:
            self.close_view()
            return
        needle = text.lower()

        def keep(msg: Message, read: Callable[[], Payload | None]) -> bool:
            # the same rules as `qconsole ls --grep`
            return matches_without_payload(msg, needle) or payload_matches(read(), needle)

        self.open_view(("search", text), keep, SEARCH_CAP)

    def action_dead_letters(self) -> None:
        if not self.qroot.can(REDELIVERY_COUNT):  # help lists D: said, not silence
            self.qapp.say(f"no dead-letter view here: {self.qroot.kind} keeps no redelivery count", "warning")
            return
        n = self.qapp.poison_threshold

        def keep(_msg: Message, read: Callable[[], Payload | None]) -> bool:
            payload = read()
            return payload is not None and (payload.redeliveries or 0) >= n

        self.open_view(("dead", str(n)), keep, PREVIEW_CAP)

    def open_view(self, view: tuple[str, str], keep: Callable[[Message, Callable[[], Payload | None]], bool],
                  cap: int) -> None:
        self._view_cancel.set()  # a running pass stops
        self._view_cancel = threading.Event()
        self._view_token += 1
        from_list = self.view is None
        self.view = view
        self.view_matches = []
        self.view_places = {}
        self._view_redo = (keep, cap) if self.still_listing else None
        self.view_progress = (0, len(self.all_messages), False)
        lst = self.query_one(MessageList)
        if from_list:  # (a view opened over another keeps the first one's place)
            self._view_from = lst.current()
        lst.number_by(self.all_messages, self.view_places)
        # not followed: the cursor's message is not gone, only not found yet (a search of a big
        # queue said "message … is gone (consumed or changed)" until its first match)
        lst.set_messages([], follow=False)
        self.update_status()
        self._filter_worker(self._view_token, self.all_messages, keep, cap, self._view_cancel)

    def close_view(self) -> None:
        self._view_cancel.set()
        self._view_redo = None
        self.view = None
        self.view_matches = []
        self.view_places = {}
        lst = self.query_one(MessageList)
        lst.number_by(None)
        shown = lst.current()
        lst.set_messages(self.all_messages)
        back, self._view_from = self._view_from, None
        if shown is None and back is not None:  # nothing found: back where the view began
            found = lst.messages.index_of(back.id, lst.cursor, back.relpath)
            if found is not None:
                lst.cursor = found
        self.update_status()

    @work(thread=True, exit_on_error=False, group="filter")
    def _filter_worker(self, token: int, msgs: MessageColumns,
                       keep: Callable[[Message, Callable[[], Payload | None]], bool], cap: int,
                       cancel: threading.Event) -> None:
        """Read payloads one by one (never on the event loop); post matches as they come.
        Stopped by the view's ``cancel`` or when the worker is (the console quits, the screen
        goes): the process waited at exit for the pass to read every message (6 s at 100k)."""
        worker = get_current_worker()
        found: list[Message] = []
        at: list[int] = []
        last = time.monotonic()
        for i, msg in enumerate(msgs):
            if cancel.is_set() or worker.is_cancelled:
                return

            def read(m: Message = msg) -> Payload | None:
                try:
                    return self.qroot.read_payload(m, cap)
                except (QConsoleError, OSError):
                    return None  # consumed meanwhile: not a match

            if keep(msg, read):
                found.append(msg)
                at.append(i)
            if time.monotonic() - last > 0.15:
                last = time.monotonic()
                self.post_message(self.Filtered(token, found, i + 1, len(msgs), False, at=at, listing=msgs))
                found, at = [], []
        self.post_message(self.Filtered(token, found, len(msgs), len(msgs), True, at=at, listing=msgs))

    def _placed(self, whole: MessageColumns) -> dict[str, int]:
        """id -> row in ``whole`` of each match of the view still there (looked for near its
        last row: rows that went before it move it up a few)."""
        near, out = self.view_places, {}
        for m in self.view_matches:
            i = whole.index_of(m.id, near.get(m.id, 0), m.relpath)
            if i is not None:
                out[m.id] = i
        return out

    def on_queue_screen_filtered(self, event: Filtered) -> None:
        if event.token != self._view_token or self.view is None:
            return  # a cancelled pass
        self.view_matches.extend(event.matched)
        whole = self.all_messages
        for m, i in zip(event.matched, event.at):
            if event.listing is not whole:  # listed again since the pass began: its row now
                i = whole.index_of(m.id, i, m.relpath)
            if i is not None:
                self.view_places[m.id] = i
        self.view_progress = (event.read, event.total, event.done)
        lst = self.query_one(MessageList)
        lst.number_by(whole, self.view_places)
        if event.matched or event.done:
            lst.set_messages(list(self.view_matches))
            # the columns follow the rows shown: a view opened empty laid out an 8-cell id column,
            # and its header stayed so over the 32-character ids of the matches until the next
            # listing (every head off by 24 cells at 200 columns)
            self.update_header()
        self.update_status()

    # -- actions ------------------------------------------------------------------------
    def action_noop(self) -> None:
        """Shift+arrows are handled by the list; the binding is here for the help screen."""

    def action_back(self) -> None:
        box = self.query_one("#qsearch", Input)
        if not box.has_class("hidden"):
            box.add_class("hidden")
            self.set_focus(self.query_one(MessageList))
            return
        if self.view is not None:
            self.close_view()  # esc first cancels the search or leaves the filtered view
            return
        self.app.pop_screen()

    def action_rescan(self) -> None:
        self.rescan()

    def action_mark(self) -> None:
        self.query_one(MessageList).toggle_mark()
        self.update_status()

    def action_mark_all(self) -> None:
        if self.refuse_while_listing():
            return
        lst = self.query_one(MessageList)
        lst.marked = set() if lst.marked else lst.messages.id_set()
        lst.refresh()
        self.update_status()

    def action_mark_state(self, state: str) -> None:
        if self.refuse_while_listing():
            return
        lst = self.query_one(MessageList)
        now = self.qapp.clock()
        n = lst.mark_state(state, now)
        self.qapp.say(f"marked {n} {state} message(s)")
        self.update_status()

    def action_invert(self) -> None:
        if self.refuse_while_listing():
            return
        self.query_one(MessageList).invert_marks()
        self.update_status()

    def action_peek(self) -> None:
        lst = self.query_one(MessageList)
        cur = lst.current()
        if cur is not None:
            from .peek_screen import PeekScreen

            self.app.push_screen(PeekScreen(self.qroot, lst.messages, lst.cursor), self._peeked)

    def _peeked(self, ident: str | None) -> None:
        """Back from a peek: the cursor on the message last viewed (if it is still listed)."""
        lst = self.query_one(MessageList)
        at = lst.index_of(ident) if ident is not None else None
        if at is not None:
            lst.cursor = at

    def _selection(self) -> list[Message]:
        return self.query_one(MessageList).selection()

    def _after(self, result: object) -> None:
        """After a change: what was done leaves the list at once (the cursor keeps its place), then rescan.
        A change that failed (``result`` None) keeps the marks: the operator may try again."""
        lst = self.query_one(MessageList)
        if result is not None:
            lst.marked.clear()
        done = set(getattr(result, "done", ()) or ())
        if done:
            self.all_messages = self.all_messages.without(done)
            if self.listing is not None:
                self.listing = self.all_messages  # what the next listing starts from
            self.view_matches = [m for m in self.view_matches if m.id not in done]
            if self.view is not None:  # rows went: the matches' rows move up
                self.view_places = self._placed(self.all_messages)
                lst.number_by(self.all_messages, self.view_places)
            lst.set_messages(lst.messages.without(done))
            lst.lost = None  # we removed it ourselves: nothing to report
        self.update_status()
        self.rescan()

    def action_requeue(self) -> None:
        if self.qapp.refuse_if_read_only("requeue") or self.refuse_while_listing():
            return
        msgs = self._selection()
        if not msgs:
            return
        visible = 0
        if self.qroot.kind == RSMQ:
            # an expired RSMQ message is visible already (its timeout passed): rsmq's requeue
            # leaves it where it is, and `e` then `r` said "requeue q: 70 done" while the title
            # still said "expired 70" (R says why and does nothing)
            now = self.qapp.clock()
            kept = [m for m in msgs if shown_state(m, now) != EXPIRED]
            visible = len(msgs) - len(kept)
            if not kept:
                self.qapp.say(RSMQ_EXPIRED_VISIBLE)
                return
            msgs = kept
        ids = [m.id for m in msgs]
        q = self.queue

        def go() -> None:
            if visible:
                self.qapp.say(f"RSMQ: {visible} expired message(s) left as they are: visible already, the next "
                              "receive takes them")
            # a marked message consumed meanwhile is skipped (said in the summary), not a failure
            self.qapp.run_operation(self.qroot, "requeue", lambda ops: ops.requeue(q, ids, missing="skip"),
                                    self._after)

        self._unless_in_flight(msgs, "Requeue", "requeued", go,
                               "" if self.qroot.kind == RSMQ  # (visible already: see R)
                               else "Expired ones are safe to requeue (R requeues every expired).")

    def _unless_in_flight(self, msgs: list[Message], verb: str, done: str, go: Callable[[], None],
                          more: str = "") -> None:
        """``go()`` at once, or after a yes when some of ``msgs`` are still in flight."""
        now = self.qapp.clock()
        live = sum(shown_state(m, now) == INFLIGHT for m in msgs)
        if not live:
            go()
            return
        where = self.qapp.where(self.qroot)
        of = f" of {safe_name(self.queue)}{where}" if where else ""  # several roots: which `jobs`
        self.app.push_screen(ConfirmScreen(
            f"{verb} {len(msgs)} message(s){of}? {live} still in flight",
            f"A consumer may be working on them right now: {done}, they can be delivered "
            f"and processed twice. {more}".rstrip()),
            lambda yes: go() if yes else None)

    def action_requeue_expired(self) -> None:
        if self.qapp.refuse_if_read_only("requeue"):
            return
        if self.qroot.kind == RSMQ:
            # rsmq's requeue (changeMessageVisibility 0) leaves a message whose timeout passed
            # where it is: R said "N done" and the title still said "expired N" (received before)
            self.qapp.say(RSMQ_EXPIRED_VISIBLE)
            return
        q = self.queue
        self.qapp.run_operation(self.qroot, "requeue expired", lambda ops: ops.requeue(q, expired_only=True),
                                self._after)

    def action_delete(self) -> None:
        if self.qapp.refuse_if_read_only("delete") or self.refuse_while_listing():
            return
        msgs = self._selection()
        if not msgs:
            return
        ids = [m.id for m in msgs]
        q = self.queue
        named = ", ".join(safe_name(i) for i in ids[:NAMED_IDS])
        if len(ids) > NAMED_IDS:
            named += f" and {len(ids) - NAMED_IDS} more"
        where = ("They go to the trash: u undoes, t shows the trash." if self.qroot.can(TRASH)
                 else "This store has no trash: they are gone for good.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.qapp.run_operation(self.qroot, "delete", lambda ops: ops.delete(q, ids, missing="skip"),
                                        self._after)

        question = f"Delete {len(ids)} message(s) from {safe_name(q)}{self.qapp.where(self.qroot)}?"
        self.app.push_screen(ConfirmScreen(question, f"{named}\n{where}"), answered)

    def action_purge(self) -> None:
        if self.qapp.refuse_if_read_only("purge"):
            return
        q = self.queue
        if self.gone:  # it asked to purge "all 0 message(s)", then failed
            self.qapp.say(f"{safe_name(q)} no longer exists (deleted meanwhile): nothing to purge", "warning")
            return
        shown = self.counts_shown()
        c = shown.counts if shown is not None else {}
        n = sum(c.get(state, 0) for state in PURGEABLE)  # what a purge takes (delayed ones too)
        # a queue that could not be read was not counted: not "0 message(s)"
        howmany = "every message (they could not be counted)" if unreadable(shown) else f"all {n} message(s)"
        where = ("They go to the trash (u undoes)." if self.qroot.can(TRASH) else "They are gone for good.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.qapp.run_operation(self.qroot, "purge", lambda ops: ops.purge(q), self._after)

        self.app.push_screen(TypedConfirmScreen(
            f"Purge {howmany} of {safe_name(q)}{self.qapp.where(self.qroot)}?",
            f"Every message goes, in flight ones too. {where}", q), answered)

    def action_move(self) -> None:
        if self.qapp.refuse_if_read_only("move") or self.refuse_while_listing():
            return
        msgs = self._selection()
        if not msgs:
            return
        ids = [m.id for m in msgs]
        self._unless_in_flight(msgs, "Move", "moved", lambda: self._names_worker(ids))

    @work(thread=True, exit_on_error=False, group="names")
    def _names_worker(self, ids: list[str]) -> None:
        try:
            names = [n for n in self.qroot.queue_names()[0] if n != self.queue]
        except QConsoleError as err:
            self.app.call_from_thread(self.qapp.say, str(err), "error")
            return
        self.app.call_from_thread(self._pick_destination, ids, names)

    def _pick_destination(self, ids: list[str], names: list[str]) -> None:
        if not self.is_active:  # m pressed twice, or another screen opened meanwhile: one dialog
            return
        q = self.queue

        def picked(dest: str | None) -> None:
            if dest:
                self.qapp.run_operation(self.qroot, "move", lambda ops: ops.move(q, dest, ids, missing="skip"),
                                        self._after)

        where = self.qapp.where(self.qroot)
        source = f" from {safe_name(q)}{where}" if where else ""  # several roots: which `jobs`
        self.app.push_screen(PickQueueScreen(f"Move {len(ids)} message(s){source} to…", names), picked)

    async def action_publish(self) -> None:
        if self.qapp.refuse_if_read_only("publish"):
            return
        # awaited: mounted, its payload focused, before the app takes the next key
        await self.app.push_screen(PublishScreen(self.qroot, self.queue), lambda _r: self.rescan())

    async def action_settings(self) -> None:
        if not self.qroot.can(SETTINGS):
            return
        await self.app.push_screen(SettingsScreen(self.qroot, self.queue))

    def action_undo(self) -> None:
        self.qapp.undo_last(lambda _r: self.rescan())

    def action_trash(self) -> None:
        if not self.qroot.can(TRASH):
            return
        self.app.push_screen(TrashScreen(self.qroot))
