"""Tmux bug hunt B over RSMQ (Pilot, the real redis-server): expired messages numbered by their
delivery place (8), a member id with markup in the trash screen (9), and the save dialog's
default for a member id with escapes and path separators (10). Each failed before its fix."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import screen_text, settle  # noqa: E402

from .conftest import qconsole  # noqa: E402
from .test_tui_rsmq import four_states, make_app, open_queue  # noqa: E402


def plant(r: Any, ns: str, queue: str, member: str, body: bytes, back_ms: int = 300) -> None:
    """A member as a foreign client may have written it (ids are any bytes to Redis)."""
    now_ms = int(r.time()[0] * 1000)
    r.zadd(f"{ns}:{queue}", {member: now_ms - back_ms})
    r.hset(f"{ns}:{queue}:Q", member, body)


async def test_an_expired_rsmq_message_is_numbered_by_its_place(pyrsmq: Any, url: str) -> None:
    from qconsole.screens.message_list import MessageList

    ids = four_states(pyrsmq)  # expired (visible again) first by score, then ready1, ready2
    app = make_app([url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        qs = await open_queue(pilot, "jobs", 0)
        lst = qs.query_one(MessageList)
        assert [lst.messages[i].id for i in range(3)][0] == ids["expired"]
        text = screen_text(app)
        rows = {key: next(ln for ln in text.splitlines() if mid[:16] in ln).split() for key, mid in ids.items()}
        assert rows["expired"][:2] == ["1", "expired"], rows  # was `-`, and the numbers went 2, 3
        assert rows["ready1"][0] == "2" and rows["ready2"][0] == "3", rows
        assert rows["inflight"][0] == "-" and rows["delayed"][0] == "-", rows


async def test_a_member_id_with_markup_in_the_trash_does_not_kill_the_console(pyrsmq: Any, url: str, r: Any,
                                                                              ns: str) -> None:
    from qconsole.screens.trash_screen import TrashScreen

    pyrsmq.createQueue(qname="mk1").execute()
    plant(r, ns, "mk1", "x[/]y", b"closing tag id")
    done = qconsole("delete", "mk1", "x[/]y", "-r", url, "--yes")
    assert done.returncode == 0, done.stderr
    app = make_app([url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TrashScreen)  # MarkupError: the console died
        assert "x[/]y" in screen_text(app)


async def test_the_save_default_of_a_planted_member_is_a_plain_name(pyrsmq: Any, url: str, r: Any, ns: str) -> None:
    from qconsole.screens.dialogs import AskTextScreen
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.peek_screen import PeekScreen

    pyrsmq.createQueue(qname="jobs").execute()
    plant(r, ns, "jobs", "esc\x1b[2J\x1b]0;SAVEPWN\x07id", b"escid", 300)
    plant(r, ns, "jobs", "../../../../tmp/trav", b"traversal", 200)
    app = make_app([url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        qs = await open_queue(pilot, "jobs", 0)
        lst = qs.query_one(MessageList)
        defaults = []
        for row in range(2):
            lst.cursor = row
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, PeekScreen)
            await pilot.press("s")
            await settle(pilot)
            assert isinstance(app.screen, AskTextScreen)
            defaults.append(app.screen.query_one("#ask").value)
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        # were the raw id (ESC, OSC 0 to the terminal) and `../../../../tmp/trav.payload`
        assert defaults == ["esc__2J__0_SAVEPWN_id.payload", "________tmp_trav.payload"], defaults
