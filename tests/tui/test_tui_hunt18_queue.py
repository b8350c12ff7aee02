"""Tmux bug hunt B, the queue screen's findings (1, 2, 3, 6, 7, 9, 10, 13): one Pilot test
each, written to fail before its fix. Queues are made by the real clients (vsqs, ddmq) or by
hand where a test needs a planted state."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import Clock, make_app, open_queue, screen_text, settle  # noqa: E402

QCONSOLE = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "qconsole")


def said(app: Any) -> str:
    return "\n".join(e.text for e in app.log_entries)


async def until(cond: Any, timeout: float = 10.0) -> None:
    t = time.monotonic()
    while not cond():
        assert time.monotonic() - t < timeout, "timed out"
        await asyncio.sleep(0.01)


def line_with(text: str, needle: str) -> str:
    return next(ln for ln in text.splitlines() if needle in ln)


# -- 1. a listing under way is not presented as the queue, and row keys wait for it -------------

@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
async def test_a_listing_under_way_shows_no_positions_and_refuses_row_keys(
        layout: str, vsqs_root: tuple[str, Any], ddmq_root: tuple[str, Any], monkeypatch: Any) -> None:
    from qconsole.backends.fs import sorted_names as sn
    from qconsole.screens.dialogs import ConfirmScreen
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.queue_screen import QueueScreen

    if layout == "vsqs":
        root, manager = vsqs_root
        queue = manager.get_queue("jobs")
        for i in range(10):
            queue.publish(f"job {i}".encode())
    else:
        root, broker = ddmq_root
        for i in range(10):
            broker.publish("jobs", f"job {i}")
    gate = threading.Event()
    real = sn.sorted_listing

    def held(qdir: str, take: Any, partial: Any = None) -> list[str]:
        def shown(merged: list[str]) -> None:
            partial(merged)
            gate.wait(20)  # the rest of the listing waits until the test has looked

        return real(qdir, take, shown if partial is not None else None)

    app = make_app([root])
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            monkeypatch.setattr(sn, "sorted_listing", held)
            monkeypatch.setattr(sn, "FIRST_CHUNK", 3)
            monkeypatch.setattr(sn, "FIRST_PAUSE_S", 0.0)
            screen = app.screen
            table = screen.query_one("DataTable")
            table.move_cursor(row=table.get_row_index([k for k in screen.scans if k.endswith(":jobs")][0]))
            await pilot.press("enter")
            qs = app.screen
            assert isinstance(qs, QueueScreen)
            lst = qs.query_one(MessageList)
            await until(lambda: len(lst.messages) > 0)
            await pilot.pause()
            assert qs.all_messages.partial and len(lst.messages) < 10
            text = screen_text(app)
            assert "ready 10 " in line_with(text, "queue jobs"), text  # the root's counts, not "ready 3"
            assert f"listing… {len(lst.messages)} so far" in text, text
            rows = [ln for ln in text.splitlines() if " ready " in ln and "queue jobs" not in ln]
            assert rows and all(ln.split()[0] == "~" for ln in rows), text  # were numbered 1, 2, 3
            for key in ("d", "r", "m", "a"):
                await pilot.press(key)
                await pilot.pause()
                assert app.screen is qs and not lst.marked, key  # d asked to delete a provisional "#1"
            assert "still listing jobs" in said(app)
            gate.set()
            await until(lambda: qs.listing is not None)
            await settle(pilot)
            text = screen_text(app)
            assert "1/10" in text and "so far" not in text
            first = lst.messages.message(0)
            assert line_with(text, first.id[:12]).split()[0] == "1"
            await pilot.press("d")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)  # complete: the key works again
    finally:
        gate.set()


# -- 2. an unreadable queue says so: not "empty", not zeros --------------------------------------

async def test_an_unreadable_queue_says_it_cannot_be_read(vsqs_root: tuple[str, Any], monkeypatch: Any) -> None:
    from qconsole.backends.fs import sorted_names as sn
    from qconsole.screens.dialogs import TypedConfirmScreen

    root, manager = vsqs_root
    manager.get_queue("mail").publish(b"one")

    def denied(qdir: str, *_a: Any, **_k: Any) -> list[str]:  # as chmod 000 does (root ignores mode bits)
        raise PermissionError(13, "Permission denied", qdir)

    monkeypatch.setattr(sn, "sorted_listing", denied)
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "mail")
        text = screen_text(app)
        title = line_with(text, "queue mail")
        assert "ready ?" in title and "in-flight ?" in title and "ready 0" not in title, text
        assert "this queue is empty" not in text, text
        assert "cannot read mail: Permission denied" in text and "cannot be read" in text, text
        assert "0/0" not in text
        await pilot.press("P")
        await settle(pilot)
        assert isinstance(app.screen, TypedConfirmScreen)
        text = screen_text(app)
        assert "Purge all 0" not in text and "could not be counted" in text, text


# -- 3. no column overflows: long-expired countdowns in a compact form ----------------------------

async def test_a_message_expired_15_minutes_ago_stays_in_its_column(vsqs_root: tuple[str, Any]) -> None:
    root, manager = vsqs_root
    manager.get_queue("q")
    now = time.time()
    qdir = os.path.join(root, "q")
    for ago, expired, body in ((30, 0, "c"), (2000, 900, "a"), (1000, 300, "b")):
        mid = int((now - ago) * 1_000_000)
        name = str(mid) if not expired else f"{mid}.{int((now - expired) * 1_000_000)}"
        with open(os.path.join(qdir, name), "w") as fh:
            fh.write(body)
    app = make_app([root], clock=Clock(now))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "q")
        text = screen_text(app)
        header = line_with(text, " state ")
        col = header.index("payload")
        long_ago = line_with(text, "expired  " + str(int((now - 2000) * 1_000_000)))
        assert "-15m00s" in long_ago and "ago" not in long_ago, text  # was `15m00s ago`: 10 cells in 9
        assert "5m00s ago" in line_with(text, "expired  " + str(int((now - 1000) * 1_000_000)))
        rows = [ln for ln in text.splitlines() if " expired  1" in ln or " ready    1" in ln]
        assert len(rows) == 3, text
        for ln in rows:  # size and payload under their headings (were one cell right)
            assert ln[col - 3:col - 1] == "1B" and ln[col] in "abc", (ln, header)


def test_durations_are_fitted_to_their_column() -> None:
    from qconsole.screens.message_list import AGE_W, EXP_W, fit_duration

    year = 365 * 86400
    assert fit_duration(-19 * year - 2 * 86400, AGE_W) == "-19y"  # a planted RSMQ id's age: was 8 cells
    assert fit_duration(400 * 86400 + 3600, AGE_W) == "400d"
    assert fit_duration(90, AGE_W) == "1m30s"
    assert all(len(fit_duration(s, w)) <= w for s in (-1e14, 1e14, -3e9, 7e8, 5) for w in (AGE_W, EXP_W - 1))


# -- 6. q goes back, as on every screen but the root ---------------------------------------------

async def test_q_goes_back_from_the_queue_screen(vsqs_root: tuple[str, Any]) -> None:
    from qconsole.screens.root_screen import RootScreen

    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"x")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, RootScreen)  # nothing happened


# -- 7. "scanned" follows the rescans, also those that find the queue unchanged -----------------

async def test_the_scanned_time_moves_with_an_unchanged_rescan(vsqs_root: tuple[str, Any], monkeypatch: Any) -> None:
    from qconsole.backends.fs import root as fs_root
    from qconsole.output import humanize

    monkeypatch.setattr(fs_root, "STAMP_SETTLE_S", 0.0)  # settled at once: the unchanged path
    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"x")
    time.sleep(0.05)
    clock = Clock()
    app = make_app([root], clock=clock)
    async with app.run_test(size=(100, 30)) as pilot:
        qs = await open_queue(pilot, "jobs")
        assert f"scanned {humanize.clock(clock.now)[11:]}" in screen_text(app)
        listings = qs.listings
        clock.now += 75
        await pilot.press("g")
        await settle(pilot)
        assert qs.listings == listings  # the store said unchanged: the listing was kept
        assert f"scanned {humanize.clock(clock.now)[11:]}" in screen_text(app), screen_text(app)


# -- 9. the trash screen never takes a store's names as markup ------------------------------------

async def test_the_trash_screen_shows_markup_in_queue_names_as_text(tmp_path: Any) -> None:
    from qconsole.screens.trash_screen import TrashScreen

    root = str(tmp_path / "t")
    os.makedirs(root)
    for name in ("[reverse]rev", "[@click=app.quit]ck"):  # (RSMQ's `x[/]y`: tests/rsmq_redis)
        subprocess.run([QCONSOLE, "create", name, "-r", root, "--layout", "vsqs"], check=True, capture_output=True)
        subprocess.run([QCONSOLE, "publish", name, "one", "-r", root], check=True, capture_output=True)
        ids = [n for n in os.listdir(os.path.join(root, name)) if n.isdigit()]
        subprocess.run([QCONSOLE, "delete", name, *ids, "-r", root, "--yes"], check=True, capture_output=True)
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TrashScreen)
        text = screen_text(app)
        assert "[reverse]rev" in text and "[@clic…it]ck" in text, text  # were `rev` (reversed), `ck`


# -- 10. the save dialog's default is a plain name here, whatever the id ---------------------------

async def test_the_save_default_is_a_plain_file_name_without_controls(vsqs_root: tuple[str, Any]) -> None:
    from qconsole.model import Message
    from qconsole.screens.dialogs import AskTextScreen
    from qconsole.screens.peek_screen import PeekScreen

    root, manager = vsqs_root
    manager.get_queue("jobs")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        backend = app.roots[0]
        for ident in ("esc\x1b[2J\x1b]0;SAVEPWN\x07id", "../../../../tmp/trav", "..", "a\\b"):
            msg = Message("jobs", "vsqs", ident, "ready", ident)
            await app.push_screen(PeekScreen(backend, msg))
            await settle(pilot)
            await pilot.press("s")
            await settle(pilot)
            assert isinstance(app.screen, AskTextScreen)
            value = app.screen.query_one("#ask").value
            assert value.endswith(".payload") and value.isprintable() and value.isascii(), repr(value)
            assert "/" not in value and "\\" not in value and ".." not in value, value
            assert "\x1b" not in screen_text(app)
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)


# -- 13. a message replaced by a FIFO of its name leaves the list ------------------------------------

@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
async def test_a_message_replaced_by_a_fifo_leaves_the_list(layout: str, vsqs_root: tuple[str, Any],
                                                           ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.message_list import MessageList

    if layout == "vsqs":
        root, manager = vsqs_root
        queue = manager.get_queue("jobs")
        for i in range(3):
            queue.publish(f"job {i}".encode())
    else:
        root, broker = ddmq_root
        for i in range(3):
            broker.publish("jobs", f"job {i}")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        qs = await open_queue(pilot, "jobs")
        lst = qs.query_one(MessageList)
        assert len(lst.messages) == 3
        victim = lst.messages.message(1)
        path = os.path.join(root, "jobs", victim.relpath)
        os.unlink(path)
        os.mkfifo(path)
        listings = qs.listings
        await pilot.press("g")
        await settle(pilot)
        assert qs.listings > listings
        assert victim.id not in [m.id for m in lst.messages]  # was still listed, ready
        assert qs.scan is not None and qs.scan.counts["ready"] == 2, qs.scan.counts
        assert "named like a message but not a regular" in screen_text(app), screen_text(app)
