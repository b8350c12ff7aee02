"""Pilot tests of the console: press keys, then check the screen AND the files on disk."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
from rich.console import Console

from qconsole.demo import FIXED_NOW, build_fixture
from qconsole.backends import open_target as Root
from ops_inventory import tree

pytest.importorskip("textual")

from qconsole.screens.app import QConsoleApp  # noqa: E402
from qconsole.screens.dialogs import ConfirmScreen, TypedConfirmScreen  # noqa: E402
from qconsole.screens.message_list import MessageList  # noqa: E402
from qconsole.screens.peek_screen import PeekScreen  # noqa: E402
from qconsole.screens.queue_screen import QueueScreen  # noqa: E402
from tui_helpers import refuse_reading  # noqa: E402
from qconsole.screens.root_screen import RootScreen  # noqa: E402


class Clock:
    def __init__(self, now: float = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def roots(tmp_path: Any) -> tuple[str, str]:
    return build_fixture(str(tmp_path))


def make_app(paths: list[str], clock: Clock | None = None, **kw: Any) -> QConsoleApp:
    kw.setdefault("interval", 0)
    kw.setdefault("live_countdown", False)
    return QConsoleApp([Root(p) for p in paths], clock=clock or Clock(), audit_log=os.devnull, **kw)


async def settle(pilot: Any) -> None:
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if all(getattr(s, "last_batch", True) is not None for s in pilot.app.screen_stack) and not pilot.app.workers:
            break


async def open_queue(pilot: Any, name: str) -> QueueScreen:
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RootScreen)
    table = screen.query_one("DataTable")
    table.move_cursor(row=table.get_row_index([k for k in screen.scans if k.endswith(":" + name)][0]))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, QueueScreen)
    return pilot.app.screen


async def open_settings(pilot: Any, queue: str) -> None:
    """The settings screen of ``queue``, from its queue screen (``s``)."""
    await open_queue(pilot, queue)
    await pilot.press("s")
    await settle(pilot)


def rendered(renderable: Any, width: int = 200) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


async def test_root_screen_rows_sorted_cursor_first_and_filter(roots: tuple[str, str]) -> None:
    app = make_app(list(roots))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        table = screen.query_one("DataTable")
        names = [screen.scans[str(k.value)][1].name for k in table.ordered_rows_keys()] if hasattr(table, "ordered_rows_keys") else [
            screen.scans[str(r.key.value)][1].name for r in table.ordered_rows]
        assert names == sorted(names) and names[0] == "emails"
        assert table.cursor_row == 0
        row = table.get_row(table.ordered_rows[0].key)
        assert row[1].plain == "8" and row[2].plain == "2" and row[3].plain == "1"  # ready, inflight, expired
        # rescan in place: the cursor stays on its queue
        table.move_cursor(row=2)
        screen.rescan()
        await settle(pilot)
        assert table.cursor_row == 2
        await pilot.press("slash", "o", "r", "d")
        await pilot.pause()
        assert [screen.scans[str(r.key.value)][1].name for r in table.ordered_rows] == ["orders"]
        await pilot.press("escape")
        await pilot.pause()
        assert table.row_count == 6


async def test_unreadable_queue_shows_error_in_its_row(roots: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, vroot = roots
    refuse_reading(monkeypatch, "ingest")  # what a chmod 000 directory does (tests may run as root)
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        row = table.get_row("0:ingest")
        assert row[0].plain == "!ingest"  # marked; the error itself is in the notes line, whole
        assert row[1].plain == "?"
        assert table.get_row("0:orders")[1].plain == "12"
        table.move_cursor(row=table.get_row_index("0:ingest"))
        await pilot.pause()
        notes = rendered(app.screen.query_one("#rnotes").render())
        assert "ingest (vsqs): " in notes and "permission denied" in notes.lower()


async def test_peek_changes_nothing_and_shows_payload(roots: tuple[str, str]) -> None:
    droot, _ = roots
    before = tree(droot)
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "emails")
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, PeekScreen)
        body = rendered(app.screen.query_one("#body").content)
        assert '"template": "welcome"' in body
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, QueueScreen)
    assert tree(droot) == before


async def test_markup_and_escape_payloads_do_nothing(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "emails")
        lst = screen.query_one(MessageList)
        seen = {}
        for i, msg in enumerate(lst.messages):
            if msg.state != "ready":
                continue
            lst.cursor = i
            await pilot.press("v")
            await settle(pilot)
            text = rendered(app.screen.query_one("#body").content)
            seen[msg.id] = text
            if "[@click" in text:
                await pilot.click("#body", offset=(3, 0))  # on the would-be link
                await pilot.click("#body", offset=(8, 0))
                await pilot.pause()
                assert app.is_running and isinstance(app.screen, PeekScreen)
            await pilot.press("escape")
            await pilot.pause()
        joined = "\n".join(seen.values())
        assert "[@click=app.quit] plain text with markup" in joined  # shown literally
        assert "\\e]52;c;aGk=\\x07" in joined  # the OSC 52 sequence made visible
        assert "\x1b" not in joined and "\x07" not in joined
        assert app.is_running


async def test_requeue_moves_the_file(roots: tuple[str, str]) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    held = sorted(n for n in os.listdir(qdir) if "." in n)
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        lst = screen.query_one(MessageList)
        await pilot.press("end")  # the expired one (held messages come last)
        target = lst.current()
        assert target is not None and target.state == "expired"
        await pilot.press("r")
        await settle(pilot)
        assert os.path.exists(os.path.join(qdir, target.id))
        assert not os.path.exists(os.path.join(qdir, target.relpath))
        assert lst.current() is not None
    assert len([n for n in os.listdir(qdir) if "." in n]) == len(held) - 1


async def test_purge_asks_first(roots: tuple[str, str]) -> None:
    droot, _ = roots
    qdir = os.path.join(droot, "reports")
    before = sorted(os.listdir(qdir))
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "reports")
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, TypedConfirmScreen)
        assert sorted(os.listdir(qdir)) == before  # nothing yet
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert sorted(os.listdir(qdir)) == before
        await pilot.press("P")
        await pilot.pause()
        await pilot.press(*"reports", "enter")
        await settle(pilot)
        assert [n for n in os.listdir(qdir) if ".ddmq" in n] == []
        assert app.screen.query_one(MessageList).messages == []


async def test_delete_asks_then_removes_marked(roots: tuple[str, str]) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        first, second = screen.query_one(MessageList).messages[:2]
        await pilot.press("space", "space", "d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert not os.path.exists(os.path.join(qdir, first.id))
        assert not os.path.exists(os.path.join(qdir, second.id))
        assert len([n for n in os.listdir(qdir) if not n.startswith(".")]) == 13


async def test_read_only_refuses_every_change(roots: tuple[str, str]) -> None:
    droot, vroot = roots
    before = (tree(droot), tree(vroot))
    app = make_app([droot, vroot], read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        assert "READ-ONLY" in app.title
        await open_queue(pilot, "orders")
        await pilot.press("end", "r", "space", "d", "P", "m", "p")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)  # no confirm dialog, no form
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert (tree(droot), tree(vroot)) == before


async def test_countdown_ticks_from_the_clock_without_rescanning(roots: tuple[str, str]) -> None:
    droot, _ = roots
    clock = Clock()
    app = make_app([droot], clock=clock, live_countdown=True)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "emails")
        lst = screen.query_one(MessageList)
        idx = next(i for i, m in enumerate(lst.messages) if m.state == "inflight" and m.deadline - clock.now > 20)
        scan_before = screen.scan

        def line() -> str:
            return "".join(seg.text for seg in lst.render_line(idx - round(lst.scroll_offset.y)))

        def style_of(word: str) -> Any:
            for seg in lst.render_line(idx - round(lst.scroll_offset.y)):
                if word in seg.text:
                    return seg.style
            raise AssertionError(word)

        assert "  25s" in line()
        clock.now += 17
        await pilot.pause(1.2)  # the screen's own 1 s tick redraws
        assert "   8s" in line()
        assert style_of("8s").color.name == "red"
        clock.now += 10
        await pilot.pause(1.2)
        assert "2s ago" in line() and "expired" in line()
        assert screen.scan is scan_before  # no rescan happened


async def test_publish_form_publishes(roots: tuple[str, str]) -> None:
    droot, _ = roots
    qdir = os.path.join(droot, "reports")
    n_before = len([n for n in os.listdir(qdir) if ".ddmq" in n])
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "reports")
        await pilot.press("p")
        await pilot.pause()
        app.screen.query_one("#count").value = "3"
        app.screen.query_one("#priority").value = "2"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    names = [n for n in os.listdir(qdir) if ".ddmq" in n]
    assert len(names) == n_before + 3
    assert sum(1 for n in names if n.startswith("2.")) == 3


async def test_settings_validate_as_you_type_and_save(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_settings(pilot, "emails")
        box = app.screen.query_one("#queue--message_timeout")
        box.value = "soon"
        await pilot.pause()
        assert box.has_class("invalid")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not os.path.exists(os.path.join(droot, "emails", "ddmq.yaml")) or "soon" not in open(
            os.path.join(droot, "emails", "ddmq.yaml")).read()
        box.value = "45"
        await pilot.pause()
        assert not box.has_class("invalid")
        assert "45 (queue)" in str(app.screen.query_one("#eff--message_timeout").content)
        await pilot.press("ctrl+s")
        await settle(pilot)
    import yaml

    with open(os.path.join(droot, "emails", "ddmq.yaml")) as fh:
        assert yaml.safe_load(fh)["message_timeout"] == 45


async def test_settings_clearing_a_queue_field_removes_the_key(roots: tuple[str, str]) -> None:
    import yaml

    droot, _ = roots
    qconf = os.path.join(droot, "reports", "ddmq.yaml")
    with open(qconf, "w") as fh:
        fh.write("priority: 5\nrequeue_prio: 2\ncustom_key: keep me\n")
    root_before = open(os.path.join(droot, "ddmq.yaml"), "rb").read()
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_settings(pilot, "reports")
        status = app.screen.query_one("#serror")
        assert "unknown keys are kept" in str(status.content)  # nothing pending yet
        # an empty field that stays empty changes nothing; clearing one that had a value removes it
        assert app.screen.query_one("#root--priority").value == ""
        box = app.screen.query_one("#queue--priority")
        assert box.value == "5"
        box.value = ""
        await pilot.pause()
        assert "0 to set, 1 to remove (queue: priority)" in str(status.content)
        assert "999 (default)" in str(app.screen.query_one("#eff--priority").content)  # the fallback
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "unknown keys are kept" in str(status.content)  # reloaded: nothing pending any more
        assert app.screen.query_one("#queue--priority").value == ""
    with open(qconf) as fh:
        assert yaml.safe_load(fh) == {"requeue_prio": 2, "custom_key": "keep me"}
    assert open(os.path.join(droot, "ddmq.yaml"), "rb").read() == root_before  # the other file untouched


async def test_help_lists_every_key_and_q_quits(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = rendered(app.screen.query("Static").last().content)
        for word in ("Requeue", "Purge", "Peek", "Filter", "Publish", "Settings", "Move"):
            assert word in text
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


async def test_status_and_header_fields_are_separated_and_fit_80_columns(roots: tuple[str, str]) -> None:
    from qconsole.screens.message_list import HEADER
    from qconsole.screens.shots import portable_svg

    app = make_app(list(roots))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = app.screen.query_one("#status").render()
        assert rendered(status).startswith("scanned ") and " ms · 6 queues · 2 roots" in rendered(status)
        screen = await open_queue(pilot, "emails")
        await pilot.press("down", "space")
        title = rendered(screen.query_one("#qtitle").render())
        assert title.startswith("queue emails · ddmq · root ddmq · ready 8 · in-flight 2 · expired 1")  # 2 roots
        status_line = rendered(screen.query_one("#qstatus").render())
        assert status_line.startswith("3/11 · 1 marked · scanned ")
        # the ddmq mixed-priority warning is whole, on its own wrapping line
        notes = screen.query_one("#qnotes")
        assert "priority 10 is taken before 9" in rendered(notes.render())
        assert notes.region.height >= 2 and notes.region.width <= 80
        # header columns line up with a row's columns; a state word never touches the id
        lst = screen.query_one(MessageList)
        inflight = next(i for i, m in enumerate(lst.messages) if m.state == "inflight")
        lst.cursor = inflight
        await pilot.pause()
        row = lst.render_line(inflight - round(lst.scroll_offset.y)).text
        assert "inflight " in row and len(row.rstrip()) <= 80
        assert row.index("inflight") == HEADER.index("state")
        assert row.index(lst.messages[inflight].id) == HEADER.index("id")
        svg = portable_svg(app.export_screenshot())
        assert ">&#160;" not in svg  # no text run starts with spaces (some renderers drop them)


async def test_first_scan_takes_the_forked_count_of_big_queues(roots: tuple[str, str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`qconsole ROOT` forks a one-shot count before the app starts; the root screen's first
    scan shows it for big queues without counting them itself, and the rows are the same."""
    import qconsole.screens.root_screen as root_screen

    async def rows(app: QConsoleApp) -> list[tuple[str, ...]]:
        async with app.run_test(size=(100, 24)) as pilot:
            await settle(pilot)
            table = app.screen.query_one("DataTable")
            return [tuple(c.plain if hasattr(c, "plain") else str(c) for c in table.get_row(r.key))
                    for r in table.ordered_rows]

    want = await rows(make_app(list(roots)))
    monkeypatch.setattr(root_screen, "ID_RATE_LIMIT", 0)  # every queue holding a message is "big"
    # (earlier apps of this process left idle threads, which `qconsole ROOT` has none of)
    monkeypatch.setattr("qconsole.backends.fs.first_count._single_threaded", lambda: True)
    monkeypatch.setattr("qconsole.backends.fs.first_count.BIG_BYTES", 0)
    handles = [Root(p) for p in roots]
    first = [h.start_first_count(now=FIXED_NOW) for h in handles]
    assert all(f is not None for f in first)
    counted_here: list[str] = []
    for h in handles:
        real = h.scan_queue
        monkeypatch.setattr(h, "scan_queue", lambda name, *a, _real=real, **k: counted_here.append(name) or _real(name, *a, **k))
    app = QConsoleApp(handles, clock=Clock(), audit_log=os.devnull, interval=0, live_countdown=False, first_counts=first)
    got = await rows(app)
    assert got == want
    assert app.first_counts == [None, None]  # taken once
    assert "emails" not in counted_here and "orders" not in counted_here  # big: the forked count's


async def test_rates_start_from_when_the_forked_count_was_taken(roots: tuple[str, str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The forked count is older than the screen's first pass: its rows enter the rate history at
    their own time, or the first rate would divide by too short a time."""
    import qconsole.screens.root_screen as root_screen

    monkeypatch.setattr("qconsole.backends.fs.first_count._single_threaded", lambda: True)
    monkeypatch.setattr("qconsole.backends.fs.first_count.BIG_BYTES", 0)
    monkeypatch.setattr(root_screen, "ID_RATE_LIMIT", 0)
    handles = [Root(p) for p in roots]
    first = [h.start_first_count(now=FIXED_NOW - 5) for h in handles]
    app = QConsoleApp(handles, clock=Clock(), audit_log=os.devnull, interval=0, live_countdown=False, first_counts=first)
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        taken = {k: h.last_at for k, h in screen.history.items()}
        big = [k for k, (_i, s) in screen.scans.items() if s.total > 0]
        assert big and all(taken[k] == FIXED_NOW - 5 for k in big)


async def test_settings_saving_the_root_and_the_queue_says_both(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_settings(pilot, "emails")
        app.screen.query_one("#root--message_timeout").value = "50"
        app.screen.query_one("#queue--message_timeout").value = "45"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(pilot)
        said = [e.text for e in app.log_entries if e.severity == "information"]
        assert said and "config: 1 done" in said[-1] and "config emails: 1 done" in said[-1], said


async def test_leaving_settings_with_unsaved_edits_asks_first(roots: tuple[str, str]) -> None:
    from tui_helpers import screen_text

    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_settings(pilot, "emails")
        form = app.screen
        form.query_one("#queue--message_timeout").value = "45"
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        assert "Leave without saving? 1 field(s) changed" in screen_text(app)
        await pilot.press("n")  # back to the form, the edit still there
        await settle(pilot)
        assert app.screen is form and form.query_one("#queue--message_timeout").value == "45"
        await pilot.press("escape", "y")
        await settle(pilot)
        assert app.screen is not form
        await pilot.press("s", "escape")  # nothing edited: escape leaves at once
        await settle(pilot)
        assert "Leave without saving" not in screen_text(app) and type(app.screen).__name__ == "QueueScreen"


async def test_a_settings_value_qconsole_could_not_read_back_is_refused_before_saving(roots: tuple[str, str]) -> None:
    droot, _ = roots
    qconf = os.path.join(droot, "emails", "ddmq.yaml")
    before = open(qconf, "rb").read() if os.path.exists(qconf) else None
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_settings(pilot, "emails")
        box = app.screen.query_one("#queue--priority")
        box.value = "9" * 300
        await pilot.pause()
        assert box.has_class("invalid")
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert (open(qconf, "rb").read() if os.path.exists(qconf) else None) == before
