"""Issue 12's "bugs to fix": one Pilot (or CLI) test each, written to fail before its fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.demo import FIXED_NOW, build_fixture  # noqa: E402
from tui_helpers import refuse_reading, make_app, open_queue, screen_ansi, screen_text, settle, sgr_of  # noqa: E402


@pytest.fixture
def roots(tmp_path: Any) -> tuple[str, str]:
    return build_fixture(str(tmp_path))


def vsqs_queue(root: str, name: str, ready: int, held: int = 0, now: float = FIXED_NOW) -> list[str]:
    """A VSQS queue of ``ready`` ready and ``held`` in-flight messages; returns the file names."""
    qdir = os.path.join(root, name)
    os.makedirs(qdir, exist_ok=True)
    names = []
    for i in range(ready + held):
        mid = int((now - 5000 + i) * 1_000_000)
        fname = f"{mid}.{int((now + 100 + i) * 1_000_000)}" if i >= ready else str(mid)
        with open(os.path.join(qdir, fname), "w") as fh:
            fh.write(f"message {i}")
        names.append(fname)
    return names


# -- 1. peek shows every kind of payload ----------------------------------------------------

@pytest.mark.parametrize("queue,state,expect", [
    ("orders", "inflight", "order held"),  # plain text
    ("ingest", "ready", "00000024  fc"),  # the last row of a hex dump (4 bytes a row in the pane at 80x24)
])
async def test_peek_shows_plain_text_and_hex_payloads(roots: tuple[str, str], queue: str, state: str,
                                                      expect: str) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, queue)
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        lst.cursor = next(i for i, m in enumerate(lst.messages) if m.state == state)
        await pilot.press("v")
        await settle(pilot)
        assert expect in screen_text(app)


async def test_peek_shows_last_line_of_multiline_text_and_the_ddmq_warning(tmp_path: Any) -> None:
    droot, _ = build_fixture(str(tmp_path))
    qdir = os.path.join(droot, "reports")
    name = sorted(n for n in os.listdir(qdir) if ".ddmq" in n)[0]
    with open(os.path.join(qdir, name), "w") as fh:
        fh.write('{"message": "first line\\nsecond line\\nLAST LINE", "priority": 5')  # cut short
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "reports")
        await pilot.press("v")
        await settle(pilot)
        text = screen_text(app)
        assert "not a complete ddmq" in text
        assert "LAST LINE" in text


# -- 2. the last rows of a long queue can be seen -------------------------------------------

async def test_end_shows_the_last_rows_without_a_scrollbar_over_them(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    names = vsqs_queue(root, "long", 45, 5)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "long")
        await pilot.press("end")
        await pilot.pause()
        text = screen_text(app)
        assert "50/50" in text
        last_id = names[-1].split(".")[0]
        rows = [ln for ln in text.splitlines() if " inflight " in ln]
        assert rows and last_id in rows[-1], text
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        assert lst.scrollbars_enabled[1] is False  # no horizontal scrollbar line


# -- 3. root screen keys and width ----------------------------------------------------------

async def test_root_keys_j_k_home_end_move_the_cursor(roots: tuple[str, str]) -> None:
    app = make_app(list(roots))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("end")
        assert table.cursor_row == table.row_count - 1
        assert table.scroll_x == 0
        await pilot.press("home")
        assert table.cursor_row == 0


async def test_root_table_fits_80_columns_when_next_needs_six_characters(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    qdir = os.path.join(root, "slowconsumers")
    os.makedirs(qdir)
    mid = int((FIXED_NOW - 60) * 1_000_000)
    open(os.path.join(qdir, f"{mid}.{int((FIXED_NOW + 3599) * 1_000_000)}"), "w").close()  # next: 59m59s
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        assert table.virtual_size.width <= 80
        assert "59m59s" in screen_text(app)
        assert table.max_scroll_x == 0


# -- 4. the cursor stays on its message -----------------------------------------------------

async def test_cursor_stays_on_the_same_message_when_the_head_is_consumed(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    names = vsqs_queue(root, "work", 10)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "work")
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        await pilot.press("down", "down", "down", "down")
        target = lst.current()
        assert target is not None and target.id == names[4]
        for n in names[:2]:  # a consumer takes the head
            os.rename(os.path.join(root, "work", n), os.path.join(root, "work", f"{n}.{int((FIXED_NOW + 60) * 1e6)}"))
        await pilot.press("g")
        await settle(pilot)
        assert lst.current() is not None and lst.current().id == target.id
        # the message itself goes: the cursor stays at its position and the screen says so
        pos = lst.cursor
        os.unlink(os.path.join(root, "work", target.id))
        await pilot.press("g")
        await settle(pilot)
        assert lst.cursor == pos
        assert "gone" in screen_text(app)


async def test_peek_right_after_a_move_peeks_the_highlighted_message(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        await pilot.press("down", "down", "v")
        await settle(pilot)
        assert app.screen.msg.id == lst.messages[2].id
        assert lst.messages[2].id in screen_text(app)


async def test_peek_right_after_a_move_action_peeks_what_is_highlighted_not_the_moved_message(
        roots: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    _, vroot = roots
    app = make_app([vroot])
    backend = app.roots[0]
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        moved, after = lst.messages[0], lst.messages[1]
        gate = threading.Event()
        real = backend.scan_queue

        def slow_listing(name: str, now: Any = None, **kw: Any) -> Any:
            if kw.get("collect") and threading.current_thread() is not threading.main_thread() and name == "orders" \
                    and not gate.is_set() and app.screen is screen and moved.id not in os.listdir(os.path.join(vroot, "orders")):
                gate.wait(5)  # the rescan after the move has not landed yet
            return real(name, now, **kw)

        monkeypatch.setattr(backend, "scan_queue", slow_listing)
        await pilot.press("m")
        await pilot.pause(0.3)
        await pilot.press("down", "enter")  # to the second queue offered
        for _ in range(50):
            await pilot.pause(0.05)
            if not os.path.exists(os.path.join(vroot, "orders", moved.id)) and lst.current() is not None \
                    and lst.current().id != moved.id:
                break
        await pilot.press("v")
        await pilot.pause(0.3)
        gate.set()
        await settle(pilot)
        assert app.screen.msg.id == after.id  # what the list showed under the cursor


# -- 5. scan errors get a readable place ----------------------------------------------------

async def test_scan_error_is_readable_and_not_in_the_backlog_column(roots: tuple[str, str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _, vroot = roots
    refuse_reading(monkeypatch, "ingest")  # what a chmod 000 directory does (tests may run as root)
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        row = table.get_row("0:ingest")
        assert "denied" not in row[-1].plain.lower()  # the backlog column shows a backlog
        text = screen_text(app)
        assert "ingest: cannot read" in text.replace("\n", " ") or "Permission denied" in text
        line = next(ln for ln in text.splitlines() if "Permission denied" in ln)
        assert os.path.join(vroot, "ingest") in text.replace("\n", "").replace(" ", "") or "ingest" in line


# -- 6. a palette that reads right in 16 colours --------------------------------------------

async def test_16_colour_countdowns_are_yellow_then_red_and_the_cursor_is_not_an_alarm(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot], colors=16)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "emails")
        ansi = screen_ansi(app, "standard")
        warn = sgr_of(ansi, "25s")[0].split(";")
        assert "33" in warn or "93" in warn  # yellow
        for word in ("7s", "40s ago"):
            codes = sgr_of(ansi, word)[0].split(";")
            assert "31" in codes or "91" in codes, (word, codes)  # red, not magenta
            assert "35" not in codes and "95" not in codes
        cursor = sgr_of(ansi, "00c0ffee")[0].split(";")
        assert "41" not in cursor and "101" not in cursor  # no red background on the cursor row


# -- 7. publish form ------------------------------------------------------------------------

async def test_publish_form_starts_empty_and_typing_after_tab_lands_in_the_next_field(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "reports")
        await pilot.press("p")
        await pilot.pause()
        area = app.screen.query_one("#payload")
        assert area.text == ""
        await pilot.press(*"hi", "tab", *"7")  # no pause: as fast as a person types
        await pilot.pause()
        assert area.text == "hi"
        assert app.screen.query_one("#count").value == "7"


# -- 8. dangerous actions -------------------------------------------------------------------

async def test_purge_needs_the_queue_name_typed(roots: tuple[str, str]) -> None:
    droot, _ = roots
    qdir = os.path.join(droot, "reports")
    before = sorted(os.listdir(qdir))
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "reports")
        await pilot.press("P")
        await pilot.pause()
        await pilot.press("y", "enter")
        await settle(pilot)
        assert sorted(os.listdir(qdir)) == before  # `y` is not the queue's name
        assert "reports" in screen_text(app)
        await pilot.press(*"reports", "enter")
        await settle(pilot)
    assert [n for n in os.listdir(qdir) if ".ddmq" in n] == []


async def test_requeue_of_in_flight_messages_asks_and_says_why(roots: tuple[str, str]) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        from qconsole.screens.message_list import MessageList

        lst = screen.query_one(MessageList)
        lst.cursor = next(i for i, m in enumerate(lst.messages) if m.state == "inflight")
        target = lst.current()
        await pilot.press("r")
        await pilot.pause()
        assert "consumer" in screen_text(app).lower()
        assert os.path.exists(os.path.join(qdir, target.relpath))  # not yet
        await pilot.press("y")
        await settle(pilot)
        assert os.path.exists(os.path.join(qdir, target.id))


async def test_delete_dialog_names_what_it_deletes(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        from qconsole.screens.message_list import MessageList

        first = screen.query_one(MessageList).messages[0]
        await pilot.press("d")
        await pilot.pause()
        assert first.id in screen_text(app)
        await pilot.press("n")


async def test_read_only_footer_offers_no_change_and_vsqs_has_no_settings(roots: tuple[str, str]) -> None:
    droot, vroot = roots
    app = make_app([droot, vroot], read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "Publish" not in footer
        await open_queue(pilot, "orders")
        footer = screen_text(app).splitlines()[-1]
        for word in ("Requeue", "Delete", "Purge", "Move", "Publish"):
            assert word not in footer, footer
        assert "Peek" in footer
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "Settings" not in screen_text(app).splitlines()[-1]
        await pilot.press("s")
        await settle(pilot)
        from qconsole.screens.root_screen import RootScreen

        assert isinstance(app.screen, RootScreen)


# -- 9. small lies and leftovers ------------------------------------------------------------

def test_cli_purge_prompt_counts_only_what_it_purges(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer
    from typer.testing import CliRunner

    from qconsole.cli import app, ops as cli_ops, register_all

    asked: list[str] = []

    def confirm(question: str, yes: bool) -> None:
        asked.append(question)
        raise typer.Exit(1)

    monkeypatch.setattr(cli_ops, "_confirm", confirm)

    register_all()
    root = tmp_path / "v"
    (root / "q").mkdir(parents=True)
    for i in range(5):
        (root / "q" / str(1714564800000000 + i)).write_text("x")
    os.mkfifo(root / "q" / "1714564800000009")  # named like a message, but not a file: not a message
    os.symlink("/nonexistent", root / "q" / "1714564800000008")
    result = CliRunner().invoke(app, ["purge", "q", "--root", str(root), "--audit-log", os.devnull])
    assert asked and asked[0].startswith("Purge 5 "), (asked, result.output)


def test_ddmq_countdown_shows_each_second_once() -> None:
    from qconsole.model import Message
    from qconsole.screens.message_list import countdown

    msg = Message("q", "ddmq", "x", "inflight", "work/x", deadline=1000.0)  # ddmq deadlines are whole seconds
    shown = [countdown(msg, 1000.0 - left)[0] for left in (2.2, 1.2, 0.2)]  # one tick a second
    assert shown == ["3s", "2s", "1s"]


def test_audit_shows_what_a_settings_change_set(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from qconsole.cli import app, register_all

    register_all()
    droot, _ = build_fixture(str(tmp_path))
    log = str(tmp_path / "audit.log")
    r = CliRunner().invoke(app, ["config", "emails", "message_timeout=45", "--root", droot,
                                 "--audit-log", log])
    assert r.exit_code == 0, r.output
    out = CliRunner().invoke(app, ["audit", "--root", droot, "--audit-log", log]).output
    assert "message_timeout=45" in out and "1 msg" not in out


def test_show_completion_works(tmp_path: Any) -> None:
    # typer's own test switch: take the shell named on the command line instead of detecting the
    # parent process's (which depends on what runs pytest)
    env = {**os.environ, "SHELL": "/bin/bash", "HOME": str(tmp_path), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    out = subprocess.run([sys.executable, "-m", "qconsole", "--show-completion", "bash"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert "complete" in out.stdout
    out = subprocess.run([sys.executable, "-m", "qconsole", "--install-completion", "bash"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert os.path.exists(os.path.join(str(tmp_path), ".bashrc"))


def test_demo_removes_its_roots_when_the_terminal_hangs_up(tmp_path: Any) -> None:
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: a demo on a terminal of its own
        os.environ["TMPDIR"] = str(tmp_path)
        os.environ["TERM"] = "xterm"
        os.execv(sys.executable, [sys.executable, "-m", "qconsole", "demo"])
    try:
        deadline = time.time() + 90  # a loaded machine starts Textual slowly
        while time.time() < deadline and not any(n.startswith("qconsole-demo-") for n in os.listdir(tmp_path)):
            time.sleep(0.1)
        assert any(n.startswith("qconsole-demo-") for n in os.listdir(tmp_path))
        time.sleep(1.5)
        os.kill(pid, signal.SIGHUP)
        os.close(fd)  # the terminal is gone, as with an SSH drop
        deadline = time.time() + 60
        while time.time() < deadline:
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    finally:
        pass
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


def test_demo_told_to_stop_while_suspended_exits_143_without_an_internal_error(tmp_path: Any) -> None:
    """bash's `kill %1` on a suspended demo sends SIGTERM and SIGCONT together: Textual's SIGCONT
    handler, left installed, raised "no running event loop" over the exit (status 70)."""
    import pty
    import select

    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TMPDIR"] = str(tmp_path)
        os.environ["TERM"] = "xterm"
        os.environ["QCONSOLE_DEMO_REDIS"] = "off"
        os.execv(sys.executable, [sys.executable, "-m", "qconsole", "demo"])
    out = bytearray()

    def pump(seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    out.extend(os.read(fd, 65536))
                except OSError:
                    return

    status = None
    try:
        deadline = time.time() + 90
        while time.time() < deadline and b"Quit" not in out:
            pump(0.2)
        assert b"Quit" in out, "the demo did not start"
        os.kill(pid, signal.SIGTSTP)
        pump(1)
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
        deadline = time.time() + 90  # (closing a terminal that still holds output can wait 30 s)
        while time.time() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            pump(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the demo did not end")
    finally:
        os.close(fd)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 143, status
    assert b"internal error" not in out
    assert [n for n in os.listdir(tmp_path) if n.startswith("qconsole-demo-")] == []


# -- first-minute bugs found by a review in session 15 ----------------------------------------

async def test_root_counts_too_wide_for_their_column_are_shortened_not_cut(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        key = next(k for k in screen.scans if k.endswith(":orders"))
        counts = screen.scans[key][1].counts
        counts["ready"], counts["inflight"] = 1_000_000, 123_456  # as a queue of a million shows them
        screen.refresh_table()
        await pilot.pause()
        row = next(ln for ln in screen_text(app).splitlines() if "orders" in ln)
        assert "1.00M" in row and "123k" in row, row
        assert "100000" not in row and "12345" not in row, row


async def test_long_queue_names_stay_apart_and_a_wide_terminal_shows_them_whole(tmp_path: Any) -> None:
    from qconsole.screens.root_screen import RootScreen

    root = str(tmp_path / "v")
    for q in ("billing-events-eu", "billing-events-us"):
        vsqs_queue(root, q, 1)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rows = [ln for ln in screen_text(app).splitlines() if "billin" in ln and "(vsqs)" not in ln]
        assert len(rows) == 2 and rows[0].split()[0] != rows[1].split()[0], rows
        assert all("…" in r and r.split()[0].endswith(("-eu", "-us")) for r in rows), rows
        # the highlighted queue's whole name is on the screen
        assert "billing-events-eu (vsqs)" in screen_text(app)
        await pilot.resize_terminal(120, 24)
        await settle(pilot)
        text = screen_text(app)
        assert "billing-events-eu " in text and "billing-events-us " in text
        assert isinstance(app.screen, RootScreen) and app.screen.cursor_key().endswith(":billing-events-eu")


async def test_a_filter_keeps_the_cursor_on_its_queue(roots: tuple[str, str]) -> None:
    droot, vroot = roots
    app = make_app([vroot, droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("DataTable")
        keys = screen.visible_keys()
        target = next(k for k in keys if k.endswith(":orders"))
        assert keys.index(target) == 2  # emails, ingest above it
        table.move_cursor(row=keys.index(target))
        await pilot.press("slash", *"r", "enter")  # orders, reports: the rows above orders go
        await settle(pilot)
        assert [k.rpartition(":")[2] for k in screen.visible_keys()] == ["orders", "reports"]
        assert screen.cursor_key() == target  # not row 2 of what is left (reports)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.queue == "orders"


async def test_undo_after_the_trash_screen_restored_that_batch_restores_nothing(roots: tuple[str, str]) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    before = sorted(os.listdir(qdir))
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        await pilot.press("d", "y")
        await settle(pilot)
        assert len(os.listdir(qdir)) == len(before) - 1
        assert len(app.undo_stack) == 1
        await pilot.press("t")
        await settle(pilot)
        await pilot.press("enter", "y")
        await settle(pilot)
        assert sorted(os.listdir(qdir)) == before
        assert app.undo_stack == []  # u no longer points at the restored batch
        await pilot.press("escape", "u")
        await settle(pilot)
        assert "nothing to undo" in " ".join(e.text for e in app.log_entries)
        assert not [e for e in app.log_entries if e.severity == "error"], app.log_entries


async def test_m_pressed_twice_opens_one_move_dialog(roots: tuple[str, str]) -> None:
    from qconsole.screens.dialogs import PickQueueScreen

    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        screen.action_move()  # m, m: both before the first one's dialog is up
        screen.action_move()
        await settle(pilot)
        assert sum(isinstance(s, PickQueueScreen) for s in app.screen_stack) == 1


async def test_help_names_the_bracket_keys_as_they_are_typed(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 60)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        text = screen_text(app)
        assert "n,]" in text and "b,[" in text
        assert "square_bracket" not in text


async def test_queue_title_counts_an_in_flight_message_expired_once_its_deadline_passed(tmp_path: Any) -> None:
    from tui_helpers import Clock

    root = str(tmp_path / "v")
    vsqs_queue(root, "jobs", 2, held=1)  # deadline FIXED_NOW + 102
    clock = Clock()
    app = make_app([root], clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "jobs")
        assert "in-flight 1 · expired 0" in screen_text(app)
        clock.now += 200  # the directory did not change: no new listing is needed to say so
        screen.tick()
        await pilot.pause()
        assert "in-flight 0 · expired 1" in screen_text(app)


async def test_the_queue_table_never_scrolls_sideways(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    for i in range(40):  # more rows than the screen: the vertical scrollbar shows
        vsqs_queue(root, f"queue-with-a-long-name-{i:02d}", 1)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        assert table.max_scroll_y > 0 and table.max_scroll_x == 0
        for width in (81, 100, 120, 200):
            await pilot.resize_terminal(width, 24)
            await settle(pilot)
            assert table.max_scroll_x == 0, width


async def test_a_new_height_does_not_lay_the_table_out_again(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    vsqs_queue(root, "a-queue-name-longer-than-its-column", 1)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        calls = []
        original = screen.refresh_table
        screen.refresh_table = lambda: (calls.append(1), original())[1]
        await pilot.resize_terminal(80, 40)
        await settle(pilot)
        assert calls == []
        await pilot.resize_terminal(120, 40)  # wider: the names may take more room
        await settle(pilot)
        assert calls


async def test_a_queue_name_with_escapes_is_shown_escaped_in_its_notes(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    name = "a\x1b[7mREV\x1b[0m-q"
    qdir = os.path.join(root, name)
    os.makedirs(qdir)
    open(os.path.join(qdir, str(int((FIXED_NOW + 3600) * 1_000_000))), "w").close()  # a clock-skew warning
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        notes = app.screen.query_one("#rnotes")
        text = str(notes.render())
        assert "REV" in text and "\x1b" not in text, repr(text)


async def test_a_bulk_change_shows_how_far_it_is_in_the_header(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from qconsole.screens import app as app_module

    monkeypatch.setattr(app_module, "PROGRESS_EVERY_S", 0.0)  # every tick the backend gives
    root = str(tmp_path / "v")
    vsqs_queue(root, "big", 3000)
    app = make_app([root])
    shown: list[str] = []
    async with app.run_test(size=(100, 24)) as pilot:
        original = app._show_progress

        def spy(*args: Any) -> None:
            original(*args)
            shown.append(app.sub_title)

        app._show_progress = spy
        await open_queue(pilot, "big")
        await pilot.press("P", *"big", "enter")
        await settle(pilot)
        assert [n for n in os.listdir(os.path.join(root, "big"))] == []
        assert any("purge: " in t and " of 3,000 (" in t for t in shown), shown
        assert app.sub_title == app.roots_title  # the roots again once it is done


async def test_a_queue_named_alike_in_two_roots_says_which_root_it_is(tmp_path: Any) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    vsqs_queue(a, "jobs", 1)
    vsqs_queue(b, "jobs", 2)
    app = make_app([a, b])
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("DataTable")
        for row, root in ((0, a), (1, b)):
            table.move_cursor(row=row)
            await settle(pilot)
            i = int(app.screen.cursor_key().split(":")[0])
            assert f"jobs (vsqs · {app.roots[i].target})" in screen_text(app)
            assert app.roots[i].target.endswith(root[-2:])
