"""One queue: messages in delivery order, live countdowns, and the actions on them."""

from __future__ import annotations

import gc
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from qconsole.errors import QConsoleError
from qconsole.model import QueueScan
from qconsole.output import humanize
from qconsole.safetext import safe_name
from qconsole.backends import open_target as Root
from qconsole.states import EXPIRED, INFLIGHT

from .message_list import HEADER, MessageList, shown_state

#: between status fields: visible, so fields never read as one word
SEP = " · "


class QueueScreen(Screen[None]):
    """Ready messages in the order the real consumer takes them, then held ones by deadline."""

    BINDINGS = [
        Binding("space", "mark", "Mark", id="queue.mark"),
        Binding("v,enter", "peek", "Peek", id="queue.peek"),
        Binding("r", "requeue", "Requeue", id="queue.requeue"),
        Binding("d", "delete", "Delete", id="queue.delete"),
        Binding("m", "move", "Move", id="queue.move"),
        Binding("p", "publish", "Publish", id="queue.publish"),
        Binding("P", "purge", "Purge", id="queue.purge"),
        # not in the footer (80 columns hold the rest); `?` and the palette list it
        Binding("s", "settings", "Settings", show=False, id="queue.settings"),
        Binding("a", "mark_all", "Mark all", show=False, id="queue.mark_all"),
        Binding("g", "rescan", "Rescan", show=False, id="queue.rescan"),
        Binding("escape", "back", "Back", id="queue.back"),
    ]

    class Loaded(TMessage):
        def __init__(self, scan: QueueScan | None, error: str | None, resume_gc: bool = False) -> None:
            super().__init__()
            self.scan = scan
            self.error = error
            #: the worker paused the garbage collector: resume it once the list is painted
            self.resume_gc = resume_gc

    def __init__(self, root: Root, queue: str, counts: QueueScan | None = None) -> None:
        super().__init__()
        self.qroot = root
        self.queue = queue
        self.scan: QueueScan | None = None
        #: the root screen's last counts, shown until the full listing arrives
        self.counts = counts
        self.error: str | None = None
        self._timer = None

    @property
    def qapp(self):  # noqa: ANN201
        from .app import QConsoleApp

        assert isinstance(self.app, QConsoleApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="qtitle")
        yield Static(Text(HEADER, style="bold"), id="qheader")
        yield MessageList(self.qapp.clock, id="messages")
        yield Static(id="qnotes", classes="hidden")
        yield Static("loading…", id="qstatus")
        # ctrl+p still opens the palette (`?` says so); its footer label would push out "esc Back"
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.query_one(MessageList).focus()
        self.update_title()
        if self.qapp.live_countdown:
            self.set_interval(1.0, self.tick)
        self.rescan()

    def tick(self) -> None:
        """Once a second: redraw countdowns from the clock (no rescan)."""
        self.query_one(MessageList).refresh()
        self.update_status()

    # -- loading ------------------------------------------------------------------------
    def rescan(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._load_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="queue-scan")
    def _load_worker(self) -> None:
        # The collector's first passes over a fresh 100k-message list cost ~80 ms (gen0
        # then gen1, holding the GIL): keep it paused until the list has been painted.
        # (The core's own pause leaves it off when it finds it off.)
        resume_gc = gc.isenabled()
        gc.disable()
        try:
            scan = self.qroot.scan_queue(self.queue, self.qapp.clock(), collect=True)
            self.post_message(self.Loaded(scan, None, resume_gc))
        except QConsoleError as err:
            self.post_message(self.Loaded(None, str(err), resume_gc))
        except OSError as err:
            self.post_message(self.Loaded(None, f"cannot read {self.queue}: {err.strerror}", resume_gc))
        finally:
            if resume_gc:
                # never left off for long, even if the screen is gone before the message lands
                self.app.call_from_thread(self.app.set_timer, 1.0, gc.enable)

    def on_queue_screen_loaded(self, event: Loaded) -> None:
        self.error = event.error
        if event.scan is not None:
            self.scan = event.scan
            self.query_one(MessageList).set_messages(event.scan.messages or [])
        self.update_title()
        self.update_status()
        if event.resume_gc:
            # after the repaint this update causes (a refresh callback can run before it)
            self.set_timer(0.25, gc.enable)
        if self.qapp.interval > 0:
            self._timer = self.set_timer(max(self.qapp.interval, 2.0), self._auto_rescan)

    def _auto_rescan(self) -> None:
        self._timer = None
        if self.is_current:
            self.rescan()
        else:
            self._timer = self.set_timer(self.qapp.interval, self._auto_rescan)

    def on_screen_resume(self) -> None:
        if self.scan is not None:
            self.rescan()

    # -- status ---------------------------------------------------------------------------
    def update_title(self) -> None:
        t = Text.assemble(("queue ", "dim"), (safe_name(self.queue), "bold"), (SEP, "dim"), (self.qroot.layout, "dim"))
        shown = self.scan or self.counts
        if shown is not None:
            c = shown.counts
            t.append(f"{SEP}ready {c['ready']}{SEP}in-flight {c['inflight']}{SEP}", "")
            t.append(f"expired {c['expired']}", "red" if c["expired"] else "")
            if c["writing"]:
                t.append(SEP)
                t.append(f"writing {c['writing']}", "yellow")
        if self.qapp.read_only:
            t.append(SEP)
            t.append("READ-ONLY", "bold red")
        self.query_one("#qtitle", Static).update(t)

    def update_status(self) -> None:
        """One line of short fields; warnings and errors get their own (wrapping) line."""
        lst = self.query_one(MessageList)
        t = Text()
        notes = Text()
        if self.error:
            notes.append(safe_name(self.error), "red")
        elif self.scan is not None:
            total = len(lst.messages)
            t.append(f"{lst.cursor + 1 if total else 0}/{total}", "bold")
            if lst.marked:
                t.append(SEP)
                t.append(f"{len(lst.marked)} marked", "yellow")
            now = self.qapp.clock()
            expired_now = sum(1 for m in lst.messages[:50_000] if m.state == INFLIGHT and shown_state(m, now) == EXPIRED)
            if expired_now:
                t.append(SEP)
                t.append(f"{expired_now} expired since scan", "red")
            t.append(SEP)
            t.append(f"scanned {humanize.clock(self.scan.scanned_at)[11:]}", "dim")
            for w in self.scan.warnings[:1]:
                notes.append("warning: ", "yellow")
                notes.append(safe_name(w))
            for e in self.scan.errors[:1]:
                if notes:
                    notes.append("\n")
                notes.append(safe_name(e), "red")
        if self.scan is None and not self.error:
            t.append("listing messages…", "dim")
        self.query_one("#qstatus", Static).update(t)
        box = self.query_one("#qnotes", Static)
        box.update(notes)
        box.set_class(not notes, "hidden")

    def on_message_list_cursor_moved(self) -> None:
        self.update_status()

    # -- actions ------------------------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_rescan(self) -> None:
        self.rescan()

    def action_mark(self) -> None:
        self.query_one(MessageList).toggle_mark()
        self.update_status()

    def action_mark_all(self) -> None:
        lst = self.query_one(MessageList)
        lst.marked = set() if lst.marked else {m.id for m in lst.messages}
        lst.refresh()
        self.update_status()

    def action_peek(self) -> None:
        cur = self.query_one(MessageList).current()
        if cur is not None:
            from .peek_screen import PeekScreen

            self.app.push_screen(PeekScreen(self.qroot, cur))

    def _ids(self) -> list[str]:
        return [m.id for m in self.query_one(MessageList).selection()]

    def _after(self, _result: object) -> None:
        self.query_one(MessageList).marked.clear()
        self.rescan()

    def action_requeue(self) -> None:
        if self.qapp.refuse_if_read_only("requeue"):
            return
        ids = self._ids()
        if ids:
            q = self.queue
            self.qapp.run_operation(self.qroot, "requeue", lambda ops: ops.requeue(q, ids), self._after)

    def action_delete(self) -> None:
        if self.qapp.refuse_if_read_only("delete"):
            return
        ids = self._ids()
        if not ids:
            return
        from .dialogs import ConfirmScreen

        q = self.queue

        def answered(yes: bool | None) -> None:
            if yes:
                self.qapp.run_operation(self.qroot, "delete", lambda ops: ops.delete(q, ids), self._after)

        self.app.push_screen(ConfirmScreen(f"Delete {len(ids)} message(s) from {safe_name(q)}?",
                                           "They go to the trash (qconsole trash restore)."), answered)

    def action_purge(self) -> None:
        if self.qapp.refuse_if_read_only("purge"):
            return
        from .dialogs import ConfirmScreen

        q = self.queue
        n = len(self.query_one(MessageList).messages)

        def answered(yes: bool | None) -> None:
            if yes:
                self.qapp.run_operation(self.qroot, "purge", lambda ops: ops.purge(q), self._after)

        self.app.push_screen(ConfirmScreen(f"Purge all {n} message(s) of {safe_name(q)}?",
                                           "Every message goes to the trash (qconsole trash restore)."), answered)

    def action_move(self) -> None:
        if self.qapp.refuse_if_read_only("move"):
            return
        ids = self._ids()
        if not ids:
            return
        from .dialogs import PickQueueScreen

        q = self.queue
        try:
            names = [n for n in self.qroot.queue_names()[0] if n != q]
        except QConsoleError as err:
            self.qapp.say(str(err), "error")
            return

        def picked(dest: str | None) -> None:
            if dest:
                self.qapp.run_operation(self.qroot, "move", lambda ops: ops.move(q, dest, ids), self._after)

        self.app.push_screen(PickQueueScreen(f"Move {len(ids)} message(s) to…", names), picked)

    def action_publish(self) -> None:
        if self.qapp.refuse_if_read_only("publish"):
            return
        from .publish_screen import PublishScreen

        self.app.push_screen(PublishScreen(self.qroot, self.queue), lambda _r: self.rescan())

    def action_settings(self) -> None:
        from .settings_screen import SettingsScreen

        self.app.push_screen(SettingsScreen(self.qroot, self.queue))
