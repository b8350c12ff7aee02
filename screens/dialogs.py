"""Small modal dialogs: a yes/no question, a typed confirmation, a queue picker, a file name."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList
from textual.widgets.option_list import Option

from qconsole.safetext import escape_controls, safe_text

from .keybox import InOrderInput

#: a dialog's screen on a short terminal (below 16 rows) is ``-short``: thinner padding and
#: one-row buttons, so Yes and No fit at 40x12 (their three-row buttons were cut off)
DIALOG_BREAKPOINTS = [(0, "-short"), (16, "-tall")]


class ConfirmScreen(ModalScreen[bool]):
    """Ask before anything destructive; `y` confirms, `n`/escape declines (the default)."""

    VERTICAL_BREAKPOINTS = DIALOG_BREAKPOINTS
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(safe_text(self.question, keep_newlines=False), classes="question")
            if self.detail:
                yield Label(safe_text(self.detail), classes="detail")
            with Horizontal(classes="buttons"):
                # the keys on the buttons: y and n answer from anywhere in the dialog
                yield Button("No (n)", id="no", variant="primary")
                yield Button("Yes (y)", id="yes", variant="error")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TypedConfirmScreen(ModalScreen[bool]):
    """For what cannot be taken back lightly (purge): the operator types the queue's name."""

    VERTICAL_BREAKPOINTS = DIALOG_BREAKPOINTS
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="typed.cancel")]

    def __init__(self, question: str, detail: str, expected: str) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.expected = expected

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(safe_text(self.question, keep_newlines=False), classes="question")
            yield Label(safe_text(self.detail), classes="detail")
            yield Label(safe_text(f"Type {self.expected} and press enter (esc cancels):", keep_newlines=False),
                        classes="detail")
            # no placeholder: the queue's name shown greyed in the box reads as already typed
            yield InOrderInput(id="typed")
            yield Label("", id="typed-error", classes="detail")

    def on_mount(self) -> None:
        self.query_one("#typed", Input).focus()

    @on(Input.Submitted, "#typed")
    def _submitted(self, event: Input.Submitted) -> None:
        # the name as shown (controls and invisible characters escaped: ``esc\e[31mred``) or as it is
        if event.value in (self.expected, escape_controls(self.expected, keep_newlines=False)):
            self.dismiss(True)
            return
        self.query_one("#typed-error", Label).update(safe_text("that is not the queue's name: nothing done",
                                                               style="red"))
        event.input.value = ""

    def action_cancel(self) -> None:
        self.dismiss(False)


class AskTextScreen(ModalScreen[str | None]):
    """One line of text (a file name to save to); escape cancels."""

    VERTICAL_BREAKPOINTS = DIALOG_BREAKPOINTS
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="ask.cancel")]

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(safe_text(self.question, keep_newlines=False), classes="question")
            yield InOrderInput(self.value, id="ask")

    def on_mount(self) -> None:
        self.query_one("#ask", Input).focus()

    @on(Input.Submitted, "#ask")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PickQueueScreen(ModalScreen[str | None]):
    """Pick a destination queue (for move)."""

    VERTICAL_BREAKPOINTS = DIALOG_BREAKPOINTS
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="pick.cancel")]

    def __init__(self, title: str, names: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.names = names

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(safe_text(self.title_text, keep_newlines=False), classes="question")
            if self.names:
                yield OptionList(*[Option(safe_text(n, keep_newlines=False), id=n) for n in self.names])
            else:
                yield Label("no other queue in this root", classes="detail")

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
