"""Bug hunt: an operator's first ten minutes with the real console in tmux (80x24, 120x40,
60x20) on the demo, an RSMQ namespace alone, a 50k-message root and a planted root. One Pilot
test per finding, written to fail before its fix."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


def said(app: Any) -> str:
    return "\n".join(e.text for e in app.log_entries)


def burst(app: Any, *keys: str) -> None:
    """Keys as a fast typist (or tmux send-keys) sends them: all queued before the first is handled."""
    from textual import events

    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


# -- 1. enter then a move key in one burst opened the queue the cursor had moved to ----------------

async def test_enter_then_end_in_one_burst_opens_the_queue_enter_was_pressed_on(vsqs_root: tuple[str, Any]) -> None:
    from qconsole.screens.queue_screen import QueueScreen

    root, manager = vsqs_root
    for name in ("alpha", "bravo", "charlie"):
        manager.get_queue(name).publish(name.encode())
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.screen.cursor_key().endswith(":alpha")
        burst(app, "enter", "end")  # enter on alpha, then end meant for the message list
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert app.screen.queue == "alpha", app.screen.queue  # was charlie: the row under the cursor by then
