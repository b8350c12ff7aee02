"""Peek on what an operator meets in a real queue: payloads of megabytes, and walking with n/b
before acting on the message just viewed."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.demo import FIXED_NOW  # noqa: E402
from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


def vsqs_root(tmp_path: Any, payloads: list[bytes]) -> str:
    root = str(tmp_path / "v")
    os.makedirs(os.path.join(root, "q"))
    for i, body in enumerate(payloads):
        with open(os.path.join(root, "q", str(int((FIXED_NOW - 5000 + i) * 1_000_000))), "wb") as fh:
            fh.write(body)
    return root


async def test_the_whole_of_a_payload_of_megabytes_is_drawn_up_to_a_cap_and_s_offered(tmp_path: Any) -> None:
    big = b"".join(b"line %07d of a big text payload\n" % i for i in range(100_000))  # ~3.3 MB
    root = vsqs_root(tmp_path, [big])
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "q")
        await pilot.press("v")
        await settle(pilot)
        assert "(a: more, s: save it)" in screen_text(app)
        await pilot.press("a")  # up to 16 MiB was drawn on the event loop: minutes frozen
        await settle(pilot)
        text = screen_text(app)
        assert "showing 1.0 MiB of 3.3 MiB  (s: save the whole" in text, text
        body = app.screen.payload.body
        assert len(body) == 1 << 20 and big.startswith(body)


async def test_after_walking_with_n_the_list_acts_on_the_message_last_viewed(tmp_path: Any) -> None:
    root = vsqs_root(tmp_path, [b"first", b"second", b"third"])
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_queue(pilot, "q")
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        second = lst.messages.message(1).id
        await pilot.press("v", "n")
        await settle(pilot)
        assert "second" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert lst.cursor == 1
        await pilot.press("d")
        await settle(pilot)
        assert "Delete 1 message(s) from q?" in screen_text(app) and second in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        left = os.listdir(os.path.join(root, "q"))
        assert len(left) == 2 and second not in left


@pytest.mark.parametrize("size", [(60, 20), (40, 12)])
async def test_on_a_narrow_terminal_the_payload_gets_the_width(tmp_path: Any, size: tuple[int, int]) -> None:
    """Beside the 46-column metadata, the payload had 12 columns at 60 and none at 40."""
    text = "the payload of a message, long enough to need a whole line"
    root = vsqs_root(tmp_path, [text.encode()])
    app = make_app([root])
    async with app.run_test(size=size) as pilot:
        await open_queue(pilot, "q")
        await pilot.press("v")
        await settle(pilot)
        body = app.screen.query_one("#peek-body")
        assert body.size.width >= size[0] - 4 and body.size.height >= 2, body.size
        assert "the payload of a" in screen_text(app)
