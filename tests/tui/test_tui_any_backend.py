"""The screens work for any backend: an in-memory store with a `delayed` state, receive counts,
its own publish option and no trash or settings (as RSMQ will be), driven with keys."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.backends.base import DELAYED, REDELIVERY_COUNT, Backend, Option  # noqa: E402
from qconsole.demo import FIXED_NOW  # noqa: E402
from qconsole.model import Message, QueueScan  # noqa: E402
from qconsole.payload import payload_from_bytes  # noqa: E402
from tui_helpers import Clock, open_queue, screen_text, settle  # noqa: E402


class MemoryBackend(Backend):
    kind = "memory"
    title = "Memory"
    capabilities = frozenset({DELAYED, REDELIVERY_COUNT})
    publish_options = (Option("delay", "int", "Seconds before the message becomes visible.", minimum=0),)
    target = "memory://test"

    def __init__(self) -> None:
        # queue -> id -> [state, payload, receive count, deadline]
        self.queues: dict[str, dict[str, list[Any]]] = {"jobs": {}, "dead": {}}
        for i in range(6):
            state = "ready" if i < 3 else ("inflight" if i == 3 else "delayed")
            self.queues["jobs"][f"m{i}"] = [state, f"job {i}".encode(), i, FIXED_NOW + 30 if i == 3 else None]

    def default_audit_log(self) -> str:
        return os.devnull

    def validate_queue_name(self, name: str) -> str:
        return name

    def queue_names(self) -> tuple[list[str], list[str]]:
        return sorted(self.queues), []

    def require_queue(self, name: str) -> None:
        if name not in self.queues:
            from qconsole.errors import UnknownQueueError

            raise UnknownQueueError(f"no queue {name!r}")

    def scan_queue(self, name: str, now: float | None = None, *, collect: bool = False,
                   check_types: bool = False) -> QueueScan:
        self.require_queue(name)
        counts = {"ready": 0, "inflight": 0, "expired": 0, "writing": 0, "foreign": 0, "delayed": 0}
        msgs = []
        for mid, (state, _p, _rc, deadline) in self.queues[name].items():
            counts[state] += 1
            msgs.append(Message(name, self.kind, mid, state, mid, created_at=FIXED_NOW - 60, deadline=deadline))
        return QueueScan(name, self.kind, now or FIXED_NOW, counts, oldest_ready_created=FIXED_NOW - 60,
                         messages=msgs if collect else None)

    def read_payload(self, msg: Message, cap: int | None) -> Any:
        _s, body, rc, _d = self.queues[msg.queue][msg.id]
        p = payload_from_bytes(body, len(body), cap)
        p.redeliveries = rc
        return p

    def publish(self, queue: str, payloads: Any, options: dict[str, Any]) -> list[str]:
        ids = []
        for p in payloads:
            mid = f"new{len(self.queues[queue])}"
            self.queues[queue][mid] = ["delayed" if options.get("delay") else "ready", bytes(p), 0, None]
            ids.append(mid)
        return ids

    def requeue(self, queue: str, msgs: Any) -> list[tuple[str, str | None]]:
        for m in msgs:
            self.queues[queue][m.id][0] = "ready"
        return [(m.id, None) for m in msgs]

    def remove(self, action: str, queue: str, msgs: Any, *, use_trash: bool, user: str) -> Any:
        for m in msgs:
            del self.queues[queue][m.id]
        return [(m.id, None) for m in msgs], None

    def move(self, src: str, dest: str, msgs: Any) -> list[tuple[str, str | None]]:
        for m in msgs:
            self.queues[dest][m.id] = self.queues[src].pop(m.id)
        return [(m.id, None) for m in msgs]


def make(read_only: bool = False) -> Any:
    from qconsole.screens.app import QConsoleApp

    return QConsoleApp([MemoryBackend()], interval=0, live_countdown=False, clock=Clock(), audit_log=os.devnull,
                       read_only=read_only, poison_threshold=4)


async def test_root_and_queue_screens_show_a_store_with_delayed_messages() -> None:
    app = make()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "Settings" not in footer  # no settings capability
        row = app.screen.query_one("DataTable").get_row("0:jobs")
        assert row[1].plain == "3" and row[4].plain == "2"  # ready; other states (delayed) in `wr`
        await open_queue(pilot, "jobs")
        await settle(pilot)
        text = screen_text(app)
        assert "delayed 2" in text and " delayed " in text  # the title and the rows
        assert "job 0" in text  # preview through read_payload
        await pilot.press("D")  # dead letters: receive count >= 4
        await settle(pilot)
        lst = app.screen.query_one("MessageList")
        assert [m.id for m in lst.messages] == ["m4", "m5"]
        await pilot.press("escape", "t", "u")  # no trash: neither key does anything
        await settle(pilot)
        assert app.screen.__class__.__name__ == "QueueScreen"


async def test_publish_form_is_built_from_the_declared_options_and_publishes() -> None:
    app = make()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("p")
        await pilot.pause()
        assert "delay" in screen_text(app) and "priority" not in screen_text(app)
        await pilot.press(*"hello", "tab", "tab", *"15")
        await pilot.press("ctrl+s")
        await settle(pilot)
    new = [v for k, v in backend.queues["jobs"].items() if k.startswith("new")]
    assert new == [["delayed", b"hello", 0, None]]


async def test_delete_without_a_trash_says_it_is_for_good_and_move_works() -> None:
    app = make()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("d")
        await pilot.pause()
        assert "gone for good" in screen_text(app)
        await pilot.press("y")
        await settle(pilot)
        assert "m0" not in backend.queues["jobs"]
        await pilot.press("m")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    assert "m1" in backend.queues["dead"]


async def test_redelivery_column_follows_a_delivery_after_the_first_read() -> None:
    app = make()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await settle(pilot)
        import re

        def rd(row: str) -> str:
            return re.search(r"\s(\d+)\s+\d+B\s", row)[1]  # the count before the size

        row = next(ln for ln in screen_text(app).splitlines() if " m0 " in ln)
        assert rd(row) == "0"
        backend.queues["jobs"]["m0"] = ["inflight", b"job 0", 1, FIXED_NOW + 50]  # a consumer took it
        await pilot.press("g")
        await settle(pilot)
        row = next(ln for ln in screen_text(app).splitlines() if " m0 " in ln)
        assert " inflight " in row and rd(row) == "1", row


# -- first-minute bugs found by a review in session 15 ----------------------------------------

async def test_purge_dialog_counts_what_a_purge_takes_delayed_ones_too() -> None:
    app = make()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("P")
        await pilot.pause()
        assert "Purge all 6 message(s) of jobs?" in screen_text(app)  # 3 ready, 1 in flight, 2 delayed
        await pilot.press(*"jobs", "enter")
        await settle(pilot)
    assert backend.queues["jobs"] == {}


class SlowPublish(MemoryBackend):
    """A publish that waits until the test lets it finish (an operator's 20k-message publish)."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.release = threading.Event()
        self.calls = 0

    def publish(self, queue: str, payloads: Any, options: dict[str, Any]) -> list[str]:
        self.calls += 1
        assert self.release.wait(10), "the test never released the publish"
        return super().publish(queue, payloads, options)


def make_slow() -> Any:
    from qconsole.screens.app import QConsoleApp

    return QConsoleApp([SlowPublish()], interval=0, live_countdown=False, clock=Clock(), audit_log=os.devnull)


async def start_publish(pilot: Any, text: str, *more_keys: str) -> None:
    """Open queue ``dead``, type ``text`` in a new publish form and send it (it waits)."""
    await open_queue(pilot, "dead")
    await pilot.press("p", *text, "ctrl+s", *more_keys)
    await pilot.pause()


async def test_a_second_ctrl_s_while_publishing_publishes_nothing_more() -> None:
    from qconsole.screens.publish_screen import PublishScreen
    from qconsole.screens.queue_screen import QueueScreen

    app = make_slow()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await start_publish(pilot, "twice", "ctrl+s")
        assert isinstance(app.screen, PublishScreen)
        backend.release.set()
        await settle(pilot)
        assert backend.calls == 1
        assert len(backend.queues["dead"]) == 1
        assert isinstance(app.screen, QueueScreen)  # the form closed itself, and only itself
        assert "dead" in screen_text(app)


async def test_escape_while_publishing_closes_the_form_and_the_end_pops_nothing() -> None:
    from qconsole.screens.queue_screen import QueueScreen
    from qconsole.screens.root_screen import RootScreen

    app = make_slow()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await start_publish(pilot, "later")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, QueueScreen)
        await pilot.press("escape")  # back on the root screen while the publish still runs
        await pilot.pause()
        assert isinstance(app.screen, RootScreen)
        backend.release.set()
        await settle(pilot)
        assert len(backend.queues["dead"]) == 1  # it went on
        assert isinstance(app.screen, RootScreen)  # and its end did not pop the root screen
        assert "jobs" in screen_text(app)


async def test_queue_title_counts_as_the_rows_show_when_states_interleave() -> None:
    """RSMQ lists its hidden members by score: in-flight and delayed rows interleave, and a
    member held for ever has no deadline. The title counts what the rows show."""
    from qconsole.screens.queue_screen import QueueScreen

    app = make()
    backend = app.roots[0]
    backend.queues["jobs"] = {
        "a": ["inflight", b"a", 1, FIXED_NOW + 10],
        "c": ["delayed", b"c", 0, FIXED_NOW + 20],
        "b": ["inflight", b"b", 1, FIXED_NOW + 600],
        "h": ["inflight", b"h", 1, None],  # held for ever (score +inf)
        "r": ["ready", b"r", 0, None],
    }
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_queue(pilot, "jobs")
        assert isinstance(screen, QueueScreen)
        assert "ready 1 · in-flight 3 · expired 0 · delayed 1" in screen_text(app)
        app.clock.now += 30
        screen.tick()
        await pilot.pause()
        assert "ready 2 · in-flight 2 · expired 1" in screen_text(app)
        assert "delayed 1" not in screen_text(app)


async def test_a_publish_ending_under_another_screen_closes_the_form_when_it_is_back() -> None:
    from qconsole.screens.help_screen import HelpScreen
    from qconsole.screens.queue_screen import QueueScreen

    app = make_slow()
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await start_publish(pilot, "x")
        app.action_help()  # the operator opens another screen over the form meanwhile
        await pilot.pause()
        backend.release.set()
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)  # not popped by the publish's end
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)  # the form closed itself once back on top
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert backend.calls == 1 and len(backend.queues["dead"]) == 1


class BrokenPublish(MemoryBackend):
    def publish(self, queue: str, payloads: Any, options: dict[str, Any]) -> list[str]:
        raise RuntimeError("a fault of ours")


async def test_a_publish_that_fails_unexpectedly_says_so_and_the_form_works_again() -> None:
    from qconsole.screens.app import QConsoleApp
    from qconsole.screens.publish_screen import PublishScreen

    app = QConsoleApp([BrokenPublish()], interval=0, live_countdown=False, clock=Clock(), audit_log=os.devnull)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_publish(pilot, "x")
        await settle(pilot)
        assert isinstance(app.screen, PublishScreen) and not app.screen.publishing
        errors = [e.text for e in app.log_entries if e.severity == "error"]
        assert errors and "RuntimeError: a fault of ours" in errors[-1]
        # not "publishing…" for ever; why, under the form (the toast vanishes)
        shown = " ".join(screen_text(app).split())
        assert "not published: internal error: RuntimeError: a fault of ours · ctrl+s tries again" in shown, shown


class TickingRemove(MemoryBackend):
    """A purge of 200 messages that reports progress as it goes, a little at a time."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.queues["jobs"] = {f"m{i}": ["ready", b"x", 0, None] for i in range(200)}
        self.finished = False
        self.go_on = threading.Event()  # the second half waits for the test

    def remove(self, action: str, queue: str, msgs: Any, *, use_trash: bool, user: str) -> Any:
        for i, m in enumerate(msgs):
            if i == len(msgs) // 2:
                assert self.go_on.wait(10)
            self.tick(i, len(msgs))
            del self.queues[queue][m.id]
        self.finished = True
        return [(m.id, None) for m in msgs], None


def purging_app(monkeypatch: pytest.MonkeyPatch, audit_log: str = os.devnull) -> tuple[Any, TickingRemove]:
    """The real app over a purge that reports progress at every message (and waits half way)."""
    from qconsole.screens import app as app_module
    from qconsole.screens.app import QConsoleApp

    monkeypatch.setattr(app_module, "PROGRESS_EVERY_S", 0.0)
    backend = TickingRemove()
    return QConsoleApp([backend], interval=0, live_countdown=False, clock=Clock(), audit_log=audit_log), backend


async def start_purge(app: Any, backend: TickingRemove, pilot: Any) -> bool:
    """The purge started and under way (it has reported progress)."""
    await settle(pilot)
    app.run_operation(backend, "purge", lambda ops: ops.purge("jobs"))
    for _ in range(200):
        await pilot.pause(0.01)
        if app.running:
            return True
    return False


def test_quitting_during_a_bulk_change_does_not_stop_it_part_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real app's run, quit with ctrl+q while a purge reports progress: asked first, then
    the console closes only when the purge has ended (it went blank while the change ran on,
    and a progress report once raised "App is not running" inside the change)."""
    import threading

    app, backend = purging_app(monkeypatch)
    asked: list[Any] = []

    async def operator(pilot: Any) -> None:
        asked.append(await start_purge(app, backend, pilot))
        await pilot.press("ctrl+q")
        await pilot.pause(0.2)  # (not settle: it waits for the workers, and the purge waits for us)
        asked.append(screen_text(app))
        await pilot.press("y")
        await pilot.pause(0.2)
        asked.append(app.sub_title)
        threading.Timer(0.5, backend.go_on.set).start()  # its second half, while the console waits

    app.run(headless=True, size=(80, 24), auto_pilot=operator)
    assert asked[0] is True
    assert "Quit? purge is still running" in asked[1] and asked[2].startswith("quitting when done")
    assert backend.finished and backend.queues["jobs"] == {}  # it had ended when the app returned


def test_the_quit_question_goes_when_the_change_ends_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """ctrl+q during a purge asks "Quit? purge is still running"; the operator does not answer
    and the purge ends: the question stayed up saying it was still running (tmux, a purge of
    60,000 RSMQ messages, the header back to the roots behind it). It is taken back and the
    console says the purge ended and that ctrl+q quits now; the console keeps running."""
    import threading

    from qconsole.screens.dialogs import ConfirmScreen

    app, backend = purging_app(monkeypatch)
    seen: list[Any] = []

    async def operator(pilot: Any) -> None:
        seen.append(await start_purge(app, backend, pilot))
        await pilot.press("ctrl+q")
        await pilot.pause(0.2)
        seen.append(isinstance(app.screen, ConfirmScreen) and "still running" in screen_text(app))
        backend.go_on.set()  # the purge's second half: it ends with the question open
        for _ in range(300):
            await pilot.pause(0.01)
            if not app.changing and not isinstance(app.screen, ConfirmScreen):
                break
        await pilot.pause(0.1)
        seen.append(screen_text(app))
        seen.append(type(app.screen).__name__)
        app.exit()

    app.run(headless=True, size=(80, 24), auto_pilot=operator)
    assert seen[0] is True and seen[1] is True
    assert backend.finished
    assert "still running" not in seen[2], seen[2]  # was: the question, still up after the end
    assert seen[3] != "ConfirmScreen"
    assert any("purge has ended: ctrl+q quits now" in e.text for e in app.log_entries)


def test_a_second_ctrl_q_while_quitting_stops_the_change_at_a_safe_point(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Any) -> None:
    """Waiting to quit, ctrl+q again offers to stop the change: it stops at its next progress
    tick (raised there as ctrl+c is in the CLI), is said and on the audit record as interrupted."""
    import json
    import threading

    log = str(tmp_path / "audit.log")
    app, backend = purging_app(monkeypatch, log)
    asked: list[Any] = []

    async def operator(pilot: Any) -> None:
        asked.append(await start_purge(app, backend, pilot))
        await pilot.press("ctrl+q", "y")
        await pilot.pause(0.2)
        await pilot.press("ctrl+q")
        await pilot.pause(0.2)
        asked.append(screen_text(app))
        await pilot.press("y")
        threading.Timer(0.2, backend.go_on.set).start()

    app.run(headless=True, size=(80, 24), auto_pilot=operator)
    assert asked[0] is True and "Stop purge at a safe point?" in asked[1]
    assert not backend.finished and backend.queues["jobs"]  # stopped part way, at a tick
    assert json.loads(open(log).read().splitlines()[-1])["outcome"] == "interrupted"
    assert any("stopped at a safe point" in e.text for e in app.log_entries)


async def test_an_operation_that_fails_unexpectedly_is_on_the_audit_record(tmp_path: Any) -> None:
    import json

    from qconsole.screens.app import QConsoleApp

    log = str(tmp_path / "audit.log")
    app = QConsoleApp([BrokenPublish()], interval=0, live_countdown=False, clock=Clock(), audit_log=log)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_publish(pilot, "x")
        await settle(pilot)
    lines = [json.loads(ln) for ln in open(log)]
    assert lines and lines[-1]["action"] == "publish" and lines[-1]["outcome"] == "error"
    assert "RuntimeError: a fault of ours" in lines[-1]["error"]
