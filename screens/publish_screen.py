"""Publish test messages: payload, count, and the fields the backend declares (its publish options)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Static, TextArea

from qconsole.backends.base import Backend, Option
from qconsole.safetext import safe_name, safe_text

from .dialogs import ConfirmScreen
from .keybox import InOrderInput, InOrderTextArea
from .names import ROOT_W, one_row_title, short_name
from .services import services
from .settings_screen import reroute

#: publishing more than this from a form is a mistake, not a test
MAX_COUNT = 100_000


class FormError(ValueError):
    pass


def placeholder(opt: Option) -> str:
    if opt.kind == "choice":
        return "default | " + " | ".join(opt.choices)
    if opt.kind == "bool":
        return "default | true | false"
    if opt.kind == "int_or_bool":
        return "default | true | false | number"
    return "default"


def parse_option(opt: Option, raw: str) -> Any:
    """One field's text as the option's value (None: the store's default); FormError when invalid."""
    text = raw.strip()
    low = text.lower()
    if low in ("", "default"):
        return None
    if opt.kind in ("bool", "int_or_bool") and low in ("true", "yes", "on", "false", "no", "off"):
        return low in ("true", "yes", "on")
    if opt.kind == "choice":
        value: Any = text
    elif opt.kind in ("int", "int_or_bool"):
        digits = text[1:] if text.startswith("-") else text  # one sign: "--5" is no integer
        if not (digits.isascii() and digits.isdigit()) or len(text) > 30:
            raise FormError(f"{opt.name}: expected {'true, false or ' if opt.kind == 'int_or_bool' else ''}an integer")
        value = int(text)
    elif opt.kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise FormError(f"{opt.name}: expected a number") from None
    else:
        raise FormError(f"{opt.name}: expected true or false")
    problem = opt.check(value)
    if problem:
        raise FormError(problem)
    return value


def parse_form(options: Sequence[Option], fields: dict[str, str]) -> dict[str, Any]:
    """The publish arguments from the form's text fields; FormError with one line when invalid."""
    raw = fields.get("count", "").strip() or "1"
    # the length first: int() of a pasted run of over 4,300 digits is a ValueError ("not
    # understood: ValueError: Exceeds the limit (4300 digits) ... sys.set_int_max_str_digits()")
    digits = raw.lstrip("0") or "0"
    if not (raw.isascii() and raw.isdigit()) or len(digits) > len(str(MAX_COUNT)) \
            or not 1 <= int(digits) <= MAX_COUNT:
        raise FormError(f"count: a whole number from 1 to {MAX_COUNT}")
    out: dict[str, Any] = {"count": int(digits)}
    for opt in options:
        value = parse_option(opt, fields.get(opt.name, ""))
        if value is not None:
            out[opt.name] = value
    return out


class PublishScreen(Screen[bool]):
    MUTATING = frozenset({"publish"})
    BINDINGS = [
        Binding("ctrl+s", "publish", "Publish", id="publish.send"),
        Binding("escape", "cancel", "Cancel", id="publish.cancel"),
        # priority: focus moves as tab arrives, so the keys typed after it in one burst (a paste,
        # a fast typist) go to the next field; they went to the field tab was leaving
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True, id="publish.next"),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True,
                id="publish.previous"),
    ]

    def __init__(self, root: Backend, queue: str) -> None:
        super().__init__()
        self.qroot = root
        self.queue = queue
        #: a publish from this form is running (its worker outlives the form)
        self.publishing = False
        #: it ended while another screen was over the form: the form closes when it is back on top
        self.published = False
        #: it failed and the form has not said why yet: (the log entry before it,)
        self.failed: tuple[Any] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.title_text(), id="ptitle")
        # scrolls on a short terminal (the form needs ~18 rows): every field can be reached and
        # the focused one is scrolled into view; not focusable itself (tab goes field to field)
        with VerticalScroll(id="publish", can_focus=False):
            yield Label("payload")
            # empty, not a sample: typing must not prepend to a pre-filled payload
            area = InOrderTextArea("", id="payload", soft_wrap=True, tab_behavior="focus")
            area.placeholder = 'the message body, e.g. {"hello": "world"}'
            yield area
            with Grid(id="pgrid"):
                yield Label("count")
                yield InOrderInput("1", id="count", classes="pfield", select_on_focus=True)
                for opt in self.qroot.publish_options:
                    yield Label(opt.name.replace("_", " "))
                    yield InOrderInput("", placeholder=placeholder(opt), id=opt.name, classes="pfield",
                                tooltip=opt.help, select_on_focus=True)
        yield Static(id="perror")
        yield Footer(compact=True)

    def title_text(self) -> Text:
        """The one-row title, its queue's name fitted to the screen's width."""
        label = services(self).root_label(self.qroot)  # several roots open: `jobs` may be in two
        where = f" · root {short_name(label, ROOT_W)}" if label else ""
        return one_row_title(Text("publish to ", style="bold"), self.queue,
                             Text(f"  ({self.qroot.title}{where})", style="dim"), (self.size.width or 80) - 2)

    def on_mount(self) -> None:
        # at once (focus() waits for the app's queue): the keys typed after p land in the payload
        self.set_focus(self.query_one("#payload", TextArea))
        self.check()

    def on_key(self, event: events.Key) -> None:
        # a key the app gave the screen itself (pushed without waiting for its mount: no field had
        # the focus yet) goes to the field that has it now; fields take every printable key
        if event.is_printable and not getattr(event, "rerouted", False) and self.focused is not None:
            reroute(event, self.focused)

    def on_resize(self) -> None:
        self.query_one("#ptitle", Static).update(self.title_text())
        # a terminal made shorter: the field being typed in stays in view
        focused = self.focused
        if focused is not None:
            self.call_after_refresh(focused.scroll_visible, animate=False)

    @property
    def form_label(self) -> str:
        """The form, as a question about its unsaved edits names it (ctrl+q)."""
        return f"publish to {safe_name(self.queue)}"

    def unsaved(self) -> int:
        """How many fields hold what was typed and not published (none once its publish runs)."""
        if self.publishing or self.published:
            return 0
        typed = sum(inp.value != ("1" if inp.id == "count" else "") for inp in self.query(Input).filter(".pfield"))
        return typed + sum(area.text != "" for area in self.query(TextArea))

    def fields(self) -> dict[str, str]:
        return {inp.id or "": inp.value for inp in self.query(Input).filter(".pfield")}

    def check(self) -> dict[str, Any] | None:
        err = self.query_one("#perror", Static)
        try:
            args = parse_form(self.qroot.publish_options, self.fields())
        except FormError as e:
            err.update(safe_text(str(e), style="red"))
            return None
        except Exception as e:  # noqa: BLE001 (a store's check at fault: said; typed text never ends the console)
            err.update(safe_text(f"not understood: {type(e).__name__}: {e}", style="red", keep_newlines=False))
            return None
        if not self.publishing:  # (its "publishing…" line stays while it runs)
            err.update(Text("ctrl+s publishes, tab moves between fields, escape cancels", style="dim"))
        return args

    @on(Input.Changed, ".pfield")
    def _changed(self) -> None:
        self.check()

    def action_publish(self) -> None:
        app = services(self)
        if app.refuse_if_read_only("publish"):
            return
        if self.publishing:  # a second ctrl+s would publish the messages twice
            app.say("this form's publish is still running", "warning")
            return
        args = self.check()
        if args is None:
            return
        payload = self.query_one("#payload", TextArea).text.encode("utf-8", errors="surrogateescape")
        count = args.pop("count")
        queue = self.queue

        def publish(ops: Any) -> Any:
            return ops.publish(queue, [payload] * count, **args)

        entries = services(self).log_entries
        seen = entries[-1] if entries else None  # (the failure said after it is this publish's)

        def done(result: Any) -> None:
            self.publishing = False
            # only while the form is on top: closed meanwhile (escape), dismissing would pop
            # whatever screen is on top now; under another one (help, the palette), it closes
            # when it is back on top
            if result is not None and self in self.app.screen_stack and not self.is_active:
                self.published = True
            elif result is None:
                self.failed = (seen,)
                if self.is_active:
                    self.say_failure()
            elif self.is_active:
                self.dismiss(True)

        self.publishing = True
        self.query_one("#perror", Static).update(
            Text(f"publishing {count} message(s)… escape closes this form, the publish goes on", style="dim"))
        app.run_operation(self.qroot, "publish", publish, done)

    def say_failure(self) -> None:
        """Under the form, why its publish failed (the toast vanishes, and the line went back to
        "ctrl+s publishes, ..." as if nothing had happened: a payload over RSMQ's maxsize, a
        store that could not be reached). Until a field changes."""
        if self.failed is None:
            return
        (seen,), self.failed = self.failed, None
        self.check()
        for entry in reversed(services(self).log_entries):
            if entry is seen:
                break
            if entry.severity == "error" and entry.text.startswith("publish: "):
                self.query_one("#perror", Static).update(safe_text(
                    f"not published: {entry.text[len('publish: '):]} · ctrl+s tries again", style="red",
                    keep_newlines=False))
                return

    def on_screen_resume(self) -> None:
        if self.published:
            self.dismiss(True)
        else:
            self.say_failure()

    def action_cancel(self) -> None:
        """Close; with a payload or option typed and not published, only after a yes (escape
        dropped a typed message silently, as settings' once did)."""
        n = self.unsaved()
        if not n:
            self.dismiss(False)
            return

        def answered(yes: bool | None) -> None:
            if yes and self.is_current:
                self.dismiss(False)

        self.app.push_screen(ConfirmScreen(f"Close without publishing? {n} field(s) typed",
                                           "y drops them; n goes back to the form (ctrl+s publishes)."), answered)
