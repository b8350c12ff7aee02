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


# -- 3. a value as stored that the form would not accept blocked every other save ------------------

def pyrsmq_queue() -> tuple[Any, str]:
    """The test process's Redis server and a fresh namespace holding queue ``jobs`` as PyRSMQ
    makes it: its own default maxsize is 65565 (not rsmq's 65536), out of the range a save takes."""
    from redis_peer import missing, shared_server

    server = shared_server()
    try:
        from rsmq import RedisSMQ
    except ImportError:
        missing("PyRSMQ is not installed (the test extra pins PyRSMQ==0.6.1)")
    ns = "huntc" + os.urandom(5).hex()
    RedisSMQ(host="127.0.0.1", port=server.port, ns=ns).createQueue(qname="jobs", vt=8).execute()
    return server, ns


async def settings_form(app: Any, pilot: Any) -> Any:
    """The settings form of the highlighted queue, opened by s."""
    from qconsole.screens.settings_screen import SettingsScreen

    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)
    assert isinstance(app.screen, SettingsScreen)
    return app.screen


async def test_a_pyrsmq_queue_maxsize_as_stored_does_not_block_saving_vt() -> None:
    from textual.widgets import Input

    server, ns = pyrsmq_queue()
    app = make_app([server.url(ns)])
    async with app.run_test(size=(80, 24)) as pilot:
        form = await settings_form(app, pilot)
        assert form.query_one("#queue--maxsize", Input).value == "65565"
        box = form.query_one("#queue--vt", Input)
        form.set_focus(box)
        await pilot.press("ctrl+a", "ctrl+k", "6", "0")
        await settle(pilot)
        status = str(form.query_one("#serror").content)
        assert "ctrl+s saves: 1 to set" in status, status  # was "maxsize must be between ...": red
        assert "65565" in status  # the stored value is still said (as stored, kept as it is)
        shown = " ".join(screen_text(app).split())
        assert "not 65565; kept unless changed" in shown, shown  # wrapped at 80 columns, not cut
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "not saved" not in said(app), said(app)
    client = server.client()
    try:
        assert client.hget(f"{ns}:jobs:Q", "vt") == b"60"
        assert client.hget(f"{ns}:jobs:Q", "maxsize") == b"65565"  # untouched
    finally:
        client.close()


async def test_a_changed_field_out_of_range_is_still_refused() -> None:
    from textual.widgets import Input

    server, ns = pyrsmq_queue()
    app = make_app([server.url(ns)])
    async with app.run_test(size=(80, 24)) as pilot:
        form = await settings_form(app, pilot)
        box = form.query_one("#queue--maxsize", Input)
        form.set_focus(box)
        await pilot.press("ctrl+a", "ctrl+k", *"70000")
        await settle(pilot)
        assert "maxsize must be between" in str(form.query_one("#serror").content)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "not saved" in said(app)
    client = server.client()
    try:
        assert client.hget(f"{ns}:jobs:Q", "maxsize") == b"65565"
    finally:
        client.close()


# -- 4. a long queue name pushed the counts out of the queue screen's title -----------------------

@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_the_title_keeps_every_count_when_the_name_is_long(vsqs_root: tuple[str, Any],
                                                                  size: tuple[int, int]) -> None:
    root, manager = vsqs_root
    name = "order-events-dead-letter-production-eu-west"  # 43 characters, as real names go
    q = manager.get_queue(name)
    for _ in range(3):
        q.publish(b"x")
    app = make_app([root])
    async with app.run_test(size=size) as pilot:
        screen = await open_queue(pilot, name)
        title = screen_text(app).splitlines()[1]
        # the counts: were wrapped to a second line the one-row title hides ("… · vsqs ·" alone)
        assert title.rstrip().endswith("0"), title
        assert ("expired 0" in title or size[0] < 80 and "exp 0" in title) and "ready 3" in title, title
        assert "…" in title  # the name gave way (the root screen's note and the help name it whole)


# -- 5. end pressed while a big queue was still listing stopped short of the end ------------------

async def test_end_pressed_while_listing_is_at_the_end_when_the_listing_completes(
        vsqs_root: tuple[str, Any], monkeypatch: Any) -> None:
    import asyncio
    import threading
    import time

    from qconsole.backends.fs import sorted_names as sn
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.queue_screen import QueueScreen

    root, manager = vsqs_root
    queue = manager.get_queue("jobs")
    for i in range(10):
        queue.publish(f"job {i}".encode())
    qdir = os.path.join(root, "jobs")
    first = sorted(os.listdir(qdir), key=int)[:3]  # the rows so far: the queue's three oldest
    gate = threading.Event()
    real = sn.sorted_listing

    def held(path: str, take: Any, partial: Any = None) -> list[str]:
        def shown(_merged: list[str]) -> None:
            partial(list(first))
            gate.wait(20)  # the rest of the listing waits until the test has pressed end

        return real(path, take, shown if partial is not None else None)

    async def until(cond: Any) -> None:
        t = time.monotonic()
        while not cond():
            assert time.monotonic() - t < 10, "timed out"
            await asyncio.sleep(0.01)

    app = make_app([root])
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            monkeypatch.setattr(sn, "sorted_listing", held)
            monkeypatch.setattr(sn, "FIRST_CHUNK", 3)
            monkeypatch.setattr(sn, "FIRST_PAUSE_S", 0.0)
            await pilot.press("enter")
            qs = app.screen
            assert isinstance(qs, QueueScreen)
            lst = qs.query_one(MessageList)
            await until(lambda: len(lst.messages) > 0)
            await pilot.pause()
            assert qs.all_messages.partial
            await pilot.press("end")  # the operator wants the newest (and the held ones below them)
            gate.set()
            await until(lambda: qs.listing is not None)
            await settle(pilot)
            assert len(lst.messages) == 10
            assert lst.cursor == 9, lst.cursor  # was 2: on the third oldest, where the rows so far ended
            assert "10/10" in screen_text(app)
    finally:
        gate.set()


# -- 6. R on an RSMQ queue said "N done" and changed nothing --------------------------------------

async def test_r_on_rsmq_says_expired_messages_are_visible_already_not_n_done() -> None:
    import time

    from rsmq import RedisSMQ

    server, ns = pyrsmq_queue()  # (made with vt 8; each receive below gives its own vt)
    q = RedisSMQ(host="127.0.0.1", port=server.port, ns=ns, qname="jobs")
    for i in range(3):
        q.sendMessage(message=f"m{i}").execute()
    for _ in range(2):
        q.receiveMessage(vt=1).execute()  # a consumer that died holding them
    time.sleep(1.2)
    client = server.client()
    try:
        before = client.zrange(f"{ns}:jobs", 0, -1, withscores=True)
    finally:
        client.close()
    app = make_app([server.url(ns)], clock=time.time)  # (the states by the real time)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        assert "expired 2" in screen_text(app).splitlines()[1]
        await pilot.press("R")
        await settle(pilot)
        log = said(app)
        assert "2 done" not in log, log  # was "requeue jobs: 2 done" while they stayed expired 2
        assert "visible already" in log, log
    client = server.client()
    try:
        assert client.zrange(f"{ns}:jobs", 0, -1, withscores=True) == before
    finally:
        client.close()


# -- 7. `a` on a large payload held every key for seconds -----------------------------------------

async def test_a_on_a_large_payload_draws_only_the_lines_on_screen(vsqs_root: tuple[str, Any]) -> None:
    """`a` read 1 MiB into a Static: Rich wrapped and cropped all ~31,000 lines of it on the event
    loop (2-7 s at 80x24 on the shared machine, keys held). The lines go to a virtual list now:
    the same text, wrapped to the pane, only the rows on screen drawn."""
    import base64

    from textual.widgets import Log

    from qconsole.screens.peek_screen import PeekScreen

    root, manager = vsqs_root
    body = base64.b64encode(os.urandom(3 << 20))  # 4 MiB of text on one line, as a blob in JSON
    manager.get_queue("jobs").publish(body)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("v")
        await settle(pilot)
        peek = app.screen
        assert isinstance(peek, PeekScreen)
        assert "showing 64.0 KiB of 4.0 MiB" in " ".join(screen_text(app).split())
        await pilot.press("a")
        await settle(pilot)
        lines = peek.query_one("#peek-lines", Log)
        assert lines.display and not peek.query_one("#peek-body").display  # was: all of it in the Static
        width = lines.scrollable_content_region.width
        assert lines.line_count > 1000 and max(len(ln) for ln in lines.lines) <= width
        assert body[:1 << 20].decode() in "".join(lines.lines)  # the text whole, cut only by the wrap
        text = screen_text(app)
        assert "showing 1.0 MiB of 4.0 MiB" in text and body[:width].decode() in text, text
        assert peek.focused is lines  # pgdn, arrows scroll it
        await pilot.press("pagedown")
        await settle(pilot)
        assert lines.scroll_offset.y > 0
        await pilot.press("b")  # (no message that way: stays) then back to the list
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, PeekScreen)


# -- 8. p on a root with no queue (a fresh namespace, a filter that hides every row) did nothing ----

async def test_p_with_no_queue_listed_says_why_nothing_opens(tmp_path: Any) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "ddmq.yaml").write_text("")  # a ddmq root whose queues are still to be made
    app = make_app([str(root)])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "p Publish" in screen_text(app)  # offered in the footer
        await pilot.press("p")
        await settle(pilot)
        assert "no queue" in said(app), said(app)  # was: nothing at all
        assert "qconsole create" in said(app)


# -- 9. a search with marks outside its view: the status row lost the search's progress ------------

async def test_the_status_row_keeps_a_search_progress_beside_marks(vsqs_root: tuple[str, Any],
                                                                   monkeypatch: Any) -> None:
    from qconsole.screens.queue_screen import QueueScreen

    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    for i in range(5):
        q.publish(f"payload {i}".encode())
    monkeypatch.setattr(QueueScreen, "_filter_worker", lambda self, *a, **kw: None)  # a pass under way
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("space", "space", "space", "slash", *"payment-failed-eu", "enter")
        await settle(pilot)
        rows = screen_text(app).splitlines()
        status = rows[-2]  # above the footer
        # was "0/0 · 0 marked, 3 outside the view · search 'payment-failed-eu' 0 found, 0/5" and the
        # rest ("read · scanned …") wrapped onto a row the one-row status does not have
        assert "0/5 read" in status and "3 hidden" in status, "\n".join(rows[-4:])


# -- 10. D (listed in help) on a store with no redelivery count did nothing at all ---------------

async def test_d_on_vsqs_says_it_keeps_no_redelivery_count(vsqs_root: tuple[str, Any]) -> None:
    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"one")
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("D")
        await settle(pilot)
        assert "keeps no redelivery count" in said(app), said(app)  # was: nothing at all
        assert app.screen.view is None  # no dead-letter view opened


# -- 11. a root that could not be listed for a moment emptied the screen ----------------------------

async def test_a_root_unreachable_for_a_moment_keeps_its_rows_with_the_last_counts(
        vsqs_root: tuple[str, Any], monkeypatch: Any) -> None:
    """A Redis server restarting, an NFS mount hanging up: every row went ("0 queues" beside the
    error) and the rates and sparklines started again afterwards. The rows stay, the error line
    says their counts are the last read, and the next good pass updates them."""
    import time

    from qconsole.errors import RootError
    from qconsole.screens.root_screen import RootScreen

    root, manager = vsqs_root
    for name in ("alpha", "bravo"):
        manager.get_queue(name).publish(name.encode())
    app = make_app([root], clock=time.time)  # (messages of now: no clock-skew note beside the error)
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        backend = app.roots[0]
        listing = type(backend).queue_names

        def down(self: Any) -> Any:
            raise RootError(f"cannot read root {root}: Input/output error")

        monkeypatch.setattr(type(backend), "queue_names", down)
        screen.rescan()
        await settle(pilot)
        text = " ".join(screen_text(app).split())
        assert sorted(s.name for _i, s in screen.scans.values()) == ["alpha", "bravo"]  # was: none
        assert "Input/output error; its queues show the counts last read" in text, text
        monkeypatch.setattr(type(backend), "queue_names", listing)
        manager.get_queue("alpha").publish(b"more")
        screen.rescan()
        await settle(pilot)
        assert {s.name: s.counts["ready"] for _i, s in screen.scans.values()} == {"alpha": 2, "bravo": 1}
        assert "counts last read" not in screen_text(app)
