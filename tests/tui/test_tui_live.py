"""The live console refreshes what changed: a queue screen lists its queue as columns (first
rows while the listing runs), the root screen stops counting under another screen and does not
count a queue whose directory has not changed."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from qconsole.backends import open_target as Root
from qconsole.backends.fs import root as fs_root
from qconsole.backends.fs import sorted_names as sn

pytest.importorskip("textual")

from qconsole.screens.app import QConsoleApp  # noqa: E402
from qconsole.screens.message_list import MessageList  # noqa: E402
from qconsole.screens.queue_screen import QueueScreen  # noqa: E402
from qconsole.screens.root_screen import RootScreen  # noqa: E402


def build(tmp: Any, n: int = 200) -> str:
    now = time.time()
    for q in ("big", "other"):
        os.makedirs(os.path.join(tmp, q))
    start = int((now - 600) * 1_000_000)
    for i in range(n):
        with open(os.path.join(tmp, "big", str(start + i * 1000)), "wb") as fh:
            fh.write(b'{"n": %d}' % i)
    for i in range(3):
        open(os.path.join(tmp, "big", f"{start - 5000 - i}.{int((now + 90) * 1_000_000)}"), "wb").close()
    return str(tmp)


class Counting:
    """A backend whose scan_queue and list_messages calls are counted by queue."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.scans: dict[str, int] = {}
        self.lists: dict[str, int] = {}
        real_scan, real_list = backend.scan_queue, backend.list_messages

        def scan_queue(name: str, *a: Any, **kw: Any) -> Any:
            self.scans[name] = self.scans.get(name, 0) + 1
            return real_scan(name, *a, **kw)

        def list_messages(name: str, *a: Any, **kw: Any) -> Any:
            self.lists[name] = self.lists.get(name, 0) + 1
            return real_list(name, *a, **kw)

        backend.scan_queue = scan_queue
        backend.list_messages = list_messages


async def until(cond: Any, timeout: float = 10.0) -> None:
    t = time.monotonic()
    while not cond():
        assert time.monotonic() - t < timeout, "timed out"
        await asyncio.sleep(0.01)


async def test_the_root_screen_stops_counting_under_a_queue_screen(tmp_path: Any) -> None:
    counting = Counting(Root(build(tmp_path)))
    app = QConsoleApp([counting.backend], interval=0.05, live_countdown=False, audit_log=os.devnull)
    async with app.run_test(size=(80, 24)) as pilot:
        rs = app.screen
        assert isinstance(rs, RootScreen)
        await until(lambda: counting.scans.get("other", 0) >= 2)  # it rescans while on top
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, QueueScreen) and app.screen.listing is not None)
        await app.workers.wait_for_complete()
        before = dict(counting.scans)
        await asyncio.sleep(0.5)  # ten periods
        assert counting.scans == before  # visible behind the queue screen is not on top
        await pilot.press("escape")
        await until(lambda: counting.scans.get("other", 0) > before.get("other", 0))


async def test_the_root_screen_counts_only_queues_that_changed(tmp_path: Any, monkeypatch: Any) -> None:
    root = build(tmp_path)
    monkeypatch.setattr(fs_root, "STAMP_SETTLE_S", 0.0)  # settled as soon as the times are past
    time.sleep(0.05)
    counting = Counting(Root(root))
    app = QConsoleApp([counting.backend], interval=0.05, live_countdown=False, audit_log=os.devnull)
    async with app.run_test(size=(80, 24)) as pilot:
        rs = app.screen
        assert isinstance(rs, RootScreen)
        await until(lambda: rs.last_batch is not None)
        first = dict(counting.scans)
        await asyncio.sleep(0.5)
        await app.workers.wait_for_complete()
        assert counting.scans == first  # nothing changed, no deadline passed: the counts hold
        with open(os.path.join(root, "other", str(int(time.time() * 1_000_000))), "wb") as fh:
            fh.write(b"x")
        await until(lambda: counting.scans.get("other", 0) > first.get("other", 0))
        await until(lambda: any(s.name == "other" and s.counts["ready"] == 1 for _i, s in rs.scans.values()))
        assert counting.scans["big"] == first["big"]
        await pilot.pause()


async def test_a_queue_screen_shows_the_first_rows_before_the_listing_ends(tmp_path: Any,
                                                                           monkeypatch: Any) -> None:
    monkeypatch.setattr(sn, "CHUNK", 16)
    monkeypatch.setattr(sn, "FIRST_CHUNK", 8)
    monkeypatch.setattr(sn, "PARTIAL_EVERY_S", 0.0)
    monkeypatch.setattr(sn, "YIELD_S", 0.0)
    loaded: list[tuple[int, bool]] = []
    real = QueueScreen.on_queue_screen_loaded

    def watched(self: QueueScreen, event: Any) -> None:
        if event.listing is not None:
            loaded.append((len(event.listing), event.listing.partial))
        real(self, event)

    monkeypatch.setattr(QueueScreen, "on_queue_screen_loaded", watched)
    app = QConsoleApp([Root(build(tmp_path))], interval=0, live_countdown=False, audit_log=os.devnull)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: isinstance(app.screen, RootScreen) and app.screen.last_batch is not None)
        await pilot.press("enter")
        qs = app.screen
        assert isinstance(qs, QueueScreen)
        await until(lambda: qs.listing is not None)
        await pilot.pause()
        assert loaded[0][1] and 0 < loaded[0][0] < 203  # first rows, from a listing under way
        assert loaded[-1] == (203, False)
        lst = qs.query_one(MessageList)
        assert len(lst.messages) == 203 and lst.messages.objects is None
        ready = [m.id for m in lst.messages if m.state == "ready"]
        assert ready == sorted(ready) and len(ready) == 200
        status = str(qs.query_one("#qstatus").render())
        assert "listing" not in status and "1/203" in status


async def test_a_rescan_keeps_the_cursor_on_its_message_as_the_head_is_consumed(tmp_path: Any) -> None:
    root = build(tmp_path)
    app = QConsoleApp([Root(root)], interval=0, live_countdown=False, audit_log=os.devnull)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: isinstance(app.screen, RootScreen) and app.screen.last_batch is not None)
        await pilot.press("enter")
        qs = app.screen
        assert isinstance(qs, QueueScreen)
        await until(lambda: qs.listing is not None)
        lst = qs.query_one(MessageList)
        for _ in range(5):
            await pilot.press("down")
        on = lst.current()
        assert on is not None and lst.cursor == 5
        qdir = os.path.join(root, "big")
        head = sorted(n for n in os.listdir(qdir) if n.isdigit())[:3]
        for n in head:  # a consumer takes three from the head
            os.rename(os.path.join(qdir, n), os.path.join(qdir, f"{n}.{int((time.time() + 60) * 1_000_000)}"))
        listings = qs.listings
        await pilot.press("g")
        await until(lambda: qs.listings > listings)
        await pilot.pause()
        assert lst.current() is not None and lst.current().id == on.id and lst.cursor == 2
        assert qs.scan is not None and qs.scan.counts["inflight"] == 6
