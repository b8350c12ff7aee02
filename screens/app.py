"""The Textual application: holds the roots, the clock and the operations; pushes the root screen."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from qconsole.errors import QConsoleError
from qconsole.safetext import escape_controls, safe_name
from qconsole.backends import open_target as Root

Clock = Callable[[], float]


class QConsoleApp(App[None]):
    """qconsole's live console. ``clock`` (epoch seconds) is injectable so tests can freeze time."""

    CSS_PATH = "qconsole.tcss"
    TITLE = "qconsole"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit"),
    ]

    def __init__(
        self,
        roots: Root | list[Root],
        *,
        interval: float = 2.0,
        read_only: bool = False,
        audit_log: str | None = None,
        clock: Clock = time.time,
        live_countdown: bool = True,
        timer: Clock = time.perf_counter,
    ) -> None:
        super().__init__()
        self.roots: list[Root] = roots if isinstance(roots, list) else [roots]
        self.interval = interval
        self.read_only = read_only
        self.audit_log = audit_log
        self.clock = clock
        #: snapshots turn the 1 s countdown timer off (the clock is frozen anyway)
        self.live_countdown = live_countdown
        #: measures scan durations (snapshots pass a constant so the status line is stable)
        self.timer = timer
        self._ops: dict[int, Any] = {}
        self.title = "qconsole · READ-ONLY" if read_only else "qconsole"
        self.sub_title = "  ".join(safe_name(r.path) for r in self.roots)

    def on_mount(self) -> None:
        from .root_screen import RootScreen

        self.push_screen(RootScreen())

    # -- operations -------------------------------------------------------------------------
    def operations(self, root: Root) -> Any:
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

    def refuse_if_read_only(self, what: str) -> bool:
        """True (and says so) when a change is not allowed."""
        if self.read_only:
            self.notify(f"read-only: {what} refused", severity="warning", markup=False)
            return True
        return False

    def run_operation(self, root: Root, label: str, call: Callable[[Any], Any],
                      done: Callable[[Any], None] | None = None) -> None:
        """Run ``call(operations)`` in a thread; report its summary; then ``done(result)``."""
        self._operation_worker(root, label, call, done)

    @work(thread=True, exit_on_error=False, group="ops")
    def _operation_worker(self, root: Root, label: str, call: Callable[[Any], Any],
                          done: Callable[[Any], None] | None) -> None:
        try:
            result = call(self.operations(root))
        except QConsoleError as err:
            self.call_from_thread(self.say, f"{label}: {err}", "error")
            result = None
        except OSError as err:
            self.call_from_thread(self.say, f"{label}: {err.strerror or err}", "error")
            result = None
        else:
            summary = result.summary() if hasattr(result, "summary") else f"{label}: done"
            self.call_from_thread(self.say, summary, "information")
        if done is not None:
            self.call_from_thread(done, result)

    def say(self, text: str, severity: str = "information") -> None:
        """A notification of untrusted text: controls escaped, markup off."""
        self.notify(escape_controls(text, keep_newlines=False), severity=severity, markup=False)  # type: ignore[arg-type]

    # -- help and command palette ---------------------------------------------------------
    def action_help(self) -> None:
        from .help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        # every key of the current screen is also a palette command
        for binding in getattr(screen, "BINDINGS", ()):
            if isinstance(binding, Binding) and binding.description:
                action = binding.action
                yield SystemCommand(binding.description, f"key {binding.key}",
                                    lambda a=action, s=screen: self.call_later(s.run_action, a))
