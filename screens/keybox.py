"""A one-line box (the root screen's filter, the queue screen's search) that keeps the order of
keys typed in one burst (tmux send-keys, a paste of commands, a fast typist)."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.widgets import Input


class BurstInput(Input):
    """An Input whose enter acts as the box takes it from its queue, and which hands keys that
    reach it after it lost the focus back to the app, to go where the focus is now.

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
