"""The Textual application: holds the roots, the clock and the operations; pushes the root screen.

It imports the screens (never the reverse): screens reach it through
:func:`qconsole.screens.services.services` and messages.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from textual import work
from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen

from qconsole.backends import Backend
from qconsole.errors import QConsoleError
from qconsole.output.nagios import Thresholds
from qconsole.safetext import escape_controls, safe_name

from .dialogs import ConfirmScreen
from .help_screen import HelpScreen
from .log_screen import LogEntry, LogScreen
from .peek_screen import PeekScreen
from .publish_screen import PublishScreen
from .queue_screen import QueueScreen
from .root_screen import RootScreen
from .settings_screen import SettingsScreen
from .trash_screen import TrashScreen

Clock = Callable[[], float]
#: notifications kept for the message log
LOG_SIZE = 200


#: the header's progress of a bulk change is redrawn at most this often
PROGRESS_EVERY_S = 0.25
#: per worker thread: where its operation's ticks go (``Backend.progress`` is shared by the
#: root's threads; each operation runs in a thread of its own)
_OPERATION = threading.local()


def _report_progress(done: int, total: int) -> None:
    report = getattr(_OPERATION, "report", None)
    if report is not None:
        report(done, total)


class QConsoleApp(App[None]):
    """qconsole's live console. ``clock`` (epoch seconds) is injectable so tests can freeze time."""

    CSS_PATH = "qconsole.tcss"
    TITLE = "qconsole"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding("L", "log", "Log", show=False, id="app.log"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit"),
    ]

    def __init__(
        self,
        roots: Backend | list[Backend],
        *,
        interval: float = 2.0,
        read_only: bool = False,
        audit_log: str | None = None,
        clock: Clock = time.time,
        live_countdown: bool = True,
        timer: Clock = time.perf_counter,
        poison_threshold: int = 3,
        thresholds: Thresholds | None = None,
        colors: int | None = None,
        first_counts: list[Any] | None = None,
        outside_cpu: Clock | None = None,
    ) -> None:
        super().__init__()
        #: CPU seconds used so far by threads of this process that are not the console's (the
        #: demo's simulated clients): left out where the console spaces its work by its own CPU
        self.outside_cpu = outside_cpu
        self.roots: list[Backend] = roots if isinstance(roots, list) else [roots]
        #: per root, the counts a forked process started taking before the app (None: none);
        #: the root screen's first scan takes them (Backend.start_first_count)
        self.first_counts: list[Any] = list(first_counts or [None] * len(self.roots))
        self.interval = interval
        self.read_only = read_only
        self.audit_log = audit_log
        self.clock = clock
        #: snapshots turn the 1 s countdown timer off (the clock is frozen anyway)
        self.live_countdown = live_countdown
        #: measures scan durations (snapshots pass a constant so the status line is stable)
        self.timer = timer
        #: redeliveries from which a message counts as dead-letter (report's poison list)
        self.poison_threshold = poison_threshold
        #: `check`'s thresholds: rows past them stand out on the root screen
        self.thresholds = thresholds or Thresholds()
        #: colours of the terminal (16, 256, or None: ask the console); 16 picks the ANSI palette
        self.terminal_colors = colors
        #: peek: the metadata pane hidden (the operator's choice holds across messages)
        self.peek_wide = False
        self._ops: dict[int, Any] = {}
        #: every notification of this session (toasts vanish and are cut at 80 columns)
        self.log_entries: deque[LogEntry] = deque(maxlen=LOG_SIZE)
        #: (root, trash batch, queue, what) of this session's deletes/purges, newest last: `u` undoes
        self.undo_stack: list[tuple[Backend, str, str | None, str]] = []
        #: deletes and purges this session made (an empty stack then means all were undone)
        self.undoable_made = 0
        self.title = "qconsole · READ-ONLY" if read_only else "qconsole"
        self.sub_title = self.roots_title = "  ".join(safe_name(r.target) for r in self.roots)
        #: the bulk changes running, with the (done, total) each last reported
        self.running: dict[int, tuple[str, int, int]] = {}
        #: every change under way (worker thread -> its label), reported or not yet
        self.changing: dict[int, str] = {}
        #: quit asked while changes ran: the console closes when the last one ends
        self.quitting = False
        #: the question ctrl+q asks when a form holds unsaved edits
        self._edits_question: ConfirmScreen | None = None
        #: ("Quit? purge is still running", what runs) while that question is open: it is taken
        #: back when the change ends first (it stayed up saying "still running" after the end)
        self._running_question: tuple[ConfirmScreen, str] | None = None
        #: set: the changes under way stop at their next progress tick (a safe point)
        self.stop_changes = threading.Event()
        #: what the shell is told once the console has closed (how far a stopped change got)
        self.exit_lines: list[str] = []
        for r in self.roots:
            r.progress = _report_progress  # the worker thread's own operation hears its ticks

    def on_mount(self) -> None:
        if self.sixteen_colours():
            # Theme colours are RGB: on a 16-colour terminal they fall to the nearest ANSI colour,
            # so yellow read as bright red and the cursor as an alarm. The ANSI theme uses the
            # terminal's own colours, as the operator configured them.
            self.theme = "ansi-dark"
        self.push_screen(RootScreen())

    def sixteen_colours(self) -> bool:
        if self.terminal_colors is not None:
            return self.terminal_colors <= 16
        if self.is_headless:
            return False  # tests and screenshots say which palette they want
        return self.console.color_system in ("standard", "windows")

    # -- operations -------------------------------------------------------------------------
    def operations(self, root: Backend) -> Any:
        """The Operations handle of a root (created once); QConsoleError when unavailable."""
        key = id(root)
        if key not in self._ops:
            try:
                from qconsole.ops import Operations
            except ImportError:
                raise QConsoleError("operations are not available in this build of qconsole") from None
            self._ops[key] = Operations(root, read_only=self.read_only, audit_log=self.audit_log,
                                        user_action_source="tui")
        return self._ops[key]

    def own_cpu(self) -> float:
        """The process's CPU seconds so far, less what :attr:`outside_cpu` says is not the console's."""
        return time.process_time() - (self.outside_cpu() if self.outside_cpu is not None else 0.0)

    def refuse_if_read_only(self, what: str) -> bool:
        """True (and says so) when a change is not allowed."""
        if self.read_only:
            self.say(f"read-only: {what} refused", "warning")
            return True
        return False

    def run_operation(self, root: Backend, label: str, call: Callable[[Any], Any],
                      done: Callable[[Any], None] | None = None) -> None:
        """Run ``call(operations)`` in a thread; report its summary; then ``done(result)``."""
        self._operation_worker(root, label, call, done)

    @work(thread=True, exit_on_error=False, group="ops")
    def _operation_worker(self, root: Backend, label: str, call: Callable[[Any], Any],
                          done: Callable[[Any], None] | None) -> None:
        key = threading.get_ident()
        last = time.monotonic()  # (a change done within PROGRESS_EVERY_S shows none)

        def report(n: int, total: int) -> None:  # at most a few times a second, to the header
            nonlocal last
            if self.stop_changes.is_set():  # the operator chose to stop it: a tick is a safe point
                raise KeyboardInterrupt  # (what ctrl+c raises in the CLI: every change undoes its part)
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_S and n < total:
                last = now
                # posted, not called: the change never waits for the screen, and one that goes
                # on after the app quit is not stopped by it (a message to a closed app is dropped)
                self._post_quietly(self.Progress(key, label, n, total))

        _OPERATION.report = report
        self.changing[key] = label
        try:
            result = self._operation_result(root, label, call)
            if done is not None:
                self.call_from_thread(done, result)
        finally:
            _OPERATION.report = None
            self.changing.pop(key, None)
            # after done(): the quit waiting for this change closes the app on this message
            self._post_quietly(self.Progress(key, label, None, None))

    def _post_quietly(self, message: TMessage) -> None:
        try:
            self.post_message(message)
        except RuntimeError:  # the event loop closed meanwhile: nobody to tell
            pass

    class Progress(TMessage):
        """How far a bulk change is (``done`` None: it ended)."""

        def __init__(self, key: int, label: str, done: int | None, total: int | None) -> None:
            super().__init__()
            self.key, self.label, self.done, self.total = key, label, done, total

    def on_qconsole_app_progress(self, event: Progress) -> None:
        self._show_progress(event.key, event.label, event.done, event.total)

    def _show_progress(self, key: int, label: str, n: int | None, total: int | None) -> None:
        """The header says how far the bulk changes under way are (the roots again after)."""
        if n is None or total is None:
            self.running.pop(key, None)
        else:
            self.running[key] = (label, n, total)
        self._update_header()

    def _update_header(self) -> None:
        """The header: the changes under way and how far they are, or the roots; a quit that
        waits for them closes the app once none is left."""
        if self.quitting and not self.changing:
            self.exit()  # the last change ended: the quit asked for
            return
        if not self.changing and self._running_question is not None:
            # the change ended while "Quit? … is still running" was open: no longer true, and
            # its y ("closes when it has ended") has nothing left to wait for
            question, what = self._running_question
            self._running_question = None
            if self.screen is question:
                question.dismiss(None)
                self.say(f"{what} has ended: ctrl+q quits now", "information")
        lead = "quitting when done · " if self.quitting else ""  # (short: the header cuts the rest)
        if not self.running:
            self.sub_title = lead + self.roots_title
            return
        self.sub_title = lead + "  ".join(f"{safe_name(what)}: {n:,} of {total:,} ({100 * n // max(total, 1)}%)…"
                                          for what, n, total in self.running.values()) + (
            " · ctrl+q stops it" if self.quitting else "")

    def unsaved_edits(self) -> list[str]:
        """What the open forms (settings, publish) hold that is not saved: one line per form."""
        return [f"{screen.form_label}: {n} field(s) changed" for screen in self.screen_stack
                if (n := getattr(screen, "unsaved", lambda: 0)())]

    async def action_quit(self) -> None:
        """Quit; with a form's edits unsaved, after a yes (escape on settings asked, ctrl+q did
        not); while a change runs, only once it has ended (or been stopped at a safe point):
        the console closing went blank while the change ran on, with nothing said."""
        edits = [] if self.quitting else self.unsaved_edits()  # (quitting: dropped already)
        if edits:
            if self.screen is self._edits_question:
                return  # already asking
            self._edits_question = ConfirmScreen("Quit without saving? " + "; ".join(edits),
                                                 "y drops them; n goes back (ctrl+s saves).")
            self.push_screen(self._edits_question,
                             lambda yes: self.call_later(self._quit_when_done) if yes else None)
            return
        await self._quit_when_done()

    async def _quit_when_done(self) -> None:
        if not self.changing:
            self.exit()
            return
        if isinstance(self.screen, ConfirmScreen):
            return  # already asking
        what = ", ".join(sorted(set(safe_name(v) for v in self.changing.values())))
        if self.quitting:
            self.push_screen(ConfirmScreen(
                f"Stop {what} at a safe point?",
                "What is done stays done (the trash and u undo a delete or purge); the rest is left "
                "as it was. The console closes when it has stopped."),
                lambda yes: self.stop_changes.set() if yes else None)
            return

        def answered(yes: bool | None) -> None:
            if self._running_question is not None and self._running_question[0] is question:
                self._running_question = None
            if yes:
                self.quitting = True
                self._update_header()  # it says so (or quits now: the change ended meanwhile)

        question = ConfirmScreen(
            f"Quit? {what} is still running",
            "y: the console closes when it has ended (ctrl+q again offers to stop it at a safe "
            "point); n: stay.")
        self._running_question = (question, what)
        self.push_screen(question, answered)

    def _operation_result(self, root: Backend, label: str, call: Callable[[Any], Any]) -> Any:
        """``call``'s result, its summary said; None (and the error said) when it failed."""
        try:
            result = call(self.operations(root))
        except QConsoleError as err:
            self.call_from_thread(self.say, f"{label}: {err}", "error")
            result = None
        except OSError as err:
            self.call_from_thread(self.say, f"{label}: {err.strerror or err}", "error")
            result = None
        except Exception as err:  # noqa: BLE001 (a fault of ours: said, and ``done`` still runs)
            self.call_from_thread(self.say, f"{label}: internal error: {type(err).__name__}: {err}", "error")
            result = None
        except KeyboardInterrupt as err:
            if not self.stop_changes.is_set():
                raise
            # how far it got (a publish's ids, a purge's trash batch: u undoes that part too)
            partial = getattr(err, "partial", None)
            line = f"{label}: stopped at a safe point (what was done stays done)"
            if partial is not None:
                line = f"{partial.summary(command_hint=False)}; stopped at a safe point"
                if partial.batch and partial.action in ("delete", "purge"):
                    self.call_from_thread(self._push_undo, (root, partial.batch, partial.queue, line))
            self.exit_lines.append(line)  # said again once the terminal is back (the console may be closing)
            self.call_from_thread(self.say, line, "warning")
            result = None
        else:
            summary = result.summary(command_hint=False) if hasattr(result, "summary") else f"{label}: done"
            batch = getattr(result, "batch", None)
            if batch and getattr(result, "action", "") in ("delete", "purge"):
                entry = (root, batch, getattr(result, "queue", None), summary)
                self.call_from_thread(self._push_undo, entry)
                summary += "  (u undoes)"
            self.call_from_thread(self.say, summary, "information")
        return result

    def _push_undo(self, entry: tuple[Backend, str, str | None, str]) -> None:
        self.undo_stack.append(entry)
        self.undoable_made += 1

    def undo_last(self, after: Callable[[Any], None] | None = None) -> None:
        """Restore this session's last delete or purge from the trash."""
        if self.refuse_if_read_only("undo"):
            return
        if not self.undo_stack:
            # (after an undo, "no delete or purge in this session" was false)
            self.say("nothing to undo: this session's deletes and purges have all been restored"
                     if self.undoable_made else "nothing to undo: no delete or purge in this session", "warning")
            return
        entry = self.undo_stack[-1]
        root, batch, queue, what = entry
        where = self.where(root)

        def answered(yes: bool | None) -> None:
            # the stack may have changed while the question was open: undo the entry asked about
            if not yes or entry not in self.undo_stack:
                return
            place = self.undo_stack.index(entry)
            self.undo_stack.remove(entry)
            #: set when the restore failed: whether the batch is still in the trash
            still: list[bool] = []

            def restore(ops: Any) -> Any:
                try:
                    return ops.trash_restore(batch)
                except (QConsoleError, OSError):
                    # not restored (the Redis server down for a moment, a mount hung up): the
                    # entry went, and the next u said "this session's deletes and purges have
                    # all been restored" of messages still in the trash. Kept while the trash
                    # holds the batch; forgotten once it is gone (restored or emptied elsewhere)
                    try:
                        still.append(any(b.batch == batch for b in ops.trash_list()))
                    except (QConsoleError, OSError):
                        still.append(True)  # cannot tell: the trash most likely still holds it
                    raise

            def done(result: Any) -> None:
                if result is None and still and still[0] and entry not in self.undo_stack:
                    self.undo_stack.insert(min(place, len(self.undo_stack)), entry)
                if after is not None:
                    after(result)

            self.run_operation(root, "undo", restore, done)

        # u may be pressed on another queue than the change's: say which change goes back
        self.push_screen(ConfirmScreen(f"Undo: restore the last change of {safe_name(queue or '?')}{where}?",
                                       what), answered)

    def where(self, root: Backend) -> str:
        """`` (root TARGET)`` when several roots are open: a queue's name (``jobs`` in two of
        them) does not say which one a title or a question is about; "" with one root."""
        return f" (root {root.target})" if len(self.roots) > 1 else ""

    def root_label(self, root: Backend) -> str:
        """How a one-row title names ``root`` among several open ones: the fewest last parts of
        its target that no other open root's target ends with (``ddmq``, ``b/queues``, the
        header shows them whole); "" with one root."""
        if len(self.roots) < 2:
            return ""
        parts = root.target.rstrip("/").split("/")
        others = [r.target.rstrip("/") for r in self.roots if r is not root]
        for n in range(1, len(parts) + 1):
            tail = "/".join(parts[-n:])
            if not any(o == tail or o.endswith("/" + tail) for o in others):
                return tail
        return root.target

    def forget_undo(self, root: Backend, batch: str) -> None:
        """A batch restored another way (the trash screen): u no longer points at it."""
        self.undo_stack[:] = [e for e in self.undo_stack if not (e[0] is root and e[1] == batch)]

    def say(self, text: str, severity: str = "information") -> None:
        """A notification of untrusted text: controls escaped, markup off; kept in the log."""
        self.notify(escape_controls(text, keep_newlines=False), severity=severity, markup=False)  # type: ignore[arg-type]

    def notify(self, message: str, *, title: str = "", severity: str = "information",  # type: ignore[override]
               timeout: float | None = None, markup: bool = True) -> None:
        self.log_entries.append(LogEntry(self.clock(), severity, message if not markup else escape_controls(message)))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)  # type: ignore[arg-type]

    # -- help, log and command palette ------------------------------------------------------
    def help_sections(self) -> list[tuple[str, type]]:
        return [("Root screen", RootScreen), ("Queue screen", QueueScreen), ("Peek", PeekScreen),
                ("Trash", TrashScreen), ("Settings", SettingsScreen), ("Publish", PublishScreen),
                ("Everywhere", QConsoleApp)]

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            # the keys of the screen `?` was pressed on first: from a queue, a peek or the trash
            # the box opened on the root screen's keys, those of the screen in use below the fold
            here = [(title, cls) for title, cls in self.help_sections() if type(self.screen) is cls]
            rest = [section for section in self.help_sections() if section not in here]
            self.push_screen(HelpScreen(here + rest, self.read_only))

    def action_log(self) -> None:
        if not isinstance(self.screen, LogScreen):
            self.push_screen(LogScreen(list(self.log_entries)))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # every key of the current screen is also a palette command
        for binding in getattr(screen, "BINDINGS", ()):
            if isinstance(binding, Binding) and binding.description:
                if self.read_only and binding.action in getattr(screen, "MUTATING", ()):
                    continue
                action = binding.action
                if action == "noop":  # a key description only (shift+up/down marks a range)
                    continue
                _namespace, name, params = parse_action(action)
                if screen.check_action(name, params) is False:  # what the screen refuses here
                    continue
                offers = getattr(screen, "offers", None)
                if offers is not None and not offers(name):  # a key that only says why not, here
                    continue
                if name == "undo" and not self.undo_stack:  # (the key still says there is nothing)
                    continue
                yield SystemCommand(binding.description, f"key {binding.key}",
                                    lambda a=action, s=screen: self.call_later(s.run_action, a))
