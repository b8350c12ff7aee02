"""Bug hunt C: an operator's first minutes in tmux at 80x24, 120x40 and 200x50, on the demo and on
a mixed session (a VSQS root, a ddmq root and an RSMQ namespace, live clients beside). One test
per finding, written to fail before its fix."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


# -- 1. the demo's queue screen was listed every 12 s: the simulated clients' CPU was counted ----

class _FakeTime:
    """The time module, but process_time is the test's: the console's own CPU stays put while
    "the demo's clients" in the same process use a second of CPU per cycle."""

    def __init__(self, state: dict[str, float]) -> None:
        self.state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def process_time(self) -> float:
        return 10.0 + self.state["busy"]


async def test_the_demos_clients_cpu_does_not_space_the_queue_screens_rescans(vsqs_root: tuple[str, Any],
                                                                              monkeypatch: Any) -> None:
    """In `qconsole demo` a queue of ~50 messages was listed again every 12 s (RESCAN_MAX_S), not
    every 2: the rescans are spaced by the process's CPU over a cycle, and the demo's producers
    and consumers are threads of the same process (7-8 % of a core), so the console's share
    never looked under 4.5 %. The list lagged 12 s behind a live queue, consumed rows '(gone)'.
    The CPU the app is told is not its own (the demo's clients) is left out."""
    from qconsole.screens import app as app_module
    from qconsole.screens import queue_screen as qs
    from qconsole.screens.queue_screen import QueueScreen

    state = {"busy": 0.0}
    fake = _FakeTime(state)
    monkeypatch.setattr(qs, "time", fake)
    monkeypatch.setattr(app_module, "time", fake)
    delays: list[float] = []
    original = QueueScreen.set_timer

    def recording(self: Any, delay: float, callback: Any = None, **kw: Any) -> Any:
        if getattr(callback, "__name__", "") == "_auto_rescan":
            delays.append(delay)
        return original(self, delay, callback, **kw)

    monkeypatch.setattr(QueueScreen, "set_timer", recording)
    root, manager = vsqs_root
    for i in range(3):
        manager.get_queue("jobs").publish(f"m{i}".encode())
    app = make_app([root], interval=1.0, outside_cpu=lambda: state["busy"])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "jobs")
        for _ in range(2):
            state["busy"] += 1.0  # the demo's clients, one CPU second over this cycle
            screen.rescan()
            await settle(pilot)
        assert delays, "no rescan was scheduled"
        assert delays[-1] == pytest.approx(2.0), delays  # was 12.0: the clients' second counted as the console's


def test_the_simulation_says_how_much_cpu_its_clients_used(tmp_path: Any) -> None:
    from qconsole.demo import Simulation, make_vsqs_root

    vroot = make_vsqs_root(str(tmp_path / "vsqs"))
    sim = Simulation(vroot).start()
    try:
        time.sleep(1.5)
        used = sim.cpu_seconds()
    finally:
        sim.stop()
    assert sim.errors == []
    assert 0.0 < used <= time.process_time()


# -- 2. several roots at 200 columns: three rows named `jobs` and nothing to tell them apart -----

@pytest.mark.parametrize("size", [(200, 50), (120, 40), (80, 24)])
async def test_with_several_roots_a_wide_root_screen_says_each_rows_root(vsqs_root: tuple[str, Any],
                                                                         ddmq_root: tuple[str, Any],
                                                                         size: tuple[int, int]) -> None:
    """A VSQS and a ddmq root both holding `jobs` (a mixed session, tmux at 200x50): the two rows
    read `jobs` alike, the other 120 columns blank; only the line under the table named the
    highlighted one's root, so telling them apart took moving onto each. Where the terminal has
    room past 80 columns, a root column names each row's root; 80 columns stay as they were."""
    from qconsole.screens.root_screen import RootScreen

    vroot, manager = vsqs_root
    droot, broker = ddmq_root
    manager.get_queue("jobs").publish(b"v")
    for _ in range(3):
        broker.publish("jobs", "d")
    app = make_app([vroot, droot], clock=time.time)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        region = screen.query_one("DataTable").region
        lines = screen_text(app).splitlines()[region.y:region.y + region.height]
        rows = [line for line in lines if line.strip().lstrip("!").startswith("jobs ")]
        assert len(rows) == 2, "\n".join(lines)
        if size[0] >= 120:
            head = next(line for line in lines if line.strip().startswith("queue"))
            assert "root" in head.split(), head
            by_root = {("vsqs" in r.split()): r for r in rows}
            assert set(by_root) == {True, False}, rows  # was: both rows '  jobs   …' alike
            assert " 1 " in by_root[True] and " 3 " in by_root[False], rows
            assert "ddmq" in by_root[False].split(), rows
        else:  # 80 columns: the table as it was (no room)
            assert not any(w in ("vsqs", "ddmq") for r in rows for w in r.split()), rows
        # every row of the table stays within the terminal
        assert all(len(line.rstrip()) <= size[0] for line in lines)


# -- 3. `e` then `r` on an RSMQ queue said "N done" and changed nothing ------------------------------

@pytest.mark.parametrize("with_in_flight", [False, True])
async def test_r_on_marked_expired_rsmq_messages_does_not_claim_a_requeue(with_in_flight: bool) -> None:
    """R on RSMQ says expired messages are visible already (test_r_on_rsmq_says_...); but marking
    them (`e`, or the cursor on one) and pressing `r` ran rsmq's requeue, which leaves a message
    whose timeout passed where it is, and said "requeue events: 70 done" while the title still
    said "expired 70" (tmux, a Node consumer that never deletes). The expired ones are left out
    and said so; in-flight ones marked with them are still requeued (after the question)."""
    from rsmq import RedisSMQ

    from test_tui_hunt_first_minutes import pyrsmq_queue

    server, ns = pyrsmq_queue()
    q = RedisSMQ(host="127.0.0.1", port=server.port, ns=ns, qname="jobs")
    for i in range(4):
        q.sendMessage(message=f"m{i}").execute()
    for _ in range(2):
        q.receiveMessage(vt=1).execute()  # a consumer that died holding them
    if with_in_flight:
        q.receiveMessage(vt=300).execute()  # one still being worked on
    time.sleep(1.2)
    client = server.client()
    try:
        before = client.zrange(f"{ns}:jobs", 0, -1, withscores=True)
    finally:
        client.close()
    app = make_app([server.url(ns)], clock=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        assert "expired 2" in screen_text(app).splitlines()[1]
        await pilot.press("e")
        if with_in_flight:
            await pilot.press("f")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        if with_in_flight:
            assert "1 still in flight" in screen_text(app)
            await pilot.press("y")
            await settle(pilot)
        log = "\n".join(e.text for e in app.log_entries)
        assert "2 done" not in log and "3 done" not in log, log  # was "requeue jobs: 2 done"
        assert "visible already" in log, log
        if with_in_flight:
            assert "requeue jobs: 1 done" in log, log
    client = server.client()
    try:
        after = dict(client.zrange(f"{ns}:jobs", 0, -1, withscores=True))
    finally:
        client.close()
    was = [(m, score) for m, score in before if score < time.time() * 1000]  # (scores in ms)
    assert len(was) >= 2 and all(after.get(m) == score for m, score in was)  # untouched, in their place


# -- 4. r (the footer's "r Restore") on an empty trash did nothing at all ---------------------------

@pytest.mark.parametrize("key", ["r", "enter"])
async def test_restore_on_an_empty_trash_says_there_is_nothing_to_restore(vsqs_root: tuple[str, Any],
                                                                          key: str) -> None:
    from qconsole.screens.trash_screen import TrashScreen

    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"x")
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TrashScreen) and "the trash is empty" in screen_text(app)
        await pilot.press(key)
        await settle(pilot)
        log = "\n".join(e.text for e in app.log_entries)
        assert "nothing to restore: the trash is empty" in log, log  # was: nothing happened, nothing said


# -- 5. a pass that could not read the queue blanked the status row and kept the counts as live ----

async def test_a_failed_rescan_keeps_the_position_marks_and_says_the_rows_are_the_last_read(
        vsqs_root: tuple[str, Any], monkeypatch: Any) -> None:
    """The RSMQ server went down under an open queue (tmux, redis-cli shutdown): the error line
    said 'cannot connect', but the status row went blank (no position, no '2 marked', no scan
    time) while the rows and the title's counts stayed as if live. The status keeps its fields,
    the time of the last read among them, and a line says the rows are those read then."""
    from qconsole.errors import QConsoleError
    from qconsole.screens.queue_screen import QueueScreen

    root, manager = vsqs_root
    for i in range(3):
        manager.get_queue("jobs").publish(f"m{i}".encode())
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "jobs")
        assert isinstance(screen, QueueScreen)
        await pilot.press("space", "space")
        await settle(pilot)
        assert "2 marked" in screen_text(app)

        def down(*_a: Any, **_k: Any) -> Any:
            raise QConsoleError("redis://127.0.0.1:6398: cannot connect: Connection refused.")

        monkeypatch.setattr(screen.qroot, "list_messages", down)
        await pilot.press("g")
        await settle(pilot)
        text = screen_text(app)
        lines = text.splitlines()
        assert "cannot connect" in text
        status = lines[-2]
        assert "3/3" in status and "2 marked" in status and "scanned 12:00:00" in status, text  # was a blank row
        assert "the rows and counts shown are those read at 12:00:00" in text, text
        assert "ready 3" in lines[1]  # the counts last read, said to be so


# -- 6. a view's header stayed laid out for no rows over the matches that came in ------------------

async def test_a_views_header_follows_the_matches_it_shows(ddmq_root: tuple[str, Any]) -> None:
    """D on an RSMQ queue at 200x50 (tmux): the view showed its match under a header laid out for
    no rows (an id column of 16 cells over 32-character ids: 'age', 'expires', 'rd', 'size' all
    16 cells left of their values) until the next listing came. The header follows the rows."""
    from qconsole.screens.message_list import MessageList

    root, broker = ddmq_root
    for i in range(3):
        broker.publish("jobs", f"msg-{i}")
    app = make_app([root])
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await open_queue(pilot, "jobs")
        lst = screen.query_one(MessageList)
        await pilot.press("slash", *"zzz", "enter")  # a view with no match
        await settle(pilot)
        await pilot.press("g")  # a listing comes while it shows no row: the columns of no rows
        await settle(pilot)
        await pilot.press("slash", *"msg-1", "enter")  # another search, from the view: a match comes
        await settle(pilot)
        assert len(lst.messages) == 1
        header = str(screen.query_one("#qheader").render())
        assert header.rstrip() == lst.columns().header().rstrip(), (header, lst.columns().header())
        lines = screen_text(app).splitlines()
        head = next(line for line in lines if "expires" in line)
        row = next(line for line in lines if "msg-1" in line)
        assert row.index("msg-1") == head.index("payload"), (head, row)  # was 16 cells apart


# -- 7. a redelivery count of 150 read "1…" even at 200 columns ----------------------------------

@pytest.mark.parametrize("size", [(200, 50), (120, 40), (80, 24)])
async def test_a_three_digit_redelivery_count_shows_whole_where_there_is_room(ddmq_root: tuple[str, Any],
                                                                            size: tuple[int, int]) -> None:
    """The rd column was 2 cells wide at any width: an RSMQ message received 150 times (the very
    thing D, the dead-letter view, is for) read '1…', as 10-19 would. Where the preview keeps
    24 cells beside it the column takes 4 (up to 9999); at 80 columns it stays as it was."""
    from qconsole.screens.message_list import HEADER

    root, broker = ddmq_root
    broker.publish("jobs", "poison", requeue_counter=150)
    app = make_app([root])
    async with app.run_test(size=size) as pilot:
        await open_queue(pilot, "jobs")
        await settle(pilot)
        lines = screen_text(app).splitlines()
        row = next((line for line in lines if " 1 ready " in line), None)
        assert row is not None, "\n".join(lines)
        if size[0] >= 120:
            assert " 150 " in row and "1…" not in row, row
        else:
            assert "1…" in row  # no room: as before (the peek shows the count whole)
            assert HEADER.split()[:6] == next(line for line in lines if "expires" in line).split()[:6]


# -- 8. ? on the queue screen opened on the root screen's keys ------------------------------------

async def test_help_opens_on_the_keys_of_the_screen_it_was_asked_on(vsqs_root: tuple[str, Any]) -> None:
    """`?` on a queue (tmux, 80x24): the box showed the root screen's keys and the queue screen's
    began at its 15th row, r/d/m/P and the rest below the fold. The current screen's keys come
    first; the others follow in the usual order, every key still listed."""
    from qconsole.screens.help_screen import HelpScreen

    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"x")
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert [t for t, _c in app.screen.sections][0] == "Root screen"  # (from the root: as it was)
        await pilot.press("escape")
        await open_queue(pilot, "jobs")
        await pilot.press("question_mark")
        await settle(pilot)
        titles = [t for t, _c in app.screen.sections]
        assert titles[0] == "Queue screen", titles  # was "Root screen"
        assert sorted(titles) == sorted(t for t, _c in app.help_sections())
        text = screen_text(app)
        assert "Purge" in text and "Requeue every expired" in text, text
