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


# -- 2. a search under way said the cursor's message was gone -------------------------------------

async def test_a_search_under_way_does_not_say_the_cursor_message_is_gone(vsqs_root: tuple[str, Any],
                                                                          monkeypatch: Any) -> None:
    from qconsole.screens.queue_screen import QueueScreen

    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    for i in range(5):
        q.publish(f"payload {i}".encode())
    # the pass over the payloads not started yet (a big queue: it reads for seconds before a match)
    monkeypatch.setattr(QueueScreen, "_filter_worker", lambda self, *a, **kw: None)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "jobs")
        lst = screen.query_one("MessageList")
        await pilot.press("down", "down")
        on = lst.current().id
        await pilot.press("slash", *"zzz", "enter")
        await settle(pilot)
        assert screen.view is not None
        text = screen_text(app)
        assert "is gone" not in text, text  # was "message 17… is gone (consumed or changed)": it was not
        await pilot.press("escape")  # the view closes: the cursor is back on its message
        await settle(pilot)
        assert screen.view is None and "is gone" not in screen_text(app)
        assert lst.current().id == on  # (was the first row)
