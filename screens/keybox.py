"""One-line boxes that keep the order of keys typed in one burst (tmux send-keys, a paste of
commands, a fast typist, or any typist while the console is busy and keys queue up)."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.widgets import Input, TextArea


class InOrderInput(Input):
    """An Input whose editing keys (backspace, delete, arrows, home/end, ctrl+a/k/u/w...) act as
    the box takes them, in line with the characters typed.

    Input types a character as it takes the key, but its editing keys are bindings, run only
    when the key has bubbled up to the app: queued behind them, characters typed after a
    backspace went in first ("1", backspace, 50000 in the publish form's count left 5000)."""

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable or event.key in ("enter", "tab", "shift+tab"):
            return  # Input's own handling (a character), or the form's and the screen's keys
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            event.stop()
            event.prevent_default()  # (Input's _on_key has nothing to do with it)
            await self.app.run_action(binding.action, self)
            return


class InOrderTextArea(TextArea):
    """The publish form's payload box, the same way as :class:`InOrderInput`: its editing keys
    act as it takes them, in line with the characters (and the enters) typed."""

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable or event.key in ("enter", "tab", "shift+tab", "escape"):
            return  # TextArea's own handling (it types these), or the form's and the screen's keys
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            event.stop()
            event.prevent_default()
            await self.app.run_action(binding.action, self)
            return


class BurstInput(InOrderInput):
    """An InOrderInput whose enter acts as the box takes it from its queue, and which hands keys
    that reach it after it lost the focus back to the app, to go where the focus is now.

    The app hands each key to the widget focused when the app takes it, and takes a whole burst
    before the box handles any: ``/ br enter j enter`` queued j and enter in the box. Input's
    own enter only posts Submitted, handled later, so j was typed into it ('brj')."""

    def __init__(self, *args: object, on_enter: Callable[[Input], None], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._on_enter = on_enter

    async def _on_key(self, event: events.Key) -> None:
        if self.screen.focused is not self:
            # queued here before an enter of the burst moved the focus on: it is the next
            # widget's key (Input's own _on_key, which would type it in, is not run)
            event.stop()
            event.prevent_default()
            self.app.post_message(events.Key(event.key, event.character))
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._on_enter(self)
        # (else InOrderInput's _on_key, then Input's, are called next: Textual walks the classes)
