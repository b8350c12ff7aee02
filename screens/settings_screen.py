"""Settings: the root's and the queue's values side by side, each key's effective value and its source.

Everything comes from the backend (``settings``, ``setting_fields``, ``parse_setting``,
``validate_settings``), read in a worker; the screen touches no file itself.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Static

from qconsole.backends.base import SETTINGS, Backend, Setting, Unsupported
from qconsole.errors import QConsoleError, SettingsError
from qconsole.safetext import escape_controls, safe_name, safe_text

from .dialogs import ConfirmScreen
from .keybox import InOrderInput
from .names import ROOT_W, one_row_title, short_name
from .services import services

LEVELS = ("root", "queue")
#: keys of the files' own (not the store's) shown as fields at most: a planted ddmq.yaml of
#: 1,500 keys made 6,000 widgets, seconds per key typed; the rest are kept as they are on save
MAX_OTHER_KEYS = 50


def show_value(value: Any) -> str:
    """A value as a field shows it: controls from a shared ddmq.yaml (an OSC title, an OSC 52
    clipboard write) are shown escaped, never sent to the terminal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else escape_controls(str(value)[:4096], keep_newlines=False)


def file_values(root: dict[str, Setting], queue: dict[str, Setting]) -> dict[str, dict[str, Any]]:
    """What each level's own file says, from the effective settings of the root and of the queue."""
    return {"root": {k: s.value for k, s in root.items() if s.source == "root"},
            "queue": {k: s.value for k, s in queue.items() if s.source == "queue"}}


def field_id(prefix: str, key: str) -> str | None:
    """A widget id for ``key``'s field (tests and CSS find it by it), or None when the key is
    no Textual identifier: ``note_ünï`` is a Python identifier but not a Textual id, and a
    ddmq.yaml holding it stopped the console with BadIdentifier as the form opened."""
    return f"{prefix}--{key}" if key.isascii() and key.isidentifier() else None


def reroute(event: events.Key, widget: Any) -> None:
    """A key the screen was given before ``widget`` had the focus, to ``widget``."""
    event.stop()
    event.prevent_default()
    again = events.Key(event.key, event.character)
    again.rerouted = True  # type: ignore[attr-defined]
    widget.post_message(again)


class Saved:
    """The saves of one ctrl+s (the root's file and the queue's): each one's line said."""

    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def summary(self, *, command_hint: bool = True) -> str:
        return "; ".join(r.summary(command_hint=command_hint) for r in self.results)


class SettingsScreen(Screen[None]):
    """A form over both ddmq.yaml files; validates as you type; saves atomically through the core."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="settings.save"),
        Binding("escape", "back", "Back", id="settings.back"),
        # priority: focus moves as tab arrives, so keys typed after it in one burst go to the
        # next field (they went to the field tab was leaving)
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True, id="settings.next"),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True,
                id="settings.previous"),
    ]

    MUTATING = frozenset({"save"})
    #: below 80 columns (``-narrow``) the grid's columns are narrower: at 60 the effective column
    #: had 9 cells and "600 (queue)" lost its source to a second row the one-row cell hides
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-wide")]

    class Loaded(TMessage):
        def __init__(self, files: dict[str, dict[str, Any]], eff: dict[str, Setting],
                     defaults: dict[str, Any], error: str | None) -> None:
            super().__init__()
            self.files = files
            self.eff = eff
            self.defaults = defaults
            self.error = error

    def __init__(self, root: Backend, queue: str) -> None:
        super().__init__()
        self.qroot = root
        self.queue = queue
        self.files: dict[str, dict[str, Any]] = {}
        self.keys: list[str] = []
        #: each field's text as loaded from its file, or as last saved: what the operator changed
        #: is measured against it
        self.initial: dict[tuple[str, str], str] = {}
        #: each field's text at the last ctrl+s: the read-back replaces only fields still showing it
        self.saved: dict[tuple[str, str], str] = {}
        self.defaults: dict[str, Any] = {}
        #: False when the store has no root-wide settings (its root column stays disabled)
        self.root_level = True
        #: the form's fields, in order (None: not loaded yet)
        self.fields: list[Input] | None = None
        #: the effective column's labels by key, and the text each shows (updated only when it changes)
        self.effective: dict[str, Label] = {}
        self._shown: dict[str, Text] = {}
        #: the (level, key) fields whose text does not parse (shown as invalid in the effective column)
        self.invalid: set[tuple[str, str]] = set()
        #: printable keys typed before the fields were there (said once the form is loaded)
        self.early_keys = 0
        #: problems of values as their files hold them (not changed here): said, never saved
        self.stored_problems: list[str] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.title_text(), id="stitle")
        # not focusable itself: tab goes from field to field, and the focused field is in view
        with VerticalScroll(id="settings", can_focus=False):
            if not self.qroot.can(SETTINGS):
                yield Static(Text(f"{self.qroot.title} queues have no settings.", style="italic"), id="nosettings")
            else:
                yield Static(Text("loading…", style="dim"), id="sload")
        yield Static(id="serror")
        yield Footer(compact=True)

    def title_text(self) -> Text:
        """The one-row title, its queue's name fitted to the screen's width."""
        label = services(self).root_label(self.qroot)  # several roots open: `jobs` may be in two
        where = f"  root {short_name(label, ROOT_W)}" if label else ""
        return one_row_title(Text.assemble(("settings  ", "bold"), ("queue ", "dim")), self.queue,
                             Text(where, style="dim"), (self.size.width or 80) - 2)

    def on_resize(self) -> None:
        self.query_one("#stitle", Static).update(self.title_text())

    def on_mount(self) -> None:
        if self.qroot.can(SETTINGS):
            self._load_worker()

    def _read(self) -> tuple[dict[str, dict[str, Any]], dict[str, Setting], dict[str, Any]]:
        try:
            root = self.qroot.settings(None)
        except (Unsupported, SettingsError):  # a store whose settings are per queue only (RSMQ)
            root, self.root_level = {}, False
        eff = self.qroot.settings(self.queue)
        defaults = {f.key: getattr(f, "default", None) for f in self.qroot.setting_fields}
        defaults.update({k: s.value for k, s in root.items() if s.source == "default"})
        return file_values(root, eff), eff, defaults

    @work(thread=True, exclusive=True, exit_on_error=False, group="settings")
    def _load_worker(self) -> None:
        try:
            files, eff, defaults = self._read()
            self.post_message(self.Loaded(files, eff, defaults, None))
        except (QConsoleError, OSError) as err:
            self.post_message(self.Loaded({}, {}, {}, str(err) if isinstance(err, QConsoleError) else err.strerror))

    async def on_settings_screen_loaded(self, event: Loaded) -> None:
        box = self.query_one("#settings", VerticalScroll)
        await box.query("#sload").remove()
        if event.error:
            await box.mount(Static(safe_text(event.error, style="red")))
            return
        self.files = event.files
        self.defaults = event.defaults
        self.fields = []
        known = [f.key for f in self.qroot.setting_fields]
        others = sorted(k for k in event.eff if k not in known)
        self.keys = known + others[:MAX_OTHER_KEYS]
        if len(others) > MAX_OTHER_KEYS:  # said above the form, where it is seen
            more = len(others) - MAX_OTHER_KEYS
            await box.mount(Static(Text(f"{more} more key(s) in the files are not shown here: a save keeps them as "
                                        f"they are (qconsole config {safe_name(self.queue)} lists them all)",
                                        style="yellow"), id="smore"))
        grid = Grid(id="sgrid")
        await box.mount(grid)
        # the input columns' headings are indented like the inputs' text (their padding)
        cells: list[Any] = [Label(Text("key", style="bold")), Label(Text("root", style="bold"), classes="inhead"),
                            Label(Text("queue", style="bold"), classes="inhead"),
                            Label(Text("effective (source)", style="bold"))]
        for key in self.keys:
            cells.append(Label(safe_text(key, keep_newlines=False)))
            for level in LEVELS:
                text = self._file_text(level, key)
                self.initial[(level, key)] = text
                inp = InOrderInput(text,
                            placeholder="-", id=field_id(level, key),
                            classes="setting",
                            disabled=services(self).read_only or (level == "root" and not self.root_level))
                inp.setting = (level, key)  # type: ignore[attr-defined]
                cells.append(inp)
                self.fields.append(inp)
            cells.append(Label(id=field_id("eff", key), classes="effective"))
            cells[-1].setting_key = key  # type: ignore[attr-defined]
            self.effective[key] = cells[-1]
        # each field says Changed for its first value: one recompute for them all, not one per
        # field over every field (a planted ddmq.yaml of 1,500 keys froze the console for minutes)
        with self.prevent(Input.Changed):
            await grid.mount_all(cells)
        self.recompute()
        first = next((f for f in self.fields if not f.disabled), None)
        if first is not None and self.focused is None:
            self.set_focus(first)  # typing goes to the first field at once (nothing was focused)
        if self.early_keys:
            services(self).say(f"{self.early_keys} key(s) typed before the settings were read were not taken",
                               "warning")

    def on_key(self, event: events.Key) -> None:
        if not event.is_printable or getattr(event, "rerouted", False):
            return
        if self.fields is None:  # before the fields are there a typed key reaches nothing: said
            self.early_keys += 1
        elif self.focused in self.fields:
            # the app gave it to the screen (no field had the focus yet) and a field has it now:
            # it goes there (a field takes every printable key: none comes up from one)
            reroute(event, self.focused)

    def _file_text(self, level: str, key: str) -> str:
        file = self.files.get(level, {})
        return show_value(file.get(key)) if key in file else ""

    # -- validation ---------------------------------------------------------------------
    def values(self) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """The values typed per level (empty fields left out) and every problem found in the
        fields the operator changed. A value as its file holds it that the form would not take
        (PyRSMQ's maxsize 65565, a planted ddmq.yaml) is in :attr:`stored_problems`: a save
        leaves it as it is (as ``qconsole config`` does), so it blocks no other change."""
        out: dict[str, dict[str, Any]] = {level: {} for level in LEVELS}
        problems: list[str] = []
        stored: list[str] = []
        #: per level, the keys whose field holds what the file holds
        kept: dict[str, set[str]] = {level: set() for level in LEVELS}
        self.invalid = set()
        for inp in self.fields or ():
            level, key = inp.setting  # type: ignore[attr-defined]
            text = inp.value
            unchanged = text.strip() == self.initial.get((level, key), "").strip()
            if unchanged:
                kept[level].add(key)
            if text.strip() == "":
                if not self.qroot.settings_removable and self.initial.get((level, key), "").strip():
                    # said while typing, not refused at ctrl+s after "1 to remove"
                    problems.append(f"{level}: {key}: {self.qroot.title} settings cannot be removed; give a value")
                    inp.add_class("invalid")
                    self.invalid.add((level, key))
                    continue
                inp.remove_class("invalid")
                continue
            said = stored if unchanged else problems
            try:
                value = self.qroot.parse_setting(key, text)
                # a changed value that parses but is out of the store's bounds (RSMQ's vt -5, a
                # ddmq message_timeout over its maximum) is this field's problem too: it read
                # "-5 (queue)" in the effective column, and only the first such field was said
                out_of_bounds = [] if unchanged else self.qroot.validate_settings({key: value})
                if out_of_bounds:
                    said.extend(f"{level}: {p}" for p in out_of_bounds)
                    inp.add_class("invalid")
                    self.invalid.add((level, key))
                    continue
                out[level][key] = value
                inp.remove_class("invalid")
            except QConsoleError as err:
                said.append(f"{level}: {err}")
                inp.add_class("invalid")
                self.invalid.add((level, key))
            except Exception as err:  # noqa: BLE001 (a store's parser at fault: typed text never ends the console)
                said.append(f"{level}: {key}: not understood ({type(err).__name__}: {err})")
                inp.add_class("invalid")
                self.invalid.add((level, key))
        for level in LEVELS:
            for said, part in ((problems, {k: v for k, v in out[level].items() if k not in kept[level]}),
                               (stored, {k: v for k, v in out[level].items() if k in kept[level]})):
                try:
                    said.extend(f"{level}: {p}" for p in self.qroot.validate_settings(part))
                except Exception as err:  # noqa: BLE001 (as above)
                    said.append(f"{level}: not understood ({type(err).__name__}: {err})")
        self.stored_problems = stored
        return out, problems

    def changes(self, typed: dict[str, dict[str, Any]]) -> dict[str, tuple[dict[str, Any], list[str]]]:
        """Per level, (keys to set, keys to remove): only fields whose text the operator changed.

        A field that had a value in its file and is now empty removes the key from that file
        (so it falls back to the root's value, then the default); one that was empty and still
        is changes nothing.
        """
        out: dict[str, tuple[dict[str, Any], list[str]]] = {level: ({}, []) for level in LEVELS}
        for inp in self.fields or ():
            level, key = inp.setting  # type: ignore[attr-defined]
            text = inp.value.strip()
            if text == self.initial.get((level, key), "").strip():
                continue
            if not text:
                if key in self.files.get(level, {}):
                    out[level][1].append(key)
            elif key in typed[level]:
                out[level][0][key] = typed[level][key]
        return {level: change for level, change in out.items() if change[0] or change[1]}

    def recompute(self) -> None:
        typed, problems = self.values()
        for key, label in self.effective.items():
            if key in self.defaults and self.defaults[key] is not None:
                text = Text.assemble(safe_text(show_value(self.defaults[key]), keep_newlines=False), (" (default)", "dim"))
            else:  # (RSMQ has no defaults: every queue has its own value)
                text = Text("-", style="dim")
            for level in LEVELS:
                if (level, key) in self.invalid:
                    # the level's field wins over the ones before it: what it holds now is no value
                    text = Text.assemble(("invalid", "bold red"), (f" ({level})", "dim"))
                elif key in typed[level]:
                    text = Text.assemble(safe_text(show_value(typed[level][key]), keep_newlines=False),
                                         (f" ({level})", "dim"))
            if self._shown.get(key) != text:  # (only what changed: a label update lays the grid out again)
                self._shown[key] = text
                label.update(text)
        err = self.query_one("#serror", Static)
        pending = self.changes(typed)
        kept = self.stored_problems
        note = Text()
        if kept:  # a value as stored that the form would not take: said, and left as it is
            more = f" (+{len(kept) - 1} more)" if len(kept) > 1 else ""
            note = safe_text(f" · as stored: {kept[0]}{more}; kept unless changed", style="yellow",
                             keep_newlines=False)
        if services(self).read_only:  # the fields are disabled and ctrl+s is no key: not offered
            err.update(Text.assemble(("READ-ONLY: the settings are shown, never saved", "dim"), note))
        elif problems:
            err.update(safe_text(problems[0], style="red", keep_newlines=False))
        elif pending:
            n_set = sum(len(to_set) for to_set, _u in pending.values())
            n_unset = sum(len(to_unset) for _s, to_unset in pending.values())
            removed = [f"{level}: {', '.join(u)}" for level, (_s, u) in pending.items() if u]
            line = f"ctrl+s saves: {n_set} to set, {n_unset} to remove"
            if removed:
                line += f" ({'; '.join(removed)})"
            err.update(Text.assemble(safe_text(line, style="bold", keep_newlines=False), note))
        elif kept:
            err.update(Text.assemble(("ctrl+s saves", "dim"), note))
        else:
            err.update(Text("ctrl+s saves (atomic; unknown keys are kept)", style="dim"))

    @on(Input.Changed, ".setting")
    def _changed(self) -> None:
        self.recompute()

    # -- save ---------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save":
            return self.qroot.can(SETTINGS) and not services(self).read_only
        return True

    def action_save(self) -> None:
        if not self.qroot.can(SETTINGS):
            return
        if services(self).refuse_if_read_only("save settings"):
            return
        typed, problems = self.values()
        if problems:
            services(self).say(f"not saved: {problems[0]}", "error")
            return
        pending = self.changes(typed)
        changes = [(None if level == "root" else self.queue, to_set, to_unset)
                   for level, (to_set, to_unset) in pending.items()]
        if not changes:
            services(self).say("nothing to save")
            return

        def save(ops: Any) -> Any:
            return Saved([ops.save_settings(queue, to_set, unset=to_unset) for queue, to_set, to_unset in changes])

        # what is being saved is the baseline at once: escape right after ctrl+s asked to drop
        # "1 field(s) changed" until the read-back landed
        before = dict(self.initial), {level: dict(values) for level, values in self.files.items()}
        self.saved = {inp.setting: inp.value for inp in self.fields or ()}  # type: ignore[attr-defined]
        self.initial.update(self.saved)
        for level, (to_set, to_unset) in pending.items():
            file = self.files.setdefault(level, {})
            file.update(to_set)
            for key in to_unset:
                file.pop(key, None)
        self.recompute()
        services(self).run_operation(self.qroot, "save settings", save,
                                     lambda result: self._after_save(result is not None, before))

    def _after_save(self, saved: bool,
                    before: tuple[dict[tuple[str, str], str], dict[str, dict[str, Any]]]) -> None:
        if not saved:
            # the edits are pending again, even when the files cannot be read back (the Redis
            # server down, the queue deleted): the form said "ctrl+s saves" with nothing to
            # save, a second ctrl+s "nothing to save", and escape dropped the edit unasked
            self.initial, self.files = before
            if self.is_attached:
                self.recompute()
        self._load_again(saved)

    def _load_again(self, saved: bool) -> None:
        # the app taken here, on the event loop: a thread finds it through the screen's parents,
        # and a screen left meanwhile has none (NoActiveAppError)
        self._reload_worker(saved, services(self))

    @work(thread=True, exclusive=True, exit_on_error=False, group="settings")
    def _reload_worker(self, saved: bool, app: Any) -> None:
        try:
            files, _eff, _defaults = self._read()
        except (QConsoleError, OSError) as err:
            app.call_from_thread(app.say, str(err), "error")
            return
        app.call_from_thread(self._show_files, files, saved)

    def _show_files(self, files: dict[str, dict[str, Any]], saved: bool = True) -> None:
        """After a save: the fields show what the files now say (ddmq may have changed them too),
        except those edited since ctrl+s (the read-back overwrote what was typed meanwhile).
        After a failed save every field keeps its text: the edits are pending again."""
        self.files = files
        if not self.is_attached:  # the operator left the screen meanwhile
            return
        for inp in self.fields or ():
            level, key = inp.setting  # type: ignore[attr-defined]
            text = self._file_text(level, key)
            self.initial[(level, key)] = text
            if saved and inp.value == self.saved.get((level, key)):
                inp.value = text
        self.recompute()

    @property
    def form_label(self) -> str:
        """The form, as a question about its unsaved edits names it (ctrl+q)."""
        return f"settings of {safe_name(self.queue)}"

    def unsaved(self) -> int:
        """How many fields differ from what their file says (or from what was last saved)."""
        return sum(inp.value != self.initial.get(inp.setting)  # type: ignore[attr-defined]
                   for inp in self.fields or ())

    def action_back(self) -> None:
        """Back; with unsaved edits, only after a yes (escape dropped them silently)."""
        n = self.unsaved()
        if not n:
            self.app.pop_screen()
            return

        def answered(yes: bool | None) -> None:
            if yes and self.is_current:
                self.app.pop_screen()

        self.app.push_screen(ConfirmScreen(f"Leave without saving? {n} field(s) changed",
                                           "y drops them; n goes back to the form (ctrl+s saves)."), answered)
