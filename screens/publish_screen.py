"""Publish test messages: payload, count, and for ddmq priority, timeout and requeue options."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Static, TextArea

from qconsole.safetext import safe_name, safe_text
from qconsole.backends import open_target as Root
from qconsole.states import DDMQ

#: publishing more than this from a form is a mistake, not a test
MAX_COUNT = 100_000


class FormError(ValueError):
    pass


def parse_form(layout: str, fields: dict[str, str]) -> dict[str, Any]:
    """The publish arguments from the form's text fields; FormError with one line when invalid."""

    def number(name: str, low: int = 0, high: int | None = None) -> int | None:
        raw = fields.get(name, "").strip()
        if raw == "":
            return None
        if not (raw.isascii() and raw.isdigit()):
            raise FormError(f"{name}: expected a non-negative integer")
        value = int(raw)
        if value < low or (high is not None and value > high):
            raise FormError(f"{name}: must be between {low} and {high}")
        return value

    out: dict[str, Any] = {"count": number("count", 1, MAX_COUNT) or 1}
    if layout == DDMQ:
        out["priority"] = number("priority")
        out["timeout"] = number("timeout")
        raw = fields.get("requeue", "").strip().lower()
        if raw in ("", "default"):
            out["requeue"] = None
        elif raw in ("true", "yes", "on"):
            out["requeue"] = True
        elif raw in ("false", "no", "off"):
            out["requeue"] = False
        elif raw.isascii() and raw.isdigit():
            out["requeue"] = int(raw)  # requeue with this priority
        else:
            raise FormError("requeue: true, false, or a priority number")
        out["requeue_limit"] = number("requeue_limit")
    return out


class PublishScreen(Screen[bool]):
    BINDINGS = [
        Binding("ctrl+s", "publish", "Publish", id="publish.send"),
        Binding("escape", "cancel", "Cancel", id="publish.cancel"),
    ]

    def __init__(self, root: Root, queue: str) -> None:
        super().__init__()
        self.qroot = root
        self.queue = queue

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text.assemble(("publish to ", "bold"), (safe_name(self.queue), "bold"),
                                   (f"  ({self.qroot.layout})", "dim")), id="ptitle")
        with Vertical(id="publish"):
            yield Label("payload")
            yield TextArea('{"hello": "world"}', id="payload", soft_wrap=True)
            with Grid(id="pgrid"):
                yield Label("count")
                yield Input("1", id="count", classes="pfield")
                if self.qroot.layout == DDMQ:
                    yield Label("priority")
                    yield Input("", placeholder="ddmq.yaml default", id="priority", classes="pfield")
                    yield Label("timeout (s)")
                    yield Input("", placeholder="ddmq.yaml default", id="timeout", classes="pfield")
                    yield Label("requeue")
                    yield Input("", placeholder="default | true | false | priority", id="requeue", classes="pfield")
                    yield Label("requeue limit")
                    yield Input("", placeholder="none", id="requeue_limit", classes="pfield")
        yield Static(id="perror")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#payload", TextArea).focus()
        self.check()

    def fields(self) -> dict[str, str]:
        return {inp.id or "": inp.value for inp in self.query(Input).filter(".pfield")}

    def check(self) -> dict[str, Any] | None:
        err = self.query_one("#perror", Static)
        try:
            args = parse_form(self.qroot.layout, self.fields())
        except FormError as e:
            err.update(safe_text(str(e), style="red"))
            return None
        err.update(Text("ctrl+s publishes, escape cancels", style="dim"))
        return args

    @on(Input.Changed, ".pfield")
    def _changed(self) -> None:
        self.check()

    def action_publish(self) -> None:
        if self.app.refuse_if_read_only("publish"):  # type: ignore[attr-defined]
            return
        args = self.check()
        if args is None:
            return
        payload = self.query_one("#payload", TextArea).text.encode("utf-8", errors="surrogateescape")
        count = args.pop("count")
        queue = self.queue
        if self.qroot.layout != DDMQ:
            args = {}

        def publish(ops: Any) -> Any:
            return ops.publish(queue, [payload] * count, **args)

        def done(result: Any) -> None:
            if result is not None:
                self.dismiss(True)

        self.app.run_operation(self.qroot, "publish", publish, done)  # type: ignore[attr-defined]

    def action_cancel(self) -> None:
        self.dismiss(False)
